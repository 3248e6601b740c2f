package records

import (
	"bufio"
	"encoding/base64"
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/transform"
)

// csvWriter writes RFC 4180 CSV with a header row. Without declared columns
// it holds the records until Close, when it knows every column.
type csvWriter struct {
	bw     *bufio.Writer
	cw     *csv.Writer
	opts   WriterOptions
	cols   []Column
	index  map[string]int // column name → position in cols
	held   []*transform.Record
	header bool
	row    []string
	buf    []byte
}

var _ Writer = (*csvWriter)(nil)

func newCSVWriter(bw *bufio.Writer, opts WriterOptions) (*csvWriter, error) {
	cw := csv.NewWriter(bw)
	if opts.CSVDelimiter != 0 {
		d := opts.CSVDelimiter
		if d == '"' || d == '\r' || d == '\n' || d == 0xFFFD || !strconv.IsPrint(d) && d != '\t' {
			return nil, fmt.Errorf("exporter: %q cannot be a CSV delimiter", d)
		}
		cw.Comma = d
	}
	w := &csvWriter{bw: bw, cw: cw, opts: opts}
	if opts.Columns != nil {
		w.setColumns(opts.Columns)
	}
	return w, nil
}

func (w *csvWriter) setColumns(cols []Column) {
	w.cols = cols
	w.index = make(map[string]int, len(cols))
	for i, c := range cols {
		w.index[c.Name] = i
	}
	w.row = make([]string, 2+len(cols))
}

func (w *csvWriter) Write(rec *transform.Record) error {
	if err := checkRecord(rec, &w.opts); err != nil {
		return err
	}
	if w.cols == nil {
		w.held = append(w.held, rec)
		return nil
	}
	return w.write(rec)
}

func (w *csvWriter) write(rec *transform.Record) error {
	if err := w.writeHeader(); err != nil {
		return err
	}
	clear(w.row)
	w.row[0], w.row[1] = rec.ID, rec.Parent
	for name, v := range rec.Attrs {
		i, ok := w.index[name]
		if !ok {
			return recordError(rec, name, fmt.Errorf("no CSV column for this attribute; declare it in the columns, or let the writer infer them"))
		}
		cell, err := w.cell(w.cols[i], v)
		if err != nil {
			return recordError(rec, name, err)
		}
		w.row[2+i] = cell
	}
	if err := w.cw.Write(w.row); err != nil {
		return recordError(rec, "", err)
	}
	return nil
}

// cell renders one value for its column; see NewWriter.
func (w *csvWriter) cell(c Column, v types.AttributeValue) (string, error) {
	mismatch := func() error {
		return fmt.Errorf("a %s value in a %s column; declare the column JSON to hold values of several types", ddbjson.TypeName(v), c.Type)
	}
	switch c.Type {
	case "S":
		if s, ok := v.(*types.AttributeValueMemberS); ok {
			return s.Value, nil
		}
		return "", mismatch()
	case "N":
		if n, ok := v.(*types.AttributeValueMemberN); ok {
			if _, ok := parseDecimal(n.Value); !ok {
				return "", fmt.Errorf("%q is not a number", n.Value)
			}
			return n.Value, nil
		}
		return "", mismatch()
	case "BOOL":
		if b, ok := v.(*types.AttributeValueMemberBOOL); ok {
			return strconv.FormatBool(b.Value), nil
		}
		return "", mismatch()
	case "B":
		if b, ok := v.(*types.AttributeValueMemberB); ok {
			return base64.StdEncoding.EncodeToString(b.Value), nil
		}
		return "", mismatch()
	}
	var err error
	w.buf, err = AppendPlainJSON(w.buf[:0], v)
	if err != nil {
		return "", err
	}
	return string(w.buf), nil
}

func (w *csvWriter) Close() error {
	if w.cols == nil {
		w.setColumns(InferColumns(w.held))
		for _, rec := range w.held {
			if err := w.write(rec); err != nil {
				return err
			}
		}
		w.held = nil
	}
	// Without records, the header alone, so that the file still reads.
	if err := w.writeHeader(); err != nil {
		return err
	}
	w.cw.Flush()
	if err := w.cw.Error(); err != nil {
		return fmt.Errorf("exporter: writing CSV: %w", err)
	}
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("exporter: writing CSV: %w", err)
	}
	return nil
}

func (w *csvWriter) writeHeader() error {
	if w.header {
		return nil
	}
	w.header = true
	head := append([]string{w.opts.IDField, w.opts.ParentField}, columnNames(w.cols)...)
	if err := w.cw.Write(head); err != nil {
		return fmt.Errorf("exporter: writing the CSV header: %w", err)
	}
	return nil
}

// Columns returns the attribute columns the file was written with, declared
// or (after Close) inferred from the records; TypesFlag turns them into the
// --types that reads the file back.
func (w *csvWriter) Columns() []Column { return w.cols }

// TypesPath is the sidecar file that holds the --types of the CSV file at
// csvPath: csvPath with ".types" added (people.csv.types). export writes it
// beside the CSV file; import, verify, plan, apply and bench read it when no
// --types is given.
func TypesPath(csvPath string) string { return csvPath + ".types" }

// ColumnsWriter is a Writer that can tell its columns once closed (CSV).
type ColumnsWriter interface {
	Writer
	Columns() []Column
}

func columnNames(cols []Column) []string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return names
}

// TypesFlag returns the --types value that reads a CSV file written with
// these columns back to typed attributes, such as size:N,active:BOOL,tags:JSON.
// S columns are left out (strings are the default); N, BOOL and B keep their
// type; every other type is JSON, as CSV holds those values as JSON text. It
// returns "" when every column is S. A column name holding a comma or a colon
// cannot be expressed in the flag's syntax.
func TypesFlag(cols []Column) string {
	var parts []string
	for _, c := range cols {
		t := c.Type
		switch t {
		case "S":
			continue
		case "N", "BOOL", "B":
		default:
			t = "JSON"
		}
		parts = append(parts, c.Name+":"+t)
	}
	return strings.Join(parts, ",")
}
