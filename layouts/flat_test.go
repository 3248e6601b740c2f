package layouts_test

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/layouts/layoutstest"
	"github.com/treeport/treeport/transform"
)

// flatOf is n as AppendItems takes it, its attributes in name order.
func flatOf(n *transform.Node) *layouts.FlatNode {
	f := &layouts.FlatNode{ID: n.ID, Parent: n.Parent, Depth: n.Depth, Path: n.Path}
	for k, v := range n.Attrs {
		f.Attrs = append(f.Attrs, layouts.Attr{Name: k, Value: v})
	}
	sort.Slice(f.Attrs, func(i, j int) bool { return f.Attrs[i].Name < f.Attrs[j].Name })
	return f
}

// appendAll returns the items AppendItems emits for n, each copied with
// ItemOf during its call to emit, and the error.
func appendAll(l layouts.Layout, n *layouts.FlatNode, buf *layouts.ItemBuffer) ([]layouts.Item, error) {
	var items []layouts.Item
	err := l.AppendItems(n, buf, func(attrs []layouts.Attr) {
		seen := map[string]bool{}
		for _, a := range attrs {
			if seen[a.Name] {
				panic(fmt.Sprintf("attribute %q twice in one item", a.Name))
			}
			seen[a.Name] = true
		}
		items = append(items, layouts.ItemOf(attrs))
	})
	return items, err
}

// itemsAll returns the items Items emits for n, and the error.
func itemsAll(l layouts.Layout, n *transform.Node) ([]layouts.Item, error) {
	var items []layouts.Item
	err := l.Items(n, func(it layouts.Item) { items = append(items, it) })
	return items, err
}

// TestAppendItemsMatchesItems holds the two ways of building items
// together: on random forests, for every layout variant, AppendItems gives
// the same items in the same order as Items, with one ItemBuffer reused
// across every node and every layout, whether the node comes with its
// PathText or not.
func TestAppendItemsMatchesItems(t *testing.T) {
	seeds := 120
	if testing.Short() {
		seeds = 25
	}
	var buf layouts.ItemBuffer
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 11))
		f := layoutstest.RandomForest(rng, 60, seed%5 == 4)
		for _, v := range variants {
			l := v.new(t)
			for _, n := range f.Nodes {
				want, werr := itemsAll(l, n)
				// Without PathText, with the layout's delimiter's, and with
				// another delimiter's, which the layout must not take.
				for _, delim := range []string{"", l.Delimiter(), "\x00"} {
					fn := flatOf(n)
					if delim != "" {
						fn.PathText, fn.PathDelim = strings.Join(n.Path, delim), delim
					}
					got, gerr := appendAll(l, fn, &buf)
					if werr != nil || gerr != nil {
						t.Fatalf("%s seed %d node %q: Items: %v; AppendItems: %v", v.name, seed, n.ID, werr, gerr)
					}
					sameItems(t, fmt.Sprintf("%s seed %d node %q (PathText joined by %q)", v.name, seed, n.ID, delim), got, want)
				}
				// With PathText and no Path: the path and prefix
				// layouts build the same items, the closure layout needs
				// the Path, and so does any layout for another delimiter.
				for _, delim := range []string{l.Delimiter(), "\x00"} {
					fn := flatOf(n)
					fn.PathText, fn.PathDelim, fn.Path = strings.Join(n.Path, delim), delim, nil
					got, gerr := appendAll(l, fn, &buf)
					if delim == "" || delim == "\x00" {
						if !errors.Is(gerr, layouts.ErrPathNeeded) || len(got) > 0 {
							t.Fatalf("%s seed %d node %q, text joined by %q and no Path: %d items, error %v; want none and ErrPathNeeded", v.name, seed, n.ID, delim, len(got), gerr)
						}
						continue
					}
					if gerr != nil {
						t.Fatalf("%s seed %d node %q, text and no Path: %v", v.name, seed, n.ID, gerr)
					}
					sameItems(t, fmt.Sprintf("%s seed %d node %q (text and no Path)", v.name, seed, n.ID), got, want)
				}
			}
		}
	}
}

