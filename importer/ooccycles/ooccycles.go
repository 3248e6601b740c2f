// Package ooccycles resolves, out of core, the nodes of an input that no
// level of the out-of-core passes reached: those in a cycle of parents or
// below one. It finds what an in-memory walk finds (transform.Forest's
// cycles: each walk starting at the first node not yet visited, in the
// order of the rows, and going up the parents) with sorted passes and
// merge joins on disk, in a memory bounded by the sorts' budget, whatever
// the number of nodes, the length of a cycle, or the depth of what hangs
// below one:
//
//   - the parents' rows, by a join of the ids;
//   - pointer doubling, each node's 2^k-th ancestor and the least row of
//     the 2^k nodes up to it, until each node's pointer is on its cycle
//     (the pointers, as many as the pass before: log2 of the longest way
//     down from a cycle, plus 2, passes), then of the cycles' members
//     alone until 2^k covers the longest cycle: a cycle's least row names
//     it;
//   - a second doubling, ended by the cycles, gives each node the first
//     cycle member it reaches (where its walk enters the cycle) and its
//     first ancestor (itself included) with a reason of its own;
//   - a sort by (cycle, row) gives each component (a cycle and what hangs
//     below it) its first row, whose walk names the cycle from its entry;
//     the cycle's first ids (20 at most are named) by a join a step;
//   - each node's reason: its own, else its nearest ancestor's that has
//     one, handed back in the order of the rows.
//
// It knows nodes as plain records and its caller's checks and reports
// through callbacks (Options).
package ooccycles

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/bits"
	"slices"

	"github.com/treeport/treeport/internal/extsort"
)

// Node is a node in or below a cycle.
type Node struct {
	Row        int64
	ID, Parent string
	// Own is its reason found before the cycles ("": none).
	Own string
	// Rec is the caller's record of it, handed back to Check, Cycle and
	// Done.
	Rec []byte
}

// Options are the passes' room and the caller's callbacks.
type Options struct {
	Dir    string // for the sorts' and spools' files
	Budget int    // each sort's memory
	// Phase, when set, is told how far a pass is.
	Phase func(name string, done, total int64)
	// Check is the node's own check, as a node whose place is not known:
	// its problem's text ("": none). Each node is checked once.
	Check func(rec []byte) string
	// Cycle is told each cycle, with the record of the node the walk
	// that found it entered it by, and its problem.
	Cycle func(rec []byte, err error) error
	// Done is told each node, in the order of the rows: checked, whether
	// Check found a problem (its own: reported); reason, its reason.
	Done func(rec []byte, checked bool, reason string) error
}

// none is a row that is no node's (a pointer's end, a first ancestor not
// found); it sorts after every row.
const none = int64(-1)

// maxIDs is how many ids of a cycle its problem names (CycleErrorOf).
const maxIDs = 20

// passes is one Resolve's: its nodes' count, and the sorts and spools
// it removes at its end.
type passes struct {
	ctx   context.Context
	o     Options
	n     int64
	files []interface{ Close() error }
	ticks int64
}

// tick is the context's error, asked every 65,536 records a pass reads:
// a pass over many nodes stops soon after it is cancelled.
func (p *passes) tick() error {
	if p.ticks++; p.ticks&(1<<16-1) == 0 {
		return p.ctx.Err()
	}
	return nil
}

// Resolve resolves the nodes each adds, which must be a whole set of
// nodes in or below cycles: each one's parent is one of them.
func Resolve(ctx context.Context, o Options, each func(add func(Node) error) error) error {
	p := &passes{ctx: ctx, o: o}
	defer func() {
		for _, f := range p.files {
			f.Close()
		}
	}()
	return p.run(each)
}

