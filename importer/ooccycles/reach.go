package ooccycles

import (
	"errors"

	"github.com/treeport/treeport/internal/extsort"
)

// A reach record is, by node, [v][pointer][dist][first][firstDist][done]:
// pointer is its ancestor dist steps up; first, the first of the nodes
// from it up to pointer (pointer left out) with a reason of its own
// before the cycles' (none: none), firstDist steps up. done: pointer is
// a cycle's member (a member points at itself, 0 steps up).

// reach gives each node, by doubling passes that the cycles end, the
// cycle's member its walk enters by (its pointer) and how far, and its
// first ancestor, itself included, with a reason of its own.
func (p *passes) reach(base, comp *extsort.Spool) (*extsort.Spool, error) {
	x := p.sorter("cycles: reaching the cycles")
	var (
		e extsort.Enc
		b baseNode
	)
	bc, err := newCursor(base)
	if err != nil {
		return nil, err
	}
	if err := comp.Rewind(); err != nil {
		return nil, err
	}
	left := int64(0)
	for rec, ok := comp.Next(); ok; rec, ok = comp.Next() {
		if err := p.tick(); err != nil {
			return nil, err
		}
		v := rowAt(rec, 0)
		if !bc.seek(v) {
			return nil, errBug("lost a node")
		}
		b.get(bc.rec)
		first := none
		if b.reasoned() {
			first = v
		}
		if rowAt(rec, 2) == 1 {
			enc(&e, v, v, 0, none, 0, 1)
		} else {
			enc(&e, v, b.parent, 1, first, 0, 0)
			left++
		}
		if err := x.Add(e.B); err != nil {
			return nil, err
		}
	}
	if err := errors.Join(comp.Err(), bc.err()); err != nil {
		return nil, err
	}
	t, err := p.spool(x)
	if err != nil {
		return nil, err
	}
	for round := 0; left > 0; round++ {
		p.phase("cycles: reaching the cycles (nodes left)", left, p.n)
		if err := p.ctx.Err(); err != nil {
			return nil, err
		}
		var finished int64
		if t, finished, err = p.reachPass(t); err != nil {
			return nil, err
		}
		if finished == 0 || round > 64 {
			return nil, errBug("found nodes that reach no cycle")
		}
		left -= finished
	}
	return t, nil
}

// reachPass is one pass of reach: each node not done takes its
// pointer's pointer.
func (p *passes) reachPass(t *extsort.Spool) (*extsort.Spool, int64, error) {
	var e extsort.Enc
	q, next := p.sorter("cycles: reaching the cycles"), p.sorter("cycles: reaching the cycles")
	for rec, ok := t.Next(); ok; rec, ok = t.Next() {
		if err := p.tick(); err != nil {
			return nil, 0, err
		}
		var err error
		if rowAt(rec, 5) == 1 {
			err = next.Add(rec)
		} else {
			enc(&e, rowAt(rec, 1), rowAt(rec, 0), rowAt(rec, 2), rowAt(rec, 3), rowAt(rec, 4))
			err = q.Add(e.B)
		}
		if err != nil {
			return nil, 0, err
		}
	}
	if err := t.Err(); err != nil {
		return nil, 0, err
	}
	qi, err := q.Sort()
	if err != nil {
		return nil, 0, err
	}
	defer qi.Close()
	c, err := newCursor(t)
	if err != nil {
		return nil, 0, err
	}
	var finished int64
	for rec, ok := qi.Next(); ok; rec, ok = qi.Next() {
		if err := p.tick(); err != nil {
			return nil, 0, err
		}
		if !c.seek(rowAt(rec, 0)) {
			return nil, 0, errBug("lost a pointer")
		}
		dist, first, firstDist := rowAt(rec, 2), rowAt(rec, 3), rowAt(rec, 4)
		if first == none && rowAt(c.rec, 3) != none {
			first, firstDist = rowAt(c.rec, 3), dist+rowAt(c.rec, 4)
		}
		done := rowAt(c.rec, 5)
		finished += done
		enc(&e, rowAt(rec, 1), rowAt(c.rec, 1), dist+rowAt(c.rec, 2), first, firstDist, done)
		if err := next.Add(e.B); err != nil {
			return nil, 0, err
		}
	}
	if err := errors.Join(qi.Err(), c.err()); err != nil {
		return nil, 0, err
	}
	p.drop(q)
	p.drop(t)
	out, err := p.spool(next)
	return out, finished, err
}
