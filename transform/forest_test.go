package transform

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func build(t *testing.T, rows [][2]string) (*Forest, []*RowError) {
	t.Helper()
	b := NewBuilder(0, false)
	for i, r := range rows {
		b.Add(&Record{ID: r[0], Parent: r[1], File: "in.csv", Line: i + 2}, "", 10, 10)
	}
	return b.Build()
}

func TestBuildProblems(t *testing.T) {
	tests := []struct {
		name     string
		rows     [][2]string
		want     []error
		wantLine []int
		wantID   []string
		rejected []string
		kept     []string
	}{
		{
			name: "children before parents",
			rows: [][2]string{{"c", "b"}, {"b", "a"}, {"a", ""}},
			kept: []string{"a", "b", "c"},
		},
		{
			name:     "empty id",
			rows:     [][2]string{{"a", ""}, {"", "a"}},
			want:     []error{ErrEmptyID},
			wantLine: []int{3},
			wantID:   []string{""},
			kept:     []string{"a"},
		},
		{
			name:     "duplicate id rejects both places and the subtree",
			rows:     [][2]string{{"a", ""}, {"b", "a"}, {"b", "a"}, {"c", "b"}},
			want:     []error{ErrDuplicateID},
			wantLine: []int{4},
			wantID:   []string{"b"},
			rejected: []string{"b", "c"},
			kept:     []string{"a"},
		},
		{
			name:     "missing parent",
			rows:     [][2]string{{"a", ""}, {"b", "zz"}, {"c", "b"}},
			want:     []error{ErrMissingParent},
			wantLine: []int{3},
			wantID:   []string{"b"},
			rejected: []string{"b", "c"},
			kept:     []string{"a"},
		},
		{
			name:     "self parent",
			rows:     [][2]string{{"a", "a"}, {"b", "a"}},
			want:     []error{ErrSelfParent},
			wantLine: []int{2},
			wantID:   []string{"a"},
			rejected: []string{"a", "b"},
		},
		{
			name:     "cycle with a tail",
			rows:     [][2]string{{"r", ""}, {"x", "z"}, {"y", "x"}, {"z", "y"}, {"t", "y"}},
			want:     []error{ErrCycle},
			wantLine: []int{3},
			wantID:   []string{"x"},
			rejected: []string{"x", "y", "z", "t"},
			kept:     []string{"r"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, problems := build(t, tt.rows)
			if len(problems) != len(tt.want) {
				t.Fatalf("got %d problems %v, want %d", len(problems), problems, len(tt.want))
			}
			for k, p := range problems {
				if !errors.Is(p, tt.want[k]) {
					t.Errorf("problem %d = %v, want %v", k, p, tt.want[k])
				}
				if p.Line != tt.wantLine[k] || p.ID != tt.wantID[k] || p.File != "in.csv" {
					t.Errorf("problem %d at %s:%d id %q, want line %d id %q", k, p.File, p.Line, p.ID, tt.wantLine[k], tt.wantID[k])
				}
			}
			for _, id := range tt.rejected {
				if i := f.Lookup(id); i < 0 || !f.Rejected(i) {
					t.Errorf("%q not rejected", id)
				} else if f.Reason(i) == nil {
					t.Errorf("%q rejected without a reason", id)
				}
			}
			for _, id := range tt.kept {
				if i := f.Lookup(id); i < 0 || f.Rejected(i) {
					t.Errorf("%q rejected, want kept", id)
				}
			}
		})
	}
}

func TestCycleMessageNamesIDs(t *testing.T) {
	_, problems := build(t, [][2]string{{"a", "c"}, {"b", "a"}, {"c", "b"}})
	if len(problems) != 1 {
		t.Fatalf("problems = %v", problems)
	}
	msg := problems[0].Error()
	for _, id := range []string{`"a"`, `"b"`, `"c"`} {
		if !strings.Contains(msg, id) {
			t.Errorf("cycle message %q lacks %s", msg, id)
		}
	}
}

