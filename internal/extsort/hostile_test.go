package extsort

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

// allocated is what fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestRunCraftedLength: a run file whose first record's length was
// changed to 1 GiB while the sorter used it (a crafted or damaged file)
// is refused with an error that names it, before a GiB is taken: the
// length is past the longest record the sorter wrote. A spool's alike.
func TestRunCraftedLength(t *testing.T) {
	huge := binary.AppendUvarint(nil, 1<<30)
	s := New(t.TempDir(), 64<<10, bytes.Compare)
	defer s.Close()
	for i := range 20000 {
		if err := s.Add(fmt.Appendf(nil, "record %06d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if s.Runs() == 0 {
		t.Fatal("nothing spilled")
	}
	name := s.runs[0]
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(huge, 0)
	f.Close()
	var it *Iter
	alloc := allocated(func() { it, err = s.Sort() })
	if it != nil {
		it.Close()
	}
	if alloc > 64<<20 || err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "longest") {
		t.Errorf("Sort: %v, %d bytes allocated; want an error naming %s, in a few MiB", err, alloc, name)
	}

	sp, err := NewSpool(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	sp.Add([]byte("first"))
	sp.Add([]byte("second"))
	if err := sp.Rewind(); err != nil {
		t.Fatal(err)
	}
	if _, err := sp.f.WriteAt(huge, 6); err != nil {
		t.Fatal(err)
	}
	var got []string
	alloc = allocated(func() {
		for rec, ok := sp.Next(); ok; rec, ok = sp.Next() {
			got = append(got, string(rec))
		}
	})
	if alloc > 64<<20 || sp.Err() == nil || len(got) != 1 {
		t.Errorf("spool: read %q, error %v, %d bytes allocated; want the first record, then an error", got, sp.Err(), alloc)
	}
}
