package records

import (
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/parquet-go/parquet-go"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/transform"
)

// parquetRowGroupRows bounds a row group, so that a streaming writer holds
// at most this many rows' pages in memory before it writes them out. It is a
// variable so that tests can make small row groups.
var parquetRowGroupRows int64 = 128 * 1024

// parquetBatchRows is how many rows the writer hands parquet-go at a time;
// one at a time costs about twice as much.
const parquetBatchRows = 256

// maxStructFields is how many distinct keys a map attribute may have and
// still become a struct; more than that reads as data keyed by name (a map).
const maxStructFields = 64

// pkind is the Parquet shape of a value.
type pkind int

const (
	pString    pkind = iota // UTF-8 BYTE_ARRAY, from S
	pBinary                 // BYTE_ARRAY, from B
	pBool                   // BOOLEAN
	pInt64                  // INT64, from N
	pDouble                 // DOUBLE, from N
	pDecimal                // DECIMAL(38, scale) in FIXED_LEN_BYTE_ARRAY(16), from N
	pJSON                   // JSON-annotated BYTE_ARRAY holding any value as plain JSON
	pList                   // LIST of elem, from L or a set
	pMap                    // MAP of UTF-8 keys to elem, from M
	pStruct                 // a group of fields, from M
	pTimestamp              // TIMESTAMP adjusted to UTC in an INT64, from S holding RFC 3339 text
)

// TimestampColumn declares an S column of RFC 3339 times in UTC, such as
// 2024-01-02T03:04:05Z or 2024-01-02T03:04:05.123Z, that Parquet stores as
// a TIMESTAMP(MICROS) adjusted to UTC. treeport's Parquet reader gives such a
// timestamp back as RFC 3339 text in UTC with the fraction's trailing zeros
// dropped (time.RFC3339Nano), so a value is accepted only when that is its
// own text; any other value (another zone offset, lowercase letters, a
// fraction finer than a microsecond or ending in 0) is an error, never a
// silent change. The other formats write the column as the S column it is.
func TimestampColumn(name string) Column {
	return Column{Name: name, Type: "S", Timestamp: time.Microsecond}
}

// pnode is one value position of the schema. Every pnode is an optional
// Parquet node: null means an absent attribute, an absent struct field, or
// (where nullable) a NULL.
type pnode struct {
	kind     pkind
	scale    int           // pDecimal
	unit     time.Duration // pTimestamp
	strict   bool          // pDouble from NumberAuto: the error says to declare the column
	nullable bool          // a NULL value is written as null (list elements, map values)
	elem     *pnode        // pList element, pMap value
	fields   []pfield      // pStruct, in name order

	col    int   // the leaf's column; for pMap, the key column
	rep    int   // pList, pMap: the repetition level of the repeated child
	leaves []int // every leaf column under the node
}

type pfield struct {
	name string
	node *pnode
}

// parquetWriter writes a Parquet file with typed columns (NewWriter
// says which). With declared columns it streams, handing rows to parquet-go
// in batches of parquetBatchRows and flushing a row group every
// parquetRowGroupRows rows; without, it holds the records until Close and
// infers the schema from them.
type parquetWriter struct {
	out   io.Writer
	opts  WriterOptions
	held  []*transform.Record
	pw    *parquet.GenericWriter[any]
	attrs map[string]*pnode

	idCol, parentCol int
	cols             [][]parquet.Value // the row being built, by column
	batch            []parquet.Row     // rows built and not yet written
	n                int               // rows in batch
	arena            []byte            // the bytes of the batch's strings
}

var _ Writer = (*parquetWriter)(nil)

