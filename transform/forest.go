package transform

import (
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"unsafe"
)

// Forest is the skeleton of an input: every node's id, parent and place in its
// tree, without the attributes' values. It is what lets treeport validate a
// whole input before writing anything, and then stream the attributes in a
// second read: ten million nodes take 830 MB once built (83 bytes a node,
// measured in benchmarks/README.md).
//
// A Forest is built once by a Builder and is then read-only: it is safe for
// concurrent reads.
type Forest struct {
	ids       []string // interned in an arena, not one allocation each
	parent    []int32  // -1 for a root (or a node whose parent is missing)
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
	order     []int32 // parents before children
	child0    []int32 // CSR: children of i are children[child0[i]:child0[i+1]]
	children  []int32
	roots     int
	index     idIndex

	rejected []uint64            // bitset
	reason   map[int32]*RowError // why a node was rejected; nil for descendants of one

	// What Build found, so that Reset can undo what Check added.
	baseRejected []uint64
	baseReason   map[int32]*RowError
}

// Reset forgets what Check rejected and goes back to the forest as Build
// made it, so that the same input can be checked against another layout.
func (f *Forest) Reset() {
	copy(f.rejected, f.baseRejected)
	f.reason = make(map[int32]*RowError, len(f.baseReason))
	for k, v := range f.baseReason {
		f.reason[k] = v
	}
}

// Len is the number of distinct nodes.
func (f *Forest) Len() int { return len(f.ids) }

// Roots is the number of trees.
func (f *Forest) Roots() int { return f.roots }

// Lookup returns the index of the node with the id, or -1.
func (f *Forest) Lookup(id string) int { return int(f.index.get(id, f.ids)) }

// ID returns the id of node i.
func (f *Forest) ID(i int) string { return f.ids[i] }

// Parent returns the index of node i's parent, or -1 for a root.
func (f *Forest) Parent(i int) int { return int(f.parent[i]) }

// Depth returns the depth of node i (0 at a root).
func (f *Forest) Depth(i int) int { return int(f.depth[i]) }

// Children returns the indexes of node i's children. The slice is shared.
func (f *Forest) Children(i int) []int32 { return f.children[f.child0[i]:f.child0[i+1]] }

// Order returns every placed node's index, parents before children. Nodes in
// a cycle, or below one, are not in it. The slice is shared.
func (f *Forest) Order() []int32 { return f.order }

// Location returns where node i was read.
func (f *Forest) Location(i int) (file string, line int, unit string) {
	l := f.loc[i]
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
	if e := f.reason[int32(i)]; e != nil {
		return e
	}
	for a := f.parent[i]; a >= 0; a = f.parent[a] {
		if e := f.reason[a]; e != nil {
			return fmt.Errorf("%w: ancestor %q: %v", ErrAncestor, f.ids[a], e.Err)
		}
	}
	return ErrAncestor
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
		if f.reason[i] == nil {
			f.reason[i] = err
		}
	}
}

// Stats fills s with node i's place in the forest.
func (f *Forest) Stats(i int, s *Stats) {
	*s = Stats{
		ID:                 f.ids[i],
		RootID:             f.ids[f.root[i]],
		Depth:              int(f.depth[i]),
		PathBytes:          int(f.pathBytes[i]),
		MaxAncestorIDBytes: int(f.maxAnc[i]),
		AttrBytes:          int(f.attrBytes[i]),
		Children:           int(f.child0[i+1] - f.child0[i]),
		Subtree:            int(f.subtree[i]),
		TreeSize:           int(f.subtree[f.root[i]]),
		Roots:              f.roots,
	}
	if f.copyBytes != nil {
		s.CopyBytes = int(f.copyBytes[i])
	} else {
		s.CopyBytes = s.AttrBytes
	}
	if p := f.parent[i]; p >= 0 {
		s.ParentID = f.ids[p]
	}
}

// Check runs check on every placed node, parents before children, and
// rejects the nodes it returns an error for. A node below a rejected one is
// not checked: it goes with its ancestor. Check returns the problems found.
func (f *Forest) Check(check func(i int, s *Stats) error) []*RowError {
	var problems []*RowError
	var s Stats
	for _, i := range f.order {
		if f.Rejected(int(i)) {
			continue
		}
		if p := f.parent[i]; p >= 0 && f.Rejected(int(p)) {
			f.reject(i, nil)
			continue
		}
		f.Stats(int(i), &s)
		if err := check(int(i), &s); err != nil {
			file, line, unit := f.Location(int(i))
			re := &RowError{File: file, Line: line, Unit: unit, ID: f.ids[i], Err: err}
			f.reject(i, re)
			problems = append(problems, re)
		}
	}
	f.propagate()
	return problems
}

