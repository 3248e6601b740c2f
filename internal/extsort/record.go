package extsort

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"unsafe"
)

// Enc appends the fields of a record: unsigned varints, length-prefixed
// strings and big-endian row numbers, read back by Dec in the same order.
// A record that begins with a key and a row (S, then Row) sorts with
// CompareKeyRow.
type Enc struct{ B []byte }

func (e *Enc) Reset() { e.B = e.B[:0] }
func (e *Enc) U(v uint64) {
	// binary.AppendUvarint's bytes, appended in place: e.B is not stored
	// again (no write barrier while the collector runs) unless it grows.
	for v >= 0x80 {
		e.B = append(e.B, byte(v)|0x80)
		v >>= 7
	}
	e.B = append(e.B, byte(v))
}
func (e *Enc) I(v int)      { e.U(uint64(v)) }
func (e *Enc) S(v string)   { e.U(uint64(len(v))); e.B = append(e.B, v...) }
func (e *Enc) Row(v int64)  { e.B = binary.BigEndian.AppendUint64(e.B, uint64(v)) }
func (e *Enc) Flag(v uint8) { e.B = append(e.B, v) }

// Bs appends a length-prefixed byte string, as S does a string; Dec.Bytes
// reads it back.
func (e *Enc) Bs(v []byte) { e.U(uint64(len(v))); e.B = append(e.B, v...) }
func (e *Enc) Strs(v []string) {
	e.I(len(v))
	for _, s := range v {
		e.S(s)
	}
}

// Dec reads what Enc wrote. Its strings are copies, or, when Share is
// set, the record's own memory (valid as long as the record is).
type Dec struct {
	B     []byte
	Share bool
}

func (d *Dec) U() uint64 {
	if b := d.B; len(b) > 0 && b[0] < 0x80 { // most fields
		d.B = b[1:]
		return uint64(b[0])
	}
	return d.uLong()
}

func (d *Dec) uLong() uint64 {
	v, n := binary.Uvarint(d.B)
	d.B = d.B[n:]
	return v
}
func (d *Dec) I() int { return int(d.U()) }
func (d *Dec) S() string {
	n := d.U()
	v := d.B[:n]
	d.B = d.B[n:]
	if d.Share {
		return unsafe.String(unsafe.SliceData(v), len(v))
	}
	return string(v)
}

// RowOf is the row number a record sorted by row starts with.
func RowOf(rec []byte) int64 { return int64(binary.BigEndian.Uint64(rec)) }
func (d *Dec) Bytes() []byte {
	n := d.U()
	v := d.B[:n]
	d.B = d.B[n:]
	return v
}
func (d *Dec) Row() int64 {
	v := binary.BigEndian.Uint64(d.B)
	d.B = d.B[8:]
	return int64(v)
}
func (d *Dec) Flag() uint8 {
	v := d.B[0]
	d.B = d.B[1:]
	return v
}
func (d *Dec) Strs(dst []string) []string {
	n := d.I()
	for range n {
		dst = append(dst, d.S())
	}
	return dst
}

// CompareKeyRow orders records that begin with a length-prefixed key and a
// row number: by key, then by row.
func CompareKeyRow(a, b []byte) int {
	ka, ea := firstField(a)
	kb, eb := firstField(b)
	if c := bytes.Compare(ka, kb); c != 0 {
		return c
	}
	return cmp.Compare(binary.BigEndian.Uint64(a[ea:]), binary.BigEndian.Uint64(b[eb:]))
}

// FirstKey is the first length-prefixed field of a record (as S or Bs
// wrote it): the key of CompareKeyRow's and CompareFirst's records.
func FirstKey(rec []byte) []byte {
	k, _ := firstField(rec)
	return k
}

// firstField is a record's first length-prefixed field, and where it
// ends.
func firstField(rec []byte) ([]byte, int) {
	n, k := uint64(rec[0]), 1
	if n >= 0x80 {
		n, k = binary.Uvarint(rec)
	}
	end := k + int(n)
	return rec[k:end], end
}

// CompareFirst orders records by their first length-prefixed field (S
// or Bs), byte for byte; PrefixKeyRow is its Sorter.Prefix.
func CompareFirst(a, b []byte) int {
	ka, _ := firstField(a)
	kb, _ := firstField(b)
	return bytes.Compare(ka, kb)
}

// CompareRow orders records that begin with a row number.
func CompareRow(a, b []byte) int {
	return cmp.Compare(binary.BigEndian.Uint64(a), binary.BigEndian.Uint64(b))
}

// PrefixKeyRow is the Sorter.Prefix of CompareKeyRow: the key's first 8
// bytes, big-endian, padded with zeros.
func PrefixKeyRow(rec []byte) uint64 {
	k, _ := firstField(rec)
	if len(k) >= 8 {
		return binary.BigEndian.Uint64(k)
	}
	var b [8]byte
	copy(b[:], k)
	return binary.BigEndian.Uint64(b[:])
}

// PrefixRow is the Sorter.Prefix of CompareRow: the row.
func PrefixRow(rec []byte) uint64 { return binary.BigEndian.Uint64(rec) }
