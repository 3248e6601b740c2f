package exporter

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"

	"github.com/treeport/treeport/internal/extsort"
)

// oocOrder computes the order of SortRecords (forestOrder) for more
// records than fit in memory, from their ids and parents alone, in sorted
// passes over files (see exportOOC):
//
//  1. resolve: the records by id and by parent, merged, give each record
//     its parent's row (the first record of that id, as forestOrder's
//     index), or none for a root or an orphan;
//  2. link: the records sorted by (parent's row, id, row), which is
//     forestOrder's buckets with their siblings in order, give each record
//     its first child and next sibling, and with them the Euler tour of
//     the forest under a super root (entering and leaving each node: its
//     pre-order is the order in which the tour enters the nodes);
//  3. rank: pointer doubling over the tour (each element's successor and
//     distance, joined with its successor's by a sort, in about log2(2n)
//     rounds whatever the trees' depth) gives each element its distance
//     to the tour's end: the larger it is, the earlier the node.
//
// A record in a cycle, or below one, is on no tour from the super root:
// its element never reaches the end, and it goes last, by id and row, as
// forestOrder's rest.
type oocOrder struct {
	dir    string
	budget int // each sort's
	phase  func(name string, done, total int64)

	byID  *extsort.Sorter // S(id) Row(row) S(parent)
	byPar *extsort.Sorter // S(parent) Row(row) S(id)
	kids  *extsort.Sorter // kidRec: [parent's row+1][row][id]
	n     int64
	enc   extsort.Enc
	kid   []byte

	check ForestCheck
	// groups holds each id once, in id order, with the parent of its last
	// record and its count (S(id) S(parent) U(count)), for cyclesByID.
	groups *extsort.Spool
	// byIDCycles, set by cyclesByID when ids repeat, are InCycles and
	// CycleIDs as forestOrder gives them then (checkForestByID).
	byIDCycles *ForestCheck
	// leaving, when set, is told by ranks of each record's leaving
	// element, as fn is of its entering one (the end of a subtree).
	leaving func(row int64, dist uint64, inCycle bool)
}

// noNext is a tour element's successor at the end of the tour, and a
// record's next sibling when it has none.
const noNext = ^uint64(0)

func newOOCOrder(dir string, budget int, phase func(string, int64, int64)) *oocOrder {
	o := &oocOrder{dir: dir, budget: budget, phase: phase}
	o.byID = extsort.New(dir, budget, extsort.CompareKeyRow)
	o.byID.Prefix = extsort.PrefixKeyRow
	o.byPar = extsort.New(dir, budget, extsort.CompareKeyRow)
	o.byPar.Prefix = extsort.PrefixKeyRow
	o.kids = newKidSorter(dir, budget)
	return o
}

func newKidSorter(dir string, budget int) *extsort.Sorter {
	s := extsort.New(dir, budget, compareKids)
	s.Prefix = extsort.PrefixRow
	return s
}

// close removes the sorts' files.
func (o *oocOrder) close() {
	o.byID.Close()
	o.byPar.Close()
	o.kids.Close()
	if o.groups != nil {
		o.groups.Close()
	}
}

// add takes record row's id and parent; rows are 0, 1, 2, ... each once,
// in any order.
func (o *oocOrder) add(row int64, id, parent string) error {
	o.n++
	o.enc.Reset()
	o.enc.S(id)
	o.enc.Row(row)
	o.enc.S(parent)
	if err := o.byID.Add(o.enc.B); err != nil {
		return err
	}
	if parent == "" {
		return o.addKid(-1, row, []byte(id))
	}
	o.enc.Reset()
	o.enc.S(parent)
	o.enc.Row(row)
	o.enc.S(id) // the child's id, for its place among its siblings
	return o.byPar.Add(o.enc.B)
}

func (o *oocOrder) addKid(parentRow, row int64, id []byte) error {
	o.kid = binary.BigEndian.AppendUint64(o.kid[:0], uint64(parentRow+1))
	o.kid = binary.BigEndian.AppendUint64(o.kid, uint64(row))
	o.kid = append(o.kid, id...)
	return o.kids.Add(o.kid)
}

// compareKids orders kid records as forestOrder's buckets: by the
// parent's row, then by id (bytes), then by row.
func compareKids(a, b []byte) int {
	if c := cmp.Compare(binary.BigEndian.Uint64(a), binary.BigEndian.Uint64(b)); c != 0 {
		return c
	}
	if c := bytes.Compare(a[16:], b[16:]); c != 0 {
		return c
	}
	return cmp.Compare(binary.BigEndian.Uint64(a[8:]), binary.BigEndian.Uint64(b[8:]))
}

