package ddbwrite

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/testserver/faultproxy"
	"github.com/treeport/treeport/layouts"
)

// hotItem is item i of a forest where every fifth item has the parent
// "hot" and the others a parent of their own.
func hotItem(i int) layouts.Item {
	parent := "hot"
	if i%5 != 0 {
		parent = fmt.Sprintf("p%05d", i)
	}
	return layouts.Item{
		"Id":       &types.AttributeValueMemberS{Value: fmt.Sprintf("n%05d", i)},
		"ParentId": &types.AttributeValueMemberS{Value: parent},
		"n":        &types.AttributeValueMemberN{Value: strconv.Itoa(i)},
	}
}

// writeHot writes n hotItems through a partition-enforcing proxy and
// checks that every item arrived once; it returns the writer's stats and
// the proxy's counts.
func writeHot(t *testing.T, cfg faultproxy.Config, n int) (Stats, faultproxy.Counts, map[string]int64) {
	t.Helper()
	ep := ddblocal.Endpoint(t)
	direct := ddblocal.Client(t, ep)
	table := ddblocal.NewTable(t, direct, testSpec)
	cfg.Target = ep
	cfg.Operations = []string{"BatchWriteItem"}
	cfg.Spec = map[string]layouts.TableSpec{table: testSpec}
	proxy, err := faultproxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	var traceMu sync.Mutex
	var cuts []string
	w := NewDDBWriter(ddblocal.Client(t, proxy.URL()), table, testSpec, WriterOptions{
		Concurrency: 8, MaxRetries: 50,
		Trace: func(format string, args ...any) {
			traceMu.Lock()
			defer traceMu.Unlock()
			cuts = append(cuts, fmt.Sprintf(format, args...))
		},
	})
	st := writeEach(t, w, n, hotItem)
	for _, c := range cuts {
		t.Log(c)
	}
	c := proxy.Counts()
	if got := countTable(t, direct, table); got != n || st.Items != int64(n) || c.AcceptedItems != int64(n) {
		t.Fatalf("table holds %d items, writer wrote %d, proxy accepted %d; want %d", got, st.Items, c.AcceptedItems, n)
	}
	return st, c, proxy.HotItems()
}

// A partition key value over its limit (ByParent's "hot", a fifth of the
// items) is throttled on its own: the writer holds back its items and
// keeps the rest flowing, and the shared rate is never cut.
func TestWriterHotKeyPacedAlone(t *testing.T) {
	st, c, hot := writeHot(t, faultproxy.Config{PartitionWCU: 100}, 3000)
	t.Logf("stats %+v; proxy %+v; refused by key %v", st, c, hot)
	if c.KeyRangeItems == 0 || st.KeyThrottles == 0 {
		t.Fatalf("the hot key was never throttled (proxy refused %d items, writer saw %d key throttles): the test proves nothing", c.KeyRangeItems, st.KeyThrottles)
	}
	if len(hot) != 1 || hot["ByParent/hot"] == 0 {
		t.Errorf("keys throttled %v, want ByParent/hot alone", hot)
	}
	if st.MinRateWCU != 0 {
		t.Errorf("the shared rate was cut to %v WCU/s: a key's throttle slowed every key", st.MinRateWCU)
	}
}

// A table-level reason cuts the shared rate, as before.
func TestWriterTableThrottleCutsShared(t *testing.T) {
	st, c, _ := writeHot(t, faultproxy.Config{
		Throttle: 0.1, Seed: 3,
		Reasons: []faultproxy.Reason{{Reason: faultproxy.TableCapacity}, {Reason: faultproxy.IndexCapacity, Index: "ByParent"}},
	}, 2000)
	if c.Throttled == 0 {
		t.Fatal("no throttle injected")
	}
	if st.MinRateWCU == 0 || math.IsInf(st.MinRateWCU, 1) {
		t.Errorf("table and index capacity throttles did not cut the shared rate (min rate %v)", st.MinRateWCU)
	}
	if st.KeyThrottles != 0 {
		t.Errorf("%d throttles read as a key's; their reasons name the table's and the index's capacity", st.KeyThrottles)
	}
}

// Injected key-range reasons name the index of the whole batch: its keys
// are paced, the shared rate is not cut.
func TestWriterInjectedKeyRangeReason(t *testing.T) {
	st, c, _ := writeHot(t, faultproxy.Config{
		Throttle: 0.05, Seed: 5,
		Reasons: []faultproxy.Reason{{Reason: faultproxy.IndexKeyRange, Index: "ByParent"}},
	}, 2000)
	if c.Throttled == 0 {
		t.Fatal("no throttle injected")
	}
	if st.KeyThrottles == 0 {
		t.Error("key-range throttles were not read as a key's")
	}
	if st.MinRateWCU != 0 {
		t.Errorf("key-range throttles cut the shared rate to %v", st.MinRateWCU)
	}
}

