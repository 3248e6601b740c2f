package ooc

import (
	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// Builder is the first pass of an out-of-core import: it takes the
// skeleton read's rows, as a transform.Builder does, and writes each
// row's node to runs sorted by id (byID); an empty id's row goes to the
// resolved rows at once.
type Builder struct {
	ooc      *State
	byID     *extsort.Sorter
	rows     int64
	copySet  bool // the closure copies a set of attributes: CopyBytes is its own
	e        extsort.Enc
	err      error
	rowBytes int64
}

// Node flags, in the records of the passes.
const (
	fBad       = 1 << iota // a row that could not be read, whose id is known
	fRejected              // rejected: its own problem, or an ancestor's
	fUnknown               // its path is not known (detached: bad row, self parent, missing parent; or below one)
	fOrigin                // the parent's check found a problem (see transform.Forest.Check)
	fOriginKey             // ... which was keys over DynamoDB's limits
	fJoinOnly              // a bad row's node, in the parent join only to report a missing parent
	fInner                 // it has children (transform.Node.Inner), found as its level is joined with them
	fBuild                 // rejected by the read itself (a bad row, duplicate, self or missing parent; or below one): what a link may not point at (ooc_links.go)
)

// NewBuilder begins the out-of-core import of the input at in.Path (a
// State, in its temporary directory in o.TmpDir), keeping the first keep
// problems of each kind (0: all); copySet: the closure copies a set of
// attributes (InputOptions.ClosureCopy). It refuses a TmpDir that cannot
// be written or has too little room for the passes, and o.Refuse.
func NewBuilder(o *OutOfCore, in Origin, keep int, copySet bool) (*Builder, error) {
	s, err := newState(o, in, keep)
	if err != nil {
		return nil, err
	}
	budget := o.sortBudget()
	s.resolved = extsort.New(s.dir, budget, extsort.CompareRow)
	s.resolved.Prefix = extsort.PrefixRow
	s.resolved.ReadAhead = true // merged on another core than the emit's
	s.badInner = extsort.NewRowSet(s.dir, budget)
	b := &Builder{ooc: s, byID: extsort.New(s.dir, budget, extsort.CompareKeyRow), copySet: copySet}
	b.byID.Prefix = extsort.PrefixKeyRow
	b.byID.ReadAhead = true
	b.byID.OnSpill = func(n int64) { s.phase("sorting by id (bytes spilled)", n, -1) }
	return b, nil
}

// Add takes a good row.
func (b *Builder) Add(rec *transform.Record, unit string, attrBytes, copyBytes int) {
	row := b.rows
	b.rows++
	fi := b.ooc.location(rec.File, unit)
	if rec.ID == "" {
		b.ooc.build.add(row, &transform.RowError{File: rec.File, Line: rec.Line, Unit: b.ooc.units[fi], Err: transform.ErrEmptyID})
		b.resolveRejected(row, transform.ErrEmptyID.Error())
		return
	}
	if !b.copySet {
		copyBytes = attrBytes
	}
	b.node(rec.ID, rec.Parent, row, fi, rec.Line, attrBytes, copyBytes, 0, "")
}

// AddBad takes a row that could not be read.
func (b *Builder) AddBad(err *transform.RowError, parent string) {
	row := b.rows
	b.rows++
	fi := b.ooc.location(err.File, err.Unit)
	b.ooc.build.add(row, err)
	if err.ID == "" {
		return
	}
	reason := ""
	if err.Err != nil {
		reason = err.Err.Error()
	}
	b.node(err.ID, parent, row, fi, err.Line, 0, 0, fBad|fRejected|fUnknown|fBuild, reason)
}

func (b *Builder) node(id, parent string, row int64, fi, line, attrBytes, copyBytes int, flags uint8, own string) {
	if b.err != nil {
		return
	}
	e := &b.e
	e.Reset()
	e.S(id)
	e.Row(row)
	e.S(parent)
	e.I(fi)
	e.I(line)
	e.I(attrBytes)
	e.I(copyBytes)
	e.Flag(flags)
	e.S(own)
	e.S("") // its link's problem: byIDPass gives it
	b.rowBytes += int64(len(e.B))
	b.err = b.byID.Add(e.B)
}

// resolveRejected records a good row that is rejected with reason.
func (b *Builder) resolveRejected(row int64, reason string) {
	if b.err == nil {
		b.err = b.ooc.addResolved(row, reason)
	}
}

// addResolved records a good row that is rejected, with the reason.
func (s *State) addResolved(row int64, reason string) error {
	e := &s.re
	e.Reset()
	e.Row(row)
	e.Flag(1)
	e.S(reason)
	return s.resolved.Add(e.B)
}

// addNode records a good row's node, placed and valid (flag 0, or 2 for a
// node with children under ImplicitInner): its depth, its
// path when the layout needs it (keepPath), and, for a dry run
// (OutOfCore.Plan), what collections and the ImportTable source's size
// take from its place: its id, parent and root, the bytes of its path,
// its longest ancestor id, its ancestors' JSON escapes, its rank
// (keepRank) and its attributes' sizes (an implicit inner node's items
// are measured from them: subtrees).
func (s *State) addNode(n *oocNode) error {
	e := &s.re
	e.Reset()
	e.Row(n.row)
	e.Flag(0)
	if n.flags&fInner != 0 && layouts.ImplicitInner(s.layout) {
		e.B[len(e.B)-1] = 2 // good, with children: an implicit inner node's items differ
	}
	e.I(n.depth)
	e.Strs(n.path)
	if !s.keepPath && !s.opts.Plan {
		e.S(n.parent) // to tell a row whose parent changed since (ooc emit)
	}
	if s.opts.Plan {
		e.S(n.id)
		e.S(n.parent)
		e.S(n.root)
		e.I(n.pathBytes)
		e.I(n.maxAnc)
		e.I(n.esc)
		e.U(n.rank)
		e.I(n.attr)
		e.I(n.copy)
	}
	return s.resolved.Add(e.B)
}

// resolvedNode is a valid node's record of addNode, as read back.
type resolvedNode struct {
	depth                  int
	path                   []string
	id, parent, root       string
	pathBytes, maxAnc, esc int
	rank                   uint64
	attr, copy             int // its attributes' sizes (a dry run's)
}

// get reads the rest of a record of addNode after its row and flag; with
// share, its strings are the record's memory.
func (r *resolvedNode) get(s *State, d *extsort.Dec) {
	r.depth = d.I()
	r.path = d.Strs(r.path[:0])
	if !s.keepPath && !s.opts.Plan {
		r.parent = d.S()
	}
	if s.opts.Plan {
		r.id, r.parent, r.root = d.S(), d.S(), d.S()
		r.pathBytes, r.maxAnc, r.esc = d.I(), d.I(), d.I()
		r.rank = d.U()
		r.attr, r.copy = d.I(), d.I()
	}
}