// smallest keeps the first forestExamples distinct strings of those it is
// given, in order.
func smallest(list []string, s string) []string {
	i, found := slices.BinarySearch(list, s)
	if found || i >= forestExamples {
		return list
	}
	list = slices.Insert(list, i, s)
	if len(list) > forestExamples {
		list = list[:forestExamples]
	}
	return list
}

// checkEvery is how many records a pass handles between two looks at
// its context (a Ctrl-C stops a pass within a fraction of a second).
const checkEvery = 1 << 14

// resolve is pass 1: each record with a parent goes to the kids' sort
// with its parent's row, or as a root when its parent is not there (an
// orphan). Duplicates and orphans are counted as forestOrder counts them.
func (o *oocOrder) resolve(ctx context.Context) error {
	ids, err := o.byID.Sort()
	if err != nil {
		return err
	}
	defer ids.Close()
	pars, err := o.byPar.Sort()
	if err != nil {
		return err
	}
	defer pars.Close()
	if o.groups, err = extsort.NewSpool(o.dir); err != nil {
		return err
	}
	cur, ok := ids.Next()
	var gid, glast []byte
	var gfirst int64
	var genc extsort.Enc
	var gerr error
	have := false
	// group reads the records of the next id: its first row and count,
	// and spools it with its last record's parent.
	group := func() {
		have = ok
		if !ok {
			return
		}
		gid = append(gid[:0], extsort.FirstKey(cur)...)
		d := extsort.Dec{B: cur}
		d.Bytes()
		gfirst = d.Row()
		count := 0
		for ok && bytes.Equal(extsort.FirstKey(cur), gid) {
			count++
			d := extsort.Dec{B: cur, Share: true}
			d.Bytes()
			d.Row()
			glast = append(glast[:0], d.Bytes()...)
			cur, ok = ids.Next()
		}
		genc.Reset()
		genc.Bs(gid)
		genc.Bs(glast)
		genc.I(count)
		if err := o.groups.Add(genc.B); err != nil && gerr == nil {
			gerr = err
		}
		if count > 1 {
			o.check.Duplicates += count
			if len(o.check.DuplicateIDs) < forestExamples {
				o.check.DuplicateIDs = append(o.check.DuplicateIDs, string(gid))
			}
		}
	}
	group()
	var done int64
	for {
		rec, more := pars.Next()
		if !more {
			break
		}
		if done++; done%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			o.phase("finding the parents", done, o.byPar.Records)
		}
		d := extsort.Dec{B: rec, Share: true}
		parent := d.Bytes()
		row := d.Row()
		id := d.Bytes()
		for have && bytes.Compare(gid, parent) < 0 {
			group()
		}
		p := int64(-1)
		if have && bytes.Equal(gid, parent) {
			p = gfirst
		} else {
			o.check.Orphans++
			o.check.OrphanIDs = smallest(o.check.OrphanIDs, string(id))
		}
		if err := o.addKid(p, row, id); err != nil {
			return err
		}
	}
	if err := pars.Err(); err != nil {
		return err
	}
	for have {
		group()
	}
	if err := errorsJoin(ids.Err(), gerr); err != nil {
		return err
	}
	if o.check.Duplicates == 0 {
		o.groups.Close()
		o.groups = nil
		return nil
	}
	return o.cyclesByID(ctx)
}

// cyclesByID gives, when ids repeat, the records in or below a cycle as
// forestOrder counts them then (checkForestByID): an id's parent is its
// last record's, and an id whose walk up never reaches a root or an
// orphan has all its records counted. It is the same passes over the
// distinct ids (the spooled groups), each once: a forest without
// duplicates, whose records on no tour are those ids.
func (o *oocOrder) cyclesByID(ctx context.Context) error {
	ido := newOOCOrder(o.dir, max(o.budget/2, 64<<10), o.phase)
	defer ido.close()
	if err := o.groups.Rewind(); err != nil {
		return err
	}
	var k int64
	for rec, ok := o.groups.Next(); ok; rec, ok = o.groups.Next() {
		d := extsort.Dec{B: rec, Share: true}
		id := d.Bytes()
		parent := d.Bytes()
		if err := ido.add(k, string(id), string(parent)); err != nil {
			return err
		}
		k++
	}
	if err := o.groups.Err(); err != nil {
		return err
	}
	if err := ido.resolve(ctx); err != nil {
		return err
	}
	r, err := ido.link(ctx)
	if err != nil {
		return err
	}
	if r, err = ido.rank(ctx, r); err != nil {
		return err
	}
	defer r.close()
	if err := o.groups.Rewind(); err != nil {
		return err
	}
	c := &ForestCheck{}
	err = ido.ranks(ctx, r, func(row int64, _ uint64, inCycle bool) error {
		rec, ok := o.groups.Next()
		if !ok {
			return fmt.Errorf("exporter: the out-of-core ids end at row %d of %d: %v", row, k, o.groups.Err())
		}
		if inCycle {
			d := extsort.Dec{B: rec}
			id := d.S()
			d.Bytes()
			c.InCycles += d.I()
			c.CycleIDs = smallest(c.CycleIDs, id)
		}
		return nil
	})
	if err != nil {
		return err
	}
	o.byIDCycles = c
	return nil
}

