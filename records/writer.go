package records

// The writers: adjacency-list records to files that treeport's own readers
// read back to the same records: CSV, JSON, JSON Lines, Parquet and
// DynamoDB JSON (see NewWriter). export writes its output with them, and gen
// and the fixture generator their files.

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/transform"
)

// Default field names of a record's id and parent, as SPEC §1 names them.
const (
	DefaultIDField     = "id"
	DefaultParentField = "parent_id"
)

// Writer writes adjacency-list records to a file that treeport's own
// readers read back to the same records (see each format's notes for what a
// format cannot express).
//
// A Writer is not safe for concurrent use. Write may keep rec until
// Close (CSV and Parquet do when they infer their columns), so the caller must
// not modify a record after writing it.
type Writer interface {
	// Write writes one record. An error names the record's id and the
	// attribute at fault; after an error the output is incomplete.
	Write(rec *transform.Record) error
	// Close writes whatever is buffered and the format's trailer (the
	// closing bracket of a JSON array, the Parquet footer) and flushes it to
	// the underlying io.Writer, which the caller closes. A file whose
	// writer's Close failed is not valid.
	Close() error
}

// WriterOptions configure NewWriter.
type WriterOptions struct {
	// Format is one of Formats; FormatFromPath derives it from a file name.
	Format string
	// IDField and ParentField name the id and parent columns; they default
	// to DefaultIDField and DefaultParentField. A record with an attribute
	// of either name is an error, since the file could not tell them apart.
	IDField, ParentField string
	// Columns are the attribute columns of CSV and Parquet, in order; JSON
	// and DynamoDB JSON ignore them. When nil, CSV and Parquet hold every
	// record in memory until Close and infer the columns from them
	// (InferColumns for CSV; a richer inference for Parquet, see
	// NewWriter). When given, they stream, and a record with an
	// attribute that is not among them, or whose type the column cannot
	// hold, is an error.
	Columns []Column
	// CSVDelimiter separates CSV fields; 0 means a comma.
	CSVDelimiter rune
}

// Column is one attribute column of a CSV or Parquet file.
type Column struct {
	Name string
	// Type is the DynamoDB type of the column's values: S, N, BOOL or B for a
	// scalar column; L, M, SS, NS, BS or NULL for one holding lists, maps,
	// sets or only NULLs; JSON for one whose values differ in type. The
	// non-scalar types are written as JSON text (CSV) or a JSON column
	// (streaming Parquet), which holds any value.
	Type string
	// Number says how Parquet stores an N column; the other formats ignore
	// it. InferColumns sets it.
	Number NumberKind
	// Scale is the number of digits after the decimal point of a
	// NumberDecimal column.
	Scale int
	// Timestamp, on an S column of RFC 3339 times in UTC, makes Parquet
	// store it as a TIMESTAMP of this unit (time.Millisecond,
	// time.Microsecond or time.Nanosecond; see TimestampColumn); the other
	// formats write the text. 0 is a plain string column.
	Timestamp time.Duration
}

// NumberKind is how a Parquet file stores an N column.
type NumberKind int

const (
	// NumberAuto stores the column as NumberDouble, and a value a DOUBLE
	// cannot hold exactly is an error that says to declare the column.
	NumberAuto NumberKind = iota
	// NumberInt64 stores integers that fit in 64 bits as INT64.
	NumberInt64
	// NumberDouble stores numbers as DOUBLE; a value whose shortest float
	// text is not the same number is an error.
	NumberDouble
	// NumberDecimal stores numbers as DECIMAL(38, Scale) in a 16-byte
	// fixed-length byte array; a value with more digits after the point than
	// Scale, or more than 38-Scale before it, is an error.
	NumberDecimal
	// NumberJSON stores the number's text in a JSON column: exact whatever
	// its size, typed N again by a reader that parses JSON columns.
	NumberJSON
)

// String names the kind as errors show it: auto, INT64, DOUBLE, DECIMAL or
// JSON.
func (k NumberKind) String() string {
	switch k {
	case NumberAuto:
		return "auto"
	case NumberInt64:
		return "INT64"
	case NumberDouble:
		return "DOUBLE"
	case NumberDecimal:
		return "DECIMAL"
	case NumberJSON:
		return "JSON"
	}
	return fmt.Sprintf("NumberKind(%d)", int(k))
}

