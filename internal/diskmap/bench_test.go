package diskmap

import (
	"fmt"
	"testing"
)

// The benchmarks' maps: in memory (Memory 0) and spilled (1M keys of
// about 60 bytes, 70 MB, in 4 MiB).
var benchCases = []struct {
	name   string
	memory int64
}{{"mem", 0}, {"spilled-4MiB", 4 << 20}}

const benchKeys = 1_000_000

func benchMap(b *testing.B, memory int64) *Map {
	b.Helper()
	m, err := New(Options{Dir: b.TempDir(), Memory: memory})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	val := make([]byte, 20)
	for i := range uint64(benchKeys) {
		if err := m.Put(heapKey(i), val); err != nil {
			b.Fatal(err)
		}
	}
	return m
}

// BenchmarkGoMap is the reference the figures are read against on a
// loaded machine: a Go map[string][]byte of the same 1M keys, its Put
// (of new keys, values copied) and its Get (hit).
func BenchmarkGoMap(b *testing.B) {
	m := map[string][]byte{}
	val := make([]byte, 20)
	for i := range uint64(benchKeys) {
		m[string(heapKey(i))] = append([]byte{}, val...)
	}
	b.Run("put", func(b *testing.B) {
		for i := range uint64(b.N) {
			m[string(heapKey(benchKeys+i))] = append([]byte{}, val...)
		}
	})
	b.Run("get-hit", func(b *testing.B) {
		for i := range uint64(b.N) {
			if v, ok := m[string(heapKey(i*7919%benchKeys))]; !ok || len(v) != 20 {
				b.Fatal(i)
			}
		}
	})
}

// BenchmarkPut puts new keys (each a Put of a key not yet there, in
// random order) into a map that already holds 1M.
func BenchmarkPut(b *testing.B) {
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			m := benchMap(b, c.memory)
			val := make([]byte, 20)
			b.ResetTimer()
			for i := range uint64(b.N) {
				if err := m.Put(heapKey(benchKeys+i), val); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGet reads keys that are there (hit) and keys that are not
// (miss), in random order.
func BenchmarkGet(b *testing.B) {
	for _, c := range benchCases {
		m := benchMap(b, c.memory)
		for _, hit := range []bool{true, false} {
			name := c.name + "/miss"
			if hit {
				name = c.name + "/hit"
			}
			b.Run(name, func(b *testing.B) {
				for i := range uint64(b.N) {
					k := i * 7919 % benchKeys
					if !hit {
						k += benchKeys
					}
					if _, ok, err := m.Get(heapKey(k)); err != nil || ok != hit {
						b.Fatalf("Get %d: %v, %v", k, ok, err)
					}
				}
			})
		}
	}
}

// BenchmarkAscendSmallPrefix walks a prefix of about 15 keys.
func BenchmarkAscendSmallPrefix(b *testing.B) {
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			m := benchMap(b, c.memory)
			b.ResetTimer()
			total := 0
			for i := range b.N {
				// "node/" and 4 hex digits of the hashed prefix: 1M/65536 keys.
				prefix := fmt.Appendf(nil, "node/%04x", i*2654435761%65536)
				n := 0
				if err := m.Ascend(prefix, func(k, v []byte) error { n++; return nil }); err != nil {
					b.Fatal(err)
				}
				total += n
			}
			b.ReportMetric(float64(total)/float64(b.N), "keys/op")
		})
	}
}
