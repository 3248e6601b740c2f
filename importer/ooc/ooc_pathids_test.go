package ooc_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/treeport/treeport/importer/ooc"
	"github.com/treeport/treeport/layouts"
)

// pathIDsForest is a JSON Lines forest of about n nodes whose ids are path
// ids joined by delim, in random order (children often before parents).
// About a third of the inner nodes have no attributes (implicit under
// ImplicitInner). With defects it has a few of each problem validation
// finds with path ids: duplicate paths (a name repeated under one
// parent), missing parents, a parent that is not the id without its last
// name, a root holding the delimiter, a child holding none, empty names,
// an empty id and a line that is no record, and a chain whose paths go
// over DynamoDB's key limits, with nodes hanging below.
func pathIDsForest(rng *rand.Rand, n int, delim string, defects bool) []byte {
	type row struct {
		id, parent string
		attrs      bool
	}
	ids := make([]string, 0, n)
	rows := make([]row, 0, n+128)
	for i := range n {
		id, parent := fmt.Sprintf("r%d", i), ""
		if i > 0 && rng.IntN(25) != 0 {
			parent = ids[rng.IntN(i)]
			id = parent + delim + fmt.Sprintf("s%d", i)
		}
		ids = append(ids, id)
		rows = append(rows, row{id, parent, rng.IntN(3) != 0})
	}
	var bad []string
	if defects {
		for k := range 3 {
			dup := rows[rng.IntN(n)]
			rows = append(rows, row{dup.id, dup.parent, true})
			orphan := "nowhere" + fmt.Sprint(k) + delim + "o"
			rows = append(rows, row{orphan, "nowhere" + fmt.Sprint(k), true}, row{orphan + delim + "below", orphan, false})
		}
		p := ids[rng.IntN(n)]
		rows = append(rows,
			row{"x" + delim + "c", p, true},                                // not its parent's path
			row{"a" + delim + "root", "", true},                            // a root with the delimiter
			row{"plain", ids[0], true},                                     // a child without one
			row{p + delim + delim + "b", p + delim, true},                  // a doubled delimiter
			row{p + delim, p, false},                                       // a trailing one
			row{delim + "lead", "", true},                                  // a leading one
			row{p + delim + "kid", p, false},                               // fine, for the others to sit beside
			row{p + delim + "kid" + delim + "g", p + delim + "kid", false}, // and its child
		)
		// A chain of names of 40 bytes: its ids pass 1024 bytes (the
		// path layout's sort keys) and 2048 (partition keys).
		prev := ids[1]
		for k := range 60 {
			id := prev + delim + fmt.Sprintf("deep%02d-%s", k, strings.Repeat("x", 33))
			rows = append(rows, row{id, prev, k%2 == 0})
			prev = id
		}
		bad = []string{`{"id":"","parent_id":"r0","name":"empty id"}`, `{"id": "broken`}
	}
	rng.Shuffle(len(rows), func(a, b int) { rows[a], rows[b] = rows[b], rows[a] })
	var b bytes.Buffer
	for k, r := range rows {
		rec := map[string]any{"id": r.id}
		if r.parent != "" {
			rec["parent_id"] = r.parent
		}
		if r.attrs {
			rec["name"] = fmt.Sprintf("name %d", rng.IntN(1000))
		}
		line, _ := json.Marshal(rec)
		b.Write(line)
		b.WriteByte('\n')
		if k == len(rows)/2 {
			for _, e := range bad {
				b.WriteString(e + "\n")
			}
		}
	}
	return b.Bytes()
}

