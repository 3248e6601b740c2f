package diskmap

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"unsafe"
)

// The memtable is a B+tree whose nodes hold no pointers: an entry is an
// element of entries, its key and value places in the arena's chunks; a
// tree node is an element of tree, its children and entries numbers. The
// collector has nothing to scan in it, and clearing it for the next run
// keeps its memory. A walk down the tree compares 8 bytes of each key,
// kept beside its number in the node, before it reads the key (the bytes
// after those all the node's keys share); a
// lookup of one key (Get, Put, Delete) does not walk the tree but looks
// in a hash index of the entries: a skip list's walk over a million
// random nodes was a hundred times a Go map's lookup, for its cache
// misses, and the tree's, with keys of one long prefix, still ninety.

const (
	// fanout is the entries of a leaf and the children of an inner node.
	fanout = 64
	// arenaChunk is the size of the arena's chunks after the first, which
	// starts small and grows by append: a map of a few keys does not
	// clear a chunk.
	arenaChunk = 64 << 10
)

// mentry is an entry of the memtable. koff and voff are arena places
// (chunk<<32 | offset). del marks a deleted key (a tombstone when an
// older version may be in a run); old says a run holds a live older
// version.
type mentry struct {
	koff, voff uint64
	klen, vlen uint32
	del, old   bool
}

// bnode is a node of the tree. In a leaf, ent are entries in key order
// and next is the next leaf (-1: none); in an inner node, kid are the
// children in order and ent[i] is the least entry under kid[i]. The keys
// of ent share their first skip bytes, and pfx[i] is the 8 bytes of
// ent[i]'s key after them, big-endian, zero-padded: in a node of keys of
// one long prefix, the bytes that tell them apart.
type bnode struct {
	n    int32
	skip int32
	leaf bool
	next int32
	pfx  [fanout]uint64
	ent  [fanout]int32
	kid  [fanout]int32
}

type memtable struct {
	chunks  [][]byte
	last    int
	entries []mentry // entries[0] is not an entry: 0 is "none"
	tree    []bnode
	root    int32
	// used is the arena bytes used, count the entries, garbage the bytes
	// of values overwritten and of deleted entries.
	used, garbage int64
	count         int
	rebuilds      int // compactions, for the tests
	path          [32]struct{ node, i int32 }
	// slots are the hash index of the entries, for find: the high half of
	// a key's hash and its entry (0: empty), open addressing, at most
	// half full.
	slots []uint64
	seed  maphash.Seed
}

func newMemtable() *memtable {
	t := &memtable{seed: maphash.MakeSeed()}
	t.reset()
	return t
}

// reset empties the table, keeping its memory.
func (t *memtable) reset() {
	for i := range t.chunks {
		t.chunks[i] = t.chunks[i][:0]
	}
	t.last, t.used, t.garbage, t.count = 0, 0, 0, 0
	t.entries = append(t.entries[:0], mentry{})
	t.tree = t.tree[:0]
	t.root = t.newNode(true)
	clear(t.slots)
}

func (t *memtable) newNode(leaf bool) int32 {
	t.tree = append(t.tree, bnode{leaf: leaf, next: -1})
	return int32(len(t.tree) - 1)
}

// bytes is about what the table holds in memory.
func (t *memtable) bytes() int64 {
	return t.used + int64(len(t.entries))*int64(unsafe.Sizeof(mentry{})) + int64(len(t.tree))*int64(unsafe.Sizeof(bnode{})) + 8*int64(len(t.slots))
}

// put copies b to the arena and returns its place.
func (t *memtable) put(b []byte) uint64 {
	if len(t.chunks) == 0 {
		t.chunks = append(t.chunks, make([]byte, 0, max(256, len(b))))
	}
	c := t.chunks[t.last]
	if len(c) > 0 && len(c)+len(b) > arenaChunk {
		t.last++
		if t.last == len(t.chunks) {
			t.chunks = append(t.chunks, make([]byte, 0, max(arenaChunk, len(b))))
		} else if cap(t.chunks[t.last]) < len(b) {
			t.chunks[t.last] = make([]byte, 0, len(b))
		}
		c = t.chunks[t.last]
	}
	off := uint64(t.last)<<32 | uint64(len(c))
	t.chunks[t.last] = append(c, b...)
	t.used += int64(len(b))
	return off
}

func (t *memtable) at(off uint64, n uint32) []byte {
	c := t.chunks[off>>32]
	at := uint32(off)
	return c[at : at+n : at+n]
}

func (t *memtable) key(e int32) []byte {
	n := &t.entries[e]
	return t.at(n.koff, n.klen)
}

