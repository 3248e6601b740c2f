package ooccycles

import (
	"bytes"
	"errors"

	"github.com/treeport/treeport/internal/extsort"
)

// The records of the passes begin with two rows (sorter), the first a
// node's or a pointer's: base is, by node, [v][parent] id own check rec.

type baseNode struct {
	v, parent        int64
	id, own, problem string
	rec              []byte
}

func (b *baseNode) get(rec []byte) {
	b.v, b.parent = rowAt(rec, 0), rowAt(rec, 1)
	d := extsort.Dec{B: rec[16:], Share: true}
	b.id, b.own, b.problem = d.S(), d.S(), d.S()
	b.rec = d.Bytes()
}

// reasoned: the node has a reason of its own before the cycles' (the
// read's, or its check's).
func (b *baseNode) reasoned() bool { return b.own != "" || b.problem != "" }

// read takes the nodes, checks each, and joins each with its parent's
// row: the base, by row.
func (p *passes) read(each func(add func(Node) error) error) (*extsort.Spool, error) {
	ids, parents, base := p.idSorter("cycles: sorting by id"), p.idSorter("cycles: sorting by parent"), p.sorter("cycles: sorting by row")
	var e extsort.Enc
	err := each(func(n Node) error {
		if p.n++; p.n&(1<<16-1) == 0 {
			if err := p.ctx.Err(); err != nil {
				return err
			}
		}
		e.Reset()
		e.S(n.ID)
		e.Row(n.Row)
		if err := ids.Add(e.B); err != nil {
			return err
		}
		e.Reset()
		e.S(n.Parent)
		e.Row(n.Row)
		if err := parents.Add(e.B); err != nil {
			return err
		}
		enc(&e, n.Row, 0)
		e.S(n.ID)
		e.S(n.Own)
		e.S(p.o.Check(n.Rec))
		e.Bs(n.Rec)
		return base.Add(e.B)
	})
	if err != nil || p.n == 0 {
		return nil, err
	}
	p.phase("cycles (nodes)", p.n, p.n)
	byChild, err := p.parentRows(ids, parents)
	if err != nil {
		return nil, err
	}
	it, err := base.Sort()
	if err != nil {
		return nil, err
	}
	defer it.Close()
	pc, err := newCursor(byChild)
	if err != nil {
		return nil, err
	}
	out, err := extsort.NewSpool(p.o.Dir)
	if err != nil {
		return nil, err
	}
	p.files = append(p.files, out)
	for rec, ok := it.Next(); ok; rec, ok = it.Next() {
		if err := p.tick(); err != nil {
			return nil, err
		}
		v := rowAt(rec, 0)
		if !pc.seek(v) {
			return nil, errBug("lost a node's parent")
		}
		e.Reset()
		e.Row(v)
		e.Row(rowAt(pc.rec, 2))
		e.B = append(e.B, rec[16:]...)
		if err := out.Add(e.B); err != nil {
			return nil, err
		}
	}
	if err := errors.Join(it.Err(), pc.err()); err != nil {
		return nil, err
	}
	p.drop(base)
	p.drop(byChild)
	return out, out.Rewind()
}

// parentRows joins the parents with the ids: [child][parent's row], by
// child.
func (p *passes) parentRows(ids, parents *extsort.Sorter) (*extsort.Spool, error) {
	ii, err := ids.Sort()
	if err != nil {
		return nil, err
	}
	defer ii.Close()
	pi, err := parents.Sort()
	if err != nil {
		return nil, err
	}
	defer pi.Close()
	out := p.sorter("cycles: joining parents")
	var e extsort.Enc
	cur, more := ii.Next()
	for rec, ok := pi.Next(); ok; rec, ok = pi.Next() {
		if err := p.tick(); err != nil {
			return nil, err
		}
		parent := extsort.FirstKey(rec)
		for more && bytes.Compare(extsort.FirstKey(cur), parent) < 0 {
			cur, more = ii.Next()
		}
		if !more || !bytes.Equal(extsort.FirstKey(cur), parent) {
			return nil, errBug("found a parent that is none of the nodes")
		}
		d := extsort.Dec{B: rec}
		d.Bytes()
		child := d.Row()
		d = extsort.Dec{B: cur}
		d.Bytes()
		enc(&e, child, 0, d.Row())
		if err := out.Add(e.B); err != nil {
			return nil, err
		}
	}
	if err := errors.Join(ii.Err(), pi.Err()); err != nil {
		return nil, err
	}
	p.drop(ids)
	p.drop(parents)
	return p.spool(out)
}

