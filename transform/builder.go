package transform

import (
	"encoding/binary"
	"math"
	"strings"
	"unsafe"
)

// arenaPad is the padding at the start of the arena.
const arenaPad = 8

type pending struct {
	i   int32
	err *RowError
}

// dupAt is another place of the id of node i.
type dupAt struct {
	i   int32
	loc uint64 // see Builder.location
}

type pendingParent struct {
	i  int32
	id string
}

// Builder collects the skeleton of an input, one record at a time, and then
// builds the Forest. It is not safe for concurrent use.
type Builder struct {
	f Forest
	// Parents that had not been seen when their child was added, resolved
	// by Build. In an input where parents come first, it stays empty.
	unresolved []pendingParent
	pids       arena
	fileIdx    map[string]int
	problems   []*RowError
	preReject  []pending
	dups       []dupAt       // the places of the second and later copies of an id, maxDupPlaces an id at most
	dupCount   map[int32]int // how many copies of each duplicate id there are beyond the first
	detached   []int32       // see Forest.detached
	keepCopy   bool
	lastFile   int // index in f.files of the file of the last Add

	// The nodes Add took and has not added yet (see flush).
	queue []queued
	qtext []byte
	sink  uint64 // what flush read ahead, kept so that the reads are not optimized away
}

// NewBuilder returns a Builder. sizeHint is the expected number of nodes (0
// if unknown). With copyBytes, Add's copyBytes argument is kept for the
// closure layout's ancestor rows.
func NewBuilder(sizeHint int, copyBytes bool) *Builder {
	b := &Builder{fileIdx: map[string]int{}, keepCopy: copyBytes, queue: make([]queued, 0, queueLen)}
	// The arena starts with arenaPad bytes that belong to no id (see
	// AppendPathText).
	b.f.arena = make([]byte, arenaPad, 4<<10)
	// Past this, a hint is no better than growing (and may be wrong).
	sizeHint = min(sizeHint, 1<<27)
	if sizeHint > 0 {
		b.f.nodes = make([]nodeRec, 0, sizeHint)
		b.f.loc = make([]uint64, 0, sizeHint)
		b.f.attrBytes = make([]uint32, 0, sizeHint)
	}
	b.f.index.init(sizeHint)
	return b
}

// KeepProblems makes Build and Forest.Check return at most n problems each,
// the first ones they find, and only count the others
// (Forest.MoreProblems): an input that repeats one mistake millions of
// times then costs a count, not a problem each. n <= 0 keeps every problem,
// as a new Builder does.
func (b *Builder) KeepProblems(n int) { b.f.keep = max(n, 0) }

// problem keeps err, or counts it when as many problems as are kept are
// kept already.
func (b *Builder) problem(err *RowError) {
	if b.f.full(b.problems) {
		b.f.moreBuild++
		return
	}
	b.problems = append(b.problems, err)
}