// TestOutOfCorePathIDsMatchInMemory reads random forests of path ids, with
// every problem validation finds with them and without, in memory and out
// of core (a budget small enough for the sorts to spill many runs), in
// every layout that takes path ids, with and without implicit inner
// nodes: the problems, the counts, the items (in order, numbered) and the
// rejects must be the same.
func TestOutOfCorePathIDsMatchInMemory(t *testing.T) {
	for _, tc := range []struct {
		name    string
		nodes   int
		defects bool
		narrow  int
	}{
		{"clean", 3000, false, 24},
		{"defects", 3000, true, 24},
		{"defects, doubling", 2000, true, 0},
	} {
		for _, name := range layouts.Names() {
			for _, implicit := range []bool{false, true} {
				if implicit && name == layouts.AdjacencyName {
					continue // refused: a table keyed by id hides an implicit node's subtree
				}
				t.Run(fmt.Sprintf("%s/%s/implicit=%v", tc.name, name, implicit), func(t *testing.T) {
					l, err := layouts.New(name, layouts.Options{PathIDs: true, ImplicitInner: implicit})
					if err != nil {
						t.Fatal(err)
					}
					rng := rand.New(rand.NewPCG(uint64(tc.nodes), 27))
					path := writeTemp(t, "in.jsonl", pathIDsForest(rng, tc.nodes, l.Delimiter(), tc.defects))
					tmp := t.TempDir()
					defer func(n int) { *ooc.NarrowLevels = n }(*ooc.NarrowLevels)
					*ooc.NarrowLevels = tc.narrow
					want := oocEmitAll(t, path, l, nil, 100)
					got := oocEmitAll(t, path, l, &ooc.OutOfCore{Memory: 1 << 20, TmpDir: tmp, Layout: l, Force: true}, 100)
					if tc.defects && len(want.problems) < 12 {
						t.Fatalf("only %d problems in memory: the defects are not found:\n%s", len(want.problems), strings.Join(want.problems, "\n"))
					}
					for _, msg := range []string{"empty name", "without its last name", "so it is a root's", "is a root, but", "duplicate", "parent not in input", "over the limit", "empty id"} {
						if tc.defects && !strings.Contains(strings.Join(want.problems, "\n"), msg) {
							t.Errorf("no problem says %q in memory:\n%s", msg, strings.Join(want.problems, "\n"))
						}
					}
					if !tc.defects && len(want.problems) != 0 {
						t.Fatalf("problems in a clean forest:\n%s", strings.Join(want.problems, "\n"))
					}
					if !slices.Equal(got.problems, want.problems) {
						t.Errorf("problems out of core:\n%s\nin memory:\n%s", strings.Join(got.problems, "\n"), strings.Join(want.problems, "\n"))
					}
					if got.more != want.more || got.rejected != want.rejected || got.roots != want.roots || got.stats != want.stats {
						t.Errorf("out of core: %d more problems, %d rejected, %d roots, %+v; in memory: %d, %d, %d, %+v",
							got.more, got.rejected, got.roots, got.stats, want.more, want.rejected, want.roots, want.stats)
					}
					if implicit && want.stats.Items >= oocEmitAll(t, path, mustLayout(t, name, layouts.Options{PathIDs: true}), nil, 100).stats.Items {
						t.Errorf("implicit inner nodes: %d items, no fewer than without the flag", want.stats.Items)
					}
					for k := range min(len(got.items), len(want.items)) {
						if got.items[k] != want.items[k] {
							t.Fatalf("item %d out of core:\n%s\nin memory:\n%s", k, got.items[k], want.items[k])
						}
					}
					if len(got.items) != len(want.items) {
						t.Errorf("%d items out of core, %d in memory", len(got.items), len(want.items))
					}
					if !slices.Equal(got.kept, want.kept) {
						t.Errorf("Emit's items, kept: %d out of core, %d in memory, not the same", len(got.kept), len(want.kept))
					}
					if got.rejects != want.rejects {
						t.Errorf("rejects out of core:\n%s\nin memory:\n%s", got.rejects, want.rejects)
					}
					if left, _ := os.ReadDir(tmp); len(left) != 0 {
						t.Errorf("%d files left in the tmp dir", len(left))
					}
				})
			}
		}
	}
}

