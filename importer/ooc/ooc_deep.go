package ooc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"

	"github.com/treeport/treeport/internal/extsort"
)

// oocReader is what a level pass reads the nodes not yet placed from,
// sorted by parent: a spool of them, or one depth of them (depthReader).
type oocReader interface {
	Next() ([]byte, bool)
	Err() error
}

// narrowLevels is how many narrow levels (levels that place few of the
// nodes left: see buildOOC) are resolved a level at a time before the
// rest is resolved by doubling (deepPasses).
var narrowLevels = 24

// jump is a node in the doubling passes: its pointer (an ancestor; "" once
// it reached the first level) and its distance to it.
type jump struct {
	key, other string // by id: id, pointer; by pointer: pointer, id
	row        int64
	dist       int
	done       bool
	stuck      bool // its pointer is no node (never so: a check)
}

func (j *jump) put(e *extsort.Enc) {
	e.Reset()
	e.S(j.key)
	e.Row(j.row)
	e.S(j.other)
	e.I(j.dist)
	var f uint8
	if j.done {
		f |= 1
	}
	if j.stuck {
		f |= 2
	}
	e.Flag(f)
}

func (j *jump) get(rec []byte) {
	d := extsort.Dec{B: rec, Share: true}
	j.key = d.S()
	j.row = d.Row()
	j.other = d.S()
	j.dist = d.I()
	f := d.Flag()
	j.done, j.stuck = f&1 != 0, f&2 != 0
}

// deepPasses resolves the nodes of rest below level (which holds the
// nodes of one depth, and rest every node not yet placed) by doubling:
// each pass joins every node with its pointer, an ancestor, and takes
// that one's pointer, halving what is left of its way to level, so that
// log2(depth) passes give every node its distance below level. The nodes
// are then sorted by that distance, then by parent, and the levels are
// resolved as buildOOC does, each reading its own depth only. The nodes
// no pointer brings to level (in or below a cycle) are returned.
func (s *State) deepPasses(ctx context.Context, level *extsort.Sorter, rest *extsort.Spool, check oocChecker) (*extsort.Spool, error) {
	it, err := level.Sort()
	if err != nil {
		return nil, err
	}
	first := s.sorter("sorting a level")
	byID, byPtr := s.sorter("doubling (by id)"), s.sorter("doubling (by pointer)")
	defer func() { byID.Close(); byPtr.Close() }()
	var (
		n oocNode
		j jump
		e extsort.Enc
	)
	for rec, ok := it.Next(); ok; rec, ok = it.Next() {
		if err := first.Add(rec); err != nil {
			it.Close()
			first.Close()
			return nil, err
		}
		n.getLevel(rec)
		j = jump{key: n.id, row: n.row, done: true}
		j.put(&e)
		if err := byID.Add(e.B); err != nil {
			it.Close()
			first.Close()
			return nil, err
		}
	}
	err = it.Err()
	it.Close()
	if err == nil {
		err = addJumps(ctx, rest, byID, byPtr)
	}
	for pass := 1; err == nil && byPtr.Records > 0; pass++ {
		if err = ctx.Err(); err != nil {
			break
		}
		s.phase("doubling (nodes left)", byPtr.Records, -1)
		var nextID, nextPtr *extsort.Sorter
		var finished int64
		nextID, nextPtr, finished, err = s.jumpPass(ctx, byID, byPtr)
		byID.Close()
		byPtr.Close()
		byID, byPtr = nextID, nextPtr
		if err == nil && finished == 0 {
			break // no node is further from level than the last pass reached: the others never reach it
		}
	}
	if err != nil {
		first.Close()
		return nil, err
	}
	byDepth, left, err := s.sortByDepth(ctx, rest, byID)
	if err != nil {
		first.Close()
		return nil, err
	}
	defer byDepth.Close()
	if err := s.depthLevels(ctx, first, byDepth, check); err != nil {
		left.Close()
		return nil, err
	}
	return left, nil
}

// addJumps adds the nodes of rest, each pointing at its parent.
func addJumps(ctx context.Context, rest *extsort.Spool, byID, byPtr *extsort.Sorter) error {
	var (
		n oocNode
		e extsort.Enc
		k int64
	)
	for rec, ok := rest.Next(); ok; rec, ok = rest.Next() {
		if k++; k&(1<<16-1) == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		n.getByParent(rec, true)
		j := jump{key: n.id, row: n.row, other: n.parent, dist: 1}
		j.put(&e)
		if err := byID.Add(e.B); err != nil {
			return err
		}
		j.key, j.other = n.parent, n.id
		j.put(&e)
		if err := byPtr.Add(e.B); err != nil {
			return err
		}
	}
	if err := rest.Err(); err != nil {
		return err
	}
	return rest.Rewind()
}

