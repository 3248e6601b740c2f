package diskmap

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/treeport/treeport/internal/spill"
)

// heapKey is the i-th key of TestHeapBound, about 40 bytes.
func heapKey(i uint64) []byte {
	return fmt.Appendf(nil, "node/%016x/child/%08d", i*0x9E3779B97F4A7C15, i)
}

// TestHeapBound: 2M keys of about 60 bytes (key and value), 140 MB of
// data, put in random order into a map of 4 MiB: the heap in use stays
// under 4 times the budget above what it was before, Len is exact, every
// key sampled reads back, and Close removes the directory.
func TestHeapBound(t *testing.T) {
	n := uint64(2_000_000 / raceScale)
	if testing.Short() {
		n = 300_000
	}
	const memory = 4 << 20
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	dir := t.TempDir()
	m, err := New(Options{Dir: dir, Memory: memory})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	val := bytes.Repeat([]byte("v"), 20)
	var peak uint64
	for i := range n {
		if err := m.Put(heapKey(i), val); err != nil {
			t.Fatal(err)
		}
		if i%50_000 == 49_999 {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
	}
	if m.Len() != int64(n) {
		t.Errorf("Len %d, want %d", m.Len(), n)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		i := rng.Uint64N(n)
		if v, ok, err := m.Get(heapKey(i)); err != nil || !ok || !bytes.Equal(v, val) {
			t.Fatalf("Get of key %d: %q, %v, %v", i, v, ok, err)
		}
		if _, ok, err := m.Get(heapKey(n + i)); err != nil || ok {
			t.Fatalf("Get of absent key %d: %v, %v", n+i, ok, err)
		}
	}
	var index int64
	for _, r := range m.runs {
		index += r.indexBytes()
	}
	t.Logf("%d keys: heap in use at most %.1f MiB above %.1f MiB, %d runs (indexes and filters %.1f MiB), %d written; %.0f MB flushed, %.0f MB written in all (%.1f times)",
		n, float64(peak-base)/(1<<20), float64(base)/(1<<20), len(m.runs), float64(index)/(1<<20), m.ids,
		float64(m.flushed)/1e6, float64(m.written)/1e6, float64(m.written)/float64(m.flushed))
	if peak > base+4*memory {
		t.Errorf("heap in use reached %d bytes above the start, over 4 times the budget of %d", peak-base, memory)
	}
	path := m.dir.Path
	if entries, _ := os.ReadDir(path); len(entries) < 2 {
		t.Errorf("%s holds %d files: the map did not spill", path, len(entries))
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("Close left %s: %v", path, err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	if err := m.Put([]byte("k"), nil); err == nil {
		t.Error("a Put after Close did not fail")
	}
}

// TestAcrossRuns: a key put in an old run and deleted in a newer one is
// gone for Get, Ascend and Len, through flushes and compactions, until it
// is put again; an overwrite in a newer run shadows the old value.
func TestAcrossRuns(t *testing.T) {
	m, err := New(Options{Dir: t.TempDir(), Memory: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	filler := func(tag string, n int) {
		for i := range n {
			if err := m.Put(fmt.Appendf(nil, "fill/%s/%06d", tag, i), bytes.Repeat([]byte{'f'}, 100)); err != nil {
				t.Fatal(err)
			}
		}
	}
	put := func(k, v string) {
		if err := m.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when, k, want string, ok bool) {
		t.Helper()
		v, found, err := m.Get([]byte(k))
		if err != nil || found != ok || string(v) != want {
			t.Fatalf("%s: Get %q = %q, %v, %v; want %q, %v", when, k, v, found, err, want, ok)
		}
		var seen []string
		m.Ascend([]byte("a/"), func(k, v []byte) error { seen = append(seen, string(k)+"="+string(v)); return nil })
		inAscend := false
		for _, s := range seen {
			if s == k+"="+want {
				inAscend = true
			} else if len(s) > len(k) && s[:len(k)+1] == k+"=" {
				t.Fatalf("%s: Ascend shows %q", when, s)
			}
		}
		if inAscend != ok {
			t.Fatalf("%s: Ascend shows %q: %v, want %v (%q)", when, k, inAscend, ok, seen)
		}
	}
	put("a/1", "old")
	put("a/2", "kept")
	filler("x", 5000) // a/1 and a/2 are in a run
	if len(m.runs) == 0 {
		t.Fatal("no run after 5000 puts")
	}
	runs := m.ids
	check("in an old run", "a/1", "old", true)
	if err := m.Delete([]byte("a/1")); err != nil {
		t.Fatal(err)
	}
	check("deleted in the memtable", "a/1", "", false)
	if m.Len() != 5001 {
		t.Errorf("Len %d after the delete, want 5001", m.Len())
	}
	filler("y", 5000) // the tombstone in a newer run
	if m.ids == runs {
		t.Fatal("no new run after 5000 more puts")
	}
	check("deleted in a newer run", "a/1", "", false)
	if err := m.Delete([]byte("a/1")); err != nil || m.Len() != 10001 {
		t.Fatalf("a second delete: %v, Len %d", err, m.Len())
	}
	// Compactions, the oldest run among them in the end.
	for i := 0; m.ids < runs+3*maxRuns; i++ {
		filler(fmt.Sprint("z", i), 2000)
	}
	check("after compactions", "a/1", "", false)
	check("after compactions", "a/2", "kept", true)
	put("a/1", "new")
	check("put again", "a/1", "new", true)
	filler("w", 5000)
	check("put again, in a run", "a/1", "new", true)
	put("a/2", "newer")
	filler("v", 5000)
	check("overwritten in a newer run", "a/2", "newer", true)
	want := int64(2)
	m.Ascend([]byte("fill/"), func(k, v []byte) error { want++; return nil })
	if m.Len() != want {
		t.Errorf("Len %d, want %d", m.Len(), want)
	}
}

// TestSweptAfterKill: a process killed with SIGKILL while its map holds
// runs leaves a treeport-diskmap-* directory; spill.Sweep, which every
// out-of-core job runs first, removes it once its lock is free, and
// never while the process lives.
func TestSweptAfterKill(t *testing.T) {
	if dir := os.Getenv("DISKMAP_HOLD"); dir != "" {
		m, err := New(Options{Dir: dir, Memory: 1 << 20})
		if err != nil {
			os.Exit(3)
		}
		for i := range 20000 {
			m.Put(fmt.Appendf(nil, "k%08d", i), bytes.Repeat([]byte{1}, 100))
		}
		os.WriteFile(filepath.Join(m.dir.Path, "ready"), nil, 0o600)
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestSweptAfterKill$")
	cmd.Env = append(os.Environ(), "DISKMAP_HOLD="+tmp)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var dir string
	for deadline := time.Now().Add(time.Minute); dir == ""; {
		if found, _ := filepath.Glob(filepath.Join(tmp, "treeport-diskmap-*", "ready")); len(found) > 0 {
			dir = filepath.Dir(found[0])
		} else if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the child made no directory")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if runs, _ := filepath.Glob(filepath.Join(dir, "run-*")); len(runs) == 0 {
		t.Error("the child wrote no runs")
	}
	// The lock as old as one whose maker had long locked it.
	old := time.Now().Add(-2 * time.Minute)
	os.Chtimes(filepath.Join(dir, spill.LockName), old, old)
	spill.Sweep(tmp, nil)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("a live process's directory was swept: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	spill.Sweep(tmp, nil)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a killed process's directory was left: %v", err)
	}
}

// TestOptions: a negative budget is refused; a tiny one is raised to
// MinMemory and spills; 0 and a huge one make no directory; empty keys
// and values are keys and values.
func TestOptions(t *testing.T) {
	if _, err := New(Options{Memory: -1}); err == nil {
		t.Error("a negative budget was taken")
	}
	for _, c := range []struct {
		name   string
		memory int64
		dir    bool
	}{{"never", 0, false}, {"huge", 1 << 62, false}, {"tiny", 1000, true}, {"1MiB", 1 << 20, true}} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			m, err := New(Options{Dir: tmp, Memory: c.memory})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if found, _ := filepath.Glob(filepath.Join(tmp, "treeport-diskmap-*")); (len(found) == 1) != c.dir {
				t.Errorf("directories %q, want one: %v", found, c.dir)
			}
			for _, kv := range [][2]string{{"", "empty key"}, {"k", ""}} {
				if err := m.Put([]byte(kv[0]), []byte(kv[1])); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 30000 {
				m.Put(fmt.Appendf(nil, "k%06d", i), bytes.Repeat([]byte{'v'}, 50))
			}
			if c.dir != (len(m.runs) > 0) {
				t.Errorf("%d runs: spilled %v, want %v", len(m.runs), len(m.runs) > 0, c.dir)
			}
			for _, kv := range [][2]string{{"", "empty key"}, {"k", ""}} {
				v, ok, err := m.Get([]byte(kv[0]))
				if err != nil || !ok || string(v) != kv[1] {
					t.Errorf("Get %q = %q, %v, %v", kv[0], v, ok, err)
				}
			}
			if m.Len() != 30002 {
				t.Errorf("Len %d, want 30002", m.Len())
			}
		})
	}
}
