package extsort

import (
	"encoding/binary"
	"fmt"
	"io"
)

// recReader reads records behind their lengths (as spill and Spool.Add
// write them) from a file, through a buffer: a record that fits in it is
// returned as the buffer's memory, valid until the next read, with no
// copy.
type recReader struct {
	f    io.Reader
	buf  []byte
	r, w int   // the unread bytes are buf[r:w]
	err  error // what ended the file's reading (io.EOF at its end)
	big  []byte
	// longest is the longest record written to the file: a length past
	// it is a file changed under the reader (or a disk's fault), refused
	// before any memory is taken for it.
	longest int
}

func newRecReader(f io.Reader, size, longest int) *recReader {
	return &recReader{f: f, buf: make([]byte, max(size, 2*binary.MaxVarintLen64)), longest: longest}
}

// reset makes the reader read f again from where it is now.
func (b *recReader) reset() { b.r, b.w, b.err = 0, 0, nil }

// fill moves the unread bytes to the buffer's start and reads until at
// least want bytes are there, or the file ends or fails.
func (b *recReader) fill(want int) {
	if b.r > 0 {
		b.w = copy(b.buf, b.buf[b.r:b.w])
		b.r = 0
	}
	for b.w < want && b.err == nil {
		n, err := b.f.Read(b.buf[b.w:])
		b.w += n
		if err != nil {
			b.err = err
		}
	}
}

// cut is the error of a record cut short.
func (b *recReader) cut() error {
	if b.err == nil || b.err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return b.err
}

// next returns the next record, and io.EOF after the last. A record
// larger than the buffer is read into memory of its own.
func (b *recReader) next() ([]byte, error) {
	if b.w-b.r < binary.MaxVarintLen64 {
		b.fill(binary.MaxVarintLen64)
		if b.r == b.w {
			return nil, b.err
		}
	}
	n, k := uint64(b.buf[b.r]), 1
	if n >= 0x80 {
		if n, k = binary.Uvarint(b.buf[b.r:b.w]); k == 0 {
			return nil, b.cut()
		}
	}
	if k < 0 || n > uint64(b.longest) {
		return nil, fmt.Errorf("a record's length (%d bytes) is past the longest written there (%d): the file was changed while treeport used it", n, b.longest)
	}
	end := k + int(n)
	if end > b.w-b.r && end <= len(b.buf) {
		b.fill(end)
		if end > b.w-b.r {
			return nil, b.cut()
		}
	}
	if end <= b.w-b.r {
		rec := b.buf[b.r+k : b.r+end]
		b.r += end
		return rec, nil
	}
	if uint64(cap(b.big)) < n {
		b.big = make([]byte, n)
	}
	b.big = b.big[:n]
	m := copy(b.big, b.buf[b.r+k:b.w])
	b.r = b.w
	if _, err := io.ReadFull(b.f, b.big[m:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b.big, nil
}