// doubling gives each node, in rounds(n) passes, its 2^k-th ancestor
// (on its cycle at the end) and the least row of the 2^k nodes from it
// up (its cycle's least, for a node on a cycle): [v][pointer][least].
func (p *passes) doubling(base *extsort.Spool) (*extsort.Spool, error) {
	x := p.sorter("cycles: doubling")
	var (
		e extsort.Enc
		b baseNode
	)
	if err := base.Rewind(); err != nil {
		return nil, err
	}
	for rec, ok := base.Next(); ok; rec, ok = base.Next() {
		if err := p.tick(); err != nil {
			return nil, err
		}
		b.get(rec)
		enc(&e, b.v, b.parent, b.v)
		if err := x.Add(e.B); err != nil {
			return nil, err
		}
	}
	if err := base.Err(); err != nil {
		return nil, err
	}
	t, err := p.spool(x)
	if err != nil {
		return nil, err
	}
	for round := range rounds(p.n) {
		p.phase("cycles: doubling (passes)", int64(round+1), int64(rounds(p.n)))
		if err := p.ctx.Err(); err != nil {
			return nil, err
		}
		q := p.sorter("cycles: doubling")
		for rec, ok := t.Next(); ok; rec, ok = t.Next() {
			if err := p.tick(); err != nil {
				return nil, err
			}
			enc(&e, rowAt(rec, 1), rowAt(rec, 0), rowAt(rec, 2))
			if err := q.Add(e.B); err != nil {
				return nil, err
			}
		}
		if err := t.Err(); err != nil {
			return nil, err
		}
		qi, err := q.Sort()
		if err != nil {
			return nil, err
		}
		c, err := newCursor(t)
		if err != nil {
			qi.Close()
			return nil, err
		}
		next := p.sorter("cycles: doubling")
		for rec, ok := qi.Next(); ok; rec, ok = qi.Next() {
			if err := p.tick(); err != nil {
				qi.Close()
				return nil, err
			}
			if !c.seek(rowAt(rec, 0)) {
				qi.Close()
				return nil, errBug("lost a pointer")
			}
			enc(&e, rowAt(rec, 1), rowAt(c.rec, 1), min(rowAt(rec, 2), rowAt(c.rec, 2)))
			if err := next.Add(e.B); err != nil {
				qi.Close()
				return nil, err
			}
		}
		err = errors.Join(qi.Err(), c.err())
		qi.Close()
		p.drop(q)
		if err != nil {
			return nil, err
		}
		p.drop(t)
		if t, err = p.spool(next); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// labels names each node's cycle by its least row, and tells the cycles'
// members (the pointers' ends): [v][label][member 0 or 1], by node.
func (p *passes) labels(jumps *extsort.Spool) (*extsort.Spool, error) {
	if err := jumps.Rewind(); err != nil {
		return nil, err
	}
	q := p.sorter("cycles: labels")
	var e extsort.Enc
	for rec, ok := jumps.Next(); ok; rec, ok = jumps.Next() {
		if err := p.tick(); err != nil {
			return nil, err
		}
		enc(&e, rowAt(rec, 1), rowAt(rec, 0))
		if err := q.Add(e.B); err != nil {
			return nil, err
		}
	}
	if err := jumps.Err(); err != nil {
		return nil, err
	}
	qi, err := q.Sort()
	if err != nil {
		return nil, err
	}
	defer qi.Close()
	c, err := newCursor(jumps)
	if err != nil {
		return nil, err
	}
	// Each node (kind 0) with its label; each member (kind 1) after.
	x := p.sorter("cycles: labels")
	last := none
	for rec, ok := qi.Next(); ok; rec, ok = qi.Next() {
		if err := p.tick(); err != nil {
			return nil, err
		}
		end := rowAt(rec, 0)
		if !c.seek(end) {
			return nil, errBug("lost a pointer's end")
		}
		label := rowAt(c.rec, 2)
		enc(&e, rowAt(rec, 1), 0, label)
		if err := x.Add(e.B); err != nil {
			return nil, err
		}
		if end != last {
			last = end
			enc(&e, end, 1, label)
			if err := x.Add(e.B); err != nil {
				return nil, err
			}
		}
	}
	if err := errors.Join(qi.Err(), c.err()); err != nil {
		return nil, err
	}
	p.drop(jumps)
	xi, err := x.Sort()
	if err != nil {
		return nil, err
	}
	defer xi.Close()
	out, err := extsort.NewSpool(p.o.Dir)
	if err != nil {
		return nil, err
	}
	p.files = append(p.files, out)
	var (
		pv, plabel int64
		have       bool
	)
	flush := func(member int64) error {
		if !have {
			return nil
		}
		have = false
		enc(&e, pv, plabel, member)
		return out.Add(e.B)
	}
	for rec, ok := xi.Next(); ok; rec, ok = xi.Next() {
		if err := p.tick(); err != nil {
			return nil, err
		}
		if rowAt(rec, 1) == 1 {
			if !have || pv != rowAt(rec, 0) {
				return nil, errBug("found a cycle member without a label")
			}
			if err := flush(1); err != nil {
				return nil, err
			}
			continue
		}
		if err := flush(0); err != nil {
			return nil, err
		}
		pv, plabel, have = rowAt(rec, 0), rowAt(rec, 2), true
	}
	if err := flush(0); err != nil {
		return nil, err
	}
	if err := xi.Err(); err != nil {
		return nil, err
	}
	p.drop(x)
	return out, out.Rewind()
}
