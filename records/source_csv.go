package records

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/swar"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records/infile"
	"github.com/treeport/treeport/transform"
)

// maxCSVColumns bounds the columns of a CSV input, so that a header of
// millions of short names (each column costs the reader some hundred
// bytes) cannot cost gigabytes.
const maxCSVColumns = 100_000

// csvSource reads RFC 4180 CSV with a header row.
//
// Besides Next, it has the three ways of reading the pipeline uses: a
// skeleton read (NextSkeleton), which checks every cell and measures the
// attributes without building them, a read into the caller's record
// (NextReuse), which reuses its Attrs map, and a flat read (NextFlat),
// which builds the attributes as a slice over the reader's buffer.
type csvSource struct {
	in     *infile.Input
	r      *csvReader
	file   string
	opts   SourceOptions
	header []string
	typ    []byte // the type of each column: 0 for S, or 'N', 'b' (BOOL), 'J' (JSON), 'B'
	idCol  int
	parCol int
	ncols  int // attribute columns: all but the id and the parent
	// attrCols are the indexes of those columns.
	attrCols []int
	done     bool
	slab     slab
	strs     strChunk
	b64      []byte // scratch for decoding B cells whose value is not kept

	// The flat read (NextFlat) builds each row's values in these, one per
	// column, reused from row to row.
	flat flatValues

	// The skeleton read: copyCol marks the columns a closure ancestor row
	// copies (nil: all of them), and seen the attribute columns already
	// seen filled in a good row, whose first places are in firstSeen.
	copyCol   []bool
	skelCols  []skelCol
	seen      []bool
	unseen    int
	firstSeen []AttrPlace
}

var (
	_ Source         = (*csvSource)(nil)
	_ SkeletonSource = (*csvSource)(nil)
	_ ReuseSource    = (*csvSource)(nil)
	_ FlatSource     = (*csvSource)(nil)
)

// flatValues are the values of one row of the flat read, one of each kind
// per column, reused from row to row.
type flatValues struct {
	s    []types.AttributeValueMemberS
	n    []types.AttributeValueMemberN
	bool []types.AttributeValueMemberBOOL
	b    []types.AttributeValueMemberB
	bbuf [][]byte // the decoded bytes of each B column
	// full is a row's attributes when no cell is empty: one for each of
	// attrCols, its value the column's value above (a JSON column's is set
	// for each row). some is the scratch for a row with empty cells.
	full, some []layouts.Attr
	cols       []flatCol
}

// flatCol is what NextFlat needs of an attribute column: its index, its
// type and, for S and N, the value it fills.
type flatCol struct {
	col int
	typ byte
	s   *types.AttributeValueMemberS
	n   *types.AttributeValueMemberN
}

// initFlat makes the flat read's values.
func (s *csvSource) initFlat() {
	n := len(s.header)
	s.flat = flatValues{
		s: make([]types.AttributeValueMemberS, n), n: make([]types.AttributeValueMemberN, n),
		bool: make([]types.AttributeValueMemberBOOL, n), b: make([]types.AttributeValueMemberB, n),
		bbuf: make([][]byte, n),
	}
	for _, i := range s.attrCols {
		var v types.AttributeValue
		switch s.typ[i] {
		case 0:
			v = &s.flat.s[i]
		case 'N':
			v = &s.flat.n[i]
		case 'b':
			v = &s.flat.bool[i]
		case 'B':
			v = &s.flat.b[i]
		}
		s.flat.full = append(s.flat.full, layouts.Attr{Name: s.header[i], Value: v})
		s.flat.cols = append(s.flat.cols, flatCol{col: i, typ: s.typ[i], s: &s.flat.s[i], n: &s.flat.n[i]})
	}
}

