package ooc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/treeport/treeport/importer/emitbase"
	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// oocNode is a node in the records of the passes.
type oocNode struct {
	id, parent        string
	row               int64
	file, line        int
	attr, copy        int
	flags             uint8
	own               string // its own reason ("": none)
	anc               string // the reason its rejected ancestor gives it (frontier)
	depth             int
	root              string
	pathBytes, maxAnc int
	esc               int      // what JSON escapes add to the ids of its ancestors (OutOfCore.Plan)
	path              []string // its path, when the layout needs it (State.keepPath; else empty)
	// rank and prank are its place and its parent's in the order an
	// in-memory dry run visits the nodes of an input not in order
	// (breadth first: keepRank), among the nodes of their depth.
	rank, prank uint64
	// link is its link's problem the check gives it (ooc_links.go): its
	// kind (ooclinks.Plain, ooclinks.Cycle, or linkSame), then its
	// message; "": none.
	link string
	// byLink says its check's problem was its link's (resolve, for its
	// children: not in the records).
	byLink bool
}

// putByParent encodes n for the nodes sorted by parent.
func (n *oocNode) putByParent(e *extsort.Enc) {
	e.Reset()
	e.S(n.parent)
	e.Row(n.row)
	e.S(n.id)
	n.putRest(e)
}

func (n *oocNode) putRest(e *extsort.Enc) {
	e.I(n.file)
	e.I(n.line)
	e.I(n.attr)
	e.I(n.copy)
	e.Flag(n.flags)
	e.S(n.own)
	e.S(n.link)
}

func (n *oocNode) getRest(d *extsort.Dec) {
	n.file, n.line, n.attr, n.copy = d.I(), d.I(), d.I(), d.I()
	n.flags = d.Flag()
	n.own = d.S()
	n.link = d.S()
}

// getByParent decodes a record of putByParent; with share, n's strings
// are the record's memory.
func (n *oocNode) getByParent(rec []byte, share bool) {
	d := extsort.Dec{B: rec, Share: share}
	n.parent = d.S()
	n.row = d.Row()
	n.id = d.S()
	n.getRest(&d)
}

// putLevel encodes n for a level, sorted by id.
func (n *oocNode) putLevel(e *extsort.Enc) {
	e.Reset()
	e.S(n.id)
	e.Row(n.row)
	e.S(n.parent)
	n.putRest(e)
	e.S(n.anc)
	e.I(n.depth)
	e.S(n.root)
	e.I(n.pathBytes)
	e.I(n.maxAnc)
	e.I(n.esc)
	e.Strs(n.path)
	e.U(n.rank)
	e.U(n.prank)
}

// getLevel decodes a record of putLevel; n's strings are the record's
// memory.
func (n *oocNode) getLevel(rec []byte) {
	d := extsort.Dec{B: rec, Share: true}
	n.id = d.S()
	n.row = d.Row()
	n.parent = d.S()
	n.getRest(&d)
	n.anc = d.S()
	n.depth = d.I()
	n.root = d.S()
	n.pathBytes = d.I()
	n.maxAnc = d.I()
	n.esc = d.I()
	n.path = d.Strs(n.path[:0])
	n.rank, n.prank = d.U(), d.U()
}

// asRoot makes n the first node of its path: a root, or a detached node.
func (n *oocNode) asRoot(s *State) {
	n.depth, n.root, n.pathBytes, n.maxAnc, n.esc = 0, n.id, len(n.id), 0, 0
	n.path, n.rank, n.prank = n.path[:0], 0, 0
	if s.keepPath {
		n.path = append(n.path, n.id)
	}
}

// keepRank reports whether the nodes are ranked in the order an in-memory
// dry run visits them: for a dry run (OutOfCore.Plan) of an input that
// lists a child before its parent, whose collections are measured
// breadth first (collections), by depth, then by the rows of the path
// from the root down. That order is, within a depth, by the parent's
// rank, then by row: each level is sorted so, and ranked, before its
// join (rankLevel), and hands its ranks to its children. parentJoin finds
// whether the input is in order before the first level is resolved.
func (s *State) keepRank() bool { return s.opts.Plan && s.notTopo }

