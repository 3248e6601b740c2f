package extsort

import (
	"math/rand/v2"
	"testing"
)

// TestRowSet adds rows in random order, some twice, to a set whose
// budget makes it spill many runs, and asks every row in ascending order,
// twice (two cursors): Has is true for the rows added only.
func TestRowSet(t *testing.T) {
	dir := t.TempDir()
	r := NewRowSet(dir, 1)
	defer r.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	in := map[int64]bool{}
	for range 30000 {
		row := rng.Int64N(100000)
		in[row] = true
		if err := r.Add(row); err != nil {
			t.Fatal(err)
		}
	}
	if r.s.Runs() < 2 {
		t.Fatalf("%d runs: the set did not spill", r.s.Runs())
	}
	for pass := range 2 {
		c, err := r.Cursor()
		if err != nil {
			t.Fatal(err)
		}
		for row := int64(0); row < 100000; row++ {
			if c.Has(row) != in[row] {
				t.Fatalf("pass %d: Has(%d) = %v, want %v", pass, row, !in[row], in[row])
			}
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var empty *RowSet
	if c, err := empty.Cursor(); err != nil || c.Has(0) || c.Close() != nil {
		t.Errorf("a nil set has a row, or fails")
	}
}
