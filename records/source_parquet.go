package records

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/records/internal/thriftscan"
	"github.com/treeport/treeport/transform"
)

// parquetSource reads a Parquet file row group by row group, a batch of
// rows at a time, so that a file of any size is read in bounded memory.
//
// Rows are read as parquet.Row, the flat list of leaf values with their
// repetition and definition levels, and reassembled here from the schema
// (the record assembly of the Dremel paper), so that every logical type is
// seen and typed as DynamoDB wants it.
type parquetSource struct {
	f      *os.File
	file   string
	opts   SourceOptions
	root   *pqNode
	ncols  int
	groups []parquet.RowGroup
	gi     int
	rows   parquet.Rows
	batch  []parquet.Row
	n, i   int
	rowNo  int // 1-based number of the last row returned
	cols   [][]parquet.Value
	done   bool
	total  int64 // the rows the footer counts

	// What the row groups' page headers are checked against (see
	// checkRowGroup) before parquet-go reads them.
	r         io.ReaderAt
	size      int64
	meta      *format.FileMetaData
	maxMemory int64 // pqMaxMemory, lower in the fuzz test
}

// Records is how many rows the file's footer counts, which ReadInput sizes
// the forest by, at most one a byte of the file (a footer is not to be
// trusted further) and MaxCount.
func (s *parquetSource) Records() int {
	n := min(s.total, MaxCount)
	if info, err := s.f.Stat(); err == nil {
		n = min(n, info.Size())
	}
	return int(max(n, 0))
}

var _ Source = (*parquetSource)(nil)

const parquetBatch = 64

func openParquet(path string, opts SourceOptions) (Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("importer: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("importer: %w", err)
	}
	s, err := newParquetSource(f, fi.Size(), path, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	s.f = f
	return s, nil
}

func newParquetSource(r io.ReaderAt, size int64, file string, opts SourceOptions) (s *parquetSource, err error) {
	var magic [4]byte
	if n, _ := r.ReadAt(magic[:], 0); n == 4 {
		switch {
		case bytes.HasPrefix(magic[:], []byte{0x1f, 0x8b}):
			return nil, fmt.Errorf("importer: %s is gzip-compressed; Parquet needs random access, so decompress it first (gunzip)", file)
		case bytes.Equal(magic[:], []byte{0x28, 0xb5, 0x2f, 0xfd}):
			return nil, fmt.Errorf("importer: %s is zstd-compressed; Parquet needs random access, so decompress it first (unzstd)", file)
		}
	}
	// The footer's length is checked here because parquet-go allocates it
	// before it compares it with the file's size.
	var tail [8]byte
	if size < 12 {
		return nil, fmt.Errorf("importer: %s is not a Parquet file: it is %d bytes long", file, size)
	}
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return nil, fmt.Errorf("importer: reading %s: %w", file, err)
	}
	switch footer := int64(binary.LittleEndian.Uint32(tail[:4])); string(tail[4:]) {
	case "PARE":
		// parquet-go would allocate the footer's length, up to 4 GiB,
		// before it compares it with the file's size, and then need keys.
		return nil, fmt.Errorf("importer: %s is an encrypted Parquet file (its footer is encrypted), which treeport cannot read", file)
	case "PAR1":
		if footer > size-12 {
			return nil, fmt.Errorf("importer: %s is not a Parquet file that can be read: its footer would be %d bytes long, and the file is %d", file, footer, size)
		}
		// parquet-go sizes the footer's lists by the counts they declare,
		// which a corrupt footer can make any size up to 2^31 (a list of
		// 2^31 schema elements is 192 GiB: a crash, not an error). The
		// footer is checked to hold what it declares first.
		b := make([]byte, footer)
		if _, err := r.ReadAt(b, size-8-footer); err != nil {
			return nil, fmt.Errorf("importer: reading %s: %w", file, err)
		}
		if _, err := thriftscan.Struct(b, true); err != nil {
			return nil, fmt.Errorf("importer: %s is not a Parquet file that can be read: its footer (metadata) is corrupt: %w", file, err)
		}
	}
	// parquet-go panics on some malformed files; a bad file is an error
	// here, never a crash.
	defer func() {
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("importer: %s is not a Parquet file that can be read: %v", file, p)
		}
	}()
	// Pages are read synchronously, in this goroutine, so that a panic in
	// parquet-go is recovered here and in readBatch.
	pf, err := parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true), parquet.FileReadMode(parquet.ReadModeSync))
	if err != nil {
		return nil, fmt.Errorf("importer: %s is not a Parquet file that can be read: %w", file, err)
	}
	root, err := compileParquet(pf.Root(), "", "")
	if err != nil {
		return nil, fmt.Errorf("importer: %s: %w", file, err)
	}
	if root.kind != pqStruct {
		return nil, fmt.Errorf("importer: %s: the schema's root is not a group of columns", file)
	}
	root.optional = false
	s = &parquetSource{
		total:  pf.NumRows(),
		file:   file,
		opts:   opts,
		root:   root,
		ncols:  root.ncols,
		groups: pf.RowGroups(),
		batch:  make([]parquet.Row, parquetBatch),
		cols:   make([][]parquet.Value, root.ncols),

		r:         r,
		size:      size,
		meta:      pf.Metadata(),
		maxMemory: pqMaxMemory,
	}
	if len(s.meta.RowGroups) != len(s.groups) { // checkRowGroup needs them to be the same
		return nil, fmt.Errorf("importer: %s is not a Parquet file that can be read: its footer lists %d row groups, of which parquet-go opened %d",
			file, len(s.meta.RowGroups), len(s.groups))
	}
	return s, nil
}

