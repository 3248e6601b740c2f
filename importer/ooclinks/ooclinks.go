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
// sorted once more by link. What is held in memory is the links found
// bad (Err: the check of the next round gives them to their nodes) and
// the good links whose target is itself a link, for the cycles and the
// chains of links (Cycles, BadChains); a link to a node that is no link,
// the common case, is never held. Each good link's target path is
// written sorted by the link's row, for the emit's merge (Paths).
package ooclinks

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/internal/spill"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/transform"
)

// Links are an input's links, read out of core.
type Links struct {
	dir    *spill.Dir
	budget int // what a sort keeps in memory
	// memory is what the bad links and the links to links may take in
	// memory; bytes what they take.
	memory, bytes int64
	seq           int64
	read          *extsort.Sorter // the links as Add reads them, by id
	byID          *extsort.Spool  // each link once, by id: id, target, problem
	byTarget      *extsort.Spool  // target, link id
	count         int64
	known         *filter         // the links' ids and targets': the nodes Seen keeps
	nodes         *extsort.Sorter // the nodes a round's passes resolved, by id
	paths         *extsort.Sorter // the links' rows, the target's path each
	// errs are the links' problems the check of a round gives their
	// nodes; first says whether the first round's are among them.
	errs  map[string]error
	first bool
	// Again says another round must give the check the links found bad.
	Again bool
}

// FilterBytes is the size of the filter of the links' ids and targets'
// (at most; 16 bits a key), given what the links may hold in memory: a
// half of it. Tests set it smaller, to let through more of the nodes.
var FilterBytes = func(memory int64) int64 { return memory / 2 }

// New returns the links of an input, whose sorts keep budget bytes each
// in memory, in dir, which Close removes; memory is what the bad links
// and the links to links may hold.
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
	lk.bytes += int64(8 * len(lk.known.bits))
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
	for _, x := range []*extsort.Spool{lk.byID, lk.byTarget} {
		if x != nil {
			x.Close()
		}
	}
	lk.read, lk.paths, lk.byID, lk.byTarget = nil, nil, nil, nil
	lk.dir.Close()
}

func (lk *Links) endRound() {
	if lk.nodes != nil {
		lk.nodes.Close()
		lk.nodes = nil
	}
}

// Round begins a round of the passes: it reports whether the check has
// problems to give (Err).
func (lk *Links) Round() bool {
	lk.endRound()
	if lk.paths != nil {
		lk.paths.Close()
		lk.paths = nil
	}
	lk.nodes = lk.sorter(extsort.CompareKeyRow, extsort.PrefixKeyRow)
	lk.Again = false
	return len(lk.errs) > 0
}

// Err is the problem the check gives node id's link, nil for none.
func (lk *Links) Err(id string) error { return lk.errs[id] }

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
// node (kindSelf: its node, target, problem) and one of its target
// (kindTarget: the target's node, and whether it is a link).
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
}

// edge is a good link whose target is a link: for the cycles and chains.
type edge struct {
	id, target string
	row, trow  int64
}

