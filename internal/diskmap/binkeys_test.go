package diskmap

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// binKey is a key of 0 to 20 bytes of 0x00, 0x01, 0xfe and 0xff: many
// keys are prefixes of others, and differ from them only past 8 bytes or
// by a trailing 0x00.
func binKey(rng *rand.Rand) []byte {
	n := rng.IntN(21)
	if rng.IntN(4) == 0 {
		n = rng.IntN(4)
	}
	k := make([]byte, n)
	for i := range k {
		k[i] = []byte{0x00, 0x01, 0xfe, 0xff}[rng.IntN(4)]
	}
	return k
}

// TestBinaryKeys: keys of 0x00 and 0xff bytes that are prefixes of one
// another, the empty key, empty values against Delete, and Ascend from
// the empty prefix and from prefixes that are keys, against a Go map, in
// memory and spilled in 1 MiB.
func TestBinaryKeys(t *testing.T) {
	for _, memory := range []int64{0, 1 << 20} {
		rng := rand.New(rand.NewPCG(27, uint64(memory)))
		m, err := New(Options{Dir: t.TempDir(), Memory: memory})
		if err != nil {
			t.Fatal(err)
		}
		model := map[string][]byte{}
		check := func(step int, prefix []byte) {
			var want []string
			for k := range model {
				if bytes.HasPrefix([]byte(k), prefix) {
					want = append(want, k)
				}
			}
			slices.Sort(want)
			var got []string
			err := m.Ascend(prefix, func(k, v []byte) error {
				if !bytes.Equal(v, model[string(k)]) {
					t.Fatalf("step %d: Ascend(%x): %x = %x, want %x", step, prefix, k, v, model[string(k)])
				}
				got = append(got, string(k))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("memory %d step %d: Ascend(%x): %d keys, want %d\n%x\n%x", memory, step, prefix, len(got), len(want), got, want)
			}
			if m.Len() != int64(len(model)) {
				t.Fatalf("memory %d step %d: Len %d, want %d", memory, step, m.Len(), len(model))
			}
		}
		for step := range 60_000 / raceScale {
			k := binKey(rng)
			switch op := rng.IntN(10); {
			case op < 5:
				v := make([]byte, rng.IntN(3)*rng.IntN(200))
				for i := range v {
					v[i] = byte(rng.Uint32())
				}
				if rng.IntN(3000) == 0 {
					v = make([]byte, 400<<10)
				}
				if err := m.Put(k, v); err != nil {
					t.Fatal(err)
				}
				model[string(k)] = v
			case op < 8:
				if err := m.Delete(k); err != nil {
					t.Fatal(err)
				}
				delete(model, string(k))
			default:
				v, ok, err := m.Get(k)
				w, wok := model[string(k)]
				if err != nil || ok != wok || !bytes.Equal(v, w) {
					t.Fatalf("memory %d step %d: Get(%x) = %x, %v, %v; want %x, %v", memory, step, k, v, ok, err, w, wok)
				}
			}
			if step%997 == 0 {
				check(step, k[:len(k)/2])
				check(step, k)
			}
		}
		check(-1, nil)
		check(-1, []byte{0xff})
		check(-1, []byte{0x00})
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