// Next reads the next row. A value DynamoDB cannot hold (NaN, a number out
// of its range, invalid UTF-8 in a string) is a RowError, and reading goes
// on. Data that cannot be decoded ends the stream with a RowError.
func (s *parquetSource) Next(ctx context.Context) (*transform.Record, error) {
	for !s.done {
		if s.i < s.n {
			row := s.batch[s.i]
			s.i++
			s.rowNo++
			return s.record(row)
		}
		if err := s.readBatch(); err != nil {
			s.done = true
			return nil, &transform.RowError{File: s.file, Line: s.rowNo + 1, Unit: "row", Err: &marked{parseErr("the data cannot be decoded (%v); reading stops here", err), ErrRestUnreadable}}
		}
	}
	return nil, io.EOF
}

// readBatch reads the next rows into s.batch, moving on to the next row
// group as one ends.
func (s *parquetSource) readBatch() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	s.i, s.n = 0, 0
	for s.n == 0 {
		if s.rows == nil {
			if s.gi >= len(s.groups) {
				s.done = true
				return nil
			}
			if err := s.checkRowGroup(s.gi); err != nil {
				return err
			}
			s.rows = s.groups[s.gi].Rows()
			s.gi++
		}
		n, err := s.rows.ReadRows(s.batch)
		s.n = n
		if err == io.EOF || (err == nil && n == 0) {
			s.rows.Close()
			s.rows = nil
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// record turns one row into a record.
func (s *parquetSource) record(row parquet.Row) (*transform.Record, error) {
	rec := &transform.Record{File: s.file, Line: s.rowNo}
	fail := func(err error) (*transform.Record, error) {
		return rec, &transform.RowError{File: s.file, Line: s.rowNo, Unit: "row", ID: rec.ID, Err: err}
	}
	for i := range s.cols {
		s.cols[i] = nil
	}
	for j := 0; j < len(row); {
		c := row[j].Column()
		k := j + 1
		for k < len(row) && row[k].Column() == c {
			k++
		}
		if c < 0 || c >= s.ncols || s.cols[c] != nil {
			return fail(parseErr("the row's values are out of order (column %d)", c))
		}
		s.cols[c] = row[j:k]
		j = k
	}
	for c, vals := range s.cols {
		if len(vals) == 0 {
			return fail(parseErr("the row has no value for column %d", c))
		}
	}
	a := assembler{}
	v, _ := a.assemble(s.root, pqLevels{}, s.cols)
	m, _ := v.(*types.AttributeValueMemberM)
	if m == nil {
		return fail(parseErr("the row cannot be reassembled: %v", a.err))
	}
	rec.Attrs = m.Value
	if s.opts.KeepRaw {
		rec.Raw = appendPlainJSON(nil, m)
	}
	if a.err != nil {
		rec.ID, _ = takeKey(rec.Attrs, s.opts.idField(), "id")
		rec.Parent, _ = takeKey(rec.Attrs, s.opts.parentField(), "parent")
		return fail(a.err)
	}
	if err := takeIDs(rec, s.opts); err != nil {
		return fail(err)
	}
	return rec, nil
}

func (s *parquetSource) Close() error {
	if s.rows != nil {
		s.rows.Close()
		s.rows = nil
	}
	if s.f != nil {
		return s.f.Close()
	}
	return nil
}

// pqNode is a schema node compiled for assembly.
type pqNode struct {
	name     string
	path     string // for messages: a.b[].c
	kind     int
	optional bool
	leaf     leafConv  // pqLeaf
	typ      string    // pqLeaf: the column's type, for messages
	elem     *pqNode   // pqList
	key, val *pqNode   // pqMap
	fields   []*pqNode // pqStruct
	ncols    int       // leaf columns under the node
}

const (
	pqLeaf = iota
	pqList
	pqMap
	pqStruct
)

type leafConv func(v parquet.Value) (types.AttributeValue, error)

// compileParquet compiles a schema node: lists (the LIST annotation, with
// the spec's backward-compatibility rules, and bare repeated fields), maps,
// groups (structs) and leaves.
func compileParquet(n parquet.Node, name, path string) (*pqNode, error) {
	if n.Repeated() {
		// A bare repeated field is a list of required elements.
		elem, err := compileRequired(n, name, path+"[]")
		if err != nil {
			return nil, err
		}
		return &pqNode{name: name, path: path, kind: pqList, elem: elem, ncols: elem.ncols}, nil
	}
	p, err := compileRequired(n, name, path)
	if err != nil {
		return nil, err
	}
	p.optional = n.Optional()
	return p, nil
}

func compileRequired(n parquet.Node, name, path string) (*pqNode, error) {
	p := &pqNode{name: name, path: path}
	if n.Leaf() {
		conv, err := leafConverter(n.Type())
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", path, err)
		}
		p.kind, p.leaf, p.typ, p.ncols = pqLeaf, conv, n.Type().String(), 1
		return p, nil
	}
	fields := n.Fields()
	var lt any
	if l := n.Type().LogicalType(); l != nil {
		lt = l.Value
	}
	switch lt.(type) {
	case *format.ListType:
		if len(fields) != 1 || !fields[0].Repeated() {
			return nil, fmt.Errorf("column %s: a LIST is not one repeated field", path)
		}
		rep := fields[0]
		var elem *pqNode
		var err error
		switch {
		case rep.Leaf():
			elem, err = compileRequired(rep, "element", path+"[]")
		case len(rep.Fields()) == 1 && rep.Name() != "array" && rep.Name() != name+"_tuple":
			elem, err = compileParquet(rep.Fields()[0], "element", path+"[]")
		default: // the repeated group is the element (a struct)
			elem, err = compileRequired(rep, "element", path+"[]")
		}
		if err != nil {
			return nil, err
		}
		p.kind, p.elem, p.ncols = pqList, elem, elem.ncols
		return p, nil
	case *format.MapType:
		if len(fields) != 1 || !fields[0].Repeated() || fields[0].Leaf() || len(fields[0].Fields()) != 2 {
			return nil, fmt.Errorf("column %s: a MAP is not one repeated group of a key and a value", path)
		}
		kv := fields[0].Fields()
		kf, vf := kv[0], kv[1]
		if kv[0].Name() == "value" && kv[1].Name() == "key" {
			kf, vf = vf, kf
		}
		if !kf.Leaf() {
			return nil, fmt.Errorf("column %s: map keys must be strings or numbers", path)
		}
		key, err := compileParquet(kf, "key", path+".key")
		if err != nil {
			return nil, err
		}
		val, err := compileParquet(vf, "value", path+".value")
		if err != nil {
			return nil, err
		}
		p.kind, p.key, p.val, p.ncols = pqMap, key, val, key.ncols+val.ncols
		return p, nil
	}
	p.kind = pqStruct
	for _, f := range fields {
		if f.Name() == "" || !utf8.ValidString(f.Name()) {
			return nil, fmt.Errorf("column %q in %s: a column name must be non-empty UTF-8 to be an attribute name", f.Name(), nonEmpty(path, "the schema"))
		}
		fp := f.Name()
		if path != "" {
			fp = path + "." + fp
		}
		c, err := compileParquet(f, f.Name(), fp)
		if err != nil {
			return nil, err
		}
		p.fields = append(p.fields, c)
		p.ncols += c.ncols
	}
	if p.ncols == 0 {
		if path == "" {
			return nil, errors.New("the schema has no columns")
		}
		return nil, fmt.Errorf("column %s is a group without columns", path)
	}
	return p, nil
}

// pqLevels are the repetition and definition levels reached at a node.
type pqLevels struct{ rep, def int }

// assembler rebuilds one row. A value that cannot be converted is replaced
// by its text, so that the rest of the row (its id, its Raw) can still be
// read, and the first such problem is kept in err.
type assembler struct{ err error }

func (a *assembler) failf(format string, args ...any) {
	if a.err == nil {
		a.err = parseErr(format, args...)
	}
}

// assemble builds the value of node p from the values of its leaf columns.
// It returns false when the value is null.
func (a *assembler) assemble(p *pqNode, lv pqLevels, cols [][]parquet.Value) (types.AttributeValue, bool) {
	if p.optional {
		lv.def++
		if cols[0][0].DefinitionLevel() < lv.def {
			return nil, false
		}
	}
	switch p.kind {
	case pqLeaf:
		v := cols[0][0]
		if v.IsNull() {
			return nil, false
		}
		av, err := p.leaf(v)
		if err != nil {
			a.failf("column %q (%s): %v", p.path, p.typ, err)
			return &types.AttributeValueMemberS{Value: v.String()}, true
		}
		return av, true
	case pqStruct:
		m := make(map[string]types.AttributeValue, len(p.fields))
		off := 0
		for _, f := range p.fields {
			v, ok := a.assemble(f, lv, cols[off:off+f.ncols])
			off += f.ncols
			if ok {
				m[f.name] = v
			}
		}
		return &types.AttributeValueMemberM{Value: m}, true
	case pqList:
		list := []types.AttributeValue{}
		a.elements(lv, cols, func(lv pqLevels, sub [][]parquet.Value) {
			v, ok := a.assemble(p.elem, lv, sub)
			if !ok {
				v = &types.AttributeValueMemberNULL{Value: true}
			}
			list = append(list, v)
		})
		return &types.AttributeValueMemberL{Value: list}, true
	case pqMap:
		m := map[string]types.AttributeValue{}
		a.elements(lv, cols, func(lv pqLevels, sub [][]parquet.Value) {
			k, ok := a.assemble(p.key, lv, sub[:p.key.ncols])
			var key string
			switch k := k.(type) {
			case *types.AttributeValueMemberS:
				key = k.Value
			case *types.AttributeValueMemberN:
				key = k.Value
			default:
				if ok {
					a.failf("column %q: a map key is %s; keys must be strings or numbers", p.path, typeName(k))
				} else {
					a.failf("column %q: a map key is null", p.path)
				}
				return
			}
			v, ok := a.assemble(p.val, lv, sub[p.key.ncols:])
			if !ok {
				v = &types.AttributeValueMemberNULL{Value: true}
			}
			m[key] = v
		})
		return &types.AttributeValueMemberM{Value: m}, true
	}
	return nil, false
}

// elements splits the values of a repeated node into its elements and calls
// fn for each. An empty list calls fn never.
func (a *assembler) elements(lv pqLevels, cols [][]parquet.Value, fn func(pqLevels, [][]parquet.Value)) {
	lv.rep++
	lv.def++
	if cols[0][0].DefinitionLevel() < lv.def {
		return
	}
	starts := make([]int, len(cols))
	sub := make([][]parquet.Value, len(cols))
	for starts[0] < len(cols[0]) {
		for c, vals := range cols {
			s := starts[c]
			if s >= len(vals) {
				a.failf("the row's repeated values do not line up")
				return
			}
			e := s + 1
			for e < len(vals) && vals[e].RepetitionLevel() > lv.rep {
				e++
			}
			sub[c] = vals[s:e]
			starts[c] = e
		}
		fn(lv, sub)
	}
}

// leafConverter returns how a column's values become DynamoDB values.
func leafConverter(t parquet.Type) (leafConv, error) {
	var lt any
	if l := t.LogicalType(); l != nil {
		lt = l.Value
	}
	kind := t.Kind()
	switch lt := lt.(type) {
	case *format.StringType, *format.EnumType:
		return convString, nil
	case *format.JsonType:
		return convJSON, nil
	case *format.UUIDType:
		return convUUID, nil
	case *format.DecimalType:
		scale := int(lt.Scale)
		return func(v parquet.Value) (types.AttributeValue, error) { return convDecimal(v, kind, scale) }, nil
	case *format.DateType:
		return convDate, nil
	case *format.TimeType:
		unit, err := timeUnit(lt.Unit)
		if err != nil {
			return nil, err
		}
		return func(v parquet.Value) (types.AttributeValue, error) { return convTime(v, kind, unit) }, nil
	case *format.TimestampType:
		unit, err := timeUnit(lt.Unit)
		if err != nil {
			return nil, err
		}
		return func(v parquet.Value) (types.AttributeValue, error) { return convTimestamp(v, unit) }, nil
	case *format.IntType:
		if !lt.IsSigned {
			return convUnsigned, nil
		}
	case *format.Float16Type:
		return convFloat16, nil
	case *format.NullType:
		return func(parquet.Value) (types.AttributeValue, error) {
			return &types.AttributeValueMemberNULL{Value: true}, nil
		}, nil
	}
	switch kind {
	case parquet.Boolean:
		return func(v parquet.Value) (types.AttributeValue, error) {
			return &types.AttributeValueMemberBOOL{Value: v.Boolean()}, nil
		}, nil
	case parquet.Int32:
		return func(v parquet.Value) (types.AttributeValue, error) {
			return &types.AttributeValueMemberN{Value: strconv.FormatInt(int64(v.Int32()), 10)}, nil
		}, nil
	case parquet.Int64:
		return func(v parquet.Value) (types.AttributeValue, error) {
			return &types.AttributeValueMemberN{Value: strconv.FormatInt(v.Int64(), 10)}, nil
		}, nil
	case parquet.Int96:
		return convInt96, nil
	case parquet.Float:
		return func(v parquet.Value) (types.AttributeValue, error) { return convFloat(float64(v.Float()), 32) }, nil
	case parquet.Double:
		return func(v parquet.Value) (types.AttributeValue, error) { return convFloat(v.Double(), 64) }, nil
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return func(v parquet.Value) (types.AttributeValue, error) {
			return &types.AttributeValueMemberB{Value: bytes.Clone(v.ByteArray())}, nil
		}, nil
	}
	return nil, fmt.Errorf("type %s cannot be read", t)
}

func timeUnit(u format.TimeUnit) (time.Duration, error) {
	switch u.Value.(type) {
	case *format.MilliSeconds:
		return time.Millisecond, nil
	case *format.MicroSeconds:
		return time.Microsecond, nil
	case *format.NanoSeconds:
		return time.Nanosecond, nil
	}
	return 0, fmt.Errorf("unknown time unit %v", &u)
}

func convString(v parquet.Value) (types.AttributeValue, error) {
	b := v.ByteArray()
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("the string is not valid UTF-8: %q", shorten(string(b)))
	}
	return &types.AttributeValueMemberS{Value: string(b)}, nil
}

