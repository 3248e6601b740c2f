package records

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/parquet-go/parquet-go"

	"github.com/treeport/treeport/transform"
)

func openParquetBytes(t *testing.T, data []byte) *parquet.File {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("parquet-go cannot open the file: %v", err)
	}
	return f
}

// schemaText prints a schema with one space for each indent, so that a
// test can spell it out.
func parquetSchemaText(f *parquet.File) string {
	return strings.ReplaceAll(f.Schema().String(), "\t", " ")
}

// readMaps reads every row the way parquet-go itself assembles it, a check
// of the repetition and definition levels independent of the writer's.
func readParquetMaps(t *testing.T, f *parquet.File) []map[string]any {
	t.Helper()
	r := parquet.NewReader(f)
	defer r.Close()
	var out []map[string]any
	for range f.NumRows() {
		row := map[string]any{}
		if err := r.Read(&row); err != nil {
			t.Fatalf("row %d: %v", len(out)+1, err)
		}
		out = append(out, normalizeParquet(row).(map[string]any))
	}
	return out
}

// normalize turns the typed nil pointers parquet-go puts in maps into nil,
// and bytes into strings. The schema checks tell binary from UTF-8.
func normalizeParquet(v any) any {
	rv := reflect.ValueOf(v)
	switch {
	case v == nil:
		return nil
	case rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Uint8:
		return string(rv.Bytes()) // parquet-go gives binary as a string or as bytes, by where it is
	case rv.Kind() == reflect.Pointer:
		if rv.IsNil() {
			return nil
		}
		return normalizeParquet(rv.Elem().Interface())
	case rv.Kind() == reflect.Map:
		out := map[string]any{}
		for _, k := range rv.MapKeys() {
			out[k.String()] = normalizeParquet(rv.MapIndex(k).Interface())
		}
		return out
	case rv.Kind() == reflect.Slice:
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = normalizeParquet(rv.Index(i).Interface())
		}
		return out
	}
	return v
}

// columnValues returns the raw values of the leaf column at path, row by
// row, as the file stores them.
func parquetColumn(t *testing.T, f *parquet.File, path ...string) [][]parquet.Value {
	t.Helper()
	leaf, ok := f.Schema().Lookup(path...)
	if !ok {
		t.Fatalf("no column %s", strings.Join(path, "."))
	}
	r := parquet.NewReader(f)
	defer r.Close()
	rows := make([]parquet.Row, f.NumRows())
	if n, err := r.ReadRows(rows); n != len(rows) {
		t.Fatalf("read %d of %d rows: %v", n, len(rows), err)
	}
	out := make([][]parquet.Value, len(rows))
	for i, row := range rows {
		for _, v := range row {
			if v.Column() == leaf.ColumnIndex {
				out[i] = append(out[i], v)
			}
		}
	}
	return out
}

