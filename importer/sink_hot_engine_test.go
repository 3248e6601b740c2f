package importer

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddblocal"
	"github.com/treeport/treeport/internal/faultproxy"
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
	var cuts []string
	w := NewDDBWriter(ddblocal.Client(t, proxy.URL()), table, testSpec, WriterOptions{
		Concurrency: 8, MaxRetries: 50,
		Trace: func(format string, args ...any) { cuts = append(cuts, fmt.Sprintf(format, args...)) },
	})
	ctx := context.Background()
	for i := range n {
		if err := w.Write(ctx, int64(i), hotItem(i)); err != nil {
			t.Fatal(err)
		}
	}
	st, err := w.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
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
