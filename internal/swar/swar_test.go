package swar

import (
	"math/rand"
	"testing"
)

// ZeroBytes marks exactly the zero bytes of a word, whatever the others.
func TestZeroBytes(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for n := 0; n < 200000; n++ {
		var x uint64
		for k := 0; k < 8; k++ {
			var b uint64
			switch rng.Intn(4) {
			case 0: // zero, and the bytes a borrow or a carry would upset
			case 1:
				b = uint64([]byte{1, 0x7f, 0x80, 0x81, 0xff}[rng.Intn(5)])
			default:
				b = uint64(rng.Intn(256))
			}
			x |= b << (8 * k)
		}
		var want uint64
		for k := 0; k < 8; k++ {
			if x>>(8*k)&0xff == 0 {
				want |= 0x80 << (8 * k)
			}
		}
		if got := ZeroBytes(x); got != want {
			t.Fatalf("ZeroBytes(%#016x) = %#016x, want %#016x", x, got, want)
		}
	}
}
