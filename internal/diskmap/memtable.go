package diskmap

import "bytes"

// The memtable is a skip list whose nodes hold no pointers: a node is an
// entry of nodes, its links a stretch of links, its key and value places
// in the arena's chunks. The collector has nothing to scan in it, and
// clearing it for the next run keeps its memory.

const (
	maxHeight = 20 // 4^20 nodes at p = 1/4
	// arenaChunk is the size of the arena's chunks after the first, which
	// starts small and grows by append: a map of a few keys does not
	// clear a chunk.
	arenaChunk = 64 << 10
	// nodeBytes is what a node costs beside its key and value: the node
	// and its average 1.33 links.
	nodeBytes = 40
)

// mnode is an entry of the memtable. koff and voff are arena places
// (chunk<<32 | offset). del marks a deleted key (a tombstone when an
// older version may be in a run); old says a run holds an older version.
type mnode struct {
	koff, voff uint64
	klen, vlen uint32
	tower      uint32
	height     uint8
	del, old   bool
}

type memtable struct {
	chunks [][]byte
	last   int
	nodes  []mnode // nodes[0] is the head; 0 in a link is the end
	links  []int32
	height int
	rnd    uint64
	// used is the arena bytes used, count the nodes but the head,
	// garbage the bytes of values overwritten and of deleted entries.
	used, garbage int64
	count         int
	prev          [maxHeight]int32
}

func newMemtable() *memtable {
	t := &memtable{rnd: 0x9E3779B97F4A7C15}
	t.reset()
	return t
}

// reset empties the table, keeping its memory.
func (t *memtable) reset() {
	for i := range t.chunks {
		t.chunks[i] = t.chunks[i][:0]
	}
	t.last, t.used, t.garbage, t.count, t.height = 0, 0, 0, 0, 1
	t.nodes = append(t.nodes[:0], mnode{height: maxHeight})
	t.links = t.links[:0]
	for range maxHeight {
		t.links = append(t.links, 0)
	}
}

// bytes is about what the table holds in memory.
func (t *memtable) bytes() int64 { return t.used + int64(len(t.nodes))*nodeBytes }

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

func (t *memtable) key(i int32) []byte {
	n := &t.nodes[i]
	return t.at(n.koff, n.klen)
}

func (t *memtable) value(i int32) []byte {
	n := &t.nodes[i]
	return t.at(n.voff, n.vlen)
}

func (t *memtable) next(i int32) int32 { return t.links[t.nodes[i].tower] }

// seek returns the first node whose key is at least key (0: none), and
// fills t.prev with the last node before it at each level.
func (t *memtable) seek(key []byte) int32 {
	x := int32(0)
	for lv := t.height - 1; lv >= 0; lv-- {
		for {
			nx := t.links[t.nodes[x].tower+uint32(lv)]
			if nx == 0 || bytes.Compare(t.key(nx), key) >= 0 {
				break
			}
			x = nx
		}
		t.prev[lv] = x
	}
	return t.links[t.nodes[x].tower]
}

// find returns the node of key, or 0; t.prev is set as seek sets it.
func (t *memtable) find(key []byte) int32 {
	x := t.seek(key)
	if x != 0 && bytes.Equal(t.key(x), key) {
		return x
	}
	return 0
}

// insert adds key after t.prev (a seek of key that found no node) and
// returns its node.
func (t *memtable) insert(key []byte) int32 {
	h := 1
	for h < maxHeight {
		t.rnd ^= t.rnd << 13
		t.rnd ^= t.rnd >> 7
		t.rnd ^= t.rnd << 17
		if t.rnd&3 != 0 {
			break
		}
		h++
	}
	for ; t.height < h; t.height++ {
		t.prev[t.height] = 0
	}
	i := int32(len(t.nodes))
	tower := uint32(len(t.links))
	for lv := range h {
		p := t.prev[lv]
		pl := t.nodes[p].tower + uint32(lv)
		t.links = append(t.links, t.links[pl])
		t.links[pl] = i
	}
	t.nodes = append(t.nodes, mnode{koff: t.put(key), klen: uint32(len(key)), tower: tower, height: uint8(h)})
	t.count++
	return i
}

// set gives node i the value v (a live key).
func (t *memtable) set(i int32, v []byte) {
	n := &t.nodes[i]
	if !n.del {
		t.garbage += int64(n.vlen)
	}
	voff := t.put(v)
	n = &t.nodes[i]
	n.voff, n.vlen, n.del = voff, uint32(len(v)), false
}

// remove marks node i deleted.
func (t *memtable) remove(i int32) {
	n := &t.nodes[i]
	if !n.del {
		t.garbage += int64(n.vlen)
	}
	n.vlen, n.del = 0, true
}

// compact rebuilds the table without its deleted nodes and overwritten
// values, when they are most of it: the table of a map that never
// spills, where nothing else drops them.
func (t *memtable) compact() {
	if t.garbage < 64<<10 || t.garbage < t.used/2 {
		return
	}
	nt := &memtable{rnd: t.rnd}
	nt.reset()
	var last [maxHeight]int32 // the last node of each level
	for x := t.next(0); x != 0; x = t.next(x) {
		n := t.nodes[x]
		if n.del {
			continue
		}
		nt.prev = last
		i := nt.insert(t.key(x))
		nt.nodes[i].old = n.old
		nt.set(i, t.value(x))
		for lv := range int(nt.nodes[i].height) {
			last[lv] = i
		}
	}
	*t = *nt
}

// memIter walks the memtable in order.
type memIter struct {
	t *memtable
	x int32
}

func (it *memIter) seek(prefix []byte) error { it.x = it.t.seek(prefix); return nil }
func (it *memIter) next() error              { it.x = it.t.next(it.x); return nil }
func (it *memIter) valid() bool              { return it.x != 0 }
func (it *memIter) cur() (key, val []byte, del bool) {
	return it.t.key(it.x), it.t.value(it.x), it.t.nodes[it.x].del
}