// rankLevel returns level (sorted by id) with each node's rank: its
// place among the level's nodes by (parent's rank, row), after those of
// the levels before.
func (s *State) rankLevel(level *extsort.Sorter) (*extsort.Sorter, error) {
	it, err := level.Sort()
	if err != nil {
		return nil, err
	}
	defer it.Close()
	byRank := s.sorter("ranking a level")
	defer byRank.Close()
	var (
		n   oocNode
		e   extsort.Enc
		key [8]byte
	)
	for rec, ok := it.Next(); ok; rec, ok = it.Next() {
		n.getLevel(rec)
		binary.BigEndian.PutUint64(key[:], n.prank)
		e.Reset()
		e.S(string(key[:]))
		e.Row(n.row)
		e.B = append(e.B, rec...)
		if err := byRank.Add(e.B); err != nil {
			return nil, err
		}
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	ranked, err := byRank.Sort()
	if err != nil {
		return nil, err
	}
	defer ranked.Close()
	out := s.sorter("sorting a level")
	for rec, ok := ranked.Next(); ok; rec, ok = ranked.Next() {
		d := extsort.Dec{B: rec}
		d.Bytes()
		d.Row()
		n.getLevel(d.B)
		s.ranks++
		n.rank = s.ranks
		n.putLevel(&e)
		if err := out.Add(e.B); err != nil {
			out.Close()
			return nil, err
		}
	}
	if err := ranked.Err(); err != nil {
		out.Close()
		return nil, err
	}
	return out, nil
}

// firstKey is the length-prefixed key a record of the passes starts with.
func firstKey(rec []byte) []byte { return extsort.FirstKey(rec) }

func (s *State) sorter(phase string) *extsort.Sorter {
	x := extsort.New(s.dir, s.opts.sortBudget(), extsort.CompareKeyRow)
	x.OnSpill = func(n int64) { s.phase(phase+" (bytes spilled)", n, -1) }
	x.Prefix = extsort.PrefixKeyRow
	// The merge of a pass's input runs on another core than the pass
	// (join, encoding, the next sort's filling), within the sort's
	// budget (extsort.aheadBatch).
	x.ReadAhead = true
	return x
}

// buildOOC runs the passes after the skeleton read (see OutOfCore).
func (in *input) buildOOC(ctx context.Context, b *Builder) error {
	s := b.ooc
	defer b.byID.Close()
	if b.err != nil {
		return b.err
	}
	check, err := in.oocCheck(ctx, s.layout)
	defer s.closeCarriers()
	if err != nil {
		return err
	}
	level, rest, err := s.byIDPass(ctx, b)
	if err != nil {
		return err
	}
	// A level's join reads every node not placed yet, and writes those it
	// does not place for the next one; a small level, which places few
	// of them (the first levels of most trees), reads them and writes
	// nothing: the nodes it placed stay in the file, never to match again
	// (an id is on one level), and their ids go to placed, to be told
	// from the others when the levels are done. After narrowLevels such
	// narrow levels (a deep tree, a chain), what is left is placed by
	// doubling (deepPasses): log2(depth) sorted passes instead of a read
	// of what is left for every level.
	var placed *extsort.Sorter // the ids placed by the levels that did not rewrite rest
	defer func() {
		if placed != nil {
			placed.Close()
		}
	}()
	narrow, initial, matched := 0, rest.Records, int64(0)
	for level.Records > 0 {
		s.phase("resolving a level (nodes)", level.Records, -1)
		if err := ctx.Err(); err != nil {
			level.Close()
			rest.Close()
			return err
		}
		rewrite := level.Records*8 >= rest.Records
		if !rewrite {
			if narrow++; narrow > narrowLevels {
				left, err := s.withoutPlaced(rest, placed)
				if err == nil {
					rest.Close()
					rest = left
					left, err = s.deepPasses(ctx, level, rest, check)
				}
				level.Close()
				rest.Close()
				if err != nil {
					return err
				}
				rest = left
				if placed != nil {
					placed.Close()
					placed = nil
				}
				break
			}
			if placed == nil {
				placed = s.sorter("placed ids")
			}
		}
		var into *extsort.Sorter
		if !rewrite {
			into = placed
		}
		next, left, m, err := s.levelPass(ctx, level, rest, check, rewrite, into)
		matched += m
		level.Close()
		if err == nil && !rewrite {
			err = rest.Rewind()
		}
		if err != nil {
			rest.Close()
			if next != nil {
				next.Close()
			}
			return err
		}
		if rewrite {
			rest.Close()
			rest = left
		}
		level = next
	}
	level.Close()
	if placed != nil && matched == initial {
		rest.Close() // every node placed: what is left was placed by a level
		return s.finish(ctx, in)
	}
	if placed != nil {
		left, err := s.withoutPlaced(rest, placed)
		rest.Close()
		if err != nil {
			return err
		}
		rest = left
	}
	defer rest.Close()
	if rest.Records > 0 {
		if err := s.cyclesPass(ctx, rest, check); err != nil {
			return err
		}
	}
	return s.finish(ctx, in)
}

// finish gives in the problems the passes found.
func (s *State) finish(ctx context.Context, in *input) error {
	if s.carriers != nil && s.carriers.err != nil {
		return s.carriers.err
	}
	if s.links != nil {
		if err := s.links.Settle(ctx, s.place); err != nil {
			return err
		}
	}
	in.Problems = slices.Concat(s.build.list(), s.missing.list(), s.cycles.list())
	s.ready = true
	return nil
}

// byIDPass merges the runs sorted by id: it finds the duplicate ids and
// the nodes that are their own parent, and sorts the nodes by parent;
// then a merge join with the ids finds the missing parents. It returns
// the first level (the roots and the detached nodes) and the other nodes,
// sorted by parent.
func (s *State) byIDPass(ctx context.Context, b *Builder) (level *extsort.Sorter, rest *extsort.Spool, err error) {
	it, err := b.byID.Sort()
	if err != nil {
		return nil, nil, err
	}
	defer it.Close()
	probs, err := s.links.Problems() // the bad links' problems, by id (ooc_links.go)
	if err != nil {
		return nil, nil, err
	}
	ids, err := extsort.NewSpool(s.dir)
	if err != nil {
		return nil, nil, err
	}
	defer ids.Close()
	byParent := s.sorter("sorting by parent")
	defer byParent.Close()
	level = s.sorter("sorting a level")
	var (
		first, dup oocNode
		copies     []int64 // the rows of the good copies after the first
		places     []string
		all        int
		e          extsort.Enc
		have       bool
		n          int64
	)
	flush := func() error {
		if !have {
			return nil
		}
		return s.placeNode(&first, copies, places, all, ids, byParent, level, &e)
	}
	for rec, ok := it.Next(); ok; rec, ok = it.Next() {
		if n++; n&(1<<16-1) == 0 {
			if err := ctx.Err(); err != nil {
				level.Close()
				return nil, nil, err
			}
			s.phase("merging by id (records)", n, b.byID.Records)
		}
		d := extsort.Dec{B: rec}
		id := d.Bytes()
		if have && id != nil && string(id) == first.id {
			row := d.Row()
			dup.parent = d.S()
			dup.getRest(&d)
			if dup.flags&fBad != 0 {
				continue // a row that could not be read is reported as that alone
			}
			if len(places) == 0 {
				places = append(places, s.place(first.file, first.line))
			}
			s.build.add(row, s.rowError(dup.file, dup.line, first.id, transform.DuplicateAlsoAt(places[0])))
			copies = append(copies, row)
			if len(places) < transform.MaxDupPlaces {
				places = append(places, s.place(dup.file, dup.line))
			}
			all++
			continue
		}
		if err := flush(); err != nil {
			level.Close()
			return nil, nil, err
		}
		first = oocNode{id: string(id), row: d.Row(), parent: d.S()}
		first.getRest(&d)
		first.link = linkOf(probs.At(id))
		// The first copy's place is made once a second is seen (it is
		// only told with copies).
		copies, places, all, have = copies[:0], places[:0], 1, true
	}
	if err := errors.Join(it.Err(), probs.Err()); err != nil {
		level.Close()
		return nil, nil, err
	}
	if err := flush(); err != nil {
		level.Close()
		return nil, nil, err
	}
	rest, err = s.parentJoin(ctx, ids, byParent, level)
	if err != nil {
		level.Close()
		return nil, nil, err
	}
	return level, rest, nil
}

// placeNode files a node whose copies byIDPass has all seen: its duplicate
// copies' rows are resolved rejected with its reason; a root or a
// detached node goes to the first level, another to byParent.
func (s *State) placeNode(n *oocNode, copies []int64, places []string, all int, ids *extsort.Spool, byParent, level *extsort.Sorter, e *extsort.Enc) error {
	s.nodes++
	if n.parent == n.id && n.flags&fBad == 0 {
		err := transform.ErrSelfParent
		s.build.add(n.row, s.rowError(n.file, n.line, n.id, err))
		n.own, n.flags = err.Error(), n.flags|fRejected|fUnknown|fBuild
	}
	if len(copies) > 0 {
		if n.own == "" {
			n.own = transform.DuplicatePlaces(places, all).Error()
		}
		n.flags |= fRejected | fBuild
		for _, row := range copies {
			if err := s.addResolved(row, n.own); err != nil {
				return err
			}
		}
	}
	e.Reset()
	e.S(n.id)
	e.Row(n.row) // for parentJoin to tell whether a parent came after its child
	if err := ids.Add(e.B); err != nil {
		return err
	}
	detached := n.flags&fUnknown != 0
	if detached || n.parent == "" {
		if !detached && n.flags&fRejected == 0 {
			s.roots++
		}
		n.asRoot(s)
		n.putLevel(e)
		if err := level.Add(e.B); err != nil {
			return err
		}
		if n.flags&fBad == 0 || n.parent == "" || n.parent == n.id {
			return nil
		}
		n.flags |= fJoinOnly // to report its parent if missing
	}
	n.putByParent(e)
	return byParent.Add(e.B)
}

// parentJoin merge-joins the nodes sorted by parent with the ids: a node
// whose parent is not an id is detached, with its problem, and goes to the
// first level; the others are returned, in a spool sorted by parent.
func (s *State) parentJoin(ctx context.Context, ids *extsort.Spool, byParent, level *extsort.Sorter) (*extsort.Spool, error) {
	if err := ids.Rewind(); err != nil {
		return nil, err
	}
	it, err := byParent.Sort()
	if err != nil {
		return nil, err
	}
	defer it.Close()
	rest, err := extsort.NewSpool(s.dir)
	if err != nil {
		return nil, err
	}
	id, more := ids.Next()
	var (
		n oocNode
		e extsort.Enc
		k int64
	)
	for rec, ok := it.Next(); ok; rec, ok = it.Next() {
		if k++; k&(1<<16-1) == 0 {
			if err := ctx.Err(); err != nil {
				rest.Close()
				return nil, err
			}
			s.phase("joining parents (records)", k, byParent.Records)
		}
		parent := firstKey(rec)
		for more && bytes.Compare(firstKey(id), parent) < 0 {
			id, more = ids.Next()
		}
		found := more && bytes.Equal(firstKey(id), parent)
		n.getByParent(rec, true)
		switch {
		case found && n.flags&fJoinOnly != 0:
			// A row that could not be read is its parent's child in memory too (Node.Inner).
			if err := s.badInner.Add(extsort.RowAfterKey(id)); err != nil {
				rest.Close()
				return nil, err
			}
		case found:
			d := extsort.Dec{B: id}
			d.Bytes()
			if d.Row() > n.row {
				s.notTopo = true // an in-memory forest is visited breadth first
			}
			if err := rest.Add(rec); err != nil {
				rest.Close()
				return nil, err
			}
		default:
			err := transform.MissingParentError(strings.Clone(n.parent))
			s.missing.add(n.row, s.rowError(n.file, n.line, n.id, err))
			if n.flags&fJoinOnly != 0 {
				continue
			}
			if n.own == "" {
				n.own = err.Error()
			}
			n.flags |= fRejected | fUnknown | fBuild
			n.asRoot(s)
			n.putLevel(&e)
			if err := level.Add(e.B); err != nil {
				rest.Close()
				return nil, err
			}
		}
	}
	if err := errors.Join(it.Err(), ids.Err()); err != nil {
		rest.Close()
		return nil, err
	}
	return rest, rest.Rewind()
}

// levelPass resolves one level, sorted by id: it checks and resolves each
// of its nodes, and merge-joins them with rest, the nodes not yet placed,
// sorted by parent. It returns the next level and what is left of rest.
//
// With rewrite, the nodes of rest it does not place are written to the
// returned spool; without, nothing is (rest is one depth of the nodes, all
// of them below level: see depthLevels). matched is how many nodes of
// rest it placed; with placed, their ids go to it too.
func (s *State) levelPass(ctx context.Context, level *extsort.Sorter, rest oocReader, check oocChecker, rewrite bool, placed *extsort.Sorter) (
	next *extsort.Sorter, left *extsort.Spool, matched int64, err error) {
	if s.keepRank() {
		ranked, err := s.rankLevel(level)
		if err != nil {
			return nil, nil, 0, err
		}
		defer ranked.Close()
		level = ranked
	}
	it, err := level.Sort()
	if err != nil {
		return nil, nil, 0, err
	}
	defer it.Close()
	next = s.sorter("sorting a level")
	if rewrite {
		if left, err = extsort.NewSpool(s.dir); err != nil {
			return next, nil, 0, err
		}
	}
	keep := func(rec []byte) error {
		if left == nil {
			return nil
		}
		return left.Add(rec)
	}
	fail := func(err error) (*extsort.Sorter, *extsort.Spool, int64, error) {
		if left != nil {
			left.Close()
		}
		return next, nil, matched, err
	}
	var (
		n, c oocNode
		e    extsort.Enc
		k    int64
	)
	cur, more := rest.Next()
	for rec, ok := it.Next(); ok; rec, ok = it.Next() {
		if k++; k&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return fail(err)
			}
		}
		n.getLevel(rec)
		for more && string(firstKey(cur)) < n.id {
			if err := keep(cur); err != nil {
				return fail(err)
			}
			cur, more = rest.Next()
		}
		if more && string(firstKey(cur)) == n.id {
			n.flags |= fInner // its children are all in rest, the next depth
		}
		origin, originKey, err := s.resolve(&n, check)
		if err != nil {
			return fail(err)
		}
		for more && string(firstKey(cur)) == n.id {
			matched++
			c.getByParent(cur, true)
			s.child(&n, &c, origin, originKey)
			if placed != nil {
				e.Reset()
				e.S(c.id)
				e.Row(c.row)
				if err := placed.Add(e.B); err != nil {
					return fail(err)
				}
			}
			c.putLevel(&e)
			if err := next.Add(e.B); err != nil {
				return fail(err)
			}
			cur, more = rest.Next()
		}
	}
	for ; more && left != nil; cur, more = rest.Next() {
		if err := left.Add(cur); err != nil {
			return fail(err)
		}
	}
	if err := errors.Join(it.Err(), rest.Err()); err != nil {
		return fail(err)
	}
	if left != nil {
		err = left.Rewind()
	}
	return next, left, matched, err
}