// decimalText decodes a DECIMAL(_, scale) held in a fixed-length byte array.
func decimalText(v parquet.Value, scale int) string {
	b := v.ByteArray()
	x := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	r := new(big.Rat).SetFrac(x, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
	return r.FloatString(scale)
}

func TestParquetEveryType(t *testing.T) {
	f := openParquetBytes(t, writeRecords(t, WriterOptions{Format: FormatParquet}, everyTypeRecords()))
	wantSchema := `message treeport {
 optional boolean active;
 optional binary blob;
 required binary id (STRING);
 optional binary name (STRING);
 optional binary nothing (JSON);
 optional binary parent_id (STRING);
 optional fixed_len_byte_array(16) size (DECIMAL(38,2));
 optional group spec {
  optional group deep {
   optional group x (LIST) {
    repeated group list {
     optional boolean element;
    }
   }
  }
  optional binary k (STRING);
  optional int64 n (INT(64,true));
 }
 optional binary tags (JSON);
}`
	if got := parquetSchemaText(f); got != wantSchema {
		t.Errorf("schema:\n%s\nwant:\n%s", got, wantSchema)
	}

	var sizes []string
	for _, vs := range parquetColumn(t, f, "size") {
		if vs[0].IsNull() {
			sizes = append(sizes, "null")
		} else {
			sizes = append(sizes, decimalText(vs[0], 2))
		}
	}
	if want := []string{"12345678901234567890.50", "-0.25", "null"}; !reflect.DeepEqual(sizes, want) {
		t.Errorf("sizes %q, want %q", sizes, want)
	}
	var texts []string
	for _, col := range []string{"nothing", "tags"} {
		for _, vs := range parquetColumn(t, f, col) {
			if vs[0].IsNull() {
				texts = append(texts, "")
			} else {
				texts = append(texts, vs[0].String())
			}
		}
	}
	if want := []string{"null", "", "", `["a",1,[],{}]`, "", ""}; !reflect.DeepEqual(texts, want) {
		t.Errorf("JSON columns %q, want %q", texts, want)
	}
	if nulls := parquetColumn(t, f, "nothing"); nulls[0][0].IsNull() || !nulls[1][0].IsNull() {
		t.Error("a NULL attribute must be the JSON text null, and an absent one a null")
	}

	rows := readParquetMaps(t, f)
	want := []map[string]any{
		{"id": "CM1", "parent_id": nil, "active": true, "blob": "\x00\x01\x02\xff", "name": `Wheel, "front" left`,
			"spec": map[string]any{"k": "v", "n": int64(2), "deep": map[string]any{"x": []any{false}}}},
		{"id": "Zoë-😀", "parent_id": "CM1", "active": false, "blob": nil, "name": "王芳\nline two", "spec": nil},
		{"id": "CM20", "parent_id": "CM1", "active": nil, "blob": nil, "name": nil, "spec": nil},
	}
	for i := range rows {
		for _, skip := range []string{"size", "nothing", "tags"} { // checked exactly above
			delete(rows[i], skip)
		}
		if !reflect.DeepEqual(rows[i], want[i]) {
			t.Errorf("row %d:\n got %#v\nwant %#v", i+1, rows[i], want[i])
		}
	}
}

func TestParquetNestedTypes(t *testing.T) {
	recs := []*transform.Record{
		{ID: "CM1", Attrs: transform.Attrs{
			"materials": attrL(attrS("steel"), attrNull(), attrS("rubber")),
			"counts":    &types.AttributeValueMemberNS{Value: []string{"3", "-4"}},
			"supplier":  attrM("name", attrS("Acme"), "country", attrS("DE")),
			"parts":     attrL(attrM("no", attrS("P-1"), "qty", attrN("2")), attrM("no", attrS("P-2"))),
			"grid":      attrL(attrL(attrN("1.5"), attrN("2")), attrL()),
			"labels":    attrM("en", attrS("wheel"), "fr", attrNull()),
			"keys":      &types.AttributeValueMemberBS{Value: [][]byte{{1, 2}}},
		}},
		{ID: "CM2", Parent: "CM1", Attrs: transform.Attrs{
			"materials": attrL(),
			"supplier":  attrM("name", attrS("Bolt & Co")),
			"labels":    attrM(),
		}},
	}
	f := openParquetBytes(t, writeRecords(t, WriterOptions{Format: FormatParquet}, recs))
	wantSchema := `message treeport {
 optional group counts (LIST) {
  repeated group list {
   optional int64 element (INT(64,true));
  }
 }
 optional group grid (LIST) {
  repeated group list {
   optional group element (LIST) {
    repeated group list {
     optional double element;
    }
   }
  }
 }
 required binary id (STRING);
 optional group keys (LIST) {
  repeated group list {
   optional binary element;
  }
 }
 optional group labels (MAP) {
  repeated group key_value {
   required binary key (STRING);
   optional binary value (STRING);
  }
 }
 optional group materials (LIST) {
  repeated group list {
   optional binary element (STRING);
  }
 }
 optional binary parent_id (STRING);
 optional group parts (LIST) {
  repeated group list {
   optional group element {
    optional binary no (STRING);
    optional int64 qty (INT(64,true));
   }
  }
 }
 optional group supplier {
  optional binary country (STRING);
  optional binary name (STRING);
 }
}`
	if got := parquetSchemaText(f); got != wantSchema {
		t.Errorf("schema:\n%s\nwant:\n%s", got, wantSchema)
	}
	want := []map[string]any{
		{
			"id": "CM1", "parent_id": nil,
			"materials": []any{"steel", nil, "rubber"},
			"counts":    []any{int64(3), int64(-4)},
			"supplier":  map[string]any{"name": "Acme", "country": "DE"},
			"parts":     []any{map[string]any{"no": "P-1", "qty": int64(2)}, map[string]any{"no": "P-2", "qty": nil}},
			"grid":      []any{[]any{1.5, 2.0}, []any{}},
			"labels":    map[string]any{"en": "wheel", "fr": nil},
			"keys":      []any{"\x01\x02"},
		},
		{
			"id": "CM2", "parent_id": "CM1",
			"materials": []any{},
			"counts":    nil,
			"supplier":  map[string]any{"name": "Bolt & Co", "country": nil},
			"parts":     nil,
			"grid":      nil,
			"labels":    map[string]any{},
			"keys":      nil,
		},
	}
	got := readParquetMaps(t, f)
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("row %d:\n got %#v\nwant %#v", i+1, got[i], want[i])
		}
	}
}

