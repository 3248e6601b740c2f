package diskmap

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCompactionStops: a map whose Stop says to stop (Ctrl-C) ends the
// compaction it is in within stopEvery records: the Put returns Stop's
// error, the part-written run is removed (the directory holds the map's
// runs and nothing else), every key put before still reads back, and
// Close removes the directory. The merge it cut short read several MB.
func TestCompactionStops(t *testing.T) {
	errStop := errors.New("interrupted")
	var stopAt time.Time
	stopped := false
	m, err := New(Options{Dir: t.TempDir(), Memory: MinMemory, Stop: func() error {
		if stopped {
			return errStop
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	dir := m.dir.Path
	defer m.Close()
	n := uint64(0)
	for ; m.merges < 3 || m.written < 8<<20; n++ {
		if err := m.Put(heapKey(n), heapKey(n+1)); err != nil {
			t.Fatal(err)
		}
	}
	stopped, stopAt = true, time.Now()
	merges, runs := m.merges, len(m.runs)
	for ; err == nil; n++ {
		err = m.Put(heapKey(n), heapKey(n+1))
	}
	took := time.Since(stopAt)
	if !errors.Is(err, errStop) || m.merges != merges {
		t.Fatalf("Put after Stop: %v (merges %d, then %d); want Stop's error, and no merge done", err, merges, m.merges)
	}
	t.Logf("%d keys put, %d runs before, %d after; stopped in %s", n, runs, len(m.runs), took)
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		if e.Name() != ".treeport-lock" {
			names = append(names, e.Name())
		}
	}
	if len(names) != len(m.runs) {
		t.Errorf("the directory holds %s; the map has %d runs", strings.Join(names, ", "), len(m.runs))
	}
	for i := uint64(0); i < n; i += 997 {
		if v, ok, err := m.Get(heapKey(i)); err != nil || !ok || string(v) != string(heapKey(i+1)) {
			t.Fatalf("key %d after the stop: %q, %v, %v", i, v, ok, err)
		}
	}
	m.Close()
	if _, err := os.Stat(filepath.Clean(dir)); !os.IsNotExist(err) {
		t.Errorf("Close left %s", dir)
	}
}