func (p *passes) run(each func(add func(Node) error) error) error {
	base, err := p.read(each)
	if err != nil || p.n == 0 {
		return err
	}
	all, members, err := p.doubling(base)
	if err != nil {
		return err
	}
	comp, err := p.labels(all, members)
	if err != nil {
		return err
	}
	reach, err := p.reach(base, comp)
	if err != nil {
		return err
	}
	texts, err := p.cycles(base, comp, reach)
	if err != nil {
		return err
	}
	owns, err := p.owns(base, comp, texts)
	if err != nil {
		return err
	}
	return p.reasons(base, reach, owns)
}

func (p *passes) phase(name string, done, total int64) {
	if p.o.Phase != nil {
		p.o.Phase(name, done, total)
	}
}

// sorter sorts records that begin with two rows, by them.
func (p *passes) sorter(phase string) *extsort.Sorter {
	x := extsort.New(p.o.Dir, p.o.Budget, compareRows)
	x.Prefix = extsort.PrefixRow
	x.OnSpill = func(n int64) { p.phase(phase+" (bytes spilled)", n, -1) }
	p.files = append(p.files, x)
	return x
}

// idSorter sorts records that begin with an id and a row.
func (p *passes) idSorter(phase string) *extsort.Sorter {
	x := extsort.New(p.o.Dir, p.o.Budget, extsort.CompareKeyRow)
	x.Prefix = extsort.PrefixKeyRow
	x.OnSpill = func(n int64) { p.phase(phase+" (bytes spilled)", n, -1) }
	p.files = append(p.files, x)
	return x
}

func compareRows(a, b []byte) int { return bytes.Compare(a[:16], b[:16]) }

// spool sorts x into a spool, ready to read, and removes x's files.
func (p *passes) spool(x *extsort.Sorter) (*extsort.Spool, error) {
	it, err := x.Sort()
	if err != nil {
		return nil, err
	}
	defer p.drop(x)
	defer it.Close()
	out, err := extsort.NewSpool(p.o.Dir)
	if err != nil {
		return nil, err
	}
	p.files = append(p.files, out)
	var k int64
	for rec, ok := it.Next(); ok; rec, ok = it.Next() {
		if k++; k&(1<<16-1) == 0 {
			if err := p.ctx.Err(); err != nil {
				return nil, err
			}
		}
		if err := out.Add(rec); err != nil {
			return nil, err
		}
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	return out, out.Rewind()
}

// drop closes a sort or a spool no longer read (its files are removed),
// and lets go of its buffers.
func (p *passes) drop(f interface{ Close() error }) {
	f.Close()
	if k := slices.Index(p.files, f); k >= 0 {
		p.files = slices.Delete(p.files, k, k+1)
	}
}

// rows are the first fields of a record: rows (8 bytes each).
func rowAt(rec []byte, k int) int64 { return int64(binary.BigEndian.Uint64(rec[8*k:])) }

func enc(e *extsort.Enc, rows ...int64) {
	e.Reset()
	for _, r := range rows {
		e.Row(r)
	}
}

// cursor reads a spool sorted by its first row, for a merge join.
type cursor struct {
	s   *extsort.Spool
	rec []byte
	ok  bool
}

func newCursor(s *extsort.Spool) (*cursor, error) {
	if err := s.Rewind(); err != nil {
		return nil, err
	}
	c := &cursor{s: s}
	c.rec, c.ok = s.Next()
	return c, nil
}

// seek moves to the record of row (true), or past where it would be.
func (c *cursor) seek(row int64) bool {
	for c.ok && uint64(rowAt(c.rec, 0)) < uint64(row) {
		c.rec, c.ok = c.s.Next()
	}
	return c.ok && rowAt(c.rec, 0) == row
}

func (c *cursor) err() error { return c.s.Err() }

// errBug is a pass that found what the passes before it rule out.
func errBug(what string) error {
	return errors.New("ooccycles: the out-of-core cycles' passes " + what + " (a bug): import with more --memory")
}

// rounds is how many doubling passes bring every node of n onto its
// cycle: 2^rounds > n.
func rounds(n int64) int { return bits.Len64(uint64(n)) }