// propagate rejects every descendant of a rejected node.
func (f *Forest) propagate() {
	for _, i := range f.order {
		if p := f.parent[i]; p >= 0 && f.Rejected(int(p)) {
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
		dst[k] = f.ids[n]
		n = f.parent[n]
	}
	return dst
}

type pending struct {
	i   int32
	err *RowError
}

type pendingParent struct {
	i  int32
	id string
}

// Builder collects the skeleton of an input, one record at a time, and then
// builds the Forest. It is not safe for concurrent use.
type Builder struct {
	f   Forest
	ids arena
	// Parents that had not been seen when their child was added, resolved
	// by Build. In an input where parents come first, it stays empty.
	unresolved []pendingParent
	pids       arena
	fileIdx    map[string]int
	problems   []*RowError
	preReject  []pending
	keepCopy   bool
	lastFile   int // index in f.files of the file of the last Add
}

// NewBuilder returns a Builder. sizeHint is the expected number of nodes (0
// if unknown). With copyBytes, Add's copyBytes argument is kept for the
// closure layout's ancestor rows.
func NewBuilder(sizeHint int, copyBytes bool) *Builder {
	b := &Builder{fileIdx: map[string]int{}, keepCopy: copyBytes}
	if sizeHint > 0 {
		b.f.ids = make([]string, 0, sizeHint)
		b.f.parent = make([]int32, 0, sizeHint)
		b.f.loc = make([]uint64, 0, sizeHint)
		b.f.attrBytes = make([]uint32, 0, sizeHint)
	}
	b.f.index.init(sizeHint)
	return b
}

func (b *Builder) location(file string, line int, unit string) uint64 {
	if len(b.f.files) > 0 && file == b.f.files[b.lastFile] {
		return uint64(b.lastFile)<<40 | uint64(line)&(1<<40-1)
	}
	fi, ok := b.fileIdx[file]
	b.lastFile = fi
	if !ok {
		fi = len(b.f.files)
		b.fileIdx[file] = fi
		b.f.files = append(b.f.files, file)
		if unit == "" {
			unit = "line"
		}
		b.f.units = append(b.f.units, unit)
		b.lastFile = fi
	}
	return uint64(fi)<<40 | uint64(line)&(1<<40-1)
}

// Add records one node. attrBytes is the size of its attributes
// (AttrsSize) and copyBytes the size of what a closure ancestor row copies.
// unit is "line" or "row". A problem that Add finds (an empty or duplicate
// id, a node that is its own parent) is kept for Build to return. Add keeps
// copies of rec's ID and Parent, never the strings themselves, so a caller
// may pass strings over a buffer it reuses; File is kept as it is.
func (b *Builder) Add(rec *Record, unit string, attrBytes, copyBytes int) {
	b.add(rec.ID, rec.Parent, rec.File, rec.Line, unit, attrBytes, copyBytes, nil)
}

// AddBad records a row that could not be read. When the row's id is known,
// the node is kept as rejected, so that its children are rejected with it
// instead of being reported as orphans.
func (b *Builder) AddBad(err *RowError, parent string) {
	b.problems = append(b.problems, err)
	if err.ID == "" {
		return
	}
	b.add(err.ID, parent, err.File, err.Line, err.Unit, 0, 0, err)
}

func (b *Builder) add(id, parent, file string, line int, unit string, attrBytes, copyBytes int, bad *RowError) {
	if id == "" {
		if bad == nil {
			b.problems = append(b.problems, &RowError{File: file, Line: line, Unit: unit, Err: ErrEmptyID})
		}
		return
	}
	i := int32(len(b.f.ids))
	slot, j := b.f.index.find(id, b.f.ids)
	if j >= 0 {
		if bad == nil {
			ff, fl, _ := b.f.Location(int(j))
			err := &RowError{File: file, Line: line, Unit: unit, ID: b.f.ids[j],
				Err: fmt.Errorf("%w: also at %s", ErrDuplicateID, place(ff, fl))}
			b.problems = append(b.problems, err)
			b.preReject = append(b.preReject, pending{j, err})
		}
		return
	}
	if len(b.f.ids) >= math.MaxInt32-1 {
		panic("transform: more than 2^31 nodes")
	}
	sid := b.ids.intern(id)
	b.f.ids = append(b.f.ids, sid)
	b.f.index.putAt(slot, i, b.f.ids)
	p := int32(-1) // a root, or its own parent (reported below)
	if parent != "" && parent != id {
		if p = b.f.index.get(parent, b.f.ids); p < 0 {
			b.unresolved = append(b.unresolved, pendingParent{i, b.pids.intern(parent)})
		}
	}
	b.f.parent = append(b.f.parent, p)
	b.f.loc = append(b.f.loc, b.location(file, line, unit))
	b.f.attrBytes = append(b.f.attrBytes, clampU32(attrBytes))
	if b.keepCopy {
		for len(b.f.copyBytes) < int(i) {
			b.f.copyBytes = append(b.f.copyBytes, 0)
		}
		b.f.copyBytes = append(b.f.copyBytes, clampU32(copyBytes))
	}
	if bad != nil {
		b.preReject = append(b.preReject, pending{i, bad})
	}
	if parent == id && bad == nil {
		err := &RowError{File: file, Line: line, Unit: unit, ID: sid, Err: ErrSelfParent}
		b.problems = append(b.problems, err)
		b.preReject = append(b.preReject, pending{i, err})
	}
}

func place(file string, line int) string {
	if file == "" {
		return fmt.Sprintf("line %d", line)
	}
	return fmt.Sprintf("%s:%d", file, line)
}

func clampU32(n int) uint32 {
	if n < 0 {
		return 0
	}
	if n > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(n)
}

// Build resolves parents, finds missing parents and cycles, places every node
// in its tree (iteratively: a chain of any depth is fine) and returns the
// forest with the problems found so far, in input order. Rejected nodes and
// their descendants are marked. The Builder must not be used afterwards.
func (b *Builder) Build() (*Forest, []*RowError) {
	f := &b.f
	n := len(f.ids)
	f.rejected = make([]uint64, (n+63)/64)
	for _, p := range b.preReject {
		f.reject(p.i, p.err)
	}
	problems := b.problems

	// Resolve the parents that came after their children.
	for _, pp := range b.unresolved {
		p := f.index.get(pp.id, f.ids)
		if p < 0 {
			file, line, unit := f.Location(int(pp.i))
			re := &RowError{File: file, Line: line, Unit: unit, ID: f.ids[pp.i],
				Err: fmt.Errorf("%w: parent %q", ErrMissingParent, pp.id)}
			problems = append(problems, re)
			f.reject(pp.i, re)
			continue
		}
		f.parent[pp.i] = p
	}
	b.unresolved = nil
	b.pids = arena{}

	// Children in CSR form.
	f.child0 = make([]int32, n+1)
	for i := 0; i < n; i++ {
		if p := f.parent[i]; p >= 0 {
			f.child0[p+1]++
		}
	}
	for i := 0; i < n; i++ {
		f.child0[i+1] += f.child0[i]
	}
	f.children = make([]int32, f.child0[n])
	fill := make([]int32, n)
	copy(fill, f.child0[:n])
	for i := 0; i < n; i++ {
		if p := f.parent[i]; p >= 0 {
			f.children[fill[p]] = int32(i)
			fill[p]++
		}
	}
	fill = nil

	// Breadth-first from the roots: order, depth, root, path bytes.
	f.order = make([]int32, 0, n)
	f.depth = make([]int32, n)
	f.root = make([]int32, n)
	f.pathBytes = make([]int32, n)
	f.maxAnc = make([]int32, n)
	placed := make([]bool, n)
	for i := 0; i < n; i++ {
		if f.parent[i] < 0 {
			f.order = append(f.order, int32(i))
			f.root[i] = int32(i)
			f.pathBytes[i] = clampI32(len(f.ids[i]))
			placed[i] = true
			if !f.Rejected(i) {
				f.roots++
			}
		}
	}
	for h := 0; h < len(f.order); h++ {
		p := f.order[h]
		for _, c := range f.Children(int(p)) {
			f.order = append(f.order, c)
			placed[c] = true
			f.depth[c] = f.depth[p] + 1
			f.root[c] = f.root[p]
			f.pathBytes[c] = clampI32(int(f.pathBytes[p]) + len(f.ids[c]))
			f.maxAnc[c] = max(f.maxAnc[p], clampI32(len(f.ids[p])))
		}
	}

	// What is not placed is in a cycle or below one.
	if len(f.order) < n {
		problems = append(problems, f.cycles(placed)...)
	}

	// Subtree sizes, children before parents.
	f.subtree = make([]int32, n)
	for h := len(f.order) - 1; h >= 0; h-- {
		i := f.order[h]
		f.subtree[i]++
		if p := f.parent[i]; p >= 0 {
			f.subtree[p] += f.subtree[i]
		}
	}
	f.propagate()
	f.baseRejected = append([]uint64(nil), f.rejected...)
	f.baseReason = make(map[int32]*RowError, len(f.reason))
	for k, v := range f.reason {
		f.baseReason[k] = v
	}
	return f, problems
}

// cycles reports each cycle once, with its ids, and rejects every node that
// could not be placed.
func (f *Forest) cycles(placed []bool) []*RowError {
	var problems []*RowError
	state := make([]uint8, len(f.ids)) // 0 new, 1 on the current walk, 2 done
	for i := range f.ids {
		if placed[i] || state[i] != 0 {
			continue
		}
		var walk []int32
		n := int32(i)
		for n >= 0 && !placed[n] && state[n] == 0 {
			state[n] = 1
			walk = append(walk, n)
			n = f.parent[n]
		}
		if n >= 0 && state[n] == 1 {
			// walk from n onwards is a cycle.
			start := 0
			for walk[start] != n {
				start++
			}
			cyc := walk[start:]
			ids := make([]string, 0, min(len(cyc), 20)+2)
			for k, c := range cyc {
				if k == 20 {
					ids = append(ids, fmt.Sprintf("… (%d more)", len(cyc)-20))
					break
				}
				ids = append(ids, fmt.Sprintf("%q", f.ids[c]))
			}
			ids = append(ids, fmt.Sprintf("%q", f.ids[cyc[0]]))
			file, line, unit := f.Location(int(cyc[0]))
			re := &RowError{File: file, Line: line, Unit: unit, ID: f.ids[cyc[0]],
				Err: fmt.Errorf("%w: %s (each is an ancestor of itself: fix one parent)", ErrCycle, strings.Join(ids, " → "))}
			problems = append(problems, re)
			for _, c := range cyc {
				f.reject(c, re)
			}
		}
		for _, w := range walk {
			state[w] = 2
			f.reject(w, nil)
		}
	}
	// Nodes hanging below a cycle are rejected with it: the cycle's members
	// carry the reason.
	for i := range f.ids {
		if !placed[i] {
			f.reject(int32(i), nil)
		}
	}
	return problems
}

func clampI32(n int) int32 {
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(n)
}

// arena interns strings in large shared blocks, so that ten million ids cost
// ten million string headers and their bytes, not ten million allocations.
type arena struct {
	buf []byte
}

func (a *arena) intern(s string) string {
	if s == "" {
		return ""
	}
	if len(s) > 4096 {
		return strings.Clone(s)
	}
	if cap(a.buf)-len(a.buf) < len(s) {
		a.buf = make([]byte, 0, 256<<10)
	}
	start := len(a.buf)
	a.buf = append(a.buf, s...)
	b := a.buf[start:len(a.buf):len(a.buf)]
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// idIndex is an open-addressing hash table from id to node index, holding
// only int32 slots: a quarter of what a map[string]int32 costs.
type idIndex struct {
	seed  maphash.Seed
	slots []int32 // node index + 1; 0 is empty
	used  int
}

func (x *idIndex) init(hint int) {
	x.seed = maphash.MakeSeed()
	size := 1024
	for size < hint*2 {
		size <<= 1
	}
	x.slots = make([]int32, size)
}

func (x *idIndex) get(id string, ids []string) int32 {
	mask := uint64(len(x.slots) - 1)
	h := maphash.String(x.seed, id) & mask
	for {
		s := x.slots[h]
		if s == 0 {
			return -1
		}
		if ids[s-1] == id {
			return s - 1
		}
		h = (h + 1) & mask
	}
}

// find returns the node with the id, or -1 and the empty slot where putAt
// inserts it: one probe for a lookup and an insert.
func (x *idIndex) find(id string, ids []string) (slot uint64, i int32) {
	mask := uint64(len(x.slots) - 1)
	h := maphash.String(x.seed, id) & mask
	for {
		s := x.slots[h]
		if s == 0 {
			return h, -1
		}
		if ids[s-1] == id {
			return h, s - 1
		}
		h = (h + 1) & mask
	}
}

// putAt inserts node i at slot, which find returned for ids[i] with no
// insert since; ids must already hold ids[i], for the table may grow.
func (x *idIndex) putAt(slot uint64, i int32, ids []string) {
	if (x.used+1)*10 > len(x.slots)*7 {
		x.grow(ids)
		x.put(ids[i], i)
		return
	}
	x.slots[slot] = i + 1
	x.used++
}

func (x *idIndex) put(id string, i int32) {
	mask := uint64(len(x.slots) - 1)
	h := maphash.String(x.seed, id) & mask
	for x.slots[h] != 0 {
		h = (h + 1) & mask
	}
	x.slots[h] = i + 1
	x.used++
}

func (x *idIndex) grow(ids []string) {
	old := x.slots
	x.slots = make([]int32, len(old)*2)
	mask := uint64(len(x.slots) - 1)
	for _, s := range old {
		if s == 0 {
			continue
		}
		h := maphash.String(x.seed, ids[s-1]) & mask
		for x.slots[h] != 0 {
			h = (h + 1) & mask
		}
		x.slots[h] = s
	}
}
