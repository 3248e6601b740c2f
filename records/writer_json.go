package records

import (
	"bufio"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/transform"
)

// jsonWriter writes plain JSON objects, as one array or one object a line.
// It streams either way.
type jsonWriter struct {
	bw    *bufio.Writer
	enc   jsonEncoder
	array bool
	n     int
	buf   []byte
}

var _ EncodedWriter = (*jsonWriter)(nil)

func newJSONWriter(bw *bufio.Writer, opts WriterOptions, array bool) *jsonWriter {
	return &jsonWriter{bw: bw, enc: jsonEncoder{opts: opts}, array: array}
}

func (w *jsonWriter) Write(rec *transform.Record) error {
	b, err := w.enc.Encode(w.buf[:0], rec)
	w.buf = b
	if err != nil {
		return err
	}
	return w.WriteEncoded(b)
}

// writeEncoded writes one object that a jsonEncoder encoded, with the
// separator or newline its place asks for.
func (w *jsonWriter) WriteEncoded(b []byte) error {
	var err error
	if w.array {
		sep := ",\n"
		if w.n == 0 {
			sep = "[\n"
		}
		_, err = w.bw.WriteString(sep)
	}
	if err == nil {
		_, err = w.bw.Write(b)
	}
	if err == nil && !w.array {
		err = w.bw.WriteByte('\n')
	}
	if err != nil {
		return fmt.Errorf("exporter: writing JSON: %w", err)
	}
	w.n++
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

// jsonEncoder encodes one record as a plain JSON object, with no separator
// and no newline. It keeps a scratch list of attributes between calls, so
// each goroutine needs its own.
type jsonEncoder struct {
	opts  WriterOptions
	attrs []namedValue
}

var _ Encoder = (*jsonEncoder)(nil)

// namedValue is one attribute of a record.
type namedValue struct {
	name  string
	value types.AttributeValue
}

func (e *jsonEncoder) Encode(b []byte, rec *transform.Record) ([]byte, error) {
	if rec.ID == "" {
		return b, checkRecord(rec, &e.opts)
	}
	// One pass over the map takes the names and values, and sees an
	// attribute named like the id or parent field (checkRecord says which).
	attrs := e.attrs[:0]
	for name, v := range rec.Attrs {
		if name == e.opts.IDField || name == e.opts.ParentField {
			return b, checkRecord(rec, &e.opts)
		}
		attrs = append(attrs, namedValue{name, v})
	}
	sortNamed(attrs)
	e.attrs = attrs
	b = append(b, '{')
	b = ddbjson.AppendString(b, e.opts.IDField)
	b = append(b, ':')
	b = ddbjson.AppendString(b, rec.ID)
	if rec.Parent != "" {
		b = append(b, ',')
		b = ddbjson.AppendString(b, e.opts.ParentField)
		b = append(b, ':')
		b = ddbjson.AppendString(b, rec.Parent)
	}
	for _, a := range attrs {
		b = append(b, ',')
		b = ddbjson.AppendString(b, a.name)
		b = append(b, ':')
		var err error
		if b, err = AppendPlainJSON(b, a.value); err != nil {
			return b, recordError(rec, a.name, err)
		}
	}
	return append(b, '}'), nil
}

// sortNamed sorts attributes by name: by insertion for the handful a
// record usually has, where it beats a general sort.
func sortNamed(attrs []namedValue) {
	if len(attrs) > 12 {
		slices.SortFunc(attrs, func(a, b namedValue) int { return strings.Compare(a.name, b.name) })
		return
	}
	for i := 1; i < len(attrs); i++ {
		for j := i; j > 0 && attrs[j].name < attrs[j-1].name; j-- {
			attrs[j], attrs[j-1] = attrs[j-1], attrs[j]
		}
	}
}
