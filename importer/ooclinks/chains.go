package ooclinks

import (
	"context"
	"errors"

	"github.com/treeport/treeport/internal/extsort"
)

// The good links whose target is itself a link (chains of links, and
// cycles) are resolved by pointer doubling over sorts, as the importer's
// deep passes double over parents: each pass joins every link not done
// with the link it points at, and takes that one's pointer, so that
// log2(longest chain) passes bring every link to the end of its chain: a
// link that is no good link to a link (a terminal), bad or not. A link
// whose chain ends at a bad one is bad too (BadChainError, naming its own
// target). The links no pass brings to a terminal are those on a cycle of
// links or on a chain into one: more passes over them alone find the
// cycles (cycles.go), the others bad as chains to a bad link.

// hop is a link in the doubling passes.
type hop struct {
	key, other string // by id: the link, its pointer; by pointer: the pointer, the link
	target     string // the link's own target
	row        int64  // its node's row (the order Cycles names a cycle in)
	min        int64  // the least row of the links its pointer has passed over (from it, its pointer not included)
	done, bad  bool   // done: a terminal, or a link whose chain reached one (bad: a bad one)
	edge       bool   // a good link to a link (not a terminal)
}

func (h *hop) put(e *extsort.Enc) {
	e.Reset()
	e.S(h.key)
	e.Row(h.row)
	e.Row(h.min)
	e.S(h.other)
	e.S(h.target)
	var f uint8
	if h.done {
		f |= 1
	}
	if h.bad {
		f |= 2
	}
	if h.edge {
		f |= 4
	}
	e.Flag(f)
}

func (h *hop) get(rec []byte) {
	d := extsort.Dec{B: rec, Share: true}
	h.key = d.S()
	h.row, h.min = d.Row(), d.Row()
	h.other, h.target = d.S(), d.S()
	f := d.Flag()
	h.done, h.bad, h.edge = f&1 != 0, f&2 != 0, f&4 != 0
}

// hops are the sorts of the doubling passes.
type hops struct {
	byID, byPtr *extsort.Sorter
	edges       int64
	e           extsort.Enc
}

// newHops returns the sorts of a pass, which share one sort's budget:
// they fill beside the round's others (Settle).
func (lk *Links) newHops() *hops {
	sorter := func() *extsort.Sorter {
		x := extsort.New(lk.dir.Path, max(lk.budget/2, 1), extsort.CompareKeyRow)
		x.Prefix = extsort.PrefixKeyRow
		return x
	}
	return &hops{byID: sorter(), byPtr: sorter()}
}

func (h *hops) close() {
	if h != nil {
		h.byID.Close()
		h.byPtr.Close()
	}
}

// edge adds good link id at row, whose target is a link.
func (h *hops) edge(id, target string, row int64) error {
	return h.walking(&hop{key: id, other: target, target: target, row: row, min: row, edge: true})
}

// walking adds link x, not at the end of its chain (x.other is its
// pointer), to the sorts of a pass.
func (h *hops) walking(x *hop) error {
	h.edges++
	x.put(&h.e)
	if err := h.byID.Add(h.e.B); err != nil {
		return err
	}
	(&hop{key: x.other, other: x.key, target: x.target, row: x.row, min: x.min, edge: true}).put(&h.e)
	return h.byPtr.Add(h.e.B)
}

// terminal adds link id, the target of a link, which is no good link to
// a link: bad or not.
func (h *hops) terminal(id string, bad bool) error {
	(&hop{key: id, done: true, bad: bad}).put(&h.e)
	return h.byID.Add(h.e.B)
}

// chains resolves the good links to links of h (closed after), adding
// to next the problem of each that is bad: on a cycle, or on a chain to a
// bad link or to a cycle. It returns how many it added; it stops at
// ctx's end, within a pass's 65,536 links.
func (lk *Links) chains(ctx context.Context, h *hops, next *extsort.Sorter) (int64, error) {
	defer func() { h.close() }()
	if h.edges == 0 {
		return 0, nil
	}
	passes := 0
	for h.byPtr.Records > 0 {
		nh, finished, err := lk.hopPass(ctx, h)
		h.close()
		h, passes = nh, passes+1
		if err != nil {
			return 0, err
		}
		if finished == 0 {
			break // no link is further from its end than the last pass reached: the others never reach one
		}
	}
	it, err := h.byID.Sort()
	if err != nil {
		return 0, err
	}
	defer it.Close()
	var (
		x hop
		n int64
		e extsort.Enc
	)
	r := lk.newHops() // the links on a cycle or on a chain into one, still walking
	for rec, ok := it.Next(); ok; rec, ok = it.Next() {
		x.get(rec)
		switch {
		case !x.edge:
		case !x.done:
			if err := r.walking(&x); err != nil {
				r.close()
				return 0, err
			}
		case x.bad:
			putProblem(&e, x.key, 0, Plain, BadChainError(x.target).Error())
			if err := next.Add(e.B); err != nil {
				r.close()
				return 0, err
			}
			n++
		}
	}
	if err := it.Err(); err != nil {
		r.close()
		return 0, err
	}
	it.Close()
	h.close()
	h = nil
	m, err := lk.cycles(ctx, r, passes, next)
	return n + m, err
}

// hopPass is one doubling pass: each link not done (byPtr) is joined
// with the link it points at (byID, every link) and takes its pointer,
// or its end. finished is how many links it brought to their end.
func (lk *Links) hopPass(ctx context.Context, h *hops) (next *hops, finished int64, err error) {
	next = lk.newHops()
	next.edges = h.edges
	ids, err := h.byID.Sort()
	if err != nil {
		return next, 0, err
	}
	defer ids.Close()
	ptrs, err := h.byPtr.Sort()
	if err != nil {
		return next, 0, err
	}
	defer ptrs.Close()
	var (
		t, q hop
		e    extsort.Enc
	)
	// A link done is carried to the next pass as it is; one not done, as
	// its query makes it.
	carry := func() error {
		if !t.done {
			return nil
		}
		t.put(&e)
		return next.byID.Add(e.B)
	}
	cur, more := ids.Next()
	if more {
		t.get(cur)
	}
	var k int
	for rec, ok := ptrs.Next(); ok; rec, ok = ptrs.Next() {
		if k++; k&(1<<16-1) == 0 {
			if err := ctx.Err(); err != nil {
				return next, 0, err
			}
		}
		q.get(rec)
		for more && t.key < q.key {
			if err := carry(); err != nil {
				return next, 0, err
			}
			if cur, more = ids.Next(); more {
				t.get(cur)
			}
		}
		if !more || t.key != q.key {
			return next, 0, errors.New("importer: a link's target is not among the links (a bug): import with more --memory")
		}
		n := hop{key: q.other, row: q.row, min: min(q.min, t.min), target: q.target, edge: true, other: t.other, done: t.done, bad: t.bad}
		if n.done {
			n.other = ""
			finished++
		}
		n.put(&e)
		if err := next.byID.Add(e.B); err != nil {
			return next, 0, err
		}
		if !n.done {
			(&hop{key: n.other, other: n.key, target: n.target, row: n.row, min: n.min, edge: true}).put(&e)
			if err := next.byPtr.Add(e.B); err != nil {
				return next, 0, err
			}
		}
	}
	for ; more; cur, more = ids.Next() {
		t.get(cur)
		if err := carry(); err != nil {
			return next, 0, err
		}
	}
	return next, finished, errors.Join(ids.Err(), ptrs.Err())
}
