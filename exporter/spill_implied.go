package exporter

import (
	"bytes"
	"errors"
	"strings"

	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

// impliedNodes finds, in a fixed memory, the inner nodes a table with path
// ids implies (layouts.Implied, which a Scan in memory uses): every
// prefix of a node's parent that is no node's id. The ids and the
// prefixes of the parents go to two external sorts; a merge join of the
// two writes each prefix that is not an id once. A node nil does
// nothing (a layout without path ids).
type impliedNodes struct {
	delim         string
	ids, prefixes *extsort.Sorter
}

func newImpliedNodes(dir string, budget int, delim string) *impliedNodes {
	return &impliedNodes{delim: delim, ids: extsort.New(dir, budget, bytes.Compare), prefixes: extsort.New(dir, budget, bytes.Compare)}
}

func (m *impliedNodes) close() {
	m.ids.Close()
	m.prefixes.Close()
}

// add takes nodes' ids and parents.
func (m *impliedNodes) add(recs [][2]string) error {
	if m == nil {
		return nil
	}
	for _, r := range recs {
		if err := m.ids.Add([]byte(r[0])); err != nil {
			return err
		}
		for p := r[1]; p != "" && m.delim != ""; {
			if err := m.prefixes.Add([]byte(p)); err != nil {
				return err
			}
			j := strings.LastIndex(p, m.delim)
			if j < 0 {
				break
			}
			p = p[:j]
		}
	}
	return nil
}

// spill encodes each implied node, a record without attributes whose
// parent is its id without the last name, with enc, and adds it to out.
// It returns how many there are.
func (m *impliedNodes) spill(enc records.Encoder, out *extsort.Sorter) (int64, error) {
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
		buf  []byte
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
		rec := transform.Record{ID: string(p), Attrs: transform.Attrs{}}
		if j := strings.LastIndex(rec.ID, m.delim); j >= 0 {
			rec.Parent = rec.ID[:j]
		}
		if buf, err = enc.Encode(buf[:0], &rec); err != nil {
			return n, err
		}
		if err := out.Add(buf); err != nil {
			return n, err
		}
		n++
	}
	return n, errors.Join(ids.Err(), prefixes.Err())
}
