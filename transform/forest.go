package transform

import (
	"cmp"
	"encoding/binary"
	"errors"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Forest is the skeleton of an input: every node's id, parent and place in its
// tree, without the attributes' values. It is what lets treeport validate a
// whole input before writing anything, and then stream the attributes in a
// second read: ten million nodes take about 620 MB once built (62 bytes a
// node), and a whole import of them at most 654 MB of live heap (measured
// in benchmarks/README.md).
//
// A Forest is built once by a Builder and is then read-only: it is safe for
// concurrent reads.
type Forest struct {
	// Each node's parent and id, without a pointer for the garbage
	// collector to follow (see nodeRec); the ids of more than 8 bytes are
	// in the arena.
	nodes     []nodeRec
	arena     []byte
	depth     []int32
	root      []int32
	pathBytes []int32 // saturating
	maxAnc    []int32
	subtree   []int32
	attrBytes []uint32
	copyBytes []uint32
	loc       []uint64 // file index << 40 | line
	files     []string
	units     []string
	child0    []int32 // CSR: children of i are children[child0[i]:child0[i+1]]
	roots     int
	index     idIndex

	// topo: every node's parent has a smaller index than the node, as in
	// an input that lists parents first. Index order is then an order with
	// parents before children, there is no cycle, and the breadth-first
	// order and the children's CSR are only built when asked for.
	topo      bool
	order     []int32 // parents before children, breadth-first
	children  []int32
	orderOnce sync.Once
	childOnce sync.Once
	countOnce sync.Once

	warmSink atomic.Int32 // what WarmPaths read, kept so that the reads are not optimized away

	bounds     Bounds
	boundsOnce sync.Once
	heldMu     sync.Mutex
	held       map[string]bool // Bounds.IDsMayHold's answers so far

	rejected []uint64            // bitset
	reason   map[int32]*RowError // why a node was rejected; nil for descendants of one
	// orphan holds the missing parent of each node rejected for it, whose
	// reason is made when it is asked for (reasonOf): an input of
	// millions of orphans costs a map entry each, not a RowError.
	orphan map[int32]string

	// detached are the nodes whose parent is not known: missing, the
	// node itself, or on a row that could not be read. The path of such a
	// node, and of its descendants, is not known.
	detached []int32

	// reasonBy holds, for each rejected node, the node whose reason is
	// its reason: itself, or its nearest ancestor with one (-1: none).
	// Reason builds it on its first call, in one pass, so that the
	// reasons of a deep subtree cost its size, not its size times its
	// depth; Check and Reset drop it.
	reasonMu sync.Mutex
	reasonBy []int32

	// What Build found, so that Reset can undo what Check added.
	baseRejected []uint64
	baseReason   map[int32]*RowError

	// keep is how many problems Build, and then Check, return at most (0:
	// all); moreBuild and moreCheck count the ones they found beyond
	// (MoreProblems).
	keep                 int
	moreBuild, moreCheck int
}

// MoreProblems is how many problems Build and the last Check found beyond
// the ones they returned (Builder.KeepProblems).
func (f *Forest) MoreProblems() int { return f.moreBuild + f.moreCheck }

// full reports whether problems holds as many as are kept.
func (f *Forest) full(problems []*RowError) bool { return f.keep > 0 && len(problems) >= f.keep }

// nodeRec is a node's parent and id in 16 bytes: an id of up to 8 bytes is
// held in the record itself, and a longer one in the arena, at the offset
// the record holds. A walk up the parents, to make a path, then reads one
// cache line a node for most inputs, and a lookup in the index one.
type nodeRec struct {
	parent int32   // -1 for a root (or a node whose parent is missing)
	n      uint32  // the id's length
	b      [8]byte // the id, or its offset in the arena (little-endian)
}

// id is node i's id. It shares the memory of the record or of the arena,
// which is never written again where an id was stored.
func (f *Forest) id(i int32) string {
	r := &f.nodes[i]
	switch {
	case r.n == 0:
		return ""
	case r.n <= 8:
		return unsafe.String(&r.b[0], int(r.n))
	}
	return unsafe.String(&f.arena[binary.LittleEndian.Uint64(r.b[:])], int(r.n))
}

// idLen is the length of node i's id.
func (f *Forest) idLen(i int32) int { return int(f.nodes[i].n) }

// Reset forgets what Check rejected and goes back to the forest as Build
// made it, so that the same input can be checked against another layout.
func (f *Forest) Reset() {
	f.reasonBy = nil
	f.moreCheck = 0
	copy(f.rejected, f.baseRejected)
	f.reason = make(map[int32]*RowError, len(f.baseReason))
	for k, v := range f.baseReason {
		f.reason[k] = v
	}
}

// Len is the number of distinct nodes.
func (f *Forest) Len() int { return len(f.nodes) }

// Roots is the number of trees.
func (f *Forest) Roots() int { return f.roots }

// Lookup returns the index of the node with the id, or -1.
func (f *Forest) Lookup(id string) int { return int(f.index.get(id, f.index.hash(id), f)) }

// ID returns the id of node i.
func (f *Forest) ID(i int) string { return f.id(int32(i)) }

// Parent returns the index of node i's parent, or -1 for a root.
func (f *Forest) Parent(i int) int { return int(f.nodes[i].parent) }

// Depth returns the depth of node i (0 at a root).
func (f *Forest) Depth(i int) int { return int(f.depth[i]) }

// Children returns the indexes of node i's children, in index order. The
// slice is shared.
func (f *Forest) Children(i int) []int32 {
	f.buildChildren()
	return f.children[f.child0[i]:f.child0[i+1]]
}

// Order returns every placed node's index, parents before children
// (breadth-first from the roots, in index order). Nodes in a cycle, or
// below one, are not in it. The slice is shared.
func (f *Forest) Order() []int32 {
	if f.topo {
		f.orderOnce.Do(func() { f.order = f.bfs(nil) })
	}
	return f.order
}

// buildChildren fills the children's CSR, once: Build leaves it to the
// first call for an input that lists parents first.
func (f *Forest) buildChildren() {
	f.childOnce.Do(func() {
		if f.children != nil {
			return
		}
		f.countChildren()
		n := f.Len()
		f.children = make([]int32, f.child0[n])
		fill := make([]int32, n)
		copy(fill, f.child0[:n])
		for i := range f.nodes {
			if p := f.nodes[i].parent; p >= 0 {
				f.children[fill[p]] = int32(i)
				fill[p]++
			}
		}
	})
}

// countChildren makes child0, the CSR's offsets, from how many children
// each node has, once: only Children, the breadth-first order and Stats
// need them.
func (f *Forest) countChildren() {
	f.countOnce.Do(func() {
		n := f.Len()
		child0 := make([]int32, n+1)
		for i := range f.nodes {
			if p := f.nodes[i].parent; p >= 0 {
				child0[p+1]++
			}
		}
		for i := range n {
			child0[i+1] += child0[i]
		}
		f.child0 = child0
	})
}

// bfs returns the placed nodes breadth-first from the roots, in index
// order, each node's children in index order; placed, when not nil, marks
// each node it reaches.
func (f *Forest) bfs(placed []bool) []int32 {
	f.buildChildren()
	n := f.Len()
	order := make([]int32, 0, n)
	for i := range f.nodes {
		if f.nodes[i].parent < 0 {
			order = append(order, int32(i))
		}
	}
	for h := 0; h < len(order); h++ {
		order = append(order, f.Children(int(order[h]))...)
	}
	if placed != nil {
		for _, i := range order {
			placed[i] = true
		}
	}
	return order
}

// Location returns where node i was read.
func (f *Forest) Location(i int) (file string, line int, unit string) { return f.locate(f.loc[i]) }

// locate is the file, line and unit of a location (see Builder.location).
func (f *Forest) locate(l uint64) (file string, line int, unit string) {
	fi := int(l >> 40)
	return f.files[fi], int(l & (1<<40 - 1)), f.units[fi]
}

// Rejected reports whether node i is left out: it had a problem of its own,
// or one of its ancestors had.
func (f *Forest) Rejected(i int) bool { return f.rejected[i>>6]&(1<<(i&63)) != 0 }

// Reason says why node i was rejected: its own problem, or the ancestor that
// took it along. It is nil when the node is not rejected.
func (f *Forest) Reason(i int) error {
	if !f.Rejected(i) {
		return nil
	}
	if e := f.reasonOf(int32(i)); e != nil {
		return e
	}
	if a := f.rejectedBy(int32(i)); a >= 0 {
		return AncestorReason(f.id(a), f.reasonOf(a).Err)
	}
	return ErrAncestor
}

// reasonOf is node i's own reason, nil when it has none.
func (f *Forest) reasonOf(i int32) *RowError {
	if e := f.reason[i]; e != nil {
		return e
	}
	if p, ok := f.orphan[i]; ok {
		return f.missingParent(i, p)
	}
	return nil
}

// missingParent is the problem of node i, whose parent p is not in the
// input.
func (f *Forest) missingParent(i int32, p string) *RowError {
	file, line, unit := f.Location(int(i))
	return &RowError{File: file, Line: line, Unit: unit, ID: f.id(i), Err: MissingParentError(p)}
}

// rejectedBy is the node whose reason is node i's: i itself, or its nearest
// ancestor with a reason; -1 when there is none.
func (f *Forest) rejectedBy(i int32) int32 {
	f.reasonMu.Lock()
	defer f.reasonMu.Unlock()
	if f.reasonBy == nil {
		f.reasonBy = f.buildReasonBy()
	}
	return f.reasonBy[i]
}

// buildReasonBy makes reasonBy: each node walks up to the first node whose
// answer is known and passes it down the walk, so that every node is
// walked through once.
func (f *Forest) buildReasonBy() []int32 {
	const (
		unknown = -2
		walking = -3 // on the current walk: a cycle without a reason
	)
	by := make([]int32, f.Len())
	for i := range by {
		by[i] = unknown
	}
	for k := range f.reason {
		by[k] = k
	}
	for k := range f.orphan {
		by[k] = k
	}
	var walk []int32
	for i := range by {
		if by[i] != unknown || !f.Rejected(i) {
			continue
		}
		a := int32(i)
		for a >= 0 && by[a] == unknown {
			by[a] = walking
			walk = append(walk, a)
			a = f.nodes[a].parent
		}
		r := int32(-1)
		if a >= 0 && by[a] >= 0 {
			r = by[a]
		}
		for _, w := range walk {
			by[w] = r
		}
		walk = walk[:0]
	}
	return by
}

// RejectedCount is the number of rejected nodes, descendants included.
func (f *Forest) RejectedCount() int {
	n := 0
	for _, w := range f.rejected {
		for ; w != 0; w &= w - 1 {
			n++
		}
	}
	return n
}

func (f *Forest) reject(i int32, err *RowError) {
	f.rejected[i>>6] |= 1 << (i & 63)
	if err != nil {
		if f.reason == nil {
			f.reason = make(map[int32]*RowError)
		}
		if _, orphan := f.orphan[i]; f.reason[i] == nil && !orphan {
			f.reason[i] = err
		}
	}
}

// RejectMore rejects, after Check, each node of errs that is not rejected
// yet, with its problem (located as Check locates one), and its subtree
// with it. It returns the new problems, in index order: for a check that
// needs to know what Check rejected (a link to a rejected node).
func (f *Forest) RejectMore(errs map[int]error) []*RowError {
	var problems []*RowError
	for _, i := range slices.Sorted(maps.Keys(errs)) {
		if f.Rejected(i) {
			continue
		}
		file, line, unit := f.Location(i)
		re := &RowError{File: file, Line: line, Unit: unit, ID: f.id(int32(i)), Err: errs[i]}
		f.reject(int32(i), re)
		problems = append(problems, re)
	}
	if len(problems) > 0 {
		f.reasonMu.Lock()
		f.reasonBy = nil
		f.reasonMu.Unlock()
		f.propagate()
	}
	return problems
}

// HasChildren reports whether node i has children.
func (f *Forest) HasChildren(i int) bool { return f.childCount(i) > 0 }

// childCount is how many children node i has.
func (f *Forest) childCount(i int) int {
	f.countChildren()
	return int(f.child0[i+1] - f.child0[i])
}

// Stats fills s with node i's place in the forest.
func (f *Forest) Stats(i int, s *Stats) {
	*s = Stats{
		ID:                 f.id(int32(i)),
		RootID:             f.id(f.root[i]),
		Depth:              int(f.depth[i]),
		PathBytes:          int(f.pathBytes[i]),
		MaxAncestorIDBytes: int(f.maxAnc[i]),
		AttrBytes:          int(f.attrBytes[i]),
		Children:           f.childCount(i),
		Subtree:            int(f.subtree[i]),
		TreeSize:           int(f.subtree[f.root[i]]),
		Roots:              f.roots,
	}
	if f.copyBytes != nil {
		s.CopyBytes = int(f.copyBytes[i])
	} else {
		s.CopyBytes = s.AttrBytes
	}
	if p := f.nodes[i].parent; p >= 0 {
		s.ParentID = f.id(p)
	}
}

// Check runs check on every node and rejects the nodes it returns an error
// for, with their subtrees. A node below a rejected one is checked too, so
// that one run finds every problem of the input; but a node for which check
// returns the very error it returned for the node's parent goes with its
// parent without a problem of its own, so that a check that finds one
// problem with every node (an attribute name that no node may have)
// reports it once a tree.
//
// The path of a node in or below a cycle, or below a missing parent, a
// node that is its own parent or a row that could not be read, is not
// known. check sees such a node as a root of its own (rootStats), and the
// key lengths it finds for it (errors.Is ErrKeyTooLong), which it measured
// on a path that is not the node's, are dropped; its other problems (an id
// that holds the delimiter, an item over the limit even with no ancestor)
// are the node's own.
//
// Check returns the problems found, in index order: the order in which the
// nodes were first read; past the number the Builder was told to keep
// (KeepProblems), only their count, in MoreProblems. Every rejected node
// keeps its reason, returned or not.
func (f *Forest) Check(check func(i int, s *Stats) error) []*RowError {
	problems := f.check(check)
	f.moreCheck = 0
	if f.keep > 0 && len(problems) > f.keep {
		f.moreCheck = len(problems) - f.keep
		problems = slices.Clone(problems[:f.keep])
	}
	return problems
}

// check is Check, every problem returned.
func (f *Forest) check(check func(i int, s *Stats) error) []*RowError {
	f.reasonBy = nil
	unknown, unplaced := f.unknownPaths()
	var (
		problems []*RowError
		nodes    []int32 // of the problems
		origin   []int32 // 1 + the index in problems of what rejected each node here; made at the first problem
		s        Stats
	)
	visit := func(i int32) {
		var err error
		if unknown != nil && unknown[i>>6]&(1<<(i&63)) != 0 {
			f.rootStats(int(i), &s)
			err = withoutKeyLengths(check(int(i), &s))
		} else {
			f.Stats(int(i), &s)
			err = check(int(i), &s)
		}
		if err == nil {
			return
		}
		if origin == nil {
			origin = make([]int32, f.Len())
		}
		if p := f.nodes[i].parent; p >= 0 && origin[p] > 0 && (sameError(err, problems[origin[p]-1].Err) || longerKeys(err, problems[origin[p]-1].Err)) {
			origin[i] = origin[p]
			f.reject(i, nil)
			return
		}
		file, line, unit := f.Location(int(i))
		re := &RowError{File: file, Line: line, Unit: unit, ID: f.id(i), Err: err}
		f.reject(i, re)
		problems = append(problems, re)
		nodes = append(nodes, i)
		origin[i] = int32(len(problems))
	}
	if f.topo {
		// Index order has parents first, and reads the node arrays in
		// sequence.
		for i := range int32(f.Len()) {
			if i%warmLen == 0 {
				// Stats reads the parent's id.
				f.warm(int(i), int(i)+warmLen, 1)
			}
			visit(i)
		}
		f.propagate()
		return problems
	}
	for _, i := range f.order {
		visit(i)
	}
	for _, i := range unplaced {
		visit(i)
	}
	f.propagate()
	if len(problems) > 1 {
		idx := make([]int, len(problems))
		for k := range idx {
			idx[k] = k
		}
		sort.SliceStable(idx, func(a, b int) bool { return nodes[idx[a]] < nodes[idx[b]] })
		sorted := make([]*RowError, len(problems))
		for k, j := range idx {
			sorted[k] = problems[j]
		}
		problems = sorted
	}
	return problems
}

// sameError reports whether a and b are the same error value (never true
// of two errors whose type cannot be compared).
func sameError(a, b error) bool {
	if a == nil || b == nil {
		return false
	}
	// Only pointers: comparing two values of a struct type that holds a
	// slice would panic.
	ta := reflect.TypeOf(a)
	return ta == reflect.TypeOf(b) && ta.Kind() == reflect.Pointer && a == b
}

// longerKeys reports whether err is only keys over DynamoDB's limits below
// a node whose problem was keys over the limits too: the node's keys grow
// from its parent's, so its problem is its parent's, and a deep subtree
// under a long path is one problem, not one a node (which could take
// gigabytes on a deep input).
func longerKeys(err, parent error) bool {
	return errors.Is(parent, ErrKeyTooLong) && errors.Is(err, ErrKeyTooLong) && withoutKeyLengths(err) == nil
}

// unknownPaths returns, as a bitset, the nodes whose path is not known:
// those in or below a cycle (unplaced lists them) and those below a
// detached node. Both are nil when every path is known.
func (f *Forest) unknownPaths() (unknown []uint64, unplaced []int32) {
	all := f.topo || len(f.order) == f.Len()
	if len(f.detached) == 0 && all {
		return nil, nil
	}
	n := f.Len()
	unknown = make([]uint64, (n+63)/64)
	set := func(i int32) { unknown[i>>6] |= 1 << (i & 63) }
	has := func(i int32) bool { return unknown[i>>6]&(1<<(i&63)) != 0 }
	for _, d := range f.detached {
		set(d)
	}
	if len(f.detached) > 0 {
		// Parents first: a node below a detached one is detached too.
		down := func(i int32) {
			if p := f.nodes[i].parent; p >= 0 && has(p) {
				set(i)
			}
		}
		if f.topo {
			for i := range int32(n) {
				down(i)
			}
		} else {
			for _, i := range f.order {
				down(i)
			}
		}
	}
	if !all {
		placed := make([]uint64, len(unknown))
		for _, i := range f.order {
			placed[i>>6] |= 1 << (i & 63)
		}
		for i := range int32(n) {
			if placed[i>>6]&(1<<(i&63)) == 0 {
				set(i)
				unplaced = append(unplaced, i)
			}
		}
	}
	return unknown, unplaced
}

// rootStats fills s with what is known of node i without its ancestors:
// its id and its attributes' sizes, as if it were a root whose id is
// unknown (RootID is empty). Each measure is then at most the node's
// own, whatever its ancestors are. It is what Check passes for a node whose
// path is not known.
func (f *Forest) rootStats(i int, s *Stats) {
	*s = Stats{
		ID:        f.id(int32(i)),
		PathBytes: f.idLen(int32(i)),
		AttrBytes: int(f.attrBytes[i]),
		Children:  f.childCount(i),
		Subtree:   1,
		TreeSize:  1,
		Roots:     f.roots,
	}
	if f.copyBytes != nil {
		s.CopyBytes = int(f.copyBytes[i])
	} else {
		s.CopyBytes = s.AttrBytes
	}
}

// withoutKeyLengths is err without its key-length problems (see Check).
func withoutKeyLengths(err error) error {
	if err == nil || !errors.Is(err, ErrKeyTooLong) {
		return err
	}
	m, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return nil
	}
	var kept Problems
	for _, e := range m.Unwrap() {
		if !errors.Is(e, ErrKeyTooLong) {
			kept = append(kept, e)
		}
	}
	switch len(kept) {
	case 0:
		return nil
	case 1:
		return kept[0]
	}
	return kept
}

