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
	order, _ := forestOrder(idsAndParents(recs))
	out := make([]*transform.Record, len(order))
	for k, i := range order {
		out[k] = recs[i]
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

// forestExamples is how many ids of each problem a ForestCheck keeps.
const forestExamples = 10

// CheckForest checks that recs are a forest; the first examples of each
// problem are kept in id order.
func CheckForest(recs []*transform.Record) ForestCheck {
	_, c := forestOrder(idsAndParents(recs))
	return c
}

func idsAndParents(recs []*transform.Record) (ids, parents []string) {
	ids = make([]string, len(recs))
	parents = make([]string, len(recs))
	for i, r := range recs {
		ids[i], parents[i] = r.ID, r.Parent
	}
	return ids, parents
}

// forestOrder returns the order of SortRecords, as indexes into ids, of the
// records whose ids and parents these are, and their ForestCheck: the export
// needs both, and they share the work of indexing the ids. Only the ids and
// parents are touched, so that the export can sort records it holds encoded.
func forestOrder(ids, parents []string) ([]int32, ForestCheck) {
	n := len(ids)
	// index maps an id to its first record.
	index := make(map[string]int32, n)
	dups := false
	for i, id := range ids {
		if _, dup := index[id]; dup {
			dups = true
			continue
		}
		index[id] = int32(i)
	}
	// Record i goes in bucket parent+1 of kids: bucket 0 holds the roots
	// and the orphans, bucket j+1 the children of record j. The buckets are
	// laid end to end (start[b] is where bucket b begins) rather than kept
	// in a map of slices: two allocations whatever n is.
	var orphanIDs []string
	bucket := make([]int32, n)
	start := make([]int32, n+2)
	for i, p := range parents {
		b := int32(0)
		if p != "" {
			if j, ok := index[p]; ok {
				b = j + 1
			} else {
				orphanIDs = append(orphanIDs, ids[i])
			}
		}
		bucket[i] = b
		start[b+1]++
	}
	for b := 1; b < len(start); b++ {
		start[b] += start[b-1]
	}
	kids := make([]int32, n)
	next := slices.Clone(start[:n+1])
	for i, b := range bucket {
		kids[next[b]] = int32(i)
		next[b]++
	}
	byID := func(a, b int32) int {
		if c := strings.Compare(ids[a], ids[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	}
	for b := range n + 1 {
		if s := kids[start[b]:start[b+1]]; len(s) > 1 {
			slices.SortFunc(s, byID)
		}
	}

	// Pre-order from the roots; the stack holds what is left to visit,
	// last first. A record is in one bucket only, so none is pushed twice.
	order := make([]int32, 0, n)
	seen := make([]bool, n)
	stack := slices.Clone(kids[start[0]:start[1]])
	slices.Reverse(stack)
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		seen[i] = true
		order = append(order, i)
		s := kids[start[i+1]:start[i+2]]
		for k := len(s) - 1; k >= 0; k-- {
			stack = append(stack, s[k])
		}
	}
	// What the walk did not reach is in a cycle, or below one.
	rest := order[len(order):]
	for i := range n {
		if !seen[i] {
			rest = append(rest, int32(i))
		}
	}
	slices.SortFunc(rest, byID)
	order = order[:n]

	if dups {
		// Which record of an id is in a cycle is a matter of definition
		// when ids repeat: the walk over ids settles it.
		return order, checkForestByID(ids, parents)
	}
	c := ForestCheck{Orphans: len(orphanIDs), InCycles: len(rest)}
	c.OrphanIDs = examples(orphanIDs)
	for _, i := range rest[:min(len(rest), forestExamples)] {
		c.CycleIDs = append(c.CycleIDs, ids[i])
	}
	return order, c
}

// examples returns the first few of ids in order, each once.
func examples(ids []string) []string {
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) > forestExamples {
		ids = ids[:forestExamples:forestExamples]
	}
	return ids
}

// checkForestByID is CheckForest over ids: an id's parent is that of its
// last record, and an id is in a cycle, or below one, when walking up from
// it never reaches a root or an orphan.
func checkForestByID(ids, parents []string) ForestCheck {
	var c ForestCheck
	count := make(map[string]int, len(ids))
	for _, id := range ids {
		count[id]++
	}
	parent := make(map[string]string, len(ids))
	for i, id := range ids {
		p := parents[i]
		parent[id] = p
		if count[id] > 1 {
			c.Duplicates++
			c.DuplicateIDs = append(c.DuplicateIDs, id)
		}
		if p != "" && count[p] == 0 {
			c.Orphans++
			c.OrphanIDs = append(c.OrphanIDs, id)
		}
	}
	// state: 1 on the current walk, 2 fine, 3 in or below a cycle.
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
			c.InCycles += count[id]
			c.CycleIDs = append(c.CycleIDs, id)
		}
	}
	c.OrphanIDs = examples(c.OrphanIDs)
	c.DuplicateIDs = examples(c.DuplicateIDs)
	c.CycleIDs = examples(c.CycleIDs)
	return c
}

// sortedKeys returns a map's keys in order, so that output is deterministic.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
