package refresh

import (
	"bytes"
	"errors"

	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/internal/itemdigest"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// The kinds of an operation's record in the sort by owner.
const (
	oocPut    = 0
	oocDelete = 1
)

// oocSnapItem is a record of the snapshot's sort by key, decoded (see
// emitSnapshot).
type oocSnapItem struct {
	key    []byte
	digest uint64
	owner  string
	known  bool
	wcu    int
	size   int
	sigs   []uint64
	units  []int
	item   []byte
}

func (it *oocSnapItem) decode(rec []byte, stride, indexes int) {
	d := extsort.Dec{B: rec, Share: true}
	it.key = d.Bytes()
	it.digest = d.U()
	it.owner = d.S()
	it.known = d.Flag() == 1
	it.wcu = d.I()
	it.size = d.I()
	it.sigs = it.sigs[:0]
	for range stride {
		it.sigs = append(it.sigs, d.U())
	}
	it.units = it.units[:0]
	for range indexes {
		it.units = append(it.units, d.I())
	}
	it.item = d.Bytes()
}

// items is the third pass: the snapshot's items and the table's, both
// sorted by key, merge-joined. An item the table holds with the same
// digest needs nothing; one it holds with another is a put priced over
// it (as planPuts prices it); one it lacks, a put; a table's item the
// snapshot does not want, a delete (priced as planDeletes). A put over an
// item that does not read, or is another entity's, fails the plan as in
// memory. The operations go to the sort ops, by owner, for their
// reasons.
func (p *oocPlan) items(snap, ops *extsort.Sorter) error {
	si, err := snap.Sort()
	if err != nil {
		return err
	}
	defer si.Close()
	ti, err := p.ot.items.Sort()
	if err != nil {
		return err
	}
	defer ti.Close()
	spec, stride, nix := p.spec, p.t.stride, len(p.spec.Indexes)
	var (
		sn   oocSnapItem
		tn   oocTableItem
		seen bool // the table's current item is wanted by the snapshot
		e    extsort.Enc
	)
	trec, tok := ti.Next()
	if tok {
		tn.decode(trec, stride, nix)
	}
	// advance passes the table's current item, a delete when no snapshot
	// item wanted it.
	advance := func() error {
		if tn.kind == oocItem && !seen {
			wcu := transform.WCU(tn.size)
			for _, u := range tn.units {
				wcu += u
			}
			e.Reset()
			e.S(tn.owner)
			e.Flag(oocDelete)
			e.Flag(flagOf(tn.node))
			e.I(wcu)
			e.Bs(tn.key)
			if err := ops.Add(e.B); err != nil {
				return err
			}
		}
		seen = false
		if trec, tok = ti.Next(); tok {
			tn.decode(trec, stride, nix)
		}
		return nil
	}
	for n := 0; ; n++ {
		srec, ok := si.Next()
		if !ok {
			break
		}
		if n&4095 == 0 {
			if err := p.tick("comparing the items (items)", n, snap.Records+p.ot.items.Records); err != nil {
				return err
			}
		}
		sn.decode(srec, stride, nix)
		for tok && bytes.Compare(tn.key, sn.key) < 0 {
			if err := advance(); err != nil {
				return err
			}
		}
		wcu := sn.wcu
		if tok && bytes.Equal(tn.key, sn.key) {
			if tn.kind != oocItem {
				return p.putOverUnreadable(&sn, tn.kind)
			}
			seen = true
			if tn.digest == sn.digest {
				continue
			}
			// A put over the table's item: priced as DynamoDB bills it.
			wcu = layouts.ReplaceUnitsBy(spec, transform.WCU(tn.size), transform.WCU(sn.size), func(i int) (layouts.IndexChange, int, int) {
				return indexChange(spec, tn.sigs, sn.sigs, i), tn.units[i], sn.units[i]
			})
		}
		e.Reset()
		e.S(sn.owner)
		e.Flag(oocPut)
		e.Flag(flagOf(sn.known))
		e.I(wcu)
		e.Bs(sn.item)
		if err := ops.Add(e.B); err != nil {
			return err
		}
	}
	for tok {
		if err := advance(); err != nil {
			return err
		}
	}
	return errors.Join(si.Err(), ti.Err())
}

// putOverUnreadable is planPuts' refusal of a put over an item that does
// not read as a node, or is another entity's.
func (p *oocPlan) putOverUnreadable(sn *oocSnapItem, kind uint8) error {
	what := "does not read as a node of " + p.l.Name()
	if kind == oocForeign {
		what = "is another entity's (it does not carry the model's type field)"
	}
	put := layouts.Item{}
	if item, err := ddbjson.DecodeItem(sn.item); err == nil {
		put = item
	}
	return invalidf("node %q: its item %s would overwrite the table's item under that key, which %s; treeport never changes such an item: move or delete it, or fix the %s; nothing was written",
		sn.owner, ddb.KeyString(put, p.spec.KeyNames()...), what, layoutWord(p.l))
}

// classReader reads the nodes' classes in id order (the spool of
// structure, with the sorted moved ids), for ids asked in order. It
// counts, once a node, the changed nodes that did not move.
type classReader struct {
	p       *oocPlan
	class   *extsort.Spool
	moved   *extsort.Iter
	id      []byte
	bits    uint8
	isMoved bool
	ok      bool
	mv      []byte
	mvOK    bool
}

func newClassReader(p *oocPlan, class *extsort.Spool, moved *extsort.Sorter) (*classReader, error) {
	c := &classReader{p: p, class: class}
	if moved != nil {
		it, err := moved.Sort()
		if err != nil {
			return nil, err
		}
		c.moved = it
		c.mv, c.mvOK = it.Next()
	}
	c.load()
	return c, nil
}

// load reads the next node's class.
func (c *classReader) load() {
	rec, ok := c.class.Next()
	c.ok = ok
	if !ok {
		return
	}
	d := extsort.Dec{B: rec, Share: true}
	c.id = d.Bytes()
	c.bits = d.Flag()
	c.isMoved = false
	if c.moved != nil {
		for c.mvOK && bytes.Compare(c.mv, c.id) < 0 {
			c.mv, c.mvOK = c.moved.Next()
		}
		c.isMoved = c.mvOK && bytes.Equal(c.mv, c.id)
	}
	if c.bits&classChanged != 0 && !c.isMoved {
		c.p.changedInPlace++
	}
}

// seek moves to the node id, and says whether it is one of either side.
func (c *classReader) seek(id []byte) bool {
	for c.ok && bytes.Compare(c.id, id) < 0 {
		c.load()
	}
	return c.ok && bytes.Equal(c.id, id)
}

// drain reads the classes left, to count them.
func (c *classReader) drain() error {
	for c.ok {
		c.load()
	}
	if c.moved != nil {
		c.moved.Close()
		if err := c.moved.Err(); err != nil {
			return err
		}
	}
	return c.class.Err()
}

// reasons is the last pass: the operations, sorted by owner, joined with
// the owners' classes, get planPuts' and planDeletes' reasons and are
// counted in s; they go to three spools, replayed in order: the puts,
// the deletes, and the deletes of the nodes' own items (last, so that a
// run stopped half-way leaves no row without its node). A delete of a
// row whose owner neither side holds is dropped (SPEC §9).
func (p *oocPlan) reasons(ops *extsort.Sorter, class *extsort.Spool, moved *extsort.Sorter) ([]*extsort.Spool, error) {
	var spools []*extsort.Spool
	for range 3 {
		sp, err := extsort.NewSpool(p.dir)
		if err != nil {
			return spools, err
		}
		spools = append(spools, sp)
	}
	it, err := ops.Sort()
	if err != nil {
		return spools, err
	}
	defer it.Close()
	cr, err := newClassReader(p, class, moved)
	if err != nil {
		return spools, err
	}
	var e extsort.Enc
	for n := 0; ; n++ {
		rec, ok := it.Next()
		if !ok {
			break
		}
		if n&4095 == 0 {
			if err := p.tick("ordering the operations (operations)", n, ops.Records); err != nil {
				return spools, err
			}
		}
		d := extsort.Dec{B: rec, Share: true}
		owner := d.Bytes()
		kind, flag, wcu, payload := d.Flag(), d.Flag(), d.I(), d.Bytes()
		found := cr.seek(owner)
		var bits uint8
		isMoved := false
		if found {
			bits, isMoved = cr.bits, cr.isMoved
		}
		inTable, inSnap := bits&classInTable != 0, bits&classInSnap != 0
		var reason Reason
		to := spools[0]
		if kind == oocPut {
			switch {
			case !inSnap || !inTable:
				reason = ReasonNew
			case isMoved:
				reason = ReasonMoved
			case bits&classChanged != 0 || flag == 0:
				reason = ReasonChanged
			default:
				reason = ReasonRepair
			}
		} else {
			if len(owner) > 0 && !found {
				continue // a row of no node the table holds nor the snapshot wants
			}
			reason = ReasonRepair
			switch {
			case len(owner) == 0:
			case !inSnap:
				reason = ReasonRemoved
			case isMoved:
				reason = ReasonMoved
			}
			to = spools[1+int(flag)]
			if reason == ReasonMoved {
				if err := p.goneMoved(owner); err != nil {
					return spools, err
				}
			}
		}
		op := Op{Kind: Put, Reason: reason, WCU: wcu}
		if kind == oocDelete {
			op.Kind = Delete
		}
		p.s.Add(op)
		e.Reset()
		e.Flag(kind)
		e.S(string(reason))
		e.Bs(owner)
		e.I(wcu)
		e.Bs(payload)
		if err := to.Add(e.B); err != nil {
			return spools, err
		}
	}
	if err := errors.Join(it.Err(), cr.drain()); err != nil {
		return spools, err
	}
	for _, sp := range spools {
		if err := sp.Rewind(); err != nil {
			return spools, err
		}
	}
	return spools, nil
}

// replay passes the spools' operations to fn, in order, a moved node's
// deletes with the other copies' puts they wait for (otherShards).
func (p *oocPlan) replay(spools []*extsort.Spool, fn func(Op) error) error {
	after := afterReader{sp: p.after}
	done := 0 // the operations of the spools before sp
	for _, sp := range spools {
		if err := after.rewind(); err != nil {
			return err
		}
		for n := 0; ; n++ {
			rec, ok := sp.Next()
			if !ok {
				break
			}
			if n&4095 == 0 {
				if err := p.tick("writing the plan (operations)", done+n, p.s.Changes()); err != nil {
					return err
				}
			}
			d := extsort.Dec{B: rec}
			kind, reason, id, wcu, payload := d.Flag(), Reason(d.S()), d.S(), d.I(), d.Bytes()
			op := Op{Kind: Put, Reason: reason, ID: id, WCU: wcu}
			if kind == oocDelete {
				key, err := itemdigest.DecodeKey(p.spec, string(payload))
				if err != nil {
					return err
				}
				op.Kind, op.Item = Delete, key
				if reason == ReasonMoved {
					if op.After, err = after.items([]byte(id)); err != nil {
						return err
					}
				}
			} else {
				item, err := ddbjson.DecodeItem(payload)
				if err != nil {
					return err
				}
				op.Item = item
			}
			if err := fn(op); err != nil {
				return err
			}
		}
		if err := sp.Err(); err != nil {
			return err
		}
		done += int(sp.Records)
	}
	return nil
}
