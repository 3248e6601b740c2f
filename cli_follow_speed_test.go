package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
)

// TestFollowEndToEndSpeed measures `migrate --follow` in memory end to
// end against DynamoDB Local: an adjacency source of TREEPORT_FOLLOW_E2E
// nodes (loaded by BatchWriteItem, its stream on) migrated into the path
// layout while a mutator makes TREEPORT_FOLLOW_E2E_CHANGES changes of it
// (default 3,000: moves of subtrees, new and removed leaves, attributes)
// as fast as it can; the follower stops after 5 s idle and must end
// exact. Each binary of TREEPORT_FOLLOW_BINS (comma-separated; default
// this tree's) runs in turn, twice, each into its own destination, and
// its wall and CPU time (user+system, from the process) and peak RSS
// are logged. A
// measurement (benchmarks/REFRESH.md), run only when asked:
//
//	TREEPORT_FOLLOW_E2E=50000 go test . -run TestFollowEndToEndSpeed -v -timeout 60m
func TestFollowEndToEndSpeed(t *testing.T) {
	nodes, _ := strconv.Atoi(os.Getenv("TREEPORT_FOLLOW_E2E"))
	if nodes <= 0 {
		t.Skip("a measurement: set TREEPORT_FOLLOW_E2E to a number of nodes")
	}
	changes := 3000
	if c, _ := strconv.Atoi(os.Getenv("TREEPORT_FOLLOW_E2E_CHANGES")); c > 0 {
		changes = c
	}
	bins := []string{treeportBin}
	if b := os.Getenv("TREEPORT_FOLLOW_BINS"); b != "" {
		bins = strings.Split(b, ",")
	}
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	src := newAdjSource(t, client, 0, true)
	loadAdjSource(t, client, src, nodes)
	r := rand.New(rand.NewPCG(9, 9))
	for turn := range 2 {
		for _, bin := range bins {
			dest := ddblocal.TableName(t)
			args := []string{"migrate", "--from-table", src.table, "--from-layout", "adjacency", "--to-table", dest, "--to-layout", "path",
				"--create-table", "--follow", "--follow-idle", "5s", "--checkpoint", t.TempDir() + "/ck.json", "--endpoint-url", endpoint, "--no-progress"}
			cmd := exec.Command(bin, args...)
			out := &syncBuf{}
			cmd.Stdout, cmd.Stderr = out, out
			started := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				for range changes {
					if err := src.mutate(context.Background(), r); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			wall := time.Since(started)
			if err != nil || !strings.Contains(out.String(), "verify: exact") {
				t.Fatalf("%s: %v\n%s", bin, err, out)
			}
			cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			t.Logf("turn %d, %s: %d nodes, %d changes: wall %.1f s, CPU %.1f s, peak RSS %d MB, %d records applied", turn, bin, nodes, changes,
				wall.Seconds(), cpu.Seconds(), peakRSS(cmd.ProcessState)>>20, recordsApplied(t, out.String()))
			dropTable(t, client, dest)
		}
	}
}

// loadAdjSource writes nodes random nodes into src by BatchWriteItem.
func loadAdjSource(t *testing.T, client *dynamodb.Client, src *adjSource, nodes int) {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(nodes), 5))
	var batch []types.WriteRequest
	flush := func() {
		for len(batch) > 0 {
			out, err := client.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{src.table: batch}})
			if err != nil {
				t.Fatal(err)
			}
			batch = out.UnprocessedItems[src.table]
		}
	}
	for i := range nodes {
		id, parent := fmt.Sprintf("N%d", i), ""
		if i > 0 && r.IntN(6) != 0 {
			parent = fmt.Sprintf("N%d", r.IntN(i))
		}
		item := map[string]types.AttributeValue{"Id": &types.AttributeValueMemberS{Value: id}, "v": &types.AttributeValueMemberS{Value: "v0"}}
		if parent != "" {
			item["ParentId"] = &types.AttributeValueMemberS{Value: parent}
		}
		src.parent[id], src.attr[id] = parent, "v0"
		batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
		if len(batch) == 25 {
			flush()
		}
	}
	flush()
	src.next = nodes
}
