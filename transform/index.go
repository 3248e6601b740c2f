package transform

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"unsafe"
)

// idIndex is an open-addressing hash table from id to node index. A slot
// holds the node's index and 32 bits of its id's hash, so that a probe
// past another id rarely needs to read that id: most cost one cache miss.
type idIndex struct {
	seed  maphash.Seed
	keys  [4]uint64 // random, for the short ids' hash
	slots []uint64  // hash>>32 << 32 | node index + 1; 0 is empty
	used  int
}

func (x *idIndex) init(hint int) {
	x.seed = maphash.MakeSeed()
	for k := range x.keys {
		x.keys[k] = maphash.Comparable(x.seed, k) | 1
	}
	// Room for hint ids at most at the load putAt grows the table at.
	size := 1024
	for size*7 < hint*10 {
		size <<= 1
	}
	x.slots = make([]uint64, size)
}

// hash is id's hash, from the index's random keys: maphash's for an id of
// more than 16 bytes, and for the shorter ones, the usual, two rounds of
// wyhash's multiply-and-fold of the id's words, which cost a fifth of it.
func (x *idIndex) hash(id string) uint64 {
	n := len(id)
	if n > 16 {
		return maphash.String(x.seed, id)
	}
	p := unsafe.Pointer(unsafe.StringData(id))
	var a, b uint64
	switch {
	case n >= 8: // the first 8 bytes and the last 8, which overlap below 16
		a = binary.LittleEndian.Uint64((*[8]byte)(p)[:])
		b = binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(p, n-8))[:])
	case n >= 4:
		a = uint64(binary.LittleEndian.Uint32((*[4]byte)(p)[:]))
		b = uint64(binary.LittleEndian.Uint32((*[4]byte)(unsafe.Add(p, n-4))[:]))
	case n > 0:
		a = uint64(id[0])<<16 | uint64(id[n>>1])<<8 | uint64(id[n-1])
	}
	return mix(mix(a^x.keys[0], b^x.keys[1])^x.keys[2], uint64(n)^x.keys[3])
}

// mix folds the 128-bit product of a and b.
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// get returns the node with the id, whose hash is h, or -1.
func (x *idIndex) get(id string, h uint64, f *Forest) int32 {
	_, i := x.find(id, h, f)
	return i
}

// find returns the node with the id, whose hash is h, or -1 and the empty
// slot where putAt inserts it: one probe for a lookup and an insert.
func (x *idIndex) find(id string, h uint64, f *Forest) (slot uint64, i int32) {
	mask := uint64(len(x.slots) - 1)
	tag := h >> 32 << 32
	for k := h & mask; ; k = (k + 1) & mask {
		s := x.slots[k]
		if s == 0 {
			return k, -1
		}
		if s&^(1<<32-1) == tag {
			if j := int32(uint32(s)) - 1; f.id(j) == id {
				return k, j
			}
		}
	}
}

// putAt inserts node i, whose id's hash is h, at slot, which find returned
// with no insert since. f must already hold the id of node i, for the
// table may grow.
func (x *idIndex) putAt(slot uint64, i int32, h uint64, f *Forest) {
	if (x.used+1)*10 > len(x.slots)*7 {
		x.grow(f)
		x.put(h, i)
		return
	}
	x.slots[slot] = h>>32<<32 | uint64(i+1)
	x.used++
}

func (x *idIndex) put(h uint64, i int32) {
	mask := uint64(len(x.slots) - 1)
	k := h & mask
	for x.slots[k] != 0 {
		k = (k + 1) & mask
	}
	x.slots[k] = h>>32<<32 | uint64(i+1)
	x.used++
}

func (x *idIndex) grow(f *Forest) {
	old := x.slots
	x.slots = make([]uint64, len(old)*2)
	x.used = 0
	for _, s := range old {
		if s == 0 {
			continue
		}
		j := int32(uint32(s)) - 1
		x.put(x.hash(f.id(j)), j)
	}
}
