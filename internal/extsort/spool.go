package extsort

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// Spool is a file of records written in one sequential pass and read back
// in the same order: what a pass that keeps its order (a merge join's
// leftovers) writes for the next. Close removes it.
type Spool struct {
	f       *os.File
	w       *bufio.Writer
	r       *recReader
	Records int64
	Bytes   int64
	err     error
	longest int // the longest record added
}

// NewSpool creates a spool file in dir.
func NewSpool(dir string) (*Spool, error) {
	f, err := os.CreateTemp(dir, "spool-*")
	if err != nil {
		return nil, fmt.Errorf("extsort: %w", err)
	}
	return &Spool{f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

// Add appends rec.
func (s *Spool) Add(rec []byte) error {
	var hdr [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(hdr[:], uint64(len(rec)))
	s.w.Write(hdr[:k])
	if _, err := s.w.Write(rec); err != nil {
		return fmt.Errorf("extsort: writing %s: %w", s.f.Name(), err)
	}
	s.Records++
	s.Bytes += int64(k + len(rec))
	s.longest = max(s.longest, len(rec))
	return nil
}

// Rewind ends the writing; Next then reads the records from the first.
func (s *Spool) Rewind() error {
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("extsort: writing %s: %w", s.f.Name(), err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if s.r == nil {
		s.r = newRecReader(s.f, 256<<10, s.longest)
	}
	s.r.reset()
	s.r.longest = s.longest
	return nil
}

// Next returns the next record, valid until the following call, and false
// at the end or on an error (Err).
func (s *Spool) Next() ([]byte, bool) {
	if s.err != nil {
		return nil, false
	}
	rec, err := s.r.next()
	if err == io.EOF {
		return nil, false
	}
	if err != nil {
		s.err = fmt.Errorf("extsort: reading %s: %w", s.f.Name(), err)
		return nil, false
	}
	return rec, true
}

// Err is the error that ended Next, if any.
func (s *Spool) Err() error { return s.err }

// Close closes and removes the file.
func (s *Spool) Close() error {
	if s.f == nil {
		return nil
	}
	name := s.f.Name()
	s.f.Close()
	s.f = nil
	if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