func openCSV(path string, opts SourceOptions) (Source, error) {
	in, err := infile.Open(path)
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

func newCSVSource(in *infile.Input, file string, opts SourceOptions) (*csvSource, error) {
	// A UTF-8 byte order mark is not part of the first column's name.
	if bom, _ := in.R.Peek(3); string(bom) == "\uFEFF" {
		in.R.Discard(3)
	}
	comma := ','
	if opts.CSVDelimiter != 0 {
		comma = opts.CSVDelimiter
	}
	if !validDelim(comma) {
		return nil, fmt.Errorf("%w: %s: %q cannot separate CSV fields; choose another --csv-delimiter", infile.ErrInvalid, file, comma)
	}
	r := newCSVReader(in.R, comma)
	r.keepRaw = opts.KeepRaw
	s := &csvSource{in: in, r: r, file: file, opts: opts, slab: slab{Slab: ddbjson.Slab{Size: slabSize}}}
	header, err := r.read()
	if err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("%w: %s is empty: a CSV input needs a header row naming its columns", infile.ErrInvalid, file)
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) && pe.Err == errLongRecord {
			return nil, fmt.Errorf("%w: %s:1: the header row is longer than %s, the limit of one record", infile.ErrInvalid, file, infile.LimitText(r.limit))
		}
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%w: %s: the header row cannot be read: %v", infile.ErrInvalid, file, pe)
		}
		return nil, fmt.Errorf("importer: %s: reading the header: %w", file, infile.NextError(err, file, 1, ""))
	}
	if len(header) > maxCSVColumns {
		// Each column costs some hundred bytes before any row is read.
		return nil, fmt.Errorf("%w: %s:1: the header row has %d columns, over %d, the limit of columns",
			infile.ErrInvalid, file, len(header), maxCSVColumns)
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
		if len(name) > transform.MaxAttrNameBytes {
			return nil, fmt.Errorf("%w: %s:1: the name of column %d is %d bytes; DynamoDB's limit for an attribute name is %d (under 64 KB)",
				infile.ErrInvalid, file, i+1, len(name), transform.MaxAttrNameBytes)
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
	for i := range s.header {
		if i != s.idCol && i != s.parCol {
			s.attrCols = append(s.attrCols, i)
		}
	}
	return s, nil
}

// NextFlat reads the next row into rec as Next would return it, with the
// attributes as a slice in column order (rec.Attrs is left nil). Nothing is
// copied: rec.Flat, its values and their strings, and rec.Raw are the
// source's, valid until the next call, and so are the strings of a
// returned RowError (the caller clones what it keeps).
func (s *csvSource) NextFlat(_ context.Context, rec *FlatRecord) error {
	raw := rec.Raw[:0]
	*rec = FlatRecord{}
	line, bad, err := s.row()
	if err != nil {
		if bad != nil {
			rec.Record = *bad
		}
		return err
	}
	rec.File, rec.Line = s.file, line
	if s.opts.KeepRaw {
		rec.Raw = appendCSVRecord(raw, s.r.fieldSlices(), s.r.comma)
	}
	rec.ID = transientString(s.r.field(s.idCol))
	rec.Parent = transientString(s.r.field(s.parCol))
	if s.flat.s == nil {
		s.initFlat()
	}
	full := s.flat.full
	empty := false
	data, bounds := s.r.data, s.r.bounds
	bp := rowBounds(bounds, len(s.header), len(data))
	dp := unsafe.Pointer(unsafe.SliceData(data))
	cols := s.flat.cols // not s.flat.cols in the loop, which each store below would make it read again
	for j := range cols {
		c := &cols[j]
		a, b := cellAt(bp, c.col)
		if a == b {
			empty = true
			continue
		}
		// Text, and the common numbers, into the column's value, without
		// cellFlat's generality.
		switch c.typ {
		case 0:
			c.s.Value = unsafe.String((*byte)(unsafe.Add(dp, a)), b-a)
			continue
		case 'N':
			if quickNumberOK(data, a, b) {
				c.n.Value = unsafe.String((*byte)(unsafe.Add(dp, a)), b-a)
				continue
			}
		}
		f := data[a:b:b]
		v, err := s.cellFlat(c.col, f)
		if err != nil {
			return &transform.RowError{File: s.file, Line: line, ID: rec.ID, Err: err}
		}
		full[j].Value = v // the same, but for a JSON column's fresh value
	}
	if !empty {
		rec.Flat = full
		return nil
	}
	some := s.flat.some[:0]
	for j, i := range s.attrCols {
		if bounds[2*i] != bounds[2*i+1] {
			some = append(some, full[j])
		}
	}
	s.flat.some = some
	rec.Flat = some
	return nil
}

// Next reads the next row. Ragged rows, quoting errors, invalid UTF-8 and
// values that do not fit their column's type are RowErrors; reading goes on
// with the next row.
func (s *csvSource) Next(ctx context.Context) (*transform.Record, error) {
	line, bad, err := s.row()
	if err != nil {
		return bad, err
	}
	rec := s.slab.record()
	rec.Attrs = make(transform.Attrs, s.ncols)
	return rec, s.build(rec, s.r.fieldSlices(), line)
}

// NextReuse reads the next row into rec as Next would return it, reusing
// rec.Attrs (cleared first; made when nil). The attribute values and the
// strings are fresh, as Next's are: only the map is reused. With an error
// that Next returns no record for, rec is left empty but for its map.
func (s *csvSource) NextReuse(_ context.Context, rec *transform.Record) error {
	attrs := rec.Attrs
	if attrs == nil {
		attrs = make(transform.Attrs, s.ncols)
	} else {
		clear(attrs)
	}
	line, bad, err := s.row()
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
	return s.build(rec, s.r.fieldSlices(), line)
}

// NextSkeleton reads the next row as the skeleton read needs it: every cell
// is checked as Next checks it, with the same errors, but only the sizes of
// the attributes are kept. row.ID and row.Parent are valid until the next
// call; the strings of a returned RowError are the caller's.
func (s *csvSource) NextSkeleton(_ context.Context, row *SkeletonRow) error {
	line, bad, err := s.row()
	if err != nil {
		*row = SkeletonRow{}
		if bad != nil {
			row.ID, row.Parent, row.File, row.Line = bad.ID, bad.Parent, bad.File, bad.Line
		}
		return err
	}
	row.File, row.Line = s.file, line
	row.ID = transientString(s.r.field(s.idCol))
	row.Parent = transientString(s.r.field(s.parCol))
	if s.skelCols == nil && len(s.attrCols) > 0 {
		s.Skeleton(nil)
	}
	size, copyBytes := 0, 0
	data, bounds := s.r.data, s.r.bounds
	bp := rowBounds(bounds, len(s.header), len(data))
	for _, c := range s.skelCols {
		a, b := cellAt(bp, c.col)
		if a == b {
			continue
		}
		// Text, and the common numbers, without cell's generality.
		n := b - a
		switch c.typ {
		case 0:
		case 'N':
			var ok bool
			if n, ok = quickNumberIn(data, a, b); ok {
				break
			}
			fallthrough
		default:
			var err error
			if _, n, err = s.cell(c.col, data[a:b:b], nil); err != nil {
				return &transform.RowError{File: s.file, Line: line, ID: strings.Clone(row.ID), Err: err}
			}
		}
		n += c.nameLen
		size += n
		if c.copy {
			copyBytes += n
		}
	}
	row.AttrBytes, row.CopyBytes = size, copyBytes
	if s.unseen > 0 {
		s.markSeen(s.r.fieldSlices(), line, row.ID)
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
		s.firstSeen = append(s.firstSeen, AttrPlace{Name: s.header[i], File: s.file, Line: line, ID: strings.Clone(id)})
	}
}

// Skeleton starts a skeleton read. copySet names the attributes a closure
// ancestor row copies; nil means all of them.
func (s *csvSource) Skeleton(copySet map[string]bool) {
	s.copyCol = nil
	if copySet != nil {
		s.copyCol = make([]bool, len(s.header))
		for i, name := range s.header {
			s.copyCol[i] = copySet[name]
		}
	}
	s.skelCols = s.skelCols[:0]
	for _, i := range s.attrCols {
		s.skelCols = append(s.skelCols, skelCol{col: i, typ: s.typ[i], copy: s.copyCol == nil || s.copyCol[i], nameLen: len(s.header[i])})
	}
}

// skelCol is what NextSkeleton needs of an attribute column.
type skelCol struct {
	col     int
	nameLen int
	typ     byte
	copy    bool // a closure ancestor row copies it
}

// AttrsSeen returns each attribute name that a good row read by
// NextSkeleton had, with the first place it was seen, in that order.
func (s *csvSource) AttrsSeen() []AttrPlace { return s.firstSeen }

// row reads the next row, whose fields are then the reader's (s.r.field,
// or s.r.data and s.r.bounds), valid until the next call, and checks their
// UTF-8. A bad row comes back as Next returns it: what could be read of it,
// and a RowError.
func (s *csvSource) row() (line int, bad *transform.Record, err error) {
	if s.done {
		return 0, nil, io.EOF
	}
	if err = s.r.next(); err == nil && s.r.ascii {
		return s.r.recLine, nil, nil // the usual row, at the cost of a call less
	}
	return s.rowChecked(err)
}

// rowChecked is the rest of row, once the reader's next has returned err:
// a row that is not all ASCII, and the errors.
func (s *csvSource) rowChecked(err error) (line int, bad *transform.Record, _ error) {
	if err != nil {
		var pe *csv.ParseError
		switch {
		case err == io.EOF:
			s.done = true
			return 0, nil, io.EOF
		case errors.As(err, &pe) && pe.Err == errLongRecord:
			// Nothing of it was kept, not even its id: the rejects
			// file gets its place and the reason.
			bad = &transform.Record{File: s.file, Line: pe.StartLine}
			return 0, bad, &transform.RowError{File: s.file, Line: pe.StartLine, Err: parseErr(
				"the record is longer than %s, the limit of one record (no DynamoDB item is over 400 KB); it is skipped to its end",
				infile.LimitText(s.r.limit))}
		case errors.As(err, &pe) && pe.Err == errLongField:
			fields := s.r.fieldSlices()
			name := fmt.Sprintf("column %d", pe.Column)
			if pe.Column <= len(s.header) {
				name = fmt.Sprintf("column %q", s.header[pe.Column-1])
			}
			bad, err = s.rowError(fields, pe.StartLine, parseErr("%s is %d bytes, over %s, the limit of one field (no DynamoDB item is over 400 KB)",
				name, len(fields[pe.Column-1]), infile.LimitText(infile.MaxFieldBytes)))
			return 0, bad, err
		case errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount):
			fields := s.r.fieldSlices()
			bad, err = s.rowError(fields, pe.StartLine, parseErr("the row has %d fields, the header has %d", len(fields), len(s.header)))
			return 0, bad, err
		case errors.As(err, &pe):
			bad, err = s.rowError(s.r.fieldSlices(), pe.StartLine, parseErr("line %d, column %d: %v", pe.Line, pe.Column, pe.Err))
			if s.opts.KeepRaw {
				// The fields read before the problem are not the record:
				// give back its lines as they came in.
				bad.Raw = append([]byte(nil), bytes.TrimSuffix(bytes.TrimSuffix(s.r.raw, []byte("\n")), []byte("\r"))...)
			}
			return 0, bad, err
		default:
			s.done = true
			return 0, nil, infile.NextError(err, s.file, s.r.recLine, "")
		}
	}
	line = s.r.recLine
	// A line read in one piece is valid UTF-8 exactly when its fields are.
	if body := s.r.body; !s.r.ascii && (body == nil || !utf8.Valid(body)) {
		for i, f := range s.r.fieldSlices() {
			if !utf8.Valid(f) {
				bad, err = s.rowError(s.r.fieldSlices(), line, parseErr("column %q is not valid UTF-8: %q", s.header[i], f))
				return 0, bad, err
			}
		}
	}
	return line, nil, nil
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
// DynamoDB size (transform.ValueSize of the value it would build). Every
// read goes through here or cellFlat, and both through checkCell, so that
// they report the same errors.
func (s *csvSource) cell(col int, f []byte, str func(col int) string) (types.AttributeValue, int, error) {
	build := str != nil
	var dst []byte
	if s.typ[col] == 'B' {
		n := base64DecodedLen(f)
		if build {
			dst = make([]byte, n)
		} else {
			s.b64 = slices.Grow(s.b64[:0], n)
			dst = s.b64[:n]
		}
	}
	c, err := s.checkCell(col, f, dst)
	if err != nil {
		return nil, 0, err
	}
	switch s.typ[col] {
	case 'N':
		if !build {
			return nil, numberSize(f), nil
		}
		return s.slab.N(str(col)), 0, nil
	case 'b':
		if !build {
			return nil, 1, nil
		}
		return &types.AttributeValueMemberBOOL{Value: c.bool}, 0, nil
	case 'J':
		if build {
			return c.json, 0, nil
		}
		return nil, transform.ValueSize(c.json), nil
	case 'B':
		if !build {
			return nil, len(c.bytes), nil
		}
		return &types.AttributeValueMemberB{Value: c.bytes}, 0, nil
	}
	if !build {
		return nil, len(f), nil
	}
	return s.slab.S(str(col)), 0, nil
}

// cellFlat is cell for the flat read: the value is built in the column's
// reused value, over f itself, without a copy (only a JSON cell's value is
// fresh).
func (s *csvSource) cellFlat(col int, f []byte) (types.AttributeValue, error) {
	var dst []byte
	if s.typ[col] == 'B' {
		s.flat.bbuf[col] = slices.Grow(s.flat.bbuf[col][:0], base64DecodedLen(f))
		dst = s.flat.bbuf[col][:base64DecodedLen(f)]
	}
	c, err := s.checkCell(col, f, dst)
	if err != nil {
		return nil, err
	}
	switch s.typ[col] {
	case 'N':
		v := &s.flat.n[col]
		v.Value = transientString(f)
		return v, nil
	case 'b':
		v := &s.flat.bool[col]
		v.Value = c.bool
		return v, nil
	case 'J':
		return c.json, nil
	case 'B':
		v := &s.flat.b[col]
		v.Value = c.bytes
		return v, nil
	}
	v := &s.flat.s[col]
	v.Value = transientString(f)
	return v, nil
}

// checked is what checkCell found in a cell: a BOOL's value, a JSON cell's
// value, a B cell's bytes.
type checked struct {
	bool  bool
	json  types.AttributeValue
	bytes []byte
}

// base64DecodedLen is the room a B cell's bytes need.
func base64DecodedLen(f []byte) int {
	if len(f)%4 != 0 {
		return base64.RawStdEncoding.DecodedLen(len(f))
	}
	return base64.StdEncoding.DecodedLen(len(f))
}

// checkCell checks one non-empty cell against its column's type, with the
// error every read reports. A B cell is decoded into dst, which has
// base64DecodedLen(f) bytes.
func (s *csvSource) checkCell(col int, f []byte, dst []byte) (checked, error) {
	var c checked
	switch s.typ[col] {
	case 'N':
		if err := ddbjson.CheckNumber(transientString(f)); err != nil {
			return c, parseErr("column %q (N): %q is not a number DynamoDB can store: %s",
				s.header[col], f, strings.TrimPrefix(strings.TrimPrefix(err.Error(), ddbjson.ErrNumber.Error()), ": "))
		}
	case 'b':
		switch {
		case len(f) == 1 && f[0] == '1' || bytes.EqualFold(f, []byte("true")):
			c.bool = true
		case len(f) == 1 && f[0] == '0' || bytes.EqualFold(f, []byte("false")):
			c.bool = false
		default:
			return c, parseErr("column %q (BOOL): %q is not true, false, 1 or 0", s.header[col], f)
		}
	case 'J':
		// The decoder copies what it keeps out of f.
		v, err := ddbjson.DecodePlainValue(f)
		if err != nil {
			return c, parseErr("column %q (JSON): %q is not valid JSON: %s", s.header[col], shorten(string(f)), plainErr(err))
		}
		// The decoder checks numbers and nesting; a map's keys are
		// DynamoDB's attribute names too.
		if err := transform.CheckAttr(s.header[col], v); err != nil {
			return c, &marked{err, transform.ErrParse}
		}
		c.json = v
	case 'B':
		enc := base64.StdEncoding
		if len(f)%4 != 0 {
			enc = base64.RawStdEncoding
		}
		n, err := enc.Decode(dst, f)
		if err != nil {
			return c, parseErr("column %q (B): %q is not base64: %v", s.header[col], shorten(string(f)), err)
		}
		c.bytes = dst[:n]
	}
	return c, nil
}

// quickNumber is ddbjson.CheckNumber and numberSize at once for the common
// numbers: an optional sign, then digits with at most one point, at least
// one digit, no exponent, and at most 38 bytes in all. Such a number has at
// most 38 significant digits and a magnitude between 1E-38 and 1E+38, well
// within DynamoDB's limits, so CheckNumber accepts it. For anything else it
// returns false, and the caller asks CheckNumber (TestQuickNumber holds the
// two together).
func quickNumber(f []byte) (size int, ok bool) {
	if len(f) == 0 || len(f) > ddbjson.MaxNumberDigits {
		return 0, false
	}
	i := 0
	if f[0] == '-' || f[0] == '+' {
		i = 1
	}
	first, last, digits := -1, -1, 0
	point := false
	for ; i < len(f); i++ {
		switch c := f[i]; {
		case c-'1' < 9:
			if first < 0 {
				first = digits
			}
			last = digits
			digits++
		case c == '0':
			digits++
		case c == '.' && !point:
			point = true
		default:
			return 0, false
		}
	}
	switch {
	case digits == 0:
		return 0, false
	case first < 0:
		return 1, true
	}
	return (last-first+1+1)/2 + 1, true
}

// quickNumberIn is quickNumber(data[a:b]). A number of up to 8 bytes with
// 8 bytes of data before its end, the common case, is checked and measured
// a word at a time.
func quickNumberIn(data []byte, a, b int) (size int, ok bool) {
	k := b - a
	if k <= 0 || k > 8 || b < 8 || b > len(data) {
		return quickNumber(data[a:b])
	}
	w := binary.LittleEndian.Uint64(data[b-8:b]) >> (8 * uint(8-k)) // the field in the low k bytes
	if c := byte(w); c == '-' || c == '+' {
		w, k = w>>8, k-1
	}
	digit, dot, t, ok := numberBits(w, k)
	if !ok {
		return 0, false
	}
	nz := digit &^ swar.ZeroBytes(t) // the digits that are not 0
	if nz == 0 {
		return 1, true
	}
	first := bits.TrailingZeros64(nz) >> 3
	last := (63 - bits.LeadingZeros64(nz)) >> 3
	n := last - first + 1 // the significant digits, and the point between them
	if dot != 0 {
		if p := bits.TrailingZeros64(dot) >> 3; first < p && p < last {
			n--
		}
	}
	return (n+1)/2 + 1, true
}

// quickNumberOK is quickNumberIn without the size, for the second read,
// which needs only to know that the number is one.
func quickNumberOK(data []byte, a, b int) bool {
	k := b - a
	if k <= 0 || k > 8 || b < 8 || b > len(data) {
		_, ok := quickNumber(data[a:b])
		return ok
	}
	w := binary.LittleEndian.Uint64(data[b-8:b]) >> (8 * uint(8-k)) // the field in the low k bytes
	if c := byte(w); c == '-' || c == '+' {
		w, k = w>>8, k-1
	}
	_, _, _, ok := numberBits(w, k)
	return ok
}

// numberBits checks the number in the low k bytes of w (zeros above, its
// sign shifted out), a word at a time: digit has the high bit of each
// digit's byte, dot that of its point, and t is the word with '0' taken
// from each byte.
func numberBits(w uint64, k int) (digit, dot, t uint64, ok bool) {
	low := swar.MSBs >> (64 - 8*uint(k)) // the high bit of each of the k bytes
	t = w ^ (swar.LSBs * '0')            // digits become 0 to 9
	digit = ^(t&swar.Low7s + swar.LSBs*(0x80-10)) &^ t & low
	dot = swar.ZeroBytes(w^(swar.LSBs*'.')) & low
	// Only digits and one point at most, and a digit (none when k is 0).
	return digit, dot, t, digit != 0 && (digit|dot)^low|dot&(dot-1) == 0
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
	recs         []transform.Record
	ddbjson.Slab // the S and N values
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

// rowBounds returns the pointer cellAt reads a good row's field bounds
// from, having checked once that they hold cols fields and that the last
// ends within the data's length (the bounds go up: a field ends where the
// next starts, or before).
func rowBounds(bounds []int, cols, data int) unsafe.Pointer {
	if len(bounds) < 2*cols || cols > 0 && bounds[2*cols-1] > data {
		panic("importer: a good row without all its fields")
	}
	return unsafe.Pointer(unsafe.SliceData(bounds))
}

// cellAt returns the bounds of field col of the row rowBounds checked.
func cellAt(bp unsafe.Pointer, col int) (a, b int) {
	ab := *(*[2]int)(unsafe.Add(bp, uintptr(2*col)*intSize))
	return ab[0], ab[1]
}
