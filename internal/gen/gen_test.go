package gen

import (
	"errors"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/transform"
)

func collect(t *testing.T, opts Options) []*transform.Record {
	t.Helper()
	var recs []*transform.Record
	err := Generate(opts, func(r *transform.Record) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		t.Fatalf("Generate(%+v): %v", opts, err)
	}
	return recs
}

// forest is what a test checks of generated records.
type forest struct {
	roots    []string
	depth    map[string]int
	children map[string]int
	size     map[string]int // tree size, by root id
}

// analyse checks that recs form a forest (unique ids, known parents, no
// cycle) and measures it.
func analyse(t *testing.T, recs []*transform.Record) forest {
	t.Helper()
	parent := map[string]string{}
	for _, r := range recs {
		if _, dup := parent[r.ID]; dup {
			t.Fatalf("duplicate id %s", r.ID)
		}
		parent[r.ID] = r.Parent
	}
	f := forest{depth: map[string]int{}, children: map[string]int{}, size: map[string]int{}}
	for _, r := range recs {
		if r.Parent == "" {
			f.roots = append(f.roots, r.ID)
			continue
		}
		if _, ok := parent[r.Parent]; !ok {
			t.Fatalf("%s: parent %s is not in the output", r.ID, r.Parent)
		}
		f.children[r.Parent]++
	}
	var depthOf func(id string, seen int) (int, string)
	depthOf = func(id string, seen int) (int, string) {
		if d, ok := f.depth[id]; ok {
			return d, ""
		}
		if seen > len(recs) {
			t.Fatalf("cycle through %s", id)
		}
		if parent[id] == "" {
			f.depth[id] = 0
			return 0, id
		}
		d, _ := depthOf(parent[id], seen+1)
		f.depth[id] = d + 1
		return d + 1, ""
	}
	for _, r := range recs {
		depthOf(r.ID, 0)
		root := r.ID
		for parent[root] != "" {
			root = parent[root]
		}
		f.size[root]++
	}
	return f
}

func (f forest) maxDepth() int {
	m := 0
	for _, d := range f.depth {
		m = max(m, d)
	}
	return m
}

func TestShapes(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		check func(t *testing.T, f forest)
	}{
		{
			name: "deep is one chain",
			opts: Options{Nodes: 500, Shape: ShapeDeep},
			check: func(t *testing.T, f forest) {
				if len(f.roots) != 1 || f.maxDepth() != 499 {
					t.Errorf("roots %d, depth %d; want 1 root, depth 499", len(f.roots), f.maxDepth())
				}
			},
		},
		{
			name: "deep with a depth bound hangs chains under the root",
			opts: Options{Nodes: 101, Shape: ShapeDeep, Depth: 10},
			check: func(t *testing.T, f forest) {
				if len(f.roots) != 1 || f.maxDepth() != 10 || f.children["N1"] != 10 {
					t.Errorf("roots %d, depth %d, root children %d; want 1, 10, 10", len(f.roots), f.maxDepth(), f.children["N1"])
				}
			},
		},
		{
			name: "wide is one root with every other node its child",
			opts: Options{Nodes: 1000, Shape: ShapeWide},
			check: func(t *testing.T, f forest) {
				if len(f.roots) != 1 || f.children[f.roots[0]] != 999 || f.maxDepth() != 1 {
					t.Errorf("roots %d, root children %d, depth %d", len(f.roots), f.children[f.roots[0]], f.maxDepth())
				}
			},
		},
		{
			name: "balanced fills levels with the default fan-out",
			opts: Options{Nodes: 341, Shape: ShapeBalanced}, // 1+4+16+64+256
			check: func(t *testing.T, f forest) {
				if f.maxDepth() != 4 {
					t.Errorf("depth %d, want 4", f.maxDepth())
				}
				for id, n := range f.children {
					if n != DefaultFanout {
						t.Errorf("%s has %d children, want %d", id, n, DefaultFanout)
					}
				}
				if len(f.children) != 85 {
					t.Errorf("%d inner nodes, want 85", len(f.children))
				}
			},
		},
		{
			name: "balanced depth is about log_F n",
			opts: Options{Nodes: 10000, Shape: ShapeBalanced, Fanout: 10},
			check: func(t *testing.T, f forest) {
				want := int(math.Ceil(math.Log10(9*10000+1))) - 1 // levels of a complete 10-ary tree, less one
				if f.maxDepth() != want {
					t.Errorf("depth %d, want %d", f.maxDepth(), want)
				}
			},
		},
		{
			name: "balanced picks the fan-out from a depth",
			opts: Options{Nodes: 1000, Shape: ShapeBalanced, Depth: 3},
			check: func(t *testing.T, f forest) {
				// 1+10+100+1000 ≥ 1000 > 1+9+81+729.
				if f.maxDepth() != 3 || f.children["N1"] != 10 {
					t.Errorf("depth %d, root children %d; want 3, 10", f.maxDepth(), f.children["N1"])
				}
			},
		},
		{
			name: "random is one tree",
			opts: Options{Nodes: 2000, Shape: ShapeRandom, Seed: 7},
			check: func(t *testing.T, f forest) {
				// A random recursive tree's height is about e·ln n ≈ 21 for n = 2000.
				if len(f.roots) != 1 || f.maxDepth() < 5 || f.maxDepth() > 60 {
					t.Errorf("roots %d, depth %d", len(f.roots), f.maxDepth())
				}
			},
		},
		{
			name: "forest has trees of at most 50 nodes",
			opts: Options{Nodes: 5000, Shape: ShapeForest, Seed: 3},
			check: func(t *testing.T, f forest) {
				// Mean size 25.5: about 196 trees.
				if len(f.roots) < 150 || len(f.roots) > 250 {
					t.Errorf("%d trees, want about 196", len(f.roots))
				}
				for root, n := range f.size {
					if n > MaxForestTreeSize {
						t.Errorf("tree %s has %d nodes", root, n)
					}
				}
			},
		},
		{
			name: "forest with a tree count",
			opts: Options{Nodes: 1003, Shape: ShapeForest, Trees: 10},
			check: func(t *testing.T, f forest) {
				if len(f.roots) != 10 {
					t.Errorf("%d trees, want 10", len(f.roots))
				}
				for root, n := range f.size {
					if n != 100 && n != 101 {
						t.Errorf("tree %s has %d nodes, want 100 or 101", root, n)
					}
				}
			},
		},
		{
			name: "trees of another shape",
			opts: Options{Nodes: 30, Shape: ShapeDeep, Trees: 3},
			check: func(t *testing.T, f forest) {
				if len(f.roots) != 3 || f.maxDepth() != 9 {
					t.Errorf("roots %d, depth %d; want 3, 9", len(f.roots), f.maxDepth())
				}
			},
		},
		{
			name: "one node",
			opts: Options{Nodes: 1, Shape: ShapeRandom},
			check: func(t *testing.T, f forest) {
				if len(f.roots) != 1 {
					t.Errorf("roots %d", len(f.roots))
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs := collect(t, tc.opts)
			if len(recs) != tc.opts.Nodes {
				t.Fatalf("%d records, want %d", len(recs), tc.opts.Nodes)
			}
			tc.check(t, analyse(t, recs))
		})
	}
}

