package ooc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/importer/ooc"
	"github.com/treeport/treeport/internal/pricing"
	"github.com/treeport/treeport/layouts"
)

// oocPlan plans the input at path in l, read in memory (oc nil) or out
// of core, and returns the plan as JSON without its item collections and
// with its problems.
func oocPlan(t *testing.T, path string, l layouts.Layout, oc *ooc.OutOfCore) (string, []string) {
	t.Helper()
	in, err := importer.ReadInput(context.Background(), importer.InputOptions{Path: path, MaxProblems: 50, OutOfCore: oc})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if in.OutOfCore() != (oc != nil) {
		t.Fatalf("read out of core: %v, want %v", in.OutOfCore(), oc != nil)
	}
	p, problems, err := importer.PlanLayout(context.Background(), in, l, pricing.Default, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(p)
	var ps []string
	for _, e := range problems {
		ps = append(ps, e.Error())
	}
	return string(b), ps
}

// TestOutOfCorePlanMatchesInMemory: the dry run's plan of an input read
// out of core (forced, in a 1 MiB budget, each sort in a sixth of it) has
// the same counts, sizes, WCU, longest keys, largest item collections and
// their keys, load time, cost, rejected nodes and problems as in memory,
// for random forests with and without defects, the fixtures and every
// layout.
func TestOutOfCorePlanMatchesInMemory(t *testing.T) {
	// Each sort keeps a sixth of the 1 MiB, not the 1 MiB floor: the
	// 12,000-node forest's sorts merge 3 to 10 runs from disk in every
	// layout, as a 60,000-node one's do at the floor, in a fifth of the
	// time under -race.
	defer func(floor int64) { *ooc.MinSortBudget = floor }(*ooc.MinSortBudget)
	*ooc.MinSortBudget = 0
	inputs := []string{
		writeTemp(t, "clean.csv", defectiveForest(rand.New(rand.NewPCG(3, 9)), 2000, false)),
		writeTemp(t, "defects.csv", defectiveForest(rand.New(rand.NewPCG(4, 9)), 2000, true)),
		// Large enough for the collections' sorts to merge runs from disk.
		writeTemp(t, "large.csv", defectiveForest(rand.New(rand.NewPCG(5, 9)), 12000, false)),
		"../../fixtures/folders.json", "../../fixtures/org.parquet", "../../fixtures/bad/cycle.csv", "../../fixtures/bad/duplicate-id.csv",
	}
	for _, path := range inputs {
		for _, name := range layouts.Names() {
			t.Run(filepath.Base(path)+"/"+name, func(t *testing.T) {
				l, err := layouts.New(name, layouts.Options{})
				if err != nil {
					t.Fatal(err)
				}
				want, wantProblems := oocPlan(t, path, l, nil)
				if strings.Contains(want, `"nodes":0,`) && filepath.Ext(path) != ".csv" {
					t.Fatalf("no node planned in memory: %s", want)
				}
				got, gotProblems := oocPlan(t, path, l, &ooc.OutOfCore{Memory: 1 << 20, TmpDir: t.TempDir(), Layout: l, Force: true, Plan: true})
				if got != want {
					t.Errorf("plan out of core:\n%s\nin memory:\n%s", got, want)
				}
				if len(gotProblems) != len(wantProblems) {
					t.Fatalf("%d problems out of core, %d in memory", len(gotProblems), len(wantProblems))
				}
				for k := range gotProblems {
					if gotProblems[k] != wantProblems[k] {
						t.Errorf("problem %d out of core: %s\nin memory: %s", k, gotProblems[k], wantProblems[k])
					}
				}
			})
		}
	}
}

// TestOutOfCorePlanDeepChains: the dry run's plan of deep chains read out
// of core, resolved by doubling, is the plan in memory, in every layout:
// chains in random order (children before parents, with a problem, a
// missing parent and cycles at depth), and a chain of 100,000 in order in
// the closure layout, whose 5,000,050,000 rows are counted and sized from
// the nodes' depths and path sizes (runs), not one by one, and whose
// nodes carry no path through the passes; and that chain children first,
// whose nodes carry a rank, not the rows of their paths. Under the race
// detector the chain is 25,000 deep (raceScale): 15 doubling rounds, not
// 17, whose sorts still spill in the 1 MiB budget (checked), and
// 312,512,500 closure rows, still far too many to count one by one within
// the test's time.
func TestOutOfCorePlanDeepChains(t *testing.T) {
	const depth = 100000 / raceScale
	var chain strings.Builder
	chain.WriteString("id,parent_id\n")
	for k := range depth {
		if k == 0 {
			chain.WriteString("c0,\n")
			continue
		}
		fmt.Fprintf(&chain, "c%d,c%d\n", k, k-1)
	}
	long := writeTemp(t, "chain.csv", []byte(chain.String()))
	// The same chain, children first: its collections are measured
	// breadth first, from the ranks the levels give.
	lines := strings.Split(strings.TrimSuffix(chain.String(), "\n"), "\n")
	slices.Reverse(lines[1:])
	reversed := writeTemp(t, "reversed.csv", []byte(strings.Join(lines, "\n")+"\n"))
	// A chain whose ids JSON escapes (a quote, a backslash): the sizes of
	// its closure rows count the escapes of every ancestor.
	var escaped strings.Builder
	escaped.WriteString("id,parent_id\n")
	for k := range 300 {
		parent := ""
		if k > 0 {
			parent = fmt.Sprintf(`"q""%d\x"`, k-1)
		}
		fmt.Fprintf(&escaped, "\"q\"\"%d\\x\",%s\n", k, parent)
	}
	inputs := []struct {
		path    string
		layouts []string
	}{
		{writeTemp(t, "deep.csv", deepForest(rand.New(rand.NewPCG(2000, 3)), 2000)), layouts.Names()},
		{long, []string{"closure", "adjacency"}},
		{reversed, []string{"closure"}},
		{writeTemp(t, "escaped.csv", []byte(escaped.String())), []string{"closure"}},
	}
	for _, in := range inputs {
		for _, name := range in.layouts {
			t.Run(filepath.Base(in.path)+"/"+name, func(t *testing.T) {
				l, err := layouts.New(name, layouts.Options{})
				if err != nil {
					t.Fatal(err)
				}
				want, wantProblems := oocPlan(t, in.path, l, nil)
				var mu sync.Mutex
				spilled := map[string]bool{}
				got, gotProblems := oocPlan(t, in.path, l, &ooc.OutOfCore{Memory: 1 << 20, TmpDir: t.TempDir(), Layout: l, Force: true, Plan: true,
					OnPhase: func(p string, _, _ int64) {
						if strings.HasSuffix(p, "(bytes spilled)") {
							mu.Lock()
							spilled[p] = true
							mu.Unlock()
						}
					}})
				if got != want {
					t.Errorf("plan out of core:\n%s\nin memory:\n%s", got, want)
				}
				if !slices.Equal(gotProblems, wantProblems) {
					t.Errorf("problems out of core:\n%s\nin memory:\n%s", strings.Join(gotProblems, "\n"), strings.Join(wantProblems, "\n"))
				}
				if in.path != long && in.path != reversed {
					return
				}
				// The doubling's sorts merge runs from disk, at either size.
				if !spilled["doubling (by id) (bytes spilled)"] || !spilled["doubling (by pointer) (bytes spilled)"] {
					t.Errorf("the doubling's sorts did not spill: %v", spilled)
				}
				if rows := fmt.Sprintf(`"items":%d,`, depth*(depth+1)/2); name == "closure" && !strings.Contains(got, rows) {
					t.Errorf("the chain's closure rows are not all counted: %s", got)
				}
			})
		}
	}
}

// TestOutOfCoreDeepChainStops: a read of a deep chain out of core stops
// with the context's error when it ends during the passes resolving by
// depth, and leaves no file behind.
func TestOutOfCoreDeepChainStops(t *testing.T) {
	var chain strings.Builder
	chain.WriteString("id,parent_id\n")
	for k := range 20000 {
		parent := ""
		if k > 0 {
			parent = fmt.Sprintf("c%d", k-1)
		}
		fmt.Fprintf(&chain, "c%d,%s\n", k, parent)
	}
	path := writeTemp(t, "chain.csv", []byte(chain.String()))
	l, err := layouts.New("closure", layouts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tmp := t.TempDir()
	var phases []string
	oc := &ooc.OutOfCore{Memory: 1 << 20, TmpDir: tmp, Layout: l, Force: true, Plan: true, OnPhase: func(p string, _, _ int64) {
		phases = append(phases, p)
		if p == "resolving by depth (levels)" {
			cancel()
		}
	}}
	in, err := importer.ReadInput(ctx, importer.InputOptions{Path: path, MaxProblems: 50, OutOfCore: oc})
	if in != nil {
		in.Close()
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("importer.ReadInput: %v, want the context's error (phases %q)", err, slices.Compact(phases))
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("%d files left in the tmp dir", len(left))
	}
}
