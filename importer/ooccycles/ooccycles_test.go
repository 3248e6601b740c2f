package ooccycles

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/treeport/treeport/transform"
)

// node is a test's node: its parent is nodes[parent].
type node struct {
	row     int64
	id      string
	parent  int
	own     string
	problem string
}

// outcome is what Resolve tells: the cycles (entry's id, problem) in the
// order told, and each node's id, checked, reason in the order told.
type outcome struct {
	cycles []string
	done   []string
}

func resolve(t testing.TB, nodes []node, budget int) outcome {
	t.Helper()
	var out outcome
	at := make(map[string]int, len(nodes))
	for k, n := range nodes {
		at[n.id] = k
	}
	rec := func(b []byte) *node { return &nodes[at[string(b)]] }
	err := Resolve(context.Background(), Options{
		Dir: t.TempDir(), Budget: budget,
		Check: func(b []byte) string { return rec(b).problem },
		Cycle: func(b []byte, err error) error {
			out.cycles = append(out.cycles, rec(b).id+": "+err.Error())
			return nil
		},
		Done: func(b []byte, checked bool, reason string) error {
			out.done = append(out.done, fmt.Sprintf("%s %v %s", rec(b).id, checked, reason))
			return nil
		},
	}, func(add func(Node) error) error {
		for _, n := range nodes {
			if err := add(Node{Row: n.row, ID: n.id, Parent: nodes[n.parent].id, Own: n.own, Rec: []byte(n.id)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// reference is the walk of importer's cyclesInMemory (transform.Forest's
// cycles), on nodes in the order of their rows.
func reference(nodes []node) outcome {
	nodes = slices.Clone(nodes)
	order := make([]int, len(nodes))
	for k := range order {
		order[k] = k
	}
	slices.SortFunc(order, func(a, b int) int { return int(nodes[a].row - nodes[b].row) })
	type found struct {
		row  int64
		text string
	}
	var cycles []found
	state := make([]uint8, len(nodes))
	for _, k := range order {
		var walk []int
		c := k
		for state[c] == 0 {
			state[c] = 1
			walk = append(walk, c)
			c = nodes[c].parent
		}
		if state[c] == 1 {
			cyc := walk[slices.Index(walk, c):]
			ids := make([]string, len(cyc))
			for j, m := range cyc {
				ids[j] = nodes[m].id
			}
			err := transform.CycleError(ids)
			cycles = append(cycles, found{nodes[c].row, nodes[c].id + ": " + err.Error()})
			for _, m := range cyc {
				if nodes[m].own == "" {
					nodes[m].own = err.Error()
				}
			}
		}
		for _, w := range walk {
			state[w] = 2
		}
	}
	slices.SortFunc(cycles, func(a, b found) int { return int(a.row - b.row) })
	var out outcome
	for _, c := range cycles {
		out.cycles = append(out.cycles, c.text)
	}
	for k := range nodes {
		if nodes[k].own == "" {
			nodes[k].own = nodes[k].problem
		}
	}
	for _, k := range order {
		reason := nodes[k].own
		for a := k; reason == ""; {
			a = nodes[a].parent
			if nodes[a].own != "" {
				reason = transform.AncestorReason(nodes[a].id, errors.New(nodes[a].own)).Error()
			}
		}
		out.done = append(out.done, fmt.Sprintf("%s %v %s", nodes[k].id, nodes[k].problem != "", reason))
	}
	return out
}

// randomCycles is n nodes or a few more, each in or below a cycle:
// cycles of 2 to 41 members and trees hanging below them, at times a
// chain of a thousand or two below, at times a cycle of 2,000 alone, with reasons of their own and
// problems here and there, rows shuffled.
func randomCycles(rng *rand.Rand, n int) []node {
	nodes := make([]node, 0, n)
	for len(nodes) < n {
		first, size := len(nodes), 2+rng.IntN(40)
		if rng.IntN(4) == 0 {
			size = 2
		}
		for k := range size {
			nodes = append(nodes, node{id: fmt.Sprintf("c%d", first+k), parent: first + (k+1)%size})
		}
		for range rng.IntN(200) {
			nodes = append(nodes, node{id: fmt.Sprintf("t%d", len(nodes)), parent: first + rng.IntN(len(nodes)-first)})
		}
		switch rng.IntN(8) {
		case 0: // a chain far longer than the cycle, below it
			for range 1000 + rng.IntN(1000) {
				nodes = append(nodes, node{id: fmt.Sprintf("t%d", len(nodes)), parent: len(nodes) - 1})
			}
		case 1: // a cycle far longer than what hangs below it
			at := len(nodes)
			for k := range 2000 {
				nodes = append(nodes, node{id: fmt.Sprintf("c%d", at+k), parent: at + (k+1)%2000})
			}
		}
	}
	for k, r := range rng.Perm(len(nodes)) {
		nodes[k].row = int64(r) * 3
		switch rng.IntN(30) {
		case 0:
			nodes[k].own = "its own " + nodes[k].id
		case 1:
			nodes[k].problem = "its problem " + nodes[k].id
		}
	}
	return nodes
}

// TestResolveMatchesTheWalk: random sets of cycles and what hangs below
// them, resolved by the passes in small sorts, tell what the in-memory
// walk finds, in the same order.
func TestResolveMatchesTheWalk(t *testing.T) {
	for seed := range uint64(6) {
		nodes := randomCycles(rand.New(rand.NewPCG(seed, 27)), 300+int(seed)*700)
		got, want := resolve(t, nodes, 64<<10), reference(nodes)
		if !slices.Equal(got.cycles, want.cycles) {
			t.Errorf("seed %d: %d cycles told, %d by the walk:\n%s\n\n%s", seed, len(got.cycles), len(want.cycles),
				strings.Join(got.cycles[:min(5, len(got.cycles))], "\n"), strings.Join(want.cycles[:min(5, len(want.cycles))], "\n"))
		}
		if !slices.Equal(got.done, want.done) {
			k := 0
			for k < min(len(got.done), len(want.done))-1 && got.done[k] == want.done[k] {
				k++
			}
			t.Errorf("seed %d: %d nodes told, %d by the walk, from %d:\n%s\n%s", seed, len(got.done), len(want.done), k, got.done[k], want.done[k])
		}
	}
}

// TestResolveHeapBound: 300,000 nodes in one cycle, with a chain of
// 50,000 and a bush of 50,000 below it, resolve in sorts of 1 MiB (the
// least the import's passes use: --memory 1MiB) with a live heap bounded
// by the sorts and the files' buffers, not by the nodes (the in-memory
// pass held some 250 bytes a node: 100 MB here; under the race
// detector, a fifth of them).
func TestResolveHeapBound(t *testing.T) {
	if testing.Short() {
		t.Skip("400,000 nodes")
	}
	cycle, chain, bush := 300_000, 50_000, 50_000
	if raceEnabled {
		cycle, chain, bush = 60_000, 10_000, 10_000 // still some 20 MB in memory
	}
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	runtime.GC()
	before := liveHeap()
	var (
		peak uint64
		stop = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			peak = max(peak, liveHeap())
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	id := func(k int) string { return fmt.Sprintf("n%07d", k) }
	parent := func(k int) int {
		switch {
		case k < cycle:
			return (k + 1) % cycle
		case k == cycle:
			return cycle / 2
		case k < cycle+chain:
			return k - 1
		}
		return cycle + (k*7919)%(k-cycle)
	}
	var cycles, members, below int
	var entry string
	err := Resolve(context.Background(), Options{
		Dir: t.TempDir(), Budget: 1 << 20,
		Check: func([]byte) string { return "" },
		Cycle: func(rec []byte, err error) error {
			cycles++
			entry = string(rec) + ": " + err.Error()
			return nil
		},
		Done: func(rec []byte, checked bool, reason string) error {
			if strings.HasPrefix(reason, "transform: cycle") {
				members++
			} else if strings.Contains(reason, fmt.Sprintf(`ancestor "%s"`, id(cycle/2))) {
				below++
			}
			return nil
		},
	}, func(add func(Node) error) error {
		for k := range cycle + chain + bush {
			// Rows shuffled: the first is a member's, n0000000's.
			row := int64(k*104_729) % int64(cycle+chain+bush)
			if err := add(Node{Row: row, ID: id(k), Parent: id(parent(k)), Rec: []byte(id(k))}); err != nil {
				return err
			}
		}
		return nil
	})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if cycles != 1 || members != cycle || below != chain+bush {
		t.Fatalf("%d cycles, %d members, %d below with the member's reason; want 1, %d, %d", cycles, members, below, cycle, chain+bush)
	}
	if !strings.HasPrefix(entry, `n0000000: transform: cycle: "n0000000" → "n0000001" →`) || !strings.Contains(entry, fmt.Sprintf("(%d more)", cycle-20)) {
		t.Errorf("the cycle told: %.200s", entry)
	}
	t.Logf("a live heap of %d bytes above the start at its peak", peak-min(before, peak))
	if peak-min(before, peak) > 16<<20 {
		t.Errorf("a live heap of %d bytes above the start, want under 16 MiB (the sorts' budgets and the files' buffers)", peak-min(before, peak))
	}
}

func liveHeap() uint64 {
	m := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(m)
	return m[0].Value.Uint64()
}

// TestResolveCancelled: a context cancelled in the middle of a doubling
// pass ends Resolve with its error, soon, and no file is left in Dir.
func TestResolveCancelled(t *testing.T) {
	n := 200_000
	if raceEnabled {
		n = 50_000
	}
	nodes := randomCycles(rand.New(rand.NewPCG(9, 9)), n)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	var (
		cancelled time.Time
		second    bool
	)
	err := Resolve(ctx, Options{
		Dir: dir, Budget: 64 << 10,
		Phase: func(name string, done, _ int64) {
			// In the middle of the second pass: a run of its sort spilled.
			if name == "cycles: doubling (passes)" && done > 2 {
				t.Errorf("pass %d began after the cancel in pass 2", done)
			}
			second = second || name == "cycles: doubling (passes)" && done == 2
			if second && name == "cycles: doubling (bytes spilled)" && cancelled.IsZero() {
				cancelled = time.Now()
				cancel()
			}
		},
		Check: func([]byte) string { return "" },
		Cycle: func([]byte, error) error { return nil },
		Done:  func([]byte, bool, string) error { return nil },
	}, func(add func(Node) error) error {
		for _, n := range nodes {
			if err := add(Node{Row: n.row, ID: n.id, Parent: nodes[n.parent].id, Rec: []byte(n.id)}); err != nil {
				return err
			}
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || cancelled.IsZero() {
		t.Fatalf("Resolve: %v, cancelled at %v; want context.Canceled during the doubling", err, cancelled)
	}
	if d := time.Since(cancelled); d > time.Second {
		t.Errorf("Resolve returned %v after the cancel", d)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d files left in Dir", len(left))
	}
}
