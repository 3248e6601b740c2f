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
	"testing"

	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/importer/ooc"
	"github.com/treeport/treeport/internal/diskmap"
	"github.com/treeport/treeport/layouts"
)

// reservedForest is a JSON Lines forest of n nodes in random order where
// most records carry one or several of the names reserved (their values
// vary), some ids are given twice (a carrier and not, or two carriers),
// and a few nodes hang below a carrier.
func reservedForest(rng *rand.Rand, n int, reserved []string) []byte {
	type rec = map[string]any
	recs := make([]rec, 0, n+n/50)
	for i := range n {
		r := rec{"id": fmt.Sprintf("n%d", i), "name": fmt.Sprint(rng.IntN(1000))}
		if i > 0 && rng.IntN(10) != 0 {
			r["parent_id"] = fmt.Sprintf("n%d", rng.IntN(i))
		}
		switch k := rng.IntN(10); {
		case k < 6:
			r[reserved[rng.IntN(len(reserved))]] = "x"
		case k < 8:
			for range 2 + rng.IntN(3) {
				r[reserved[rng.IntN(len(reserved))]] = rng.IntN(9)
			}
		}
		recs = append(recs, r)
	}
	for range n / 50 {
		r := rec{"id": fmt.Sprintf("n%d", rng.IntN(n)), "name": "a duplicate"}
		if rng.IntN(2) == 0 {
			r[reserved[rng.IntN(len(reserved))]] = true
		}
		recs = append(recs, r)
	}
	rng.Shuffle(len(recs), func(a, b int) { recs[a], recs[b] = recs[b], recs[a] })
	var b strings.Builder
	for _, r := range recs {
		line, _ := json.Marshal(r)
		b.Write(line)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// TestOutOfCoreReservedCarriersSpill: an input whose records mostly carry
// names the layout reserves (several some, duplicate ids), in every
// layout, read out of core in a 1 MiB budget: the carriers' map spills to
// files in the passes' directory, and the problems (in order), the
// counts, the items and the rejects are those of the import in memory;
// nothing is left in the tmp dir. Under the race detector 12,000 records,
// not 24,000: the map (at its 1 MiB floor, diskmap.MinMemory) still
// spills, in 3 runs (checked: 2 runs or more).
func TestOutOfCoreReservedCarriersSpill(t *testing.T) {
	n := 24_000
	if raceScale > 1 {
		n = 12_000
	}
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			l, err := layouts.New(name, layouts.Options{})
			if err != nil {
				t.Fatal(err)
			}
			reserved := slices.Clone(l.Reserved())
			if name == layouts.PrefixName {
				reserved = append(reserved, layouts.DefaultPrefixDelimiter+"starts")
			}
			if len(reserved) == 0 {
				t.Fatalf("%s reserves no name", name)
			}
			rng := rand.New(rand.NewPCG(uint64(len(name)), 27))
			path := writeTemp(t, "in.jsonl", reservedForest(rng, n, reserved))
			var carriers int64
			var runs int
			*ooc.TestOnCarriers = func(dir string, m *diskmap.Map) {
				carriers = m.Len()
				files, _ := filepath.Glob(filepath.Join(dir, "treeport-diskmap-*", "run-*"))
				runs = len(files)
			}
			defer func() { *ooc.TestOnCarriers = nil }()
			tmp := t.TempDir()
			const keep = 50_000
			want := oocEmitAll(t, path, l, nil, keep)
			got := oocEmitAll(t, path, l, &ooc.OutOfCore{Memory: 1 << 20, TmpDir: tmp, Layout: l, Force: true}, keep)
			if carriers < int64(n/2) || runs < 2 {
				t.Errorf("%d carriers in %d runs: the map did not spill", carriers, runs)
			}
			t.Logf("%d carriers, %d runs; %d problems in memory, e.g. %s", carriers, runs, len(want.problems), want.problems[len(want.problems)/2])
			if len(want.problems) < n/2 {
				t.Fatalf("only %d problems in memory: the reserved names are not found", len(want.problems))
			}
			if !slices.Equal(got.problems, want.problems) {
				k := 0
				for k < min(len(got.problems), len(want.problems)) && got.problems[k] == want.problems[k] {
					k++
				}
				t.Errorf("problems: %d out of core, %d in memory, not the same from %d:\n%s\n%s", len(got.problems), len(want.problems), k,
					got.problems[min(k, len(got.problems)-1)], want.problems[min(k, len(want.problems)-1)])
			}
			if got.more != want.more || got.rejected != want.rejected || got.roots != want.roots || got.stats != want.stats {
				t.Errorf("out of core: %d more problems, %d rejected, %d roots, %+v; in memory: %d, %d, %d, %+v",
					got.more, got.rejected, got.roots, got.stats, want.more, want.rejected, want.roots, want.stats)
			}
			if !slices.Equal(got.items, want.items) || !slices.Equal(got.kept, want.kept) {
				t.Errorf("%d items out of core, %d in memory, not the same", len(got.items), len(want.items))
			}
			if got.rejects != want.rejects {
				t.Errorf("rejects out of core (%d bytes) are not those in memory (%d bytes)", len(got.rejects), len(want.rejects))
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("%d files left in the tmp dir", len(left))
			}
		})
	}
}

// TestOutOfCoreReservedCarriersCancel: a read cancelled (Ctrl-C) once the
// carriers' map has spilled stops with the context's error and leaves
// nothing in the tmp dir: the map's runs are removed with the passes'.
func TestOutOfCoreReservedCarriersCancel(t *testing.T) {
	l, err := layouts.New(layouts.PathName, layouts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := writeTemp(t, "in.jsonl", reservedForest(rand.New(rand.NewPCG(1, 2)), 24_000, l.Reserved()))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var runs int
	*ooc.TestOnCarriers = func(dir string, m *diskmap.Map) {
		files, _ := filepath.Glob(filepath.Join(dir, "treeport-diskmap-*", "run-*"))
		runs = len(files)
		cancel()
	}
	defer func() { *ooc.TestOnCarriers = nil }()
	tmp := t.TempDir()
	in, err := importer.ReadInput(ctx, importer.InputOptions{Path: path, MaxProblems: 10, OutOfCore: &ooc.OutOfCore{Memory: 1 << 20, TmpDir: tmp, Layout: l, Force: true}})
	if err == nil {
		in.Close()
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("importer.ReadInput: %v, want the context's cancel", err)
	}
	if runs == 0 {
		t.Errorf("the carriers' map had not spilled: the case tests nothing")
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("%d files left in the tmp dir (%s)", len(left), left[0].Name())
	}
}
