package layouts_test

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
	"github.com/treeport/treeport/transform"
)

// variant is a layout with options, as the conformance suite runs it.
type variant struct {
	name   string
	layout string
	opts   layouts.Options
}

// variants are every layout with its defaults and a few options each: the
// suite below must hold for all of them.
var variants = []variant{
	{"path", layouts.PathName, layouts.Options{}},
	{"path/renamed", layouts.PathName, layouts.Options{Attr: map[string]string{"Id": "ComponentId", "Path": "P", "ByPath": "GSI2", "TreeId": "T"}}},
	{"path/slash", layouts.PathName, layouts.Options{Delimiter: "/"}},
	{"sharded-path", layouts.ShardedName, layouts.Options{}},
	{"sharded-path/1", layouts.ShardedName, layouts.Options{Shards: 1}},
	{"sharded-path/7-slash", layouts.ShardedName, layouts.Options{Shards: 7, Delimiter: "/", Attr: map[string]string{"GraphId": "G"}}},
	{"closure", layouts.ClosureName, layouts.Options{}},
	{"closure/copy-none", layouts.ClosureName, layouts.Options{ClosureCopy: []string{}}},
	{"closure/copy-some", layouts.ClosureName, layouts.Options{ClosureCopy: []string{"name", "meta", "absent"}}},
	{"closure/renamed", layouts.ClosureName, layouts.Options{Attr: map[string]string{"RelativeDepth": "Level", "AncestorId": "Anc", "ByAncestor": "GSI1"}}},
	{"prefix", layouts.PrefixName, layouts.Options{}},
	{"prefix/slash", layouts.PrefixName, layouts.Options{Delimiter: "/"}},
	{"prefix/renamed", layouts.PrefixName, layouts.Options{Attr: map[string]string{"Key": "PK", "Child": "SK"}}},
	{"path/broken-bar", layouts.PathName, layouts.Options{Delimiter: "¦"}},
	{"prefix/arrow", layouts.PrefixName, layouts.Options{Delimiter: "→"}},
	{"adjacency", layouts.AdjacencyName, layouts.Options{}},
	{"adjacency/renamed", layouts.AdjacencyName, layouts.Options{Attr: map[string]string{"Id": "NodeId", "ByParent": "GSI1"}}},
	{"adjacency/swapped", layouts.AdjacencyName, layouts.Options{Attr: map[string]string{"Id": "ParentId", "ParentId": "Id"}}},
}

// attr is the variant's name for a layout attribute.
func (v variant) attr(canon string) string {
	if a, ok := v.opts.Attr[canon]; ok {
		return a
	}
	return canon
}

func (v variant) new(t testing.TB) layouts.Layout {
	t.Helper()
	l, err := layouts.New(v.layout, v.opts)
	if err != nil {
		t.Fatalf("New(%q): %v", v.layout, err)
	}
	return l
}

// TestConformance is the suite every layout passes, on many random forests:
// nodes → items → nodes gives back the same records; no key is written
// twice; each layout writes the number of items the SPEC says; the items
// answer the SPEC's queries; Measure predicts the items exactly; and the
// layout's reading (layouts.Reader) tells its node items apart, answers
// every query from a table of its items as the forest does, and prices
// those queries as a table bills them.
func TestConformance(t *testing.T) {
	seeds := 150
	if testing.Short() {
		seeds = 30
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			l := v.new(t)
			if !slices.Contains(layouts.Names(), l.Name()) {
				t.Fatalf("Name() = %q, not one of Names()", l.Name())
			}
			for seed := range uint64(seeds) {
				rng := rand.New(rand.NewPCG(seed, 7))
				large := seed%5 == 4
				f := randomForest(rng, 60, large)
				t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
					conform(t, v, l, f, large, seed%3 == 0)
				})
			}
		})
	}
}

// TestEveryLayoutConforms: a layout New knows is a layout the suite runs.
func TestEveryLayoutConforms(t *testing.T) {
	for _, name := range layouts.Names() {
		if !slices.ContainsFunc(variants, func(v variant) bool { return v.layout == name }) {
			t.Errorf("layout %q has no variant in the conformance suite: add it to variants", name)
		}
	}
}

