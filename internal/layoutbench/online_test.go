package layoutbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// TestOnlineMatchesModel loads every fixture into every layout on DynamoDB
// Local: the tables are created and deleted, every answer has the nodes the
// input says, and every query's requests, items read and RCU are exactly
// what the offline model computes (with DynamoDB Local's rule for a Query
// that finds nothing).
func TestOnlineMatchesModel(t *testing.T) {
	ep := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, ep)
	for _, name := range []string{"cars", "folders", "org"} {
		t.Run(name, func(t *testing.T) {
			in := readFixture(t, name)
			f := in.Forest
			var mu sync.Mutex
			var created []string
			queries, mismatches := 0, 0
			prefix := fmt.Sprintf("tb-%s-%s", name, randomSuffix())
			rep, err := Run(context.Background(), in, Options{
				Layouts: allLayouts(t), Client: client, Endpoint: ep, TablePrefix: prefix, Sample: 20, Seed: 3, localRules: true,
				Log: func(format string, args ...any) {
					if msg := fmt.Sprintf(format, args...); strings.Contains(msg, "creating table ") {
						mu.Lock()
						created = append(created, msg[strings.LastIndex(msg, " ")+1:])
						mu.Unlock()
					}
				},
				trace: func(layout, id, kind string, est, got cost) {
					queries++
					if est != got {
						mismatches++
						if mismatches <= 10 {
							t.Errorf("%s, %s of %q: the server says %+v, the model %+v", layout, kind, id, got, est)
						}
					}
					// Children of a node with k children read k items in the
					// path and adjacency layouts (one more, the node, for a
					// leaf).
					if kind == KindChildren && (layout == "path" || layout == "sharded-path" || layout == "adjacency") {
						k := int64(len(f.Children(f.Lookup(id))))
						if want := max(k, 1); got.items != want || got.nodes != k {
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
