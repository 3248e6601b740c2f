package ddbwrite

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/testserver/faultproxy"
	"github.com/treeport/treeport/layouts"
)

// Settle is a barrier for the held items too: with a key over its
// partition's rate, whose items wait held and in the held spool, no
// delete written after Settle reaches DynamoDB before every put written
// before it was accepted.
func TestWriterSettleWaitsForHeldItems(t *testing.T) {
	ep := ddblocal.Endpoint(t)
	direct := ddblocal.Client(t, ep)
	table := ddblocal.NewTable(t, direct, testSpec)
	const n, dels = 3000, 100
	var proxy *faultproxy.Proxy
	var firstDelete atomic.Int64 // puts accepted when the first delete came
	firstDelete.Store(-1)
	var err error
	proxy, err = faultproxy.New(faultproxy.Config{Target: ep, Operations: []string{"BatchWriteItem"},
		Spec: map[string]layouts.TableSpec{table: testSpec}, PartitionWCU: 100,
		OnRequest: func(op string, body []byte) {
			if op == "BatchWriteItem" && strings.Contains(string(body), `"DeleteRequest"`) {
				firstDelete.CompareAndSwap(-1, proxy.Counts().AcceptedItems)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	w := NewDDBWriter(ddblocal.Client(t, proxy.URL()), table, testSpec, WriterOptions{Concurrency: 8, MaxRetries: 50})
	ctx := context.Background()
	for i := range n {
		if err := w.Write(ctx, int64(i), hotItem(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	// The deletes: items of their own keys (not the hot one), which
	// would otherwise go at once.
	for i := range dels {
		j := 5*i + 1
		if err := w.Delete(ctx, int64(n+i), layouts.Item{"Id": hotItem(j)["Id"]}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := w.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := proxy.Counts()
	if c.KeyRangeItems == 0 || st.Spooled == 0 {
		t.Fatalf("the hot key was throttled for %d items and %d were spooled: the test proves nothing", c.KeyRangeItems, st.Spooled)
	}
	if got := firstDelete.Load(); got != n {
		t.Fatalf("the first delete reached DynamoDB when %d of the %d puts were accepted", got, n)
	}
	if got := countTable(t, direct, table); got != n-dels {
		t.Fatalf("table holds %d items, want %d", got, n-dels)
	}
}
