package layoutbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/gen"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// TestOnlineMatchesModel loads every fixture and a generated tree into every
// layout on DynamoDB Local, and replays each layout's documented requests
// for a sample of nodes (given the id of a node known to be there, the
// path learnt by a GetItem where the pattern needs it) with
// ReturnConsumedCapacity: the tables are created and deleted, every answer has the nodes the
// input says, and every query's requests, items read, empty Queries and
// priced RCU are exactly what the offline model computes. The server's own
// consumed figure is the model's less the minimum for each Query that found
// nothing (DynamoDB Local bills those 0, DynamoDB 0.5). The report gives
// both; its RCU, per layout and query kind, is the offline run's within 1%,
// and so is its ranking.
func TestOnlineMatchesModel(t *testing.T) {
	ep := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, ep)
	generated := genInput(t, gen.Options{Nodes: 3000, Shape: gen.ShapeRandom, Seed: 7})
	for _, name := range []string{"cars", "folders", "org", generated} {
		short := strings.TrimSuffix(filepath.Base(name), ".jsonl")
		t.Run(short, func(t *testing.T) {
			in := readDataset(t, name)
			f := in.Forest
			var mu sync.Mutex
			var created []string
			queries, mismatches := 0, 0
			var empties int64
			prefix := fmt.Sprintf("tb-%s-%s", short, randomSuffix())
			rep, err := Run(context.Background(), in, Options{
				Layouts: allLayouts(t), Client: client, Endpoint: ep, TablePrefix: prefix, Sample: 20, Seed: 3,
				Log: func(format string, args ...any) {
					if msg := fmt.Sprintf(format, args...); strings.Contains(msg, "creating table ") {
						mu.Lock()
						created = append(created, msg[strings.LastIndex(msg, " ")+1:])
						mu.Unlock()
					}
				},
				trace: func(layout, id, kind string, est, got cost) {
					queries++
					empties += got.empty
					// DynamoDB Local's rule: a Query that finds nothing is 0.
					local := est.rcu - float64(est.empty)*layouts.MinReadRCU(false)
					if got.req != est.req || got.items != est.items || got.nodes != est.nodes || got.empty != est.empty ||
						got.rcu != est.rcu || got.consumed != local {
						mismatches++
						if mismatches <= 10 {
							t.Errorf("%s, %s of %q: the server says %+v, the model %+v (consumed on DynamoDB Local: %v)", layout, kind, id, got, est, local)
						}
					}
					// Children of a node with k children is one Query that
					// reads k items in the path and adjacency layouts; a
					// leaf's is one empty Query, billed the minimum, and
					// nothing more: the node is known to be there.
					if kind == KindChildren && (layout == "path" || layout == "sharded-path" || layout == "adjacency") {
						k := int64(len(f.Children(f.Lookup(id))))
						if got.items != k || got.nodes != k || got.req != 1 || (k == 0) != (got.empty == 1) {
							t.Errorf("%s: children of %q (%d) read %d items, answered %d", layout, id, k, got.items, got.nodes)
						}
					}
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if want := len(layouts.Names()) * 5 * rep.Sample.Nodes; queries != want || rep.Sample.Nodes != 20 {
				t.Errorf("%d queries for %d sampled nodes, want %d", queries, rep.Sample.Nodes, want)
			}
			if len(created) != len(layouts.Names()) {
				t.Fatalf("created %v, want a table per layout", created)
			}
			for _, table := range created {
				if !strings.HasPrefix(table, prefix+"-") {
					t.Errorf("table %s is not named after the prefix", table)
				}
				_, err := client.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
				var nf *types.ResourceNotFoundException
				if !errors.As(err, &nf) {
					t.Errorf("table %s is still there after the run (%v)", table, err)
				}
			}
			var buf bytes.Buffer
			if err := WriteJSON(&buf, rep); err != nil {
				t.Fatal(err)
			}
			schema := loadSchema(t)
			if errs := validate(schema, schema, decode(t, buf.Bytes()), "report"); len(errs) > 0 {
				t.Errorf("the online report does not follow the schema:\n%s", strings.Join(errs, "\n"))
			}
			// The documented price, online and offline alike.
			off := offline(t, readDataset(t, name), Options{Sample: 20, Seed: 3})
			if empties == 0 {
				t.Error("no Query found nothing: the test does not tell the two billings apart")
			}
			below := false
			for i, r := range rep.Layouts {
				o := off.Layouts[i]
				if r.Layout != o.Layout || r.Rank != o.Rank {
					t.Errorf("online %s ranks %d, offline %s ranks %d", r.Layout, r.Rank, o.Layout, o.Rank)
				}
				if math.Abs(r.Cost.ReadRCUPerOp-o.Cost.ReadRCUPerOp) > 0.01*o.Cost.ReadRCUPerOp {
					t.Errorf("%s: online %v RCU a read of the mix, offline %v", r.Layout, r.Cost.ReadRCUPerOp, o.Cost.ReadRCUPerOp)
				}
				for k, q := range r.Queries {
					oq := o.Queries[k]
					if q.Kind != oq.Kind || math.Abs(q.RCU.Mean-oq.RCU.Mean) > 0.01*oq.RCU.Mean {
						t.Errorf("%s %s: online %v RCU, offline %s %v", r.Layout, q.Kind, q.RCU.Mean, oq.Kind, oq.RCU.Mean)
					}
					if q.ConsumedRCU == nil || q.ConsumedRCU.Mean > q.RCU.Mean {
						t.Errorf("%s %s: consumed %+v, priced %v: the server's figure is missing or above DynamoDB's", r.Layout, q.Kind, q.ConsumedRCU, q.RCU.Mean)
					} else if q.ConsumedRCU.Mean < q.RCU.Mean {
						below = true
					}
					if oq.ConsumedRCU != nil {
						t.Errorf("%s %s: offline, consumed %+v; want none", o.Layout, oq.Kind, oq.ConsumedRCU)
					}
				}
			}
			if !below {
				t.Error("DynamoDB Local's consumed figure is nowhere below the documented price")
			}
			for _, r := range rep.Layouts {
				if r.Load.ConsumedWCU == nil || *r.Load.ConsumedWCU <= 0 || r.Load.Seconds == nil || r.Load.ItemsWritten != r.Items {
					t.Errorf("%s: load %+v, want consumed WCU, a time and every item written", r.Layout, r.Load)
				}
				for _, q := range r.Queries {
					if q.Source != "measured" || q.LatencyMS == nil || q.LatencyMS.P50 <= 0 || q.LatencyMS.P95 < q.LatencyMS.P50 {
						t.Errorf("%s %s: %+v", r.Layout, q.Kind, q)
					}
				}
			}
		})
	}
}

// TestOnlineDeletesTablesWhenCancelled cancels a run while it loads: the
// table it created is gone and the error is the context's.
func TestOnlineDeletesTablesWhenCancelled(t *testing.T) {
	ep := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, ep)
	in := readFixture(t, "org")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var created []string
	_, err := Run(ctx, in, Options{
		Layouts: allLayouts(t), Client: client, Endpoint: ep, TablePrefix: "tb-cancel-" + randomSuffix(),
		Log: func(format string, args ...any) {
			msg := fmt.Sprintf(format, args...)
			if strings.Contains(msg, "creating table ") {
				created = append(created, msg[strings.LastIndex(msg, " ")+1:])
			}
			if strings.Contains(msg, "querying") {
				cancel() // mid-run, with a table full
			}
		},
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if len(created) == 0 {
		t.Fatal("no table was created")
	}
	for _, table := range created {
		_, err := client.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		var nf *types.ResourceNotFoundException
		if !errors.As(err, &nf) {
			t.Errorf("table %s is still there after Ctrl-C (%v)", table, err)
		}
	}
}