// sameItems fails unless got and want are the same items, in the same
// order, with values of the same types.
func sameItems(t *testing.T, what string, got, want []layouts.Item) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d items, Items gives %d", what, len(got), len(want))
	}
	for i := range want {
		if g, w := layoutstest.DDBJSON(got[i]), layoutstest.DDBJSON(want[i]); g != w {
			t.Fatalf("%s item %d:\n got %s\nwant %s", what, i, g, w)
		}
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("%s item %d: the values differ in type: %#v, want %#v", what, i, got[i], want[i])
		}
	}
}

// TestAppendItemsRefusesAsItems: on nodes that Items refuses (a layout
// attribute name, a delimiter in an id, a Path that does not fit), AppendItems
// refuses too, with the same error and no item.
func TestAppendItemsRefusesAsItems(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	var buf layouts.ItemBuffer
	for _, v := range variants {
		l := v.new(t)
		var bad []*transform.Node
		f := layoutstest.RandomForest(rng, 40, false)
		for i, n := range f.Nodes {
			m := *n
			m.Attrs = transform.Attrs{}
			for k, a := range n.Attrs {
				m.Attrs[k] = a
			}
			switch i % 5 {
			case 0: // a layout attribute's name
				m.Attrs[l.Reserved()[i%len(l.Reserved())]] = &types.AttributeValueMemberS{Value: "x"}
			case 1: // the delimiter in the node's id
				if d := l.Delimiter(); d != "" {
					m.ID = m.ID + d + "x"
					m.Path = append(append([]string(nil), n.Path[:n.Depth]...), m.ID)
				}
			case 2: // the delimiter in an ancestor's id
				if d := l.Delimiter(); d != "" && n.Depth > 0 {
					m.Path = append([]string(nil), n.Path...)
					m.Path[0] += d
					if n.Depth == 1 {
						m.Parent = m.Path[0]
					}
				}
			case 3: // a Path that does not end with the node
				m.Path = append(append([]string(nil), n.Path...), "other")
			case 4: // a prefix attribute starting with the delimiter
				if d := l.Delimiter(); d != "" {
					m.Attrs[d+"name"] = &types.AttributeValueMemberS{Value: "x"}
				}
			}
			bad = append(bad, &m)
		}
		bad = append(bad,
			&transform.Node{Record: transform.Record{ID: "b"}, Depth: 1, Path: []string{"a", "b"}},
			&transform.Node{Record: transform.Record{ID: "b"}},
			&transform.Node{Record: transform.Record{ID: "b"}, Depth: -1},
			&transform.Node{Path: []string{""}},
			&transform.Node{Record: transform.Record{ID: "a", Parent: "p"}, Path: []string{"a"}},
		)
		refused := 0
		for _, n := range bad {
			want, werr := itemsAll(l, n)
			if werr != nil {
				refused++
			}
			for _, withText := range []bool{false, true} {
				fn := flatOf(n)
				if withText && l.Delimiter() != "" {
					fn.PathText, fn.PathDelim = strings.Join(n.Path, l.Delimiter()), l.Delimiter()
				}
				got, gerr := appendAll(l, fn, &buf)
				if fmt.Sprint(gerr) != fmt.Sprint(werr) {
					t.Fatalf("%s node %q path %q attrs %v: AppendItems: %v; Items: %v", v.name, n.ID, n.Path, n.Attrs, gerr, werr)
				}
				if len(got) != len(want) {
					t.Fatalf("%s node %q: %d items, Items gives %d", v.name, n.ID, len(got), len(want))
				}
				if werr != nil && len(got) > 0 {
					t.Fatalf("%s node %q: %d items with the error %v", v.name, n.ID, len(got), gerr)
				}
			}
		}
		// With the text and no Path, a node is refused with Items' error,
		// or found to need its Path; it is never built from a text that
		// Items would refuse.
		for _, n := range bad {
			if len(n.Path) == 0 || l.Delimiter() == "" {
				continue
			}
			_, werr := itemsAll(l, n)
			fn := flatOf(n)
			fn.PathText, fn.PathDelim, fn.Path = strings.Join(n.Path, l.Delimiter()), l.Delimiter(), nil
			got, gerr := appendAll(l, fn, &buf)
			if errors.Is(gerr, layouts.ErrPathNeeded) && len(got) == 0 {
				continue
			}
			if fmt.Sprint(gerr) != fmt.Sprint(werr) || (gerr != nil && len(got) > 0) {
				t.Fatalf("%s node %q path %q, text and no Path: %d items, error %v; Items: %v", v.name, n.ID, n.Path, len(got), gerr, werr)
			}
		}
		if refused < len(bad)/3 {
			t.Fatalf("%s: only %d of %d bad nodes refused", v.name, refused, len(bad))
		}
	}
}

