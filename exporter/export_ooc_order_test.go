package exporter

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// oocOrderOf runs the out-of-core passes over ids and parents in a tiny
// budget and returns their order and check.
func oocOrderOf(t *testing.T, ids, parents []string) ([]int32, ForestCheck) {
	t.Helper()
	o := newOOCOrder(t.TempDir(), 64<<10, func(string, int64, int64) {})
	defer o.close()
	for i := range ids {
		if err := o.add(int64(i), ids[i], parents[i]); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	if err := o.resolve(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := o.link(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r, err = o.rank(ctx, r); err != nil {
		t.Fatal(err)
	}
	defer r.close()
	type placed struct {
		row   int32
		dist  uint64
		cycle bool
	}
	var got []placed
	if err := o.ranks(ctx, r, func(row int64, dist uint64, inCycle bool) error {
		got = append(got, placed{int32(row), dist, inCycle})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ids) {
		t.Fatalf("%d ranks for %d records", len(got), len(ids))
	}
	slices.SortFunc(got, func(a, b placed) int {
		switch {
		case a.cycle != b.cycle:
			if a.cycle {
				return 1
			}
			return -1
		case a.cycle:
			return cmp.Or(strings.Compare(ids[a.row], ids[b.row]), cmp.Compare(a.row, b.row))
		}
		return cmp.Compare(b.dist, a.dist)
	})
	order := make([]int32, len(got))
	c := o.check
	for k, p := range got {
		order[k] = p.row
		if p.cycle {
			c.InCycles++
			if len(c.CycleIDs) < forestExamples {
				c.CycleIDs = append(c.CycleIDs, ids[p.row])
			}
		}
	}
	if b := o.byIDCycles; b != nil {
		c.InCycles, c.CycleIDs = b.InCycles, b.CycleIDs
	}
	return order, c
}

// TestOOCOrderMatchesForestOrder compares the out-of-core passes with
// forestOrder on forests with every problem SortRecords places: orphans,
// duplicate ids, cycles with trees below them, self-parents, and a chain
// far deeper than the doubling rounds.
func TestOOCOrderMatchesForestOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 1))
	gen := func(n int, dups, orphans, cycles bool) ([]string, []string) {
		ids := make([]string, n)
		parents := make([]string, n)
		for i := range n {
			ids[i] = fmt.Sprintf("n%x", rng.IntN(n*4))
			if !dups {
				ids[i] = fmt.Sprintf("n%d", i)
			}
		}
		for i := range n {
			if i > 0 && rng.IntN(10) > 0 {
				parents[i] = ids[rng.IntN(i)]
			}
			if orphans && rng.IntN(20) == 0 {
				parents[i] = "gone" + ids[i]
			}
			if cycles && rng.IntN(30) == 0 {
				parents[i] = ids[rng.IntN(n)] // may point down: a cycle
			}
		}
		if cycles {
			// a loop of two with a node below it, and trees below that
			for _, i := range []int{n / 3, n / 2, n - 1} {
				parents[i] = "cy3"
			}
			ids = append(ids, "cy1", "cy2", "cy3", "cy4")
			parents = append(parents, "cy2", "cy1", "cy1", "cy4")
			n += 4
		}
		rng.Shuffle(n, func(a, b int) { ids[a], ids[b] = ids[b], ids[a]; parents[a], parents[b] = parents[b], parents[a] })
		return ids, parents
	}
	chain := func(n int) ([]string, []string) {
		ids := make([]string, n)
		parents := make([]string, n)
		for i := range n {
			ids[i] = fmt.Sprintf("c%07d", n-i) // rows from the leaf up
			if i < n-1 {
				parents[i] = fmt.Sprintf("c%07d", n-i-1)
			}
		}
		// and a cycle, a self-parent and an orphan beside it
		ids = append(ids, "x", "y", "z", "self", "lost")
		parents = append(parents, "y", "z", "x", "self", "nowhere")
		return ids, parents
	}
	cases := []struct {
		name                  string
		n                     int
		dups, orphans, cycles bool
		ids, parents          []string
	}{
		{name: "empty"},
		{name: "one", n: 1},
		{name: "forest", n: 3000},
		{name: "orphans", n: 3000, orphans: true},
		{name: "cycles", n: 3000, cycles: true},
		{name: "duplicates", n: 3000, dups: true},
		{name: "everything", n: 5000, dups: true, orphans: true, cycles: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ids, parents := gen(tc.n, tc.dups, tc.orphans, tc.cycles)
			want, wantCheck := forestOrder(ids, parents)
			if tc.cycles && !tc.dups && wantCheck.InCycles == 0 || tc.dups && wantCheck.Duplicates == 0 || tc.orphans && wantCheck.Orphans == 0 {
				t.Fatalf("the forest lacks what the case is about: %+v", wantCheck)
			}
			got, gotCheck := oocOrderOf(t, ids, parents)
			if !slices.Equal(got, want) {
				t.Fatalf("order differs:\n got %v\nwant %v", got[:min(len(got), 20)], want[:min(len(want), 20)])
			}
			if fmt.Sprint(gotCheck) != fmt.Sprint(wantCheck) {
				t.Errorf("check %+v, want %+v", gotCheck, wantCheck)
			}
		})
	}
	t.Run("deep chain", func(t *testing.T) {
		ids, parents := chain(20000)
		want, wantCheck := forestOrder(ids, parents)
		got, gotCheck := oocOrderOf(t, ids, parents)
		if !slices.Equal(got, want) {
			t.Fatalf("order differs")
		}
		if fmt.Sprint(gotCheck) != fmt.Sprint(wantCheck) {
			t.Errorf("check %+v, want %+v", gotCheck, wantCheck)
		}
	})
}
