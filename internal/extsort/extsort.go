// Package extsort sorts more records than fit in memory: it sorts what a
// memory budget holds, writes each such run to a file of a temporary
// directory, and merges the runs in one sequential pass. Only sequential
// reads and writes touch the disk.
//
// A record is a byte string; the order is the caller's compare function on
// two records. The sort is stable: records that compare equal come out in
// the order they were added.
package extsort

import (
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// Sorter collects records and then returns them sorted (Sort). It is not
// safe for concurrent use. Close removes its files, whatever happened.
type Sorter struct {
	cmp    func(a, b []byte) int
	dir    string
	budget int // of the records filling (half the budget when async)

	buffers
	runs []string
	// longest is the longest record added: the runs' reader refuses a
	// length past it.
	longest int
	// async: a full run is sorted and written by a goroutine (writing)
	// while the next one fills, in buffers of half the budget each; the
	// buffers of the run written last are kept (spare) for the one after.
	async   bool
	writing *runWrite
	spare   buffers

	// Spilled counts the bytes written to run files so far.
	Spilled int64
	// Records counts the records added.
	Records int64
	// OnSpill, when set, is called after each run file is written, with
	// Spilled.
	OnSpill func(spilled int64)
	// Prefix, when set, maps a record to a number whose order is the
	// order of cmp where two numbers differ (where they are equal, cmp
	// decides): most comparisons of the in-memory sort are then of two
	// numbers.
	Prefix func(rec []byte) uint64
}

// buffers are the records of a run in memory. Their bytes are in chunks
// of chunkSize (or one record larger), filled in order up to
// chunks[last], and kept from one run to the next: nothing is copied as
// more chunks are added (the first grows to chunkSize by append). used is
// their bytes.
type buffers struct {
	chunks [][]byte
	last   int
	used   int
	recs   []span
	tmp    []span // sortMem's scratch, as long as recs
}

// runWrite is a run being sorted and written by a goroutine.
type runWrite struct {
	done chan struct{}
	b    buffers // its buffers, emptied once written
	n    int64
	err  error
}

// asyncMinBudget is the least budget whose Sorter writes its runs while
// the next fills (a variable for the tests).
var asyncMinBudget = 1 << 20

// span is a record's place, and its Prefix. off is the chunk's number
// (its high bits) and the place in the chunk (its low chunkBits bits):
// it grows in the order the records were added.
type span struct {
	off, n uint32
	pfx    uint64
}

const (
	chunkBits = 20
	chunkSize = 1 << chunkBits
	maxChunks = 1 << (32 - chunkBits)
	// firstChunk is the first chunk's size to begin with.
	firstChunk = 4 << 10
)

// spanBytes is what a record's place costs beside its bytes: its span,
// and its span's room in the sort's scratch.
const spanBytes = 32

// New returns a Sorter that keeps at most about budget bytes of records in
// memory (at least 64 KiB) and writes its runs to files in dir, which must
// exist. cmp orders two records.
//
// A budget of 1 MiB or more is shared by two runs: one fills while a
// goroutine sorts and writes the one before, on another core.
func New(dir string, budget int, cmp func(a, b []byte) int) *Sorter {
	s := &Sorter{cmp: cmp, dir: dir, budget: max(budget, 64<<10)}
	if s.budget >= asyncMinBudget {
		s.async, s.budget = true, s.budget/2
	}
	return s
}

// Add adds a copy of rec.
func (s *Sorter) Add(rec []byte) error {
	s.longest = max(s.longest, len(rec))
	if s.used+len(rec)+spanBytes*(len(s.recs)+1) > s.budget && len(s.recs) > 0 || s.newChunk(len(rec)) && s.last+1 == maxChunks {
		if err := s.spill(); err != nil {
			return err
		}
	}
	var pfx uint64
	if s.Prefix != nil {
		pfx = s.Prefix(rec)
	}
	if s.newChunk(len(rec)) {
		if len(s.chunks) > 0 {
			s.last++
		}
		if s.last == len(s.chunks) {
			// The first chunk starts small and grows as append grows it
			// (a span is a place in its chunk, not a pointer): a sort of a
			// few records, as a deep chain's levels make by the thousand,
			// does not clear a MiB each. The chunks after it are full size.
			size := chunkSize
			if s.last == 0 {
				size = firstChunk
			}
			s.chunks = append(s.chunks, make([]byte, 0, max(size, len(rec))))
		}
	}
	c := s.chunks[s.last]
	s.recs = append(s.recs, span{uint32(s.last<<chunkBits | len(c)), uint32(len(rec)), pfx})
	s.chunks[s.last] = append(c, rec...)
	s.used += len(rec)
	s.Records++
	return nil
}

// newChunk reports whether a record of n bytes goes to a chunk after
// chunks[last]: that chunk holds records, and this one would end past
// chunkSize in it.
func (s *buffers) newChunk(n int) bool {
	if len(s.chunks) == 0 {
		return true
	}
	c := s.chunks[s.last]
	return len(c) > 0 && len(c)+n > chunkSize
}

func (s *buffers) rec(p span) []byte {
	c := s.chunks[p.off>>chunkBits]
	at := p.off & (chunkSize - 1)
	return c[at : at+p.n]
}

// sortMem sorts the records in memory, stably: equal records keep the
// order of their offsets, the order they were added in. The spans are
// sorted by their prefixes first, a byte at a time (a stable radix sort,
// which skips the bytes all prefixes share), then each group of one
// prefix by cmp (all of them, without a Prefix).
func (s *buffers) sortMem(compare func(a, b []byte) int) {
	if len(s.recs) < 2 {
		return
	}
	if cap(s.tmp) < len(s.recs) {
		s.tmp = make([]span, len(s.recs))
	}
	s.recs, s.tmp = radixSort(s.recs, s.tmp[:len(s.recs)])
	byRec := func(a, b span) int {
		if c := compare(s.rec(a), s.rec(b)); c != 0 {
			return c
		}
		return cmp.Compare(a.off, b.off)
	}
	for i := 0; i < len(s.recs); {
		j := i + 1
		for j < len(s.recs) && s.recs[j].pfx == s.recs[i].pfx {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(s.recs[i:j], byRec)
		}
		i = j
	}
}

// radixSort sorts recs by pfx, stably, with tmp (as long) as scratch; it
// returns the sorted spans and the other slice.
func radixSort(recs, tmp []span) (sorted, scratch []span) {
	var counts [8][256]int
	for _, r := range recs {
		p := r.pfx
		for b := range 8 {
			counts[b][byte(p>>(8*b))]++
		}
	}
	src, dst := recs, tmp
	for b := range 8 {
		c := &counts[b]
		if c[byte(src[0].pfx>>(8*b))] == len(src) {
			continue // one value of this byte: the pass would change nothing
		}
		var pos [256]int
		sum := 0
		for i, n := range c {
			pos[i] = sum
			sum += n
		}
		for _, r := range src {
			k := byte(r.pfx >> (8 * b))
			dst[pos[k]] = r
			pos[k]++
		}
		src, dst = dst, src
	}
	return src, dst
}

// spill writes the records in memory, sorted, to a new run file: at
// once, or, async, by a goroutine while the next run fills (after the one
// before it is written: one at a time).
func (s *Sorter) spill() error {
	if err := s.wait(); err != nil {
		return err
	}
	f, err := os.CreateTemp(s.dir, "run-*")
	if err != nil {
		return fmt.Errorf("extsort: %w", err)
	}
	s.runs = append(s.runs, f.Name())
	if !s.async {
		s.buffers.sortMem(s.cmp)
		n, err := s.buffers.write(f)
		return s.written(n, err)
	}
	w := &runWrite{done: make(chan struct{}), b: s.buffers}
	s.buffers, s.spare, s.writing = s.spare, buffers{}, w
	go func() {
		defer close(w.done)
		w.b.sortMem(s.cmp)
		w.n, w.err = w.b.write(f)
	}()
	return nil
}

// wait waits for the run being written, if any, and takes its buffers
// back as the spare ones.
func (s *Sorter) wait() error {
	w := s.writing
	if w == nil {
		return nil
	}
	<-w.done
	s.writing, s.spare = nil, w.b
	return s.written(w.n, w.err)
}

// written counts a run of n bytes written (or its error).
func (s *Sorter) written(n int64, err error) error {
	if err != nil {
		return err
	}
	s.Spilled += n
	if s.OnSpill != nil {
		s.OnSpill(s.Spilled)
	}
	return nil
}

// write writes the records, sorted, to f, which it closes, and empties
// the buffers; n is the bytes written.
func (s *buffers) write(f *os.File) (n int64, err error) {
	// The records are gathered into one buffer, each behind its length,
	// and written 256 KiB at a time.
	out := make([]byte, 0, 256<<10+binary.MaxVarintLen64)
	for _, p := range s.recs {
		if len(out)+binary.MaxVarintLen64+int(p.n) > cap(out) && len(out) > 0 {
			if _, err = f.Write(out); err != nil {
				break
			}
			n += int64(len(out))
			out = out[:0]
		}
		out = binary.AppendUvarint(out, uint64(p.n))
		out = append(out, s.rec(p)...)
	}
	if err == nil {
		_, err = f.Write(out)
		n += int64(len(out))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("extsort: writing a run: %w", err)
	}
	for i := range s.chunks {
		s.chunks[i] = s.chunks[i][:0]
	}
	s.last, s.used, s.recs = 0, 0, s.recs[:0]
	return n, nil
}

// Runs is how many run files the records were written to so far.
func (s *Sorter) Runs() int { return len(s.runs) }

// Sort ends the adding and returns the records in order. The Sorter must
// not be added to afterwards; Close it once the Iter is done.
func (s *Sorter) Sort() (*Iter, error) {
	if len(s.runs) == 0 {
		s.sortMem(s.cmp)
		s.tmp, s.spare = nil, buffers{}
		return &Iter{mem: s}, nil
	}
	if len(s.recs) > 0 {
		if err := s.spill(); err != nil {
			return nil, err
		}
	}
	if err := s.wait(); err != nil {
		return nil, err
	}
	s.buffers, s.spare = buffers{}, buffers{}
	it := &Iter{cmp: s.cmp}
	readBuf := min(256<<10, max(4<<10, s.budget/(2*len(s.runs))))
	for k, name := range s.runs {
		f, err := os.Open(name)
		if err != nil {
			it.Close()
			return nil, fmt.Errorf("extsort: %w", err)
		}
		r := &run{f: f, r: newRecReader(f, readBuf, s.longest), k: k}
		it.files = append(it.files, f)
		ok, err := r.next()
		if err != nil {
			it.Close()
			return nil, err
		}
		if ok {
			it.h.runs = append(it.h.runs, r)
			if s.Prefix != nil {
				r.pfx = s.Prefix(r.cur)
			}
		}
	}
	it.h.cmp, it.h.prefix = s.cmp, s.Prefix
	heap.Init(&it.h)
	return it, nil
}

// Close removes the run files.
func (s *Sorter) Close() error {
	var errs []error
	if s.writing != nil {
		<-s.writing.done // its error is the run's, not the removal's
		s.writing = nil
	}
	for _, name := range s.runs {
		if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	s.runs = nil
	s.buffers, s.spare = buffers{}, buffers{}
	return errors.Join(errs...)
}

// Iter returns a Sorter's records in order.
type Iter struct {
	mem   *Sorter
	pos   int
	cmp   func(a, b []byte) int
	h     runHeap
	files []*os.File
	// adv is the run whose record Next returned last: Next advances it
	// first, so that the record stays valid, in the run's buffer, until
	// then.
	adv *run
	err error
}

// Next returns the next record, valid until the following call, and false
// at the end or on an error (Err).
func (it *Iter) Next() ([]byte, bool) {
	if it.mem != nil {
		if it.pos >= len(it.mem.recs) {
			return nil, false
		}
		it.pos++
		return it.mem.rec(it.mem.recs[it.pos-1]), true
	}
	if it.adv != nil {
		ok, err := it.adv.next()
		switch {
		case err != nil:
			it.err = err
		case ok:
			if it.h.prefix != nil {
				it.adv.pfx = it.h.prefix(it.adv.cur)
			}
			heap.Fix(&it.h, 0)
		default:
			heap.Pop(&it.h)
		}
		it.adv = nil
	}
	if it.err != nil || len(it.h.runs) == 0 {
		return nil, false
	}
	it.adv = it.h.runs[0]
	return it.adv.cur, true
}

// Err is the error that ended Next, if any.
func (it *Iter) Err() error { return it.err }

// Close closes the run files (the Sorter's Close removes them).
func (it *Iter) Close() {
	for _, f := range it.files {
		f.Close()
	}
	it.files = nil
}

type run struct {
	f   *os.File
	r   *recReader
	k   int
	cur []byte
	pfx uint64 // the Sorter's Prefix of cur
}

func (r *run) next() (bool, error) {
	rec, err := r.r.next()
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("extsort: reading %s: %w", r.f.Name(), err)
	}
	r.cur = rec
	return true, nil
}

// runHeap orders the runs by their current record (by its Prefix first,
// when the Sorter has one), then by run number, so that equal records
// come out in the order they were added.
type runHeap struct {
	runs   []*run
	cmp    func(a, b []byte) int
	prefix func(rec []byte) uint64
}

func (h runHeap) Len() int { return len(h.runs) }
func (h runHeap) Less(a, b int) bool {
	ra, rb := h.runs[a], h.runs[b]
	if ra.pfx != rb.pfx {
		return ra.pfx < rb.pfx // both 0 without a prefix
	}
	if c := h.cmp(ra.cur, rb.cur); c != 0 {
		return c < 0
	}
	return ra.k < rb.k
}
func (h runHeap) Swap(a, b int) { h.runs[a], h.runs[b] = h.runs[b], h.runs[a] }
func (h *runHeap) Push(x any)   { h.runs = append(h.runs, x.(*run)) }
func (h *runHeap) Pop() any {
	old := h.runs
	x := old[len(old)-1]
	h.runs = old[:len(old)-1]
	return x
}