func mustLayout(t *testing.T, name string, opts layouts.Options) layouts.Layout {
	t.Helper()
	l, err := layouts.New(name, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestOutOfCorePathIDsPlanMatchesInMemory: the dry run's plan of a forest
// of path ids read out of core is the one read in memory, in every layout
// that takes them, with implicit inner nodes too: those are measured from
// every node's valid children, subtree and tree (subtrees), as in memory.
func TestOutOfCorePathIDsPlanMatchesInMemory(t *testing.T) {
	for _, defects := range []bool{false, true} {
		for _, name := range layouts.Names() {
			for _, implicit := range []bool{false, true} {
				if implicit && name == layouts.AdjacencyName {
					continue
				}
				t.Run(fmt.Sprintf("defects=%v/%s/implicit=%v", defects, name, implicit), func(t *testing.T) {
					l := mustLayout(t, name, layouts.Options{PathIDs: true, ImplicitInner: implicit})
					path := writeTemp(t, "in.jsonl", pathIDsForest(rand.New(rand.NewPCG(7, 27)), 2000, l.Delimiter(), defects))
					want, wantProblems := oocPlan(t, path, l, nil)
					got, gotProblems := oocPlan(t, path, l, &ooc.OutOfCore{Memory: 1 << 20, TmpDir: t.TempDir(), Layout: l, Force: true, Plan: true})
					if got != want {
						t.Errorf("plan out of core:\n%s\nin memory:\n%s", got, want)
					}
					if !slices.Equal(gotProblems, wantProblems) {
						t.Errorf("problems out of core:\n%s\nin memory:\n%s", strings.Join(gotProblems, "\n"), strings.Join(wantProblems, "\n"))
					}
				})
			}
		}
	}
}

// TestOutOfCoreImplicitBadChildren: a row that could not be read (a
// ragged row, whose id and parent are known) is its parent's child in
// memory, so a parent without attributes whose only children are such
// rows is an implicit inner node there, with no item of its own; out of
// core too, in every layout that takes --implicit-inner.
func TestOutOfCoreImplicitBadChildren(t *testing.T) {
	for _, name := range layouts.Names() {
		if name == layouts.AdjacencyName {
			continue
		}
		t.Run(name, func(t *testing.T) {
			l := mustLayout(t, name, layouts.Options{PathIDs: true, ImplicitInner: true})
			path := writeTemp(t, "in.csv", []byte(strings.ReplaceAll("id,parent_id,name\na,,x\na|p,a,\na|p|bad,a|p,x,extra\na|q,a,\na|q|ok,a|q,y\na|r,a,\n"+
				"b|bad,b,x,extra\nb,,\nb|ok,b,\n", "|", l.Delimiter())))
			want := oocEmitAll(t, path, l, nil, 100)
			got := oocEmitAll(t, path, l, &ooc.OutOfCore{Memory: 1 << 20, TmpDir: t.TempDir(), Layout: l, Force: true}, 100)
			if len(want.problems) != 4 {
				t.Fatalf("%d problems in memory, want the 2 ragged rows' 2 each:\n%s", len(want.problems), strings.Join(want.problems, "\n"))
			}
			if !slices.Equal(got.items, want.items) || !slices.Equal(got.kept, want.kept) {
				t.Errorf("items out of core:\n%s\nin memory:\n%s", strings.Join(got.items, "\n"), strings.Join(want.items, "\n"))
			}
			if !slices.Equal(got.problems, want.problems) || got.rejects != want.rejects {
				t.Errorf("problems out of core:\n%s\nin memory:\n%s", strings.Join(got.problems, "\n"), strings.Join(want.problems, "\n"))
			}
		})
	}
}

// TestOutOfCoreImplicitPlanDeepChains: the dry run's plan of deep chains
// of path ids with implicit inner nodes read out of core (resolved by
// doubling, their subtrees counted a level at a time) is the plan in
// memory, in every layout that takes them: a chain in order and the same
// children first, where every seventh node has attributes (an item of its
// own though inner) and every tenth a leaf beside the chain, whose paths
// pass DynamoDB's key limit at the bottom (rejected, with their subtrees).
// Under the race detector the chain is 275 deep, not 1,100 (raceScale),
// with ids of 7 letters, not 1: its paths at the bottom are as long (2,200
// bytes with "|"), so that they still pass the limit (checked: nodes
// rejected in memory), in 9 doubling rounds, not 11, over a quarter of the
// nodes and a sixteenth of the closure's rows.
func TestOutOfCoreImplicitPlanDeepChains(t *testing.T) {
	seg := strings.Repeat("n", 2*raceScale-1)
	for _, name := range layouts.Names() {
		if name == layouts.AdjacencyName {
			continue
		}
		l := mustLayout(t, name, layouts.Options{PathIDs: true, ImplicitInner: true})
		delim := l.Delimiter()
		var lines []string
		parent := ""
		for k := range 1100 / raceScale {
			id := seg
			if parent != "" {
				id = parent + delim + seg
			}
			attrs := ""
			if k%7 == 3 {
				attrs = `,"name":"x"`
			}
			lines = append(lines, fmt.Sprintf(`{"id":%q,"parent_id":%q%s}`, id, parent, attrs))
			if k%10 == 5 {
				lines = append(lines, fmt.Sprintf(`{"id":%q,"parent_id":%q}`, id+delim+"leaf", id))
			}
			parent = id
		}
		inOrder := writeTemp(t, "chain.jsonl", []byte(strings.Join(lines, "\n")+"\n"))
		slices.Reverse(lines)
		reversed := writeTemp(t, "reversed.jsonl", []byte(strings.Join(lines, "\n")+"\n"))
		for _, path := range []string{inOrder, reversed} {
			t.Run(name+"/"+filepath.Base(path), func(t *testing.T) {
				want, wantProblems := oocPlan(t, path, l, nil)
				if strings.Contains(want, `"rejected_nodes":0,`) {
					t.Fatalf("no node rejected in memory: %s", want)
				}
				got, gotProblems := oocPlan(t, path, l, &ooc.OutOfCore{Memory: 1 << 20, TmpDir: t.TempDir(), Layout: l, Force: true, Plan: true})
				if got != want {
					t.Errorf("plan out of core:\n%s\nin memory:\n%s", got, want)
				}
				if !slices.Equal(gotProblems, wantProblems) {
					t.Errorf("problems out of core:\n%s\nin memory:\n%s", strings.Join(gotProblems, "\n"), strings.Join(wantProblems, "\n"))
				}
			})
		}
	}
}

// TestOutOfCoreImplicitPlanLarge: the plan of a forest of path ids with
// implicit inner nodes large enough (60,000 nodes, about 12 MB of sorted
// records) for the subtrees' sorts to merge runs from disk in a 1 MiB
// budget is the plan in memory. Under the race detector the forest is
// 15,000 nodes (raceScale) and each sort keeps a tenth of the budget, not
// the 1 MiB floor (minSortBudget lowered): the subtrees' sorts merge
// 19 to 22 runs, as the 60,000 nodes' merge 16 to 19 (counted by hand).
func TestOutOfCoreImplicitPlanLarge(t *testing.T) {
	if raceScale > 1 {
		defer func(floor int64) { *ooc.MinSortBudget = floor }(*ooc.MinSortBudget)
		*ooc.MinSortBudget = 0
	}
	for _, name := range []string{"prefix", "closure"} {
		t.Run(name, func(t *testing.T) {
			l := mustLayout(t, name, layouts.Options{PathIDs: true, ImplicitInner: true})
			path := writeTemp(t, "in.jsonl", pathIDsForest(rand.New(rand.NewPCG(8, 27)), 60000/raceScale, l.Delimiter(), true))
			want, wantProblems := oocPlan(t, path, l, nil)
			got, gotProblems := oocPlan(t, path, l, &ooc.OutOfCore{Memory: 1 << 20, TmpDir: t.TempDir(), Layout: l, Force: true, Plan: true})
			if got != want {
				t.Errorf("plan out of core:\n%s\nin memory:\n%s", got, want)
			}
			if !slices.Equal(gotProblems, wantProblems) {
				t.Errorf("problems out of core:\n%s\nin memory:\n%s", strings.Join(gotProblems, "\n"), strings.Join(wantProblems, "\n"))
			}
		})
	}
}