// TestAppendItemsAllocatesNothing: once its buffer has grown, building an
// item allocates nothing, which is the point of AppendItems.
func TestAppendItemsAllocatesNothing(t *testing.T) {
	f := benchForest()
	for _, v := range variants {
		l := v.new(t)
		nodes := make([]*layouts.FlatNode, len(f.Nodes))
		for i, n := range f.Nodes {
			nodes[i] = flatOf(n)
		}
		var buf layouts.ItemBuffer
		items := 0
		emit := func([]layouts.Attr) { items++ }
		for _, n := range nodes {
			if err := l.AppendItems(n, &buf, emit); err != nil {
				t.Fatal(err)
			}
		}
		i := 0
		allocs := testing.AllocsPerRun(1000, func() {
			if err := l.AppendItems(nodes[i%len(nodes)], &buf, emit); err != nil {
				t.Fatal(err)
			}
			i++
		})
		if allocs != 0 {
			t.Errorf("%s: %.2f allocations a node, want 0", v.name, allocs)
		}
	}
}

// TestShardIsFNV: Shard, which hashes inline, is FNV-1a as hash/fnv
// computes it: a table written by an older treeport keeps its GraphIds.
func TestShardIsFNV(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	ids := append([]string{""}, layoutstest.SpecialIDs...)
	for range 500 {
		ids = append(ids, layoutstest.RandomText(rng, rng.IntN(40)))
	}
	for _, id := range ids {
		h := fnv.New64a()
		h.Write([]byte(id))
		for _, s := range []int{1, 2, 4, 7, 1000} {
			if got, want := layouts.Shard(id, s), 1+int(h.Sum64()%uint64(s)); got != want {
				t.Fatalf("Shard(%q, %d) = %d, want %d", id, s, got, want)
			}
		}
	}
}

// TestItemOfCopies: an item from ItemOf shares no memory with the
// attributes it was made from.
func TestItemOfCopies(t *testing.T) {
	text := []byte("hello")
	b := []byte{1, 2}
	attrs := []layouts.Attr{
		{Name: "s", Value: &types.AttributeValueMemberS{Value: string(text)}},
		{Name: "b", Value: &types.AttributeValueMemberB{Value: b}},
		{Name: "l", Value: &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberB{Value: b}}}},
		{Name: "m", Value: &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": &types.AttributeValueMemberBS{Value: [][]byte{b}}}}},
	}
	item := layouts.ItemOf(attrs)
	before := layoutstest.DDBJSON(item)
	b[0] = 9
	attrs[0].Value.(*types.AttributeValueMemberS).Value = "changed"
	if after := layoutstest.DDBJSON(item); after != before || !strings.Contains(before, `"hello"`) {
		t.Fatalf("the item changed with its source: %s, then %s", before, after)
	}
}

// A node given by its text alone is built only when the text agrees with
// its id, parent and depth, for a one-byte and a four-byte delimiter;
// anything else needs the Path.
func TestAppendItemsTextOnly(t *testing.T) {
	for _, delim := range []string{"/", "😀"} {
		t.Run(delim, func(t *testing.T) { textOnly(t, delim) })
	}
}

