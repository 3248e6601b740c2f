package exporter_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/internal/testserver/faultproxy"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// oracle answers queries from the records alone, in memory.
type oracle struct {
	byID     map[string]*transform.Record
	children map[string][]string
}

func newOracle(recs []*transform.Record) *oracle {
	o := &oracle{byID: map[string]*transform.Record{}, children: map[string][]string{}}
	for _, r := range recs {
		o.byID[r.ID] = r
		if r.Parent != "" {
			o.children[r.Parent] = append(o.children[r.Parent], r.ID)
		}
	}
	return o
}

func (o *oracle) path(id string) []string {
	var p []string
	for ; id != ""; id = o.byID[id].Parent {
		p = append(p, id)
	}
	slices.Reverse(p)
	return p
}

func (o *oracle) answer(q exporter.QueryOptions) []exporter.Result {
	lo, hi := q.MinDepth, q.MaxDepth
	if q.Kind == exporter.Get || q.Kind == exporter.Children {
		lo, hi = exporter.Band(q.Kind)
	}
	in := func(d int) bool { return d >= lo && (hi == exporter.NoMaxDepth || d <= hi) }
	res := func(id string, d int) exporter.Result {
		r := o.byID[id]
		return exporter.Result{ID: id, Parent: r.Parent, RelativeDepth: d, Attrs: r.Attrs}
	}
	var out []exporter.Result
	switch q.Kind {
	case exporter.Ancestors:
		d := 0
		for id := q.ID; id != ""; id = o.byID[id].Parent {
			if in(d) {
				out = append(out, res(id, d))
			}
			d++
		}
	default:
		level := []string{q.ID}
		for d := 0; len(level) > 0; d++ {
			var next []string
			for _, id := range level {
				if in(d) {
					out = append(out, res(id, d))
				}
				next = append(next, o.children[id]...)
			}
			level = next
		}
	}
	exporter.SortResults(out)
	return out
}

// resultsDiff describes how two answers differ; "" when they are the same.
func resultsDiff(got, want []exporter.Result) string {
	var b strings.Builder
	if len(got) != len(want) {
		fmt.Fprintf(&b, "%d results, want %d\n", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Parent != w.Parent || g.RelativeDepth != w.RelativeDepth {
			fmt.Fprintf(&b, "result %d: %q (parent %q) at %d, want %q (parent %q) at %d\n", i, g.ID, g.Parent, g.RelativeDepth, w.ID, w.Parent, w.RelativeDepth)
		} else if d := attrsDiff(g.Attrs, w.Attrs); d != "" {
			fmt.Fprintf(&b, "result %d, %q: %s\n", i, g.ID, d)
		}
		if b.Len() > 1500 {
			break
		}
	}
	return b.String()
}

// randomAttrs gives a node attributes of every DynamoDB type, some of them.
func randomAttrs(rng *rand.Rand, id string) transform.Attrs {
	a := transform.Attrs{"name": &types.AttributeValueMemberS{Value: "node " + id}}
	if rng.IntN(2) == 0 {
		// DynamoDB keeps numbers by value: 1.50 comes back as 1.5.
		a["qty"] = &types.AttributeValueMemberN{Value: fmt.Sprintf("%d.%d0", rng.IntN(1000), rng.IntN(10))}
	}
	if rng.IntN(3) == 0 {
		a["big"] = &types.AttributeValueMemberN{Value: "-12345678901234567890123456789.12345678"}
	}
	if rng.IntN(2) == 0 {
		a["ok"] = &types.AttributeValueMemberBOOL{Value: rng.IntN(2) == 0}
	}
	if rng.IntN(4) == 0 {
		a["nothing"] = &types.AttributeValueMemberNULL{Value: true}
	}
	if rng.IntN(3) == 0 {
		a["blob"] = &types.AttributeValueMemberB{Value: []byte{0, 1, byte(rng.IntN(256)), 0xff}}
	}
	if rng.IntN(3) == 0 {
		a["tags"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{
			&types.AttributeValueMemberS{Value: "x"},
			&types.AttributeValueMemberN{Value: strconv.Itoa(rng.IntN(50))},
			&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"deep": &types.AttributeValueMemberBOOL{Value: true}}},
		}}
	}
	if rng.IntN(4) == 0 {
		a["set"] = &types.AttributeValueMemberSS{Value: []string{"b", "a", "c"}}
		a["nums"] = &types.AttributeValueMemberNS{Value: []string{"3", "1.5", "-2"}}
	}
	return a
}

