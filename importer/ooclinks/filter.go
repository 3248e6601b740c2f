package ooclinks

import "hash/maphash"

// filter is a Bloom filter of the links' ids and their targets': what a
// round's passes tell Seen of the other nodes is dropped before it is
// sorted. It has a fixed size: past its count it lets more through (they
// are joined with nothing), never fewer.
type filter struct {
	seed maphash.Seed
	bits []uint64
	mask uint64
}

// newFilter is a filter of about 16 bits for each of keys, within bytes.
func newFilter(keys, bytes int64) *filter {
	words := int64(1)
	for words*64 < 16*keys && words*8*2 <= bytes {
		words *= 2
	}
	return &filter{seed: maphash.MakeSeed(), bits: make([]uint64, words), mask: uint64(words*64 - 1)}
}

const filterHashes = 4

func (f *filter) add(key []byte) {
	h := maphash.Bytes(f.seed, key)
	h1, h2 := h, h>>32|1
	for k := uint64(0); k < filterHashes; k++ {
		b := (h1 + k*h2) & f.mask
		f.bits[b/64] |= 1 << (b % 64)
	}
}

func (f *filter) has(key string) bool {
	h := maphash.String(f.seed, key)
	h1, h2 := h, h>>32|1
	for k := uint64(0); k < filterHashes; k++ {
		b := (h1 + k*h2) & f.mask
		if f.bits[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}
