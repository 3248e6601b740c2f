package transform

import (
	"cmp"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestKeepProblemsCostsACount: past the problems a Builder keeps
// (KeepProblems), every kind of problem costs a count and no memory: an
// input that repeats a mistake on every row keeps the first ones and the
// number of the others, and the duplicate id's reason still says how many
// places it is at. Before, each repeated row kept about 300 bytes, and an
// orphan 280 bytes (its reason a RowError, now made when asked for) where
// its node costs about 110.
func TestKeepProblemsCostsACount(t *testing.T) {
	const rows, keep = 200_000, 100
	type row struct{ id, parent string }
	tests := []struct {
		name string
		row  func(k int) (r row, bad bool)
		// nodes is how many nodes the rows make: their memory is the
		// forest's, whatever their problems.
		nodes    int
		sentinel error
		perNode  uint64 // the bytes a node may keep; 400 when 0
	}{
		{name: "one id repeated", row: func(int) (row, bool) { return row{"x", ""}, false }, nodes: 1, sentinel: ErrDuplicateID},
		{name: "one id repeated as its own parent", row: func(int) (row, bool) { return row{"x", "x"}, false }, nodes: 1, sentinel: ErrSelfParent},
		{name: "empty ids", row: func(int) (row, bool) { return row{"", ""}, false }, sentinel: ErrEmptyID},
		{name: "bad rows without an id", row: func(int) (row, bool) { return row{"", ""}, true }, sentinel: ErrParse},
		{name: "bad rows of one id", row: func(int) (row, bool) { return row{"x", ""}, true }, nodes: 1, sentinel: ErrParse},
		{name: "missing parents", row: func(k int) (row, bool) { return row{"n" + strconv.Itoa(k), "gone"}, false }, nodes: rows, sentinel: ErrMissingParent, perNode: 160},
		{name: "two-node cycles", row: func(k int) (row, bool) {
			return row{"c" + strconv.Itoa(k), "c" + strconv.Itoa(k^1)}, false
		}, nodes: rows, sentinel: ErrCycle},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := heapInUse()
			b := NewBuilder(0, false)
			b.KeepProblems(keep)
			for k := range rows {
				r, bad := tc.row(k)
				rec := &Record{ID: r.id, Parent: r.parent, File: "in.csv", Line: k + 2}
				if bad {
					b.AddBad(&RowError{File: "in.csv", Line: k + 2, ID: r.id, Err: fmt.Errorf("%w: row %d", ErrParse, k)}, r.parent)
					continue
				}
				b.Add(rec, "line", 10, 10)
			}
			f, problems := b.Build()
			after := heapInUse()
			kept := after - min(before, after)
			all := len(problems) + f.MoreProblems()
			wantAll := rows
			switch tc.sentinel {
			case ErrDuplicateID:
				wantAll = rows - 1 // every copy but the first
			case ErrSelfParent:
				wantAll = rows // the first copy is its own parent, the others duplicates
			case ErrCycle:
				wantAll = rows / 2
			}
			if len(problems) != keep || all != wantAll {
				t.Errorf("%d problems kept and %d counted; want %d kept of %d", len(problems), f.MoreProblems(), keep, wantAll)
			}
			if len(problems) > 0 && !errors.Is(problems[0], tc.sentinel) && tc.sentinel != ErrSelfParent {
				t.Errorf("first problem %v, want %v", problems[0], tc.sentinel)
			}
			if tc.sentinel == ErrMissingParent {
				// Past the kept problems, a node's reason is whole.
				if r := f.Reason(rows - 1); !errors.Is(r, ErrMissingParent) || !strings.Contains(r.Error(), `"gone"`) || !strings.Contains(r.Error(), "in.csv:"+strconv.Itoa(rows+1)) {
					t.Errorf("the last orphan's reason %v; want its place and the missing parent", r)
				}
			}
			if tc.sentinel == ErrDuplicateID {
				if r := f.Reason(0); r == nil || !strings.Contains(r.Error(), fmt.Sprintf("%d more places", rows-maxDupPlaces)) {
					t.Errorf("the first copy's reason %v does not say how many more places the id is at", r)
				}
			}
			// A node costs what it costs (its id, parent, place, and the
			// reason it is rejected for); a problem past the kept ones
			// costs nothing more.
			t.Logf("%d rows kept %d KiB", rows, kept>>10)
			perNode := cmp.Or(tc.perNode, 400)
			if limit := uint64(tc.nodes)*perNode + 1<<20; kept > limit {
				t.Errorf("%d rows kept %d KiB after Build; want at most %d KiB (%d nodes)", rows, kept>>10, limit>>10, tc.nodes)
			}
			runtime.KeepAlive(f)
			runtime.KeepAlive(problems)
		})
	}
}

// TestKeepProblemsInCheck: a layout check that finds a problem with every
// node (an id holding the delimiter) returns the kept number and counts
// the others; every node is still rejected, with its reason, and Reset
// forgets the count with the rejections.
func TestKeepProblemsInCheck(t *testing.T) {
	const n, keep = 5000, 100
	b := NewBuilder(0, false)
	b.KeepProblems(keep)
	for k := range n {
		b.Add(&Record{ID: "a|" + strconv.Itoa(k), File: "in.csv", Line: k + 2}, "line", 0, 0)
	}
	f, problems := b.Build()
	if len(problems) != 0 {
		t.Fatalf("Build: %v", problems)
	}
	problems = f.Check(delimCheck)
	if len(problems) != keep || f.MoreProblems() != n-keep {
		t.Errorf("Check kept %d problems and counted %d more; want %d and %d", len(problems), f.MoreProblems(), keep, n-keep)
	}
	if len(problems) > 0 && problems[0].Line != 2 {
		t.Errorf("the first problem kept is at line %d; want the first node's, 2", problems[0].Line)
	}
	if f.RejectedCount() != n || f.Reason(n-1) == nil {
		t.Errorf("%d nodes rejected, the last one's reason %v; want all %d, each with its reason", f.RejectedCount(), f.Reason(n-1), n)
	}
	f.Reset()
	if f.MoreProblems() != 0 || f.RejectedCount() != 0 {
		t.Errorf("after Reset: %d more problems, %d rejected; want none", f.MoreProblems(), f.RejectedCount())
	}
}
