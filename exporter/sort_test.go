package exporter_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/transform"
)

// recsOf makes records from "id<parent" pairs ("id" alone is a root).
func recsOf(pairs ...string) []*transform.Record {
	out := make([]*transform.Record, len(pairs))
	for i, p := range pairs {
		id, parent, _ := strings.Cut(p, "<")
		out[i] = &transform.Record{ID: id, Parent: parent}
	}
	return out
}

func idsOf(recs []*transform.Record) string {
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	return strings.Join(ids, " ")
}

func TestSortRecords(t *testing.T) {
	tests := []struct {
		name string
		in   []*transform.Record
		want string
	}{
		{name: "empty", in: nil, want: ""},
		{
			name: "pre-order, siblings by id, trees by root id",
			in:   recsOf("CM20<CM1", "CM4<CM2", "B", "CM2<CM1", "CM1", "CM3<CM2", "B1<B"),
			want: "B B1 CM1 CM2 CM3 CM4 CM20",
		},
		{
			name: "ids compare as bytes",
			in:   recsOf("r", "b<r", "B<r", "é<r", "a<r"),
			want: "r B a b é",
		},
		{
			name: "orphan starts a tree of its own",
			in:   recsOf("A", "X<GONE", "X1<X", "A1<A"),
			want: "A A1 X X1",
		},
		{
			name: "cycle comes last, by id",
			in:   recsOf("C<B", "B<C", "A", "D<C"),
			want: "A B C D",
		},
		{
			name: "duplicate ids keep input order among themselves",
			in:   []*transform.Record{{ID: "A"}, {ID: "K", Parent: "A", Line: 1}, {ID: "K", Parent: "A", Line: 2}},
			want: "A K K",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			got := exporter.SortRecords(tt.in)
			if idsOf(got) != tt.want {
				t.Errorf("got %q, want %q", idsOf(got), tt.want)
			}
			if idsOf(tt.in) != idsOf(in) {
				t.Error("SortRecords changed its input")
			}
		})
	}
}

// TestSortRecordsAnyInputOrder: any order of the same records sorts the
// same, with every parent before its children, a chain 20,000 deep included.
func TestSortRecordsAnyInputOrder(t *testing.T) {
	recs := randomForest(4, "")
	for i := range 20_000 {
		id := fmt.Sprintf("deep%06d", i)
		parent := ""
		if i > 0 {
			parent = fmt.Sprintf("deep%06d", i-1)
		}
		recs = append(recs, &transform.Record{ID: id, Parent: parent})
	}
	want := idsOf(exporter.SortRecords(recs))
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3 {
		rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
		got := exporter.SortRecords(recs)
		if idsOf(got) != want {
			t.Fatal("the order depends on the input order")
		}
		pos := map[string]int{}
		for i, r := range got {
			pos[r.ID] = i
		}
		for _, r := range got {
			if r.Parent != "" && pos[r.Parent] > pos[r.ID] {
				t.Fatalf("%q comes before its parent %q", r.ID, r.Parent)
			}
		}
	}
}

func TestCheckForest(t *testing.T) {
	tests := []struct {
		name                  string
		in                    []*transform.Record
		orphans, dups, cycles int
		examples              string
	}{
		{name: "a forest", in: recsOf("A", "B<A", "C<B", "D")},
		{name: "orphans", in: recsOf("A", "B<X", "C<Y", "D<B"), orphans: 2, examples: "B C"},
		{name: "duplicate", in: recsOf("A", "B<A", "B<A"), dups: 2, examples: "B"},
		{name: "cycle and below it", in: recsOf("A", "B<C", "C<B", "D<C"), cycles: 3, examples: "B C D"},
		{name: "self parent", in: recsOf("A<A"), cycles: 1, examples: "A"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := exporter.CheckForest(tt.in)
			if c.Orphans != tt.orphans || c.Duplicates != tt.dups || c.InCycles != tt.cycles {
				t.Errorf("got %+v, want %d orphans, %d duplicates, %d in cycles", c, tt.orphans, tt.dups, tt.cycles)
			}
			if c.OK() != (tt.orphans+tt.dups+tt.cycles == 0) {
				t.Errorf("OK() = %v", c.OK())
			}
			all := strings.Join(slices.Concat(c.OrphanIDs, c.DuplicateIDs, c.CycleIDs), " ")
			if all != tt.examples {
				t.Errorf("examples %q, want %q", all, tt.examples)
			}
		})
	}
}
