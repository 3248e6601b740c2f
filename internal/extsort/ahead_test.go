package extsort

import (
	"bytes"
	"encoding/binary"
	"os"
	"runtime"
	"testing"
	"time"
)

// aheadSorter returns a Sorter with read ahead of n records of 100 bytes
// (their number first), spilled to several runs in dir.
func aheadSorter(t *testing.T, dir string, n int) *Sorter {
	t.Helper()
	s := New(dir, 64<<10, bytes.Compare)
	s.ReadAhead = true
	rec := make([]byte, 100)
	for i := range n {
		binary.BigEndian.PutUint32(rec, uint32(n-1-i)) // descending: every run holds a stretch
		if err := s.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestReadAheadReadError: a run file cut short under the read ahead's
// goroutine ends Next with the error (after the records before it), not
// silently at a shorter end.
func TestReadAheadReadError(t *testing.T) {
	dir := t.TempDir()
	s := aheadSorter(t, dir, 20000)
	defer s.Close()
	if s.Runs() < 3 {
		t.Fatalf("%d runs", s.Runs())
	}
	// The runs are written as the next fills (async, 64 KiB): Sort waits
	// for the last one; cut the first run (the highest numbers) after.
	it, err := s.Sort()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if it.ahead == nil {
		t.Fatal("no read ahead")
	}
	fi, err := os.Stat(s.runs[0])
	if err != nil {
		t.Fatal(err)
	}
	// The goroutine may have read the first 4 KiB (its read buffer's
	// least) already; cut well past that.
	if err := os.Truncate(s.runs[0], fi.Size()/2+3); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ok := it.Next(); ok; _, ok = it.Next() {
		n++
	}
	if it.Err() == nil || n >= 20000 {
		t.Fatalf("read %d of 20000 records, error %v; want fewer and an error", n, it.Err())
	}
}

// TestReadAheadClose: an Iter closed before its end stops its goroutine
// (none is left), and the Sorter's Close then removes every run file.
func TestReadAheadClose(t *testing.T) {
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	s := aheadSorter(t, dir, 20000)
	it, err := s.Sort()
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, ok := it.Next(); !ok {
			t.Fatal(it.Err())
		}
	}
	it.Close()
	it.Close() // twice: nothing more
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("Close left %d files", len(left))
	}
	deadline := time.Now().Add(time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Fatalf("%d goroutines after Close, %d before", g, before)
	}
}

// TestReadAheadRecordsStay: a record Next returned stays as it was until
// the following call, though the goroutine fills other batches meanwhile,
// and appending to it does not write over the next record.
func TestReadAheadRecordsStay(t *testing.T) {
	s := aheadSorter(t, t.TempDir(), 20000)
	defer s.Close()
	it, err := s.Sort()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for i := uint32(0); ; i++ {
		rec, ok := it.Next()
		if !ok {
			if it.Err() != nil || i != 20000 {
				t.Fatalf("%d records, error %v", i, it.Err())
			}
			break
		}
		if i%1000 == 0 {
			time.Sleep(time.Millisecond) // the goroutine runs ahead
		}
		if got := binary.BigEndian.Uint32(rec); got != i {
			t.Fatalf("record %d reads %d", i, got)
		}
		_ = append(rec, 0xff, 0xff, 0xff, 0xff)
	}
}