// Settle ends a round's passes: it finds the links' problems the round
// tells, and whether another round must give them to the check (Again);
// place says where a node's record is. The first round finds the
// problems of readLinks (a target not in the input, or rejected by the
// read; a link to itself, to a bad link, a cycle of links); each later
// round, the links whose target its check rejected. With no new problem,
// the good links' target paths are ready for Path.
func (lk *Links) Settle(path string, memory int64, place func(file, line int) string) error {
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
	lk.paths = lk.sorter(extsort.CompareRow, extsort.PrefixRow)
	var (
		l       link
		bad     = map[string]error{} // the first round's problems
		edges   []edge
		pending = map[string]error{} // the later rounds'
	)
	for rec, ok := it.Next(); ok; {
		l = link{self: node{rows: l.self.rows[:0]}, t: node{rows: l.t.rows[:0]}}
		d := extsort.Dec{B: rec}
		l.id = string(d.Bytes())
		d.Row()
		l.self.dec(&d)
		l.target, l.problem = string(d.Bytes()), string(d.Bytes())
		if rec, ok = it.Next(); ok && string(firstKey(rec)) == l.id {
			d := extsort.Dec{B: rec}
			d.Bytes()
			d.Row()
			l.t.dec(&d)
			l.targetIsLink = d.Flag() == 1
			rec, ok = it.Next()
		}
		if !lk.first {
			if e, ok := lk.firstProblem(&l, place); e != nil {
				bad[l.id] = e
				lk.bytes += int64(len(l.id)+len(e.Error())) + 64
			} else if ok && l.targetIsLink {
				edges = append(edges, edge{l.id, l.target, l.self.row, l.t.row})
				lk.bytes += int64(len(l.id)+len(l.target)) + 64
			}
		}
		if l.problem == "" && lk.errs[l.id] == nil && l.self.seen && !l.self.rejected && l.t.rejected {
			pending[l.id] = fmt.Errorf("%w: %s %q: the target was rejected (%s)", transform.ErrLink, transform.LinkAttr, l.target, "see "+place(l.t.file, l.t.line))
			lk.bytes += int64(len(l.id)+len(pending[l.id].Error())) + 64
		}
		if lk.bytes > lk.memory {
			return lk.refuse(path, memory)
		}
		if err := lk.addPath(&l, pending[l.id]); err != nil {
			return err
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	if !lk.first {
		lk.first = true
		lk.chains(bad, edges)
		if lk.bytes > lk.memory {
			return lk.refuse(path, memory)
		}
		for _, e := range edges {
			lk.bytes -= int64(len(e.id)+len(e.target)) + 64
		}
		if len(bad) > 0 {
			lk.errs, lk.Again = bad, true
			return nil
		}
	}
	if len(pending) > 0 {
		if lk.errs == nil {
			lk.errs = map[string]error{}
		}
		for id, e := range pending {
			lk.errs[id] = e
		}
		lk.Again = true
	}
	return nil
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

// chains adds to bad the cycles of the good links to links, and the links
// to a bad link down every chain, as readLinks does: the links indexed in
// the order of their rows.
func (lk *Links) chains(bad map[string]error, edges []edge) {
	if len(edges) == 0 {
		return
	}
	type at struct {
		row int64
		id  string
	}
	var all []at
	for _, e := range edges {
		all = append(all, at{e.row, e.id}, at{e.trow, e.target})
	}
	slices.SortFunc(all, func(a, b at) int { return int(a.row - b.row) })
	all = slices.CompactFunc(all, func(a, b at) bool { return a.row == b.row })
	index := make(map[string]int32, len(all))
	for k, a := range all {
		index[a.id] = int32(k)
	}
	good := make(map[int32]int32, len(edges))
	for _, e := range edges {
		good[index[e.id]] = index[e.target]
	}
	counted := map[error]bool{} // a cycle's links share its problem
	for i, err := range Cycles(func(i int32) string { return all[i].id }, good) {
		bad[all[i].id] = err
		delete(good, i)
		lk.bytes += int64(len(all[i].id)) + 64
		if !counted[err] {
			counted[err] = true
			lk.bytes += int64(len(err.Error()))
		}
	}
	BadChains(good, func(i int32) bool { _, ok := bad[all[i].id]; return ok }, func(i, t int32) {
		bad[all[i].id] = BadChainError(all[t].id)
		lk.bytes += int64(len(all[i].id)+len(all[t].id)) + 128
	})
}

// addPath writes, for each row of link l's node, its target's path, or
// that it has none (rejected: the emit must not reach it).
func (lk *Links) addPath(l *link, pending error) error {
	good := l.problem == "" && lk.errs[l.id] == nil && pending == nil && l.t.seen && !l.t.rejected && l.t.path != nil
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

// refuse is the usage error of more bad links and links to links than
// their part of the budget holds.
func (lk *Links) refuse(path string, memory int64) error {
	return fmt.Errorf("%w: %s has more bad %s links and links to links than --memory %s holds out of core (about %s of them are held in memory, with their problems; "+
		"the good links to nodes that are no links are not): give --memory %s or more",
		ddbwrite.ErrUsage, path, transform.LinkAttr, units.SizeText(memory), units.SizeText(lk.bytes), units.SizeText(12*lk.bytes+(1<<20)))
}

// Runs is how many sorted runs the last round's target paths were
// written to: 0 when they fit in memory (tests).
func (lk *Links) Runs() int {
	if lk.paths == nil {
		return 0
	}
	return lk.paths.Runs()
}