func TestDeepChainNoRecursion(t *testing.T) {
	const n = 100_000
	b := NewBuilder(n, false)
	// Children first: the deepest node comes first.
	for i := n - 1; i >= 0; i-- {
		p := ""
		if i > 0 {
			p = fmt.Sprintf("n%d", i-1)
		}
		b.Add(&Record{ID: fmt.Sprintf("n%d", i), Parent: p, Line: n - i}, "", 0, 0)
	}
	f, problems := b.Build()
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	last := f.Lookup(fmt.Sprintf("n%d", n-1))
	if got := f.Depth(last); got != n-1 {
		t.Fatalf("depth = %d, want %d", got, n-1)
	}
	path := f.AppendPath(nil, last)
	if len(path) != n || path[0] != "n0" || path[n-1] != fmt.Sprintf("n%d", n-1) {
		t.Fatalf("path of %d ids from %s to %s", len(path), path[0], path[len(path)-1])
	}
	var s Stats
	f.Stats(f.Lookup("n0"), &s)
	if s.Subtree != n || s.TreeSize != n || s.Roots != 1 {
		t.Fatalf("root stats %+v", s)
	}
	// A check that rejects the first node past a depth rejects only it,
	// and its descendants go with it.
	problems = f.Check(func(i int, s *Stats) error {
		if s.Depth >= 1000 {
			return ErrKeyTooLong
		}
		return nil
	})
	if len(problems) != 1 || problems[0].ID != "n1000" {
		t.Fatalf("problems = %v", problems)
	}
	if got := f.RejectedCount(); got != n-1000 {
		t.Fatalf("rejected %d, want %d", got, n-1000)
	}
	if err := f.Reason(last); !errors.Is(err, ErrAncestor) || !strings.Contains(err.Error(), `"n1000"`) {
		t.Fatalf("reason = %v", err)
	}
}

func TestWideAndForest(t *testing.T) {
	t.Run("one root with a million children", func(t *testing.T) {
		const n = 1_000_000
		b := NewBuilder(0, false)
		for i := 1; i < n; i++ {
			b.Add(&Record{ID: fmt.Sprintf("c%d", i), Parent: "root", Line: i}, "", 0, 0)
		}
		b.Add(&Record{ID: "root", Line: n}, "", 0, 0)
		f, problems := b.Build()
		if len(problems) != 0 {
			t.Fatal(problems)
		}
		if got := len(f.Children(f.Lookup("root"))); got != n-1 {
			t.Fatalf("children = %d", got)
		}
	})
	t.Run("a hundred thousand trees", func(t *testing.T) {
		const trees = 100_000
		b := NewBuilder(0, false)
		for i := 0; i < trees; i++ {
			b.Add(&Record{ID: fmt.Sprintf("r%d", i)}, "", 0, 0)
			b.Add(&Record{ID: fmt.Sprintf("r%d/a", i), Parent: fmt.Sprintf("r%d", i)}, "", 0, 0)
		}
		f, problems := b.Build()
		if len(problems) != 0 {
			t.Fatal(problems)
		}
		if f.Roots() != trees || len(f.Order()) != 2*trees {
			t.Fatalf("roots %d, placed %d", f.Roots(), len(f.Order()))
		}
	})
}

func TestSiblingPrefixIDs(t *testing.T) {
	f, problems := build(t, [][2]string{{"CM1", ""}, {"CM2", "CM1"}, {"CM20", "CM1"}, {"CM4", "CM2"}})
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	if got := f.AppendPath(nil, f.Lookup("CM4")); strings.Join(got, "|") != "CM1|CM2|CM4" {
		t.Fatalf("path %v", got)
	}
	var s Stats
	f.Stats(f.Lookup("CM4"), &s)
	if s.PathBytes != 3+3+3 || s.MaxAncestorIDBytes != 3 || s.RootID != "CM1" || s.ParentID != "CM2" {
		t.Fatalf("stats %+v", s)
	}
}

func TestResetUndoesCheck(t *testing.T) {
	f, _ := build(t, [][2]string{{"a", ""}, {"b", "a"}, {"c", "zz"}})
	if f.RejectedCount() != 1 {
		t.Fatalf("rejected %d after build", f.RejectedCount())
	}
	f.Check(func(i int, s *Stats) error {
		if s.ID == "a" {
			return ErrItemTooLarge
		}
		return nil
	})
	if f.RejectedCount() != 3 {
		t.Fatalf("rejected %d after check", f.RejectedCount())
	}
	f.Reset()
	if f.RejectedCount() != 1 || f.Rejected(f.Lookup("a")) || !f.Rejected(f.Lookup("c")) {
		t.Fatalf("reset left %d rejected", f.RejectedCount())
	}
}
