// Package layoutstest is the layouts' conformance suite and what it runs
// on: random and hand-written forests, a table in memory that answers as
// DynamoDB does, and the checks every layout and table model must pass.
// Tests import it; product code never does.
package layoutstest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/models"
	"github.com/treeport/treeport/transform"
)

// CheckKeyTypes: every item has the table's keys with their types, and an
// index key, when present, has its type.
func CheckKeyTypes(t *testing.T, spec layouts.TableSpec, it layouts.Item) {
	t.Helper()
	check := func(k *layouts.KeyAttr, required bool) {
		v, ok := it[k.Name]
		if !ok {
			if required {
				t.Fatalf("item has no key attribute %q: %s", k.Name, DDBJSON(it))
			}
			return
		}
		var typ types.ScalarAttributeType
		switch v.(type) {
		case *types.AttributeValueMemberS:
			typ = types.ScalarAttributeTypeS
		case *types.AttributeValueMemberN:
			typ = types.ScalarAttributeTypeN
		}
		if typ != k.Type || keyText(v) == "" {
			t.Fatalf("key attribute %q is %T %q, want a non-empty %s: %s", k.Name, v, keyText(v), k.Type, DDBJSON(it))
		}
	}
	check(&spec.PK, true)
	if spec.SK != nil {
		check(spec.SK, true)
	}
	for _, ix := range spec.Indexes {
		check(&ix.PK, false)
		if ix.SK != nil {
			check(ix.SK, false)
		}
	}
}

// SameAttrs compares attributes deeply, an empty map being no map.
func SameAttrs(a, b transform.Attrs) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// CheckReading: IsNode, NodeOf and NodeFilter pick each node's own item
// (the one Node rebuilds it from), Owner names the node of every item and of
// its key alone, and Query answers every kind of query, with depth bands,
// from a table holding the items as the forest answers it; a node that is
// not there is a *NotFoundError.
func CheckReading(t *testing.T, l layouts.Layout, f *Forest, perNode [][]layouts.Item) {
	t.Helper()
	spec := l.Table()
	var all []layouts.Item
	filter := l.NodeFilter()
	var conds []cond
	if filter != nil {
		var err error
		u := newUses(filter.Names, filter.Values)
		if conds, err = parseConds(filter.Expr, u); err != nil {
			t.Fatalf("NodeFilter %q: %v", filter.Expr, err)
		}
		if err := u.allUsed(); err != nil {
			t.Fatalf("NodeFilter %q: %v", filter.Expr, err)
		}
	}
	for i, n := range f.Nodes {
		for _, it := range perNode[i] {
			all = append(all, it)
			_, node, err := l.Node(it)
			if err != nil {
				t.Fatal(err)
			}
			key := layouts.Item{spec.PK.Name: it[spec.PK.Name]}
			if spec.SK != nil {
				key[spec.SK.Name] = it[spec.SK.Name]
			}
			for _, view := range []layouts.View{layouts.MapView(it), layouts.AttrsView(attrsOf(it))} {
				if got := l.IsNode(view); got != node {
					t.Fatalf("IsNode(%s) = %v, Node says %v", DDBJSON(it), got, node)
				}
				id, parent, ok := l.NodeOf(view)
				if ok != node || (ok && (id != n.ID || parent != n.Parent)) {
					t.Fatalf("NodeOf(%s) = %q, %q, %v; want %q, %q, %v", DDBJSON(it), id, parent, ok, n.ID, n.Parent, node)
				}
				if got := l.Owner(view); got != n.ID {
					t.Fatalf("Owner(%s) = %q, want %q", DDBJSON(it), got, n.ID)
				}
			}
			// A model that keys a leaf by its name alone (store-locations)
			// cannot tell its id from the key.
			if got := l.Owner(layouts.MapView(key)); got != n.ID && !models.LeavesOnly(l) {
				t.Fatalf("Owner of the key %s = %q, want %q", DDBJSON(key), got, n.ID)
			}
			if got := holds(conds, it); got != node {
				t.Fatalf("NodeFilter %q lets %s through: %v; Node says %v", filter.Expr, DDBJSON(it), got, node)
			}
		}
	}

	table := NewMemTable(spec, all, 3)
	ctx := context.Background()
	bands := []layouts.Request{
		{Kind: layouts.QueryGet, MinDepth: 0, MaxDepth: 0},
		{Kind: layouts.QueryChildren, MinDepth: 1, MaxDepth: 1},
		{Kind: layouts.QueryDescendants, MinDepth: 1, MaxDepth: layouts.NoMaxDepth},
		{Kind: layouts.QueryDescendants, MinDepth: 0, MaxDepth: layouts.NoMaxDepth},
		{Kind: layouts.QueryDescendants, MinDepth: 0, MaxDepth: 0},
		{Kind: layouts.QueryDescendants, MinDepth: 1, MaxDepth: 2},
		{Kind: layouts.QueryDescendants, MinDepth: 2, MaxDepth: 3},
		{Kind: layouts.QueryDescendants, MinDepth: 3, MaxDepth: layouts.NoMaxDepth},
		{Kind: layouts.QueryAncestors, MinDepth: 1, MaxDepth: layouts.NoMaxDepth},
		{Kind: layouts.QueryAncestors, MinDepth: 0, MaxDepth: layouts.NoMaxDepth},
		{Kind: layouts.QueryAncestors, MinDepth: 0, MaxDepth: 0},
		{Kind: layouts.QueryAncestors, MinDepth: 1, MaxDepth: 1},
		{Kind: layouts.QueryAncestors, MinDepth: 2, MaxDepth: layouts.NoMaxDepth},
	}
	for i, n := range f.Nodes {
		// Every node with its Path; a few without, which a PathKeyed
		// layout finds with a Scan.
		paths := [][]string{n.Path}
		if i%7 == 0 {
			paths = append(paths, nil)
		}
		for _, path := range paths {
			for _, q := range bands {
				q.ID, q.Path, q.Concurrency = n.ID, path, 1+i%3
				var located []string
				q.OnLocate = func(p []string) { located = p }
				got, err := l.Query(ctx, table, q)
				if err != nil {
					t.Fatalf("%s %d–%d of %q (path %q): %v", q.Kind, q.MinDepth, q.MaxDepth, n.ID, path, err)
				}
				checkAnswer(t, &q, got, want(f, i, &q))
				if l.PathKeyed() && path == nil && !slices.Equal(located, n.Path) {
					t.Fatalf("%s of %q: located %q, want %q", q.Kind, n.ID, located, n.Path)
				}
			}
		}
	}

	// A node that is not in the table, asked every kind of query.
	missing := "no such node"
	for slices.ContainsFunc(f.Nodes, func(n *transform.Node) bool { return n.ID == missing }) {
		missing += "!"
	}
	for _, path := range [][]string{{missing}, nil} {
		for _, q := range bands {
			q.ID, q.Path, q.Concurrency = missing, path, 2
			_, err := l.Query(ctx, table, q)
			var nf *layouts.NotFoundError
			if !errors.As(err, &nf) || !strings.Contains(nf.Node, fmt.Sprintf("%q", missing)) {
				t.Fatalf("%s %d–%d of a missing node (path %q): %v, want a *NotFoundError naming it", q.Kind, q.MinDepth, q.MaxDepth, path, err)
			}
		}
	}
}