// Problems is several problems of one node, printed on one line.
type Problems []error

func (p Problems) Error() string {
	s := make([]string, len(p))
	for k, e := range p {
		s[k] = e.Error()
	}
	return strings.Join(s, "; ")
}

// Unwrap lets errors.Is and errors.As see every problem.
func (p Problems) Unwrap() []error { return p }

// SortProblems sorts problems by their place: by file, in the order in
// which the forest's files were read (a file it did not read comes last),
// then by line. It is stable: the problems of one line keep their order.
func (f *Forest) SortProblems(problems []*RowError) {
	if len(problems) < 2 {
		return
	}
	rank := make(map[string]int, len(f.files))
	for k, name := range f.files {
		if _, ok := rank[name]; !ok {
			rank[name] = k
		}
	}
	type keyed struct {
		file, line int
		p          *RowError
	}
	ks := make([]keyed, len(problems))
	for k, p := range problems {
		r, ok := rank[p.File]
		if !ok {
			r = len(f.files)
		}
		ks[k] = keyed{r, p.Line, p}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(a.file, b.file), cmp.Compare(a.line, b.line))
	})
	for k := range ks {
		problems[k] = ks[k].p
	}
}

// propagate rejects every descendant of a rejected node.
func (f *Forest) propagate() {
	if !slices.ContainsFunc(f.rejected, func(w uint64) bool { return w != 0 }) {
		return // nothing rejected
	}
	if f.topo {
		for i := range f.nodes {
			if p := f.nodes[i].parent; p >= 0 && f.Rejected(int(p)) {
				f.reject(int32(i), nil)
			}
		}
		return
	}
	for _, i := range f.order {
		if p := f.nodes[i].parent; p >= 0 && f.Rejected(int(p)) {
			f.reject(i, nil)
		}
	}
}

