package diskmap

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	seedFlag = flag.Uint64("diskmap.seed", 0, "the model test's seed (0: from the clock)")
	opsFlag  = flag.Int("diskmap.ops", 0, "the model test's operations per case (0: 1M, 250k under -race, 100k with -short)")
)

// TestModel runs random Puts, Deletes, Gets and Ascends of prefixes
// against a Go map: with 1 MiB, so that the memtable is flushed hundreds
// of times and the runs compacted, and with 0, a map that never spills.
func TestModel(t *testing.T) {
	for _, c := range []struct {
		name   string
		memory int64
	}{{"spills-1MiB", 1 << 20}, {"in-memory", 0}} {
		t.Run(c.name, func(t *testing.T) {
			seed := *seedFlag
			if seed == 0 {
				seed = uint64(time.Now().UnixNano())
			}
			t.Logf("seed %d (rerun with -diskmap.seed %d)", seed, seed)
			ops := *opsFlag
			if ops == 0 {
				ops = 1_000_000 / raceScale
				if testing.Short() {
					ops = 100_000
				}
			}
			runModel(t, c.memory, seed, ops)
		})
	}
}

// modelKey is one of about 40,000 keys, in groups that prefixes select:
// "g17/k0042", with a few long ones.
func modelKey(rng *rand.Rand) string {
	g, k := rng.IntN(40), rng.IntN(1000)
	if rng.IntN(200) == 0 {
		return fmt.Sprintf("g%02d/k%04d/%s", g, k, strings.Repeat("L", 1+rng.IntN(3000)))
	}
	return fmt.Sprintf("g%02d/k%04d", g, k)
}

func modelValue(rng *rand.Rand, step int) []byte {
	n := rng.IntN(120)
	if rng.IntN(20000) == 0 {
		n = 400 << 10 // an item at DynamoDB's limit
	}
	v := make([]byte, n)
	for i := range v {
		v[i] = byte(rng.Uint32())
	}
	return append(v, fmt.Sprint(step)...)
}

func runModel(t *testing.T, memory int64, seed uint64, ops int) {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	dir := t.TempDir()
	m, err := New(Options{Dir: dir, Memory: memory})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	model := map[string][]byte{}
	flushes, maxRunsSeen := 0, 0
	for step := range ops {
		key := modelKey(rng)
		switch op := rng.IntN(1000); {
		case op < 450:
			v := modelValue(rng, step)
			if err := m.Put([]byte(key), v); err != nil {
				t.Fatalf("step %d: Put %q: %v", step, key, err)
			}
			model[key] = v
		case op < 600:
			if err := m.Delete([]byte(key)); err != nil {
				t.Fatalf("step %d: Delete %q: %v", step, key, err)
			}
			delete(model, key)
		case op < 998:
			got, ok, err := m.Get([]byte(key))
			want, wok := model[key]
			if err != nil || ok != wok || !bytes.Equal(got, want) {
				t.Fatalf("step %d: Get %q = %d bytes, %v, %v; want %d bytes, %v", step, key, len(got), ok, err, len(want), wok)
			}
			if ok && len(got) > 0 {
				got[0]++ // the caller's copy: the map must not see it
			}
		default:
			checkAscend(t, m, model, randomPrefix(rng, key), step)
		}
		if step%100_000 == 99_999 {
			checkAscend(t, m, model, "", step) // the whole map
		}
		if int64(len(model)) != m.Len() {
			t.Fatalf("step %d: Len %d, want %d", step, m.Len(), len(model))
		}
		maxRunsSeen = max(maxRunsSeen, len(m.runs))
		if m.ids > uint64(flushes) {
			flushes = int(m.ids)
		}
	}
	checkAscend(t, m, model, "", ops)
	t.Logf("%d ops, %d keys at the end, %d runs written, %d merges, at most %d runs at once, %d now; the memtable rebuilt %d times", ops, len(model), flushes, m.merges, maxRunsSeen, len(m.runs), m.mem.rebuilds)
	if memory > 0 && (flushes < ops/5000 || m.merges < flushes/8) {
		t.Errorf("%d runs written, %d merges: the test did not spill and compact as it means to", flushes, m.merges)
	}
	// 1M operations rebuild the table about 7 times; 100,000 may not.
	if memory == 0 && (m.dir != nil || flushes > 0 || (ops >= 250_000 && m.mem.rebuilds == 0)) {
		t.Errorf("a map that never spills made a directory or wrote %d runs, or never dropped its garbage (%d)", flushes, m.mem.rebuilds)
	}
	if maxRunsSeen > maxRuns {
		t.Errorf("%d runs at once, more than %d", maxRunsSeen, maxRuns)
	}
}