// elem is an element of the tour: its successor and its distance to it
// (after the doubling rounds, to the end of the tour). The super root's
// elements are 0 (enter) and 1 (leave); record v's are 2v+2 and 2v+3.
type elem struct{ e, next, dist uint64 }

func appendElem(b []byte, x elem) []byte {
	b = binary.BigEndian.AppendUint64(b, x.e)
	b = binary.BigEndian.AppendUint64(b, x.next)
	return binary.BigEndian.AppendUint64(b, x.dist)
}

func readElem(b []byte) elem {
	return elem{binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:]), binary.BigEndian.Uint64(b[16:])}
}

// round is the tour's elements sorted by element (list) and those whose
// successor is not the end sorted by successor (jumps: records of elem
// with e and next swapped), as one doubling round leaves them.
type round struct {
	list, jumps *extsort.Sorter
	buf         []byte
}

func (o *oocOrder) newRound() *round {
	r := &round{list: extsort.New(o.dir, o.budget, extsort.CompareRow), jumps: extsort.New(o.dir, o.budget, extsort.CompareRow)}
	r.list.Prefix, r.jumps.Prefix = extsort.PrefixRow, extsort.PrefixRow
	return r
}

func (r *round) close() {
	r.list.Close()
	r.jumps.Close()
}

func (r *round) add(x elem) error {
	r.buf = appendElem(r.buf[:0], x)
	if err := r.list.Add(r.buf); err != nil {
		return err
	}
	if x.next == noNext {
		return nil
	}
	r.buf = appendElem(r.buf[:0], elem{x.next, x.e, x.dist})
	return r.jumps.Add(r.buf)
}

// link is pass 2: the kids in order give each record its first child
// (spooled in the parents' order) and its next sibling (sorted by row);
// read together, by row, they give the tour's first round.
func (o *oocOrder) link(ctx context.Context) (*round, error) {
	kids, err := o.kids.Sort()
	if err != nil {
		return nil, err
	}
	defer kids.Close()
	first, err := extsort.NewSpool(o.dir)
	if err != nil {
		return nil, err
	}
	defer first.Close()
	sib := extsort.New(o.dir, o.budget, extsort.CompareRow)
	sib.Prefix = extsort.PrefixRow
	defer sib.Close()
	var prev []byte // the previous kid, whose next sibling this one may be
	var buf []byte
	flush := func(next uint64) error {
		buf = append(buf[:0], prev[8:16]...)
		buf = binary.BigEndian.AppendUint64(buf, next)
		buf = append(buf, prev[:8]...)
		return sib.Add(buf)
	}
	var done int64
	for {
		rec, ok := kids.Next()
		if !ok {
			break
		}
		if done++; done%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			o.phase("linking the children", done, o.n)
		}
		same := prev != nil && bytes.Equal(prev[:8], rec[:8])
		if prev != nil {
			next := noNext
			if same {
				next = binary.BigEndian.Uint64(rec[8:])
			}
			if err := flush(next); err != nil {
				return nil, err
			}
		}
		if !same {
			if err := first.Add(rec[:16]); err != nil {
				return nil, err
			}
		}
		prev = append(prev[:0], rec...)
	}
	if err := kids.Err(); err != nil {
		return nil, err
	}
	if prev != nil {
		if err := flush(noNext); err != nil {
			return nil, err
		}
	}
	if err := first.Rewind(); err != nil {
		return nil, err
	}
	return o.tour(ctx, first, sib)
}