func newParquetWriter(out io.Writer, opts WriterOptions) (*parquetWriter, error) {
	w := &parquetWriter{out: out, opts: opts}
	if opts.Columns != nil {
		attrs := make(map[string]*pnode, len(opts.Columns))
		for _, c := range opts.Columns {
			attrs[c.Name] = declaredNode(c)
		}
		if err := w.start(attrs); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// declaredNode is the schema of a declared column.
func declaredNode(c Column) *pnode {
	switch c.Type {
	case "S":
		if c.Timestamp != 0 {
			return &pnode{kind: pTimestamp, unit: c.Timestamp}
		}
		return &pnode{kind: pString}
	case "BOOL":
		return &pnode{kind: pBool}
	case "B":
		return &pnode{kind: pBinary}
	case "N":
		switch c.Number {
		case NumberInt64:
			return &pnode{kind: pInt64}
		case NumberDouble:
			return &pnode{kind: pDouble}
		case NumberDecimal:
			return &pnode{kind: pDecimal, scale: c.Scale}
		case NumberJSON:
			return &pnode{kind: pJSON}
		}
		return &pnode{kind: pDouble, strict: true}
	}
	return &pnode{kind: pJSON}
}

// start builds the Parquet schema and the writer.
func (w *parquetWriter) start(attrs map[string]*pnode) error {
	root := parquet.Group{
		w.opts.IDField:     parquet.String(),
		w.opts.ParentField: parquet.Optional(parquet.String()),
	}
	for name, n := range attrs {
		root[name] = parquet.Optional(n.parquetNode())
	}
	schema := parquet.NewSchema("treeport", root)
	index := map[string]int{}
	for i, path := range schema.Columns() {
		index[strings.Join(path, "\x00")] = i
	}
	w.idCol = index[w.opts.IDField]
	w.parentCol = index[w.opts.ParentField]
	for name, n := range attrs {
		if err := n.layout([]string{name}, 0, index); err != nil {
			return err
		}
	}
	config, err := parquet.NewWriterConfig(schema,
		parquet.Compression(&parquet.Zstd),
		parquet.MaxRowsPerRowGroup(parquetRowGroupRows))
	if err != nil {
		return fmt.Errorf("exporter: configuring the Parquet writer: %w", err)
	}
	w.pw = parquet.NewGenericWriter[any](w.out, config)
	w.attrs = attrs
	w.cols = make([][]parquet.Value, len(index))
	w.batch = make([]parquet.Row, parquetBatchRows)
	return nil
}

func (n *pnode) parquetNode() parquet.Node {
	switch n.kind {
	case pString:
		return parquet.String()
	case pBinary:
		return parquet.Leaf(parquet.ByteArrayType)
	case pBool:
		return parquet.Leaf(parquet.BooleanType)
	case pInt64:
		return parquet.Int(64)
	case pDouble:
		return parquet.Leaf(parquet.DoubleType)
	case pDecimal:
		return parquet.Decimal(n.scale, maxDecimalDigits, parquet.FixedLenByteArrayType(16))
	case pTimestamp:
		switch n.unit {
		case time.Millisecond:
			return parquet.Timestamp(parquet.Millisecond)
		case time.Nanosecond:
			return parquet.Timestamp(parquet.Nanosecond)
		}
		return parquet.Timestamp(parquet.Microsecond)
	case pList:
		return parquet.List(parquet.Optional(n.elem.parquetNode()))
	case pMap:
		return parquet.Map(parquet.String(), parquet.Optional(n.elem.parquetNode()))
	case pStruct:
		g := parquet.Group{}
		for _, f := range n.fields {
			g[f.name] = parquet.Optional(f.node.parquetNode())
		}
		return g
	}
	return parquet.JSON()
}

// layout finds the columns of n's leaves, whose paths start with path, and
// the repetition levels of its repeated children; reps is the number of
// repeated nodes above n.
func (n *pnode) layout(path []string, reps int, index map[string]int) error {
	leaf := func(p []string) (int, error) {
		i, ok := index[strings.Join(p, "\x00")]
		if !ok {
			return 0, fmt.Errorf("exporter: internal error: no Parquet column %s", strings.Join(p, "."))
		}
		return i, nil
	}
	var err error
	switch n.kind {
	case pList:
		n.rep = reps + 1
		err = n.elem.layout(append(slices.Clip(path), "list", "element"), reps+1, index)
		n.leaves = n.elem.leaves
	case pMap:
		n.rep = reps + 1
		kv := append(slices.Clip(path), "key_value")
		if n.col, err = leaf(append(slices.Clip(kv), "key")); err != nil {
			return err
		}
		err = n.elem.layout(append(slices.Clip(kv), "value"), reps+1, index)
		n.leaves = append([]int{n.col}, n.elem.leaves...)
	case pStruct:
		for _, f := range n.fields {
			if err = f.node.layout(append(slices.Clip(path), f.name), reps, index); err != nil {
				return err
			}
			n.leaves = append(n.leaves, f.node.leaves...)
		}
	default:
		n.col, err = leaf(path)
		n.leaves = []int{n.col}
	}
	return err
}

func (w *parquetWriter) Write(rec *transform.Record) error {
	if err := checkRecord(rec, &w.opts); err != nil {
		return err
	}
	if w.pw == nil {
		w.held = append(w.held, rec)
		return nil
	}
	return w.write(rec)
}

func (w *parquetWriter) write(rec *transform.Record) error {
	for name := range rec.Attrs {
		if _, ok := w.attrs[name]; !ok {
			return recordError(rec, name, fmt.Errorf("no Parquet column for this attribute; declare it in the columns, or let the writer infer them"))
		}
	}
	if err := w.shred(rec); err != nil {
		return err
	}
	if w.n == len(w.batch) {
		return w.flush()
	}
	return nil
}

// shred adds the record's row to the batch, or nothing on an error.
func (w *parquetWriter) shred(rec *transform.Record) (err error) {
	mark := len(w.arena)
	defer func() {
		if err != nil {
			for i := range w.cols {
				w.cols[i] = w.cols[i][:0]
			}
			w.arena = w.arena[:mark]
		}
	}()
	w.add(w.idCol, w.stringValue(rec.ID).Level(0, 0, w.idCol))
	if rec.Parent == "" {
		w.add(w.parentCol, parquet.NullValue().Level(0, 0, w.parentCol))
	} else {
		w.add(w.parentCol, w.stringValue(rec.Parent).Level(0, 1, w.parentCol))
	}
	for name, n := range w.attrs {
		v, ok := rec.Attrs[name]
		if ok && v == nil {
			return recordError(rec, name, fmt.Errorf("no value (nil)"))
		}
		if err := w.value(n, v, 0, 0); err != nil {
			return recordError(rec, name, err)
		}
	}
	row := w.batch[w.n][:0]
	for i, vs := range w.cols {
		row = append(row, vs...)
		w.cols[i] = vs[:0]
	}
	w.batch[w.n] = row
	w.n++
	return nil
}

// flush writes the batch of rows. Their string bytes live in the arena
// until then.
func (w *parquetWriter) flush() error {
	_, err := w.pw.WriteRows(w.batch[:w.n])
	w.n = 0
	w.arena = w.arena[:0]
	if err != nil {
		return fmt.Errorf("exporter: writing Parquet rows: %w", err)
	}
	return nil
}

func (w *parquetWriter) add(col int, v parquet.Value) { w.cols[col] = append(w.cols[col], v) }

func (w *parquetWriter) stringValue(s string) parquet.Value {
	start := len(w.arena)
	w.arena = append(w.arena, s...)
	return parquet.ByteArrayValue(w.arena[start:len(w.arena):len(w.arena)])
}

// nulls writes a null to every leaf under n, at repetition level r and
// definition level d.
func (w *parquetWriter) nulls(n *pnode, r, d int) {
	for _, c := range n.leaves {
		w.add(c, parquet.NullValue().Level(r, d, c))
	}
}

// value shreds v (nil for absent) into the leaves of the optional node n:
// r is the repetition level of its first value, d the definition level of
// n's parent.
func (w *parquetWriter) value(n *pnode, v types.AttributeValue, r, d int) error {
	if v == nil {
		w.nulls(n, r, d)
		return nil
	}
	if _, ok := v.(*types.AttributeValueMemberNULL); ok && n.kind != pJSON {
		if !n.nullable {
			return fmt.Errorf("a NULL value in a column of %s; declare the column JSON", n.kind)
		}
		w.nulls(n, r, d)
		return nil
	}
	d++
	mismatch := func() error {
		return fmt.Errorf("a %s value in a column of %s; declare the column JSON to hold values of several types", ddbjson.TypeName(v), n.kind)
	}
	switch n.kind {
	case pString:
		s, ok := v.(*types.AttributeValueMemberS)
		if !ok {
			return mismatch()
		}
		w.add(n.col, w.stringValue(s.Value).Level(r, d, n.col))
	case pTimestamp:
		s, ok := v.(*types.AttributeValueMemberS)
		if !ok {
			return mismatch()
		}
		ts, err := n.timestamp(s.Value)
		if err != nil {
			return err
		}
		w.add(n.col, parquet.Int64Value(ts).Level(r, d, n.col))
	case pBinary:
		b, ok := v.(*types.AttributeValueMemberB)
		if !ok {
			return mismatch()
		}
		w.add(n.col, parquet.ByteArrayValue(b.Value).Level(r, d, n.col))
	case pBool:
		b, ok := v.(*types.AttributeValueMemberBOOL)
		if !ok {
			return mismatch()
		}
		w.add(n.col, parquet.BooleanValue(b.Value).Level(r, d, n.col))
	case pInt64, pDouble, pDecimal:
		num, ok := v.(*types.AttributeValueMemberN)
		if !ok {
			return mismatch()
		}
		pv, err := n.number(num.Value)
		if err != nil {
			return err
		}
		w.add(n.col, pv.Level(r, d, n.col))
	case pJSON:
		start := len(w.arena)
		var err error
		if w.arena, err = AppendPlainJSON(w.arena, v); err != nil {
			return err
		}
		w.add(n.col, parquet.ByteArrayValue(w.arena[start:len(w.arena):len(w.arena)]).Level(r, d, n.col))
	case pList:
		elems, ok := listElems(v)
		if !ok {
			return mismatch()
		}
		if len(elems) == 0 {
			w.nulls(n.elem, r, d)
		}
		for i, e := range elems {
			if i > 0 {
				r = n.rep
			}
			if err := w.value(n.elem, e, r, d+1); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	case pMap:
		m, ok := v.(*types.AttributeValueMemberM)
		if !ok {
			return mismatch()
		}
		if len(m.Value) == 0 {
			w.nulls(n, r, d)
		}
		for i, k := range sortedKeys(m.Value) {
			if i > 0 {
				r = n.rep
			}
			w.add(n.col, w.stringValue(k).Level(r, d+1, n.col))
			if m.Value[k] == nil {
				return fmt.Errorf(".%s: no value (nil)", k)
			}
			if err := w.value(n.elem, m.Value[k], r, d+1); err != nil {
				return fmt.Errorf(".%s: %w", k, err)
			}
		}
	case pStruct:
		m, ok := v.(*types.AttributeValueMemberM)
		if !ok {
			return mismatch()
		}
		for k, e := range m.Value {
			if e == nil {
				return fmt.Errorf(".%s: no value (nil)", k)
			}
			if !slices.ContainsFunc(n.fields, func(f pfield) bool { return f.name == k }) {
				return fmt.Errorf(".%s: no struct field for this key", k)
			}
		}
		for _, f := range n.fields {
			if err := w.value(f.node, m.Value[f.name], r, d); err != nil {
				return fmt.Errorf(".%s: %w", f.name, err)
			}
		}
	}
	return nil
}

// number converts a DynamoDB number to the column's physical value.
func (n *pnode) number(text string) (parquet.Value, error) {
	// Fast paths for the common plain forms.
	switch n.kind {
	case pInt64:
		if i, err := strconv.ParseInt(text, 10, 64); err == nil {
			return parquet.Int64Value(i), nil
		}
	case pDouble:
		if f, ok := shortDouble(text); ok {
			return parquet.DoubleValue(f), nil
		}
	}
	d, ok := parseDecimal(text)
	if !ok {
		return parquet.Value{}, fmt.Errorf("%q is not a number", text)
	}
	switch n.kind {
	case pInt64:
		if i, ok := d.int64(); ok {
			return parquet.Int64Value(i), nil
		}
		return parquet.Value{}, fmt.Errorf("number %s is not an integer that fits an INT64 column; declare the column DOUBLE, DECIMAL or JSON", text)
	case pDouble:
		if f, ok := d.float64(); ok {
			return parquet.DoubleValue(f), nil
		}
		if n.strict {
			return parquet.Value{}, fmt.Errorf("number %s has no exact DOUBLE; declare the column's number kind (NumberDecimal or NumberJSON) or let the writer infer the columns", text)
		}
		return parquet.Value{}, fmt.Errorf("number %s has no exact DOUBLE; declare the column DECIMAL or JSON", text)
	}
	if d.scale() > n.scale || d.intDigits() > maxDecimalDigits-n.scale {
		return parquet.Value{}, fmt.Errorf("number %s does not fit DECIMAL(%d, %d); declare the column JSON", text, maxDecimalDigits, n.scale)
	}
	return parquet.FixedLenByteArrayValue(decimalBytes(d.unscaled(n.scale))), nil
}

// timestamp converts RFC 3339 text to the column's count of units since
// the Unix epoch, when a reader gives back the same text from it.
func (n *pnode) timestamp(text string) (int64, error) {
	t, err := time.Parse(time.RFC3339Nano, text)
	if err == nil && t.UTC().Format(time.RFC3339Nano) == text && t.Nanosecond()%int(n.unit) == 0 {
		switch n.unit {
		case time.Millisecond:
			return t.UnixMilli(), nil
		case time.Microsecond:
			return t.UnixMicro(), nil
		}
		// Nanoseconds since 1970 fit an INT64 from 1677 to 2262 only.
		if ns := t.UnixNano(); time.Unix(0, ns).Equal(t) {
			return ns, nil
		}
	}
	return 0, fmt.Errorf("%q is not an RFC 3339 time in UTC that a TIMESTAMP(%s) column gives back as the same text (such as 2024-01-02T03:04:05Z or 2024-01-02T03:04:05.5Z); declare the column a plain S column", text, unitName(n.unit))
}

func unitName(u time.Duration) string {
	switch u {
	case time.Millisecond:
		return "MILLIS"
	case time.Nanosecond:
		return "NANOS"
	}
	return "MICROS"
}

// shortDouble parses plain decimal text (no exponent) of at most 15
// significant digits. Any such number is exact as a DOUBLE: a double holds 15
// decimal digits, so the shortest text of the float is the same number.
func shortDouble(text string) (float64, bool) {
	if len(text) > 32 {
		return 0, false
	}
	sig, point := 0, false
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c >= '1' && c <= '9', c == '0' && sig > 0:
			sig++
		case c == '0':
		case c == '.' && !point:
			point = true
		case (c == '-' || c == '+') && i == 0:
		default:
			return 0, false
		}
	}
	if sig > 15 {
		return 0, false
	}
	f, err := strconv.ParseFloat(text, 64)
	return f, err == nil
}

var twoTo128 = new(big.Int).Lsh(big.NewInt(1), 128)

// decimalBytes is v as 16 bytes of big-endian two's complement, the way a
// DECIMAL in a FIXED_LEN_BYTE_ARRAY(16) holds its unscaled value.
func decimalBytes(v *big.Int) []byte {
	b := make([]byte, 16)
	if v.Sign() < 0 {
		v = new(big.Int).Add(v, twoTo128)
	}
	return v.FillBytes(b)
}

// listElems returns the elements of a list or set value.
func listElems(v types.AttributeValue) ([]types.AttributeValue, bool) {
	switch v := v.(type) {
	case *types.AttributeValueMemberL:
		return v.Value, true
	case *types.AttributeValueMemberSS:
		out := make([]types.AttributeValue, len(v.Value))
		for i, s := range v.Value {
			out[i] = &types.AttributeValueMemberS{Value: s}
		}
		return out, true
	case *types.AttributeValueMemberNS:
		out := make([]types.AttributeValue, len(v.Value))
		for i, s := range v.Value {
			out[i] = &types.AttributeValueMemberN{Value: s}
		}
		return out, true
	case *types.AttributeValueMemberBS:
		out := make([]types.AttributeValue, len(v.Value))
		for i, b := range v.Value {
			out[i] = &types.AttributeValueMemberB{Value: b}
		}
		return out, true
	}
	return nil, false
}

func (k pkind) String() string {
	return [...]string{"UTF-8 strings", "binary", "booleans", "INT64", "DOUBLE", "DECIMAL", "JSON", "lists", "maps", "structs", "timestamps"}[k]
}

func (w *parquetWriter) Close() error {
	if w.pw == nil {
		attrs := inferParquet(w.held)
		if err := w.start(attrs); err != nil {
			return err
		}
		for _, rec := range w.held {
			if err := w.write(rec); err != nil {
				return err
			}
		}
		w.held = nil
	}
	if err := w.flush(); err != nil {
		return err
	}
	if err := w.pw.Close(); err != nil {
		return fmt.Errorf("exporter: writing the Parquet footer: %w", err)
	}
	return nil
}

// shape gathers the types seen at one value position of a column.
type shape struct {
	kinds  []string // DynamoDB types seen, sets counted as L
	num    numStats
	elem   *shape            // L
	fields map[string]*shape // M
}

func (s *shape) observe(v types.AttributeValue) {
	t := ddbjson.TypeName(v)
	if elems, ok := listElems(v); ok {
		t = "L"
		if s.elem == nil {
			s.elem = &shape{}
		}
		for _, e := range elems {
			s.elem.observe(e)
		}
	}
	if !slices.Contains(s.kinds, t) {
		s.kinds = append(s.kinds, t)
	}
	switch v := v.(type) {
	case *types.AttributeValueMemberN:
		s.num.add(v.Value)
	case *types.AttributeValueMemberM:
		if s.fields == nil {
			s.fields = map[string]*shape{}
		}
		for k, e := range v.Value {
			f := s.fields[k]
			if f == nil {
				f = &shape{}
				s.fields[k] = f
			}
			f.observe(e)
		}
	}
}

// merge adds what o saw to s.
func (s *shape) merge(o *shape) {
	for _, t := range o.kinds {
		if !slices.Contains(s.kinds, t) {
			s.kinds = append(s.kinds, t)
		}
	}
	s.num.merge(&o.num)
	if o.elem != nil {
		if s.elem == nil {
			s.elem = &shape{}
		}
		s.elem.merge(o.elem)
	}
	for k, f := range o.fields {
		if s.fields == nil {
			s.fields = map[string]*shape{}
		}
		if s.fields[k] == nil {
			s.fields[k] = &shape{}
		}
		s.fields[k].merge(f)
	}
}

// node returns the typed schema of the position, or false when it has no
// typed schema that reads back to the same values (the column then becomes
// JSON). nullOK says a null is a NULL here rather than an absent value.
func (s *shape) node(nullOK bool) (*pnode, bool) {
	kinds := slices.DeleteFunc(slices.Clone(s.kinds), func(t string) bool { return t == "NULL" })
	hasNull := len(kinds) < len(s.kinds)
	if hasNull && !nullOK || len(kinds) > 1 {
		return nil, false
	}
	n := &pnode{nullable: nullOK}
	if len(kinds) == 0 {
		n.kind = pString // only empty lists or NULL elements seen: any type reads back the same
		return n, true
	}
	switch kinds[0] {
	case "S":
		n.kind = pString
	case "B":
		n.kind = pBinary
	case "BOOL":
		n.kind = pBool
	case "N":
		switch k, scale := s.num.kind(); k {
		case NumberInt64:
			n.kind = pInt64
		case NumberDouble:
			n.kind = pDouble
		case NumberDecimal:
			n.kind, n.scale = pDecimal, scale
		default:
			return nil, false
		}
	case "L":
		elem, ok := s.elem.node(true)
		if !ok {
			return nil, false
		}
		n.kind, n.elem = pList, elem
	case "M":
		if st, ok := s.structNode(); ok {
			st.nullable = nullOK
			return st, true
		}
		values := &shape{}
		for _, f := range s.fields {
			values.merge(f)
		}
		elem, ok := values.node(true)
		if !ok {
			return nil, false
		}
		n.kind, n.elem = pMap, elem
	default:
		return nil, false
	}
	return n, true
}

// structNode returns a struct for a map position when its keys are few and
// named, and no field is ever NULL (a null field reads back as absent).
func (s *shape) structNode() (*pnode, bool) {
	if len(s.fields) == 0 || len(s.fields) > maxStructFields {
		return nil, false
	}
	n := &pnode{kind: pStruct}
	for _, k := range sortedKeys(s.fields) {
		if k == "" {
			return nil, false
		}
		f, ok := s.fields[k].node(false)
		if !ok {
			return nil, false
		}
		n.fields = append(n.fields, pfield{name: k, node: f})
	}
	return n, true
}

// inferParquet returns the schema of every attribute of recs.
func inferParquet(recs []*transform.Record) map[string]*pnode {
	shapes := map[string]*shape{}
	for _, rec := range recs {
		for name, v := range rec.Attrs {
			s := shapes[name]
			if s == nil {
				s = &shape{}
				shapes[name] = s
			}
			if v != nil {
				s.observe(v)
			}
		}
	}
	attrs := make(map[string]*pnode, len(shapes))
	for name, s := range shapes {
		n, ok := s.node(false)
		if !ok {
			n = &pnode{kind: pJSON}
		}
		attrs[name] = n
	}
	return attrs
}
