package exporter

import (
	"cmp"
	"slices"
	"strings"

	"github.com/treeport/treeport/transform"
)

// SortRecords puts records in the order treeport writes them, so that two
// exports of the same data are byte for byte the same and diff cleanly: the
// trees by their root's id, each tree in pre-order (a node, then its
// children's subtrees), siblings by id. Ids compare as bytes. A subtree is
// one contiguous run of lines, so an export of one subtree (--root) is a
// slice of the export of its table.
//
// A record whose parent is not among recs starts a tree of its own (sorted
// among the roots); records caught in a cycle come last, by id. A duplicate
// id follows the first record of that id among its siblings. SortRecords
// returns a new slice and does not change recs or the records; it runs in
// O(n log n) time, with no recursion however deep the trees are.
func SortRecords(recs []*transform.Record) []*transform.Record {
	index := make(map[string]int, len(recs))
	for i, r := range recs {
		if _, dup := index[r.ID]; !dup {
			index[r.ID] = i
		}
	}
	// children[i] lists the records whose parent is record i; the roots
	// (and orphans) go under -1.
	children := make(map[int][]int, len(recs)/2+1)
	for i, r := range recs {
		p := -1
		if r.Parent != "" {
			if j, ok := index[r.Parent]; ok {
				p = j
			}
		}
		children[p] = append(children[p], i)
	}
	byID := func(a, b int) int {
		if c := strings.Compare(recs[a].ID, recs[b].ID); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	}
	for _, kids := range children {
		slices.SortFunc(kids, byID)
	}
	out := make([]*transform.Record, 0, len(recs))
	seen := make([]bool, len(recs))
	// The stack holds what is left to visit, last first.
	stack := slices.Clone(children[-1])
	slices.Reverse(stack)
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[i] {
			continue
		}
		seen[i] = true
		out = append(out, recs[i])
		kids := children[i]
		for k := len(kids) - 1; k >= 0; k-- {
			stack = append(stack, kids[k])
		}
	}
	if len(out) < len(recs) {
		var rest []int
		for i := range recs {
			if !seen[i] {
				rest = append(rest, i)
			}
		}
		slices.SortFunc(rest, byID)
		for _, i := range rest {
			out = append(out, recs[i])
		}
	}
	return out
}

// ForestCheck counts what keeps records from being a forest: records whose
// parent is not among them, ids that appear more than once, and records in
// a cycle (or below one).
type ForestCheck struct {
	Orphans    int
	Duplicates int
	InCycles   int
	// Examples holds the first few ids of each problem.
	OrphanIDs, DuplicateIDs, CycleIDs []string
}

// OK reports whether the records are a forest.
func (c ForestCheck) OK() bool { return c.Orphans == 0 && c.Duplicates == 0 && c.InCycles == 0 }

// CheckForest checks that recs are a forest; the first examples of each
// problem are kept in id order.
func CheckForest(recs []*transform.Record) ForestCheck {
	const examples = 10
	var c ForestCheck
	ids := make(map[string]int, len(recs))
	for _, r := range recs {
		ids[r.ID]++
	}
	parent := make(map[string]string, len(recs))
	for _, r := range recs {
		parent[r.ID] = r.Parent
		if n := ids[r.ID]; n > 1 {
			c.Duplicates++
			c.DuplicateIDs = append(c.DuplicateIDs, r.ID)
		}
		if r.Parent != "" && ids[r.Parent] == 0 {
			c.Orphans++
			c.OrphanIDs = append(c.OrphanIDs, r.ID)
		}
	}
	// A node is in a cycle, or below one, when walking up from it never
	// reaches a root or an orphan. state: 1 on the current walk, 2 fine,
	// 3 in or below a cycle.
	state := make(map[string]int8, len(parent))
	var walk []string
	for id := range parent {
		walk = walk[:0]
		cur := id
		verdict := int8(2)
		for {
			if s := state[cur]; s != 0 {
				if s == 1 {
					verdict = 3
				} else {
					verdict = s
				}
				break
			}
			p, ok := parent[cur]
			if !ok || p == "" {
				state[cur] = 2
				break
			}
			state[cur] = 1
			walk = append(walk, cur)
			if _, ok := parent[p]; !ok {
				break
			}
			cur = p
		}
		for _, w := range walk {
			state[w] = verdict
		}
	}
	for id, s := range state {
		if s == 3 {
			c.InCycles += ids[id]
			c.CycleIDs = append(c.CycleIDs, id)
		}
	}
	for _, l := range []*[]string{&c.OrphanIDs, &c.DuplicateIDs, &c.CycleIDs} {
		slices.Sort(*l)
		*l = slices.Compact(*l)
		if len(*l) > examples {
			*l = (*l)[:examples]
		}
	}
	return c
}
