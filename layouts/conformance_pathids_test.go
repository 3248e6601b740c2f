package layouts_test

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/layouts/layoutstest"
	"github.com/treeport/treeport/transform"
)

// pathIDVariants are every layout with path ids, and every layout that
// takes it with ImplicitInner too.
var pathIDVariants = []variant{
	{"path", layouts.PathName, layouts.Options{PathIDs: true}},
	{"path/slash", layouts.PathName, layouts.Options{PathIDs: true, Delimiter: "/"}},
	{"sharded-path", layouts.ShardedName, layouts.Options{PathIDs: true}},
	{"closure", layouts.ClosureName, layouts.Options{PathIDs: true}},
	{"closure/copy-none", layouts.ClosureName, layouts.Options{PathIDs: true, ClosureCopy: []string{}, Delimiter: "¦"}},
	{"prefix", layouts.PrefixName, layouts.Options{PathIDs: true}},
	{"prefix/slash", layouts.PrefixName, layouts.Options{PathIDs: true, Delimiter: "/"}},
	{"adjacency", layouts.AdjacencyName, layouts.Options{PathIDs: true}},
	{"path/implicit", layouts.PathName, layouts.Options{PathIDs: true, ImplicitInner: true}},
	{"sharded-path/implicit", layouts.ShardedName, layouts.Options{PathIDs: true, ImplicitInner: true, Shards: 3}},
	{"closure/implicit", layouts.ClosureName, layouts.Options{PathIDs: true, ImplicitInner: true}},
	{"closure/implicit-copy-none", layouts.ClosureName, layouts.Options{PathIDs: true, ImplicitInner: true, ClosureCopy: []string{}}},
	{"prefix/implicit", layouts.PrefixName, layouts.Options{PathIDs: true, ImplicitInner: true}},
}

// TestConformancePathIDs is the suite with path ids: names repeat under
// different parents, the ids are paths; with ImplicitInner about half the
// inner nodes have no attributes and get no item (prefix: their listing
// row only). Every layout writes each node's items as its SPEC says with
// the id as the path, no key twice, Measure predicts them, the table reads
// back (Node and the implicit nodes Implied adds) as exactly the forest's
// records, and every query answers as the forest does.
func TestConformancePathIDs(t *testing.T) {
	seeds := 90
	if testing.Short() {
		seeds = 20
	}
	for _, v := range pathIDVariants {
		t.Run(v.name, func(t *testing.T) {
			l := v.new(t)
			if !layouts.PathIDs(l) || layouts.ImplicitInner(l) != v.opts.ImplicitInner {
				t.Fatalf("PathIDs %v, ImplicitInner %v", layouts.PathIDs(l), layouts.ImplicitInner(l))
			}
			for seed := range uint64(seeds) {
				rng := rand.New(rand.NewPCG(seed, 11))
				f := layoutstest.PathIDForest(rng, layoutstest.RandomForest(rng, 40, false), l.Delimiter(), v.opts.ImplicitInner)
				t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
					conformPathIDs(t, v, l, f, seed%2 == 0)
				})
			}
		})
	}
}

