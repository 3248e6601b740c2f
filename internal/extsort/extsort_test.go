package extsort

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

func TestSortSpillsAndMerges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		budget int
	}{
		{"in memory", 1000, 1 << 20},
		{"many runs", 50000, 64 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			// Records: a key of one byte (many ties) and the order added,
			// which a stable sort keeps among equal keys.
			cmp := func(a, b []byte) int { return int(a[0]) - int(b[0]) }
			s := New(dir, tc.budget, cmp)
			rng := rand.New(rand.NewPCG(1, 2))
			var want [][]byte
			for i := range tc.n {
				rec := binary.BigEndian.AppendUint32([]byte{byte(rng.IntN(50))}, uint32(i))
				want = append(want, rec)
				if err := s.Add(rec); err != nil {
					t.Fatal(err)
				}
			}
			slices.SortStableFunc(want, cmp)
			it, err := s.Sort()
			if err != nil {
				t.Fatal(err)
			}
			var got [][]byte
			for rec, ok := it.Next(); ok; rec, ok = it.Next() {
				got = append(got, bytes.Clone(rec))
			}
			if it.Err() != nil {
				t.Fatal(it.Err())
			}
			it.Close()
			if tc.n > 10000 && s.Runs() < 2 {
				t.Fatalf("%d runs: the budget did not make it spill", s.Runs())
			}
			if !slices.EqualFunc(got, want, bytes.Equal) {
				t.Fatalf("got %d records, not in the stable order", len(got))
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("Close left %d files", len(left))
			}
		})
	}
}

func TestSpool(t *testing.T) {
	dir := t.TempDir()
	s, err := NewSpool(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"a", "", "ccc"} {
		s.Add([]byte(r))
	}
	if err := s.Rewind(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for rec, ok := s.Next(); ok; rec, ok = s.Next() {
		got = append(got, string(rec))
	}
	if !slices.Equal(got, []string{"a", "", "ccc"}) || s.Err() != nil {
		t.Fatalf("got %q, %v", got, s.Err())
	}
	s.Close()
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("Close left %d files", len(left))
	}
}