// convJSON reads a JSON-annotated column the way a JSON source reads a
// value: object → M, array → L, number → N, and so on. treeport's own
// Parquet writer uses such columns for values of mixed or NULL types.
func convJSON(v parquet.Value) (types.AttributeValue, error) {
	b := v.ByteArray()
	av, err := ddbjson.DecodePlainValue(b)
	if err != nil {
		return nil, fmt.Errorf("the JSON column value is not valid JSON (%v): %q", err, shorten(string(b)))
	}
	return av, nil
}

func convUUID(v parquet.Value) (types.AttributeValue, error) {
	b := v.ByteArray()
	if len(b) != 16 {
		return nil, fmt.Errorf("a UUID of %d bytes, not 16", len(b))
	}
	var buf [36]byte
	hex.Encode(buf[0:8], b[0:4])
	buf[8] = '-'
	hex.Encode(buf[9:13], b[4:6])
	buf[13] = '-'
	hex.Encode(buf[14:18], b[6:8])
	buf[18] = '-'
	hex.Encode(buf[19:23], b[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:], b[10:])
	return &types.AttributeValueMemberS{Value: string(buf[:])}, nil
}

func convUnsigned(v parquet.Value) (types.AttributeValue, error) {
	if v.Kind() == parquet.Int32 {
		return &types.AttributeValueMemberN{Value: strconv.FormatUint(uint64(v.Uint32()), 10)}, nil
	}
	return &types.AttributeValueMemberN{Value: strconv.FormatUint(v.Uint64(), 10)}, nil
}

