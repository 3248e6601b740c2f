package ooc

import (
	"context"
	"errors"
	"slices"

	"github.com/treeport/treeport/importer/ooccycles"
	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/transform"
)

// cyclesPass takes the nodes no level reached: those in a cycle or below
// one. They are reported as transform.Forest does, checked with what is
// known of them, and resolved rejected: read into memory when they are
// few (cyclesInMemory), else by the sorted passes of ooccycles, in a
// bounded memory however many they are (a crafted input can hold a
// cycle of any length, or any tree below one).
func (s *State) cyclesPass(ctx context.Context, rest *extsort.Spool, check oocChecker) error {
	if rest.Bytes <= cyclesInMemory(s.opts.sortBudget()) {
		return s.cyclesInMemory(rest, check)
	}
	return ooccycles.Resolve(ctx, ooccycles.Options{
		Dir: s.dir, Budget: s.opts.sortBudget(), Phase: s.phase,
		Check: func(rec []byte) string {
			var n oocNode
			n.getByParent(rec, true)
			if err := s.cycleCheck(&n, check); err != nil {
				return err.Error()
			}
			return ""
		},
		Cycle: func(rec []byte, err error) error {
			var n oocNode
			n.getByParent(rec, true)
			s.cycles.add(n.row, s.rowError(n.file, n.line, n.id, err))
			return nil
		},
		Done: func(rec []byte, checked bool, reason string) error {
			var n oocNode
			n.getByParent(rec, true)
			if checked {
				s.checked.add(n.row, s.rowError(n.file, n.line, n.id, s.cycleCheck(&n, check)))
			}
			return s.cycleResolved(&n, reason)
		},
	}, func(add func(ooccycles.Node) error) error {
		var n oocNode
		for rec, ok := rest.Next(); ok; rec, ok = rest.Next() {
			n.getByParent(rec, true)
			if err := add(ooccycles.Node{Row: n.row, ID: n.id, Parent: n.parent, Own: n.own, Rec: rec}); err != nil {
				return err
			}
		}
		return rest.Err()
	})
}

// cyclesInMemory is the most bytes of the records of the nodes in or
// below cycles that cyclesPass reads into memory, for a sort's budget:
// about a quarter of it, once read. A variable, so that a test can have
// either way take any input.
var cyclesInMemory = func(budget int) int64 { return int64(budget) / 16 }

// cycleCheck is the check of a node in or below a cycle, whose place is
// not known. Keys over DynamoDB's limits are not among its problems (a
// path not known has no length): the rule of a key over the limits that
// a child inherits (resolve's originKey) never applies to it.
func (s *State) cycleCheck(n *oocNode, check oocChecker) error {
	st := transform.Stats{ID: n.id, PathBytes: len(n.id), AttrBytes: n.attr, CopyBytes: n.copy, Subtree: 1, TreeSize: 1, Roots: s.roots}
	return transform.WithoutKeyLengths(s.checkNode(n, check, &st))
}

// cycleResolved resolves a node in or below a cycle, rejected with
// reason.
func (s *State) cycleResolved(n *oocNode, reason string) error {
	if s.links != nil {
		n.flags |= fRejected | fBuild // in or below a cycle
		if err := s.seenLink(n); err != nil {
			return err
		}
	}
	s.rejected++
	if n.flags&fBad != 0 {
		return nil
	}
	return s.addResolved(n.row, reason)
}

// cyclesInMemory is cyclesPass for few nodes, read into memory.
func (s *State) cyclesInMemory(rest *extsort.Spool, check oocChecker) error {
	var nodes []oocNode
	for rec, ok := rest.Next(); ok; rec, ok = rest.Next() {
		var n oocNode
		n.getByParent(rec, false)
		nodes = append(nodes, n)
	}
	if err := rest.Err(); err != nil || len(nodes) == 0 {
		return err
	}
	s.phase("cycles (nodes)", int64(len(nodes)), int64(len(nodes)))
	slices.SortFunc(nodes, func(a, b oocNode) int { return int(a.row - b.row) })
	at := make(map[string]int, len(nodes))
	for k := range nodes {
		at[nodes[k].id] = k
	}
	parent := func(k int) int {
		if p, ok := at[nodes[k].parent]; ok {
			return p
		}
		return -1
	}
	// The walk of transform.Forest.cycles, in the order of the rows.
	state := make([]uint8, len(nodes))
	var cycles []rowProblem
	for k := range nodes {
		if state[k] != 0 {
			continue
		}
		var walk []int
		c := k
		for c >= 0 && state[c] == 0 {
			state[c] = 1
			walk = append(walk, c)
			c = parent(c)
		}
		if c >= 0 && state[c] == 1 {
			start := slices.Index(walk, c)
			cyc := walk[start:]
			ids := make([]string, len(cyc))
			for j, m := range cyc {
				ids[j] = nodes[m].id
			}
			err := transform.CycleError(ids)
			first := &nodes[cyc[0]]
			cycles = append(cycles, rowProblem{first.row, s.rowError(first.file, first.line, first.id, err)})
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
	slices.SortStableFunc(cycles, func(a, b rowProblem) int { return int(a.row - b.row) })
	for _, c := range cycles {
		s.cycles.add(c.row, c.p)
	}
	// Check, in the order of the rows, as a node whose path is not known.
	origin := make([]int8, len(nodes)) // 0 none, 1 a problem, 2 one of keys over the limits
	for k := range nodes {
		n := &nodes[k]
		st := transform.Stats{ID: n.id, PathBytes: len(n.id), AttrBytes: n.attr, CopyBytes: n.copy, Subtree: 1, TreeSize: 1, Roots: s.roots}
		cerr := transform.WithoutKeyLengths(s.checkNode(n, check, &st))
		if cerr == nil {
			continue
		}
		if p := parent(k); p >= 0 && origin[p] == 2 && errors.Is(cerr, transform.ErrKeyTooLong) && transform.WithoutKeyLengths(cerr) == nil {
			origin[k] = 2
			continue
		}
		origin[k] = 1
		if errors.Is(cerr, transform.ErrKeyTooLong) {
			origin[k] = 2
		}
		s.checked.add(n.row, s.rowError(n.file, n.line, n.id, cerr))
		if n.own == "" {
			n.own = cerr.Error()
		}
	}
	// Each takes the reason of its nearest ancestor (itself included)
	// that has one.
	by := make([]int, len(nodes))
	for k := range by {
		by[k] = -2
	}
	var walk []int
	for k := range nodes {
		c := k
		for c >= 0 && by[c] == -2 && nodes[c].own == "" {
			by[c] = -3
			walk = append(walk, c)
			c = parent(c)
		}
		r := -1
		switch {
		case c >= 0 && nodes[c].own != "":
			r = c
		case c >= 0 && by[c] >= 0:
			r = by[c]
		}
		for _, w := range walk {
			by[w] = r
		}
		walk = walk[:0]
	}
	for k := range nodes {
		n := &nodes[k]
		if s.links != nil {
			n.flags |= fRejected | fBuild // in or below a cycle
			if err := s.seenLink(n); err != nil {
				return err
			}
		}
		s.rejected++
		if n.flags&fBad != 0 {
			continue
		}
		reason := n.own
		if reason == "" {
			reason = transform.ErrAncestor.Error()
			if a := by[k]; a >= 0 {
				reason = transform.AncestorReason(nodes[a].id, errors.New(nodes[a].own)).Error()
			}
		}
		if err := s.addResolved(n.row, reason); err != nil {
			return err
		}
	}
	return nil
}