// jumpPass is one doubling pass: each node not done (byPtr) is joined
// with its pointer (byID, every node) and takes its pointer and distance.
// finished is how many nodes it brought to level.
func (s *State) jumpPass(ctx context.Context, byID, byPtr *extsort.Sorter) (nextID, nextPtr *extsort.Sorter, finished int64, err error) {
	nextID, nextPtr = s.sorter("doubling (by id)"), s.sorter("doubling (by pointer)")
	fail := func(err error) (*extsort.Sorter, *extsort.Sorter, int64, error) {
		nextID.Close()
		nextPtr.Close()
		return nil, nil, 0, err
	}
	ids, err := byID.Sort()
	if err != nil {
		return fail(err)
	}
	defer ids.Close()
	ptrs, err := byPtr.Sort()
	if err != nil {
		return fail(err)
	}
	defer ptrs.Close()
	var (
		t, q jump
		e    extsort.Enc
	)
	// A node done is carried to the next pass as it is (a pointer's
	// target only); one not done is carried as its query makes it.
	carry := func() error {
		if !t.done && !t.stuck {
			return nil
		}
		t.put(&e)
		return nextID.Add(e.B)
	}
	cur, more := ids.Next()
	if more {
		t.get(cur)
	}
	var k int64
	for rec, ok := ptrs.Next(); ok; rec, ok = ptrs.Next() {
		if k++; k&(1<<16-1) == 0 {
			if err := ctx.Err(); err != nil {
				return fail(err)
			}
		}
		q.get(rec)
		for more && t.key < q.key {
			if err := carry(); err != nil {
				return fail(err)
			}
			if cur, more = ids.Next(); more {
				t.get(cur)
			}
		}
		id, ptr, dist, done, stuck := q.other, q.key, q.dist, false, true
		if more && t.key == q.key {
			ptr, dist, done, stuck = t.other, q.dist+t.dist, t.done, false
		}
		if done {
			finished++
		}
		(&jump{key: id, row: q.row, other: ptr, dist: dist, done: done, stuck: stuck}).put(&e)
		if err := nextID.Add(e.B); err != nil {
			return fail(err)
		}
		if !done && !stuck {
			(&jump{key: ptr, row: q.row, other: id, dist: dist}).put(&e)
			if err := nextPtr.Add(e.B); err != nil {
				return fail(err)
			}
		}
	}
	for ; more; cur, more = ids.Next() {
		t.get(cur)
		if err := carry(); err != nil {
			return fail(err)
		}
	}
	if err := errors.Join(ids.Err(), ptrs.Err()); err != nil {
		return fail(err)
	}
	return nextID, nextPtr, finished, nil
}

// sortByDepth joins rest, sorted by id, with the nodes' distances below
// level (byID, sorted by id): the nodes with a distance are returned
// sorted by it, then by parent, as depthReader reads them; the others, in
// or below a cycle, in a spool.
func (s *State) sortByDepth(ctx context.Context, rest *extsort.Spool, byID *extsort.Sorter) (*extsort.Sorter, *extsort.Spool, error) {
	restByID := s.sorter("sorting by id")
	defer restByID.Close()
	var (
		n oocNode
		e extsort.Enc
		k int64
	)
	for rec, ok := rest.Next(); ok; rec, ok = rest.Next() {
		if k++; k&(1<<16-1) == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		n.getByParent(rec, true)
		e.Reset()
		e.S(n.id)
		e.Row(n.row)
		e.B = append(e.B, rec...)
		if err := restByID.Add(e.B); err != nil {
			return nil, nil, err
		}
	}
	if err := rest.Err(); err != nil {
		return nil, nil, err
	}
	it, err := restByID.Sort()
	if err != nil {
		return nil, nil, err
	}
	defer it.Close()
	jumps, err := byID.Sort()
	if err != nil {
		return nil, nil, err
	}
	defer jumps.Close()
	left, err := extsort.NewSpool(s.dir)
	if err != nil {
		return nil, nil, err
	}
	byDepth := s.sorter("sorting by depth")
	fail := func(err error) (*extsort.Sorter, *extsort.Spool, error) {
		byDepth.Close()
		left.Close()
		return nil, nil, err
	}
	var j jump
	cur, more := jumps.Next()
	key := make([]byte, 8, 64)
	for rec, ok := it.Next(); ok; rec, ok = it.Next() {
		d := extsort.Dec{B: rec}
		id := d.Bytes()
		d.Row()
		for more && bytes.Compare(firstKey(cur), id) < 0 {
			cur, more = jumps.Next()
		}
		j = jump{}
		if more && bytes.Equal(firstKey(cur), id) {
			j.get(cur)
		}
		if !j.done {
			if err := left.Add(d.B); err != nil {
				return fail(err)
			}
			continue
		}
		n.getByParent(d.B, true)
		binary.BigEndian.PutUint64(key[:8], uint64(j.dist))
		key = append(key[:8], n.parent...)
		e.Reset()
		e.S(string(key))
		e.Row(n.row)
		e.B = append(e.B, d.B...)
		if err := byDepth.Add(e.B); err != nil {
			return fail(err)
		}
	}
	if err := errors.Join(it.Err(), jumps.Err()); err != nil {
		return fail(err)
	}
	if err := left.Rewind(); err != nil {
		return fail(err)
	}
	return byDepth, left, nil
}

