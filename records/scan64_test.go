package records

import (
	"math/rand"
	"testing"

	"github.com/treeport/treeport/internal/swar"
)

// scan64 (the assembly, on amd64) and scan64Go agree with a byte-by-byte
// look at random blocks of the bytes that matter and others, for every
// delimiter.
func TestScan64(t *testing.T) {
	rng := rand.New(rand.NewSource(64))
	alphabet := []byte{',', ';', '\t', '|', '"', '\n', '\r', 'a', '0', 0, 0x7f, 0x80, 0xc3, 0xff, ' '}
	buf := make([]byte, 64+7)
	for n := range 20000 {
		for i := range buf {
			buf[i] = alphabet[rng.Intn(len(alphabet))]
			if n%3 == 0 {
				buf[i] = byte(rng.Intn(256))
			}
		}
		off := n % 8 // unaligned too
		p := &buf[off]
		for _, d := range []byte{',', ';', '\t', '|'} {
			var want [4]uint64
			for k := range 64 {
				c := buf[off+k]
				for j, hit := range []bool{c == d, c == '"', c == '\n', c >= 0x80} {
					if hit {
						want[j] |= 1 << k
					}
				}
			}
			for name, f := range map[string]func(*byte, uint64) (uint64, uint64, uint64, uint64){"scan64": scan64, "scan64Go": scan64Go} {
				c, q, l, h := f(p, uint64(d)*swar.LSBs)
				if got := [4]uint64{c, q, l, h}; got != want {
					t.Fatalf("%s(%q, %q): %x, want %x", name, buf[off:off+64], d, got, want)
				}
			}
		}
	}
}
