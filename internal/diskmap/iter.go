package diskmap

import (
	"bytes"
	"fmt"
)

// iter is a source of a merge: the memtable or a run, in key order.
type iter interface {
	seek(prefix []byte) error
	next() error
	valid() bool
	cur() (key, val []byte, del bool)
}

// runIter walks a run in order, in its own buffer. It reads its first
// block through the map's cache (a small prefix's scan is often one
// block, read again), and the blocks after it directly.
type runIter struct {
	m      *Map
	r      *run
	blk    int
	b      block
	at     int // the current record; len(b.recs) at the end of the block
	nextAt int
	key    []byte
	val    []byte
	del    bool
	ok     bool
	buf    []byte
	cached bool // read blocks through the cache
}

func (it *runIter) load(i int) error {
	it.blk = i
	var raw []byte
	var err error
	if it.cached {
		// A copy: the cache may give the block's memory to another read
		// while this walk is on it.
		if raw, err = it.m.readBlock(it.r, i); err == nil {
			it.buf = append(it.buf[:0], raw...)
			raw = it.buf
		}
	} else {
		raw, err = it.m.readBlockInto(it.r, i, &it.buf)
	}
	if err != nil {
		return err
	}
	if it.b, err = parseBlock(raw); err != nil {
		return it.m.corrupt(it.r, i)
	}
	return nil
}

func (it *runIter) seek(prefix []byte) error {
	it.ok = false
	i := it.r.findBlock(prefix)
	if i < 0 {
		i = 0
	}
	it.cached = true
	if err := it.load(i); err != nil {
		return err
	}
	it.cached = false
	at, err := it.b.seek(prefix)
	if err != nil {
		return it.m.corrupt(it.r, i)
	}
	it.at = at
	return it.read()
}

// read reads the record at it.at, moving to the next block at the end of
// this one.
func (it *runIter) read() error {
	for it.at >= len(it.b.recs) {
		if it.blk+1 >= it.r.blocks() {
			it.ok = false
			return nil
		}
		if err := it.load(it.blk + 1); err != nil {
			return err
		}
		it.at = 0
	}
	var err error
	if it.key, it.val, it.del, it.nextAt, err = it.b.record(it.at); err != nil {
		return it.m.corrupt(it.r, it.blk)
	}
	it.ok = true
	return nil
}

func (it *runIter) next() error {
	it.at = it.nextAt
	return it.read()
}
func (it *runIter) valid() bool                      { return it.ok }
func (it *runIter) cur() (key, val []byte, del bool) { return it.key, it.val, it.del }

// merge walks several sources as one, newest first in srcs: each key
// once, with the newest source's value.
type merge struct {
	srcs   []iter
	prefix []byte
}

// each calls fn for every key of the sources with the prefix, in order,
// tombstones too.
func (mg *merge) each(fn func(key, val []byte, del bool) error) error {
	for _, s := range mg.srcs {
		if err := s.seek(mg.prefix); err != nil {
			return err
		}
	}
	live := make([]iter, 0, len(mg.srcs))
	for {
		live = live[:0]
		for _, s := range mg.srcs {
			if s.valid() {
				if k, _, _ := s.cur(); bytes.HasPrefix(k, mg.prefix) {
					live = append(live, s)
				}
			}
		}
		if len(live) == 0 {
			return nil
		}
		win := live[0]
		wk, _, _ := win.cur()
		for _, s := range live[1:] {
			if k, _, _ := s.cur(); bytes.Compare(k, wk) < 0 {
				win, wk = s, k
			}
		}
		k, v, del := win.cur()
		if err := fn(k, v, del); err != nil {
			return err
		}
		// fn is done with k: the sources may move on.
		for _, s := range live {
			if s == win {
				continue
			}
			if sk, _, _ := s.cur(); bytes.Equal(sk, wk) {
				if err := s.next(); err != nil {
					return err
				}
			}
		}
		if err := win.next(); err != nil {
			return err
		}
	}
}

func (m *Map) corrupt(r *run, i int) error {
	return fmt.Errorf("%w: block %d of %s does not read back as written", errCorrupt, i, r.path)
}