func textOnly(t *testing.T, delim string) {
	l, err := layouts.New("path", layouts.Options{Delimiter: delim})
	if err != nil {
		t.Fatal(err)
	}
	good := layouts.FlatNode{ID: "c", Parent: "b", Depth: 2, PathText: strings.ReplaceAll("a/b/c", "/", delim), PathDelim: delim}
	var buf layouts.ItemBuffer
	if items, err := appendAll(l, &good, &buf); err != nil || len(items) != 1 {
		t.Fatalf("%+v: %d items, %v", good, len(items), err)
	}
	bad := map[string]func(n *layouts.FlatNode){
		"another parent":            func(n *layouts.FlatNode) { n.Parent = "x" },
		"a parent that is a suffix": func(n *layouts.FlatNode) { n.PathText = "a/xb/c" },
		"no parent":                 func(n *layouts.FlatNode) { n.Parent = "" },
		"too shallow":               func(n *layouts.FlatNode) { n.Depth = 1 },
		"too deep":                  func(n *layouts.FlatNode) { n.Depth = 3 },
		"negative depth":            func(n *layouts.FlatNode) { n.Depth = -1 },
		"another id":                func(n *layouts.FlatNode) { n.ID = "d" },
		"an id that is a suffix":    func(n *layouts.FlatNode) { n.PathText, n.ID = "a/b/xc", "c" },
		"no id":                     func(n *layouts.FlatNode) { n.ID = "" },
		"another delimiter":         func(n *layouts.FlatNode) { n.PathDelim = "|" },
		"a delimiter in an id":      func(n *layouts.FlatNode) { n.PathText = "a/b/x/c" },
		"a root with a parent":      func(n *layouts.FlatNode) { n.PathText, n.ID, n.Depth = "a", "a", 0 },
		"a parent of two ids":       func(n *layouts.FlatNode) { n.PathText, n.Parent, n.Depth = "a/x/b/c", "x/b", 3 },
		"an id with the delimiter, and none before it": func(n *layouts.FlatNode) { n.PathText, n.ID = "a/bx/c", "/c" },
		"a parent that is the end of the root":         func(n *layouts.FlatNode) { n.PathText, n.Depth = "ab/c", 1 },
	}
	for name, change := range bad {
		n := good
		change(&n)
		// The cases are written with "/": the same with the delimiter.
		for _, f := range []*string{&n.PathText, &n.ID, &n.Parent} {
			*f = strings.ReplaceAll(*f, "/", delim)
		}
		if n.PathDelim == "/" {
			n.PathDelim = delim
		}
		items, err := appendAll(l, &n, &buf)
		if !errors.Is(err, layouts.ErrPathNeeded) || len(items) > 0 {
			t.Errorf("%s (%+v): %d items, error %v; want none and ErrPathNeeded", name, n, len(items), err)
		}
	}
}

