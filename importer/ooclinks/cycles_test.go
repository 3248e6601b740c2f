package ooclinks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/spill"
	"github.com/treeport/treeport/transform"
)

// graph is an input of links for the tests of the cycles: each link's
// target, and the rows of the nodes (links and the others) in the input.
type graph struct {
	links map[string]string
	rows  map[string]int64
}

// shape builds a graph: cycles of the given lengths, each with chains of
// links into it (at random links of it, of random lengths up to tail,
// or up to 3 for a cycle past the first few), chains to a node that is no
// link and to a missing id, and links whose
// rows are shuffled, so that a cycle's first link is not its least id.
func shape(r *rand.Rand, cycles []int, tail int) graph {
	g := graph{links: map[string]string{}, rows: map[string]int64{}}
	id := func(kind string) string { return fmt.Sprintf("%s%06d", kind, r.IntN(1_000_000_000)) }
	for c, n := range cycles {
		if c == 30 {
			tail = min(tail, 3)
		}
		var ids []string
		for range n {
			ids = append(ids, id("c"))
		}
		for k, x := range ids {
			g.links[x] = ids[(k+1)%n]
		}
		for range r.IntN(3) {
			to := ids[r.IntN(n)]
			for range 1 + r.IntN(tail) {
				x := id("i")
				g.links[x] = to
				to = x
			}
		}
	}
	for _, end := range []string{"t", "missing"} {
		to := end
		for range 1 + r.IntN(tail) {
			x := id("k")
			g.links[x] = to
			to = x
		}
	}
	var ids []string
	for x := range g.links {
		ids = append(ids, x)
	}
	ids = append(ids, "t")
	r.Shuffle(len(ids), func(a, b int) { ids[a], ids[b] = ids[b], ids[a] })
	for k, x := range ids {
		g.rows[x] = int64(k)
	}
	return g
}

// inMemory is what the in-memory import finds of g's links (readLinks:
// Cycles, then BadChains), by id.
func (g graph) inMemory() map[string]string {
	byRow := make([]string, len(g.rows))
	for x, row := range g.rows {
		byRow[row] = x
	}
	links := map[int32]int32{}
	bad := map[int32]error{}
	for x, to := range g.links {
		i := int32(g.rows[x])
		if t, ok := g.rows[to]; ok {
			links[i] = int32(t)
		} else {
			bad[i] = fmt.Errorf("%w: %s %q is not an id of the input; a link's row holds its target's key, its path, so the target must be in the input", transform.ErrLink, transform.LinkAttr, to)
		}
	}
	for i, err := range Cycles(func(i int32) string { return byRow[i] }, links) {
		bad[i] = err
		delete(links, i)
	}
	BadChains(links, func(i int32) bool { _, ok := bad[i]; return ok }, func(i, t int32) {
		bad[i] = BadChainError(byRow[t])
	})
	out := map[string]string{}
	for i, err := range bad {
		out[byRow[i]] = err.Error()
	}
	return out
}

// outOfCore is what the first round of Links finds of g's links, by id,
// in sorts of budget bytes.
func (g graph) outOfCore(t *testing.T, budget int) map[string]string {
	t.Helper()
	dir, err := spill.New(t.TempDir(), "links", "the test")
	if err != nil {
		t.Fatal(err)
	}
	lk := New(dir, budget, 1<<20)
	defer lk.Close()
	for x, to := range g.links {
		if err := lk.Add(x, &types.AttributeValueMemberS{Value: to}); err != nil {
			t.Fatal(err)
		}
	}
	if err := lk.Done(); err != nil {
		t.Fatal(err)
	}
	lk.Round()
	for x, row := range g.rows {
		if err := lk.Seen(x, row, 0, int(row)+1, false, false, []string{"r", x}); err != nil {
			t.Fatal(err)
		}
	}
	if err := lk.Settle(context.Background(), func(file, line int) string { return fmt.Sprint(line) }); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for x, err := range problems(t, lk) {
		out[x] = err.Error()
	}
	return out
}

// sameProblems compares the problems out of core with those in memory.
func sameProblems(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d problems out of core, %d in memory", len(got), len(want))
	}
	n := 0
	for x, w := range want {
		if got[x] != w {
			if n++; n <= 5 {
				t.Errorf("link %s: out of core %q, in memory %q", x, got[x], w)
			}
		}
	}
}

// TestCyclesMatchInMemory: the cycles of links found by the sorted
// passes, and the chains into them, have the problems Cycles and
// BadChains find in memory, text for text: many small cycles, long ones
// (their ids past the twentieth counted), chains into each, beside
// chains to a good node and to a bad link, in sorts that spill.
func TestCyclesMatchInMemory(t *testing.T) {
	cases := []struct {
		name   string
		cycles []int
		tail   int
	}{
		{"one cycle of two", []int{2}, 1},
		{"many small cycles", []int{2, 3, 2, 4, 5, 2, 3, 7, 2, 2, 6, 3, 2, 19, 20, 21, 22}, 4},
		{"a cycle of 3 and a long chain into it", []int{3}, 3000},
		{"a cycle of 21 and long chains into it", []int{21}, 300},
		{"long cycles", []int{1000, 33, 4096, 2}, 50},
	}
	for k, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(k), 27))
			// A thousand more small cycles beside them (250 under the race
			// detector, raceScale: the sorts of 1 KiB spill either way).
			var many []int
			for range 1000 / raceScale {
				many = append(many, 2+r.IntN(4))
			}
			for _, cycles := range [][]int{tc.cycles, append(tc.cycles, many...)} {
				g := shape(r, cycles, tc.tail)
				want := g.inMemory()
				sameProblems(t, g.outOfCore(t, 1<<10), want)
				cycled := 0
				for _, msg := range want {
					if strings.Contains(msg, "a cycle of links") {
						cycled++
						if len(msg) > 40*(MaxCycleIDs+3) {
							t.Fatalf("a problem of %d bytes: %.200s...", len(msg), msg)
						}
					}
				}
				sum := 0
				for _, n := range cycles {
					sum += n
				}
				if cycled != sum {
					t.Errorf("%d links on a cycle in memory, want %d", cycled, sum)
				}
			}
		})
	}
}

// TestCycleError: a cycle's problem names its first MaxCycleIDs ids and
// counts the rest, as a cycle of parents's does.
func TestCycleError(t *testing.T) {
	for _, tc := range []struct {
		ids  []string
		n    int
		want string
	}{
		{[]string{"b", "c"}, 2, `transform: bad link: a cycle of links: "b" → "c" → "b"`},
		{strings.Split("a b c d e f g h i j k l m n o p q r s t", " "), 20, `transform: bad link: a cycle of links: "a" → "b" → "c" → "d" → "e" → "f" → "g" → "h" → "i" → "j" → "k" → "l" → "m" → "n" → "o" → "p" → "q" → "r" → "s" → "t" → "a"`},
		{strings.Split("a b c d e f g h i j k l m n o p q r s t", " "), 5000, `transform: bad link: a cycle of links: "a" → "b" → "c" → "d" → "e" → "f" → "g" → "h" → "i" → "j" → "k" → "l" → "m" → "n" → "o" → "p" → "q" → "r" → "s" → "t" → … (4980 more) → "a"`},
	} {
		if got := CycleError(tc.ids, tc.n).Error(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}
