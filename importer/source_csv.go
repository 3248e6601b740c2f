package importer

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/transform"
)

// csvSource reads RFC 4180 CSV with a header row.
//
// Besides Next, it has the two ways of reading the pipeline uses: a
// skeleton read (nextSkeleton), which checks every cell and measures the
// attributes without building them, and a read into the caller's record
// (nextReuse), which reuses its Attrs map.
type csvSource struct {
	in     *input
	r      *csvReader
	file   string
	opts   SourceOptions
	header []string
	typ    []byte // the type of each column: 0 for S, or 'N', 'b' (BOOL), 'J' (JSON), 'B'
	idCol  int
	parCol int
	ncols  int // attribute columns: all but the id and the parent
	done   bool
	slab   slab
	strs   strChunk
	b64    []byte // scratch for decoding B cells whose value is not kept

	// The skeleton read: copyCol marks the columns a closure ancestor row
	// copies (nil: all of them), and seen the attribute columns already
	// seen filled in a good row, whose first places are in firstSeen.
	copyCol   []bool
	seen      []bool
	unseen    int
	firstSeen []attrPlace
}

var (
	_ Source         = (*csvSource)(nil)
	_ skeletonSource = (*csvSource)(nil)
	_ reuseSource    = (*csvSource)(nil)
)

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
	comma := ','
	if opts.CSVDelimiter != 0 {
		comma = opts.CSVDelimiter
	}
	if !validDelim(comma) {
		return nil, fmt.Errorf("%w: %s: %q cannot separate CSV fields; choose another --csv-delimiter", ErrInvalid, file, comma)
	}
	r := newCSVReader(in.r, comma)
	s := &csvSource{in: in, r: r, file: file, opts: opts}
	header, err := r.read()
	if err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("%w: %s is empty: a CSV input needs a header row naming its columns", ErrInvalid, file)
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%w: %s: the header row cannot be read: %v", ErrInvalid, file, pe)
		}
		return nil, fmt.Errorf("importer: %s: reading the header: %w", file, inputError(err, file, 1, ""))
	}
	s.header = make([]string, len(header))
	for i, name := range header {
		s.header[i] = string(name)
	}
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
	s.seen = make([]bool, len(s.header))
	s.unseen = s.ncols
	return s, nil
}

// Next reads the next row. Ragged rows, quoting errors, invalid UTF-8 and
// values that do not fit their column's type are RowErrors; reading goes on
// with the next row.
func (s *csvSource) Next(ctx context.Context) (*transform.Record, error) {
	fields, line, bad, err := s.row()
	if err != nil {
		return bad, err
	}
	rec := s.slab.record()
	rec.Attrs = make(transform.Attrs, s.ncols)
	return rec, s.build(rec, fields, line)
}

// nextReuse reads the next row into rec as Next would return it, reusing
// rec.Attrs (cleared first; made when nil). The attribute values and the
// strings are fresh, as Next's are: only the map is reused. With an error
// that Next returns no record for, rec is left empty but for its map.
func (s *csvSource) nextReuse(_ context.Context, rec *transform.Record) error {
	attrs := rec.Attrs
	if attrs == nil {
		attrs = make(transform.Attrs, s.ncols)
	} else {
		clear(attrs)
	}
	fields, line, bad, err := s.row()
	if err != nil {
		if bad != nil {
			*rec = *bad
		} else {
			*rec = transform.Record{}
		}
		rec.Attrs = attrs
		return err
	}
	rec.Attrs = attrs
	return s.build(rec, fields, line)
}

// nextSkeleton reads the next row as the skeleton read needs it: every cell
// is checked as Next checks it, with the same errors, but only the sizes of
// the attributes are kept. row.ID and row.Parent are valid until the next
// call; the strings of a returned RowError are the caller's.
func (s *csvSource) nextSkeleton(_ context.Context, row *skeletonRow) error {
	fields, line, bad, err := s.row()
	if err != nil {
		*row = skeletonRow{}
		if bad != nil {
			row.ID, row.Parent, row.File, row.Line = bad.ID, bad.Parent, bad.File, bad.Line
		}
		return err
	}
	row.File, row.Line = s.file, line
	row.ID = transientString(fields[s.idCol])
	row.Parent = transientString(fields[s.parCol])
	size, copyBytes := 0, 0
	for i, f := range fields {
		if len(f) == 0 || i == s.idCol || i == s.parCol {
			continue
		}
		_, n, err := s.cell(i, f, nil)
		if err != nil {
			return &transform.RowError{File: s.file, Line: line, ID: strings.Clone(row.ID), Err: err}
		}
		n += len(s.header[i])
		size += n
		if s.copyCol == nil || s.copyCol[i] {
			copyBytes += n
		}
	}
	row.AttrBytes, row.CopyBytes = size, copyBytes
	if s.unseen > 0 {
		s.markSeen(fields, line, row.ID)
	}
	return nil
}

