package layouts

import (
	"bytes"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestNumbersByValue: two number texts append the same bytes exactly when
// they are equal by value (math/big says which are).
func TestNumbersByValue(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	forms := func(x string) []string {
		// x is a plain decimal; write it in several ways.
		out := []string{x, x + "e0", "0" + x}
		if !strings.Contains(x, ".") {
			out = append(out, x+".0", x+"00e-2", x+".000E+0")
		} else {
			out = append(out, x+"0", x+"00e0")
		}
		return out
	}
	var texts []string
	for range 300 {
		x := fmt.Sprint(r.IntN(2000) - 1000)
		if r.IntN(2) == 0 {
			x = fmt.Sprintf("%d.%d", r.IntN(100)-50, r.IntN(100))
		}
		texts = append(texts, forms(x)...)
	}
	texts = append(texts, "0", "-0", "0.000", "1e2", "100", "10e1", "0.01", "1e-2", "-1.5", "-15e-1", "123456789012345678901234567890", "1.23456789012345678901234567890e29")
	for _, a := range texts {
		for _, b := range texts[:40] {
			ra, _ := new(big.Rat).SetString(a)
			rb, _ := new(big.Rat).SetString(b)
			if ra == nil || rb == nil {
				continue
			}
			same := bytes.Equal(AppendNumber(nil, a), AppendNumber(nil, b))
			if same != (ra.Cmp(rb) == 0) {
				t.Errorf("%q and %q: same bytes %v, equal by value %v", a, b, same, ra.Cmp(rb) == 0)
			}
		}
	}
	if bytes.Equal(AppendNumber(nil, "1x"), AppendNumber(nil, "1")) {
		t.Error("text that is not a number appends as a number")
	}
}
