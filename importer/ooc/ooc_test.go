package ooc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/importer/ooc"
	"github.com/treeport/treeport/importer/ooclinks"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/spill"
	"github.com/treeport/treeport/layouts"
)

// defectiveForest is a CSV forest of n nodes in random order (children
// often before parents), with, when defects is set, a few of each problem
// validation finds: duplicate ids, missing parents, a node that is its own
// parent, cycles with nodes hanging below them, an empty id, a ragged row,
// an id holding the path delimiter, and a deep chain whose Path goes over
// DynamoDB's sort key limit.
func defectiveForest(rng *rand.Rand, n int, defects bool) []byte {
	type row struct{ id, parent, name string }
	rows := make([]row, 0, n+64)
	for i := range n {
		parent := ""
		if i > 0 && rng.IntN(20) != 0 {
			parent = fmt.Sprintf("n%d", rng.IntN(i))
		}
		rows = append(rows, row{fmt.Sprintf("n%d", i), parent, fmt.Sprintf("name %d", rng.IntN(1000))})
	}
	var extra []string
	if defects {
		for k := range 3 {
			rows = append(rows, row{fmt.Sprintf("n%d", rng.IntN(n)), "", "a duplicate"})
			rows = append(rows, row{fmt.Sprintf("orphan%d", k), fmt.Sprintf("nowhere%d", k), "x"})
			rows = append(rows, row{fmt.Sprintf("below-orphan%d", k), fmt.Sprintf("orphan%d", k), "x"})
		}
		rows = append(rows, row{"self", "self", "x"}, row{"below-self", "self", "x"})
		rows = append(rows, row{"c1", "c3", "x"}, row{"c2", "c1", "x"}, row{"c3", "c2", "x"}, row{"below-cycle", "c2", "x"}, row{"below-below", "below-cycle", "x"})
		rows = append(rows, row{"d|elim", "n0", "x"}, row{"under-delim", "d|elim", "x"})
		// A chain of 60 ids of 40 bytes: its Path passes 1024 bytes near
		// its end, where the path layout's ByPath sort key is over.
		prev := "n1"
		for k := range 60 {
			id := fmt.Sprintf("deep%02d-%s", k, strings.Repeat("x", 33))
			rows = append(rows, row{id, prev, "x"})
			prev = id
		}
		extra = []string{",n2,empty id\n", "ragged,n3\n"}
	}
	rng.Shuffle(len(rows), func(a, b int) { rows[a], rows[b] = rows[b], rows[a] })
	var b bytes.Buffer
	b.WriteString("id,parent_id,name\n")
	for k, r := range rows {
		fmt.Fprintf(&b, "%s,%s,%s\n", r.id, r.parent, r.name)
		if k == len(rows)/2 {
			for _, e := range extra {
				b.WriteString(e)
			}
		}
	}
	return b.Bytes()
}

// emitted is what an import of the input with the layout does: the
// problems, the items in order as DynamoDB JSON lines, and the rejects.
type emitted struct {
	problems []string
	more     int
	rejected int
	roots    int
	items    []string
	rejects  string
	stats    importer.EmitStats
	kept     []string // Emit's items, read once all were emitted
}

