package importer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// writeTens writes a CSV forest of n nodes (trees of ten: a root and nine
// children) and returns its path.
func writeTens(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("id,parent_id,name\n")
	for i := range n {
		parent := ""
		if i%10 != 0 {
			parent = fmt.Sprintf("n%d", i-i%10)
		}
		fmt.Fprintf(&b, "n%d,%s,node %d\n", i, parent, i)
	}
	path := filepath.Join(t.TempDir(), "forest.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readTens(t *testing.T, path string) *Input {
	t.Helper()
	in, err := ReadInput(context.Background(), InputOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Problems) > 0 {
		t.Fatalf("problems: %v", in.Problems)
	}
	return in
}

// A load into a table cut short by its context saves a checkpoint below
// the end; the same load resumed from it writes the rest, and the table
// then holds every node once.
func TestLoadTableInterruptAndResume(t *testing.T) {
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	l, err := layouts.New("path", layouts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const nodes = 3000
	path := writeTens(t, nodes)
	table := ddblocal.NewTable(t, client, l.Table())
	ck := filepath.Join(t.TempDir(), "ck.json")
	opts := TableOptions{
		Client: client, Table: table, Emit: EmitOptions{Layout: l},
		Checkpoint: ck, Settings: map[string]any{"layout": "path"},
		// 3 WCU an item (the table and two indexes): about 4 s in all.
		WriteOptions: ddbwrite.WriteOptions{MaxWCU: 2000, Concurrency: 2},
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(700*time.Millisecond, cancel)
	var progressed bool
	opts.OnProgress = func(p ddbwrite.RunProgress) {
		progressed = true
		if p.Total != nodes || p.Skipped != 0 {
			t.Errorf("progress: total %d, skipped %d; want %d, 0", p.Total, p.Skipped, nodes)
		}
	}
	res, err := LoadTable(ctx, readTens(t, path), opts)
	if !errors.Is(err, ddbwrite.ErrInterrupted) {
		t.Fatalf("interrupted load: err %v, want ErrInterrupted", err)
	}
	if !progressed {
		t.Error("OnProgress was never called")
	}
	saved, err := ddbwrite.LoadCheckpoint(ck)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Run.Interrupted || res.Run.Done || saved.Done || saved.Watermark <= 0 || saved.Watermark >= nodes || res.Run.Watermark != saved.Watermark {
		t.Fatalf("after the interruption: result %+v, checkpoint %+v; want a watermark strictly between 0 and %d, not done", res.Run, saved, nodes)
	}
	if got := len(scanAll(t, client, table)); got < int(saved.Watermark) {
		t.Fatalf("the table holds %d items, below the checkpoint's watermark %d", got, saved.Watermark)
	}

	opts.OnProgress = nil
	opts.MaxWCU = 0
	res, err = LoadTable(context.Background(), readTens(t, path), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Run.Skipped != saved.Watermark || res.Emit.Skipped != saved.Watermark || res.Run.Stats.Items != nodes-saved.Watermark {
		t.Errorf("resumed load: skipped %d (emit %d), wrote %d; want %d skipped and %d written",
			res.Run.Skipped, res.Emit.Skipped, res.Run.Stats.Items, saved.Watermark, nodes-saved.Watermark)
	}
	if got := len(scanAll(t, client, table)); got != nodes {
		t.Errorf("the table holds %d items, want %d", got, nodes)
	}
	if done, err := ddbwrite.LoadCheckpoint(ck); err != nil || !done.Done || done.Watermark != nodes {
		t.Errorf("final checkpoint %+v (%v): want done at %d", done, err, nodes)
	}

	// A finished checkpoint: nothing to do.
	res, err = LoadTable(context.Background(), readTens(t, path), opts)
	if err != nil || !res.AlreadyDone || res.Run != nil {
		t.Errorf("load after a finished one: %+v, %v; want AlreadyDone and nothing written", res, err)
	}
	// Other flags: refused as a usage error, nothing written.
	opts.Settings = map[string]any{"layout": "path", "delimiter": "/"}
	if _, err := LoadTable(context.Background(), readTens(t, path), opts); !errors.Is(err, ddbwrite.ErrUsage) || !strings.Contains(err.Error(), "checkpoint does not match") {
		t.Errorf("load with other flags: err %v, want ErrUsage, the checkpoint does not match", err)
	}
}

// A load into a missing table fails before anything is written, and says
// how to create it; with CreateTable, the table is made and loaded, and
// the report is written.
func TestLoadTableCreatesOrRefuses(t *testing.T) {
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	l, err := layouts.New("closure", layouts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := writeTens(t, 50)
	table := ddblocal.TableName(t)
	opts := TableOptions{Client: client, Table: table, Emit: EmitOptions{Layout: l}}
	_, err = LoadTable(context.Background(), readTens(t, path), opts)
	if !errors.Is(err, ddb.ErrTableNotFound) || !strings.Contains(err.Error(), "--create-table") {
		t.Fatalf("load into a missing table: %v", err)
	}
	opts.CreateTable = true
	opts.Report = filepath.Join(t.TempDir(), "report.json")
	t.Cleanup(func() { dropTable(t, table) })
	res, err := LoadTable(context.Background(), readTens(t, path), opts)
	if err != nil {
		t.Fatal(err)
	}
	// 5 roots at depth 0, 45 children at depth 1: 50 self rows and 45
	// ancestor rows.
	if res.Run.Stats.Items != 95 || res.Emit.Nodes != 50 {
		t.Errorf("wrote %d items of %d nodes, want 95 of 50", res.Run.Stats.Items, res.Emit.Nodes)
	}
	report, err := os.ReadFile(opts.Report)
	if err != nil || !bytes.Contains(report, []byte(`"layout": "closure"`)) || !bytes.Contains(report, []byte(`"items": 95`)) {
		t.Errorf("report: %s (%v)", report, err)
	}
}

func dropTable(t *testing.T, table string) {
	client := ddblocal.Client(t, os.Getenv(ddblocal.EnvEndpoint))
	if _, err := client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)}); err != nil {
		t.Errorf("delete table %s: %v", table, err)
	}
}

// scanAll returns the items of table by id, in DynamoDB JSON.
func scanAll(t *testing.T, c *dynamodb.Client, table string) map[string]string {
	t.Helper()
	got := map[string]string{}
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("scan %s: %v", table, err)
		}
		for _, it := range page.Items {
			got[it["Id"].(*types.AttributeValueMemberS).Value] = string(ddbjson.AppendItem(nil, it))
		}
	}
	return got
}