func randomPrefix(rng *rand.Rand, key string) string {
	switch rng.IntN(4) {
	case 0:
		return key[:3] // a group
	case 1:
		return key[:7] // "g17/k00": ten keys' worth
	case 2:
		return key // the key and its long forms
	default:
		return key[:3+rng.IntN(len(key)-2)]
	}
}

func checkAscend(t *testing.T, m *Map, model map[string][]byte, prefix string, step int) {
	t.Helper()
	var want []string
	for k := range model {
		if strings.HasPrefix(k, prefix) {
			want = append(want, k)
		}
	}
	slices.Sort(want)
	i := 0
	err := m.Ascend([]byte(prefix), func(k, v []byte) error {
		if i >= len(want) {
			return fmt.Errorf("an extra key %q after %d", k, len(want))
		}
		if string(k) != want[i] || !bytes.Equal(v, model[want[i]]) {
			return fmt.Errorf("key %d is %q (%d bytes), want %q (%d bytes)", i, k, len(v), want[i], len(model[want[i]]))
		}
		i++
		return nil
	})
	if err == nil && i != len(want) {
		err = fmt.Errorf("%d keys, want %d", i, len(want))
	}
	if err != nil {
		t.Fatalf("step %d: Ascend %q: %v", step, prefix, err)
	}
	// An error from fn stops the walk and comes back.
	if len(want) > 1 {
		stop := errors.New("stop")
		calls := 0
		err := m.Ascend([]byte(prefix), func(k, v []byte) error { calls++; return stop })
		if err != stop || calls != 1 {
			t.Fatalf("step %d: Ascend returned %v after %d calls, want stop after 1", step, err, calls)
		}
	}
}

// TestTreeOrders: keys put in ascending, descending and alternating order
// (the B+tree's splits at its right edge, new least keys at its left)
// read back by Get and in order by Ascend.
func TestTreeOrders(t *testing.T) {
	const n = 20000
	for _, c := range []struct {
		name string
		at   func(i int) int
	}{
		{"ascending", func(i int) int { return i }},
		{"descending", func(i int) int { return n - 1 - i }},
		{"outside-in", func(i int) int {
			if i%2 == 0 {
				return i / 2
			}
			return n - 1 - i/2
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := New(Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			for i := range n {
				k := c.at(i)
				if err := m.Put(fmt.Appendf(nil, "%08d", k), fmt.Append(nil, k)); err != nil {
					t.Fatal(err)
				}
			}
			for k := range n {
				if v, ok, _ := m.Get(fmt.Appendf(nil, "%08d", k)); !ok || string(v) != fmt.Sprint(k) {
					t.Fatalf("Get %d: %q, %v", k, v, ok)
				}
			}
			want := 0
			err = m.Ascend(nil, func(k, v []byte) error {
				if string(k) != fmt.Sprintf("%08d", want) {
					return fmt.Errorf("key %d is %q", want, k)
				}
				want++
				return nil
			})
			if err != nil || want != n {
				t.Fatalf("Ascend: %v after %d keys", err, want)
			}
		})
	}
}

// TestInMemoryChurn: a map that never spills, whose keys are put,
// overwritten and deleted over and over, holds about its live keys, not
// all it was ever given.
func TestInMemoryChurn(t *testing.T) {
	m, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	val := bytes.Repeat([]byte{'v'}, 200)
	var peak int64
	for round := range 200 {
		for i := range 1000 {
			k := fmt.Appendf(nil, "r%d/%d", round%3, i)
			if err := m.Put(k, val); err != nil {
				t.Fatal(err)
			}
			if err := m.Put(k, val); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 1000 {
			if err := m.Delete(fmt.Appendf(nil, "r%d/%d", (round+2)%3, i)); err != nil {
				t.Fatal(err)
			}
		}
		peak = max(peak, m.mem.bytes())
	}
	// 200 rounds put 400,000 values of 200 bytes (80 MB); at most 2,000
	// keys are live at once.
	if m.mem.rebuilds == 0 || peak > 4<<20 {
		t.Errorf("the memtable rebuilt %d times and held up to %d bytes", m.mem.rebuilds, peak)
	}
	if m.Len() != 1000 {
		t.Errorf("Len %d, want 1000", m.Len())
	}
}
