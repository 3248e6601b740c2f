package layouts_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/layouts/layoutstest"
	"github.com/treeport/treeport/transform"
)

// TestMeasureDeepClosure: a node far deeper than the random forests reach,
// past 100 (three-digit RelativeDepth sizes) and past Measure's table of
// number sizes.
func TestMeasureDeepClosure(t *testing.T) {
	for _, depth := range []int{99, 100, 101, 1234, 20000} {
		t.Run(fmt.Sprint(depth), func(t *testing.T) {
			l, err := layouts.New(layouts.ClosureName, layouts.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ids := make([]string, depth+1)
			for i := range ids {
				ids[i] = fmt.Sprintf("n%d", i)
			}
			attrs := transform.Attrs{"name": sv("leaf")}
			node := &transform.Node{Record: transform.Record{ID: ids[depth], Parent: ids[depth-1], Attrs: attrs}, Depth: depth, Path: ids}
			var items []layouts.Item
			if err := l.Items(node, func(it layouts.Item) { items = append(items, it) }); err != nil {
				t.Fatal(err)
			}
			got := layouts.NewMeasure(l)
			l.Measure(chain(ids, transform.AttrsSize(attrs)), got)
			want := layoutstest.MeasureItems(l.Table(), items)
			if got.Items != want.Items || got.Bytes != want.Bytes || got.WCU != want.WCU || fmt.Sprint(got.Keys) != fmt.Sprint(want.Keys) {
				t.Fatalf("Measure: items %d bytes %d wcu %d keys %v; items: %d %d %d %v",
					got.Items, got.Bytes, got.WCU, got.Keys, want.Items, want.Bytes, want.WCU, want.Keys)
			}
			// Past depth 100 the largest row may be over-estimated by the
			// size of a number, never under.
			if got.MaxItemBytes < want.MaxItemBytes || got.MaxItemBytes > want.MaxItemBytes+2 {
				t.Fatalf("MaxItemBytes %d, items' largest %d", got.MaxItemBytes, want.MaxItemBytes)
			}
		})
	}
}

// TestMeasureClosureStraddle: when ancestor rows fall on both sides of a
// kilobyte, Stats cannot tell which rows are heavy. Measure's WCU is then an
// upper bound: the longest ancestor's row, plus as many other rows as the
// remaining id bytes could make heavy.
func TestMeasureClosureStraddle(t *testing.T) {
	tests := []struct {
		name      string
		ancestors []string
		pad       int   // bytes of the copied attribute's value
		extra     int64 // WCU over the items' cost
	}{
		// One 200-byte ancestor among 1-byte ones: exact.
		{"one long id", []string{"r", strings.Repeat("L", 200), "a", "b", "c", "d"}, 950, 0},
		// Ancestors of 20, 20 and 40 bytes: only the 40-byte row is over
		// 1 KB, but 40 more bytes could have made one more heavy.
		{"ambiguous", []string{strings.Repeat("R", 20), strings.Repeat("A", 20), strings.Repeat("B", 40)}, 920, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := layouts.New(layouts.ClosureName, layouts.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ids := append(append([]string(nil), tt.ancestors...), "x")
			parents := make([]int, len(ids))
			for i := range parents {
				parents[i] = i - 1
			}
			attrs := make([]transform.Attrs, len(ids))
			last := len(ids) - 1
			attrs[last] = transform.Attrs{"v": sv(strings.Repeat("v", tt.pad))}
			f := layoutstest.NewForest(ids, parents, attrs)
			var items []layouts.Item
			heavy := 0
			if err := l.Items(f.Nodes[last], func(it layouts.Item) {
				items = append(items, it)
				if transform.ItemSize(it) > 1024 {
					heavy++
				}
			}); err != nil {
				t.Fatal(err)
			}
			if heavy != 1 {
				t.Fatalf("the test wants exactly one row over 1 KB, has %d", heavy)
			}
			want := layoutstest.MeasureItems(l.Table(), items)
			got := layouts.NewMeasure(l)
			l.Measure(f.StatsFor(l, last), got)
			if got.Bytes != want.Bytes || got.MaxItemBytes != want.MaxItemBytes {
				t.Fatalf("Measure bytes %d max %d, items %d %d", got.Bytes, got.MaxItemBytes, want.Bytes, want.MaxItemBytes)
			}
			if got.WCU != want.WCU+tt.extra {
				t.Fatalf("Measure WCU %d, items cost %d, want %d more", got.WCU, want.WCU, tt.extra)
			}
		})
	}
}

// TestMeasureAdd: Add sums counts and keeps maxima, with the hot key
// value of each larger collection.
func TestMeasureAdd(t *testing.T) {
	a := &layouts.Measure{Nodes: 1, Items: 2, Bytes: 30, WCU: 4, IndexItems: 1, IndexBytes: 12, MaxItemBytes: 20, Keys: []int{5, 0, 7, 1}, Collections: []int64{1, 9}, Hot: []string{"a0", "a1"}}
	b := &layouts.Measure{Nodes: 2, Items: 3, Bytes: 10, WCU: 6, IndexItems: 6, IndexBytes: 20, MaxItemBytes: 8, Keys: []int{9, 0, 2, 3}, Collections: []int64{4, 2}, Hot: []string{"b0", "b1"}}
	a.Add(b)
	want := "{3 5 40 10 7 32 20 [9 0 7 3] [4 9] [b0 a1] []}"
	if got := fmt.Sprint(*a); got != want {
		t.Fatalf("Add = %s, want %s", got, want)
	}
	// A collection every node shares (a partition key constant per
	// tenant) is summed over the nodes, not the largest kept.
	total := &layouts.Measure{}
	for range 3 {
		one := &layouts.Measure{}
		one.SharedCollectionOf(0, 2, "T#acme")
		one.Collection(1, 1)
		total.Add(one)
	}
	if total.Collections[0] != 6 || total.Collections[1] != 1 || total.Hot[0] != "T#acme" {
		t.Fatalf("shared collection: %v %v, want 6 items in T#acme", total.Collections, total.Hot)
	}
}
