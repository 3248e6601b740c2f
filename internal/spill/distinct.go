package spill

import (
	"bytes"

	"github.com/treeport/treeport/internal/extsort"
)

// Distinct counts the distinct strings added to it in a memory budget:
// past it they are sorted in runs on disk in a directory (extsort), so a
// count that grows with a table stays in the budget. It is not safe for
// concurrent use; Close removes its files.
type Distinct struct {
	s *extsort.Sorter
}

// NewDistinct counts in about budget bytes, spilling to dir (which must
// exist when the budget is passed).
func NewDistinct(dir string, budget int) *Distinct {
	return &Distinct{s: extsort.New(dir, budget, bytes.Compare)}
}

// Add adds s.
func (d *Distinct) Add(s string) error { return d.s.Add([]byte(s)) }

// Count ends the adding and returns how many distinct strings came.
func (d *Distinct) Count() (int64, error) {
	it, err := d.s.Sort()
	if err != nil {
		return 0, err
	}
	defer it.Close()
	var n int64
	var last []byte
	for {
		rec, ok := it.Next()
		if !ok {
			break
		}
		if n == 0 || !bytes.Equal(rec, last) {
			n++
			last = append(last[:0], rec...)
		}
	}
	return n, it.Err()
}

// Close removes the files.
func (d *Distinct) Close() { d.s.Close() }
