package records

import (
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/treeport/treeport/transform"
)

// Inference gathers, a record at a time, what the csv and parquet writers
// infer from the records they hold until Close (their columns), so that a
// job that cannot hold the records (the export out of core) can see each
// once, and then write them in another order with a writer that streams
// (NewWriter) and writes the same bytes as one that held them. Observe is
// safe for concurrent use; NewWriter is called once every record was
// observed. The order records are observed in does not count.
type Inference struct {
	mu     sync.Mutex
	format string
	csv    map[string]*columnStats
	pq     map[string]*shape
}

// NewInference returns an Inference for format, or nil for a format whose
// writer infers nothing (json, jsonl and ddbjson encode each record as it
// comes). A nil *Inference observes nothing.
func NewInference(format string) *Inference {
	switch format {
	case FormatCSV:
		return &Inference{format: format, csv: map[string]*columnStats{}}
	case FormatParquet:
		return &Inference{format: format, pq: map[string]*shape{}}
	}
	return nil
}

// Observe adds what recs say of the columns.
func (f *Inference) Observe(recs ...*transform.Record) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, rec := range recs {
		for name, v := range rec.Attrs {
			if f.csv != nil {
				s := f.csv[name]
				if s == nil {
					s = &columnStats{}
					f.csv[name] = s
				}
				s.add(v)
				continue
			}
			s := f.pq[name]
			if s == nil {
				s = &shape{}
				f.pq[name] = s
			}
			if v != nil {
				s.observe(v)
			}
		}
	}
}

// NewWriter is records.NewWriter(w, opts) for opts.Format (the Inference's
// format) with the columns a writer given every observed record would
// have inferred: its bytes are those of that writer's, record for record.
// opts.Columns must be nil.
func (f *Inference) NewWriter(w io.Writer, opts WriterOptions) (Writer, error) {
	if f == nil || opts.Columns != nil || opts.Format != f.format {
		return NewWriter(w, opts)
	}
	rw, err := NewWriter(w, opts)
	if err != nil {
		return nil, err
	}
	switch rw := rw.(type) {
	case *csvWriter:
		cols := make([]Column, 0, len(f.csv))
		for name, s := range f.csv {
			cols = append(cols, s.column(name))
		}
		slices.SortFunc(cols, func(a, b Column) int { return strings.Compare(a.Name, b.Name) })
		rw.setColumns(cols)
	case *parquetWriter:
		attrs := make(map[string]*pnode, len(f.pq))
		for name, s := range f.pq {
			n, ok := s.node(false)
			if !ok {
				n = &pnode{kind: pJSON}
			}
			attrs[name] = n
		}
		if err := rw.start(attrs); err != nil {
			return nil, err
		}
	}
	return rw, nil
}
