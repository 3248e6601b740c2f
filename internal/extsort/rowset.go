package extsort

// RowSet is a set of rows (as Enc.Row writes them) kept in an external
// sort, read back in ascending order through a RowCursor, as often as
// needed. A nil RowSet is empty.
type RowSet struct {
	s *Sorter
	e Enc
}

// NewRowSet returns an empty RowSet that keeps about budget bytes in
// memory and its runs in dir.
func NewRowSet(dir string, budget int) *RowSet {
	s := New(dir, budget, CompareRow)
	s.Prefix = PrefixRow
	return &RowSet{s: s}
}

// Add adds row (again: a row added twice is in the set once).
func (r *RowSet) Add(row int64) error {
	r.e.Reset()
	r.e.Row(row)
	return r.s.Add(r.e.B)
}

// Close removes the set's files.
func (r *RowSet) Close() {
	if r != nil {
		r.s.Close()
	}
}

// Cursor returns a reader of the set for rows asked in ascending order;
// nil (which has no row) when the set is empty.
func (r *RowSet) Cursor() (*RowCursor, error) {
	if r == nil || r.s.Records == 0 {
		return nil, nil
	}
	it, err := r.s.Sort()
	if err != nil {
		return nil, err
	}
	c := &RowCursor{it: it}
	c.cur, c.more = it.Next()
	return c, nil
}

// RowCursor reads a RowSet in ascending order.
type RowCursor struct {
	it   *Iter
	cur  []byte
	more bool
}

// Has reports whether row is in the set; each call must ask a row no
// smaller than the last one's.
func (c *RowCursor) Has(row int64) bool {
	if c == nil {
		return false
	}
	for c.more && RowOf(c.cur) < row {
		c.cur, c.more = c.it.Next()
	}
	return c.more && RowOf(c.cur) == row
}

// Close ends the reading, and returns the error that ended it early, if
// any.
func (c *RowCursor) Close() error {
	if c == nil {
		return nil
	}
	err := c.it.Err()
	c.it.Close()
	return err
}

// RowAfterKey is the row of a record that begins with a key as Enc.S
// writes it and then a row as Enc.Row writes it (CompareKeyRow's records).
func RowAfterKey(rec []byte) int64 {
	d := Dec{B: rec}
	d.Bytes()
	return d.Row()
}
