package ooccycles

import (
	"errors"

	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/transform"
)

// owns returns the nodes that have a reason of their own, the cycles'
// included, by row: [v][0] id, reason. A node's reason is the read's,
// else its cycle's, else its check's, as in memory.
func (p *passes) owns(base, comp, texts *extsort.Spool) (*extsort.Spool, error) {
	var (
		e extsort.Enc
		b baseNode
	)
	q := p.sorter("cycles: reasons")
	bc, err := newCursor(base)
	if err != nil {
		return nil, err
	}
	if err := comp.Rewind(); err != nil {
		return nil, err
	}
	for rec, ok := comp.Next(); ok; rec, ok = comp.Next() {
		if err := p.tick(); err != nil {
			return nil, err
		}
		if rowAt(rec, 2) == 0 {
			continue
		}
		if !bc.seek(rowAt(rec, 0)) {
			return nil, errBug("lost a cycle's member")
		}
		if b.get(bc.rec); b.own == "" {
			enc(&e, rowAt(rec, 1), b.v)
			if err := q.Add(e.B); err != nil {
				return nil, err
			}
		}
	}
	if err := errors.Join(comp.Err(), bc.err()); err != nil {
		return nil, err
	}
	qi, err := q.Sort()
	if err != nil {
		return nil, err
	}
	defer qi.Close()
	tc, err := newCursor(texts)
	if err != nil {
		return nil, err
	}
	byNode := p.sorter("cycles: reasons")
	for rec, ok := qi.Next(); ok; rec, ok = qi.Next() {
		if err := p.tick(); err != nil {
			return nil, err
		}
		if !tc.seek(rowAt(rec, 0)) {
			return nil, errBug("lost a cycle's problem")
		}
		enc(&e, rowAt(rec, 1), 0)
		e.B = append(e.B, tc.rec[16:]...)
		if err := byNode.Add(e.B); err != nil {
			return nil, err
		}
	}
	if err := errors.Join(qi.Err(), tc.err()); err != nil {
		return nil, err
	}
	p.drop(q)
	p.drop(texts)
	cycled, err := p.spool(byNode)
	if err != nil {
		return nil, err
	}
	cc, err := newCursor(cycled)
	if err != nil {
		return nil, err
	}
	out, err := extsort.NewSpool(p.o.Dir)
	if err != nil {
		return nil, err
	}
	p.files = append(p.files, out)
	if err := base.Rewind(); err != nil {
		return nil, err
	}
	for rec, ok := base.Next(); ok; rec, ok = base.Next() {
		if err := p.tick(); err != nil {
			return nil, err
		}
		b.get(rec)
		own := b.own
		if own == "" && cc.seek(b.v) {
			d := extsort.Dec{B: cc.rec[16:], Share: true}
			own = d.S()
		}
		if own == "" {
			own = b.problem
		}
		if own == "" {
			continue
		}
		enc(&e, b.v, 0)
		e.S(b.id)
		e.S(own)
		if err := out.Add(e.B); err != nil {
			return nil, err
		}
	}
	if err := errors.Join(base.Err(), cc.err()); err != nil {
		return nil, err
	}
	p.drop(cycled)
	return out, out.Rewind()
}

// reasons gives each node without a reason of its own its nearest
// ancestor's that has one (before its cycle, the first with one; else
// the member its walk enters the cycle by), and tells Done each node's,
// in the order of the rows.
func (p *passes) reasons(base, reach, owns *extsort.Spool) error {
	var (
		e extsort.Enc
		b baseNode
	)
	q := p.sorter("cycles: reasons")
	if err := base.Rewind(); err != nil {
		return err
	}
	if err := reach.Rewind(); err != nil {
		return err
	}
	for rec, ok := base.Next(); ok; rec, ok = base.Next() {
		if err := p.tick(); err != nil {
			return err
		}
		r, ok := reach.Next()
		if b.get(rec); !ok || rowAt(r, 0) != b.v {
			return errBug("lost a node reaching its cycle")
		}
		if b.reasoned() || rowAt(r, 1) == b.v {
			continue // its own; or a cycle's member, with its cycle's
		}
		a := rowAt(r, 3)
		if a == none {
			a = rowAt(r, 1)
		}
		enc(&e, a, b.v)
		if err := q.Add(e.B); err != nil {
			return err
		}
	}
	if err := errors.Join(base.Err(), reach.Err()); err != nil {
		return err
	}
	p.drop(reach)
	qi, err := q.Sort()
	if err != nil {
		return err
	}
	defer qi.Close()
	oc, err := newCursor(owns)
	if err != nil {
		return err
	}
	byNode := p.sorter("cycles: reasons")
	for rec, ok := qi.Next(); ok; rec, ok = qi.Next() {
		if err := p.tick(); err != nil {
			return err
		}
		if !oc.seek(rowAt(rec, 0)) {
			return errBug("lost an ancestor's reason")
		}
		d := extsort.Dec{B: oc.rec[16:], Share: true}
		id, own := d.S(), d.S()
		enc(&e, rowAt(rec, 1), 0)
		e.S(transform.AncestorReason(id, errors.New(own)).Error())
		if err := byNode.Add(e.B); err != nil {
			return err
		}
	}
	if err := errors.Join(qi.Err(), oc.err()); err != nil {
		return err
	}
	p.drop(q)
	inherited, err := p.spool(byNode)
	if err != nil {
		return err
	}
	return p.done(base, owns, inherited)
}

// done tells Done each node's reason, in the order of the rows.
func (p *passes) done(base, owns, inherited *extsort.Spool) error {
	oc, err := newCursor(owns)
	if err != nil {
		return err
	}
	ic, err := newCursor(inherited)
	if err != nil {
		return err
	}
	if err := base.Rewind(); err != nil {
		return err
	}
	var (
		b baseNode
		k int64
	)
	for rec, ok := base.Next(); ok; rec, ok = base.Next() {
		if k++; k&(1<<16-1) == 0 {
			if err := p.ctx.Err(); err != nil {
				return err
			}
		}
		b.get(rec)
		var d extsort.Dec
		switch {
		case oc.seek(b.v):
			d = extsort.Dec{B: oc.rec[16:], Share: true}
			d.S() // its id
		case ic.seek(b.v):
			d = extsort.Dec{B: ic.rec[16:], Share: true}
		default:
			return errBug("lost a node's reason")
		}
		if err := p.o.Done(b.rec, b.problem != "", d.S()); err != nil {
			return err
		}
	}
	return errors.Join(base.Err(), oc.err(), ic.err())
}