// TestSetPath: a FlatNode that SetPath filled in builds, for every layout
// variant and every budget of kept texts, the same items as Items, or, for
// the closure layout and where an id holds the delimiter, asks for the
// Path and then builds them. A field changed after SetPath is looked at as
// a text given by hand would be: the same items when only its memory
// changed, ErrPathNeeded when its value did.
func TestSetPath(t *testing.T) {
	var buf layouts.ItemBuffer
	var text []byte
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 21))
		f := layoutstest.RandomForest(rng, 60, false)
		tf, at := layoutstest.TransformForest(t, rng, f)
		for _, v := range variants {
			l := v.new(t)
			budget := []int{0, 64, 1 << 20}[seed%3]
			paths := tf.NewPathTexts(l.Delimiter(), budget)
			for _, id := range []string{"cycle-a", "cycle-b"} {
				var fn layouts.FlatNode
				text = fn.SetPath(paths, tf.Lookup(id), text)
				if got, err := appendAll(l, &fn, &buf); !errors.Is(err, layouts.ErrPathNeeded) || len(got) > 0 {
					t.Fatalf("%s seed %d: %q, in a cycle: %d items, error %v; want none and ErrPathNeeded", v.name, seed, id, len(got), err)
				}
			}
			for k, n := range f.Nodes {
				want, werr := itemsAll(l, n)
				var fn layouts.FlatNode
				text = fn.SetPath(paths, at[k], text)
				if fn.ID != n.ID || fn.Parent != n.Parent || fn.Depth != n.Depth || fn.PathText != strings.Join(n.Path, l.Delimiter()) {
					t.Fatalf("%s seed %d: SetPath gave %q, %q, %d, %q for %q, %q, %d, %q", v.name, seed,
						fn.ID, fn.Parent, fn.Depth, fn.PathText, n.ID, n.Parent, n.Depth, strings.Join(n.Path, l.Delimiter()))
				}
				fn.Attrs = flatOf(n).Attrs
				what := fmt.Sprintf("%s seed %d node %q", v.name, seed, n.ID)
				got, gerr := appendAll(l, &fn, &buf)
				if errors.Is(gerr, layouts.ErrPathNeeded) {
					if len(got) > 0 {
						t.Fatalf("%s: %d items with ErrPathNeeded", what, len(got))
					}
					if l.Name() != layouts.ClosureName && werr == nil && !strings.Contains(strings.Join(n.Path, ""), l.Delimiter()) {
						t.Fatalf("%s: ErrPathNeeded for a text that splits", what)
					}
					fn.Path = n.Path
					got, gerr = appendAll(l, &fn, &buf)
				}
				if (werr != nil) != (gerr != nil) {
					t.Fatalf("%s: Items: %v; AppendItems after SetPath: %v", what, werr, gerr)
				}
				if werr != nil {
					continue
				}
				sameItems(t, what, got, want)
				if !layouts.TakesPathText(l) {
					continue
				}
				tampered(t, what, l, &buf, paths, at[k], fn.Attrs, want)
			}
		}
	}
}

// tampered changes each field of node i's FlatNode after SetPath, once to
// the same value in other memory (the items must not change) and once to
// another value (the layout must look and ask for the Path).
func tampered(t *testing.T, what string, l layouts.Layout, buf *layouts.ItemBuffer, paths *transform.PathTexts, i int, attrs []layouts.Attr, want []layouts.Item) {
	t.Helper()
	// A string field: the same value in other memory, or another value.
	text := func(field func(n *layouts.FlatNode) *string) func(n *layouts.FlatNode, same bool) {
		return func(n *layouts.FlatNode, same bool) {
			f := field(n)
			if *f = strings.Clone(*f); !same {
				*f += "x"
			}
		}
	}
	for name, change := range map[string]func(n *layouts.FlatNode, same bool){
		"ID":        text(func(n *layouts.FlatNode) *string { return &n.ID }),
		"Parent":    text(func(n *layouts.FlatNode) *string { return &n.Parent }),
		"PathText":  text(func(n *layouts.FlatNode) *string { return &n.PathText }),
		"PathDelim": text(func(n *layouts.FlatNode) *string { return &n.PathDelim }),
		"Depth": func(n *layouts.FlatNode, same bool) {
			if !same {
				n.Depth++
			}
		},
	} {
		for _, same := range []bool{true, false} {
			var n layouts.FlatNode
			n.SetPath(paths, i, nil)
			n.Attrs = attrs
			change(&n, same)
			got, err := appendAll(l, &n, buf)
			switch {
			case same && errors.Is(err, layouts.ErrPathNeeded):
				// A text that does not split: the layout cannot tell.
			case same && err != nil:
				t.Fatalf("%s, %s in other memory: %v", what, name, err)
			case same:
				sameItems(t, what+", "+name+" in other memory", got, want)
			case !errors.Is(err, layouts.ErrPathNeeded) || len(got) > 0:
				t.Fatalf("%s, another %s: %d items, error %v; want none and ErrPathNeeded", what, name, len(got), err)
			}
		}
	}
}
