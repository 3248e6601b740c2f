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

// TestCompareFirst: records sorted by their first field (Bs or S, keys of
// every length, many alike) over many runs come out in the order of the
// keys' bytes, records of one key in the order they were added, and the
// rest of each record as it was written.
func TestCompareFirst(t *testing.T) {
	s := New(t.TempDir(), 64<<10, CompareFirst)
	s.Prefix = PrefixKeyRow
	rng := rand.New(rand.NewPCG(3, 4))
	type rec struct {
		key []byte
		n   int
	}
	var want []rec
	var e Enc
	for i := range 20000 {
		key := make([]byte, rng.IntN(12))
		for k := range key {
			key[k] = byte('a' + rng.IntN(3))
		}
		e.Reset()
		if i%2 == 0 {
			e.Bs(key)
		} else {
			e.S(string(key))
		}
		e.I(i)
		if err := s.Add(e.B); err != nil {
			t.Fatal(err)
		}
		want = append(want, rec{key, i})
	}
	slices.SortStableFunc(want, func(a, b rec) int { return bytes.Compare(a.key, b.key) })
	if s.Runs() < 2 {
		t.Fatalf("%d runs: the test merges nothing", s.Runs())
	}
	it, err := s.Sort()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer it.Close()
	for k := 0; ; k++ {
		b, ok := it.Next()
		if !ok {
			if k != len(want) {
				t.Fatalf("%d records, want %d (%v)", k, len(want), it.Err())
			}
			break
		}
		d := Dec{B: b}
		if key, n := d.Bytes(), d.I(); !bytes.Equal(key, want[k].key) || n != want[k].n {
			t.Fatalf("record %d: %q %d, want %q %d", k, key, n, want[k].key, want[k].n)
		}
	}
}