// child sets c, a child of n, in its place below n.
func (s *State) child(n, c *oocNode, origin, originKey bool) {
	c.depth, c.root = n.depth+1, n.root
	c.pathBytes = int(min(int64(n.pathBytes)+int64(len(c.id)), math.MaxInt32))
	c.maxAnc = max(n.maxAnc, len(n.id))
	c.esc = 0
	if s.opts.Plan {
		c.esc = int(min(int64(n.esc)+int64(emitbase.JSONStringBytes(n.id)-len(n.id)), math.MaxInt32))
	}
	// The path is kept only for a layout that builds items from it, and
	// a rejected node's descendants are rejected, with no path kept: a
	// deep chain below one does not grow them.
	c.path, c.rank, c.prank = c.path[:0], 0, n.rank
	if s.keepPath {
		if n.flags&fRejected == 0 {
			c.path = append(c.path, n.path...)
		}
		c.path = append(c.path, c.id)
	}
	c.flags |= n.flags & (fRejected | fUnknown | fBuild)
	c.flags &^= fOrigin | fOriginKey
	if origin {
		c.flags |= fOrigin
		if originKey {
			c.flags |= fOriginKey
		}
	}
	c.anc = n.anc
	s.sameLink(n, c)
	if n.own != "" {
		c.anc = transform.AncestorReason(n.id, errors.New(n.own)).Error()
	}
}