func (t *memtable) value(e int32) []byte {
	n := &t.entries[e]
	return t.at(n.voff, n.vlen)
}

// prefix8 is a key's first 8 bytes, big-endian, zero-padded: two keys
// whose prefixes differ are in the order of their prefixes (and two keys
// that share their first skip bytes, in the order of their prefix8 after
// them).
func prefix8(key []byte) uint64 {
	if len(key) >= 8 {
		return binary.BigEndian.Uint64(key)
	}
	var b [8]byte
	copy(b[:], key)
	return binary.BigEndian.Uint64(b[:])
}

// cmp compares the key of slot i of nd with key (whose prefix is kp).
func (t *memtable) cmp(nd *bnode, i int32, key []byte, kp uint64) int {
	if p := nd.pfx[i]; p != kp {
		if p < kp {
			return -1
		}
		return 1
	}
	return bytes.Compare(t.key(nd.ent[i]), key)
}

// bound is the first slot of nd whose key is at least key (upper: above
// key).
func (t *memtable) bound(nd *bnode, key []byte, upper bool) int32 {
	if nd.n == 0 {
		return 0
	}
	sk := int(nd.skip)
	if sk > 0 {
		// A key without the node's common prefix is before or after all
		// of its keys.
		if common := t.key(nd.ent[0])[:sk]; !bytes.HasPrefix(key, common) {
			if bytes.Compare(key, common) < 0 {
				return 0
			}
			return nd.n
		}
	}
	kp := prefix8(key[sk:])
	lo, hi := int32(0), nd.n
	for lo < hi {
		h := int32(uint32(lo+hi) >> 1)
		if c := t.cmp(nd, h, key, kp); c < 0 || upper && c == 0 {
			lo = h + 1
		} else {
			hi = h
		}
	}
	return lo
}

// fit makes node x's skip fit key, which goes into it, and returns key's
// pfx there.
func (t *memtable) fit(x int32, key []byte) uint64 {
	nd := &t.tree[x]
	if sk := int(nd.skip); sk > 0 && nd.n > 0 {
		if l := lcp(t.key(nd.ent[0])[:sk], key); l < sk {
			t.retune(x, l)
		}
	}
	return prefix8(key[nd.skip:])
}

// retune sets node x's skip and its keys' pfx.
func (t *memtable) retune(x int32, skip int) {
	nd := &t.tree[x]
	nd.skip = int32(skip)
	for i := range nd.n {
		nd.pfx[i] = prefix8(t.key(nd.ent[i])[skip:])
	}
}

// lcp is the length of the common prefix of a and b.
func lcp(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// span retunes node x to the common prefix of its first and last keys:
// in key order, that of all its keys.
func (t *memtable) span(x int32) {
	nd := &t.tree[x]
	t.retune(x, lcp(t.key(nd.ent[0]), t.key(nd.ent[nd.n-1])))
}

// leafOf is the leaf where key is or would go.
func (t *memtable) leafOf(key []byte) int32 {
	x := t.root
	for !t.tree[x].leaf {
		nd := &t.tree[x]
		x = nd.kid[max(t.bound(nd, key, true)-1, 0)]
	}
	return x
}

// find returns the entry of key, or 0: a lookup in the hash index.
func (t *memtable) find(key []byte) int32 {
	if t.count == 0 {
		return 0
	}
	h := maphash.Bytes(t.seed, key)
	tag := h >> 32
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return 0
		}
		if s>>32 == tag {
			if e := int32(uint32(s)); bytes.Equal(t.key(e), key) {
				return e
			}
		}
	}
}

// index adds entry e to the hash index, which it grows at half full.
func (t *memtable) index(e int32) {
	if 2*(t.count+1) > len(t.slots) {
		old := t.slots
		t.slots = make([]uint64, max(2*len(old), 64))
		for _, s := range old {
			if s != 0 {
				t.slot(int32(uint32(s)))
			}
		}
	}
	t.slot(e)
}

func (t *memtable) slot(e int32) {
	h := maphash.Bytes(t.seed, t.key(e))
	mask := uint64(len(t.slots) - 1)
	i := h & mask
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = h>>32<<32 | uint64(uint32(e))
}

