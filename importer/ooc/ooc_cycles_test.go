package ooc_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/treeport/treeport/importer/ooc"
	"github.com/treeport/treeport/layouts"
)

// cycleForest is a CSV forest, in random order, of a good tree and of
// many cycles: of 2 to 60 nodes (over 21, so that their problem counts
// the ids it does not name), some entered from below by trees hanging at
// several depths, with below them ids holding the path delimiter (a
// problem of their own, which their descendants inherit), ids over
// DynamoDB's key limits, duplicate ids (a member's id twice, and a
// duplicate hanging below), and links (link_to) of nodes below cycles,
// to good nodes, to nodes below cycles and to missing ones.
func cycleForest(rng *rand.Rand, cycles int) []byte {
	type row struct{ id, parent, link string }
	rows := []row{{"root", "", ""}}
	for k := range 50 {
		rows = append(rows, row{fmt.Sprintf("g%d", k), "root", ""})
	}
	var below []string
	for c := range cycles {
		n := []int{2, 3, 5, 25, 60, 1 + rng.IntN(30)}[c%6]
		ids := make([]string, n)
		for k := range ids {
			ids[k] = fmt.Sprintf("c%d-%d", c, k)
		}
		for k, id := range ids {
			rows = append(rows, row{id, ids[(k+1)%n], ""})
		}
		// Trees below, hung at random members, each a chain with branches.
		for range rng.IntN(4) {
			prev := ids[rng.IntN(n)]
			depth := 1 + rng.IntN(40)
			for d := range depth {
				id := fmt.Sprintf("b%d-%d-%d", c, len(rows), d)
				switch rng.IntN(25) {
				case 0:
					id = fmt.Sprintf("d|%d-%d", c, len(rows))
				case 1:
					id = fmt.Sprintf("long%d-%d-%s", c, len(rows), strings.Repeat("x", 1100))
				}
				link := ""
				if rng.IntN(6) == 0 {
					link = []string{"g3", "missing", ids[0], ""}[rng.IntN(4)]
					if len(below) > 0 && rng.IntN(2) == 0 {
						link = below[rng.IntN(len(below))]
					}
				}
				rows = append(rows, row{id, prev, link})
				below = append(below, id)
				if rng.IntN(5) == 0 {
					rows = append(rows, row{id + "-leaf", id, ""})
				}
				prev = id
			}
		}
		if c%7 == 3 {
			rows = append(rows, row{ids[0], "g1", ""}) // a member's id twice
		}
		if c%9 == 4 && len(below) > 0 {
			rows = append(rows, row{below[len(below)-1], ids[n-1], ""}) // a duplicate below
		}
	}
	rng.Shuffle(len(rows), func(a, b int) { rows[a], rows[b] = rows[b], rows[a] })
	var b bytes.Buffer
	b.WriteString("id,parent_id,link_to\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%s,%s,%s\n", r.id, r.parent, r.link)
	}
	return b.Bytes()
}

// TestOutOfCoreCyclesSorted reads inputs of many cycles, long ones, and
// what hangs below them, in memory and out of core, with the nodes in or
// below cycles resolved by the sorted passes (ooccycles) and read into
// memory (cyclesInMemory): the problems, the counts, the items and the
// rejects must be the same all three ways.
func TestOutOfCoreCyclesSorted(t *testing.T) {
	defer func(f func(int) int64) { *ooc.CyclesInMemory = f }(*ooc.CyclesInMemory)
	for _, tc := range []struct {
		name   string
		data   []byte
		keep   int
		layout []string
	}{
		// 30 cycles under the race detector (raceScale), not 120: still
		// 5 of each size (2, 3, 5, 25, 60 and random), members' ids
		// twice and duplicates below; the sorted path is forced
		// (cyclesInMemory) whatever the size.
		{"many cycles", cycleForest(rand.New(rand.NewPCG(1, 2)), 120/raceScale), 1000, layouts.Names()},
		{"many cycles, few kept", cycleForest(rand.New(rand.NewPCG(3, 4)), 60), 3, []string{"path", "prefix"}},
		{"defects", defectiveForest(rand.New(rand.NewPCG(5, 6)), 1500, true), 100, []string{"path", "adjacency"}},
		{"deep", deepForest(rand.New(rand.NewPCG(7, 8)), 3000), 50, []string{"path"}},
	} {
		path := writeTemp(t, "in.csv", tc.data)
		for _, name := range tc.layout {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				l, err := layouts.New(name, layouts.Options{})
				if err != nil {
					t.Fatal(err)
				}
				want := oocEmitAll(t, path, l, nil, tc.keep)
				if len(want.problems) < 3 || want.rejected < 10 {
					t.Fatalf("in memory: %d problems, %d rejected: the cycles are not found", len(want.problems), want.rejected)
				}
				for _, sorted := range []bool{true, false} {
					tmp := t.TempDir()
					*ooc.CyclesInMemory = func(int) int64 { return math.MaxInt64 }
					if sorted {
						*ooc.CyclesInMemory = func(int) int64 { return 0 }
					}
					var phases []string
					oc := &ooc.OutOfCore{Memory: 1 << 20, TmpDir: tmp, Layout: l, Force: true, OnPhase: func(p string, _, _ int64) {
						if len(phases) == 0 || phases[len(phases)-1] != p {
							phases = append(phases, p)
						}
					}}
					got := oocEmitAll(t, path, l, oc, tc.keep)
					if slices.Contains(phases, "cycles: doubling (passes)") != sorted {
						t.Fatalf("sorted %v: phases %q", sorted, phases)
					}
					compareEmitted(t, fmt.Sprintf("sorted %v", sorted), got, want)
					if left, _ := os.ReadDir(tmp); len(left) != 0 {
						t.Errorf("%d files left in the tmp dir", len(left))
					}
				}
			})
		}
	}
}

// compareEmitted fails t where got, out of core, is not want, in memory.
func compareEmitted(t *testing.T, how string, got, want emitted) {
	t.Helper()
	if !slices.Equal(got.problems, want.problems) {
		t.Errorf("%s: problems out of core:\n%s\nin memory:\n%s", how, strings.Join(got.problems, "\n"), strings.Join(want.problems, "\n"))
	}
	if got.more != want.more || got.rejected != want.rejected || got.roots != want.roots || got.stats != want.stats {
		t.Errorf("%s: out of core: %d more problems, %d rejected, %d roots, %+v; in memory: %d, %d, %d, %+v", how,
			got.more, got.rejected, got.roots, got.stats, want.more, want.rejected, want.roots, want.stats)
	}
	if !slices.Equal(got.items, want.items) {
		t.Errorf("%s: %d items out of core, %d in memory, not the same", how, len(got.items), len(want.items))
	}
	if got.rejects != want.rejects {
		a, b := strings.Split(got.rejects, "\n"), strings.Split(want.rejects, "\n")
		k := 0
		for k < min(len(a), len(b))-1 && a[k] == b[k] {
			k++
		}
		t.Errorf("%s: rejects out of core differ (%d lines, %d in memory) from line %d:\n%s\n%s", how, len(a), len(b), k, a[k], b[k])
	}
}