// convFloat writes a float as the shortest decimal that reads back as the
// same float, in plain notation unless it is very large or very small (as
// encoding/json writes floats).
func convFloat(f float64, bits int) (types.AttributeValue, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%v cannot be stored as a DynamoDB number", f)
	}
	if f == 0 {
		return &types.AttributeValueMemberN{Value: "0"}, nil
	}
	format := byte('f')
	if abs := math.Abs(f); abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	s := strconv.FormatFloat(f, format, -1, bits)
	if err := ddbjson.CheckNumber(s); err != nil {
		return nil, fmt.Errorf("%s is outside DynamoDB's number range", s)
	}
	return &types.AttributeValueMemberN{Value: s}, nil
}

func convFloat16(v parquet.Value) (types.AttributeValue, error) {
	b := v.ByteArray()
	if len(b) != 2 {
		return nil, fmt.Errorf("a FLOAT16 of %d bytes, not 2", len(b))
	}
	h := binary.LittleEndian.Uint16(b)
	sign := float64(1)
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	var f float64
	switch exp {
	case 0:
		f = sign * frac / 1024 * math.Pow(2, -14)
	case 0x1f:
		if frac == 0 {
			f = math.Inf(int(sign))
		} else {
			f = math.NaN()
		}
	default:
		f = sign * (1 + frac/1024) * math.Pow(2, float64(exp-15))
	}
	return convFloat(f, 32)
}

