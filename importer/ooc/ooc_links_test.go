package ooc_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/treeport/treeport/importer/ooc"
	"github.com/treeport/treeport/layouts"
)

// badLinkForest is a CSV forest for the prefix layout, in random order,
// with bad links and links to links by the ten thousand: bad links
// (to missing ids), some with a child that other links point at, and
// links to those (rejected a round later, then a round after); chains of
// eight links to a good node, to a bad link, and into cycles of links (a
// cycle's links at times parent and child); and a chain of long links.
func badLinkForest(rng *rand.Rand, bad, chains, long int) []byte {
	var rows []string
	add := func(id, parent, to string) { rows = append(rows, id+","+parent+","+to) }
	for k := range 1000 {
		add(fmt.Sprintf("t%d", k), "r", "")
	}
	for k := range bad {
		add(fmt.Sprintf("b%d", k), fmt.Sprintf("t%d", rng.IntN(1000)), fmt.Sprintf("missing%d", k))
		if k%10 == 3 {
			add(fmt.Sprintf("u%d", k), fmt.Sprintf("b%d", k), "")
			add(fmt.Sprintf("x%d", k), "r", fmt.Sprintf("u%d", k))
			add(fmt.Sprintf("y%d", k), fmt.Sprintf("t%d", rng.IntN(1000)), fmt.Sprintf("x%d", k))
		}
	}
	const cycles, cycleLen = 50, 5
	for j := range cycles {
		for k := range cycleLen {
			parent := fmt.Sprintf("t%d", rng.IntN(1000))
			if j%2 == 0 && k == 1 {
				parent = fmt.Sprintf("cy%d_0", j) // a cycle's links, parent and child
			}
			add(fmt.Sprintf("cy%d_%d", j, k), parent, fmt.Sprintf("cy%d_%d", j, (k+1)%cycleLen))
			add(fmt.Sprintf("cy%d_%d_leaf", j, k), fmt.Sprintf("cy%d_%d", j, k), "")
		}
	}
	for i := range chains {
		end := fmt.Sprintf("t%d", rng.IntN(1000))
		switch i % 4 {
		case 1:
			end = fmt.Sprintf("b%d", rng.IntN(bad))
		case 2:
			end = fmt.Sprintf("cy%d_%d", rng.IntN(cycles), rng.IntN(cycleLen))
		case 3:
			end = fmt.Sprintf("x%d", 10*rng.IntN(bad/10)+3)
		}
		for k := range 8 {
			to := fmt.Sprintf("c%d_%d", i, k+1)
			if k == 7 {
				to = end
			}
			add(fmt.Sprintf("c%d_%d", i, k), fmt.Sprintf("t%d", rng.IntN(1000)), to)
		}
	}
	for k := range long {
		to := fmt.Sprintf("L%d", k+1)
		if k == long-1 {
			to = "t0"
		}
		add(fmt.Sprintf("L%d", k), fmt.Sprintf("t%d", k%1000), to)
	}
	rng.Shuffle(len(rows), func(a, b int) { rows[a], rows[b] = rows[b], rows[a] })
	return []byte("id,parent_id,link_to\nr,,\n" + strings.Join(rows, "\n") + "\n")
}

// TestOutOfCoreLinksBeyondTheOldCap: ten thousand bad links and more
// links to links (chains to good nodes, to bad links and into cycles,
// a chain of thousands) in --memory 1MiB, which held a few hundred of
// them in a map before and refused more (issue 27), read out of core
// with the problems, counts, items and rejects of the in-memory import:
// the bad links' problems are a sorted file, the chains resolved by
// doubling over sorts. Nothing is left in the tmp dir.
func TestOutOfCoreLinksBeyondTheOldCap(t *testing.T) {
	l, err := layouts.New("prefix", layouts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := writeTemp(t, "links.csv", badLinkForest(rand.New(rand.NewPCG(27, 27)), 10000, 2000, 3000))
	tmp := t.TempDir()
	want := oocEmitAll(t, path, l, nil, 0)
	got := oocEmitAll(t, path, l, &ooc.OutOfCore{Memory: 1 << 20, TmpDir: tmp, Layout: l, Force: true}, 0)
	joined := strings.Join(want.problems, "\n")
	for _, kind := range []string{"not an id of the input", "a cycle of links", "a link that cannot be written", "the target was rejected"} {
		if !strings.Contains(joined, kind) {
			t.Fatalf("in memory, no link problem says %q: the input is not what the test means", kind)
		}
	}
	if len(want.problems) < 10000 || len(want.items) < 10000 {
		t.Fatalf("in memory: %d problems, %d items: the input is not what the test means", len(want.problems), len(want.items))
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
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("%d files left in the tmp dir", len(left))
	}
}