func oocEmitAll(t *testing.T, path string, l layouts.Layout, oc *ooc.OutOfCore, keep int) emitted {
	t.Helper()
	ctx := context.Background()
	in, err := importer.ReadInput(ctx, importer.InputOptions{Path: path, MaxProblems: keep, OutOfCore: oc})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if in.OutOfCore() != (oc != nil) {
		t.Fatalf("read out of core: %v, want %v", in.OutOfCore(), oc != nil)
	}
	var e emitted
	for _, p := range in.CheckLayout(l) {
		e.problems = append(e.problems, p.Error())
	}
	e.more, e.rejected, e.roots = in.MoreProblems(), in.RejectedCount(), in.Roots()
	var rejects bytes.Buffer
	e.stats, err = in.EmitAttrs(ctx, importer.EmitOptions{Layout: l, Rejects: &rejects}, func(seq int64, item []layouts.Attr) error {
		m := make(layouts.Item, len(item))
		for _, a := range item {
			m[a.Name] = a.Value
		}
		e.items = append(e.items, fmt.Sprintf("%d %s", seq, ddbjson.AppendItem(nil, m)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e.rejects = rejects.String()
	// Emit's items are the caller's to keep: compared once all are in.
	var kept []layouts.Item
	if _, err := in.Emit(ctx, importer.EmitOptions{Layout: l}, func(_ int64, item layouts.Item) error {
		kept = append(kept, item)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, item := range kept {
		e.kept = append(e.kept, string(ddbjson.AppendItem(nil, item)))
	}
	return e
}

// TestOutOfCoreMatchesInMemory reads random forests, with every problem
// validation finds and without, in memory and out of core (with a budget
// small enough for the sorts to spill many runs), for every layout: the
// problems, the counts, the items (in order, numbered) and the rejects
// must be the same.
func TestOutOfCoreMatchesInMemory(t *testing.T) {
	for _, tc := range []struct {
		name    string
		nodes   int
		defects bool
		keep    int
		narrow  int // *ooc.NarrowLevels: 0 resolves all but the roots by doubling
	}{
		{"clean", 3000, false, 100, 24},
		{"defects", 3000, true, 100, 24},
		{"defects, few kept", 2000, true, 3, 24},
		{"defects, doubling after 4 levels", 2000, true, 100, 4},
		{"defects, doubling", 3000, true, 100, 0},
	} {
		for _, name := range layouts.Names() {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(tc.nodes), 9))
				path := writeTemp(t, "in.csv", defectiveForest(rng, tc.nodes, tc.defects))
				l, err := layouts.New(name, layouts.Options{})
				if err != nil {
					t.Fatal(err)
				}
				tmp := t.TempDir()
				defer func(n int) { *ooc.NarrowLevels = n }(*ooc.NarrowLevels)
				*ooc.NarrowLevels = tc.narrow
				want := oocEmitAll(t, path, l, nil, tc.keep)
				got := oocEmitAll(t, path, l, &ooc.OutOfCore{Memory: 1 << 20, TmpDir: tmp, Layout: l, Force: true}, tc.keep)
				if tc.defects && len(want.problems) < 5 {
					t.Fatalf("only %d problems in memory: the defects are not found", len(want.problems))
				}
				if !slices.Equal(got.problems, want.problems) {
					t.Errorf("problems out of core:\n%s\nin memory:\n%s", strings.Join(got.problems, "\n"), strings.Join(want.problems, "\n"))
				}
				if got.more != want.more || got.rejected != want.rejected || got.roots != want.roots || got.stats != want.stats {
					t.Errorf("out of core: %d more problems, %d rejected, %d roots, %+v; in memory: %d, %d, %d, %+v",
						got.more, got.rejected, got.roots, got.stats, want.more, want.rejected, want.roots, want.stats)
				}
				if !slices.Equal(got.items, want.items) {
					t.Errorf("%d items out of core, %d in memory, not the same", len(got.items), len(want.items))
				}
				if !slices.Equal(got.kept, want.kept) || len(got.kept) != len(got.items) {
					k := 0
					for k < min(len(got.kept), len(want.kept)) && got.kept[k] == want.kept[k] {
						k++
					}
					t.Errorf("Emit's items, kept: %d out of core, %d in memory, not the same from item %d:\n%s\n%s", len(got.kept), len(want.kept), k, got.kept[min(k, len(got.kept)-1)], want.kept[min(k, len(want.kept)-1)])
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

// TestOutOfCoreRefusesSmallTmpDir: a tmp dir without room for the passes
// is refused before the first pass, with the room they need (exit 2); so
// is one that cannot be written. Nothing is left behind.
func TestOutOfCoreRefusesSmallTmpDir(t *testing.T) {
	path := writeTemp(t, "in.csv", defectiveForest(rand.New(rand.NewPCG(1, 1)), 500, false))
	l, _ := layouts.New("path", layouts.Options{})
	tmp := t.TempDir()
	defer func(f func(string) (int64, bool)) { spill.FreeBytes = f }(spill.FreeBytes)
	spill.FreeBytes = func(string) (int64, bool) { return 1000, true }
	_, err := importer.ReadInput(context.Background(), importer.InputOptions{Path: path, OutOfCore: &ooc.OutOfCore{Memory: 1 << 20, TmpDir: tmp, Layout: l, Force: true}})
	if !errors.Is(err, ddbwrite.ErrUsage) || !strings.Contains(err.Error(), "has 1000 B free") || !strings.Contains(err.Error(), "need about") {
		t.Fatalf("err = %v, want a usage error with the room free and needed", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("%d files left in the tmp dir", len(left))
	}
	spill.FreeBytes = func(string) (int64, bool) { return 0, false }
	_, err = importer.ReadInput(context.Background(), importer.InputOptions{Path: path, OutOfCore: &ooc.OutOfCore{Memory: 1 << 20, TmpDir: path + "/not-a-dir", Layout: l, Force: true}})
	if !errors.Is(err, ddbwrite.ErrUsage) || !strings.Contains(err.Error(), "--tmp-dir") {
		t.Fatalf("err = %v, want a usage error naming --tmp-dir", err)
	}
}

// TestOutOfCoreDecision: a budget the input's forest fits in reads it in
// memory, as without one; a smaller one, out of core.
func TestOutOfCoreDecision(t *testing.T) {
	path := writeTemp(t, "in.csv", defectiveForest(rand.New(rand.NewPCG(1, 1)), 2000, false))
	l, _ := layouts.New("path", layouts.Options{})
	for _, tc := range []struct {
		memory int64
		oc     bool
	}{{1 << 30, false}, {64 << 10, true}} {
		in, err := importer.ReadInput(context.Background(), importer.InputOptions{Path: path, OutOfCore: &ooc.OutOfCore{Memory: tc.memory, TmpDir: t.TempDir(), Layout: l}})
		if err != nil {
			t.Fatal(err)
		}
		if in.OutOfCore() != tc.oc || (in.Forest == nil) != tc.oc {
			t.Errorf("--memory %d: out of core %v, want %v", tc.memory, in.OutOfCore(), tc.oc)
		}
		in.Close()
	}
}

// linkForest is a CSV forest for the prefix layout with links of every
// kind, n of them: to nodes, to links (chains), to missing ids, to
// themselves, to nodes the check rejects (an id holding the
// path delimiter), to nodes below bad links (a cascade of rounds), and
// cycles of links.
func linkForest(rng *rand.Rand, n int) []byte {
	var b strings.Builder
	b.WriteString("id,parent_id,link_to\nr,,\n")
	for k := range n / 4 {
		parent := "r"
		if k > 0 {
			parent = fmt.Sprintf("n%d", rng.IntN(k))
		}
		fmt.Fprintf(&b, "n%d,%s,\n", k, parent)
		if k%50 == 7 {
			fmt.Fprintf(&b, "bad|%d,n%d,\n", k, k)
		}
	}
	for k := range n {
		parent := fmt.Sprintf("n%d", rng.IntN(n/4))
		var to string
		kind := k % 40
		if k/40%2 == 1 {
			kind = 0 // half the rows of good links alone
		}
		switch kind {
		default:
			to = fmt.Sprintf("n%d", rng.IntN(n/4))
		case 32, 33:
			to = fmt.Sprintf("l%d", rng.IntN(n)) // a link to a link: a chain, at times a cycle
		case 34:
			to = fmt.Sprintf("missing%d", k)
		case 35:
			to = fmt.Sprintf("bad|%d", 50*rng.IntN(n/200)+7)
		case 36:
			to = fmt.Sprintf("l%d", k) // itself
		case 37:
			// a node below a bad link, and a link to it
			fmt.Fprintf(&b, "under%d,l%d,\n", k-3, k-3)
			to = fmt.Sprintf("under%d", k-3)
		case 39:
			to = fmt.Sprintf("l%d", (k+80)%min(n, 2000)) // a cycle of 25
		}
		fmt.Fprintf(&b, "l%d,%s,%s\n", k, parent, to)
	}
	return []byte(b.String())
}

// TestOutOfCoreLinksOnDisk: the prefix layout's links out of core are
// sorted and joined on disk, without a bound on their count: an input
// with many links of every kind, in a budget that makes their sorts spill
// (the good links alone were refused over a sixth of it before), reads,
// checks and emits as in memory (the bad links and the links to links
// beyond what a map held: TestOutOfCoreLinksBeyondTheOldCap). The filter
// of the links' ids (ooclinks.FilterBytes) only spares the sorts the
// other nodes.
//
// Under the race detector (raceScale) the input is 15,000 nodes, not
// 60,000, in a quarter of the 16 MiB, each sort in a tenth of that, not
// the 1 MiB floor (minSortBudget lowered): the links' sorts hold the same
// share of their data and spill (checked), and the counts below are a
// quarter.
func TestOutOfCoreLinksOnDisk(t *testing.T) {
	if raceScale > 1 {
		defer func(floor int64) { *ooc.MinSortBudget = floor }(*ooc.MinSortBudget)
		*ooc.MinSortBudget = 0
	}
	l, err := layouts.New("prefix", layouts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := writeTemp(t, "links.csv", linkForest(rand.New(rand.NewPCG(27, 3)), 60000/raceScale))
	tmp := t.TempDir()
	oc := &ooc.OutOfCore{Memory: 16 << 20 / raceScale, TmpDir: tmp, Layout: l, Force: true}
	runs := -1
	*ooc.TestOnBuilt = func(s *ooc.State) { runs = s.LinkRuns() }
	in, err := importer.ReadInput(context.Background(), importer.InputOptions{Path: path, OutOfCore: oc})
	*ooc.TestOnBuilt = nil
	if err != nil {
		t.Fatal(err)
	}
	if runs <= 0 {
		t.Fatalf("the links' sorts did not spill: the disk path is not tested")
	}
	t.Logf("the links' sorts: %d runs", runs)
	in.Close()
	want := oocEmitAll(t, path, l, nil, 0)
	got := oocEmitAll(t, path, l, oc, 0)
	// With a filter of one word, which lets through nearly every node:
	// the same.
	defer func(f func(int64) int64) { ooclinks.FilterBytes = f }(ooclinks.FilterBytes)
	ooclinks.FilterBytes = func(int64) int64 { return 8 }
	if all := oocEmitAll(t, path, l, oc, 0); !slices.Equal(all.problems, got.problems) || !slices.Equal(all.items, got.items) || all.rejects != got.rejects {
		t.Errorf("with a filter that lets every node through: %d problems, %d items; with one of the links: %d, %d", len(all.problems), len(all.items), len(got.problems), len(got.items))
	}
	t.Logf("in memory: %d problems, %d rejected, %d items", len(want.problems), want.rejected, len(want.items))
	if len(want.problems) < 1000/raceScale || want.rejected < 1000/raceScale || len(want.items) < 50000/raceScale {
		t.Fatalf("in memory: %d problems, %d rejected, %d items: the input is not what the test means", len(want.problems), want.rejected, len(want.items))
	}
	var kinds []string
	for _, kind := range []string{"not an id of the input", "links to itself", "a cycle of links", "a link that cannot be written", "the target was rejected"} {
		if !strings.Contains(strings.Join(want.problems, "\n"), kind) {
			kinds = append(kinds, kind)
		}
	}
	if len(kinds) > 0 {
		t.Fatalf("in memory, no link problem says %q", kinds)
	}
	if !slices.Equal(got.problems, want.problems) {
		k := 0
		for k < min(len(got.problems), len(want.problems)) && got.problems[k] == want.problems[k] {
			k++
		}
		t.Fatalf("problems: %d out of core, %d in memory, not the same from %d:\n%s\n%s", len(got.problems), len(want.problems), k,
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
		t.Errorf("rejects out of core and in memory are not the same")
	}
}

// deepForest is a CSV forest of chains, in random order: one of depth
// chain with a few branches, a problem at mid depth (an id holding the
// path delimiter) and a missing parent at the top of a second chain;
// a long cycle, and a long chain hanging below a short one.
func deepForest(rng *rand.Rand, chain int) []byte {
	type row struct{ id, parent string }
	var rows []row
	add := func(prefix string, n int, top string) string {
		prev := top
		for k := range n {
			id := fmt.Sprintf("%s%d", prefix, k)
			if k == n/2 && prefix == "a" {
				id = "a|mid"
			}
			rows = append(rows, row{id, prev})
			if k%97 == 5 {
				rows = append(rows, row{id + "-leaf", id})
			}
			prev = id
		}
		return prev
	}
	add("a", chain, "")
	add("m", chain/4, "missing")
	add("cyc", chain/3, "cyc"+fmt.Sprint(chain/3-1)) // cyc0's parent is the last of its chain
	rows = append(rows, row{"s0", "s2"}, row{"s1", "s0"}, row{"s2", "s1"})
	add("below", chain/2, "s1")
	rng.Shuffle(len(rows), func(a, b int) { rows[a], rows[b] = rows[b], rows[a] })
	var b bytes.Buffer
	b.WriteString("id,parent_id\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%s,%s\n", r.id, r.parent)
	}
	return b.Bytes()
}

// TestOutOfCoreDeepChains reads deep chains, with a problem and a missing
// parent at depth, a long cycle and a long chain below a cycle, in memory
// and out of core (resolved by doubling): the problems, the counts, the
// items and the rejects must be the same. The deepest chain is read with
// the layouts whose paths are bounded (their keys hold the path: a node
// too deep is rejected, and its descendants carry no path) and with
// adjacency, whose nodes carry no path at all; its passes' doubling
// sorts merge runs from disk (checked).
//
// Under the race detector (raceScale) the closure reads a chain of 500,
// not 2,000: a closure's rows grow as the square of the depth (2,000 made
// a million rows, 135 s under -race), and nothing in its keys is bounded
// by the depth; its sorts fit in memory at either size. The deepest chain
// is 7,500, not 30,000, with each sort in a tenth of the 1 MiB budget,
// not the floor (minSortBudget lowered), so that the doubling's sorts
// still spill; the paths still pass the key limit a few hundred levels
// down, far above the problem at mid depth.
func TestOutOfCoreDeepChains(t *testing.T) {
	var bounded []string
	for _, name := range layouts.Names() {
		if name != layouts.ClosureName {
			bounded = append(bounded, name)
		}
	}
	for _, tc := range []struct {
		chain   int
		layouts []string
		spills  bool
	}{
		{2000, bounded, false},
		{2000 / raceScale, []string{layouts.ClosureName}, false},
		// Adjacency carries no path through the passes (layouts.NeedsPath).
		{30000 / raceScale, []string{"path", "adjacency"}, true},
	} {
		for _, name := range tc.layouts {
			t.Run(fmt.Sprintf("%d/%s", tc.chain, name), func(t *testing.T) {
				if tc.spills && raceScale > 1 {
					defer func(floor int64) { *ooc.MinSortBudget = floor }(*ooc.MinSortBudget)
					*ooc.MinSortBudget = 0
				}
				path := writeTemp(t, "in.csv", deepForest(rand.New(rand.NewPCG(uint64(tc.chain), 3)), tc.chain))
				l, err := layouts.New(name, layouts.Options{})
				if err != nil {
					t.Fatal(err)
				}
				tmp := t.TempDir()
				var phases []string
				oc := &ooc.OutOfCore{Memory: 1 << 20, TmpDir: tmp, Layout: l, Force: true, OnPhase: func(p string, _, _ int64) {
					if len(phases) == 0 || phases[len(phases)-1] != p {
						phases = append(phases, p)
					}
				}}
				want := oocEmitAll(t, path, l, nil, 50)
				got := oocEmitAll(t, path, l, oc, 50)
				if !slices.Contains(phases, "doubling (nodes left)") {
					t.Errorf("not resolved by doubling: phases %q", phases)
				}
				if tc.spills && !slices.Contains(phases, "doubling (by id) (bytes spilled)") {
					t.Errorf("the doubling's sorts did not spill: phases %q", phases)
				}
				if len(want.problems) < 3 || want.rejected < tc.chain {
					t.Fatalf("in memory: %d problems, %d rejected: the defects are not found", len(want.problems), want.rejected)
				}
				if !slices.Equal(got.problems, want.problems) {
					t.Errorf("problems out of core:\n%s\nin memory:\n%s", strings.Join(got.problems, "\n"), strings.Join(want.problems, "\n"))
				}
				if got.more != want.more || got.rejected != want.rejected || got.roots != want.roots || got.stats != want.stats {
					t.Errorf("out of core: %d more problems, %d rejected, %d roots, %+v; in memory: %d, %d, %d, %+v",
						got.more, got.rejected, got.roots, got.stats, want.more, want.rejected, want.roots, want.stats)
				}
				if !slices.Equal(got.items, want.items) {
					t.Errorf("%d items out of core, %d in memory, not the same", len(got.items), len(want.items))
				}
				if got.rejects != want.rejects {
					t.Errorf("rejects out of core differ (%d bytes, %d in memory)", len(got.rejects), len(want.rejects))
				}
				if left, _ := os.ReadDir(tmp); len(left) != 0 {
					t.Errorf("%d files left in the tmp dir", len(left))
				}
			})
		}
	}
}

// TestOutOfCoreShards: each shard of an import read out of core (which
// passes over the nodes of another shard's ids without building their
// items, but in prefix) emits the items, numbered, and the
// counts of that shard read in memory; together the shards emit every
// item once.
func TestOutOfCoreShards(t *testing.T) {
	path := writeTemp(t, "in.csv", deepForest(rand.New(rand.NewPCG(600, 3)), 600))
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			l, err := layouts.New(name, layouts.Options{})
			if err != nil {
				t.Fatal(err)
			}
			emit := func(oc *ooc.OutOfCore, shard ddbwrite.Shard) ([]string, importer.EmitStats) {
				in, err := importer.ReadInput(context.Background(), importer.InputOptions{Path: path, MaxProblems: 50, OutOfCore: oc})
				if err != nil {
					t.Fatal(err)
				}
				defer in.Close()
				in.CheckLayout(l)
				var items []string
				st, err := in.EmitAttrs(context.Background(), importer.EmitOptions{Layout: l, Shard: shard}, func(seq int64, item []layouts.Attr) error {
					m := make(layouts.Item, len(item))
					for _, a := range item {
						m[a.Name] = a.Value
					}
					items = append(items, fmt.Sprintf("%d %s", seq, ddbjson.AppendItem(nil, m)))
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				return items, st
			}
			all, _ := emit(nil, ddbwrite.Shard{})
			var union []string
			for k := range 3 {
				shard := ddbwrite.Shard{K: k, Of: 3}
				want, wantSt := emit(nil, shard)
				got, gotSt := emit(&ooc.OutOfCore{Memory: 1 << 20, TmpDir: t.TempDir(), Layout: l, Force: true}, shard)
				if !slices.Equal(got, want) || gotSt != wantSt {
					t.Errorf("shard %d: %d items out of core (%+v), %d in memory (%+v), not the same", k, len(got), gotSt, len(want), wantSt)
				}
				if len(got) == 0 {
					t.Errorf("shard %d: no item", k)
				}
				union = append(union, got...)
			}
			slices.SortFunc(union, func(a, b string) int {
				var x, y int64
				fmt.Sscan(a, &x)
				fmt.Sscan(b, &y)
				return int(x - y)
			})
			if !slices.Equal(union, all) {
				t.Errorf("the shards' %d items together are not the %d items of the whole", len(union), len(all))
			}
		})
	}
}

// TestOutOfCoreParentChangedSinceRead: a row whose parent is no longer
// the one the passes read (the file was edited in between) is refused by
// the emit out of core in every layout, adjacency too, whose nodes carry
// no path that would tell it.
func TestOutOfCoreParentChangedSinceRead(t *testing.T) {
	ctx := context.Background()
	for _, name := range layouts.Names() {
		l, err := layouts.New(name, layouts.Options{})
		if err != nil {
			t.Fatal(err)
		}
		path := writeTemp(t, "in.csv", []byte("id,parent_id,n\na,,1\nb,a,2\nc,b,3\nd,a,4\n"))
		in, err := importer.ReadInput(ctx, importer.InputOptions{Path: path, OutOfCore: &ooc.OutOfCore{Memory: 1 << 20, TmpDir: t.TempDir(), Layout: l, Force: true}})
		if err != nil {
			t.Fatal(err)
		}
		// c's parent is now d, of the same length.
		if err := os.WriteFile(path, []byte("id,parent_id,n\na,,1\nb,a,2\nc,d,3\nd,a,4\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, gerr := in.EmitAttrs(ctx, importer.EmitOptions{Layout: l}, func(int64, []layouts.Attr) error { return nil })
		in.Close()
		if gerr == nil || !strings.Contains(gerr.Error(), `"c"`) || !strings.Contains(gerr.Error(), "in.csv:4") {
			t.Errorf("%s: a parent changed since the passes read it: %v", name, gerr)
		}
	}
}

// TestLinksLongChain: a long chain of links to a bad one makes every link
// of it bad, in memory and out of core alike, with the same problems, in
// time linear in the links (badChains: a pass over the links for each
// step of the chain took minutes for this one).
func TestLinksLongChain(t *testing.T) {
	l, err := layouts.New("prefix", layouts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 30000
	var b strings.Builder
	b.WriteString("id,parent_id,link_to\nr,,\n")
	for k := range n {
		fmt.Fprintf(&b, "n%d,r,n%d\n", k, k+1) // n30000 is not an id
	}
	path := writeTemp(t, "chain.csv", []byte(b.String()))
	var got [2][]string
	for m, o := range []*ooc.OutOfCore{nil, {Memory: 256 << 20, TmpDir: t.TempDir(), Layout: l, Force: true}} {
		in, err := importer.ReadInput(context.Background(), importer.InputOptions{Path: path, OutOfCore: o})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range in.CheckLayout(l) {
			got[m] = append(got[m], p.Error())
		}
		in.Close()
	}
	if len(got[0]) != n || !slices.Equal(got[0], got[1]) {
		t.Fatalf("%d problems in memory, %d out of core (want %d, the same)", len(got[0]), len(got[1]), n)
	}
	if want := `chain.csv:4: id "n1": transform: bad link: link_to "n2": the target is a link that cannot be written`; !strings.HasSuffix(got[1][1], want) {
		t.Errorf("n1's problem: %s, want …%s", got[1][1], want)
	}
}
