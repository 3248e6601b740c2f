package layouts_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/layouts/layoutstest"
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
				f := layoutstest.RandomForest(rng, 60, large)
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
func conform(t *testing.T, v variant, l layouts.Layout, f *layoutstest.Forest, large, reading bool) {
	spec := l.Table()
	perNode := make([][]layouts.Item, len(f.Nodes))
	var all []layouts.Item
	total := layouts.NewMeasure(l)
	for i, n := range f.Nodes {
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
			layoutstest.CheckKeyTypes(t, spec, it)
			rec, ok, err := l.Node(it)
			if err != nil {
				t.Fatalf("Node(%s): %v", layoutstest.DDBJSON(it), err)
			}
			if ok {
				got = append(got, rec)
			}
		}
		if len(got) != 1 {
			t.Fatalf("node %q: Node found %d records among its items, want 1", n.ID, len(got))
		}
		if got[0].ID != n.ID || got[0].Parent != n.Parent || !layoutstest.SameAttrs(got[0].Attrs, n.Attrs) {
			t.Fatalf("round trip of %q:\n got  id %q parent %q attrs %v\n want id %q parent %q attrs %v",
				n.ID, got[0].ID, got[0].Parent, got[0].Attrs, n.ID, n.Parent, n.Attrs)
		}

		// Measure of the node alone equals its items.
		s := f.StatsFor(l, i)
		m := layouts.NewMeasure(l)
		l.Measure(s, m)
		checkMeasure(t, v, n, m, layoutstest.MeasureItems(spec, perNode[i]), large)
		total.Add(m)
	}
	if total.Nodes != int64(len(f.Nodes)) {
		t.Errorf("Measure counted %d nodes, want %d", total.Nodes, len(f.Nodes))
	}

	// The whole forest: totals, keys and the largest collections.
	actual := layoutstest.MeasureItems(spec, all)
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
			t.Fatalf("key written twice:\n%s\n%s", prev, layoutstest.DDBJSON(it))
		}
		seen[k] = layoutstest.DDBJSON(it)
	}

	checkQueries(t, v, l, f, perNode)
	if reading {
		layoutstest.CheckReading(t, l, f, perNode)
		if !large {
			layoutstest.CheckCosts(t, l, f, perNode)
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
func checkQueries(t *testing.T, v variant, l layouts.Layout, f *layoutstest.Forest, perNode [][]layouts.Item) {
	t.Helper()
	spec := l.Table()
	var all []layouts.Item
	for _, items := range perNode {
		all = append(all, items...)
	}
	children := make([][]string, len(f.Nodes))
	var roots []string
	for i, p := range f.Parents {
		if p >= 0 {
			children[p] = append(children[p], f.Nodes[i].ID)
		} else {
			roots = append(roots, f.Nodes[i].ID)
		}
	}
	delim := l.Delimiter()
	for i, n := range f.Nodes {
		want := map[string]int{}
		for j, d := range f.Descendants(i) {
			want[f.Nodes[j].ID] = d
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
				if g := layoutstest.Str(own, byPath.PK.Name); g != layouts.GraphID(n.Path[0], k) || k < 1 || k > shards {
					t.Fatalf("GraphId of %q is %q, want %q (k = %d of %d)", n.ID, g, layouts.GraphID(n.Path[0], k), k, shards)
				}
			}
			prefix := layoutstest.Str(own, byPath.SK.Name) + delim
			for _, it := range all {
				if partitions[layoutstest.Str(it, byPath.PK.Name)] && strings.HasPrefix(layoutstest.Str(it, byPath.SK.Name), prefix) {
					got[layoutstest.Str(it, spec.PK.Name)] = layoutstest.Num(it, v.attr("Depth")) - n.Depth
				}
				if layoutstest.Str(it, byParent.PK.Name) == n.ID {
					kids = append(kids, layoutstest.Str(it, byParent.SK.Name))
				}
			}
			// Ancestors: split Path.
			if anc := strings.Split(layoutstest.Str(own, byPath.SK.Name), delim); !slices.Equal(anc, n.Path) {
				t.Fatalf("Path of %q splits into %q, want %q", n.ID, anc, n.Path)
			}
		case layouts.ClosureName:
			ix := spec.Indexes[0]
			for _, it := range all {
				rd := layoutstest.Num(it, ix.SK.Name)
				if layoutstest.Str(it, ix.PK.Name) == n.ID && rd > 0 {
					got[layoutstest.Str(it, spec.PK.Name)] = rd
					if rd == 1 {
						kids = append(kids, layoutstest.Str(it, spec.PK.Name))
					}
				}
			}
			// Ancestors: Id = X AND RelativeDepth > 0.
			for r, it := range perNode[i] {
				if layoutstest.Str(it, spec.PK.Name) != n.ID || layoutstest.Num(it, ix.SK.Name) != r || layoutstest.Str(it, ix.PK.Name) != n.Path[n.Depth-r] {
					t.Fatalf("row %d of %q: %s, want ancestor %q", r, n.ID, layoutstest.DDBJSON(it), n.Path[n.Depth-r])
				}
				checkCopied(t, v, l, n, it, r)
			}
		case layouts.AdjacencyName:
			// Children: ByParent, ParentId = X. Descendants: breadth first.
			byParent := spec.Indexes[0]
			if own := perNode[i][0]; layoutstest.Str(own, spec.PK.Name) != n.ID || layoutstest.Str(own, byParent.PK.Name) != n.Parent {
				t.Fatalf("item of %q: %s, want %s %q and %s %q", n.ID, layoutstest.DDBJSON(own), spec.PK.Name, n.ID, byParent.PK.Name, n.Parent)
			}
			level := []string{n.ID}
			for d := 1; len(level) > 0; d++ {
				var next []string
				for _, p := range level {
					for _, it := range all {
						if layoutstest.Str(it, byParent.PK.Name) == p {
							c := layoutstest.Str(it, byParent.SK.Name)
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
			object := layoutstest.Str(perNode[i][0], spec.PK.Name)
			if want := delim + strings.Join(n.Path, delim); object != want {
				t.Fatalf("object Key of %q is %q, want %q", n.ID, object, want)
			}
			// Children: Key = object + delim. Descendants: breadth first.
			level := []string{object}
			for d := 1; len(level) > 0; d++ {
				var next []string
				for _, key := range level {
					for _, it := range all {
						if layoutstest.Str(it, spec.PK.Name) == key+delim {
							c := layoutstest.Str(it, spec.SK.Name)
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
			if layoutstest.Str(it, spec.PK.Name) == delim {
				got = append(got, layoutstest.Str(it, spec.SK.Name))
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
	if got := layoutstest.Str(it, parent); got != n.Parent {
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
	if !layoutstest.SameAttrs(user, want) {
		t.Fatalf("row %d of %q carries %v, want %v", r, n.ID, user, want)
	}
}