// AppendPath appends the ids from node i's root down to node i to dst.
// It walks up the parents, so it costs the node's depth. For a node that is
// not placed in a tree (one in a cycle, or below one), it appends the node's
// id alone.
func (f *Forest) AppendPath(dst []string, i int) []string {
	start := len(dst)
	d := int(f.depth[i])
	dst = slices.Grow(dst, d+1)[:start+d+1]
	n := int32(i)
	for k := start + d; k >= start; k-- {
		dst[k] = f.id(n)
		n = f.nodes[n].parent
	}
	return dst
}

// AppendPathText is AppendPath that also appends to text the ids joined by
// delim, strings.Join of what it appends to ids, in one walk up the
// parents: the ids it appends are the pieces of that text, and share its
// memory.
func (f *Forest) AppendPathText(ids []string, text []byte, i int, delim string) ([]string, []byte) {
	d := int(f.depth[i])
	// pathBytes is the length of the d+1 ids the walk below goes through,
	// unless it saturated, or the node is not placed (in or below a cycle,
	// where it is 0 and d is 0): then count.
	total := int(f.pathBytes[i])
	if total == math.MaxInt32 || total == 0 {
		total = 0
		n := int32(i)
		for range d + 1 {
			total += f.idLen(n)
			n = f.nodes[n].parent
		}
	}
	total += d * len(delim)
	start := len(text)
	text = slices.Grow(text, total)[:start+total]
	first := len(ids)
	ids = slices.Grow(ids, d+1)[:first+d+1]
	if len(delim) == 1 {
		f.joinPath(ids[first:], text[start:], int32(i), delim[0])
		return ids, text
	}
	// Any other delimiter: the same walk, without the tricks.
	t := text[start:]
	pos := len(t)
	n := int32(i)
	for k := d; k >= 0; k-- {
		id := f.id(n)
		pos -= len(id)
		copy(t[pos:], id)
		ids[first+k] = unsafe.String(unsafe.SliceData(t[pos:]), len(id))
		if k > 0 {
			pos -= len(delim)
			copy(t[pos:], delim)
		}
		n = f.nodes[n].parent
	}
	return ids, text
}