// countTable counts a table's items with a scan.
func countTable(t *testing.T, c *dynamodb.Client, table string) int {
	t.Helper()
	n := 0
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table), Select: types.SelectCount})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n += int(page.Count)
	}
	return n
}

// hotTimer wraps a client and notes, for each item written, whether it is
// the hot key's ("hot" in ParentId), in the order they were written.
type hotTimer struct {
	BatchWriter
	mu    sync.Mutex
	order []bool // true: a hot item
}

func (h *hotTimer) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opt ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	out, err := h.BatchWriter.BatchWriteItem(ctx, in, opt...)
	if err != nil {
		return out, err
	}
	back := map[string]bool{}
	for _, rs := range out.UnprocessedItems {
		for _, r := range rs {
			back[r.PutRequest.Item["Id"].(*types.AttributeValueMemberS).Value] = true
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, rs := range in.RequestItems {
		for _, r := range rs {
			it := r.PutRequest.Item
			if !back[it["Id"].(*types.AttributeValueMemberS).Value] {
				h.order = append(h.order, it["ParentId"].(*types.AttributeValueMemberS).Value == "hot")
			}
		}
	}
	return out, nil
}

// A key over its partition's rate on average (a fifth of the items have
// the parent "hot": 600 WCU of ByParent's "hot" at 100 WCU/s, 6 s at
// least) does not hold the other keys back: its held items leave the
// writer's window for the held spool, and the other keys' items are all
// written while most of the hot key's still wait. Without the spool the
// held items fill the window, and the others go at the hot key's pace.
func TestWriterHotKeyOverItsRate(t *testing.T) {
	ep := ddblocal.Endpoint(t)
	direct := ddblocal.Client(t, ep)
	table := ddblocal.NewTable(t, direct, testSpec)
	proxy, err := faultproxy.New(faultproxy.Config{Target: ep, Operations: []string{"BatchWriteItem"},
		Spec: map[string]layouts.TableSpec{table: testSpec}, PartitionWCU: 100})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	timer := &hotTimer{BatchWriter: ddblocal.Client(t, proxy.URL())}
	var traceMu sync.Mutex
	spills := 0
	w := NewDDBWriter(timer, table, testSpec, WriterOptions{Concurrency: 8, MaxRetries: 50,
		Trace: func(format string, args ...any) {
			traceMu.Lock()
			defer traceMu.Unlock()
			if strings.Contains(format, "spooled") {
				spills++
			}
		}})
	const n = 3000
	st := writeEach(t, w, n, hotItem)
	c := proxy.Counts()
	if got := countTable(t, direct, table); got != n || st.Items != n || c.AcceptedItems != n || st.Watermark != n || st.Held != 0 {
		t.Fatalf("table holds %d items, writer wrote %d (%d held), proxy accepted %d, watermark %d; want %d", got, st.Items, st.Held, c.AcceptedItems, st.Watermark, n)
	}
	if c.KeyRangeItems == 0 {
		t.Fatal("the hot key was never throttled: the test proves nothing")
	}
	// How many of the hot key's items were written when the last of the
	// others was.
	hotBefore, hot := 0, 0
	for _, h := range timer.order {
		if h {
			hot++
		} else {
			hotBefore = hot
		}
	}
	t.Logf("%d of %d hot items written before the last other item; %d items spooled in %d moves, %d key throttles, min shared rate %v",
		hotBefore, hot, st.Spooled, spills, st.KeyThrottles, st.MinRateWCU)
	// Held to the hot key's pace, the others would end with it: nearly
	// all of its items written before their last. How far ahead of it
	// they end is a speed (DynamoDB Local's against the proxy's 100 WCU/s
	// of wall-clock time): half of them, the bound this test had, was
	// passed in 2 of 3 runs on 2 loaded cores with or without the
	// writer's changes. The bound is the pace, not the speed.
	if hotBefore > hot*9/10 {
		t.Errorf("the other keys went at the hot key's pace: %d of its %d items were written before the last of theirs", hotBefore, hot)
	}
	if st.Spooled == 0 {
		t.Error("no held item was spooled")
	}
	if st.MinRateWCU != 0 {
		t.Errorf("the shared rate was cut to %v WCU/s", st.MinRateWCU)
	}
}
