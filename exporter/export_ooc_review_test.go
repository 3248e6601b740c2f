package exporter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/treeport/treeport/internal/extsort"
)

// TestOrderOOCFinalSortMatchesForestOrder runs orderOOC itself (the final
// sort by compareFinal and prefixFinal, not a copy of it) over ids that
// share long prefixes, hold NUL, 0xff-like runes and unicode, many of
// them in cycles, in a budget that spills several runs, and compares the
// ids it puts in order with forestOrder's.
func TestOrderOOCFinalSortMatchesForestOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 2))
	alphabet := []string{"a", "\x00", "|", "é", "ÿ", "😀", "long-common-prefix-", "\x7f", "b"}
	word := func() string {
		s := "root/"
		for range 1 + rng.IntN(4) {
			s += alphabet[rng.IntN(len(alphabet))]
		}
		return s
	}
	const n = 6000
	ids := make([]string, n)
	parents := make([]string, n)
	for i := range n {
		ids[i] = word() + fmt.Sprint(rng.IntN(n))
	}
	for i := range n {
		switch k := rng.IntN(10); {
		case k < 6 && i > 0:
			parents[i] = ids[rng.IntN(i)]
		case k < 8:
			parents[i] = ids[rng.IntN(n)] // often a cycle or below one
		case k < 9:
			parents[i] = "gone" + ids[i]
		}
	}
	want, _ := forestOrder(ids, parents)
	dir := t.TempDir()
	sink := &oocSink{order: newOOCOrder(dir, 32<<10, func(string, int64, int64) {})}
	defer sink.order.close()
	var err error
	if sink.payload, err = extsort.NewSpool(dir); err != nil {
		t.Fatal(err)
	}
	defer sink.payload.Close()
	for i := range ids {
		var e extsort.Enc
		e.S(ids[i])
		e.Row(int64(i)) // the payload: the row, to tell duplicates apart
		if err := sink.payload.Add(e.B); err != nil {
			t.Fatal(err)
		}
		if err := sink.order.add(int64(i), ids[i], parents[i]); err != nil {
			t.Fatal(err)
		}
	}
	final, err := orderOOC(context.Background(), sink)
	if err != nil {
		t.Fatal(err)
	}
	defer final.Close()
	it, err := final.Sort()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var got []int32
	for rec, ok := it.Next(); ok; rec, ok = it.Next() {
		d := extsort.Dec{B: rec[9:]}
		d.S()
		got = append(got, int32(d.Row()))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if sink.order.check.InCycles < 50 {
		t.Fatalf("only %d records in cycles: the case is not about them", sink.order.check.InCycles)
	}
	if !slices.Equal(got, want) {
		for k := range min(len(got), len(want)) {
			if got[k] != want[k] {
				t.Fatalf("order differs at %d of %d: got %q, want %q", k, len(want), ids[got[k]], ids[want[k]])
			}
		}
		t.Fatalf("%d records in order, want %d", len(got), len(want))
	}
}
