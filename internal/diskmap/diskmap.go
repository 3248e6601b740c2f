// Package diskmap is an ordered map of byte strings to byte strings that
// holds about a fixed number of bytes in memory, whatever the number of
// its keys: what does not fit goes to files in a temporary directory. It
// is the state of the jobs that would otherwise keep a whole table's keys
// in Go maps (migrate --follow).
//
// # Design
//
// It is a log-structured merge tree. Writes go to the memtable, in memory:
// a B+tree for the order, and a hash index of its keys for Get, Put and
// Delete. When the memtable passes its share of the budget, it is
// written in key order to a run, an immutable sorted file of blocks (16
// KiB, larger when the data outgrows the indexes' share: below) of
// records, deletes as tombstones. Each run
// keeps in memory a sparse index (each block's first key and offset) and,
// within the budget, a Bloom filter of its keys. A Get looks in the
// memtable, then in the runs from the newest, and reads at most one block
// of a run whose filter lets the key through: with the filters, about one
// block read for a key that is there, and rarely one for a key that is
// not. A few recently read blocks are kept in a cache. Runs are merged
// size-tiered (compact): 4 runs of about one size into one of the next,
// and, while there are more than maxRuns (8), the adjacent runs whose
// merge writes the fewest bytes a run removed; a merge drops shadowed
// values, and tombstones when the oldest run is among those merged. The
// runs stay few (a Get asks at most 8 filters, an Ascend reads a block of
// each run), at the cost of rewriting the data a few times: 2M keys (140
// MB) put through 4 MiB, 35 times the budget, were written 5 times in all
// (TestHeapBound logs it), and the count grows about with the logarithm
// of data / memtable (by simulation, 10 times for 4,000 memtables). A
// larger budget's larger memtable makes fewer, larger runs.
//
// Ascend merges the memtable and every run from a prefix's first key: it
// seeks, it does not read what comes before.
//
// # Memory
//
// Memory (at least 1 MiB; a smaller one is raised to it) is shared: a
// quarter for the memtable, three eighths for the Bloom filters (10 bits
// a key; fewer, or none for a run, when the keys outgrow them: a run is
// given what the others left), a sixteenth for the block cache, a quarter
// for the runs' indexes, and the rest for the buffers of reads, writes
// and merges (a block each). The indexes are the one part that grows with
// the data: an entry a block (its first key and 12 bytes). Blocks are 16
// KiB, and a run is written with larger ones (doubled up to maxBlock, 1
// MiB) when the data would otherwise need more entries than the indexes'
// quarter holds. Past that the index grows with the data: 100 GB of data
// with keys of 60 bytes in 1 MiB blocks is 95,000 entries, about 7 MB,
// where 16 KiB blocks would take 6.1M entries, about 440 MB. A Get then
// reads one block of up to 1 MiB a run whose filter lets it through. Held
// to 4 MiB, 2M keys of 60 bytes (140 MB) take about 9 MiB of heap in use
// (TestHeapBound); the Go runtime's own memory is beside it.
//
// Memory 0, or one so large the memtable never reaches its share, is a
// map that never spills: a B+tree in memory, with no files.
//
// # Disk
//
// The runs hold about the live data (keys, values and 2-4 bytes each),
// plus the tombstones and shadowed values of runs not compacted yet: at
// most about twice the live data, and for a moment during a compaction
// the merged runs twice. The files are in a directory "treeport-diskmap-*"
// that New makes in Options.Dir (made, locked and removed by
// internal/spill: a run killed with SIGKILL leaves one that the next run's
// spill.Sweep removes). Close removes it.
//
// A Map is not safe for concurrent use. After an error from Put, Delete
// or Ascend (a disk that is full or fails) the map should be closed: what
// it holds is not known.
package diskmap

import (
	"errors"
	"fmt"
	"hash/maphash"
	"os"

	"github.com/treeport/treeport/internal/spill"
)

const (
	// MinMemory is the least budget; a smaller one is raised to it.
	MinMemory = 1 << 20
	// maxRuns is how many runs there may be before a compaction.
	maxRuns = 8
	// mergeWidth is how many runs a compaction merges.
	mergeWidth = 4
	minBlock   = 16 << 10
	maxBlock   = 1 << 20
	// bloomBitsPerKey is the filters' density when the budget allows.
	bloomBitsPerKey = 10
)

var errCorrupt = errors.New("diskmap: corrupt run")