// want is the forest's answer to q about node i.
func want(f *Forest, i int, q *layouts.Request) []layouts.Result {
	var out []layouts.Result
	add := func(j, rel int) {
		if q.InBand(rel) {
			n := f.Nodes[j]
			out = append(out, layouts.Result{ID: n.ID, Parent: n.Parent, RelativeDepth: rel, Attrs: n.Attrs})
		}
	}
	add(i, 0)
	switch q.Kind {
	case layouts.QueryChildren, layouts.QueryDescendants:
		for j, d := range f.Descendants(i) {
			add(j, d)
		}
	case layouts.QueryAncestors:
		for j, r := f.Parents[i], 1; j >= 0; j, r = f.Parents[j], r+1 {
			add(j, r)
		}
	}
	return out
}

func checkAnswer(t *testing.T, q *layouts.Request, got, want []layouts.Result) {
	t.Helper()
	order := func(res []layouts.Result) {
		sort.Slice(res, func(a, b int) bool {
			if res[a].RelativeDepth != res[b].RelativeDepth {
				return res[a].RelativeDepth < res[b].RelativeDepth
			}
			return res[a].ID < res[b].ID
		})
	}
	order(got)
	order(want)
	text := func(res []layouts.Result) string {
		var b strings.Builder
		for _, r := range res {
			fmt.Fprintf(&b, "\n  %q parent %q at %d", r.ID, r.Parent, r.RelativeDepth)
		}
		return b.String()
	}
	if len(got) != len(want) {
		t.Fatalf("%s %d–%d of %q: got%s\nwant%s", q.Kind, q.MinDepth, q.MaxDepth, q.ID, text(got), text(want))
	}
	for k := range got {
		g, w := got[k], want[k]
		if g.ID != w.ID || g.Parent != w.Parent || g.RelativeDepth != w.RelativeDepth || !SameAttrs(g.Attrs, w.Attrs) {
			t.Fatalf("%s %d–%d of %q: got%s\nwant%s\n(first difference: %+v, want %+v)", q.Kind, q.MinDepth, q.MaxDepth, q.ID, text(got), text(want), g, w)
		}
	}
}