// insert adds key, which is not there, and returns its entry.
func (t *memtable) insert(key []byte) int32 {
	e := int32(len(t.entries))
	t.entries = append(t.entries, mentry{koff: t.put(key), klen: uint32(len(key))})
	t.index(e)
	t.count++
	depth := 0
	x := t.root
	for !t.tree[x].leaf {
		i := t.bound(&t.tree[x], key, true) - 1
		if i < 0 {
			// The least key under this node from now on.
			i = 0
			kp := t.fit(x, key)
			t.tree[x].ent[0], t.tree[x].pfx[0] = e, kp
		}
		t.path[depth].node, t.path[depth].i = x, i
		depth++
		x = t.tree[x].kid[i]
	}
	right := t.addAt(x, t.bound(&t.tree[x], key, false), e, 0)
	for right >= 0 {
		re := t.tree[right].ent[0]
		if depth == 0 {
			root := t.newNode(false)
			nd := &t.tree[root]
			nd.n = 2
			nd.ent[0], nd.kid[0] = t.tree[x].ent[0], x
			nd.ent[1], nd.kid[1] = re, right
			t.span(root)
			t.root = root
			break
		}
		depth--
		x = t.path[depth].node
		right = t.addAt(x, t.path[depth].i+1, re, right)
	}
	return e
}

// addAt puts (e, kid) at slot p of node x, splitting x when it is full:
// then it returns the new right half, else -1.
func (t *memtable) addAt(x, p, e, kid int32) int32 {
	if t.tree[x].n < fanout {
		t.place(x, p, e, kid)
		return -1
	}
	r := t.newNode(t.tree[x].leaf) // may move t.tree
	nd, rd := &t.tree[x], &t.tree[r]
	const half = fanout / 2
	copy(rd.ent[:], nd.ent[half:])
	copy(rd.kid[:], nd.kid[half:])
	rd.n, nd.n = fanout-half, half
	if nd.leaf {
		rd.next, nd.next = nd.next, r
	}
	// Each half's keys may share more than the whole's.
	t.span(x)
	t.span(r)
	if p <= half {
		t.place(x, p, e, kid)
	} else {
		t.place(r, p-half, e, kid)
	}
	return r
}

func (t *memtable) place(x, p, e, kid int32) {
	kp := t.fit(x, t.key(e))
	nd := &t.tree[x]
	n := nd.n
	copy(nd.ent[p+1:n+1], nd.ent[p:n])
	copy(nd.pfx[p+1:n+1], nd.pfx[p:n])
	copy(nd.kid[p+1:n+1], nd.kid[p:n])
	nd.ent[p], nd.pfx[p], nd.kid[p] = e, kp, kid
	nd.n++
}

// set gives entry e the value v (a live key).
func (t *memtable) set(e int32, v []byte) {
	n := &t.entries[e]
	if !n.del {
		t.garbage += int64(n.vlen)
	}
	voff := t.put(v)
	n.voff, n.vlen, n.del = voff, uint32(len(v)), false
}

// remove marks entry e deleted.
func (t *memtable) remove(e int32) {
	n := &t.entries[e]
	if !n.del {
		t.garbage += int64(n.vlen)
	}
	n.vlen, n.del = 0, true
}

// compact rebuilds the table without its deleted entries and overwritten
// values, when they are most of it: the table of a map that never
// spills, where nothing else drops them.
func (t *memtable) compact() {
	if t.garbage < 64<<10 || t.garbage < t.used/2 {
		return
	}
	nt := newMemtable()
	for it := t.seek(nil); it.valid(); it.next() {
		e := it.entry()
		if t.entries[e].del {
			continue
		}
		i := nt.insert(t.key(e))
		nt.entries[i].old = t.entries[e].old
		nt.set(i, t.value(e))
	}
	nt.rebuilds = t.rebuilds + 1
	*t = *nt
}

// seek returns an iterator at the first key that is at least key.
func (t *memtable) seek(key []byte) *memIter {
	x := t.leafOf(key)
	it := &memIter{t: t, leaf: x, pos: t.bound(&t.tree[x], key, false)}
	it.settle()
	return it
}

// memIter walks the memtable in order.
type memIter struct {
	t         *memtable
	leaf, pos int32
}

// settle moves past the end of a leaf to the next leaf's start.
func (it *memIter) settle() {
	for it.leaf >= 0 && it.pos >= it.t.tree[it.leaf].n {
		it.leaf, it.pos = it.t.tree[it.leaf].next, 0
	}
}

func (it *memIter) entry() int32 { return it.t.tree[it.leaf].ent[it.pos] }

func (it *memIter) seek(prefix []byte) error { *it = *it.t.seek(prefix); return nil }
func (it *memIter) next() error {
	it.pos++
	it.settle()
	return nil
}
func (it *memIter) valid() bool { return it.leaf >= 0 }
func (it *memIter) cur() (key, val []byte, del bool) {
	e := it.entry()
	return it.t.key(e), it.t.value(e), it.t.entries[e].del
}