// resolve checks node n, whose place is known (or known not to be), and
// records its row resolved. origin says whether its check found a problem
// (its own, or its parent's that it goes with), originKey whether that
// was keys over DynamoDB's limits: what its children are checked against.
func (s *State) resolve(n *oocNode, check oocChecker) (origin, originKey bool, err error) {
	st := &s.st
	unknown := n.flags&fUnknown != 0
	if unknown {
		*st = transform.Stats{ID: n.id, PathBytes: len(n.id), AttrBytes: n.attr, CopyBytes: n.copy, Subtree: 1, TreeSize: 1, Roots: s.roots}
	} else {
		*st = transform.Stats{ID: n.id, ParentID: n.parent, RootID: n.root, Depth: n.depth, PathBytes: n.pathBytes,
			MaxAncestorIDBytes: n.maxAnc, AttrBytes: n.attr, CopyBytes: n.copy, Subtree: 1, TreeSize: 1, Roots: s.roots}
	}
	if n.flags&fInner != 0 && layouts.ImplicitInner(s.layout) {
		st.Children = 1 // (at least): whether the node gets items of its own
	}
	cerr := s.checkNode(n, check, st)
	if unknown {
		cerr = transform.WithoutKeyLengths(cerr)
	}
	var same *sameAsParent
	if cerr != nil {
		origin = true
		n.flags |= fRejected
		if n.flags&fOrigin != 0 && n.flags&fOriginKey != 0 && errors.Is(cerr, transform.ErrKeyTooLong) && transform.WithoutKeyLengths(cerr) == nil {
			originKey = true // its parent's problem, longer
		} else if errors.As(cerr, &same) && n.flags&fOrigin != 0 {
			// its parent's problem, the same (a cycle of links)
		} else {
			originKey = errors.Is(cerr, transform.ErrKeyTooLong)
			s.checked.add(n.row, s.rowError(n.file, n.line, n.id, cerr))
			if n.own == "" {
				n.own = cerr.Error()
			}
		}
	}
	if s.links != nil {
		if err := s.seenLink(n); err != nil {
			return origin, originKey, err
		}
	}
	if n.flags&fRejected != 0 {
		s.rejected++
		if n.flags&fBad != 0 {
			return origin, originKey, nil // its row is an error of the source's: no resolved row
		}
		reason := n.own
		if reason == "" {
			reason = n.anc
		}
		if reason == "" {
			reason = transform.ErrAncestor.Error()
		}
		return origin, originKey, s.addResolved(n.row, reason)
	}
	s.layoutMeasure(st)
	s.maxDepth = max(s.maxDepth, n.depth)
	s.maxLen = max(s.maxLen, n.pathBytes)
	return origin, originKey, s.addNode(n)
}