func TestParquetFallsBackToJSON(t *testing.T) {
	tests := []struct {
		name   string
		values []types.AttributeValue
		want   string // the column's line in the schema
	}{
		{name: "string and number", values: []types.AttributeValue{attrS("a"), attrN("1")}, want: "optional binary c (JSON);"},
		{name: "string and NULL", values: []types.AttributeValue{attrS("a"), attrNull()}, want: "optional binary c (JSON);"},
		{name: "list of mixed elements", values: []types.AttributeValue{attrL(attrS("a"), attrBool(true))}, want: "optional binary c (JSON);"},
		{name: "number beyond a decimal", values: []types.AttributeValue{attrN("1.2345678901234567890123"), attrN("1e30")}, want: "optional binary c (JSON);"},
		{name: "map of mixed values", values: []types.AttributeValue{attrM("a", attrS("x"), "b", attrNull(), "c", attrN("1"))}, want: "optional binary c (JSON);"},
		{name: "doubles", values: []types.AttributeValue{attrN("0.1"), attrN("3")}, want: "optional double c;"},
		{name: "map with a NULL value", values: []types.AttributeValue{attrM("a", attrS("x"), "b", attrNull())}, want: "optional group c (MAP) {"},
		{name: "many keys", values: manyKeysMap(maxStructFields + 1), want: "optional group c (MAP) {"},
		{name: "empty lists", values: []types.AttributeValue{attrL()}, want: "optional group c (LIST) {"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var recs []*transform.Record
			for i, v := range tc.values {
				recs = append(recs, &transform.Record{ID: fmt.Sprint(i), Attrs: transform.Attrs{"c": v}})
			}
			f := openParquetBytes(t, writeRecords(t, WriterOptions{Format: FormatParquet}, recs))
			if got := parquetSchemaText(f); !strings.Contains(got, "\n "+tc.want) {
				t.Errorf("schema:\n%s\nwant a line %q", got, tc.want)
			}
			if strings.HasSuffix(tc.want, "(JSON);") {
				for i, vs := range parquetColumn(t, f, "c") {
					want, _ := AppendPlainJSON(nil, tc.values[i])
					if vs[0].String() != string(want) {
						t.Errorf("row %d: %s, want %s", i+1, vs[0].String(), want)
					}
				}
			}
		})
	}
}

func manyKeysMap(k int) []types.AttributeValue {
	mm := map[string]types.AttributeValue{}
	for i := range k {
		mm[fmt.Sprintf("k%03d", i)] = attrN(fmt.Sprint(i))
	}
	return []types.AttributeValue{&types.AttributeValueMemberM{Value: mm}}
}