// tour writes the tour's first round: each element's successor, at
// distance 1.
func (o *oocOrder) tour(ctx context.Context, first *extsort.Spool, sib *extsort.Sorter) (*round, error) {
	sibs, err := sib.Sort()
	if err != nil {
		return nil, err
	}
	defer sibs.Close()
	r := o.newRound()
	fc, fok := first.Next()
	// firstChild returns the first child of the record whose row+1 is p1.
	firstChild := func(p1 uint64) (uint64, bool) {
		if !fok || binary.BigEndian.Uint64(fc) != p1 {
			return 0, false
		}
		c := binary.BigEndian.Uint64(fc[8:])
		fc, fok = first.Next()
		return c, true
	}
	enter := uint64(1)
	if c, ok := firstChild(0); ok {
		enter = 2*c + 2
	}
	if err := r.add(elem{0, enter, 1}); err != nil {
		return nil, err
	}
	if err := r.add(elem{1, noNext, 0}); err != nil {
		return nil, err
	}
	var v uint64
	for ; ; v++ {
		rec, ok := sibs.Next()
		if !ok {
			break
		}
		if v%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				r.close()
				return nil, err
			}
		}
		if got := binary.BigEndian.Uint64(rec); got != v {
			r.close()
			return nil, fmt.Errorf("exporter: the out-of-core order lost row %d (found %d)", v, got)
		}
		next := 2*v + 3
		if c, ok := firstChild(v + 1); ok {
			next = 2*c + 2
		}
		ns, p1 := binary.BigEndian.Uint64(rec[8:]), binary.BigEndian.Uint64(rec[16:])
		leave := uint64(1)
		switch {
		case ns != noNext:
			leave = 2*ns + 2
		case p1 > 0:
			leave = 2*(p1-1) + 3
		}
		if err := r.add(elem{2*v + 2, next, 1}); err != nil {
			r.close()
			return nil, err
		}
		if err := r.add(elem{2*v + 3, leave, 1}); err != nil {
			r.close()
			return nil, err
		}
	}
	if err := errorsJoin(sibs.Err(), first.Err()); err != nil || int64(v) != o.n {
		r.close()
		if err == nil {
			err = fmt.Errorf("exporter: the out-of-core order has %d rows of %d", v, o.n)
		}
		return nil, err
	}
	return r, nil
}

func errorsJoin(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// rank is pass 3: doubling rounds until every element has reached the
// end of the tour, or (with cycles) until no element of a tour could
// still be on its way. It returns the last round, whose list gives each
// element its distance to the end (noNext as its successor) or a
// successor (in a cycle).
func (o *oocOrder) rank(ctx context.Context, r *round) (*round, error) {
	rounds := bits.Len64(uint64(2*o.n+2)) + 1
	for k := 1; r.jumps.Records > 0 && k <= rounds; k++ {
		o.phase(fmt.Sprintf("ranking the tour (round %d of at most %d)", k, rounds), int64(k-1), int64(rounds))
		next, err := o.double(ctx, r)
		r.close()
		if err != nil {
			return nil, err
		}
		r = next
	}
	return r, nil
}

// double is one doubling round: each element's successor becomes its
// successor's, its distance the sum of the two.
func (o *oocOrder) double(ctx context.Context, r *round) (*round, error) {
	list, err := r.list.Sort()
	if err != nil {
		return nil, err
	}
	defer list.Close()
	jumps, err := r.jumps.Sort()
	if err != nil {
		return nil, err
	}
	defer jumps.Close()
	next := o.newRound()
	cur, ok := list.Next()
	var done int64
	fail := func(err error) (*round, error) {
		next.close()
		return nil, err
	}
	for {
		j, more := jumps.Next()
		if !more {
			break
		}
		if done++; done%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return fail(err)
			}
		}
		q := readElem(j) // e: the successor; next: the element
		for ok && binary.BigEndian.Uint64(cur) < q.e {
			if x := readElem(cur); x.next == noNext {
				if err := next.add(x); err != nil {
					return fail(err)
				}
			}
			cur, ok = list.Next()
		}
		if !ok || binary.BigEndian.Uint64(cur) != q.e {
			return fail(fmt.Errorf("exporter: the out-of-core tour has no element %d", q.e))
		}
		y := readElem(cur)
		if err := next.add(elem{q.next, y.next, q.dist + y.dist}); err != nil {
			return fail(err)
		}
	}
	for ; ok; cur, ok = list.Next() {
		if x := readElem(cur); x.next == noNext {
			if err := next.add(x); err != nil {
				return fail(err)
			}
		}
	}
	if err := errorsJoin(list.Err(), jumps.Err()); err != nil {
		return fail(err)
	}
	return next, nil
}

// ranks calls fn with each record's place, in row order: its distance to
// the tour's end (the larger, the earlier in pre-order), or inCycle; and
// o.leaving, when set, with the distance of the element that leaves it.
func (o *oocOrder) ranks(ctx context.Context, r *round, fn func(row int64, dist uint64, inCycle bool) error) error {
	list, err := r.list.Sort()
	if err != nil {
		return err
	}
	defer list.Close()
	for {
		rec, ok := list.Next()
		if !ok {
			break
		}
		x := readElem(rec)
		if x.e < 2 {
			continue
		}
		if x.e%2 == 1 {
			if o.leaving != nil {
				o.leaving(int64(x.e-3)/2, x.dist, x.next != noNext)
			}
			continue
		}
		row := int64(x.e-2) / 2
		if row%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := fn(row, x.dist, x.next != noNext); err != nil {
			return err
		}
	}
	return list.Err()
}