// Column types a Column may declare.
var writeColumnTypes = []string{"S", "N", "BOOL", "B", "NULL", "L", "M", "SS", "NS", "BS", "JSON"}

// NewWriter returns a Writer that writes opts.Format to w. It
// buffers its output and flushes it at Close; the caller closes w.
//
// Formats, and what they cannot express:
//
//   - csv: a header row (id, parent, the columns), then one row a record. S
//     is written as is, N as its text, BOOL as true or false, B as base64,
//     and L, M, sets, NULL and mixed-type columns as JSON text (binary inside
//     them as a base64 string). An absent attribute is an empty cell, so an
//     empty S value reads back as absent. TypesFlag gives the --types value
//     that reads the columns back typed.
//   - json, jsonl: {"id":…,"parent_id":…, attributes in name order}; a root
//     has no parent_id. S is a string, N its exact text as a JSON number,
//     BOOL a boolean, NULL null, L an array, M an object, a set an array;
//     B becomes a base64 string, so it reads back as S.
//   - parquet: typed columns, in name order (parquet-go orders a group's
//     fields by name), zstd-compressed, a row group every 131072 rows. id is
//     a required UTF-8 string, parent_id an optional one, and every
//     attribute optional (null = absent). S is a UTF-8 string, BOOL a
//     boolean, B binary. N is INT64 when every value is an integer that
//     fits; else DOUBLE when every value's shortest float text is the same
//     number; else DECIMAL(38, s) when the digits fit; else JSON. L and sets
//     are a LIST of their elements' type (a NULL element is a null). M is a
//     struct with one field per key when the maps have at most 64 distinct
//     keys and no NULL value, else a MAP from UTF-8 keys to the values' type.
//     A column whose values (at any depth) differ in type, hold only NULLs,
//     or hold a NULL where a null would read as absent, is a JSON-annotated
//     string holding each value as plain JSON (binary as base64 text), which
//     a reader must parse to get the types back. With declared Columns, N
//     follows Column.Number, and L, M, sets, NULL and JSON columns are JSON
//     columns.
//   - ddbjson: {"Item":{…}} a line, id and parent as S attributes; exact for
//     every type, sets included.
func NewWriter(w io.Writer, opts WriterOptions) (Writer, error) {
	opts.IDField = cmp.Or(opts.IDField, DefaultIDField)
	opts.ParentField = cmp.Or(opts.ParentField, DefaultParentField)
	if opts.IDField == opts.ParentField {
		return nil, fmt.Errorf("exporter: the id and parent fields are both named %q; give them different names", opts.IDField)
	}
	if err := checkColumns(opts); err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(w, 64*1024)
	switch opts.Format {
	case FormatCSV:
		return newCSVWriter(bw, opts)
	case FormatJSON:
		return newJSONWriter(bw, opts, true), nil
	case FormatJSONL:
		return newJSONWriter(bw, opts, false), nil
	case FormatParquet:
		return newParquetWriter(w, opts)
	case FormatDDBJSON:
		return newDDBJSONWriter(bw, opts), nil
	case "":
		return nil, fmt.Errorf("exporter: no output format; pass --format (%s) or use a file name ending in one", strings.Join(Formats, ", "))
	}
	return nil, fmt.Errorf("exporter: unknown output format %q; use one of %s", opts.Format, strings.Join(Formats, ", "))
}