// WarmPaths reads the records of the ancestors of nodes from to to-1 (at
// most warmLen of them), so that AppendPath and AppendPathText find them in
// the cache: it walks their paths side by side, one level of all of them
// after the other, and the processor waits for a level's cache misses
// together instead of one after the other, as a walk up one path must. A
// caller that builds the paths of nodes in index order calls it for the
// next nodes when it gets to them. It changes nothing.
func (f *Forest) WarmPaths(from, to int) { f.warm(from, to, math.MaxInt32) }

// warm is WarmPaths for at most levels ancestors of each node.
func (f *Forest) warm(from, to int, levels int32) {
	var cur [warmLen]int32
	to = min(to, from+warmLen, len(f.nodes))
	k, deepest := 0, int32(0)
	for i := max(from, 0); i < to; i++ {
		cur[k] = int32(i)
		deepest = max(deepest, f.depth[i])
		k++
	}
	deepest = min(deepest, levels)
	nodes := f.nodes
	var sink int32
	// depth bounds each walk: a node in a cycle has depth 0.
	for range deepest {
		for j := range cur[:k] {
			if c := cur[j]; c >= 0 {
				c = nodes[c].parent
				cur[j] = c
				sink += c
			}
		}
	}
	f.warmSink.Add(sink)
}

// warmLen is the most nodes WarmPaths takes.
const warmLen = 64