// randomForest makes a forest of 2–4 trees and 14–45 nodes whose ids start
// with prefix. Two siblings are CM2 and CM20, each with a subtree, so that a
// descendants query of CM2 that matched CM20's paths would be caught.
func randomForest(seed uint64, prefix string) []*transform.Record {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	trees := 2 + rng.IntN(3)
	n := trees + 12 + rng.IntN(30)
	var nums []int
	for _, v := range rng.Perm(n + 40) {
		if v+1 != 2 && v+1 != 20 {
			nums = append(nums, v+1)
		}
	}
	nums = nums[:n]
	nums[trees], nums[trees+1] = 2, 20
	ids := make([]string, n)
	for i, v := range nums {
		ids[i] = prefix + "CM" + strconv.Itoa(v)
	}
	parent := make([]int, n)
	deep := rng.IntN(2) == 0
	for i := range n {
		switch {
		case i < trees:
			parent[i] = -1
		case i == trees+1:
			parent[i] = parent[trees] // CM20 is CM2's sibling
		case i == trees+2 || i == trees+4:
			parent[i] = trees // CM2's children
		case i == trees+3:
			parent[i] = trees + 1 // CM20's child
		case i == trees+5:
			parent[i] = trees + 2 // CM2's grandchild
		case deep && rng.IntN(3) > 0:
			parent[i] = i - 1
		default:
			parent[i] = rng.IntN(i)
		}
	}
	recs := make([]*transform.Record, n)
	for i := range n {
		r := &transform.Record{ID: ids[i], Attrs: randomAttrs(rng, ids[i])}
		if parent[i] >= 0 {
			r.Parent = ids[parent[i]]
		}
		recs[i] = r
	}
	return recs
}

// bands are the depth bands each descendants and ancestors query is asked
// with.
var bands = [][2]int{{1, exporter.NoMaxDepth}, {0, exporter.NoMaxDepth}, {2, 3}, {1, 1}, {0, 0}}

// queriesFor lists the queries to ask about the nodes.
func queriesFor(o *oracle, ids []string) []exporter.QueryOptions {
	var qs []exporter.QueryOptions
	for _, id := range ids {
		path := o.path(id)
		qs = append(qs,
			exporter.QueryOptions{Kind: exporter.Get, ID: id, Path: path},
			exporter.QueryOptions{Kind: exporter.Children, ID: id, Path: path})
		for _, b := range bands {
			qs = append(qs,
				exporter.QueryOptions{Kind: exporter.Descendants, ID: id, Path: path, MinDepth: b[0], MaxDepth: b[1]},
				exporter.QueryOptions{Kind: exporter.Ancestors, ID: id, Path: path, MinDepth: b[0], MaxDepth: b[1]})
		}
	}
	return qs
}

// interesting picks the nodes to query: a root, CM2 (whose sibling CM20 must
// not leak into its answers), a leaf, the deepest node and one at random.
func interesting(recs []*transform.Record, prefix string, rng *rand.Rand) []string {
	o := newOracle(recs)
	ids := []string{recs[0].ID, prefix + "CM2"}
	deepest, leaf := recs[0].ID, ""
	for _, r := range recs {
		if len(o.path(r.ID)) > len(o.path(deepest)) {
			deepest = r.ID
		}
		if len(o.children[r.ID]) == 0 && leaf == "" {
			leaf = r.ID
		}
	}
	return append(ids, leaf, deepest, recs[rng.IntN(len(recs))].ID)
}

// layoutTables loads recs into one table per layout.
func layoutTables(t *testing.T, client *dynamodb.Client, recs []*transform.Record) map[string]layoutTable {
	t.Helper()
	return variantTables(t, client, recs, nil)
}

// variant is a layout with options other than the defaults.
type variant struct {
	name, layout string
	opts         layouts.Options
}

