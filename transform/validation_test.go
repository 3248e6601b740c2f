package transform

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// delimCheck is a layout's check, as layouts.Checker's behaves: a fresh
// error for each problem of each node, an id holding "|" and a path (ids
// and delimiters) over 12 bytes.
func delimCheck(_ int, s *Stats) error {
	var errs []error
	if strings.Contains(s.ID, "|") {
		errs = append(errs, fmt.Errorf("%w: %q", ErrDelimiter, "|"))
	}
	if n := s.PathBytes + s.Depth; n > 12 {
		errs = append(errs, fmt.Errorf("%w: the path is %d bytes", ErrKeyTooLong, n))
	}
	return errors.Join(errs...)
}

// A node's own problems are reported even when an ancestor is rejected:
// with the default --on-invalid=fail, the user sees every problem at once.
// A node whose ancestry is not known (below a missing parent, in or below
// a cycle) has no path: its key lengths are not reported, the problems of
// its id are.
func TestCheckReportsProblemsBelowRejected(t *testing.T) {
	tests := []struct {
		name string
		rows [][2]string
		want []string // "id: sentinel", in input order
	}{
		{
			name: "delimiter below a missing parent",
			rows: [][2]string{{"A", "Z"}, {"B|1", "A"}},
			want: []string{"B|1: " + ErrDelimiter.Error()},
		},
		{
			name: "delimiter in a cycle and below one",
			rows: [][2]string{{"r", ""}, {"x|1", "y"}, {"y", "x|1"}, {"t|2", "y"}},
			want: []string{"x|1: " + ErrDelimiter.Error(), "t|2: " + ErrDelimiter.Error()},
		},
		{
			name: "delimiter below a node that is its own parent",
			rows: [][2]string{{"s", "s"}, {"c|1", "s"}},
			want: []string{"c|1: " + ErrDelimiter.Error()},
		},
		{
			name: "delimiter below a delimiter",
			rows: [][2]string{{"a|1", ""}, {"b|2", "a|1"}, {"c", "b|2"}},
			want: []string{"a|1: " + ErrDelimiter.Error(), "b|2: " + ErrDelimiter.Error()},
		},
		{
			// The path is known below a duplicate: b's path is a|b|cccc.
			name: "a long path below a duplicate",
			rows: [][2]string{{"a", ""}, {"b", "a"}, {"b", "a"}, {"cccccccccc", "b"}},
			want: []string{"cccccccccc: " + ErrKeyTooLong.Error()},
		},
		{
			// Keys only grow down a path: a long path's subtree is its
			// one problem, not one a node (which a deep input would
			// make millions of); a problem of another kind below it is
			// still the node's own.
			name: "a long path below a long path",
			rows: [][2]string{{"a", ""}, {"bbbbbbbbbbb", "a"}, {"c", "bbbbbbbbbbb"}, {"d|1", "c"}},
			want: []string{"bbbbbbbbbbb: " + ErrKeyTooLong.Error(), "d|1: " + ErrDelimiter.Error(), "d|1: " + ErrKeyTooLong.Error()},
		},
		{
			// Below a missing parent, the path is not known: no key
			// length is made up from the part of it that is.
			name: "no path below a missing parent",
			rows: [][2]string{{"a", "Z"}, {"bbbbbbbbbbb", "a"}, {"c|1", "bbbbbbbbbbb"}},
			want: []string{"c|1: " + ErrDelimiter.Error()},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := build(t, tt.rows)
			before := f.RejectedCount()
			problems := f.Check(delimCheck)
			var got []string
			for _, p := range problems {
				if p.File != "in.csv" || p.Line < 2 || f.Lookup(p.ID) < 0 {
					t.Errorf("problem without its place: %v", p)
				}
				for _, s := range []error{ErrDelimiter, ErrKeyTooLong} {
					if errors.Is(p, s) {
						got = append(got, p.ID+": "+s.Error())
					}
				}
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			// A rejected node still takes its subtree along.
			for i := range f.Len() {
				if p := f.Parent(i); p >= 0 && f.Rejected(p) && !f.Rejected(i) {
					t.Errorf("%q kept below rejected %q", f.ID(i), f.ID(p))
				}
			}
			if f.RejectedCount() < before {
				t.Errorf("rejected %d after Check, %d before", f.RejectedCount(), before)
			}
		})
	}
}

// A check that returns one error for every node (an attribute name that no
// node may have) is one problem per tree, not one per node: a node whose
// error is the one of its parent goes with its parent.
func TestCheckOneErrorForAll(t *testing.T) {
	const n = 1000
	rows := [][2]string{{"r", ""}, {"orphan", "Z"}}
	for i := range n {
		rows = append(rows, [2]string{fmt.Sprintf("n%d", i+1), fmt.Sprintf("n%d", i)})
	}
	rows[2][1] = "r"
	f, _ := build(t, rows)
	all := fmt.Errorf("%w: Path", ErrReservedAttr)
	problems := f.Check(func(int, *Stats) error { return all })
	var ids []string
	for _, p := range problems {
		ids = append(ids, p.ID)
	}
	if strings.Join(ids, " ") != "r orphan" {
		t.Errorf("problems of %v, want r and orphan", ids)
	}
	if f.RejectedCount() != f.Len() {
		t.Errorf("rejected %d of %d", f.RejectedCount(), f.Len())
	}
	if err := f.Reason(f.Lookup("n500")); !errors.Is(err, ErrAncestor) || !strings.Contains(err.Error(), `"r"`) {
		t.Errorf("reason of n500: %v", err)
	}
}