func (s *State) layoutMeasure(st *transform.Stats) { s.layout.Measure(st, s.measure) }

func (s *State) place(file, line int) string {
	return transform.Place(s.files[file], line, s.units[file])
}

func (s *State) rowError(file, line int, id string, err error) *transform.RowError {
	// id may be a record's memory, which the passes reuse.
	return &transform.RowError{File: s.files[file], Line: line, Unit: s.units[file], ID: strings.Clone(id), Err: err}
}

// oocChecker is the layout's check of one node (see CheckLayout).
type oocChecker func(id string, s *transform.Stats) error

// oocCheck is the check CheckLayout runs, for an input read out of core:
// the layout's (keys, items, delimiter), or, when the input has an
// attribute name the layout reserves, that of each record that has one.
func (in *input) oocCheck(ctx context.Context, l layouts.Layout) (oocChecker, error) {
	check, reserved, err := in.oocLayoutCheck(ctx, l)
	if err != nil || !layouts.Links(l) || !in.HasAttr(transform.LinkAttr) {
		return check, err
	}
	return in.ooc.withLinks(ctx, in, check, reserved)
}

// oocLayoutCheck is oocCheck without the links; reserved, when the input
// has an attribute name the layout reserves, is the check of each
// record's reserved names alone (check is it, then the layout's).
func (in *input) oocLayoutCheck(ctx context.Context, l layouts.Layout) (check, reserved oocChecker, err error) {
	bad := in.manyNames
	for k := range in.attrNames {
		if layouts.CheckAttrName(l, k) != nil {
			bad = true
		}
	}
	if bad {
		s := in.ooc
		s.closeCarriers()
		carriers, err := s.reservedCarriersByID(ctx, in, l)
		if err != nil {
			return nil, nil, err
		}
		if carriers.m.Len() > 0 || !in.manyNames {
			// A node's reserved names, else the layout's check, which
			// the others must pass as in an input without such a name
			// (carriersThenLayout).
			s.carriers = carriers
			layout := layoutCheck(l)
			reserved = func(id string, _ *transform.Stats) error { return carriers.check(id) }
			return func(id string, st *transform.Stats) error {
				if err := carriers.check(id); err != nil {
					return err
				}
				return layout(id, st)
			}, reserved, nil
		}
		carriers.close()
	}
	return layoutCheck(l), nil, nil
}

// layoutCheck is the layout's check of a node: keys, items, delimiter.
func layoutCheck(l layouts.Layout) oocChecker {
	checker := layouts.NewChecker(l)
	return func(_ string, s *transform.Stats) error {
		if checker.Fits(s) {
			return nil
		}
		return checker.Check(s)
	}
}