// variants exercise renamed attributes and indexes, other delimiters,
// other shard counts and closure ancestor rows that copy nothing.
var variants = []variant{
	{name: "path renamed", layout: layouts.PathName, opts: layouts.Options{
		Attr:      map[string]string{"Id": "ComponentId", "ParentId": "Up", "Path": "P", "Depth": "Lvl", "TreeId": "Tree", "ByPath": "GSI2", "ByParent": "GSI1"},
		Delimiter: "/",
	}},
	{name: "sharded-path 1 shard", layout: layouts.ShardedName, opts: layouts.Options{Shards: 1}},
	{name: "sharded-path 7 shards", layout: layouts.ShardedName, opts: layouts.Options{Shards: 7, Attr: map[string]string{"GraphId": "G"}}},
	{name: "closure copy none", layout: layouts.ClosureName, opts: layouts.Options{ClosureCopy: []string{}, Attr: map[string]string{"ByAncestor": "GSI9", "RelativeDepth": "RD"}}},
	{name: "closure copy name", layout: layouts.ClosureName, opts: layouts.Options{ClosureCopy: []string{"name"}}},
	{name: "prefix renamed", layout: layouts.PrefixName, opts: layouts.Options{Attr: map[string]string{"Key": "PK", "Child": "SK"}, Delimiter: "~"}},
}

// variantTables loads recs into one table per layout, and one per variant.
func variantTables(t *testing.T, client *dynamodb.Client, recs []*transform.Record, vs []variant) map[string]layoutTable {
	t.Helper()
	for _, name := range layouts.Names() {
		vs = append(vs, variant{name: name, layout: name})
	}
	tables := map[string]layoutTable{}
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(4)
	for _, v := range vs {
		l := mustLayout(t, v.layout, v.opts)
		g.Go(func() error {
			table := loadTable(t, client, l, recs)
			mu.Lock()
			tables[v.name] = layoutTable{l, table}
			mu.Unlock()
			return nil
		})
	}
	g.Wait()
	return tables
}

type layoutTable struct {
	l     layouts.Layout
	table string
}

// TestQueriesAgreeAcrossLayouts asks every kind of query, with several depth
// bands, about several nodes of 20 random forests: each layout's answer is
// the in-memory oracle's, attributes and types included. The variants
// (renames, delimiters, shard counts, closure copies) answer about the first
// 5 forests.
func TestQueriesAgreeAcrossLayouts(t *testing.T) {
	client := localClient(t)
	const seeds, variantSeeds = 20, 5
	var all []*transform.Record
	var asks []exporter.QueryOptions
	var wants [][]exporter.Result
	variantAsks := 0 // the variants answer asks[:variantAsks]
	for seed := range uint64(seeds) {
		prefix := fmt.Sprintf("s%d-", seed)
		recs := randomForest(seed, prefix)
		all = append(all, recs...)
		if seed == variantSeeds {
			variantAsks = len(asks)
		}
		o := newOracle(recs)
		for _, q := range queriesFor(o, interesting(recs, prefix, rand.New(rand.NewPCG(seed, 7)))) {
			asks = append(asks, q)
			wants = append(wants, o.answer(q))
		}
	}
	tables := variantTables(t, client, all, variants)
	for _, name := range slices.Sorted(maps.Keys(tables)) {
		lt := tables[name]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var g errgroup.Group
			g.SetLimit(4)
			var mu sync.Mutex
			fails := 0
			asks := asks
			if !slices.Contains(layouts.Names(), name) {
				asks = asks[:variantAsks]
			}
			for i, q := range asks {
				g.Go(func() error {
					got, st, err := exporter.Query(context.Background(), client, lt.table, lt.l, q)
					mu.Lock()
					defer mu.Unlock()
					if fails > 10 {
						return nil
					}
					if err != nil {
						t.Errorf("%s %s [%d,%d]: %v", q.Kind, q.ID, q.MinDepth, q.MaxDepth, err)
						fails++
						return nil
					}
					if d := resultsDiff(got, wants[i]); d != "" {
						t.Errorf("%s %s [%d,%d]:\n%s", q.Kind, q.ID, q.MinDepth, q.MaxDepth, d)
						fails++
					}
					if st.Requests == 0 || st.ConsumedRCU <= 0 {
						t.Errorf("%s %s: stats %+v: want requests and the RCU DynamoDB reported", q.Kind, q.ID, st)
						fails++
					}
					return nil
				})
			}
			g.Wait()
		})
	}
}

