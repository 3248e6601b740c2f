package refresh

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/internal/ddbtable"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/testserver/faultproxy"
	"github.com/treeport/treeport/layouts"
)

// An apply taken up from an unfinished checkpoint does not read the table
// again (its plan is kept beside the checkpoint), but it still checks the
// table against the layout before its first write: a table replaced since
// by one of another shape is refused (ErrSchemaMismatch) with DescribeTable
// the only request, and the checkpoint is left as it was. The first apply
// is stopped, with no clock, as soon as its first batch reaches DynamoDB.
func TestApplyResumeChecksTheTable(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	r := rand.New(rand.NewPCG(24, 24))
	l := newLayout(t, layoutCase{name: layouts.PathName})
	table := ddblocal.TableName(t)
	if _, err := client.CreateTable(context.Background(), ddblocal.CreateTableInput(table, l.Table())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropTable(t, client, table) })
	waitTable(t, client, table)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var ops []string
	proxy, err := faultproxy.New(faultproxy.Config{Target: endpoint, Lifetime: 5 * time.Minute, OnRequest: func(op string, _ []byte) {
		mu.Lock()
		defer mu.Unlock()
		ops = append(ops, op)
		if op == "BatchWriteItem" {
			cancel() // the first write stops the run: the checkpoint stays unfinished
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	viaProxy := ddblocal.Client(t, proxy.URL())
	ck := filepath.Join(t.TempDir(), "ck.json")
	opts := ApplyOptions{
		Target: Target{Client: viaProxy, Table: table, Layout: l}, MaxDeleteRatio: 0.1,
		Checkpoint: ck, Settings: map[string]any{"layout": "path"}, WriteOptions: ddbwrite.WriteOptions{Concurrency: 1},
	}
	opts.Input = snapshotOf(t, r, randomTree(r, 400), nil)
	if res, err := Apply(ctx, opts); !errors.Is(err, ddbwrite.ErrInterrupted) || res.Run == nil || res.Run.Done {
		t.Fatalf("first apply: %+v, %v; want it interrupted, unfinished", res, err)
	}
	saved, err := os.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ck + ".plan.json"); err != nil {
		t.Fatalf("no plan beside the unfinished checkpoint: %v", err)
	}

	// The table is replaced by one of the closure layout's keys.
	dropTable(t, client, table)
	waitGone(t, client, table)
	closure := newLayout(t, layoutCase{name: layouts.ClosureName})
	if _, err := client.CreateTable(context.Background(), ddblocal.CreateTableInput(table, closure.Table())); err != nil {
		t.Fatal(err)
	}
	waitTable(t, client, table)

	mu.Lock()
	ops = nil
	mu.Unlock()
	res, err := Apply(context.Background(), opts)
	if !errors.Is(err, ddbtable.ErrSchemaMismatch) {
		t.Fatalf("resumed apply into a closure table: %+v, %v; want ErrSchemaMismatch", res, err)
	}
	mu.Lock()
	seen := slices.Clone(ops)
	mu.Unlock()
	if len(seen) == 0 || slices.ContainsFunc(seen, func(op string) bool { return op != "DescribeTable" }) {
		t.Errorf("requests of the refused apply: %v; want DescribeTable alone", seen)
	}
	if after, err := os.ReadFile(ck); err != nil || string(after) != string(saved) {
		t.Errorf("the checkpoint changed (%v)", err)
	}
}

func waitTable(t *testing.T, client *dynamodb.Client, table string) {
	t.Helper()
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 50*time.Millisecond, 500*time.Millisecond
	})
	if err := w.Wait(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

func waitGone(t *testing.T, client *dynamodb.Client, table string) {
	t.Helper()
	w := dynamodb.NewTableNotExistsWaiter(client, func(o *dynamodb.TableNotExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 50*time.Millisecond, 500*time.Millisecond
	})
	if err := w.Wait(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}