func TestStreamsParentsFirst(t *testing.T) {
	for _, shape := range Shapes {
		t.Run(shape, func(t *testing.T) {
			seen := map[string]bool{}
			for _, r := range collect(t, Options{Nodes: 300, Shape: shape, Seed: 1}) {
				if r.Parent != "" && !seen[r.Parent] {
					t.Fatalf("%s comes before its parent %s", r.ID, r.Parent)
				}
				seen[r.ID] = true
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	for _, shape := range Shapes {
		t.Run(shape, func(t *testing.T) {
			opts := Options{Nodes: 200, Shape: shape, Seed: 42}
			a, b := collect(t, opts), collect(t, opts)
			if !reflect.DeepEqual(a, b) {
				t.Fatal("two runs with one seed differ")
			}
			opts.Seed = 43
			c := collect(t, opts)
			if reflect.DeepEqual(a, c) {
				t.Fatal("seeds 42 and 43 give the same records")
			}
		})
	}
}

// TestPinned pins a few values, so that a change to the generator, which
// would change every user's benchmark input, is a deliberate one.
func TestPinned(t *testing.T) {
	recs := collect(t, Options{Nodes: 5, Shape: ShapeRandom, Seed: 1})
	got := []string{recs[4].ID, recs[4].Parent}
	for _, a := range []string{AttrName, AttrSize, AttrScore, AttrCreated} {
		switch v := recs[4].Attrs[a].(type) {
		case *types.AttributeValueMemberS:
			got = append(got, v.Value)
		case *types.AttributeValueMemberN:
			got = append(got, v.Value)
		}
	}
	want := []string{"N5", "N3", "Shaisholai", "461", "12.88", "2021-11-21T01:27:16Z"}
	if !slices.Equal(got, want) {
		t.Errorf("seed 1, node 5: got %q, want %q", got, want)
	}
}

func TestShuffle(t *testing.T) {
	opts := Options{Nodes: 1000, Shape: ShapeRandom, Seed: 9}
	plain := collect(t, opts)
	opts.Shuffle = true
	shuffled := collect(t, opts)
	if reflect.DeepEqual(plain, shuffled) {
		t.Fatal("shuffled records are in generation order")
	}
	byID := map[string]*transform.Record{}
	for _, r := range plain {
		byID[r.ID] = r
	}
	early, seen := 0, map[string]bool{}
	for _, r := range shuffled {
		if !reflect.DeepEqual(byID[r.ID], r) {
			t.Fatalf("%s differs when shuffled: %+v vs %+v", r.ID, r, byID[r.ID])
		}
		delete(byID, r.ID)
		if r.Parent != "" && !seen[r.Parent] {
			early++
		}
		seen[r.ID] = true
	}
	if len(byID) != 0 {
		t.Fatalf("%d records missing when shuffled", len(byID))
	}
	if early < 100 {
		t.Errorf("only %d of 1000 records come before their parent", early)
	}
	if again := collect(t, opts); !reflect.DeepEqual(again, shuffled) {
		t.Error("two shuffled runs with one seed differ")
	}
}

func TestAttributes(t *testing.T) {
	name := regexp.MustCompile(`^[A-Z][a-z]{2,}$`)
	score := regexp.MustCompile(`^[0-9]{1,2}\.[0-9][1-9]$`)
	for _, r := range collect(t, Options{Nodes: 2000, Shape: ShapeForest, Seed: 5}) {
		if len(r.Attrs) != 4 {
			t.Fatalf("%s has %d attributes, want 4", r.ID, len(r.Attrs))
		}
		n := r.Attrs[AttrName].(*types.AttributeValueMemberS).Value
		if !name.MatchString(n) {
			t.Errorf("%s: name %q", r.ID, n)
		}
		size := r.Attrs[AttrSize].(*types.AttributeValueMemberN).Value
		if v, err := strconv.Atoi(size); err != nil || v < 0 || v >= 1e7 || strconv.Itoa(v) != size {
			t.Errorf("%s: size %q", r.ID, size)
		}
		sc := r.Attrs[AttrScore].(*types.AttributeValueMemberN).Value
		if !score.MatchString(sc) || sc == "0.00" {
			t.Errorf("%s: score %q is not a canonical two-digit decimal", r.ID, sc)
		}
		c := r.Attrs[AttrCreated].(*types.AttributeValueMemberS).Value
		ts, err := time.Parse(time.RFC3339, c)
		if err != nil || ts.Year() < 2015 || ts.Year() > 2024 {
			t.Errorf("%s: created %q (%v)", r.ID, c, err)
		}
	}
}

func TestColumnsMatchRecords(t *testing.T) {
	recs := collect(t, Options{Nodes: 1, Seed: 1})
	var names []string
	for _, c := range Columns() {
		names = append(names, c.Name)
		v, ok := recs[0].Attrs[c.Name]
		if !ok {
			t.Errorf("column %s is not an attribute", c.Name)
			continue
		}
		if _, isN := v.(*types.AttributeValueMemberN); isN != (c.Type == "N") {
			t.Errorf("column %s has type %s, the value is %T", c.Name, c.Type, v)
		}
	}
	if len(names) != len(recs[0].Attrs) || !slices.IsSorted(names) {
		t.Errorf("columns %v do not match attributes %v", names, recs[0].Attrs)
	}
}

func TestInvalidOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{name: "unknown shape", opts: Options{Nodes: 1, Shape: "spiral"}},
		{name: "negative nodes", opts: Options{Nodes: -1}},
		{name: "negative fan-out", opts: Options{Nodes: 1, Fanout: -2}},
		{name: "negative depth", opts: Options{Nodes: 1, Depth: -2}},
		{name: "more trees than nodes", opts: Options{Nodes: 2, Trees: 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			called := false
			err := Generate(tc.opts, func(*transform.Record) error { called = true; return nil })
			if err == nil || called {
				t.Fatalf("err %v, emitted %v; want an error and nothing emitted", err, called)
			}
		})
	}
}

func TestEmitErrorStops(t *testing.T) {
	stop := errors.New("stop")
	for _, shuffle := range []bool{false, true} {
		n := 0
		err := Generate(Options{Nodes: 100, Shuffle: shuffle}, func(*transform.Record) error {
			n++
			if n == 3 {
				return stop
			}
			return nil
		})
		if err != stop || n != 3 {
			t.Errorf("shuffle %v: err %v after %d records; want stop after 3", shuffle, err, n)
		}
	}
}

func TestZeroNodes(t *testing.T) {
	if recs := collect(t, Options{Shape: ShapeForest}); len(recs) != 0 {
		t.Errorf("%d records for 0 nodes", len(recs))
	}
}

func BenchmarkGenerate(b *testing.B) {
	for b.Loop() {
		_ = Generate(Options{Nodes: 10000, Shape: ShapeRandom, Seed: 1}, func(*transform.Record) error { return nil })
	}
}
