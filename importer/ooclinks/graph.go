package ooclinks

import (
	"fmt"
	"maps"
	"slices"

	"github.com/treeport/treeport/transform"
)

// BadChains takes from links (link → target) each link whose target is
// bad, down every chain of links, telling setBad of each: a walk back
// from the bad ones, in time linear in the links (a long chain to a bad
// link is one walk, not a pass over the links for each of its steps).
func BadChains(links map[int32]int32, isBad func(int32) bool, setBad func(i, t int32)) {
	into := map[int32][]int32{} // target → the links to it
	var queue []int32
	for i, t := range links {
		into[t] = append(into[t], i)
		if isBad(t) {
			queue = append(queue, t)
		}
	}
	slices.Sort(queue)
	queue = slices.Compact(queue)
	for len(queue) > 0 {
		t := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		for _, i := range into[t] {
			if _, ok := links[i]; !ok {
				continue
			}
			setBad(i, t)
			delete(links, i)
			queue = append(queue, i)
		}
	}
}

// BadChainError is the problem of a link whose target is a link that
// cannot be written.
func BadChainError(target string) error {
	return fmt.Errorf("%w: %s %q: the target is a link that cannot be written", transform.ErrLink, transform.LinkAttr, target)
}

// Cycles returns the problem of each link that is on a cycle of
// links (CycleError), naming the cycle's ids in link order from the one
// first in the input (the lowest index: id gives each one's id), the
// first MaxCycleIDs of them.
func Cycles(id func(int32) string, links map[int32]int32) map[int32]error {
	const (
		unseen = iota
		walking
		done
	)
	state := map[int32]int{}
	out := map[int32]error{}
	for _, start := range slices.Sorted(maps.Keys(links)) {
		if state[start] != unseen {
			continue
		}
		var walk []int32
		i := start
		for {
			state[i] = walking
			walk = append(walk, i)
			t, ok := links[i]
			if !ok || state[t] == done {
				break
			}
			if state[t] == walking {
				// The cycle is the walk from t on.
				k := 0
				for walk[k] != t {
					k++
				}
				cycle := walk[k:]
				// From its first node in the input, whichever link the
				// walk came in by.
				m := slices.Index(cycle, slices.Min(cycle))
				cycle = append(slices.Clone(cycle[m:]), cycle[:m]...)
				ids := make([]string, 0, min(len(cycle), MaxCycleIDs))
				for _, c := range cycle[:min(len(cycle), MaxCycleIDs)] {
					ids = append(ids, id(c))
				}
				err := CycleError(ids, len(cycle))
				for _, c := range cycle {
					out[c] = err
				}
				break
			}
			i = t
		}
		for _, w := range walk {
			state[w] = done
		}
	}
	return out
}
