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
		async  bool
		ahead  bool
	}{
		{"in memory", 1000, 1 << 20, false, false},
		{"many runs", 50000, 64 << 10, false, false},
		{"in memory, async", 1000, 1 << 20, true, false},
		{"many runs, async", 200000, 64 << 10, true, false},
		{"many runs, async, large budget", 250000, 4 << 20, true, false},
		{"in memory, read ahead", 1000, 1 << 20, true, true},
		{"many runs, read ahead", 200000, 64 << 10, false, true},
		{"many runs, async, read ahead", 250000, 4 << 20, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.async {
				defer func(v int) { asyncMinBudget = v }(asyncMinBudget)
				asyncMinBudget = 0
			} else {
				defer func(v int) { asyncMinBudget = v }(asyncMinBudget)
				asyncMinBudget = 1 << 30
			}
			dir := t.TempDir()
			var spills []int64
			// Records: a key of one byte (many ties) and the order added,
			// which a stable sort keeps among equal keys.
			cmp := func(a, b []byte) int { return int(a[0]) - int(b[0]) }
			s := New(dir, tc.budget, cmp)
			if s.async != tc.async {
				t.Fatalf("async %v, want %v", s.async, tc.async)
			}
			s.OnSpill = func(n int64) { spills = append(spills, n) }
			s.ReadAhead = tc.ahead
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
			if (it.ahead != nil) != (tc.ahead && s.Runs() > 0) {
				t.Fatalf("read ahead %v with %d runs", it.ahead != nil, s.Runs())
			}
			var got [][]byte
			for rec, ok := it.Next(); ok; rec, ok = it.Next() {
				got = append(got, bytes.Clone(rec))
			}
			if _, ok := it.Next(); ok {
				t.Fatal("a record after the end")
			}
			if it.Err() != nil {
				t.Fatal(it.Err())
			}
			it.Close()
			if tc.n > 10000 && s.Runs() < 2 {
				t.Fatalf("%d runs: the budget did not make it spill", s.Runs())
			}
			if len(spills) != s.Runs() || len(spills) > 0 && spills[len(spills)-1] != s.Spilled {
				t.Fatalf("OnSpill told %v for %d runs, %d bytes", spills, s.Runs(), s.Spilled)
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

// TestAsyncWriteError: a run the goroutine cannot write (its directory
// gone) fails the next Add, Sort or Close's wait, not silently.
func TestAsyncWriteError(t *testing.T) {
	defer func(v int) { asyncMinBudget = v }(asyncMinBudget)
	asyncMinBudget = 0
	dir := t.TempDir()
	s := New(dir, 64<<10, bytes.Compare)
	defer s.Close()
	rec := make([]byte, 100)
	var err error
	for i := 0; i < 100000 && err == nil; i++ {
		binary.BigEndian.PutUint32(rec, uint32(i))
		err = s.Add(rec)
		if s.Runs() == 1 && s.writing != nil {
			// The first run's file is made; take its directory away
			// before the next run's.
			os.RemoveAll(dir)
		}
	}
	if err == nil {
		_, err = s.Sort()
	}
	if err == nil {
		t.Fatal("no error with the runs' directory gone")
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

// TestLargeRecords: records larger than a run's or a spool's read buffer
// (read into memory of their own), and larger than a chunk of the
// Sorter's memory, among small ones, come back whole and in order:
// through a merge of many runs, from memory (many chunks), and through a
// spool.
func TestLargeRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var want [][]byte
	for i := range 600 {
		size := rng.IntN(40)
		switch {
		case i%97 == 0:
			size = chunkSize + rng.IntN(chunkSize/2)
		case i%7 == 0:
			size = 5000 + rng.IntN(300<<10) // over 4 KiB (the runs' buffers here) and some over 256 KiB (a spool's)
		}
		rec := binary.BigEndian.AppendUint32(nil, uint32(rng.IntN(1000)))
		for range size {
			rec = append(rec, byte(rng.IntN(256)))
		}
		want = append(want, rec)
	}
	sp, err := NewSpool(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	for _, rec := range want {
		if err := sp.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := sp.Rewind(); err != nil {
		t.Fatal(err)
	}
	for k := 0; ; k++ {
		rec, ok := sp.Next()
		if !ok {
			if k != len(want) || sp.Err() != nil {
				t.Fatalf("spool: %d records of %d (%v)", k, len(want), sp.Err())
			}
			break
		}
		if !bytes.Equal(rec, want[k]) {
			t.Fatalf("spool: record %d (%d bytes) differs", k, len(want[k]))
		}
	}
	cmp := func(a, b []byte) int { return bytes.Compare(a[:4], b[:4]) }
	sorted := slices.Clone(want)
	slices.SortStableFunc(sorted, cmp)
	for _, budget := range []int{64 << 10, 256 << 20} {
		s := New(t.TempDir(), budget, cmp)
		for _, rec := range want {
			if err := s.Add(rec); err != nil {
				t.Fatal(err)
			}
		}
		if budget < 1<<20 && s.Runs() < 10 || budget > 1<<20 && (s.Runs() != 0 || len(s.chunks) < 10) {
			t.Fatalf("budget %d: %d runs, %d chunks: not what the test means to try", budget, s.Runs(), len(s.chunks))
		}
		sortsTo(t, s, budget, sorted)
	}
}

// sortsTo sorts s, of the given budget, and fails the test unless it
// yields want, record by record, and no error; then closes s.
func sortsTo(t *testing.T, s *Sorter, budget int, want [][]byte) {
	t.Helper()
	it, err := s.Sort()
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; ; k++ {
		rec, ok := it.Next()
		if !ok {
			if k != len(want) || it.Err() != nil {
				t.Fatalf("budget %d: %d records of %d (%v)", budget, k, len(want), it.Err())
			}
			break
		}
		if !bytes.Equal(rec, want[k]) {
			// The first 32 bytes: a large record's whole would flood the log.
			t.Fatalf("budget %d (%d runs): record %d (%d bytes) differs: %.32x, want %.32x (%d bytes)", budget, s.Runs(), k, len(rec), rec, want[k], len(want[k]))
		}
	}
	it.Close()
	s.Close()
}

// TestSpoolCutShort: a spool file cut in the middle of a record ends the
// reading with an error, not with a short record or a clean end.
func TestSpoolCutShort(t *testing.T) {
	for _, cut := range []int64{1, 40, 201} { // in the second record; in its length
		s, err := NewSpool(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		s.Add([]byte("first"))
		s.Add(bytes.Repeat([]byte("x"), 200)) // a length of two bytes, then 200
		if err := s.Rewind(); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(s.f.Name(), s.Bytes-cut); err != nil {
			t.Fatal(err)
		}
		var got []string
		for rec, ok := s.Next(); ok; rec, ok = s.Next() {
			got = append(got, string(rec))
		}
		if s.Err() == nil || !slices.Equal(got, []string{"first"}) {
			t.Fatalf("cut %d: read %q, error %v; want the first record, then an error", cut, got, s.Err())
		}
		s.Close()
	}
}

// TestUvarint: Enc.U writes what binary.AppendUvarint does, and Dec.U
// reads it back, on each length of a varint.
func TestUvarint(t *testing.T) {
	var e Enc
	var want []byte
	var vs []uint64
	for sh := range 64 {
		for _, v := range []uint64{1<<sh - 1, 1 << sh, 1<<sh + 1} {
			vs = append(vs, v)
			e.U(v)
			want = binary.AppendUvarint(want, v)
		}
	}
	vs = append(vs, 1<<64-1)
	e.U(1<<64 - 1)
	want = binary.AppendUvarint(want, 1<<64-1)
	if !bytes.Equal(e.B, want) {
		t.Fatal("Enc.U differs from binary.AppendUvarint")
	}
	d := Dec{B: e.B}
	for _, v := range vs {
		if got := d.U(); got != v {
			t.Fatalf("Dec.U: %d, want %d", got, v)
		}
	}
	if len(d.B) != 0 {
		t.Fatalf("%d bytes left", len(d.B))
	}
}

// TestPrefixOrder: with a Prefix whose every byte varies, and many
// prefixes alike (cmp then decides, then the order added), the records
// come out as a stable sort by (prefix, cmp) puts them, in memory and
// merged from runs.
func TestPrefixOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	pfxOf := func(rec []byte) uint64 { return binary.BigEndian.Uint64(rec) }
	cmp := func(a, b []byte) int { return int(a[8]) - int(b[8]) }
	order := func(a, b []byte) int {
		if pa, pb := pfxOf(a), pfxOf(b); pa != pb {
			if pa < pb {
				return -1
			}
			return 1
		}
		return cmp(a, b)
	}
	for _, budget := range []int{8 << 20, 64 << 10} {
		s := New(t.TempDir(), budget, cmp)
		s.Prefix = pfxOf
		var want [][]byte
		for i := range 30000 {
			p := rng.Uint64()
			if i%3 == 0 {
				p = uint64(rng.IntN(4)) << (8 * rng.IntN(8)) // alike, in one byte or another
			}
			rec := binary.BigEndian.AppendUint64(nil, p)
			rec = append(rec, byte(rng.IntN(3)))
			rec = binary.BigEndian.AppendUint32(rec, uint32(i))
			want = append(want, rec)
			if err := s.Add(rec); err != nil {
				t.Fatal(err)
			}
		}
		slices.SortStableFunc(want, order)
		sortsTo(t, s, budget, want)
	}
}
