package records

import (
	"encoding/binary"
	"unsafe"

	"github.com/treeport/treeport/internal/swar"
)

// scan64Go returns, for the 64 bytes at p, a bit for each byte that is the
// delimiter (comma holds it in each of its 8 bytes), a double quote, a line
// feed, or 128 or more: bit k for byte k. It is what scan64 computes, in Go,
// a word at a time.
func scan64Go(p *byte, comma uint64) (commas, quotes, newlines, high uint64) {
	for k := 0; k < 64; k += 8 {
		w := binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(unsafe.Pointer(p), k))[:])
		commas |= moveMask(swar.ZeroBytes(w^comma)) << uint(k)
		quotes |= moveMask(swar.ZeroBytes(w^(swar.LSBs*'"'))) << uint(k)
		newlines |= moveMask(swar.ZeroBytes(w^(swar.LSBs*'\n'))) << uint(k)
		high |= moveMask(w&swar.MSBs) << uint(k)
	}
	return commas, quotes, newlines, high
}

// moveMask gathers the high bits of the bytes of x, which has no other bit
// set, into its low byte: bit k for byte k.
func moveMask(x uint64) uint64 { return (x >> 7) * 0x0102040810204080 >> 56 }
