// Package ooclinks is the prefix layout's links (each record's link_to)
// for an input the importer reads out of core: their problems and their
// targets' paths found by sorts and merge joins on disk, without a bound
// on their count.
//
// The links are read once (Add), and sorted twice: by the link's id and
// by its target's. Each round of the importer's passes tells every node
// it resolved (Seen), to a sort by id; Settle then reads the three in one
// merge by id, which gives each link its own node's status and its
// target's (seen, rejected by the read or by the check, place and path),
// sorted once more by link. The links found bad are a file sorted by id
// (Problems), which the importer merges with its nodes sorted by id, for
// the check of the next round; the good links whose target is itself a
// link are resolved by pointer doubling over sorts (chains.go), and the
// cycles of links found by more of it (cycles.go): none is held in
// memory.
// Each good link's target path is written sorted by the link's row, for
// the emit's merge (Paths).
package ooclinks

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/internal/spill"
	"github.com/treeport/treeport/transform"
)

// Links are an input's links, read out of core.
type Links struct {
	dir      *spill.Dir
	budget   int   // what a sort keeps in memory
	memory   int64 // what the filter may take (FilterBytes)
	seq      int64
	read     *extsort.Sorter // the links as Add reads them, by id
	byID     *extsort.Spool  // each link once, by id: id, target, problem
	byTarget *extsort.Spool  // target, link id
	count    int64
	known    *filter         // the links' ids and targets': the nodes Seen keeps
	nodes    *extsort.Sorter // the nodes a round's passes resolved, by id
	paths    *extsort.Sorter // the links' rows, the target's path each
	// problems are the links' problems the check of a round gives their
	// nodes, by id (problems.go); first says whether the first round
	// found its own.
	problems *extsort.Spool
	first    bool
	// Again says another round must give the check the links found bad.
	Again bool
}

// FilterBytes is the size of the filter of the links' ids and targets'
// (at most; 16 bits a key), given the links' part of the budget: a half
// of it. Tests set it smaller, to let through more of the nodes.
var FilterBytes = func(memory int64) int64 { return memory / 2 }

// New returns the links of an input, whose sorts keep budget bytes each
// in memory, in dir, which Close removes; memory is the links' part of
// the budget, of which the filter takes FilterBytes.
func New(dir *spill.Dir, budget int, memory int64) *Links {
	lk := &Links{dir: dir, budget: budget, memory: memory}
	lk.read = lk.sorter(extsort.CompareKeyRow, extsort.PrefixKeyRow)
	return lk
}

func (lk *Links) sorter(cmp func(a, b []byte) int, prefix func([]byte) uint64) *extsort.Sorter {
	x := extsort.New(lk.dir.Path, lk.budget, cmp)
	x.Prefix = prefix
	return x
}

// Add reads record id's link_to, v. An id added again (a duplicate) keeps
// its first.
func (lk *Links) Add(id string, v types.AttributeValue) error {
	var target, problem string
	s, ok := v.(*types.AttributeValueMemberS)
	switch {
	case !ok || s == nil:
		problem = fmt.Sprintf("%s is %s, want the id of the node it links to (a string)", transform.LinkAttr, ddbjson.TypeName(v))
	case s.Value == id:
		problem = fmt.Sprintf("%s %q: the node links to itself", transform.LinkAttr, s.Value)
	default:
		target = s.Value
	}
	e := lk.record(id)
	e.S(target)
	e.S(problem)
	return lk.read.Add(e.B)
}

// record begins a record of id for a sort by id: the id, then its
// number in the order told (which orders an id told twice).
func (lk *Links) record(id string) extsort.Enc {
	var e extsort.Enc
	e.S(id)
	lk.seq++
	e.Row(lk.seq)
	return e
}

// Count is the number of links (after Done).
func (lk *Links) Count() int64 { return lk.count }

