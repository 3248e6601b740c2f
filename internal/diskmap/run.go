package diskmap

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"sort"
)

// A run is an immutable sorted file of records, in blocks:
//
//	record:  uvarint(len(key)) uvarint(len(value)+1, or 0 for a tombstone) key value
//	block:   record... restart(uint32 LE)... count(uint32 LE)
//
// where a restart is the offset in the block of every restartEvery-th
// record, for a binary search in the block. The run's index (each block's
// first key and offset) and its Bloom filter are in memory only: a run is
// never read by another process, nor after Close.

const restartEvery = 16

type run struct {
	id    uint64
	f     *os.File
	path  string
	size  int64 // bytes in the file
	n     int64 // records, tombstones too
	dels  int64 // tombstones
	block int   // the target block size it was written with

	// The index: block i starts at offs[i] and ends at offs[i+1], and its
	// first key is keys[ends[i-1]:ends[i]] (ends[-1] being 0).
	keys []byte
	ends []uint32
	offs []int64

	bloom  []uint64 // nil: no filter
	bloomK int
}

// indexBytes is what the run's index and filter hold in memory.
func (r *run) indexBytes() int64 {
	return int64(cap(r.keys) + 4*cap(r.ends) + 8*cap(r.offs) + 8*len(r.bloom))
}

func (r *run) blocks() int { return len(r.offs) - 1 }

func (r *run) firstKey(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = r.ends[i-1]
	}
	return r.keys[start:r.ends[i]]
}

// findBlock is the last block whose first key is at most key; -1 when
// key is before the first.
func (r *run) findBlock(key []byte) int {
	return sort.Search(r.blocks(), func(i int) bool { return bytes.Compare(r.firstKey(i), key) > 0 }) - 1
}

// bloom probes: double hashing of one 64-bit hash.
func (r *run) mayHave(h uint64) bool {
	if r.bloom == nil {
		return true
	}
	m := uint64(len(r.bloom)) * 64
	delta := h>>33 | 1
	for range r.bloomK {
		b := h % m
		if r.bloom[b>>6]&(1<<(b&63)) == 0 {
			return false
		}
		h += delta
	}
	return true
}

func (r *run) bloomAdd(h uint64) {
	m := uint64(len(r.bloom)) * 64
	delta := h>>33 | 1
	for range r.bloomK {
		b := h % m
		r.bloom[b>>6] |= 1 << (b & 63)
		h += delta
	}
}

func (r *run) close() error {
	err := r.f.Close()
	if e := os.Remove(r.path); err == nil && e != nil && !os.IsNotExist(e) {
		err = e
	}
	return err
}

// runWriter writes a run, record by record in key order.
type runWriter struct {
	r        *run
	seed     maphash.Seed
	buf      []byte
	restarts []uint32
	recs     int // records in buf
	err      error
}

// newRunWriter starts a run in dir of about n records, with blocks of
// about blockSize and a Bloom filter of bloomBits bits (0: none).
func newRunWriter(dir string, id uint64, n int64, blockSize int, bloomBits int64, seed maphash.Seed, buf []byte) (*runWriter, error) {
	path := filepath.Join(dir, fmt.Sprintf("run-%d", id))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("diskmap: %w (its runs are written there: give a directory it can write)", err)
	}
	r := &run{id: id, f: f, path: path, block: blockSize, offs: []int64{}}
	if bloomBits > 0 && n > 0 {
		words := (bloomBits + 63) / 64
		r.bloom = make([]uint64, words)
		// k = ln 2 · bits per key, at least 1 and at most 8.
		r.bloomK = min(max(int(float64(words*64)/float64(n)*0.69), 1), 8)
	}
	return &runWriter{r: r, seed: seed, buf: buf[:0]}, nil
}

