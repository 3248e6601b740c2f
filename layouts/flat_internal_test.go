package layouts

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// reservedSet.maybe never says no to a name reservedName holds reserved.
func TestReservedSetCoversReserved(t *testing.T) {
	long := strings.Repeat("L", 70)
	renames := []map[string]string{
		nil,
		{"Id": "Ω", "Path": long, "Depth": strings.Repeat("d", 62), "TreeId": strings.Repeat("t", 63)},
		{"Key": "k", "Child": long + "x"},
		{"AncestorId": "Anc", "RelativeDepth": strings.Repeat("r", 64)},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, name := range Names() {
		for _, delim := range []string{"", "/", "¦"} {
			for _, r := range renames {
				l, err := New(name, Options{Attr: r, Delimiter: delim})
				if err != nil {
					continue // a rename of a name the layout does not have
				}
				b := l.(interface{ layoutBase() *base }).layoutBase()
				rs := newReservedSet(b)
				names := append([]string{"", "a", "name", "Path", "Id", "¦", "¦x", "/x", "|x", "ΩΩ", long, long + "x"}, b.attrs...)
				for _, a := range b.attrs {
					names = append(names, a+"x", a[:len(a)-1], strings.ToLower(a))
				}
				for range 2000 {
					n := rng.IntN(70)
					var sb strings.Builder
					for range n {
						sb.WriteByte("IdPathLrdt¦/ΩxK"[rng.IntN(16)])
					}
					names = append(names, sb.String())
				}
				for _, n := range names {
					if b.reservedName(n) && !rs.maybe(n) {
						t.Fatalf("%s %v: maybe(%q) is false, but the name is reserved", name, r, n)
					}
				}
			}
		}
	}
}

// TestAppendIntIsItoa holds appendInt's small-number table to strconv.
func TestAppendIntIsItoa(t *testing.T) {
	var b ItemBuffer
	for n := -150; n <= 1500; n++ {
		b.reset()
		if got, want := b.appendInt(n), strconv.Itoa(n); got != want {
			t.Fatalf("appendInt(%d) = %q, want %q", n, got, want)
		}
	}
}
