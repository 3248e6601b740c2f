package importer

import (
	"context"
	"encoding/base64"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/transform"
)

// csvSource reads RFC 4180 CSV with a header row.
type csvSource struct {
	in     *input
	r      *csv.Reader
	file   string
	opts   SourceOptions
	header []string
	typ    []byte // the type of each column: 0 for S, or 'N', 'b' (BOOL), 'J' (JSON), 'B'
	idCol  int
	parCol int
	ncols  int // attribute columns: all but the id and the parent
	done   bool
	slab   slab
}

var _ Source = (*csvSource)(nil)

func openCSV(path string, opts SourceOptions) (Source, error) {
	in, err := openInput(path)
	if err != nil {
		return nil, err
	}
	s, err := newCSVSource(in, path, opts)
	if err != nil {
		in.Close()
		return nil, err
	}
	return s, nil
}

func newCSVSource(in *input, file string, opts SourceOptions) (*csvSource, error) {
	// A UTF-8 byte order mark is not part of the first column's name.
	if bom, _ := in.r.Peek(3); string(bom) == "\uFEFF" {
		in.r.Discard(3)
	}
	r := csv.NewReader(in.r)
	if opts.CSVDelimiter != 0 {
		r.Comma = opts.CSVDelimiter
	}
	r.ReuseRecord = true
	s := &csvSource{in: in, r: r, file: file, opts: opts}
	header, err := r.Read()
	if err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("importer: %s is empty: a CSV input needs a header row naming its columns", file)
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("importer: %s: the header row cannot be read: %v", file, pe)
		}
		return nil, fmt.Errorf("importer: %s: reading the header: %w", file, inputError(err, file, 1, ""))
	}
	s.header = append([]string(nil), header...)
	s.idCol, s.parCol = -1, -1
	seen := map[string]int{}
	for i, name := range s.header {
		if !utf8.ValidString(name) {
			return nil, fmt.Errorf("importer: %s: the name of column %d is not valid UTF-8", file, i+1)
		}
		if name == "" {
			return nil, fmt.Errorf("importer: %s: column %d has no name in the header row", file, i+1)
		}
		if j, dup := seen[name]; dup {
			return nil, fmt.Errorf("importer: %s: columns %d and %d are both named %q", file, j+1, i+1, name)
		}
		seen[name] = i
		switch name {
		case opts.idField():
			s.idCol = i
		case opts.parentField():
			s.parCol = i
		}
	}
	if s.idCol < 0 {
		return nil, fmt.Errorf("importer: %s has no column %q (its columns: %s); name the id column with --id-field",
			file, opts.idField(), strings.Join(s.header, ", "))
	}
	if s.parCol < 0 {
		return nil, fmt.Errorf("importer: %s has no column %q (its columns: %s); name the parent column with --parent-field",
			file, opts.parentField(), strings.Join(s.header, ", "))
	}
	s.ncols = len(s.header) - 2
	s.typ = make([]byte, len(s.header))
	for _, col := range sortedKeys(opts.Types) {
		i, ok := seen[col]
		if !ok {
			return nil, fmt.Errorf("importer: --types names column %q, which %s does not have (its columns: %s)",
				col, file, strings.Join(s.header, ", "))
		}
		if i == s.idCol || i == s.parCol {
			return nil, fmt.Errorf("importer: --types: %q is the id or parent column of %s, which is always text", col, file)
		}
		switch strings.ToUpper(opts.Types[col]) {
		case "S":
			s.typ[i] = 0
		case "N":
			s.typ[i] = 'N'
		case "BOOL":
			s.typ[i] = 'b'
		case "JSON":
			s.typ[i] = 'J'
		case "B":
			s.typ[i] = 'B'
		default:
			return nil, fmt.Errorf("importer: --types: column %q has unknown type %q; want S, N, BOOL, JSON or B", col, opts.Types[col])
		}
	}
	return s, nil
}

// Next reads the next row. Ragged rows, quoting errors, invalid UTF-8 and
// values that do not fit their column's type are RowErrors; reading goes on
// with the next row.
func (s *csvSource) Next(ctx context.Context) (*transform.Record, error) {
	if s.done {
		return nil, io.EOF
	}
	fields, err := s.r.Read()
	if err != nil {
		var pe *csv.ParseError
		switch {
		case err == io.EOF:
			s.done = true
			return nil, io.EOF
		case errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount):
			return s.rowError(fields, pe.StartLine, parseErr("the row has %d fields, the header has %d", len(fields), len(s.header)))
		case errors.As(err, &pe):
			return s.rowError(fields, pe.StartLine, parseErr("line %d, column %d: %v", pe.Line, pe.Column, pe.Err))
		default:
			s.done = true
			line, _ := s.r.FieldPos(0)
			return nil, inputError(err, s.file, line, "")
		}
	}
	line, _ := s.r.FieldPos(0)
	rec := s.slab.record()
	rec.File, rec.Line = s.file, line
	if s.opts.KeepRaw {
		rec.Raw = appendCSVRecord(nil, fields, s.r.Comma)
	}
	for i, f := range fields {
		if !utf8.ValidString(f) {
			return s.rowError(fields, line, parseErr("column %q is not valid UTF-8: %q", s.header[i], f))
		}
	}
	rec.ID = fields[s.idCol]
	rec.Parent = fields[s.parCol]
	rec.Attrs = make(transform.Attrs, s.ncols)
	for i, f := range fields {
		if f == "" || i == s.idCol || i == s.parCol {
			continue
		}
		v, err := s.value(i, f)
		if err != nil {
			return rec, &transform.RowError{File: s.file, Line: line, ID: rec.ID, Err: err}
		}
		rec.Attrs[s.header[i]] = v
	}
	return rec, nil
}

