package exporter

import (
	"bufio"
	"fmt"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/transform"
)

// jsonWriter writes plain JSON objects, as one array or one object a line.
// It streams either way.
type jsonWriter struct {
	bw    *bufio.Writer
	opts  WriterOptions
	array bool
	n     int
	buf   []byte
}

var _ RecordWriter = (*jsonWriter)(nil)

func newJSONWriter(bw *bufio.Writer, opts WriterOptions, array bool) *jsonWriter {
	return &jsonWriter{bw: bw, opts: opts, array: array}
}

func (w *jsonWriter) Write(rec *transform.Record) error {
	if err := checkRecord(rec, &w.opts); err != nil {
		return err
	}
	b := w.buf[:0]
	if w.array {
		if w.n == 0 {
			b = append(b, "[\n"...)
		} else {
			b = append(b, ",\n"...)
		}
	}
	b = append(b, '{')
	b = ddbjson.AppendString(b, w.opts.IDField)
	b = append(b, ':')
	b = ddbjson.AppendString(b, rec.ID)
	if rec.Parent != "" {
		b = append(b, ',')
		b = ddbjson.AppendString(b, w.opts.ParentField)
		b = append(b, ':')
		b = ddbjson.AppendString(b, rec.Parent)
	}
	for _, name := range sortedKeys(rec.Attrs) {
		b = append(b, ',')
		b = ddbjson.AppendString(b, name)
		b = append(b, ':')
		var err error
		if b, err = appendPlainJSON(b, rec.Attrs[name]); err != nil {
			return recordError(rec, name, err)
		}
	}
	b = append(b, '}')
	if !w.array {
		b = append(b, '\n')
	}
	w.buf = b
	w.n++
	if _, err := w.bw.Write(b); err != nil {
		return fmt.Errorf("exporter: writing JSON: %w", err)
	}
	return nil
}

func (w *jsonWriter) Close() error {
	if w.array {
		end := "\n]\n"
		if w.n == 0 {
			end = "[]\n"
		}
		if _, err := w.bw.WriteString(end); err != nil {
			return fmt.Errorf("exporter: writing JSON: %w", err)
		}
	}
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("exporter: writing JSON: %w", err)
	}
	return nil
}
