// Package thriftscan walks values of the Thrift compact protocol (the
// encoding of Parquet's footer and page headers) without decoding them, so
// that the Parquet reader can check what a file declares before parquet-go
// trusts it.
package thriftscan

import (
	"errors"
	"fmt"
	"math"
)

// Struct walks the struct at the start of b and returns how many bytes it
// takes. full says that b holds all the bytes there are, so that running
// out is an error; otherwise running out is ErrShort, and the caller may
// read more and call again.
func Struct(b []byte, full bool) (n int, err error) {
	s := thriftScan{b: b, full: full}
	err = s.structure(0)
	return s.off, err
}

// ErrShort is Struct's answer when the bytes it was given end
// before the value and more could be read.
var ErrShort = errors.New("thrift value cut short")

// thriftScan walks one value of the Thrift compact protocol (the encoding
// of Parquet's footer and page headers) without decoding it, checking that
// every length and count it declares fits in the bytes that are there and
// that it nests at most maxDepth deep, so that parquet-go's decoder, run
// on it next, allocates no more than the bytes hold.
type thriftScan struct {
	b    []byte
	off  int
	full bool // b holds all the bytes there are: running out is an error
}

const maxDepth = 64

func (s *thriftScan) need(n uint64, what string, args ...any) error {
	left := uint64(len(s.b) - s.off)
	if n <= left {
		return nil
	}
	if !s.full {
		return ErrShort
	}
	if what == "" {
		return errors.New("it is cut short")
	}
	return fmt.Errorf("it declares "+what+", and %d bytes are left", append(args, left)...)
}

func (s *thriftScan) byte() (byte, error) {
	if err := s.need(1, ""); err != nil {
		return 0, err
	}
	s.off++
	return s.b[s.off-1], nil
}

func (s *thriftScan) uvarint() (uint64, error) {
	var v uint64
	for shift := 0; shift < 70; shift += 7 {
		c, err := s.byte()
		if err != nil {
			return 0, err
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, nil
		}
	}
	return 0, errors.New("a varint is longer than 10 bytes")
}

func (s *thriftScan) skip(n uint64) error {
	if err := s.need(n, ""); err != nil {
		return err
	}
	s.off += int(n)
	return nil
}

// size reads a length or count, which the compact protocol bounds by 2^31-1
// (and parquet-go with it).
func (s *thriftScan) size() (uint64, error) {
	n, err := s.uvarint()
	if err == nil && n > math.MaxInt32 {
		err = fmt.Errorf("a length or count of %d", n)
	}
	return n, err
}

// structure walks a struct: fields up to a stop byte.
func (s *thriftScan) structure(depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("it nests more than %d levels deep", maxDepth)
	}
	for {
		b, err := s.byte()
		if err != nil || b == 0 {
			return err
		}
		if b>>4 == 0 { // a field id of its own, not a delta
			if _, err := s.uvarint(); err != nil {
				return err
			}
		}
		if err := s.value(b&0x0f, false, depth); err != nil {
			return err
		}
	}
}

// value walks a value of type t, a field's (elem false) or a list's, set's
// or map's element (elem true: a boolean then takes a byte).
func (s *thriftScan) value(t byte, elem bool, depth int) error {
	switch t {
	case 1, 2: // true, false
		if elem {
			return s.skip(1)
		}
		return nil
	case 3: // i8
		return s.skip(1)
	case 4, 5, 6: // i16, i32, i64
		_, err := s.uvarint()
		return err
	case 7: // double
		return s.skip(8)
	case 8: // binary, string
		n, err := s.size()
		if err != nil {
			return err
		}
		if err := s.need(n, "a string of %d bytes", n); err != nil {
			return err
		}
		s.off += int(n)
		return nil
	case 9, 10: // list, set
		h, err := s.byte()
		if err != nil {
			return err
		}
		n, et := uint64(h>>4), h&0x0f
		if n == 15 {
			if n, err = s.size(); err != nil {
				return err
			}
		}
		return s.elements(n, depth, et)
	case 11: // map
		n, err := s.size()
		if err != nil || n == 0 {
			return err
		}
		kv, err := s.byte()
		if err != nil {
			return err
		}
		return s.elements(n, depth, kv>>4, kv&0x0f)
	case 12: // struct
		return s.structure(depth + 1)
	case 13: // uuid
		return s.skip(16)
	}
	return fmt.Errorf("a value of unknown type %d", t)
}

// elements walks n elements of a container, each a value of every type of
// types in turn (a map's key and value). Each takes a byte at least.
func (s *thriftScan) elements(n uint64, depth int, types ...byte) error {
	if n == 0 {
		return nil
	}
	if depth+1 > maxDepth {
		return fmt.Errorf("it nests more than %d levels deep", maxDepth)
	}
	if err := s.need(n*uint64(len(types)), "%d elements", n); err != nil {
		return err
	}
	for range n {
		for _, t := range types {
			if err := s.value(t, true, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}
