package exporter

import (
	"bytes"
	"errors"
	"strings"

	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

// ImpliedNodes finds, in a fixed memory, the inner nodes a table with path
// ids implies (layouts.Implied, which a Scan in memory uses): every
// prefix of a node's parent that is no node's id. The ids and the
// prefixes of the parents go to two external sorts; a merge join of the
// two gives each prefix that is not an id once. A nil *ImpliedNodes does
// nothing (a layout without path ids). SpillNodes and the out-of-core
// plan use it; it is not safe for concurrent use.
type ImpliedNodes struct {
	delim         string
	ids, prefixes *extsort.Sorter
}

// NewImpliedNodes keeps its two sorts in dir, budget bytes each; delim
// joins the names of the path ids.
func NewImpliedNodes(dir string, budget int, delim string) *ImpliedNodes {
	return &ImpliedNodes{delim: delim, ids: extsort.New(dir, budget, bytes.Compare), prefixes: extsort.New(dir, budget, bytes.Compare)}
}

// Close removes the sorts' files.
func (m *ImpliedNodes) Close() {
	if m == nil {
		return
	}
	m.ids.Close()
	m.prefixes.Close()
}

// Add takes a node's id and parent.
func (m *ImpliedNodes) Add(id, parent string) error {
	if m == nil {
		return nil
	}
	if err := m.ids.Add([]byte(id)); err != nil {
		return err
	}
	for p := parent; p != "" && m.delim != ""; {
		if err := m.prefixes.Add([]byte(p)); err != nil {
			return err
		}
		j := strings.LastIndex(p, m.delim)
		if j < 0 {
			break
		}
		p = p[:j]
	}
	return nil
}

// add takes nodes' ids and parents.
func (m *ImpliedNodes) add(recs [][2]string) error {
	for _, r := range recs {
		if err := m.Add(r[0], r[1]); err != nil {
			return err
		}
	}
	return nil
}

// Each calls fn with each implied node, in id order: its id and its
// parent (the id without its last name). It returns how many there are;
// an error from fn stops it. It reads the sorts once.
func (m *ImpliedNodes) Each(fn func(id, parent string) error) (int64, error) {
	if m == nil {
		return 0, nil
	}
	ids, err := m.ids.Sort()
	if err != nil {
		return 0, err
	}
	defer ids.Close()
	prefixes, err := m.prefixes.Sort()
	if err != nil {
		return 0, err
	}
	defer prefixes.Close()
	var (
		n    int64
		last []byte
	)
	id, more := ids.Next()
	for p, ok := prefixes.Next(); ok; p, ok = prefixes.Next() {
		if last != nil && bytes.Equal(p, last) {
			continue
		}
		last = append(last[:0], p...)
		for more && bytes.Compare(id, p) < 0 {
			id, more = ids.Next()
		}
		if more && bytes.Equal(id, p) {
			continue
		}
		node, parent := string(p), ""
		if j := strings.LastIndex(node, m.delim); j >= 0 {
			parent = node[:j]
		}
		if err := fn(node, parent); err != nil {
			return n, err
		}
		n++
	}
	return n, errors.Join(ids.Err(), prefixes.Err())
}

// spill encodes each implied node, a record without attributes whose
// parent is its id without the last name, with enc, and adds it to out.
// It returns how many there are.
func (m *ImpliedNodes) spill(enc records.Encoder, out *extsort.Sorter) (int64, error) {
	var buf []byte
	return m.Each(func(id, parent string) error {
		rec := transform.Record{ID: id, Parent: parent, Attrs: transform.Attrs{}}
		var err error
		if buf, err = enc.Encode(buf[:0], &rec); err != nil {
			return err
		}
		return out.Add(buf)
	})
}