// conform runs the suite on one forest; reading (on a third of the
// forests, for the queries take longer than the rest) adds the checks of
// the layout's reading.
func conform(t *testing.T, v variant, l layouts.Layout, f *forest, large, reading bool) {
	spec := l.Table()
	perNode := make([][]layouts.Item, len(f.nodes))
	var all []layouts.Item
	total := layouts.NewMeasure(l)
	for i, n := range f.nodes {
		if err := l.Items(n, func(it layouts.Item) { perNode[i] = append(perNode[i], it) }); err != nil {
			t.Fatalf("Items(%q): %v", n.ID, err)
		}
		all = append(all, perNode[i]...)

		// The layout's count of items per node.
		want := 1
		switch v.layout {
		case layouts.ClosureName:
			want = n.Depth + 1
		case layouts.PrefixName:
			want = 2
		}
		if len(perNode[i]) != want {
			t.Fatalf("node %q at depth %d: %d items, want %d", n.ID, n.Depth, len(perNode[i]), want)
		}

		// Items → Node gives back the record, once.
		var got []transform.Record
		for _, it := range perNode[i] {
			checkKeyTypes(t, spec, it)
			rec, ok, err := l.Node(it)
			if err != nil {
				t.Fatalf("Node(%s): %v", ddbJSON(it), err)
			}
			if ok {
				got = append(got, rec)
			}
		}
		if len(got) != 1 {
			t.Fatalf("node %q: Node found %d records among its items, want 1", n.ID, len(got))
		}
		if got[0].ID != n.ID || got[0].Parent != n.Parent || !sameAttrs(got[0].Attrs, n.Attrs) {
			t.Fatalf("round trip of %q:\n got  id %q parent %q attrs %v\n want id %q parent %q attrs %v",
				n.ID, got[0].ID, got[0].Parent, got[0].Attrs, n.ID, n.Parent, n.Attrs)
		}

		// Measure of the node alone equals its items.
		s := f.statsFor(l, i)
		m := layouts.NewMeasure(l)
		l.Measure(s, m)
		checkMeasure(t, v, n, m, measureItems(spec, perNode[i]), large)
		total.Add(m)
	}
	if total.Nodes != int64(len(f.nodes)) {
		t.Errorf("Measure counted %d nodes, want %d", total.Nodes, len(f.nodes))
	}

	// The whole forest: totals, keys and the largest collections.
	actual := measureItems(spec, all)
	if total.Items != actual.Items || total.Bytes != actual.Bytes || total.MaxItemBytes != actual.MaxItemBytes ||
		total.IndexItems != actual.IndexItems || total.IndexBytes != actual.IndexBytes ||
		!slices.Equal(total.Keys, actual.Keys) {
		t.Errorf("forest Measure: items %d bytes %d max %d keys %v; items measure items %d bytes %d max %d keys %v",
			total.Items, total.Bytes, total.MaxItemBytes, total.Keys, actual.Items, actual.Bytes, actual.MaxItemBytes, actual.Keys)
	}
	checkCollections(t, v, total.Collections, actual.Collections)

	// No key twice.
	seen := map[string]string{}
	for _, it := range all {
		k := layouts.KeyOf(spec, it)
		if prev, dup := seen[k]; dup {
			t.Fatalf("key written twice:\n%s\n%s", prev, ddbJSON(it))
		}
		seen[k] = ddbJSON(it)
	}

	checkQueries(t, v, l, f, perNode)
	if reading {
		checkReading(t, l, f, perNode)
		if !large {
			checkCosts(t, l, f, perNode)
		}
	}
}