// TestQueryPagination queries a node with 1500 children of about 1 KB each,
// so that every answer spans more than one 1 MB page.
func TestQueryPagination(t *testing.T) {
	client := localClient(t)
	pad := strings.Repeat("x", 1000)
	recs := []*transform.Record{{ID: "W", Attrs: transform.Attrs{"name": &types.AttributeValueMemberS{Value: "wide"}}}}
	for i := range 1500 {
		recs = append(recs, &transform.Record{ID: "W" + strconv.Itoa(i), Parent: "W", Attrs: transform.Attrs{
			"pad": &types.AttributeValueMemberS{Value: pad}, "i": &types.AttributeValueMemberN{Value: strconv.Itoa(i)},
		}})
	}
	recs = append(recs, &transform.Record{ID: "W7x", Parent: "W7", Attrs: transform.Attrs{}})
	o := newOracle(recs)
	tables := layoutTables(t, client, recs)
	asks := []exporter.QueryOptions{
		{Kind: exporter.Children, ID: "W"},
		{Kind: exporter.Descendants, ID: "W", MinDepth: 1, MaxDepth: exporter.NoMaxDepth},
		{Kind: exporter.Descendants, ID: "W", MinDepth: 0, MaxDepth: 1},
		{Kind: exporter.Descendants, ID: "W", MinDepth: 2, MaxDepth: 2},
		{Kind: exporter.Ancestors, ID: "W7x", MinDepth: 0, MaxDepth: exporter.NoMaxDepth},
	}
	for _, name := range layouts.Names() {
		lt := tables[name]
		t.Run(name, func(t *testing.T) {
			for _, q := range asks {
				q.Path = o.path(q.ID)
				got, st, err := exporter.Query(context.Background(), client, lt.table, lt.l, q)
				if err != nil {
					t.Fatalf("%s %s: %v", q.Kind, q.ID, err)
				}
				want := o.answer(q)
				if d := resultsDiff(got, want); d != "" {
					t.Errorf("%s %s [%d,%d]:\n%s", q.Kind, q.ID, q.MinDepth, q.MaxDepth, d)
				}
				// 1500 KB of answer takes two pages of Query, or 15 BatchGetItem calls.
				if len(want) > 1000 && st.Requests < 2 {
					t.Errorf("%s %s: %d requests for %d results of 1 KB: did it follow LastEvaluatedKey?", q.Kind, q.ID, st.Requests, len(want))
				}
			}
		})
	}
}

// TestPrefixLocate queries a prefix table without the node's path: a Scan
// finds it, and OnLocate says what that cost.
func TestPrefixLocate(t *testing.T) {
	client := localClient(t)
	recs := randomForest(99, "")
	o := newOracle(recs)
	l := mustLayout(t, layouts.PrefixName, layouts.Options{})
	table := loadTable(t, client, l, recs)
	for _, id := range []string{"CM2", "CM20", recs[0].ID} {
		for _, kind := range exporter.Kinds {
			q := exporter.QueryOptions{Kind: kind, ID: id, MinDepth: 1, MaxDepth: exporter.NoMaxDepth}
			var located []string
			var cost exporter.Stats
			q.OnLocate = func(path []string, st exporter.Stats) { located, cost = path, st }
			got, st, err := exporter.Query(context.Background(), client, table, l, q)
			if err != nil {
				t.Fatalf("%s %s: %v", kind, id, err)
			}
			if d := resultsDiff(got, o.answer(q)); d != "" {
				t.Errorf("%s %s:\n%s", kind, id, d)
			}
			if !slices.Equal(located, o.path(id)) {
				t.Errorf("%s %s: located at %q, want %q", kind, id, located, o.path(id))
			}
			if cost.Requests == 0 || st.Requests <= cost.Requests && kind != exporter.Get {
				t.Errorf("%s %s: locating cost %+v of %+v", kind, id, cost, st)
			}
		}
	}
}