// Options configure a Map.
type Options struct {
	// Dir is where its directory of runs is made ("": the system's
	// temporary directory).
	Dir string
	// Memory is about how many bytes it may hold in memory; 0: never
	// spill.
	Memory int64
	// Stop, when set, is asked every few thousand records of a
	// compaction (which may merge runs of the whole map's size): an error
	// ends it, its part-written run removed and the runs before it kept,
	// and the Put that began it returns that error (ctx.Err: Ctrl-C stops
	// a merge of gigabytes within a moment).
	Stop func() error
}

// Map is an ordered map in a memory budget. It is not safe for
// concurrent use; Close removes its files.
type Map struct {
	mem   *memtable
	runs  []*run // oldest first
	live  int64
	seed  maphash.Seed
	dir   *spill.Dir
	spill bool
	ids   uint64
	cache cache

	tableShare, bloomShare, indexShare int64
	block                              int
	wbuf                               []byte   // the run writer's buffer
	bufs                               [][]byte // run iterators' buffers
	memory                             int64
	// flushed and written count the bytes of runs written by flushes and
	// in all (compactions too): the write amplification, for the tests.
	flushed, written int64
	merges           int
	closed           bool
	stop             func() error
}

// New returns an empty Map. It makes its directory when it may spill.
func New(opts Options) (*Map, error) {
	if opts.Memory < 0 {
		return nil, fmt.Errorf("diskmap: a memory budget of %d bytes (give 0 or at least 1 MiB)", opts.Memory)
	}
	m := &Map{mem: newMemtable(), seed: maphash.MakeSeed(), stop: opts.Stop}
	if opts.Memory == 0 {
		return m, nil
	}
	mem := max(opts.Memory, MinMemory)
	m.memory = mem
	m.tableShare, m.bloomShare, m.indexShare = mem/4, mem*3/8, mem/4
	m.block = minBlock
	m.cache.limit = mem / 16
	// A memtable share that no memory could hold: never spill.
	if m.tableShare < 1<<50 {
		d, err := spill.New(opts.Dir, "diskmap", "a map out of core")
		if err != nil {
			return nil, err
		}
		m.dir, m.spill = d, true
	}
	return m, nil
}

// Len is the number of live keys.
func (m *Map) Len() int64 { return m.live }

// Get returns a copy of key's value; false when it is absent.
func (m *Map) Get(key []byte) (value []byte, ok bool, err error) {
	if m.closed {
		return nil, false, errClosed
	}
	if x := m.mem.find(key); x != 0 {
		if m.mem.entries[x].del {
			return nil, false, nil
		}
		return append([]byte{}, m.mem.value(x)...), true, nil
	}
	v, del, found, err := m.runsGet(key)
	if err != nil || !found || del {
		return nil, false, err
	}
	return append([]byte{}, v...), true, nil
}

// runsGet looks for key in the runs, newest first: its newest record
// there, which may be a tombstone. val is valid until the next read.
func (m *Map) runsGet(key []byte) (val []byte, del, found bool, err error) {
	if len(m.runs) == 0 {
		return nil, false, false, nil
	}
	h := maphash.Bytes(m.seed, key)
	for i := len(m.runs) - 1; i >= 0; i-- {
		r := m.runs[i]
		if !r.mayHave(h) {
			continue
		}
		bi := r.findBlock(key)
		if bi < 0 {
			continue
		}
		raw, err := m.readBlock(r, bi)
		if err != nil {
			return nil, false, false, err
		}
		b, err := parseBlock(raw)
		if err != nil {
			return nil, false, false, m.corrupt(r, bi)
		}
		at, err := b.seek(key)
		if err != nil {
			return nil, false, false, m.corrupt(r, bi)
		}
		if at < len(b.recs) {
			k, v, d, _, err := b.record(at)
			if err != nil {
				return nil, false, false, m.corrupt(r, bi)
			}
			if string(k) == string(key) {
				return v, d, true, nil
			}
		}
	}
	return nil, false, false, nil
}

// inRuns reports whether the runs hold a live value of key.
func (m *Map) inRuns(key []byte) (bool, error) {
	_, del, found, err := m.runsGet(key)
	return found && !del, err
}

var errClosed = errors.New("diskmap: the map is closed")

