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

// doubling gives each node its 2^k-th ancestor and the least row of the
// 2^k nodes from it up: [v][pointer][least], the table of all the nodes
// (all) once every pointer is on its cycle, and that of the cycles'
// members alone (members) once each one's 2^k nodes cover its cycle.
//
// A pass sorts the pointers: how many differ is the size of the image of
// the 2^k-th ancestor, which shrinks as k grows until it is the set of
// the cycles' members, and then stays. So the first pass that finds as
// many as the one before finds all on the cycles (log2 of the longest
// way down from a cycle, plus 2, passes), and writes the members; the
// passes that follow double the members alone, until 2^k is at least
// their count, which no cycle is longer than.
func (p *passes) doubling(base *extsort.Spool) (all, members *extsort.Spool, err error) {
	x := p.sorter("cycles: doubling")
	var (
		e extsort.Enc
		b baseNode
	)
	if err := base.Rewind(); err != nil {
		return nil, nil, err
	}
	for rec, ok := base.Next(); ok; rec, ok = base.Next() {
		b.get(rec)
		enc(&e, b.v, b.parent, b.v)
		if err := x.Add(e.B); err != nil {
			return nil, nil, err
		}
	}
	if err := base.Err(); err != nil {
		return nil, nil, err
	}
	t, err := p.spool(x)
	if err != nil {
		return nil, nil, err
	}
	last, window := int64(-1), int64(1)
	for round := 0; ; round++ {
		if round > rounds(p.n)+2 {
			return nil, nil, errBug("found pointers that do not settle on cycles")
		}
		p.phase("cycles: doubling (passes)", int64(round+1), -1)
		next, hits, err := p.jumpPass(t, true)
		if err != nil {
			return nil, nil, err
		}
		if hits.Records == last {
			p.drop(next)
			all, members = t, hits
			break
		}
		last = hits.Records
		p.drop(hits)
		p.drop(t)
		t, window = next, 2*window
	}
	for window < members.Records {
		p.phase("cycles: doubling the cycles (passes)", window, members.Records)
		next, _, err := p.jumpPass(members, false)
		if err != nil {
			return nil, nil, err
		}
		p.drop(members)
		members, window = next, 2*window
	}
	return all, members, members.Rewind()
}

// jumpPass is a doubling pass over t: each node takes its pointer's
// pointer, and the least of its pointer's least and its own. With hits,
// the pointers' own records, each once, are returned too.
func (p *passes) jumpPass(t *extsort.Spool, hits bool) (next, hit *extsort.Spool, err error) {
	var e extsort.Enc
	if err := t.Rewind(); err != nil {
		return nil, nil, err
	}
	q := p.sorter("cycles: doubling")
	defer p.drop(q)
	for rec, ok := t.Next(); ok; rec, ok = t.Next() {
		if err := p.tick(); err != nil {
			return nil, nil, err
		}
		enc(&e, rowAt(rec, 1), rowAt(rec, 0), rowAt(rec, 2))
		if err := q.Add(e.B); err != nil {
			return nil, nil, err
		}
	}
	if err := t.Err(); err != nil {
		return nil, nil, err
	}
	qi, err := q.Sort()
	if err != nil {
		return nil, nil, err
	}
	defer qi.Close()
	c, err := newCursor(t)
	if err != nil {
		return nil, nil, err
	}
	if hits {
		if hit, err = extsort.NewSpool(p.o.Dir); err != nil {
			return nil, nil, err
		}
		p.files = append(p.files, hit)
	}
	out := p.sorter("cycles: doubling")
	last := none
	for rec, ok := qi.Next(); ok; rec, ok = qi.Next() {
		if err := p.tick(); err != nil {
			return nil, nil, err
		}
		ptr := rowAt(rec, 0)
		if !c.seek(ptr) {
			return nil, nil, errBug("lost a pointer")
		}
		if hit != nil && ptr != last {
			last = ptr
			if err := hit.Add(c.rec); err != nil {
				return nil, nil, err
			}
		}
		enc(&e, rowAt(rec, 1), rowAt(c.rec, 1), min(rowAt(rec, 2), rowAt(c.rec, 2)))
		if err := out.Add(e.B); err != nil {
			return nil, nil, err
		}
	}
	if err := errors.Join(qi.Err(), c.err()); err != nil {
		return nil, nil, err
	}
	if hit != nil {
		if err := hit.Rewind(); err != nil {
			return nil, nil, err
		}
	}
	next, err = p.spool(out)
	return next, hit, err
}

// labels names each node's cycle by its least row, and tells the cycles'
// members: [v][label][member 0 or 1], by node. all holds each node's
// pointer, a member; members, each member's least of its cycle.
func (p *passes) labels(all, members *extsort.Spool) (*extsort.Spool, error) {
	if err := all.Rewind(); err != nil {
		return nil, err
	}
	q := p.sorter("cycles: labels")
	var e extsort.Enc
	for rec, ok := all.Next(); ok; rec, ok = all.Next() {
		if err := p.tick(); err != nil {
			return nil, err
		}
		enc(&e, rowAt(rec, 1), rowAt(rec, 0))
		if err := q.Add(e.B); err != nil {
			return nil, err
		}
	}
	if err := all.Err(); err != nil {
		return nil, err
	}
	p.drop(all)
	qi, err := q.Sort()
	if err != nil {
		return nil, err
	}
	defer qi.Close()
	c, err := newCursor(members)
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
	p.drop(members)
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