func (w *runWriter) add(key, val []byte, del bool) {
	if w.err != nil {
		return
	}
	rec := binary.MaxVarintLen32*2 + len(key) + len(val)
	if w.recs > 0 && len(w.buf)+rec+4*len(w.restarts)+8 > w.r.block {
		w.endBlock()
	}
	if w.recs == 0 {
		w.r.offs = append(w.r.offs, w.r.size)
		w.r.keys = append(w.r.keys, key...)
		w.r.ends = append(w.r.ends, uint32(len(w.r.keys)))
	}
	if w.recs%restartEvery == 0 {
		w.restarts = append(w.restarts, uint32(len(w.buf)))
	}
	w.buf = binary.AppendUvarint(w.buf, uint64(len(key)))
	if del {
		w.buf = append(w.buf, 0)
		w.r.dels++
	} else {
		w.buf = binary.AppendUvarint(w.buf, uint64(len(val))+1)
	}
	w.buf = append(w.buf, key...)
	w.buf = append(w.buf, val...)
	w.recs++
	w.r.n++
	if w.r.bloom != nil {
		w.r.bloomAdd(maphash.Bytes(w.seed, key))
	}
}

func (w *runWriter) endBlock() {
	for _, o := range w.restarts {
		w.buf = binary.LittleEndian.AppendUint32(w.buf, o)
	}
	w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(len(w.restarts)))
	if _, err := w.r.f.Write(w.buf); err != nil {
		w.err = fmt.Errorf("diskmap: writing a run: %w (is its directory's disk full?)", err)
	}
	w.r.size += int64(len(w.buf))
	w.buf, w.restarts, w.recs = w.buf[:0], w.restarts[:0], 0
}

// finish ends the run: nil, and its file removed, when it has no
// records. buf is the writer's buffer, for the next writer.
func (w *runWriter) finish() (r *run, buf []byte, err error) {
	if w.recs > 0 {
		w.endBlock()
	}
	r = w.r
	r.offs = append(r.offs, r.size)
	if w.err != nil || r.n == 0 {
		if e := r.close(); w.err == nil && e != nil {
			w.err = fmt.Errorf("diskmap: %w", e)
		}
		return nil, w.buf, w.err
	}
	r.keys = bytes.Clone(r.keys) // without append's spare room
	return r, w.buf, nil
}

// abort removes a run being written.
func (w *runWriter) abort() { w.r.close() }

// block is a block's records and its restarts.
type block struct {
	recs     []byte
	restarts []byte // uint32 LE each
}

func parseBlock(b []byte) (block, error) {
	if len(b) < 4 {
		return block{}, errCorrupt
	}
	n := int(binary.LittleEndian.Uint32(b[len(b)-4:]))
	end := len(b) - 4 - 4*n
	if n < 1 || end < 0 {
		return block{}, errCorrupt
	}
	return block{recs: b[:end], restarts: b[end : len(b)-4]}, nil
}

// record reads the record at b.recs[at:]: its key and value, whether it
// is a tombstone, and where the next begins.
func (b block) record(at int) (key, val []byte, del bool, next int, err error) {
	p := b.recs[at:]
	kl, n1 := binary.Uvarint(p)
	if n1 <= 0 {
		return nil, nil, false, 0, errCorrupt
	}
	vl, n2 := binary.Uvarint(p[n1:])
	if n2 <= 0 {
		return nil, nil, false, 0, errCorrupt
	}
	h := n1 + n2
	if vl == 0 {
		del = true
	} else {
		vl--
	}
	if uint64(len(p)-h) < kl+vl {
		return nil, nil, false, 0, errCorrupt
	}
	key = p[h : h+int(kl)]
	val = p[h+int(kl) : h+int(kl)+int(vl)]
	return key, val, del, at + h + int(kl) + int(vl), nil
}

func (b block) restart(i int) int { return int(binary.LittleEndian.Uint32(b.restarts[4*i:])) }

// seek returns the offset of the first record whose key is at least key
// (len(b.recs) when none).
func (b block) seek(key []byte) (int, error) {
	nr := len(b.restarts) / 4
	var ferr error
	// The last restart whose key is below key: the scan starts there.
	i := sort.Search(nr, func(i int) bool {
		k, _, _, _, err := b.record(b.restart(i))
		if err != nil {
			ferr = err
			return true
		}
		return bytes.Compare(k, key) >= 0
	})
	if ferr != nil {
		return 0, ferr
	}
	at := 0
	if i > 0 {
		at = b.restart(i - 1)
	}
	for at < len(b.recs) {
		k, _, _, next, err := b.record(at)
		if err != nil {
			return 0, err
		}
		if bytes.Compare(k, key) >= 0 {
			return at, nil
		}
		at = next
	}
	return at, nil
}