// checkKeyTypes: every item has the table's keys with their types, and an
// index key, when present, has its type.
func checkKeyTypes(t *testing.T, spec layouts.TableSpec, it layouts.Item) {
	t.Helper()
	check := func(k *layouts.KeyAttr, required bool) {
		v, ok := it[k.Name]
		if !ok {
			if required {
				t.Fatalf("item has no key attribute %q: %s", k.Name, ddbJSON(it))
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
			t.Fatalf("key attribute %q is %T %q, want a non-empty %s: %s", k.Name, v, keyText(v), k.Type, ddbJSON(it))
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

func checkMeasure(t *testing.T, v variant, n *transform.Node, got, want *layouts.Measure, large bool) {
	t.Helper()
	if got.Nodes != 1 || got.Items != want.Items || got.Bytes != want.Bytes || got.MaxItemBytes != want.MaxItemBytes ||
		got.IndexItems != want.IndexItems || got.IndexBytes != want.IndexBytes ||
		!slices.Equal(got.Keys, want.Keys) {
		t.Fatalf("Measure of node %q (depth %d): items %d bytes %d max %d keys %v, in indexes %d/%d; its items: items %d bytes %d max %d keys %v, in indexes %d/%d",
			n.ID, n.Depth, got.Items, got.Bytes, got.MaxItemBytes, got.Keys, got.IndexItems, got.IndexBytes,
			want.Items, want.Bytes, want.MaxItemBytes, want.Keys, want.IndexItems, want.IndexBytes)
	}
	// Closure's WCU is exact when all ancestor rows are in one kilobyte,
	// which every small forest guarantees; with large attributes it may be
	// an upper bound, by at most one unit per ancestor row and index.
	if v.layout == layouts.ClosureName && large {
		if got.WCU < want.WCU || got.WCU > want.WCU+2*int64(n.Depth) {
			t.Fatalf("Measure of node %q: WCU %d, its items cost %d (depth %d)", n.ID, got.WCU, want.WCU, n.Depth)
		}
	} else if got.WCU != want.WCU {
		t.Fatalf("Measure of node %q: WCU %d, its items cost %d", n.ID, got.WCU, want.WCU)
	}
}

func checkCollections(t *testing.T, v variant, got, want []int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("Collections %v, items give %v", got, want)
	}
	for i := range got {
		// sharded-path's ByPath collection is the even share of a tree: the
		// largest shard is at least that.
		if v.layout == layouts.ShardedName && i == 2 && v.opts.Shards != 1 {
			if got[i] > want[i] {
				t.Errorf("sharded ByPath collection %d, over the largest real one %d", got[i], want[i])
			}
			continue
		}
		if got[i] != want[i] {
			t.Errorf("Collections %v, items give %v", got, want)
		}
	}
}

// checkQueries runs the SPEC's queries over the items as DynamoDB would and
// checks their answers against the forest.
func checkQueries(t *testing.T, v variant, l layouts.Layout, f *forest, perNode [][]layouts.Item) {
	t.Helper()
	spec := l.Table()
	var all []layouts.Item
	for _, items := range perNode {
		all = append(all, items...)
	}
	children := make([][]string, len(f.nodes))
	var roots []string
	for i, p := range f.parents {
		if p >= 0 {
			children[p] = append(children[p], f.nodes[i].ID)
		} else {
			roots = append(roots, f.nodes[i].ID)
		}
	}
	delim := l.Delimiter()
	for i, n := range f.nodes {
		want := map[string]int{}
		for j, d := range f.descendants(i) {
			want[f.nodes[j].ID] = d
		}
		got := map[string]int{}
		var kids []string
		switch v.layout {
		case layouts.PathName, layouts.ShardedName:
			own := perNode[i][0]
			byParent, byPath := spec.Indexes[0], spec.Indexes[1]
			partitions := map[string]bool{}
			if v.layout == layouts.PathName {
				partitions[n.Path[0]] = true
			} else {
				shards := v.opts.Shards
				if shards == 0 {
					shards = layouts.DefaultShards
				}
				for k := 1; k <= shards; k++ {
					partitions[layouts.GraphID(n.Path[0], k)] = true
				}
				k := layouts.Shard(n.ID, shards)
				if g := str(own, byPath.PK.Name); g != layouts.GraphID(n.Path[0], k) || k < 1 || k > shards {
					t.Fatalf("GraphId of %q is %q, want %q (k = %d of %d)", n.ID, g, layouts.GraphID(n.Path[0], k), k, shards)
				}
			}
			prefix := str(own, byPath.SK.Name) + delim
			for _, it := range all {
				if partitions[str(it, byPath.PK.Name)] && strings.HasPrefix(str(it, byPath.SK.Name), prefix) {
					got[str(it, spec.PK.Name)] = num(it, v.attr("Depth")) - n.Depth
				}
				if str(it, byParent.PK.Name) == n.ID {
					kids = append(kids, str(it, byParent.SK.Name))
				}
			}
			// Ancestors: split Path.
			if anc := strings.Split(str(own, byPath.SK.Name), delim); !slices.Equal(anc, n.Path) {
				t.Fatalf("Path of %q splits into %q, want %q", n.ID, anc, n.Path)
			}
		case layouts.ClosureName:
			ix := spec.Indexes[0]
			for _, it := range all {
				rd := num(it, ix.SK.Name)
				if str(it, ix.PK.Name) == n.ID && rd > 0 {
					got[str(it, spec.PK.Name)] = rd
					if rd == 1 {
						kids = append(kids, str(it, spec.PK.Name))
					}
				}
			}
			// Ancestors: Id = X AND RelativeDepth > 0.
			for r, it := range perNode[i] {
				if str(it, spec.PK.Name) != n.ID || num(it, ix.SK.Name) != r || str(it, ix.PK.Name) != n.Path[n.Depth-r] {
					t.Fatalf("row %d of %q: %s, want ancestor %q", r, n.ID, ddbJSON(it), n.Path[n.Depth-r])
				}
				checkCopied(t, v, l, n, it, r)
			}
		case layouts.AdjacencyName:
			// Children: ByParent, ParentId = X. Descendants: breadth first.
			byParent := spec.Indexes[0]
			if own := perNode[i][0]; str(own, spec.PK.Name) != n.ID || str(own, byParent.PK.Name) != n.Parent {
				t.Fatalf("item of %q: %s, want %s %q and %s %q", n.ID, ddbJSON(own), spec.PK.Name, n.ID, byParent.PK.Name, n.Parent)
			}
			level := []string{n.ID}
			for d := 1; len(level) > 0; d++ {
				var next []string
				for _, p := range level {
					for _, it := range all {
						if str(it, byParent.PK.Name) == p {
							c := str(it, byParent.SK.Name)
							got[c] = d
							if d == 1 {
								kids = append(kids, c)
							}
							next = append(next, c)
						}
					}
				}
				level = next
			}
		case layouts.PrefixName:
			object := str(perNode[i][0], spec.PK.Name)
			if want := delim + strings.Join(n.Path, delim); object != want {
				t.Fatalf("object Key of %q is %q, want %q", n.ID, object, want)
			}
			// Children: Key = object + delim. Descendants: breadth first.
			level := []string{object}
			for d := 1; len(level) > 0; d++ {
				var next []string
				for _, key := range level {
					for _, it := range all {
						if str(it, spec.PK.Name) == key+delim {
							c := str(it, spec.SK.Name)
							got[c] = d
							if d == 1 {
								kids = append(kids, c)
							}
							next = append(next, key+delim+c)
						}
					}
				}
				level = next
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("descendants of %q: got %v, want %v", n.ID, got, want)
		}
		sort.Strings(kids)
		wantKids := slices.Clone(children[i])
		sort.Strings(wantKids)
		if !slices.Equal(kids, wantKids) {
			t.Fatalf("children of %q: got %q, want %q", n.ID, kids, wantKids)
		}
	}
	if v.layout == layouts.PrefixName {
		var got []string
		for _, it := range all {
			if str(it, spec.PK.Name) == delim {
				got = append(got, str(it, spec.SK.Name))
			}
		}
		sort.Strings(got)
		sort.Strings(roots)
		if !slices.Equal(got, roots) {
			t.Fatalf("roots listed under %q: %q, want %q", delim, got, roots)
		}
	}
}

// checkCopied: a closure row carries ParentId (but on a root's rows), every
// attribute on the node's own row, and what ClosureCopy picks on the others.
func checkCopied(t *testing.T, v variant, l layouts.Layout, n *transform.Node, it layouts.Item, r int) {
	t.Helper()
	reserved := l.Reserved()
	parent := v.attr("ParentId")
	if got := str(it, parent); got != n.Parent {
		t.Fatalf("row %d of %q: %s %q, want %q", r, n.ID, parent, got, n.Parent)
	}
	user := transform.Attrs{}
	for k, val := range it {
		if !slices.Contains(reserved, k) {
			user[k] = val
		}
	}
	want := transform.Attrs{}
	for k, val := range n.Attrs {
		if r == 0 || v.opts.ClosureCopy == nil || slices.Contains(v.opts.ClosureCopy, k) {
			want[k] = val
		}
	}
	if !sameAttrs(user, want) {
		t.Fatalf("row %d of %q carries %v, want %v", r, n.ID, user, want)
	}
}

// sameAttrs compares attributes deeply, an empty map being no map.
func sameAttrs(a, b transform.Attrs) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// attrsOf is an item as AppendItems gives it.
func attrsOf(item layouts.Item) []layouts.Attr {
	out := make([]layouts.Attr, 0, len(item))
	for k, v := range item {
		out = append(out, layouts.Attr{Name: k, Value: v})
	}
	return out
}

// checkReading: IsNode, NodeOf and NodeFilter pick each node's own item
// (the one Node rebuilds it from), Owner names the node of every item and of
// its key alone, and Query answers every kind of query, with depth bands,
// from a table holding the items as the forest answers it; a node that is
// not there is a *NotFoundError.
func checkReading(t *testing.T, l layouts.Layout, f *forest, perNode [][]layouts.Item) {
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
	for i, n := range f.nodes {
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
					t.Fatalf("IsNode(%s) = %v, Node says %v", ddbJSON(it), got, node)
				}
				id, parent, ok := l.NodeOf(view)
				if ok != node || (ok && (id != n.ID || parent != n.Parent)) {
					t.Fatalf("NodeOf(%s) = %q, %q, %v; want %q, %q, %v", ddbJSON(it), id, parent, ok, n.ID, n.Parent, node)
				}
				if got := l.Owner(view); got != n.ID {
					t.Fatalf("Owner(%s) = %q, want %q", ddbJSON(it), got, n.ID)
				}
			}
			if got := l.Owner(layouts.MapView(key)); got != n.ID {
				t.Fatalf("Owner of the key %s = %q, want %q", ddbJSON(key), got, n.ID)
			}
			if got := holds(conds, it); got != node {
				t.Fatalf("NodeFilter %q lets %s through: %v; Node says %v", filter.Expr, ddbJSON(it), got, node)
			}
		}
	}

	table := newMemTable(spec, all, 3)
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
	for i, n := range f.nodes {
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
	for slices.ContainsFunc(f.nodes, func(n *transform.Node) bool { return n.ID == missing }) {
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
func want(f *forest, i int, q *layouts.Request) []layouts.Result {
	var out []layouts.Result
	add := func(j, rel int) {
		if q.InBand(rel) {
			n := f.nodes[j]
			out = append(out, layouts.Result{ID: n.ID, Parent: n.Parent, RelativeDepth: rel, Attrs: n.Attrs})
		}
	}
	add(i, 0)
	switch q.Kind {
	case layouts.QueryChildren, layouts.QueryDescendants:
		for j, d := range f.descendants(i) {
			add(j, d)
		}
	case layouts.QueryAncestors:
		for j, r := f.parents[i], 1; j >= 0; j, r = f.parents[j], r+1 {
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
		if g.ID != w.ID || g.Parent != w.Parent || g.RelativeDepth != w.RelativeDepth || !sameAttrs(g.Attrs, w.Attrs) {
			t.Fatalf("%s %d–%d of %q: got%s\nwant%s\n(first difference: %+v, want %+v)", q.Kind, q.MinDepth, q.MaxDepth, q.ID, text(got), text(want), g, w)
		}
	}
}

// checkCosts: the layout's cost model, fed the items, prices each query the
// benchmark asks (of a node known to be there, the path learnt by a
// GetItem where the query needs it) as the table bills it: requests, items
// read, RCU and the nodes of the answer.
func checkCosts(t *testing.T, l layouts.Layout, f *forest, perNode [][]layouts.Item) {
	t.Helper()
	tf, at := transformForest(t, rand.New(rand.NewPCG(uint64(len(f.nodes)), 11)), f)
	sample := make([]int32, len(at))
	for k, i := range at {
		sample[k] = int32(i)
	}
	model := l.Costs(tf, sample)
	var all []layouts.Item
	for i, items := range perNode {
		for _, it := range items {
			node, _, err := model.Add(it, transform.ItemSize(it))
			if err != nil {
				t.Fatalf("Costs: Add(%s): %v", ddbJSON(it), err)
			}
			if node != int32(at[i]) {
				t.Fatalf("Costs: Add(%s) gives node %d, want %d (%q)", ddbJSON(it), node, at[i], f.nodes[i].ID)
			}
			all = append(all, it)
		}
	}
	table := newMemTable(l.Table(), all, 1<<30)
	ctx := context.Background()
	for k, n := range f.nodes {
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