// markSeen notes the attribute columns filled in for the first time in a
// good row.
func (s *csvSource) markSeen(fields [][]byte, line int, id string) {
	for i, f := range fields {
		if len(f) == 0 || i == s.idCol || i == s.parCol || s.seen[i] {
			continue
		}
		s.seen[i] = true
		s.unseen--
		s.firstSeen = append(s.firstSeen, attrPlace{Name: s.header[i], File: s.file, Line: line, ID: strings.Clone(id)})
	}
}

// skeleton starts a skeleton read. copySet names the attributes a closure
// ancestor row copies; nil means all of them.
func (s *csvSource) skeleton(copySet map[string]bool) {
	s.copyCol = nil
	if copySet != nil {
		s.copyCol = make([]bool, len(s.header))
		for i, name := range s.header {
			s.copyCol[i] = copySet[name]
		}
	}
}

// attrsSeen returns each attribute name that a good row read by
// nextSkeleton had, with the first place it was seen, in that order.
func (s *csvSource) attrsSeen() []attrPlace { return s.firstSeen }

// row reads the next row's fields, valid until the next call, and checks
// their UTF-8. A bad row comes back as Next returns it: what could be read
// of it, and a RowError.
func (s *csvSource) row() (fields [][]byte, line int, bad *transform.Record, err error) {
	if s.done {
		return nil, 0, nil, io.EOF
	}
	fields, err = s.r.read()
	if err != nil {
		var pe *csv.ParseError
		switch {
		case err == io.EOF:
			s.done = true
			return nil, 0, nil, io.EOF
		case errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount):
			bad, err = s.rowError(fields, pe.StartLine, parseErr("the row has %d fields, the header has %d", len(fields), len(s.header)))
			return nil, 0, bad, err
		case errors.As(err, &pe):
			bad, err = s.rowError(fields, pe.StartLine, parseErr("line %d, column %d: %v", pe.Line, pe.Column, pe.Err))
			return nil, 0, bad, err
		default:
			s.done = true
			return nil, 0, nil, inputError(err, s.file, s.r.recLine, "")
		}
	}
	line = s.r.recLine
	// A line read in one piece is valid UTF-8 exactly when its fields are.
	if body := s.r.body; body == nil || !utf8.Valid(body) {
		for i, f := range fields {
			if !utf8.Valid(f) {
				bad, err = s.rowError(fields, line, parseErr("column %q is not valid UTF-8: %q", s.header[i], f))
				return nil, 0, bad, err
			}
		}
	}
	return fields, line, nil, nil
}

// build fills rec from a good row's fields. The strings it keeps are copied
// out of the reader's buffer.
func (s *csvSource) build(rec *transform.Record, fields [][]byte, line int) error {
	rec.File, rec.Line = s.file, line
	rec.Raw = nil
	if s.opts.KeepRaw {
		rec.Raw = appendCSVRecord(nil, fields, s.r.comma)
	}
	// One copy of the record, out of which every string is cut.
	data := s.strs.str(s.r.data)
	str := func(i int) string { return data[s.r.starts[i] : s.r.starts[i]+len(fields[i])] }
	rec.ID = str(s.idCol)
	rec.Parent = str(s.parCol)
	for i, f := range fields {
		if len(f) == 0 || i == s.idCol || i == s.parCol {
			continue
		}
		v, _, err := s.cell(i, f, str)
		if err != nil {
			return &transform.RowError{File: s.file, Line: line, ID: rec.ID, Err: err}
		}
		rec.Attrs[s.header[i]] = v
	}
	return nil
}