func checkColumns(opts WriterOptions) error {
	seen := make(map[string]bool, len(opts.Columns))
	for _, c := range opts.Columns {
		switch {
		case c.Name == "":
			return errors.New("exporter: a column has an empty name")
		case c.Name == opts.IDField || c.Name == opts.ParentField:
			return fmt.Errorf("exporter: column %q has the name of the id or parent field; rename one of them", c.Name)
		case seen[c.Name]:
			return fmt.Errorf("exporter: column %q is declared twice", c.Name)
		case !slices.Contains(writeColumnTypes, c.Type):
			return fmt.Errorf("exporter: column %q has type %q; use one of %s", c.Name, c.Type, strings.Join(writeColumnTypes, ", "))
		case c.Number == NumberDecimal && (c.Scale < 0 || c.Scale > maxDecimalDigits):
			return fmt.Errorf("exporter: column %q: decimal scale %d is outside 0..%d", c.Name, c.Scale, maxDecimalDigits)
		case c.Number < NumberAuto || c.Number > NumberJSON:
			return fmt.Errorf("exporter: column %q: unknown number kind %d", c.Name, int(c.Number))
		case c.Timestamp != 0 && (c.Type != "S" || (c.Timestamp != time.Millisecond && c.Timestamp != time.Microsecond && c.Timestamp != time.Nanosecond)):
			return fmt.Errorf("exporter: column %q: a timestamp column is an S column of unit time.Millisecond, time.Microsecond or time.Nanosecond, not %s %v", c.Name, c.Type, c.Timestamp)
		}
		seen[c.Name] = true
	}
	return nil
}

// InferColumns returns the union of the records' attributes, sorted by name,
// each with the DynamoDB type of its values. A column whose values share one
// type gets that type (a NULL among L, M or set values does not change it);
// one whose values differ in type, or that mixes NULL with S, N, BOOL or B,
// gets JSON, which CSV writes as JSON text. An N column gets the narrowest
// Parquet number kind that holds every value exactly: INT64, then DOUBLE,
// then DECIMAL(38, the largest scale), else JSON.
func InferColumns(recs []*transform.Record) []Column {
	stats := map[string]*columnStats{}
	for _, rec := range recs {
		for name, v := range rec.Attrs {
			s := stats[name]
			if s == nil {
				s = &columnStats{}
				stats[name] = s
			}
			s.add(v)
		}
	}
	cols := make([]Column, 0, len(stats))
	for name, s := range stats {
		cols = append(cols, s.column(name))
	}
	slices.SortFunc(cols, func(a, b Column) int { return strings.Compare(a.Name, b.Name) })
	return cols
}

// columnStats gathers what InferColumns needs to know of one column.
type columnStats struct {
	types []string // DynamoDB types seen, NULL included, in first-seen order
	num   numStats
}

func (s *columnStats) add(v types.AttributeValue) {
	t := ddbjson.TypeName(v)
	if !slices.Contains(s.types, t) {
		s.types = append(s.types, t)
	}
	if n, ok := v.(*types.AttributeValueMemberN); ok {
		s.num.add(n.Value)
	}
}

func (s *columnStats) column(name string) Column {
	nonNull := slices.DeleteFunc(slices.Clone(s.types), func(t string) bool { return t == "NULL" })
	hasNull := len(nonNull) < len(s.types)
	c := Column{Name: name, Type: "JSON"}
	switch {
	case len(nonNull) == 0:
		c.Type = "NULL"
	case len(nonNull) > 1:
		// JSON
	case !hasNull || !isScalarType(nonNull[0]):
		c.Type = nonNull[0]
	}
	if c.Type == "N" {
		c.Number, c.Scale = s.num.kind()
	}
	return c
}

func isScalarType(t string) bool { return t == "S" || t == "N" || t == "BOOL" || t == "B" }

// checkRecord rejects what no format can write: an empty id, and an
// attribute that has the name of the id or parent field.
func checkRecord(rec *transform.Record, opts *WriterOptions) error {
	if rec.ID == "" {
		return recordError(rec, "", errors.New("empty id"))
	}
	for _, f := range []string{opts.IDField, opts.ParentField} {
		if _, ok := rec.Attrs[f]; ok {
			return recordError(rec, f, fmt.Errorf("the attribute has the name of the id or parent field; choose other field names (--id-field, --parent-field)"))
		}
	}
	return nil
}

// recordError says which record and attribute a write failed on.
func recordError(rec *transform.Record, attr string, err error) error {
	if attr == "" {
		return fmt.Errorf("exporter: record %q: %w", rec.ID, err)
	}
	return fmt.Errorf("exporter: record %q, attribute %q: %w", rec.ID, attr, err)
}