// The first copy of a duplicate id is rejected with a reason that says
// where the other copy is: the rejects file gives it to both records.
func TestDuplicateReasonNamesOtherCopy(t *testing.T) {
	f, problems := build(t, [][2]string{{"a", ""}, {"b", "a"}, {"c", "a"}, {"b", "a"}, {"d", "a"}, {"b", "c"}})
	if len(problems) != 2 || problems[0].Line != 5 || problems[1].Line != 7 {
		t.Fatalf("problems %v, want lines 5 and 7", problems)
	}
	reason := f.Reason(f.Lookup("b"))
	if !errors.Is(reason, ErrDuplicateID) {
		t.Fatalf("reason %v", reason)
	}
	var re *RowError
	if !errors.As(reason, &re) || re.Line != 3 || re.ID != "b" {
		t.Errorf("reason at %v, want line 3", reason)
	}
	// The reason is shown without its place, the record's own.
	for _, w := range []string{"in.csv:5", "in.csv:7"} {
		if !strings.Contains(re.Err.Error(), w) {
			t.Errorf("reason %q does not name %s", re.Err, w)
		}
	}
}

// Reason walks up to the rejected ancestor once for all nodes, not once
// for each: the rejects of a deep chain below a missing parent take as
// long as the chain, not its square.
func TestReasonLinearOnDeepChain(t *testing.T) {
	const n = 100_000
	b := NewBuilder(n, false)
	b.Add(&Record{ID: "n0", Parent: "missing", Line: 2}, "", 0, 0)
	for i := 1; i < n; i++ {
		b.Add(&Record{ID: fmt.Sprintf("n%d", i), Parent: fmt.Sprintf("n%d", i-1), Line: i + 2}, "", 0, 0)
	}
	f, problems := b.Build()
	if len(problems) != 1 || f.RejectedCount() != n {
		t.Fatalf("problems %v, rejected %d", problems, f.RejectedCount())
	}
	done := make(chan error, 1)
	go func() {
		for i := range n {
			if err := f.Reason(i); i > 0 && (!errors.Is(err, ErrAncestor) || !strings.Contains(err.Error(), `"n0"`)) {
				done <- fmt.Errorf("reason of n%d: %v", i, err)
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		// A linear walk takes a few tens of milliseconds; one walk up the
		// chain per node, minutes.
		t.Fatal("Reason of every node of a chain of 100,000 takes over 10 s")
	}
}

// SortProblems puts problems in the order of their places: files in the
// order they were read, then lines; the problems of one line keep their
// order.
func TestSortProblemsByPlace(t *testing.T) {
	b := NewBuilder(0, false)
	for k, r := range [][3]string{{"z.csv", "a", ""}, {"z.csv", "b", "a"}, {"a.csv", "c", "a"}, {"a.csv", "d", "c"}} {
		b.Add(&Record{ID: r[1], Parent: r[2], File: r[0], Line: k%2 + 2}, "", 0, 0)
	}
	// A file where no row could be read is in its place too.
	b.AddBad(&RowError{File: "m.csv", Line: 2, Err: ErrParse}, "")
	b.Add(&Record{ID: "e", Parent: "a", File: "n.csv", Line: 2}, "", 0, 0)
	f, _ := b.Build()
	p := func(file string, line int, id string) *RowError {
		return &RowError{File: file, Line: line, ID: id, Err: ErrDelimiter}
	}
	problems := []*RowError{
		p("a.csv", 3, "d"), p("n.csv", 2, "e"), p("z.csv", 3, "b"), p("a.csv", 2, "c"),
		p("m.csv", 2, ""), p("z.csv", 3, "b2"), p("z.csv", 2, "a"), p("a.csv", 0, ""),
		p("z.csv", 3, "b3"), p("other.csv", 1, "x"),
	}
	f.SortProblems(problems)
	var got []string
	for _, e := range problems {
		got = append(got, fmt.Sprintf("%s:%d %s", e.File, e.Line, e.ID))
	}
	want := "z.csv:2 a, z.csv:3 b, z.csv:3 b2, z.csv:3 b3, a.csv:0 , a.csv:2 c, a.csv:3 d, m.csv:2 , n.csv:2 e, other.csv:1 x"
	if strings.Join(got, ", ") != want {
		t.Errorf("sorted:\n%s\nwant:\n%s", strings.Join(got, ", "), want)
	}
}