// CheckCosts: the layout's cost model, fed the items, prices each query the
// benchmark asks (of a node known to be there, the path learnt by a
// GetItem where the query needs it) as the table bills it: requests, items
// read, RCU and the nodes of the answer.
func CheckCosts(t *testing.T, l layouts.Layout, f *Forest, perNode [][]layouts.Item) {
	t.Helper()
	tf, at := TransformForest(t, rand.New(rand.NewPCG(uint64(len(f.Nodes)), 11)), f)
	sample := make([]int32, len(at))
	for k, i := range at {
		sample[k] = int32(i)
	}
	model := l.Costs(tf, sample)
	all := addCosts(t, model, f, perNode, at)
	table := NewMemTable(l.Table(), all, 1<<30)
	ctx := context.Background()
	for k, n := range f.Nodes {
		est := model.Estimate(k)
		for _, c := range []struct {
			q    layouts.Request
			cost layouts.Cost
		}{
			{layouts.Request{Kind: layouts.QueryGet, MinDepth: 0, MaxDepth: 0}, est.Get},
			{layouts.Request{Kind: layouts.QueryChildren, MinDepth: 1, MaxDepth: 1}, est.Children},
			{layouts.Request{Kind: layouts.QueryDescendants, MinDepth: 1, MaxDepth: layouts.NoMaxDepth}, est.Descendants},
			{layouts.Request{Kind: layouts.QueryDescendants, MinDepth: 1, MaxDepth: 2}, est.Depth2},
			{layouts.Request{Kind: layouts.QueryAncestors, MinDepth: 1, MaxDepth: layouts.NoMaxDepth}, est.Ancestors},
		} {
			q := c.q
			q.ID, q.Path, q.Concurrency, q.Known = n.ID, n.Path, 4, true
			table.take()
			if layouts.LearnsPath(l, q.Kind) {
				// Learning the path: the GetItem of the node's own item.
				if _, err := l.Query(ctx, table, layouts.Request{Kind: layouts.QueryGet, ID: n.ID, Path: n.Path, Concurrency: 4}); err != nil {
					t.Fatal(err)
				}
			}
			res, err := l.Query(ctx, table, q)
			if err != nil {
				t.Fatal(err)
			}
			billed := table.take()
			billed.Nodes = int64(len(res))
			// Smooth is the model's own figure for projections, which no
			// table bills; it is never below what the requests' minimum is.
			if c.cost.Smooth < float64(billed.Requests)*layouts.MinReadRCU(false)-1e-9 {
				t.Fatalf("%s of %q: smooth %v below the minimum of %d requests", q.Kind, n.ID, c.cost.Smooth, billed.Requests)
			}
			billed.Smooth = c.cost.Smooth
			if billed != c.cost {
				t.Fatalf("%s %d–%d of %q: estimated %+v, billed %+v", q.Kind, q.MinDepth, q.MaxDepth, n.ID, c.cost, billed)
			}
		}
	}
}

// attrsOf is an item as AppendItems gives it.
func attrsOf(item layouts.Item) []layouts.Attr {
	out := make([]layouts.Attr, 0, len(item))
	for k, v := range item {
		out = append(out, layouts.Attr{Name: k, Value: v})
	}
	return out
}

// CheckCostsAdd checks the first half of CheckCosts, for layouts whose
// estimates are not exact (implicit inner nodes): the cost model gives
// every item, in the order Items writes them, to its own node.
func CheckCostsAdd(t *testing.T, l layouts.Layout, f *Forest, perNode [][]layouts.Item) {
	t.Helper()
	tf, at := TransformForest(t, rand.New(rand.NewPCG(uint64(len(f.Nodes)), 11)), f)
	sample := make([]int32, len(at))
	for k, i := range at {
		sample[k] = int32(i)
	}
	addCosts(t, l.Costs(tf, sample), f, perNode, at)
}

// addCosts adds each node's items to model, checking that each is given
// to its own node, and returns them all.
func addCosts(t *testing.T, model layouts.CostModel, f *Forest, perNode [][]layouts.Item, at []int) []layouts.Item {
	t.Helper()
	var all []layouts.Item
	for i, items := range perNode {
		for _, it := range items {
			node, _, err := model.Add(it, transform.ItemSize(it))
			if err != nil {
				t.Fatalf("Costs: Add(%s): %v", DDBJSON(it), err)
			}
			if node != int32(at[i]) {
				t.Fatalf("Costs: Add(%s) gives node %d, want %d (%q)", DDBJSON(it), node, at[i], f.Nodes[i].ID)
			}
			all = append(all, it)
		}
	}
	return all
}