// convDecimal writes a decimal's unscaled integer with its scale.
func convDecimal(v parquet.Value, kind parquet.Kind, scale int) (types.AttributeValue, error) {
	var digits string
	switch kind {
	case parquet.Int32:
		digits = strconv.FormatInt(int64(v.Int32()), 10)
	case parquet.Int64:
		digits = strconv.FormatInt(v.Int64(), 10)
	default:
		b := v.ByteArray()
		n := new(big.Int).SetBytes(b)
		if len(b) > 0 && b[0]&0x80 != 0 { // two's complement
			n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
		digits = n.String()
	}
	s := scaleDecimal(digits, scale)
	if err := ddbjson.CheckNumber(s); err != nil {
		return nil, fmt.Errorf("%s does not fit a DynamoDB number (38 digits at most)", s)
	}
	return &types.AttributeValueMemberN{Value: s}, nil
}

// scaleDecimal places the decimal point in an integer's digits.
func scaleDecimal(digits string, scale int) string {
	if scale == 0 {
		return digits
	}
	if scale < 0 {
		return digits + "E" + strconv.Itoa(-scale)
	}
	neg := strings.HasPrefix(digits, "-")
	digits = strings.TrimPrefix(digits, "-")
	if len(digits) <= scale {
		digits = strings.Repeat("0", scale-len(digits)+1) + digits
	}
	s := digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	if neg {
		s = "-" + s
	}
	return s
}

// convDate writes a date as an RFC 3339 full-date, 2024-01-02.
func convDate(v parquet.Value) (types.AttributeValue, error) {
	t := time.Unix(int64(v.Int32())*86400, 0).UTC()
	return &types.AttributeValueMemberS{Value: t.Format(time.DateOnly)}, nil
}

// convTime writes a time of day as an RFC 3339 partial-time, 15:04:05.123.
func convTime(v parquet.Value, kind parquet.Kind, unit time.Duration) (types.AttributeValue, error) {
	var n int64
	if kind == parquet.Int32 {
		n = int64(v.Int32())
	} else {
		n = v.Int64()
	}
	d := time.Duration(n) * unit
	if d < 0 || d > 24*time.Hour {
		return nil, fmt.Errorf("time of day %v is outside a day", d)
	}
	t := time.Unix(0, int64(d)).UTC()
	return &types.AttributeValueMemberS{Value: t.Format("15:04:05.999999999")}, nil
}

// convTimestamp writes a timestamp in RFC 3339, in UTC. A timestamp that is
// not adjusted to UTC (a wall-clock time) is written as if it were UTC.
func convTimestamp(v parquet.Value, unit time.Duration) (types.AttributeValue, error) {
	n := v.Int64()
	var t time.Time
	switch unit {
	case time.Millisecond:
		t = time.UnixMilli(n)
	case time.Microsecond:
		t = time.UnixMicro(n)
	default:
		t = time.Unix(0, n)
	}
	return &types.AttributeValueMemberS{Value: t.UTC().Format(time.RFC3339Nano)}, nil
}

// convInt96 reads the legacy INT96 timestamp: nanoseconds of the day and a
// Julian day.
func convInt96(v parquet.Value) (types.AttributeValue, error) {
	i := v.Int96()
	nanos := int64(uint64(i[1])<<32 | uint64(i[0]))
	const julianUnixEpoch = 2440588
	days := int64(i[2]) - julianUnixEpoch
	t := time.Unix(days*86400, nanos).UTC()
	return &types.AttributeValueMemberS{Value: t.Format(time.RFC3339Nano)}, nil
}

// appendPlainJSON writes a value as plain JSON, the way a record's Raw
// shows it: S as a string, N as a number, B as a base64 string, sets as
// arrays, maps with sorted keys.
func appendPlainJSON(dst []byte, v types.AttributeValue) []byte {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return ddbjson.AppendString(dst, v.Value)
	case *types.AttributeValueMemberN:
		return append(dst, v.Value...)
	case *types.AttributeValueMemberB:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, v.Value)
		return append(dst, '"')
	case *types.AttributeValueMemberBOOL:
		return strconv.AppendBool(dst, v.Value)
	case *types.AttributeValueMemberL:
		dst = append(dst, '[')
		for i, e := range v.Value {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendPlainJSON(dst, e)
		}
		return append(dst, ']')
	case *types.AttributeValueMemberM:
		dst = append(dst, '{')
		for i, k := range sortedKeys(v.Value) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = ddbjson.AppendString(dst, k)
			dst = append(dst, ':')
			dst = appendPlainJSON(dst, v.Value[k])
		}
		return append(dst, '}')
	case *types.AttributeValueMemberSS:
		dst = append(dst, '[')
		for i, s := range v.Value {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = ddbjson.AppendString(dst, s)
		}
		return append(dst, ']')
	case *types.AttributeValueMemberNS:
		dst = append(dst, '[')
		for i, s := range v.Value {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, s...)
		}
		return append(dst, ']')
	case *types.AttributeValueMemberBS:
		dst = append(dst, '[')
		for i, b := range v.Value {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendPlainJSON(dst, &types.AttributeValueMemberB{Value: b})
		}
		return append(dst, ']')
	}
	return append(dst, "null"...)
}

