package ooccycles

import (
	"errors"

	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/transform"
)

// cycles finds each component's first row (a cycle and what hangs below
// it: the nodes of one label), whose walk is the first to meet the cycle
// and names it from the member it enters by; the cycle's first ids by a
// join a step up; Cycle is told each, in the order of the rows of the
// members they start at. It returns each cycle's problem's text by
// label: [label][0] text.
func (p *passes) cycles(base, comp, reach *extsort.Spool) (*extsort.Spool, error) {
	g := p.sorter("cycles: components")
	var e extsort.Enc
	if err := comp.Rewind(); err != nil {
		return nil, err
	}
	if err := reach.Rewind(); err != nil {
		return nil, err
	}
	for rec, ok := comp.Next(); ok; rec, ok = comp.Next() {
		if err := p.tick(); err != nil {
			return nil, err
		}
		r, ok := reach.Next()
		if !ok || rowAt(r, 0) != rowAt(rec, 0) {
			return nil, errBug("lost a node reaching its cycle")
		}
		enc(&e, rowAt(rec, 1), rowAt(rec, 0), rowAt(r, 1), rowAt(rec, 2))
		if err := g.Add(e.B); err != nil {
			return nil, err
		}
	}
	if err := errors.Join(comp.Err(), reach.Err()); err != nil {
		return nil, err
	}
	gi, err := g.Sort()
	if err != nil {
		return nil, err
	}
	defer gi.Close()
	walk := p.sorter("cycles: naming the cycles")
	var (
		label, entry, members int64
		have                  bool
	)
	flush := func() error {
		if !have {
			return nil
		}
		enc(&e, entry, label, members, entry)
		e.Bs(nil)
		e.Strs(nil)
		return walk.Add(e.B)
	}
	for rec, ok := gi.Next(); ok; rec, ok = gi.Next() {
		if err := p.tick(); err != nil {
			return nil, err
		}
		if !have || rowAt(rec, 0) != label {
			if err := flush(); err != nil {
				return nil, err
			}
			label, entry, members, have = rowAt(rec, 0), rowAt(rec, 2), 0, true
		}
		members += rowAt(rec, 3)
	}
	if err := errors.Join(flush(), gi.Err()); err != nil {
		return nil, err
	}
	p.drop(g)
	named, err := p.walk(base, walk)
	if err != nil {
		return nil, err
	}
	return p.tell(named)
}

// A walker is [node][label][members][entry] entry's record, ids: a walk
// up a cycle from its entry, at node, with the ids met so far.

// walk takes each walker up its cycle, a step a pass, until it has
// maxIDs ids or the whole cycle's; it returns them sorted by entry.
func (p *passes) walk(base *extsort.Spool, walk *extsort.Sorter) (*extsort.Sorter, error) {
	named := p.sorter("cycles: naming the cycles")
	var (
		e   extsort.Enc
		b   baseNode
		ids []string
	)
	for step := 0; walk.Records > 0; step++ {
		if step > maxIDs {
			return nil, errBug("walked a cycle too far")
		}
		wi, err := walk.Sort()
		if err != nil {
			return nil, err
		}
		c, err := newCursor(base)
		if err != nil {
			wi.Close()
			return nil, err
		}
		next := p.sorter("cycles: naming the cycles")
		for rec, ok := wi.Next(); ok; rec, ok = wi.Next() {
			if err := p.tick(); err != nil {
				wi.Close()
				return nil, err
			}
			if !c.seek(rowAt(rec, 0)) {
				wi.Close()
				return nil, errBug("lost a cycle's member")
			}
			b.get(c.rec)
			d := extsort.Dec{B: rec[32:], Share: true}
			entryRec := d.Bytes()
			if step == 0 {
				entryRec = b.rec
			}
			ids = append(d.Strs(ids[:0]), b.id)
			members := rowAt(rec, 2)
			into, at := next, b.parent
			if int64(len(ids)) == min(members, maxIDs) {
				into, at = named, rowAt(rec, 3)
			}
			enc(&e, at, rowAt(rec, 1), members, rowAt(rec, 3))
			e.Bs(entryRec)
			e.Strs(ids)
			if err := into.Add(e.B); err != nil {
				wi.Close()
				return nil, err
			}
		}
		err = errors.Join(wi.Err(), c.err())
		wi.Close()
		p.drop(walk)
		if err != nil {
			return nil, err
		}
		walk = next
	}
	p.drop(walk)
	return named, nil
}

// tell tells Cycle each cycle named, in the order of its entry's row,
// and returns the problems' texts by label.
func (p *passes) tell(named *extsort.Sorter) (*extsort.Spool, error) {
	ni, err := named.Sort()
	if err != nil {
		return nil, err
	}
	defer ni.Close()
	texts := p.sorter("cycles: naming the cycles")
	var (
		e   extsort.Enc
		ids []string
	)
	for rec, ok := ni.Next(); ok; rec, ok = ni.Next() {
		if err := p.tick(); err != nil {
			return nil, err
		}
		d := extsort.Dec{B: rec[32:], Share: true}
		entryRec := d.Bytes()
		ids = d.Strs(ids[:0])
		cerr := transform.CycleErrorOf(ids, int(rowAt(rec, 2)))
		if err := p.o.Cycle(entryRec, cerr); err != nil {
			return nil, err
		}
		enc(&e, rowAt(rec, 1), 0)
		e.S(cerr.Error())
		if err := texts.Add(e.B); err != nil {
			return nil, err
		}
	}
	if err := ni.Err(); err != nil {
		return nil, err
	}
	p.drop(named)
	return p.spool(texts)
}
