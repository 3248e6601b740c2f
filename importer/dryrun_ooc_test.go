package importer

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/treeport/treeport/internal/pricing"
	"github.com/treeport/treeport/layouts"
)

// oocPlan plans the input at path in l, read in memory (ooc nil) or out
// of core, and returns the plan as JSON without its item collections and
// with its problems.
func oocPlan(t *testing.T, path string, l layouts.Layout, ooc *OutOfCore) (string, []string) {
	t.Helper()
	in, err := ReadInput(context.Background(), InputOptions{Path: path, MaxProblems: 50, OutOfCore: ooc})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if in.OutOfCore() != (ooc != nil) {
		t.Fatalf("read out of core: %v, want %v", in.OutOfCore(), ooc != nil)
	}
	p, problems, err := PlanLayout(context.Background(), in, l, pricing.Default, nil)
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
// out of core (forced, in a 1 MiB budget) has the same counts, sizes,
// WCU, longest keys, largest item collections and their keys, load time,
// cost, rejected nodes and problems as in memory, for
// random forests with and without defects, the fixtures and every
// layout.
func TestOutOfCorePlanMatchesInMemory(t *testing.T) {
	inputs := []string{
		writeTemp(t, "clean.csv", defectiveForest(rand.New(rand.NewPCG(3, 9)), 2000, false)),
		writeTemp(t, "defects.csv", defectiveForest(rand.New(rand.NewPCG(4, 9)), 2000, true)),
		// Large enough for the collections' sorts to merge runs from disk.
		writeTemp(t, "large.csv", defectiveForest(rand.New(rand.NewPCG(5, 9)), 60000, false)),
		"../fixtures/folders.json", "../fixtures/org.parquet", "../fixtures/bad/cycle.csv", "../fixtures/bad/duplicate-id.csv",
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
				got, gotProblems := oocPlan(t, path, l, &OutOfCore{Memory: 1 << 20, TmpDir: t.TempDir(), Layout: l, Force: true, Plan: true})
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