// Put sets key's value, copying both.
func (m *Map) Put(key, value []byte) error {
	if m.closed {
		return errClosed
	}
	if uint64(len(key)) > 1<<31 || uint64(len(value)) > 1<<31 {
		return fmt.Errorf("diskmap: a key of %d bytes and value of %d bytes (at most 2 GiB each)", len(key), len(value))
	}
	t := m.mem
	x := t.find(key)
	if x == 0 {
		live, err := m.inRuns(key)
		if err != nil {
			return err
		}
		x = t.insert(key)
		t.entries[x].old = live
		if !live {
			m.live++
		}
	} else if t.entries[x].del {
		m.live++
	}
	t.set(x, value)
	return m.settle()
}

// Delete removes key; nothing when it is absent.
func (m *Map) Delete(key []byte) error {
	if m.closed {
		return errClosed
	}
	t := m.mem
	x := t.find(key)
	if x == 0 {
		live, err := m.inRuns(key)
		if err != nil || !live {
			return err
		}
		// A tombstone, to shadow the runs' value.
		x = t.insert(key)
		t.entries[x].old = true
	} else if t.entries[x].del {
		return nil
	}
	t.remove(x)
	m.live--
	return m.settle()
}

// settle flushes the memtable when it passes its share, or drops its
// garbage in a map that never spills.
func (m *Map) settle() error {
	if !m.spill {
		m.mem.compact()
		return nil
	}
	if m.mem.bytes() < m.tableShare {
		return nil
	}
	return m.flush()
}

// Ascend calls fn for each live key with the prefix, in byte order, with
// its value. key and value are valid only during the call, and fn must
// not change the map. An error from fn ends the walk and is returned.
func (m *Map) Ascend(prefix []byte, fn func(key, value []byte) error) error {
	if m.closed {
		return errClosed
	}
	srcs := make([]iter, 0, 1+len(m.runs))
	srcs = append(srcs, &memIter{t: m.mem, leaf: -1})
	for i := len(m.runs) - 1; i >= 0; i-- {
		srcs = append(srcs, m.runIter(m.runs[i]))
	}
	defer m.freeIters(srcs)
	mg := merge{srcs: srcs, prefix: prefix}
	return mg.each(func(k, v []byte, del bool) error {
		if del {
			return nil
		}
		return fn(k, v)
	})
}

// runIter is an iterator of r with a buffer of the map's: a walk of a
// small prefix allocates no block.
func (m *Map) runIter(r *run) *runIter {
	it := &runIter{m: m, r: r}
	if n := len(m.bufs); n > 0 {
		it.buf, m.bufs = m.bufs[n-1], m.bufs[:n-1]
	}
	return it
}

// freeIters gives the map back the buffers of run iterators.
func (m *Map) freeIters(srcs []iter) {
	for _, s := range srcs {
		// Kept up to a buffer a run and a sixty-fourth of the budget
		// each: a block of a 400 KB value is let go.
		if it, ok := s.(*runIter); ok && it.buf != nil && len(m.bufs) < maxRuns+1 && int64(cap(it.buf)) <= m.memory/64 {
			m.bufs = append(m.bufs, it.buf)
			it.buf = nil
		}
	}
}

// Close removes the map's files. A second call does nothing.
func (m *Map) Close() error {
	if m.closed {
		return nil
	}
	m.closed = true
	var err error
	for _, r := range m.runs {
		if e := r.f.Close(); err == nil && e != nil {
			err = e
		}
	}
	m.runs, m.bufs = nil, nil
	m.cache = cache{}
	m.mem = newMemtable()
	if e := m.dir.Close(); err == nil && e != nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("diskmap: %w", err)
	}
	return nil
}

// readBlock reads block i of r through the cache.
func (m *Map) readBlock(r *run, i int) ([]byte, error) {
	key := r.id<<32 | uint64(i)
	if b := m.cache.get(key); b != nil {
		return b, nil
	}
	b := m.cache.spare
	m.cache.spare = nil
	b, err := m.readBlockInto(r, i, &b)
	if err != nil {
		return nil, err
	}
	m.cache.add(key, b)
	return b, nil
}

// readBlockInto reads block i of r into *buf, grown when it is short.
func (m *Map) readBlockInto(r *run, i int, buf *[]byte) ([]byte, error) {
	n := int(r.offs[i+1] - r.offs[i])
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	if _, err := r.f.ReadAt(b, r.offs[i]); err != nil {
		return nil, fmt.Errorf("diskmap: reading %s: %w", r.path, err)
	}
	return b, nil
}

var _ = os.Remove
