package transform

import (
	"math/rand"
	"strings"
	"testing"
)

// PathTexts appends what AppendPathText does, for every node of random
// forests in both orders, with and without cycles, for every delimiter and
// budgets from none to all, with reads ahead by Warm: its kept texts only
// shorten the walk.
func TestPathTextsMatchAppendPathText(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for seed := 0; seed < 60; seed++ {
		rows := randomRows(rng, 1+rng.Intn(600), seed%2 == 1)
		if seed%3 == 2 {
			// A cycle, with nodes below it, and a second one.
			rows = append(rows, [2]string{"c1", "c2"}, [2]string{"c2", "c1"}, [2]string{"below", "c2"}, [2]string{"self", "self"})
		}
		f, _ := build(t, rows)
		for _, delim := range []string{"|", "¦", "::", ""} {
			for _, budget := range []int{0, 1, 64, 4096, 1 << 30} {
				p := f.NewPathTexts(delim, budget)
				if p.Kept() > budget {
					t.Fatalf("seed %d %q: %d bytes kept, over the budget of %d", seed, delim, p.Kept(), budget)
				}
				for i := range f.Len() {
					if i%7 == 0 {
						p.Warm(i, i+64) // ends on cycles, and changes nothing
					}
					_, want := f.AppendPathText(nil, []byte("prefix"), i, delim)
					if got := p.Append([]byte("prefix"), i); string(got) != string(want) {
						t.Fatalf("seed %d, delimiter %q, budget %d, node %d (%q): %q, want %q", seed, delim, budget, i, f.ID(i), got, want)
					}
				}
			}
		}
	}
}

// With room for them, PathTexts keeps the paths of every node with
// children and no other, and the walks then take one step: for a tree of
// known shape, the kept bytes are the sum of those paths.
func TestPathTextsKeepsTheTop(t *testing.T) {
	// r - a - b - c, and r - d: a, b and r have children.
	f, problems := build(t, [][2]string{{"r", ""}, {"a", "r"}, {"b", "a"}, {"c", "b"}, {"d", "r"}})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	p := f.NewPathTexts("/", 1<<20)
	if want := len("r") + len("r/a") + len("r/a/b"); p.Kept() != want {
		t.Fatalf("kept %d bytes, want %d", p.Kept(), want)
	}
	// A budget of 4 bytes holds only the largest subtree's, r's.
	if p := f.NewPathTexts("/", 4); p.Kept() != 1 {
		t.Fatalf("with 4 bytes, kept %d bytes, want 1 (r)", p.Kept())
	}
	for i := range f.Len() {
		if got, want := string(p.Append(nil, i)), strings.Join(f.AppendPath(nil, i), "/"); got != want {
			t.Errorf("node %q: %q, want %q", f.ID(i), got, want)
		}
	}
}

// Paths longer than DynamoDB's keys are not kept, and still joined.
func TestPathTextsLongPaths(t *testing.T) {
	long := strings.Repeat("x", 1500)
	f, problems := build(t, [][2]string{{long + "1", ""}, {long + "2", long + "1"}, {long + "3", long + "2"}, {"leaf", long + "3"}})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	p := f.NewPathTexts("/", 1<<20)
	if p.Kept() != len(long)+1 {
		t.Fatalf("kept %d bytes, want only the root's %d", p.Kept(), len(long)+1)
	}
	for i := range f.Len() {
		if got, want := string(p.Append(nil, i)), strings.Join(f.AppendPath(nil, i), "/"); got != want {
			t.Errorf("node %d: got %d bytes, want %d", i, len(got), len(want))
		}
	}
}
