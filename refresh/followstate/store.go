// Package followstate is what migrate --follow knows between two rounds of
// the stream, kept in an ordered key-value store (Store) rather than in Go
// maps: A's forest as its node items claim it (Mirror) and B's nodes as the
// follower wrote them (Applied). A store that spills to disk keeps the
// follow within --memory whatever A's size; one that does not is the
// in-memory follow, by the same code.
//
// The keys, one store for all (every string that is followed by more of a
// key is length-prefixed, so that a prefix names exactly one id):
//
//	"k" key            → claim (id, parent, digest, attrs, record, bad)
//	"i" len id key     → ""         A's node items of id (byID)
//	"c" len parent child → count    links from child to parent (kids)
//	"g" id             → record     the removal of a node still named as a parent
//	"a" id             → node       B's node (parent, digest, inner, attrs, pin)
package followstate

import (
	"encoding/binary"
	"errors"
)

// Store is an ordered key-value store: internal/diskmap's Map, or any
// map with its methods. Values returned are copies; Ascend visits the
// keys with prefix in byte order, and fn must not change the store.
type Store interface {
	Get(key []byte) (value []byte, ok bool, err error)
	Put(key, value []byte) error
	Delete(key []byte) error
	Ascend(prefix []byte, fn func(key, value []byte) error) error
	Len() int64
	Close() error
}

// errStop ends an Ascend early.
var errStop = errors.New("followstate: stop")

// state is the store and the first error it gave: the state's methods
// answer as if the store were empty after one, and Err tells the follower,
// which checks it before it writes anything the state decided.
type state struct {
	s   Store
	err error
}

func (st *state) fail(err error) {
	if err != nil && st.err == nil {
		st.err = err
	}
}

func (st *state) get(key []byte) ([]byte, bool) {
	if st.err != nil {
		return nil, false
	}
	v, ok, err := st.s.Get(key)
	st.fail(err)
	return v, ok && err == nil
}

func (st *state) put(key, value []byte) {
	if st.err == nil {
		st.fail(st.s.Put(key, value))
	}
}

func (st *state) del(key []byte) {
	if st.err == nil {
		st.fail(st.s.Delete(key))
	}
}

func (st *state) ascend(prefix []byte, fn func(key, value []byte) error) {
	if st.err != nil {
		return
	}
	if err := st.s.Ascend(prefix, fn); err != nil && !errors.Is(err, errStop) {
		st.fail(err)
	}
}

// any says whether a key has prefix.
func (st *state) any(prefix []byte) bool {
	found := false
	st.ascend(prefix, func(_, _ []byte) error {
		found = true
		return errStop
	})
	return found
}

// A value is a sequence of fields: strings and byte strings
// length-prefixed, numbers as uvarints.
type enc []byte

func (e enc) str(s string) enc   { return append(binary.AppendUvarint(e, uint64(len(s))), s...) }
func (e enc) bytes(b []byte) enc { return append(binary.AppendUvarint(e, uint64(len(b))), b...) }
func (e enc) num(n uint64) enc   { return binary.AppendUvarint(e, n) }
func (e enc) u64(n uint64) enc   { return binary.LittleEndian.AppendUint64(e, n) }

func (e enc) flag(ok bool) enc {
	if ok {
		return append(e, 1)
	}
	return append(e, 0)
}

func (e enc) strs(ss []string) enc {
	e = e.num(uint64(len(ss)))
	for _, s := range ss {
		e = e.str(s)
	}
	return e
}

// dec reads what enc wrote; a value that is not one sets err.
type dec struct {
	b   []byte
	err error
}

var errCorrupt = errors.New("followstate: a value of the store does not read")

func (d *dec) num() uint64 {
	n, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.err, d.b = errCorrupt, nil
		return 0
	}
	d.b = d.b[k:]
	return n
}

func (d *dec) bytes() []byte {
	n := d.num()
	if uint64(len(d.b)) < n {
		d.err, d.b = errCorrupt, nil
		return nil
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out
}

func (d *dec) str() string { return string(d.bytes()) }

func (d *dec) u64() uint64 {
	if len(d.b) < 8 {
		d.err, d.b = errCorrupt, nil
		return 0
	}
	n := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return n
}

func (d *dec) flag() bool {
	if len(d.b) < 1 {
		d.err = errCorrupt
		return false
	}
	ok := d.b[0] == 1
	d.b = d.b[1:]
	return ok
}

func (d *dec) strs() []string {
	n := d.num()
	if n > uint64(len(d.b)) {
		d.err, d.b = errCorrupt, nil
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}