// TestParquetStreams writes more rows than a row group holds with declared
// columns, and checks every value: rows are written as they come, and the
// writer's reused buffers never leak one row into another.
func TestParquetStreams(t *testing.T) {
	defer func(n int64) { parquetRowGroupRows = n }(parquetRowGroupRows)
	parquetRowGroupRows = 4000
	const rows = 4000*2 + 1000
	cols := []Column{
		{Name: "name", Type: "S"},
		{Name: "size", Type: "N", Number: NumberInt64},
		{Name: "score", Type: "N", Number: NumberDouble},
		{Name: "price", Type: "N", Number: NumberDecimal, Scale: 2},
		{Name: "tags", Type: "L"},
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, WriterOptions{Format: FormatParquet, Columns: cols})
	if err != nil {
		t.Fatal(err)
	}
	pw := w.(*parquetWriter)
	for i := range rows {
		rec := &transform.Record{ID: fmt.Sprintf("N%d", i), Attrs: transform.Attrs{
			"name":  attrS(strings.Repeat("x", i%7) + fmt.Sprint(i)),
			"size":  attrN(fmt.Sprint(i * 1000)),
			"score": attrN(fmt.Sprintf("%d.5", i%100)),
			"price": attrN(fmt.Sprintf("-%d.25", i)),
			"tags":  attrL(attrS(fmt.Sprint(i))),
		}}
		if i > 0 {
			rec.Parent = fmt.Sprintf("N%d", (i-1)/4)
		}
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if i == 0 && pw.held != nil {
			t.Fatal("a writer with declared columns holds records")
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f := openParquetBytes(t, buf.Bytes())
	if got := len(f.RowGroups()); got != 3 {
		t.Errorf("%d row groups, want 3", got)
	}
	if f.NumRows() != rows {
		t.Fatalf("%d rows, want %d", f.NumRows(), rows)
	}
	names := parquetColumn(t, f, "name")
	prices := parquetColumn(t, f, "price")
	sizes := parquetColumn(t, f, "size")
	scores := parquetColumn(t, f, "score")
	tags := parquetColumn(t, f, "tags")
	for i := range rows {
		if want := strings.Repeat("x", i%7) + fmt.Sprint(i); names[i][0].String() != want {
			t.Fatalf("row %d: name %q, want %q", i, names[i][0].String(), want)
		}
		if want := fmt.Sprintf("-%d.25", i); decimalText(prices[i][0], 2) != want {
			t.Fatalf("row %d: price %s, want %s", i, decimalText(prices[i][0], 2), want)
		}
		if sizes[i][0].Int64() != int64(i*1000) || scores[i][0].Double() != float64(i%100)+0.5 {
			t.Fatalf("row %d: size %v, score %v", i, sizes[i][0], scores[i][0])
		}
		if tags[i][0].String() != fmt.Sprintf(`["%d"]`, i) {
			t.Fatalf("row %d: tags %v", i, tags[i][0])
		}
	}
}

// TestParquetFailedRecordLeavesNoTrace checks that a record the writer
// rejects halfway through its row leaves nothing behind in the next rows.
func TestParquetFailedRecordLeavesNoTrace(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, WriterOptions{Format: FormatParquet, Columns: []Column{
		{Name: "a", Type: "S"}, {Name: "b", Type: "N", Number: NumberInt64},
	}})
	if err != nil {
		t.Fatal(err)
	}
	recs := []*transform.Record{
		{ID: "r1", Attrs: transform.Attrs{"a": attrS("one"), "b": attrN("1")}},
		{ID: "bad", Attrs: transform.Attrs{"a": attrS("two"), "b": attrN("2.5")}},
		{ID: "r3", Parent: "r1", Attrs: transform.Attrs{"a": attrS("three"), "b": attrN("3")}},
	}
	for _, r := range recs {
		err := w.Write(r)
		if (err != nil) != (r.ID == "bad") {
			t.Fatalf("Write(%s): %v", r.ID, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := readParquetMaps(t, openParquetBytes(t, buf.Bytes()))
	want := []map[string]any{
		{"id": "r1", "parent_id": nil, "a": "one", "b": int64(1)},
		{"id": "r3", "parent_id": "r1", "a": "three", "b": int64(3)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestParquetTimestampColumn writes a declared timestamp column as a Parquet
// TIMESTAMP that treeport's reader gives back as the very same text, and
// refuses a value it would give back changed.
func TestParquetTimestampColumn(t *testing.T) {
	good := map[int][]string{
		3: {"2024-01-02T03:04:05Z", "2024-01-02T03:04:05.5Z", "2024-01-02T03:04:05.123Z", "1969-12-31T23:59:59.999Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z"},
		6: {"2024-01-02T03:04:05Z", "2024-01-02T03:04:05.000001Z", "2024-01-02T03:04:05.12345Z", "1969-12-31T23:59:59.999999Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z"},
		9: {"2024-01-02T03:04:05Z", "2024-01-02T03:04:05.123456789Z", "1969-12-31T23:59:59.999999999Z", "1678-01-01T00:00:00Z", "2262-04-11T23:47:16.854775807Z"},
	}
	bad := map[int][]string{
		3: {"2024-01-02T03:04:05.0001Z"},
		6: {"2024-01-02T03:04:05.1234567Z"},
		9: {"1677-01-01T00:00:00Z", "2263-01-01T00:00:00Z"},
	}
	for _, v := range []string{
		"2024-01-02T03:04:05+01:00", "2024-01-02T03:04:05+00:00", "2024-01-02T03:04:05.500Z", "2024-01-02t03:04:05z",
		"2024-01-02 03:04:05Z", "2024-01-02", "2024-01-02T03:04:05", "not a time", "",
	} {
		for scale := range good {
			bad[scale] = append(bad[scale], v)
		}
	}
	units := map[int]string{3: "MILLIS", 6: "MICROS", 9: "NANOS"}
	unitOf := map[int]time.Duration{3: time.Millisecond, 6: time.Microsecond, 9: time.Nanosecond}
	for scale, values := range good {
		t.Run(units[scale], func(t *testing.T) {
			col := Column{Name: "at", Type: "S", Timestamp: unitOf[scale]}
			if scale == 6 && !reflect.DeepEqual(TimestampColumn("at"), col) {
				t.Fatalf("TimestampColumn = %+v, want %+v", TimestampColumn("at"), col)
			}
			var recs []*transform.Record
			for i, v := range values {
				recs = append(recs, &transform.Record{ID: fmt.Sprint(i), Attrs: transform.Attrs{"at": attrS(v)}})
			}
			recs = append(recs, &transform.Record{ID: "absent", Attrs: transform.Attrs{}})
			data := writeRecords(t, WriterOptions{Format: FormatParquet, Columns: []Column{col}}, recs)
			f := openParquetBytes(t, data)
			want := fmt.Sprintf("message treeport {\n optional int64 at (TIMESTAMP(isAdjustedToUTC=true,unit=%s));\n required binary id (STRING);\n optional binary parent_id (STRING);\n}", units[scale])
			if got := parquetSchemaText(f); got != want {
				t.Errorf("schema:\n%s\nwant:\n%s", got, want)
			}

			path := filepath.Join(t.TempDir(), "at.parquet")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			src, err := OpenSource(path, SourceOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			for _, r := range recs {
				got, err := src.Next(context.Background())
				if err != nil {
					t.Fatalf("reading %s back: %v", r.ID, err)
				}
				if !reflect.DeepEqual(got.Attrs, r.Attrs) {
					t.Errorf("%s: read back %v, wrote %v", r.ID, got.Attrs["at"], r.Attrs["at"])
				}
			}

			// What a CSV file holds does not change with the timestamp.
			plain := writeRecords(t, WriterOptions{Format: FormatCSV, Columns: []Column{{Name: "at", Type: "S"}}}, recs)
			if csv := writeRecords(t, WriterOptions{Format: FormatCSV, Columns: []Column{col}}, recs); !bytes.Equal(csv, plain) {
				t.Errorf("CSV with a timestamp column:\n%s\nwith a plain one:\n%s", csv, plain)
			}
		})
	}
	for scale, values := range bad {
		for _, v := range values {
			w, err := NewWriter(io.Discard, WriterOptions{Format: FormatParquet, Columns: []Column{{Name: "at", Type: "S", Timestamp: unitOf[scale]}}})
			if err != nil {
				t.Fatal(err)
			}
			err = w.Write(&transform.Record{ID: "x", Attrs: transform.Attrs{"at": attrS(v)}})
			if err == nil || !strings.Contains(err.Error(), "at") || !strings.Contains(err.Error(), fmt.Sprintf("%q is not an RFC 3339 time in UTC that a TIMESTAMP(%s) column gives back as the same text", v, units[scale])) ||
				!strings.Contains(err.Error(), "declare the column a plain S column") {
				t.Errorf("%s, %q: got %v, want an error saying it would not read back the same", units[scale], v, err)
			}
		}
	}
	for _, col := range []Column{{Name: "at", Type: "S", Timestamp: time.Second}, {Name: "at", Type: "N", Timestamp: time.Millisecond}} {
		if _, err := NewWriter(io.Discard, WriterOptions{Format: FormatParquet, Columns: []Column{col}}); err == nil || !strings.Contains(err.Error(), "a timestamp column is an S column of unit") {
			t.Errorf("%+v: got %v, want an error", col, err)
		}
	}
	w, err := NewWriter(io.Discard, WriterOptions{Format: FormatParquet, Columns: []Column{TimestampColumn("at")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(&transform.Record{ID: "x", Attrs: transform.Attrs{"at": attrN("1")}}); err == nil || !strings.Contains(err.Error(), "column of timestamps") {
		t.Errorf("a number in a timestamp column: got %v", err)
	}
}