// cell checks one non-empty cell against its column's type. With str (the
// text of a column, kept), it returns the cell's value; without, its
// DynamoDB size (transform.ValueSize of the value it would build). Both
// reads go through here, so that they report the same errors.
func (s *csvSource) cell(col int, f []byte, str func(col int) string) (types.AttributeValue, int, error) {
	build := str != nil
	switch s.typ[col] {
	case 'N':
		if err := ddbjson.CheckNumber(transientString(f)); err != nil {
			return nil, 0, parseErr("column %q (N): %q is not a number DynamoDB can store: %s",
				s.header[col], f, strings.TrimPrefix(strings.TrimPrefix(err.Error(), ddbjson.ErrNumber.Error()), ": "))
		}
		if !build {
			return nil, numberSize(f), nil
		}
		return s.slab.n(str(col)), 0, nil
	case 'b':
		var v bool
		switch {
		case len(f) == 1 && f[0] == '1' || bytes.EqualFold(f, []byte("true")):
			v = true
		case len(f) == 1 && f[0] == '0' || bytes.EqualFold(f, []byte("false")):
			v = false
		default:
			return nil, 0, parseErr("column %q (BOOL): %q is not true, false, 1 or 0", s.header[col], f)
		}
		if !build {
			return nil, 1, nil
		}
		return &types.AttributeValueMemberBOOL{Value: v}, 0, nil
	case 'J':
		// The decoder copies what it keeps out of f.
		v, err := ddbjson.DecodePlainValue(f)
		if err != nil {
			return nil, 0, parseErr("column %q (JSON): %q is not valid JSON: %s", s.header[col], shorten(string(f)), plainErr(err))
		}
		if build {
			return v, 0, nil
		}
		return nil, transform.ValueSize(v), nil
	case 'B':
		enc := base64.StdEncoding
		if len(f)%4 != 0 {
			enc = base64.RawStdEncoding
		}
		var dst []byte
		if build {
			dst = make([]byte, enc.DecodedLen(len(f)))
		} else {
			s.b64 = slices.Grow(s.b64[:0], enc.DecodedLen(len(f)))
			dst = s.b64[:enc.DecodedLen(len(f))]
		}
		n, err := enc.Decode(dst, f)
		if err != nil {
			return nil, 0, parseErr("column %q (B): %q is not base64: %v", s.header[col], shorten(string(f)), err)
		}
		if !build {
			return nil, n, nil
		}
		return &types.AttributeValueMemberB{Value: dst[:n]}, 0, nil
	}
	if !build {
		return nil, len(f), nil
	}
	return s.slab.s(str(col)), 0, nil
}

// numberSize is transform.NumberSize of a number CheckNumber accepts, in
// one pass over its bytes: one byte per two significant digits of the
// mantissa, plus one (TestNumberSizeMatches holds the two together).
func numberSize(f []byte) int {
	first, last, digits := -1, -1, 0
	for _, c := range f {
		switch {
		case c >= '1' && c <= '9':
			if first < 0 {
				first = digits
			}
			last = digits
			digits++
		case c == '0':
			digits++
		case c == 'e' || c == 'E':
			goto done
		}
	}
done:
	if first < 0 {
		return 1
	}
	return (last-first+1+1)/2 + 1
}

// rowError returns a bad row: what could be read of it, and the error.
func (s *csvSource) rowError(fields [][]byte, line int, err error) (*transform.Record, error) {
	rec := &transform.Record{File: s.file, Line: line}
	if s.idCol < len(fields) && utf8.Valid(fields[s.idCol]) {
		rec.ID = string(fields[s.idCol])
	}
	if s.parCol < len(fields) && utf8.Valid(fields[s.parCol]) {
		rec.Parent = string(fields[s.parCol])
	}
	if s.opts.KeepRaw && len(fields) > 0 {
		rec.Raw = appendCSVRecord(nil, fields, s.r.comma)
	}
	return rec, &transform.RowError{File: s.file, Line: line, ID: rec.ID, Err: err}
}

func (s *csvSource) Close() error { return s.in.Close() }

// appendCSVRecord writes fields as one CSV record, quoted where RFC 4180
// needs it, without the line ending.
func appendCSVRecord(dst []byte, fields [][]byte, comma rune) []byte {
	for i, f := range fields {
		if i > 0 {
			dst = utf8.AppendRune(dst, comma)
		}
		if !fieldNeedsQuotes(f, comma) {
			dst = append(dst, f...)
			continue
		}
		dst = append(dst, '"')
		for {
			i := bytes.IndexByte(f, '"')
			if i < 0 {
				break
			}
			dst = append(dst, f[:i+1]...)
			dst = append(dst, '"')
			f = f[i+1:]
		}
		dst = append(dst, f...)
		dst = append(dst, '"')
	}
	return dst
}

func fieldNeedsQuotes(f []byte, comma rune) bool {
	if len(f) == 0 {
		return false
	}
	if string(f) == `\.` || f[0] == ' ' || f[0] == '\t' {
		return true
	}
	return bytes.ContainsRune(f, comma) || bytes.ContainsAny(f, "\"\r\n")
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

// strChunk copies byte slices into strings carved out of shared blocks, so
// that a row's strings cost a copy each instead of an allocation each. A
// block is never written again where a string was handed out; it lives as
// long as any of its strings does.
type strChunk struct {
	buf []byte
}

const strChunkSize = 32 << 10

func (c *strChunk) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > strChunkSize/8 {
		return string(b)
	}
	if cap(c.buf)-len(c.buf) < len(b) {
		c.buf = make([]byte, 0, strChunkSize)
	}
	start := len(c.buf)
	c.buf = append(c.buf, b...)
	return unsafe.String(&c.buf[start], len(b))
}

// transientString is b as a string without a copy: valid only while b is
// not written to, so it must not be kept past the next read.
func transientString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}