// Done ends the reading: the links are sorted by id, each once, and by
// target.
func (lk *Links) Done() error {
	it, err := lk.read.Sort()
	if err != nil {
		return err
	}
	defer func() { it.Close(); lk.read.Close(); lk.read = nil }()
	if lk.byID, err = extsort.NewSpool(lk.dir.Path); err != nil {
		return err
	}
	byTarget := lk.sorter(extsort.CompareKeyRow, extsort.PrefixKeyRow)
	defer byTarget.Close()
	var (
		last []byte
		e    extsort.Enc
	)
	lk.known = newFilter(2*lk.seq, FilterBytes(lk.memory))
	for rec, ok := it.Next(); ok; rec, ok = it.Next() {
		d := extsort.Dec{B: rec, Share: true}
		id := d.Bytes()
		if last != nil && bytes.Equal(id, last) {
			continue // a duplicate id: its first
		}
		last = append(last[:0], id...)
		d.Row()
		target, problem := d.S(), d.S()
		lk.known.add(id)
		lk.known.add([]byte(target))
		e.Reset()
		e.Bs(id)
		e.Row(0)
		e.S(target)
		e.S(problem)
		if err := lk.byID.Add(e.B); err != nil {
			return err
		}
		lk.count++
		if problem == "" {
			e.Reset()
			e.S(target)
			e.Row(lk.count)
			e.Bs(id)
			if err := byTarget.Add(e.B); err != nil {
				return err
			}
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	if lk.byTarget, err = extsort.NewSpool(lk.dir.Path); err != nil {
		return err
	}
	sorted, err := byTarget.Sort()
	if err != nil {
		return err
	}
	defer sorted.Close()
	for rec, ok := sorted.Next(); ok; rec, ok = sorted.Next() {
		if err := lk.byTarget.Add(rec); err != nil {
			return err
		}
	}
	return sorted.Err()
}

// Close removes the links' files.
func (lk *Links) Close() {
	if lk == nil {
		return
	}
	lk.endRound()
	for _, x := range []*extsort.Sorter{lk.read, lk.paths} {
		if x != nil {
			x.Close()
		}
	}
	for _, x := range []*extsort.Spool{lk.byID, lk.byTarget, lk.problems} {
		if x != nil {
			x.Close()
		}
	}
	lk.read, lk.paths, lk.byID, lk.byTarget, lk.problems = nil, nil, nil, nil, nil
	lk.dir.Close()
}

func (lk *Links) endRound() {
	if lk.nodes != nil {
		lk.nodes.Close()
		lk.nodes = nil
	}
}

// Round begins a round of the passes: it reports whether the check has
// problems to give (Problems).
func (lk *Links) Round() bool {
	lk.endRound()
	if lk.paths != nil {
		lk.paths.Close()
		lk.paths = nil
	}
	lk.nodes = lk.sorter(extsort.CompareKeyRow, extsort.PrefixKeyRow)
	lk.Again = false
	return lk.problemCount() > 0
}

// Seen tells of a node the round's passes resolved: its row, its place
// (file and line, for the place function Settle is given), whether the
// read rejected it (build: what a link may not point at) or the check,
// and its path, when it is not rejected. A node told again (a duplicate
// id) is known by the last.
func (lk *Links) Seen(id string, row int64, file, line int, build, rejected bool, path []string) error {
	if !lk.known.has(id) {
		return nil // neither a link nor a target
	}
	e := lk.record(id)
	e.Row(row)
	e.I(file)
	e.I(line)
	var f uint8
	if build {
		f |= 1
	}
	if rejected {
		f |= 2
		path = nil
	}
	e.Flag(f)
	e.Strs(path)
	return lk.nodes.Add(e.B)
}

// node is a node as a round's passes resolved it.
type node struct {
	seen, build, rejected bool
	row                   int64
	rows                  []int64 // each row of its id (a duplicate has several)
	file, line            int
	path                  []string
}

func (n *node) get(rec []byte) {
	d := extsort.Dec{B: rec}
	d.Bytes()
	d.Row()
	n.seen = true
	n.row = d.Row()
	n.rows = append(n.rows, n.row)
	n.file, n.line = d.I(), d.I()
	f := d.Flag()
	n.build, n.rejected = f&1 != 0, f&2 != 0
	n.path = d.Strs(n.path[:0])
}

func (n *node) put(e *extsort.Enc) {
	var f uint8
	if n.seen {
		f |= 1
	}
	if n.build {
		f |= 2
	}
	if n.rejected {
		f |= 4
	}
	e.Flag(f)
	e.Row(n.row)
	e.I(n.file)
	e.I(n.line)
	e.I(len(n.rows))
	for _, r := range n.rows {
		e.Row(r)
	}
	e.Strs(n.path)
}

func (n *node) dec(d *extsort.Dec) {
	f := d.Flag()
	n.seen, n.build, n.rejected = f&1 != 0, f&2 != 0, f&4 != 0
	n.row = d.Row()
	n.file, n.line = d.I(), d.I()
	n.rows = n.rows[:0]
	for k := d.I(); k > 0; k-- {
		n.rows = append(n.rows, d.Row())
	}
	n.path = d.Strs(n.path[:0])
}

// The kinds of a joined record: a link's own node, and its target.
const (
	kindSelf   = 1
	kindTarget = 2
)

// join reads the nodes of the round, the links by id and by target in one
// merge by id, and returns, sorted by link id, a record of each link's
// node (kindSelf: its node, target, problem, whether a good link points
// at it) and one of its target (kindTarget: the target's node, and
// whether it is a link).
func (lk *Links) join() (*extsort.Sorter, error) {
	nodes, err := lk.nodes.Sort()
	if err != nil {
		return nil, err
	}
	defer nodes.Close()
	if err := errors.Join(lk.byID.Rewind(), lk.byTarget.Rewind()); err != nil {
		return nil, err
	}
	out := lk.sorter(extsort.CompareKeyRow, extsort.PrefixKeyRow)
	nrec, nmore := nodes.Next()
	lrec, lmore := lk.byID.Next()
	trec, tmore := lk.byTarget.Next()
	var (
		n   node
		key []byte
		e   extsort.Enc
	)
	for nmore || lmore || tmore {
		key = key[:0]
		for _, r := range [][]byte{pick(nrec, nmore), pick(lrec, lmore), pick(trec, tmore)} {
			if r != nil && (len(key) == 0 || bytes.Compare(firstKey(r), key) < 0) {
				key = append(key[:0], firstKey(r)...)
			}
		}
		n = node{rows: n.rows[:0], path: n.path[:0]}
		for nmore && bytes.Equal(firstKey(nrec), key) {
			n.get(nrec)
			nrec, nmore = nodes.Next()
		}
		isLink := lmore && bytes.Equal(firstKey(lrec), key)
		if isLink {
			d := extsort.Dec{B: lrec}
			d.Bytes()
			d.Row()
			e.Reset()
			e.Bs(key)
			e.Row(kindSelf)
			n.put(&e)
			e.Bs(d.Bytes()) // the target
			e.Bs(d.Bytes()) // the problem
			e.Flag(flag(tmore && bytes.Equal(firstKey(trec), key)))
			if err := out.Add(e.B); err != nil {
				out.Close()
				return nil, err
			}
			lrec, lmore = lk.byID.Next()
		}
		for tmore && bytes.Equal(firstKey(trec), key) {
			d := extsort.Dec{B: trec}
			d.Bytes()
			d.Row()
			e.Reset()
			e.Bs(d.Bytes()) // the link's id
			e.Row(kindTarget)
			n.put(&e)
			e.Flag(flag(isLink))
			if err := out.Add(e.B); err != nil {
				out.Close()
				return nil, err
			}
			trec, tmore = lk.byTarget.Next()
		}
	}
	if err := errors.Join(nodes.Err(), lk.byID.Err(), lk.byTarget.Err()); err != nil {
		out.Close()
		return nil, err
	}
	return out, nil
}

func pick(rec []byte, ok bool) []byte {
	if ok {
		return rec
	}
	return nil
}

func flag(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

func firstKey(rec []byte) []byte {
	d := extsort.Dec{B: rec}
	return d.Bytes()
}

// link is a link of the joined records: its own node, and its target's.
type link struct {
	id, target, problem string
	self, t             node
	targetIsLink        bool
	isTarget            bool // a good link points at it
}

// Settle ends a round's passes: it finds the links' problems the round
// tells, and whether another round must give them to the check (Again);
// place says where a node's record is. The first round finds the
// problems of readLinks (a target not in the input, or rejected by the
// read; a link to itself, to a bad link, a cycle of links); each later
// round, the links whose target its check rejected. With no new problem,
// the good links' target paths are ready for Path. It stops at ctx's
// end, within 65,536 links.
func (lk *Links) Settle(ctx context.Context, place func(file, line int) string) error {
	joined, err := lk.join()
	if err != nil {
		return err
	}
	defer joined.Close()
	it, err := joined.Sort()
	if err != nil {
		return err
	}
	defer it.Close()
	old, err := lk.Problems()
	if err != nil {
		return err
	}
	lk.paths = lk.sorter(extsort.CompareRow, extsort.PrefixRow)
	// next is the problems of the next round: the first round's own, or
	// those so far and the round's targets rejected (pending).
	next := lk.sorter(extsort.CompareKeyRow, extsort.PrefixKeyRow)
	defer next.Close()
	var (
		l             link
		e             extsort.Enc
		bad, npending int64
		h             *hops // the first round's doubling passes
		k             int
	)
	if !lk.first {
		h = lk.newHops()
		defer func() { h.close() }()
	}
	for rec, ok := it.Next(); ok; {
		if k++; k&(1<<16-1) == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		l = link{self: node{rows: l.self.rows[:0]}, t: node{rows: l.t.rows[:0]}}
		d := extsort.Dec{B: rec}
		l.id = string(d.Bytes())
		d.Row()
		l.self.dec(&d)
		l.target, l.problem = string(d.Bytes()), string(d.Bytes())
		l.isTarget = d.Flag() == 1
		if rec, ok = it.Next(); ok && string(firstKey(rec)) == l.id {
			d := extsort.Dec{B: rec}
			d.Bytes()
			d.Row()
			l.t.dec(&d)
			l.targetIsLink = d.Flag() == 1
			rec, ok = it.Next()
		}
		if h != nil {
			n, err := lk.firstRound(&l, h, next, place)
			if err != nil {
				return err
			}
			bad += n
		}
		prev, _ := old.At([]byte(l.id))
		var rejected string
		if l.problem == "" && prev == "" && l.self.seen && !l.self.rejected && l.t.rejected {
			rejected = fmt.Sprintf("%s: %s %q: the target was rejected (%s)", transform.ErrLink, transform.LinkAttr, l.target, "see "+place(l.t.file, l.t.line))
			npending++
			putProblem(&e, l.id, pendingRow, Plain, rejected)
			if err := next.Add(e.B); err != nil {
				return err
			}
		}
		if err := lk.addPath(&l, prev != "" || rejected != ""); err != nil {
			return err
		}
	}
	if err := errors.Join(it.Err(), old.Err()); err != nil {
		return err
	}
	if h != nil {
		lk.first = true
		n, err := lk.chains(ctx, h, next)
		h = nil
		if err != nil {
			return err
		}
		if bad += n; bad > 0 {
			lk.Again = true
			return lk.newProblems(next, true)
		}
	}
	if npending == 0 {
		return nil
	}
	if old != nil { // the problems so far stay
		if err := lk.problems.Rewind(); err != nil {
			return err
		}
		for rec, ok := lk.problems.Next(); ok; rec, ok = lk.problems.Next() {
			if err := next.Add(rec); err != nil {
				return err
			}
		}
		if err := lk.problems.Err(); err != nil {
			return err
		}
	}
	lk.Again = true
	return lk.newProblems(next, false)
}

// firstRound finds the first round's problem of link l (readLinks's), adding
// it to next, and adds l to the doubling passes when a good link points
// at it or it is a good link to a link. It returns 1 for a problem.
func (lk *Links) firstRound(l *link, h *hops, next *extsort.Sorter, place func(file, line int) string) (int64, error) {
	p, good := lk.firstProblem(l, place)
	switch {
	case p != nil:
		var e extsort.Enc
		putProblem(&e, l.id, 0, Plain, p.Error())
		if err := next.Add(e.B); err != nil {
			return 0, err
		}
		if l.isTarget {
			return 1, h.terminal(l.id, true)
		}
		return 1, nil
	case good && l.targetIsLink:
		return 0, h.edge(l.id, l.target, l.self.row)
	case l.isTarget:
		return 0, h.terminal(l.id, false)
	}
	return 0, nil
}

// firstProblem is readLinks's problem of link l, when the read did not
// reject its node; ok says it is a good link.
func (lk *Links) firstProblem(l *link, place func(file, line int) string) (problem error, ok bool) {
	switch {
	case !l.self.seen || l.self.build:
		return nil, false // rejected already: its first record's reason
	case l.problem != "":
		return fmt.Errorf("%w: %s", transform.ErrLink, l.problem), false
	case !l.t.seen:
		return fmt.Errorf("%w: %s %q is not an id of the input; a link's row holds its target's key, its path, so the target must be in the input", transform.ErrLink, transform.LinkAttr, l.target), false
	case l.t.build:
		return fmt.Errorf("%w: %s %q: the target was rejected (%s)", transform.ErrLink, transform.LinkAttr, l.target, "see "+place(l.t.file, l.t.line)), false
	}
	return nil, true
}

// addPath writes, for each row of link l's node, its target's path, or
// that it has none (rejected: the emit must not reach it); bad says the
// link has a problem.
func (lk *Links) addPath(l *link, bad bool) error {
	good := l.problem == "" && !bad && l.t.seen && !l.t.rejected && l.t.path != nil
	var e extsort.Enc
	for _, r := range l.self.rows {
		e.Reset()
		e.Row(r)
		e.S(l.id)
		e.S(l.target)
		e.Flag(flag(good))
		if good {
			e.Strs(l.t.path)
		}
		if err := lk.paths.Add(e.B); err != nil {
			return err
		}
	}
	return nil
}

// Paths opens a cursor on the good links' target paths of the last
// round, for an emit (nil when lk is nil). Close it after.
func (lk *Links) Paths() (*Cursor, error) {
	if lk == nil {
		return nil, nil
	}
	if lk.paths == nil || lk.Again {
		return nil, errors.New("importer: the links' rounds are not settled")
	}
	it, err := lk.paths.Sort()
	if err != nil {
		return nil, err
	}
	c := &Cursor{it: it}
	c.cur, c.more = it.Next()
	return c, nil
}

// Cursor reads the links' target paths in the order of their rows.
type Cursor struct {
	it   *extsort.Iter
	cur  []byte
	more bool
}

// Path is the path of the target of the link of node id, at row, which
// the emit gives its row: nil when it is no link. The emit asks in the
// order of the rows.
func (c *Cursor) Path(row int64, id string) ([]string, error) {
	if c == nil {
		return nil, nil
	}
	for c.more && extsort.RowOf(c.cur) < row {
		c.cur, c.more = c.it.Next()
	}
	if err := c.it.Err(); err != nil {
		return nil, err
	}
	if !c.more || extsort.RowOf(c.cur) != row {
		return nil, nil
	}
	d := extsort.Dec{B: c.cur[8:]}
	lid, target := d.S(), d.S()
	if d.Flag() != 1 || lid != id {
		// The checks rejected it: its row is not emitted.
		return nil, fmt.Errorf("importer: the link %q to %q was not resolved (did the input change?)", id, target)
	}
	return d.Strs(nil), nil
}

// Close closes the cursor's files.
func (c *Cursor) Close() {
	if c != nil {
		c.it.Close()
	}
}

// Runs is how many sorted runs the last round's target paths were
// written to: 0 when they fit in memory (tests).
func (lk *Links) Runs() int {
	if lk.paths == nil {
		return 0
	}
	return lk.paths.Runs()
}