// value types one non-empty cell.
func (s *csvSource) value(col int, f string) (types.AttributeValue, error) {
	switch s.typ[col] {
	case 'N':
		if err := ddbjson.CheckNumber(f); err != nil {
			return nil, parseErr("column %q (N): %q is not a number DynamoDB can store: %s",
				s.header[col], f, strings.TrimPrefix(strings.TrimPrefix(err.Error(), ddbjson.ErrNumber.Error()), ": "))
		}
		return s.slab.n(f), nil
	case 'b':
		switch {
		case f == "1" || strings.EqualFold(f, "true"):
			return &types.AttributeValueMemberBOOL{Value: true}, nil
		case f == "0" || strings.EqualFold(f, "false"):
			return &types.AttributeValueMemberBOOL{Value: false}, nil
		}
		return nil, parseErr("column %q (BOOL): %q is not true, false, 1 or 0", s.header[col], f)
	case 'J':
		v, err := ddbjson.DecodePlainValue([]byte(f))
		if err != nil {
			return nil, parseErr("column %q (JSON): %q is not valid JSON: %s", s.header[col], shorten(f), plainErr(err))
		}
		return v, nil
	case 'B':
		enc := base64.StdEncoding
		if len(f)%4 != 0 {
			enc = base64.RawStdEncoding
		}
		b, err := enc.DecodeString(f)
		if err != nil {
			return nil, parseErr("column %q (B): %q is not base64: %v", s.header[col], shorten(f), err)
		}
		return &types.AttributeValueMemberB{Value: b}, nil
	}
	return s.slab.s(f), nil
}

// rowError returns a bad row: what could be read of it, and the error.
func (s *csvSource) rowError(fields []string, line int, err error) (*transform.Record, error) {
	rec := &transform.Record{File: s.file, Line: line}
	if s.idCol < len(fields) && utf8.ValidString(fields[s.idCol]) {
		rec.ID = fields[s.idCol]
	}
	if s.parCol < len(fields) && utf8.ValidString(fields[s.parCol]) {
		rec.Parent = fields[s.parCol]
	}
	if s.opts.KeepRaw && len(fields) > 0 {
		rec.Raw = appendCSVRecord(nil, fields, s.r.Comma)
	}
	return rec, &transform.RowError{File: s.file, Line: line, ID: rec.ID, Err: err}
}

func (s *csvSource) Close() error { return s.in.Close() }

// appendCSVRecord writes fields as one CSV record, quoted where RFC 4180
// needs it, without the line ending.
func appendCSVRecord(dst []byte, fields []string, comma rune) []byte {
	for i, f := range fields {
		if i > 0 {
			dst = utf8.AppendRune(dst, comma)
		}
		if !fieldNeedsQuotes(f, comma) {
			dst = append(dst, f...)
			continue
		}
		dst = append(dst, '"')
		dst = append(dst, strings.ReplaceAll(f, `"`, `""`)...)
		dst = append(dst, '"')
	}
	return dst
}

func fieldNeedsQuotes(f string, comma rune) bool {
	if f == "" {
		return false
	}
	if f == `\.` || f[0] == ' ' || f[0] == '\t' {
		return true
	}
	return strings.ContainsRune(f, comma) || strings.ContainsAny(f, "\"\r\n")
}

// shorten cuts a long value for an error message.
func shorten(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// plainErr words a ddbjson error for a message that already says where the
// value is.
func plainErr(err error) string {
	var e *ddbjson.Error
	if errors.As(err, &e) {
		if e.Path != "" {
			return fmt.Sprintf("at %s: %s", e.Path, e.Msg)
		}
		return e.Msg
	}
	return err.Error()
}

// slab hands out records and values from arrays allocated a batch at a time:
// a row costs a few allocations instead of one per cell. Each one handed out
// is distinct, and the caller may keep it.
type slab struct {
	recs []transform.Record
	ss   []types.AttributeValueMemberS
	ns   []types.AttributeValueMemberN
}

const slabSize = 128

func (a *slab) record() *transform.Record {
	if len(a.recs) == 0 {
		a.recs = make([]transform.Record, slabSize)
	}
	r := &a.recs[0]
	a.recs = a.recs[1:]
	return r
}

func (a *slab) s(v string) *types.AttributeValueMemberS {
	if len(a.ss) == 0 {
		a.ss = make([]types.AttributeValueMemberS, slabSize)
	}
	p := &a.ss[0]
	a.ss = a.ss[1:]
	p.Value = v
	return p
}

func (a *slab) n(v string) *types.AttributeValueMemberN {
	if len(a.ns) == 0 {
		a.ns = make([]types.AttributeValueMemberN, slabSize)
	}
	p := &a.ns[0]
	a.ns = a.ns[1:]
	p.Value = v
	return p
}
