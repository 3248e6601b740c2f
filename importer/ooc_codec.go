package importer

import (
	"bytes"
	"encoding/binary"
	"unsafe"
)

// enc appends the fields of an out-of-core record: unsigned varints and
// length-prefixed strings, read back by dec in the same order.
type enc struct{ b []byte }

func (e *enc) reset()       { e.b = e.b[:0] }
func (e *enc) u(v uint64)   { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) i(v int)      { e.u(uint64(v)) }
func (e *enc) s(v string)   { e.u(uint64(len(v))); e.b = append(e.b, v...) }
func (e *enc) row(v int64)  { e.b = binary.BigEndian.AppendUint64(e.b, uint64(v)) }
func (e *enc) flag(v uint8) { e.b = append(e.b, v) }
func (e *enc) strs(v []string) {
	e.i(len(v))
	for _, s := range v {
		e.s(s)
	}
}

// dec reads what enc wrote. Its strings are copies, or, when share is
// set, the record's own memory (valid as long as the record is).
type dec struct {
	b     []byte
	share bool
}

func (d *dec) u() uint64 {
	v, n := binary.Uvarint(d.b)
	d.b = d.b[n:]
	return v
}
func (d *dec) i() int { return int(d.u()) }
func (d *dec) s() string {
	n := d.u()
	v := d.b[:n]
	d.b = d.b[n:]
	if d.share {
		return unsafe.String(unsafe.SliceData(v), len(v))
	}
	return string(v)
}

// rowOf is the row number a record sorted by row starts with.
func rowOf(rec []byte) int64 { return int64(binary.BigEndian.Uint64(rec)) }
func (d *dec) bytes() []byte {
	n := d.u()
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}
func (d *dec) row() int64 {
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return int64(v)
}
func (d *dec) flag() uint8 {
	v := d.b[0]
	d.b = d.b[1:]
	return v
}
func (d *dec) strs(dst []string) []string {
	n := d.i()
	for range n {
		dst = append(dst, d.s())
	}
	return dst
}

// cmpKeyRow orders records that begin with a length-prefixed key and a
// row number: by key, then by row.
func cmpKeyRow(a, b []byte) int {
	da, db := dec{b: a}, dec{b: b}
	if c := bytes.Compare(da.bytes(), db.bytes()); c != 0 {
		return c
	}
	return bytes.Compare(da.b[:8], db.b[:8])
}

// cmpRow orders records that begin with a row number.
func cmpRow(a, b []byte) int { return bytes.Compare(a[:8], b[:8]) }

// prefixKeyRow is the extsort prefix of cmpKeyRow: the key's first 8
// bytes, big-endian, padded with zeros.
func prefixKeyRow(rec []byte) uint64 {
	d := dec{b: rec}
	k := d.bytes()
	if len(k) >= 8 {
		return binary.BigEndian.Uint64(k)
	}
	var b [8]byte
	copy(b[:], k)
	return binary.BigEndian.Uint64(b[:])
}

// prefixRow is the extsort prefix of cmpRow: the row.
func prefixRow(rec []byte) uint64 { return binary.BigEndian.Uint64(rec) }