func conformPathIDs(t *testing.T, v variant, l layouts.Layout, f *layoutstest.Forest, reading bool) {
	spec := l.Table()
	delim := l.Delimiter()
	perNode := make([][]layouts.Item, len(f.Nodes))
	var all []layouts.Item
	seen := map[string]bool{}
	omitted := 0
	for i, n := range f.Nodes {
		if err := l.Items(n, func(it layouts.Item) { perNode[i] = append(perNode[i], it) }); err != nil {
			t.Fatalf("Items(%q): %v", n.ID, err)
		}
		all = append(all, perNode[i]...)
		omit := v.opts.ImplicitInner && n.Inner && len(n.Attrs) == 0
		if omit {
			omitted++
		}
		want := 1
		switch v.layout {
		case layouts.ClosureName:
			want = n.Depth + 1
		case layouts.PrefixName:
			want = 2
		}
		if omit {
			want = 0
			if v.layout == layouts.PrefixName {
				want = 1
			}
		}
		if len(perNode[i]) != want {
			t.Fatalf("node %q (inner %v, %d attributes): %d items, want %d", n.ID, n.Inner, len(n.Attrs), len(perNode[i]), want)
		}
		for _, it := range perNode[i] {
			k := layouts.KeyOf(spec, it)
			if seen[k] {
				t.Fatalf("key written twice: %s", layoutstest.DDBJSON(it))
			}
			seen[k] = true
			layoutstest.CheckKeyTypes(t, spec, it)
		}
		checkPathIDItems(t, v, n, perNode[i], omit, delim)

		m := layouts.NewMeasure(l)
		l.Measure(f.StatsFor(l, i), m)
		checkMeasure(t, v, n, m, layoutstest.MeasureItems(spec, perNode[i]), false)
	}

	// The table reads back as the forest: its nodes' items, and the
	// implicit nodes their ids name.
	var recs []*transform.Record
	var ids, parents []string
	for _, it := range all {
		rec, ok, err := l.Node(it)
		if err != nil {
			t.Fatalf("Node(%s): %v", layoutstest.DDBJSON(it), err)
		}
		if ok {
			recs = append(recs, &rec)
			ids, parents = append(ids, rec.ID), append(parents, rec.Parent)
		}
	}
	implied := layouts.Implied(l, ids, parents)
	if !v.opts.ImplicitInner && len(implied) > 0 {
		t.Fatalf("Implied found %d nodes in a table with an item for every node", len(implied))
	}
	recs = append(recs, implied...)
	got := map[string]string{}
	for _, r := range recs {
		if _, dup := got[r.ID]; dup {
			t.Fatalf("node %q read twice", r.ID)
		}
		got[r.ID] = r.Parent + "\x00" + layoutstest.DDBJSON(r.Attrs)
	}
	for _, n := range f.Nodes {
		if want := n.Parent + "\x00" + layoutstest.DDBJSON(n.Attrs); got[n.ID] != want {
			t.Fatalf("node %q reads back as %q, want %q", n.ID, got[n.ID], want)
		}
	}
	if len(got) != len(f.Nodes) {
		t.Fatalf("the table reads as %d nodes, the forest has %d", len(got), len(f.Nodes))
	}
	if v.opts.ImplicitInner && len(implied) != omitted {
		t.Fatalf("%d implicit nodes read, %d written without an item", len(implied), omitted)
	}
	if reading {
		layoutstest.CheckReading(t, l, f, perNode)
		if !v.opts.ImplicitInner {
			layoutstest.CheckCosts(t, l, f, perNode)
		} else {
			// bench's estimates with implicit inner nodes are not
			// exact; each item is still its own node's.
			layoutstest.CheckCostsAdd(t, l, f, perNode)
		}
	}
}

// checkPathIDItems: the path layouts' Path is the id, and TreeId the
// root's id (its first name); prefix's object row has Key = the delimiter
// and the id, its listing row Key = the parent's object Key and the
// delimiter, Child = the node's name; closure's and adjacency's ids are
// the path ids.
func checkPathIDItems(t *testing.T, v variant, n *transform.Node, items []layouts.Item, omit bool, delim string) {
	t.Helper()
	name := n.ID[strings.LastIndex(n.ID, delim)+len(delim):]
	if strings.LastIndex(n.ID, delim) < 0 {
		name = n.ID
	}
	if layouts.NameOf(n.ID, delim) != name {
		t.Fatalf("NameOf(%q) = %q, want %q", n.ID, layouts.NameOf(n.ID, delim), name)
	}
	switch v.layout {
	case layouts.PathName, layouts.ShardedName:
		if omit {
			return
		}
		if p := layoutstest.Str(items[0], "Path"); p != n.ID {
			t.Fatalf("Path of %q is %q", n.ID, p)
		}
		if v.layout == layouts.PathName && layoutstest.Str(items[0], "TreeId") != n.Path[0] {
			t.Fatalf("TreeId of %q is %q, want %q", n.ID, layoutstest.Str(items[0], "TreeId"), n.Path[0])
		}
	case layouts.PrefixName:
		listing := items[len(items)-1]
		wantKey := delim
		if n.Parent != "" {
			wantKey = delim + n.Parent + delim
		}
		if layoutstest.Str(listing, "Key") != wantKey || layoutstest.Str(listing, "Child") != name {
			t.Fatalf("listing row of %q: %s, want Key %q Child %q", n.ID, layoutstest.DDBJSON(listing), wantKey, name)
		}
		if !omit && layoutstest.Str(items[0], "Key") != delim+n.ID {
			t.Fatalf("object row of %q: %s", n.ID, layoutstest.DDBJSON(items[0]))
		}
	default:
		var ancestors []string
		for _, it := range items {
			if layoutstest.Str(it, "Id") != n.ID {
				t.Fatalf("row of %q: %s", n.ID, layoutstest.DDBJSON(it))
			}
			if a := layoutstest.Str(it, "AncestorId"); a != "" {
				ancestors = append(ancestors, a)
			}
		}
		sort.Strings(ancestors)
		for k, a := range ancestors {
			if !strings.HasPrefix(n.ID, a) || (k > 0 && !strings.HasPrefix(a, ancestors[k-1]+delim)) {
				t.Fatalf("closure rows of %q name the ancestors %q", n.ID, ancestors)
			}
		}
	}
}