// TestQueryErrors checks what a query says about a node that is not there,
// a wrong --shards and bad bands.
func TestQueryErrors(t *testing.T) {
	client := localClient(t)
	recs := randomForest(3, "")
	tables := layoutTables(t, client, recs)
	for _, name := range layouts.Names() {
		lt := tables[name]
		for _, kind := range exporter.Kinds {
			t.Run(name+"/"+string(kind)+"/missing", func(t *testing.T) {
				q := exporter.QueryOptions{Kind: kind, ID: "NOPE", MinDepth: 1, MaxDepth: exporter.NoMaxDepth}
				if name == layouts.PrefixName {
					q.Path = []string{recs[0].ID, "NOPE"}
				}
				_, _, err := exporter.Query(context.Background(), client, lt.table, lt.l, q)
				if !errors.Is(err, exporter.ErrNotFound) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), `"NOPE"`) {
					t.Errorf("err = %v, want ErrNotFound naming the node", err)
				}
			})
		}
	}
	t.Run("leaf has no children", func(t *testing.T) {
		o := newOracle(recs)
		var leaf string
		for _, r := range recs {
			if len(o.children[r.ID]) == 0 {
				leaf = r.ID
			}
		}
		for _, name := range layouts.Names() {
			lt := tables[name]
			res, _, err := exporter.Query(context.Background(), client, lt.table, lt.l, exporter.QueryOptions{Kind: exporter.Children, ID: leaf, Path: o.path(leaf)})
			if err != nil || len(res) != 0 {
				t.Errorf("%s: children of leaf %s: %v, %v", name, leaf, res, err)
			}
		}
	})
	t.Run("wrong shards", func(t *testing.T) {
		l := mustLayout(t, layouts.ShardedName, layouts.Options{Shards: 7})
		var err error
		for _, r := range recs {
			if _, _, err = exporter.Query(context.Background(), client, tables[layouts.ShardedName].table, l,
				exporter.QueryOptions{Kind: exporter.Descendants, ID: r.ID, MinDepth: 1, MaxDepth: exporter.NoMaxDepth}); err != nil {
				break
			}
		}
		if err == nil || !strings.Contains(err.Error(), "--shards") {
			t.Errorf("err = %v, want one that names --shards", err)
		}
	})
	bad := []struct {
		name string
		q    exporter.QueryOptions
		want string
	}{
		{name: "unknown kind", q: exporter.QueryOptions{Kind: "siblings", ID: "CM2"}, want: "siblings"},
		{name: "no id", q: exporter.QueryOptions{Kind: exporter.Get}, want: "id"},
		{name: "negative minimum", q: exporter.QueryOptions{Kind: exporter.Descendants, ID: "CM2", MinDepth: -1, MaxDepth: 2}, want: "minimum depth -1"},
		{name: "max below min", q: exporter.QueryOptions{Kind: exporter.Ancestors, ID: "CM2", MinDepth: 3, MaxDepth: 2}, want: "below the minimum"},
		{name: "path not ending with id", q: exporter.QueryOptions{Kind: exporter.Get, ID: "CM2", Path: []string{"CM1", "CM3"}}, want: "does not end"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			lt := tables[layouts.PathName]
			_, st, err := exporter.Query(context.Background(), client, lt.table, lt.l, tt.q)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one saying %q", err, tt.want)
			}
			if st.Requests != 0 {
				t.Errorf("a bad query sent %d requests", st.Requests)
			}
		})
	}
}

// halfBatches hands back half of every BatchGetItem's keys as unprocessed,
// as DynamoDB does when a response would be too large.
type halfBatches struct {
	*dynamodb.Client
	mu       sync.Mutex
	withheld int
}

func (h *halfBatches) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	for table, ka := range in.RequestItems {
		if len(ka.Keys) < 2 {
			continue
		}
		keep := len(ka.Keys) / 2
		send := ka
		send.Keys = ka.Keys[:keep]
		out, err := h.Client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
			RequestItems:           map[string]types.KeysAndAttributes{table: send},
			ReturnConsumedCapacity: in.ReturnConsumedCapacity,
		}, optFns...)
		if err != nil {
			return nil, err
		}
		held := ka
		held.Keys = ka.Keys[keep:]
		out.UnprocessedKeys = map[string]types.KeysAndAttributes{table: held}
		h.mu.Lock()
		h.withheld += len(held.Keys)
		h.mu.Unlock()
		return out, nil
	}
	return h.Client.BatchGetItem(ctx, in, optFns...)
}