// depthReader reads the nodes of one depth below the first level, sorted
// by parent, from the nodes sorted by depth; the first of the next depth
// waits for it.
type depthReader struct {
	it      *extsort.Iter
	depth   uint64
	rec     []byte // the record read and not yet returned (nil: none)
	done    bool
	skipped int64
}

func (r *depthReader) Next() ([]byte, bool) {
	for {
		if r.rec == nil && !r.done {
			rec, ok := r.it.Next()
			if !ok {
				r.done = true
			} else {
				r.rec = rec
			}
		}
		if r.rec == nil {
			return nil, false
		}
		d := extsort.Dec{B: r.rec}
		key := d.Bytes()
		d.Row()
		depth := binary.BigEndian.Uint64(key[:8])
		if depth > r.depth {
			return nil, false
		}
		r.rec = nil
		if depth == r.depth {
			return d.B, true
		}
		r.skipped++ // a node its level did not read: never so (a check)
	}
}

func (r *depthReader) Err() error { return r.it.Err() }

// depthLevels resolves the levels below first, each joined with the
// nodes of its depth.
func (s *State) depthLevels(ctx context.Context, first *extsort.Sorter, byDepth *extsort.Sorter, check oocChecker) error {
	it, err := byDepth.Sort()
	if err != nil {
		first.Close()
		return err
	}
	defer it.Close()
	r := &depthReader{it: it}
	level := first
	for level.Records > 0 {
		if err := ctx.Err(); err != nil {
			level.Close()
			return err
		}
		r.depth++
		if r.depth&1023 == 0 {
			s.phase("resolving by depth (levels)", int64(r.depth), -1)
		}
		next, _, _, err := s.levelPass(ctx, level, r, check, false, nil)
		level.Close()
		if err != nil {
			if next != nil {
				next.Close()
			}
			return err
		}
		level = next
	}
	level.Close()
	if r.skipped > 0 {
		return errors.New("importer: the out-of-core passes lost nodes resolving by depth (a bug): import with more --memory")
	}
	if _, ok := r.Next(); ok || r.rec != nil {
		return errors.New("importer: the out-of-core passes left nodes below the last level (a bug): import with more --memory")
	}
	return r.Err()
}

// withoutPlaced returns the nodes of rest whose ids are not in placed
// (nil: all of them), in the order of their ids.
func (s *State) withoutPlaced(rest *extsort.Spool, placed *extsort.Sorter) (*extsort.Spool, error) {
	out, err := extsort.NewSpool(s.dir)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*extsort.Spool, error) {
		out.Close()
		return nil, err
	}
	if err := rest.Rewind(); err != nil {
		return fail(err)
	}
	if placed == nil {
		for rec, ok := rest.Next(); ok; rec, ok = rest.Next() {
			if err := out.Add(rec); err != nil {
				return fail(err)
			}
		}
		if err := rest.Err(); err != nil {
			return fail(err)
		}
		return out, out.Rewind()
	}
	byID := s.sorter("sorting by id")
	defer byID.Close()
	var (
		n oocNode
		e extsort.Enc
	)
	for rec, ok := rest.Next(); ok; rec, ok = rest.Next() {
		n.getByParent(rec, true)
		e.Reset()
		e.S(n.id)
		e.Row(n.row)
		e.B = append(e.B, rec...)
		if err := byID.Add(e.B); err != nil {
			return fail(err)
		}
	}
	if err := rest.Err(); err != nil {
		return fail(err)
	}
	it, err := byID.Sort()
	if err != nil {
		return fail(err)
	}
	defer it.Close()
	ids, err := placed.Sort()
	if err != nil {
		return fail(err)
	}
	defer ids.Close()
	cur, more := ids.Next()
	for rec, ok := it.Next(); ok; rec, ok = it.Next() {
		d := extsort.Dec{B: rec}
		id := d.Bytes()
		d.Row()
		for more && bytes.Compare(firstKey(cur), id) < 0 {
			cur, more = ids.Next()
		}
		if more && bytes.Equal(firstKey(cur), id) {
			continue // placed by a level
		}
		if err := out.Add(d.B); err != nil {
			return fail(err)
		}
	}
	if err := errors.Join(it.Err(), ids.Err()); err != nil {
		return fail(err)
	}
	return out, out.Rewind()
}