// joinPath is AppendPathText's walk for a one-byte delimiter: out has a
// place for each id on node i's path and t exactly the room for their text.
//
// It is the hot loop of building path items, so it works on pointers, to
// keep its variables in registers and out of bounds checks, and writes the
// text from its end, the node's id first, a word of 8 bytes at a time: the
// bytes a word puts before an id land where the ids above it go next,
// which are written later. Only where a word would start before t does it
// copy byte by byte. An id of up to 8 bytes is one word of its record; a
// longer one is copied from the arena, which starts with arenaPad bytes of
// padding, so that a word ending in an id starts in the arena.
func (f *Forest) joinPath(out []string, t []byte, i int32, delim byte) {
	if len(t) == 0 || len(out) == 0 {
		return
	}
	pt := unsafe.Pointer(unsafe.SliceData(t))
	nodes := f.nodes
	pos := len(t)
	n := i
	for k := len(out) - 1; k >= 0; k-- {
		r := &nodes[n]
		l := int(r.n)
		if l > pos {
			panic("transform: a path longer than its node's pathBytes")
		}
		pos -= l
		if l <= 8 && pos+l >= 8 {
			w := binary.LittleEndian.Uint64(r.b[:]) << (8 * uint(8-l))
			binary.LittleEndian.PutUint64((*[8]byte)(unsafe.Add(pt, pos+l-8))[:], w)
		} else {
			putID(pt, pos, r, f, n)
		}
		out[k] = unsafe.String((*byte)(unsafe.Add(pt, pos)), l)
		if k > 0 {
			pos--
			*(*byte)(unsafe.Add(pt, pos)) = delim
		}
		n = r.parent
	}
}