// TestUnprocessedKeysAndThrottles answers queries through a client that
// leaves half of every batch unprocessed, and through a proxy that throttles
// and fails a share of the requests: the answers are whole all the same.
func TestUnprocessedKeysAndThrottles(t *testing.T) {
	client := localClient(t)
	recs := randomForest(11, "")
	o := newOracle(recs)
	tables := layoutTables(t, client, recs)
	proxy, err := faultproxy.New(faultproxy.Config{
		Target: endpointOf(t), Seed: 5, Throttle: 0.15, ServerError: 0.05,
		Operations: []string{"Query", "GetItem", "BatchGetItem", "Scan"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	flaky := clientFor(t, proxy.URL())
	half := &halfBatches{Client: client}
	clients := map[string]exporter.QueryAPI{"unprocessed keys": half, "throttles and 5xx": flaky}
	for what, c := range clients {
		t.Run(what, func(t *testing.T) {
			var retries, throttles, failed int64
			for _, name := range layouts.Names() {
				lt := tables[name]
				for _, q := range queriesFor(o, []string{recs[0].ID, "CM2"}) {
					got, st, err := exporter.Query(context.Background(), c, lt.table, lt.l, q)
					if err != nil {
						t.Fatalf("%s: %s %s: %v", name, q.Kind, q.ID, err)
					}
					if d := resultsDiff(got, o.answer(q)); d != "" {
						t.Errorf("%s: %s %s [%d,%d]:\n%s", name, q.Kind, q.ID, q.MinDepth, q.MaxDepth, d)
					}
					retries += st.Retries
					throttles += st.Throttles
					failed += st.Failed
					if what == "throttles and 5xx" {
						// The same query without faults: the failed
						// requests are the only difference.
						_, clean, err := exporter.Query(context.Background(), client, lt.table, lt.l, q)
						if err != nil {
							t.Fatal(err)
						}
						if st.Requests-st.Failed != clean.Requests || st.Items != clean.Items {
							t.Errorf("%s: %s %s: %+v through faults, %+v without", name, q.Kind, q.ID, st, clean)
						}
					}
				}
				recsGot, scanStats, err := exporter.Scan(context.Background(), c, lt.table, lt.l, exporter.ScanOptions{Segments: 3, PageSize: 7})
				if err != nil {
					t.Fatalf("%s: scan: %v", name, err)
				}
				if d := recordDiff(recsGot, recs); d != "" {
					t.Errorf("%s: scan:\n%s", name, d)
				}
				failed += scanStats.Failed
			}
			if retries == 0 {
				t.Error("no request was retried: the fault was not exercised")
			}
			if what == "throttles and 5xx" && (throttles == 0 || failed != proxy.Counts().Faults()) {
				t.Errorf("%d throttles and %d failed requests counted, proxy counts %+v", throttles, failed, proxy.Counts())
			}
			if what == "unprocessed keys" && half.withheld == 0 {
				t.Error("no key was withheld")
			}
		})
	}
}

// TestScanRateCap scans a table with a cap of RCU per second: it takes about
// the time the cap allows.
func TestScanRateCap(t *testing.T) {
	client := localClient(t)
	recs := randomForest(5, "")
	l := mustLayout(t, layouts.ClosureName, layouts.Options{})
	table := loadTable(t, client, l, recs)
	_, free, err := exporter.Scan(context.Background(), client, table, l, exporter.ScanOptions{Segments: 2, PageSize: 5})
	if err != nil {
		t.Fatal(err)
	}
	// Pay for the whole scan in about 1.5 s at the cap.
	capRCU := free.ConsumedRCU / 1.5
	var pages int
	start := nowFunc()
	_, st, err := exporter.Scan(context.Background(), client, table, l, exporter.ScanOptions{
		Segments: 2, PageSize: 5, MaxRCU: capRCU, OnPage: func(exporter.Stats) { pages++ },
	})
	took := nowFunc().Sub(start).Seconds()
	if err != nil {
		t.Fatal(err)
	}
	if pages != int(st.Requests-st.Failed) {
		t.Errorf("OnPage called %d times for %d requests (%d failed)", pages, st.Requests, st.Failed)
	}
	// The burst is one second's worth, so at least (total - burst) / cap.
	if minTook := (st.ConsumedRCU - capRCU) / capRCU; took < minTook*0.9 {
		t.Errorf("a scan of %.1f RCU at %.1f RCU/s took %.2fs, want at least %.2fs", st.ConsumedRCU, capRCU, took, minTook)
	}
}