func nonEmpty(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// Checking a file's metadata before parquet-go trusts it.
//
// parquet-go allocates what a file declares before it reads it: a page's
// compressed size (FilePages.readPage), its uncompressed size (decompress),
// its number of values (levels, offsets and values are sized by it), a
// string's length or a list's count in the Thrift-encoded footer and page
// headers (encoding/thrift: compactReader.ReadBytes, decodeFuncSliceOf). A
// corrupt file of a few hundred bytes can so ask for gigabytes, and a
// footer list of 2^31 elements crashes the process with "out of memory".
// So the footer and, before a row group is read, the page headers of its
// column chunks are checked here: every length and count against the bytes
// that are actually there, what each page declares against pqMaxPage, and
// what the pages a row group holds at once declare against pqMaxMemory; a
// compressed page is decoded once, into nothing, to check that it decodes
// to no more than it declares (checkData).

// pqMaxMemory bounds the memory the pages of one row group, the current
// page and the dictionary of every column, may declare that they need: their
// decompressed bytes plus pqValueBytes a value. parquet-go holds them all
// at once while it reads rows. 512 MiB is room for some hundred columns of
// pages of the usual sizes (1 MiB, 20,000 values, and a dictionary of
// 1 MiB: about 2.3 MiB a column).
const pqMaxMemory = 512 << 20

// pqMaxPage bounds what one page (or dictionary) may declare it needs,
// counted as for pqMaxMemory: 64 times the usual 1 MiB page, and room for an
// old writer's page of four million values (a whole row group of nulls or
// of one repeated value, charged pqValueBytes each).
const pqMaxPage = 64 << 20

// pqValueBytes is what a value costs parquet-go once its page is decoded, at
// most: its levels, its offset or dictionary index, and its value.
const pqValueBytes = 16

// checkRowGroup checks the page headers of the column chunks of row group
// i, the way parquet-go will read them (FilePages.init, ReadPage,
// readDictionary): the dictionary page at the start of the chunk, then the
// pages from its data page offset to the end of the chunk.
func (s *parquetSource) checkRowGroup(i int) error {
	rg := &s.meta.RowGroups[i]
	var mem, worst int64
	worstCol := ""
	for j := range rg.Columns {
		md := &rg.Columns[j].MetaData
		col := strings.Join(md.PathInSchema, ".")
		m, err := s.checkChunk(md)
		if err != nil {
			return fmt.Errorf("row group %d, column %q: %w", i+1, col, err)
		}
		mem += m
		if m > worst {
			worst, worstCol = m, col
		}
	}
	if mem > s.maxMemory {
		return fmt.Errorf("row group %d: its pages declare that reading them takes %s (column %q %s), more than the %s treeport allows; the file is corrupt, or it needs rewriting with smaller pages or row groups",
			i+1, byteSize(mem), worstCol, byteSize(worst), byteSize(s.maxMemory))
	}
	return nil
}

// byteSize writes a size in MiB, or in bytes when it is less than one.
func byteSize(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// checkChunk checks the pages of a column chunk and returns the memory its
// dictionary and its largest data page declare.
func (s *parquetSource) checkChunk(md *format.ColumnMetaData) (int64, error) {
	if md.DataPageOffset < 0 || md.DictionaryPageOffset < 0 || md.TotalCompressedSize < 0 {
		return 0, fmt.Errorf("the chunk's offsets or size are negative (data page offset %d, dictionary page offset %d, size %d)",
			md.DataPageOffset, md.DictionaryPageOffset, md.TotalCompressedSize)
	}
	base := md.DataPageOffset
	if md.DictionaryPageOffset != 0 {
		base = md.DictionaryPageOffset
	}
	if base > s.size {
		return 0, fmt.Errorf("the chunk starts at byte %d, past the end of the file (%d bytes)", base, s.size)
	}
	end := s.size
	if md.TotalCompressedSize < s.size-base {
		end = base + md.TotalCompressedSize
	}
	var dict, page int64
	if md.DictionaryPageOffset != 0 && base < end {
		// parquet-go reads this page as the dictionary, whatever its type.
		h, n, err := s.pageHeader(base, end)
		if err != nil {
			return 0, err
		}
		if dict, err = s.checkPageAndData(md.Codec, h, base, n, end); err != nil {
			return 0, err
		}
	}
	if md.DataPageOffset < base {
		return 0, fmt.Errorf("the data pages start at byte %d, before the dictionary page at byte %d", md.DataPageOffset, base)
	}
	for pos := md.DataPageOffset; pos < end; {
		h, n, err := s.pageHeader(pos, end)
		if err != nil {
			return 0, err
		}
		m, err := s.checkPageAndData(md.Codec, h, pos, n, end)
		if err != nil {
			return 0, err
		}
		if h.Type == format.DictionaryPage {
			dict = max(dict, m)
		} else {
			page = max(page, m)
		}
		pos += n + int64(h.CompressedPageSize)
	}
	return dict + page, nil
}

// checkPageAndData is checkPage, then the page's own limit (pqMaxPage),
// then what its data decodes to (checkData).
func (s *parquetSource) checkPageAndData(codec format.CompressionCodec, h *format.PageHeader, pos, n, end int64) (int64, error) {
	m, err := checkPage(h, pos, n, end)
	if err != nil {
		return 0, err
	}
	if m > pqMaxPage {
		return 0, fmt.Errorf("the page at byte %d declares that reading it takes %s, more than the %s treeport allows a page; the file is corrupt, or it needs rewriting with smaller pages",
			pos, byteSize(m), byteSize(pqMaxPage))
	}
	return m, s.checkData(codec, h, pos+n)
}

// pageHeader reads the page header at pos, which must end before end.
func (s *parquetSource) pageHeader(pos, end int64) (h *format.PageHeader, n int64, err error) {
	for window := int64(1 << 10); ; window *= 8 {
		w := min(window, end-pos)
		b := make([]byte, w)
		k, err := s.r.ReadAt(b, pos)
		if k < len(b) && err != io.EOF {
			return nil, 0, fmt.Errorf("reading the page header at byte %d: %w", pos, err)
		}
		n, err := thriftscan.Struct(b[:k], k < len(b) || w == end-pos)
		switch {
		case err == thriftscan.ErrShort:
			continue
		case err != nil:
			return nil, 0, fmt.Errorf("the page header at byte %d is corrupt: %w", pos, err)
		}
		h = new(format.PageHeader)
		if err := thrift.Unmarshal(&thrift.CompactProtocol{}, b[:n], h); err != nil {
			return nil, 0, fmt.Errorf("the page header at byte %d is corrupt: %w", pos, err)
		}
		return h, int64(n), nil
	}
}

// checkPage checks a page's header, n bytes long at pos, against the bytes
// left in its column chunk, which ends at end, and returns the memory the
// page declares.
func checkPage(h *format.PageHeader, pos, n, end int64) (int64, error) {
	comp, size := int64(h.CompressedPageSize), int64(h.UncompressedPageSize)
	if comp < 0 || size < 0 {
		return 0, fmt.Errorf("the page at byte %d declares a negative size (%d bytes, %d uncompressed)", pos, comp, size)
	}
	if left := end - pos - n; comp > left {
		return 0, fmt.Errorf("the page at byte %d declares %d bytes of data, and its column chunk has %d bytes left", pos, comp, left)
	}
	size = max(size, comp)
	var values int64
	switch h.Type {
	case format.DataPage:
		if !h.DataPageHeader.Valid {
			return size, nil
		}
		values = int64(h.DataPageHeader.V.NumValues)
	case format.DataPageV2:
		if !h.DataPageHeaderV2.Valid {
			return size, nil
		}
		v := &h.DataPageHeaderV2.V
		values = int64(v.NumValues)
		switch {
		case v.NumNulls < 0 || v.NumNulls > v.NumValues:
			return 0, fmt.Errorf("the page at byte %d declares %d nulls among %d values", pos, v.NumNulls, v.NumValues)
		case v.NumRows < 0 || v.NumRows > v.NumValues:
			return 0, fmt.Errorf("the page at byte %d declares %d rows in %d values", pos, v.NumRows, v.NumValues)
		case v.RepetitionLevelsByteLength < 0 || v.DefinitionLevelsByteLength < 0 ||
			int64(v.RepetitionLevelsByteLength)+int64(v.DefinitionLevelsByteLength) > comp:
			return 0, fmt.Errorf("the page at byte %d declares %d bytes of repetition and %d of definition levels in %d bytes",
				pos, v.RepetitionLevelsByteLength, v.DefinitionLevelsByteLength, comp)
		}
	case format.DictionaryPage:
		if !h.DictionaryPageHeader.Valid {
			return size, nil
		}
		// A dictionary is PLAIN-encoded: a value takes a bit at least.
		values = int64(h.DictionaryPageHeader.V.NumValues)
		if values > 8*size+8 {
			return 0, fmt.Errorf("the dictionary page at byte %d declares %d values in %d bytes", pos, values, size)
		}
	default:
		return size, nil
	}
	if values < 0 {
		return 0, fmt.Errorf("the page at byte %d declares %d values", pos, values)
	}
	return size + values*pqValueBytes, nil
}