func (b *Builder) location(file string, line int, unit string) uint64 {
	if len(b.f.files) > 0 && sameString(file, b.f.files[b.lastFile]) {
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
	if len(b.queue) == cap(b.queue) {
		b.flush()
	}
	// The strings are copied into qtext, which is reused once the queue
	// is flushed: nothing else keeps them.
	start := len(b.qtext)
	b.qtext = append(b.qtext, rec.ID...)
	b.qtext = append(b.qtext, rec.Parent...)
	b.queue = append(b.queue, queued{
		hid: b.f.index.hash(rec.ID), hpar: b.f.index.hash(rec.Parent),
		at: start, nid: len(rec.ID), npar: len(rec.Parent),
		loc: b.location(rec.File, rec.Line, unit), attrBytes: attrBytes, copyBytes: copyBytes,
	})
}

// queued is a node that Add has taken and not yet added: its id and parent
// are qtext[at:at+nid] and the npar bytes after them.
type queued struct {
	hid, hpar     uint64
	at, nid, npar int
	loc           uint64 // see location
	attrBytes     int
	copyBytes     int
}

// queueLen is how many nodes Add takes before it adds them.
const queueLen = 32

// flush adds the queued nodes, in the order Add took them. It first reads
// the index slots of their ids and parents, then the records those slots
// name, each loop's reads independent of each other: the processor waits
// for the queue's cache misses side by side instead of one after the
// other, as add alone would, and add then finds them in the cache. With an
// index larger than the cache, this is most of what building costs.
func (b *Builder) flush() {
	q := b.queue
	if len(q) == 0 {
		return
	}
	f := &b.f
	slots := f.index.slots
	mask := uint64(len(slots) - 1)
	var sink uint64
	for k := range q {
		sink += slots[q[k].hid&mask] ^ slots[q[k].hpar&mask]
	}
	nodes := f.nodes
	for k := range q {
		if s := slots[q[k].hpar&mask]; s != 0 {
			if j := uint64(uint32(s)) - 1; j < uint64(len(nodes)) {
				sink += uint64(nodes[j].parent)
			}
		}
	}
	b.sink += sink
	text := b.qtext
	for k := range q {
		e := &q[k]
		id := unsafe.String(unsafe.SliceData(text[e.at:]), e.nid)
		parent := ""
		if e.npar > 0 {
			parent = unsafe.String(unsafe.SliceData(text[e.at+e.nid:]), e.npar)
		}
		b.add(id, parent, e.hid, e.hpar, e.loc, e.attrBytes, e.copyBytes, nil)
	}
	b.queue = q[:0]
	b.qtext = text[:0]
}

// AddBad records a row that could not be read. When the row's id is known,
// the node is kept as rejected, so that its children are rejected with it
// instead of being reported as orphans.
func (b *Builder) AddBad(err *RowError, parent string) {
	b.flush()
	b.problem(err)
	// The file is known even when no row of it could be read, so that
	// Forest.SortProblems puts its problems in their place.
	loc := b.location(err.File, err.Line, err.Unit)
	if err.ID == "" {
		return
	}
	b.add(err.ID, parent, b.f.index.hash(err.ID), b.f.index.hash(parent), loc, 0, 0, err)
}

// add adds a node whose id's hash is h and parent's hp, read at loc (see
// location).
func (b *Builder) add(id, parent string, h, hp uint64, loc uint64, attrBytes, copyBytes int, bad *RowError) {
	if id == "" {
		if bad == nil {
			file, line, unit := b.f.locate(loc)
			b.problem(&RowError{File: file, Line: line, Unit: unit, Err: ErrEmptyID})
		}
		return
	}
	f := &b.f
	n := f.Len()
	slot, j := f.index.find(id, h, f)
	if j >= 0 {
		if bad == nil {
			if f.full(b.problems) {
				f.moreBuild++
			} else {
				// The id is cloned: f.id's memory is the records', which
				// may yet move (and the old array would stay alive with it).
				ff, fl, fu := f.Location(int(j))
				file, line, unit := f.locate(loc)
				b.problems = append(b.problems, &RowError{File: file, Line: line, Unit: unit, ID: strings.Clone(id),
					Err: DuplicateAlsoAt(place(ff, fl, fu))})
			}
			// The first copy is rejected by Build, with a reason that
			// says where the others are: the first of them, and how many
			// more.
			if b.dupCount == nil {
				b.dupCount = map[int32]int{}
			}
			if b.dupCount[j]++; b.dupCount[j] <= maxDupPlaces {
				b.dups = append(b.dups, dupAt{j, loc})
			}
		}
		return
	}
	if n >= math.MaxInt32-1 {
		panic("transform: more than 2^31 nodes")
	}
	if uint64(len(id)) > math.MaxUint32 {
		panic("transform: an id of more than 4 GB")
	}
	i := int32(n)
	rec := nodeRec{parent: -1, n: uint32(len(id))}
	if len(id) <= 8 {
		copy(rec.b[:], id)
	} else {
		binary.LittleEndian.PutUint64(rec.b[:], uint64(len(f.arena)))
		f.arena = append(f.arena, id...)
	}
	f.nodes = append(f.nodes, rec)
	f.index.putAt(slot, i, h, f)
	p := int32(-1) // a root, or its own parent (reported below)
	self := parent == id
	if parent != "" && !self {
		if p = f.index.get(parent, hp, f); p < 0 {
			b.unresolved = append(b.unresolved, pendingParent{i, b.pids.intern(parent)})
		}
	}
	f.nodes[i].parent = p
	f.loc = append(f.loc, loc)
	f.attrBytes = append(f.attrBytes, clampU32(attrBytes))
	if b.keepCopy {
		for len(f.copyBytes) < int(i) {
			f.copyBytes = append(f.copyBytes, 0)
		}
		f.copyBytes = append(f.copyBytes, clampU32(copyBytes))
	}
	if bad != nil {
		// The parent of a row that could not be read may be wrong: the
		// node's path is not known.
		b.preReject = append(b.preReject, pending{i, bad})
		b.detached = append(b.detached, i)
	}
	if self && bad == nil {
		file, line, unit := f.locate(loc)
		err := &RowError{File: file, Line: line, Unit: unit, ID: strings.Clone(id), Err: ErrSelfParent}
		b.problem(err)
		b.preReject = append(b.preReject, pending{i, err})
		b.detached = append(b.detached, i)
	}
}

// sameString is a == b, which it tells at once when they are the same
// memory: a file name passed for every row, say.
func sameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

func clampU32(n int) uint32 {
	if n < 0 {
		return 0
	}
	if uint64(n) > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(n)
}

// Build resolves parents, finds missing parents and cycles, places every node
// in its tree (iteratively: a chain of any depth is fine) and returns the
// forest with the problems found so far, in input order. Rejected nodes and
// their descendants are marked. The Builder must not be used afterwards.
func (b *Builder) Build() (*Forest, []*RowError) {
	b.flush()
	f := &b.f
	n := f.Len()
	f.rejected = make([]uint64, (n+63)/64)
	for _, p := range b.preReject {
		f.reject(p.i, p.err)
	}
	f.rejectDuplicates(b.dups, b.dupCount)
	b.dups, b.dupCount = nil, nil
	f.detached = b.detached
	problems := b.problems

	// Each check keeps its first problems, in the order of their places,
	// so that those of all of them, sorted, begin with the first ones of
	// the input.
	var missing []*RowError
	parentIDs := map[string]string{}

	// Resolve the parents that came after their children. Every other
	// parent came before its child, so with none resolved here the
	// forest is in topological order.
	f.topo = true
	for _, pp := range b.unresolved {
		p := f.index.get(pp.id, f.index.hash(pp.id), f)
		if p < 0 {
			// The parent's id is kept once however many children name
			// it, and the node's reason is made when asked for.
			id, ok := parentIDs[pp.id]
			if !ok {
				id = strings.Clone(pp.id) // pp.id is the arena's, dropped below
				parentIDs[id] = id
			}
			if f.full(missing) {
				f.moreBuild++
			} else {
				missing = append(missing, f.missingParent(pp.i, id))
			}
			f.reject(pp.i, nil)
			if f.reason[pp.i] == nil {
				if f.orphan == nil {
					f.orphan = map[int32]string{}
				}
				f.orphan[pp.i] = id
			}
			f.detached = append(f.detached, pp.i)
			continue
		}
		f.nodes[pp.i].parent = p
		f.topo = false
	}
	b.unresolved = nil
	b.pids = arena{}
	problems = append(problems, missing...)

	f.depth = make([]int32, n)
	f.root = make([]int32, n)
	f.pathBytes = make([]int32, n)
	f.maxAnc = make([]int32, n)
	f.subtree = make([]int32, n)
	if f.topo {
		// Depth, root and path bytes in index order: a parent comes first.
		for i := range f.nodes {
			p := f.nodes[i].parent
			if p < 0 {
				if !f.Rejected(i) {
					f.roots++
				}
				f.root[i] = int32(i)
				f.pathBytes[i] = clampI32(f.idLen(int32(i)))
				continue
			}
			f.depth[i] = f.depth[p] + 1
			f.root[i] = f.root[p]
			f.pathBytes[i] = clampI32(int(f.pathBytes[p]) + f.idLen(int32(i)))
			f.maxAnc[i] = max(f.maxAnc[p], clampI32(f.idLen(p)))
		}
		for i := n - 1; i >= 0; i-- {
			f.subtree[i]++
			if p := f.nodes[i].parent; p >= 0 {
				f.subtree[p] += f.subtree[i]
			}
		}
	} else {
		for i := range f.nodes {
			if f.nodes[i].parent < 0 && !f.Rejected(i) {
				f.roots++
			}
		}
		// Breadth-first from the roots: order, depth, root, path bytes.
		placed := make([]bool, n)
		f.order = f.bfs(placed)
		for _, c := range f.order {
			p := f.nodes[c].parent
			if p < 0 {
				f.root[c] = c
				f.pathBytes[c] = clampI32(f.idLen(c))
				continue
			}
			f.depth[c] = f.depth[p] + 1
			f.root[c] = f.root[p]
			f.pathBytes[c] = clampI32(int(f.pathBytes[p]) + f.idLen(c))
			f.maxAnc[c] = max(f.maxAnc[p], clampI32(f.idLen(p)))
		}
		// What is not placed is in a cycle or below one.
		if len(f.order) < n {
			cycles := f.cycles(placed)
			if f.keep > 0 && len(cycles) > f.keep {
				f.SortProblems(cycles)
				f.moreBuild += len(cycles) - f.keep
				cycles = cycles[:f.keep]
			}
			problems = append(problems, cycles...)
		}
		// Subtree sizes, children before parents.
		for h := len(f.order) - 1; h >= 0; h-- {
			i := f.order[h]
			f.subtree[i]++
			if p := f.nodes[i].parent; p >= 0 {
				f.subtree[p] += f.subtree[i]
			}
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

// maxDupPlaces is the most places of one id that a duplicate's reason
// names.
const maxDupPlaces = 10

// rejectDuplicates rejects the first copy of each duplicate id. Its reason
// names every place of the id: the rejects file gives it to every copy
// (their records all find the first copy's node), and each must be told
// where the others are.
//
// dups holds the first maxDupPlaces places of each id's copies, count how
// many copies beyond the first there are.
func (f *Forest) rejectDuplicates(dups []dupAt, count map[int32]int) {
	if len(dups) == 0 {
		return
	}
	at := map[int32][]uint64{}
	var first []int32
	for _, d := range dups {
		if _, ok := at[d.i]; !ok {
			first = append(first, d.i)
		}
		at[d.i] = append(at[d.i], d.loc)
	}
	for _, i := range first {
		locs := append([]uint64{f.loc[i]}, at[i]...)
		places := make([]string, 0, min(len(locs), maxDupPlaces))
		for k, l := range locs {
			if k == maxDupPlaces {
				break
			}
			places = append(places, place(f.locate(l)))
		}
		file, line, unit := f.Location(int(i))
		f.reject(i, &RowError{File: file, Line: line, Unit: unit, ID: f.id(i), Err: DuplicatePlaces(places, 1+count[i])})
	}
}

// cycles reports each cycle once, with its ids, and rejects every node that
// could not be placed.
func (f *Forest) cycles(placed []bool) []*RowError {
	var problems []*RowError
	state := make([]uint8, f.Len()) // 0 new, 1 on the current walk, 2 done
	for i := range f.Len() {
		if placed[i] || state[i] != 0 {
			continue
		}
		var walk []int32
		n := int32(i)
		for n >= 0 && !placed[n] && state[n] == 0 {
			state[n] = 1
			walk = append(walk, n)
			n = f.nodes[n].parent
		}
		if n >= 0 && state[n] == 1 {
			// walk from n onwards is a cycle.
			start := 0
			for walk[start] != n {
				start++
			}
			cyc := walk[start:]
			// CycleErrorOf names the first MaxCycleIDs ids and counts the
			// others: their text is not needed.
			ids := make([]string, 0, min(len(cyc), MaxCycleIDs))
			for _, c := range cyc[:min(len(cyc), MaxCycleIDs)] {
				ids = append(ids, f.id(c))
			}
			file, line, unit := f.Location(int(cyc[0]))
			re := &RowError{File: file, Line: line, Unit: unit, ID: f.id(cyc[0]), Err: CycleErrorOf(ids, len(cyc))}
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
	for i := range f.Len() {
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

// arena interns strings in large shared blocks, so that many strings cost
// their headers and their bytes, not an allocation each. The Builder keeps
// the parents it could not resolve yet in one.
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
