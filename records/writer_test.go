package records

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/transform"
)

// Shorthands for attribute values.
func attrS(v string) types.AttributeValue  { return &types.AttributeValueMemberS{Value: v} }
func attrN(v string) types.AttributeValue  { return &types.AttributeValueMemberN{Value: v} }
func attrBool(v bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: v} }
func attrB(v ...byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: v} }
func attrNull() types.AttributeValue       { return &types.AttributeValueMemberNULL{Value: true} }
func attrL(v ...types.AttributeValue) types.AttributeValue {
	return &types.AttributeValueMemberL{Value: append([]types.AttributeValue{}, v...)}
}
func attrM(kv ...any) types.AttributeValue {
	out := map[string]types.AttributeValue{}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1].(types.AttributeValue)
	}
	return &types.AttributeValueMemberM{Value: out}
}

// everyType is a small forest whose attributes use every type, exact
// numbers, non-ASCII and emoji text, and text CSV must quote.
func everyTypeRecords() []*transform.Record {
	return []*transform.Record{
		{ID: "CM1", Attrs: transform.Attrs{
			"name":    attrS(`Wheel, "front" left`),
			"size":    attrN("12345678901234567890.5"),
			"active":  attrBool(true),
			"blob":    attrB(0, 1, 2, 0xff),
			"nothing": attrNull(),
			"tags":    attrL(attrS("a"), attrN("1"), attrL(), attrM()),
			"spec":    attrM("k", attrS("v"), "n", attrN("2"), "deep", attrM("x", attrL(attrBool(false)))),
		}},
		{ID: "Zoë-😀", Parent: "CM1", Attrs: transform.Attrs{
			"name":   attrS("王芳\nline two"),
			"size":   attrN("-0.25"),
			"active": attrBool(false),
		}},
		{ID: "CM20", Parent: "CM1"},
	}
}

func writeRecords(t *testing.T, opts WriterOptions, recs []*transform.Record) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, opts)
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatalf("Write(%s): %v", r.ID, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return buf.Bytes()
}

func TestTextFormats(t *testing.T) {
	tests := []struct {
		name string
		opts WriterOptions
		recs []*transform.Record
		want string
	}{
		{
			name: "csv with inferred columns",
			opts: WriterOptions{Format: FormatCSV},
			recs: everyTypeRecords(),
			want: "id,parent_id,active,blob,name,nothing,size,spec,tags\n" +
				`CM1,,true,AAEC/w==,"Wheel, ""front"" left",null,12345678901234567890.5,"{""deep"":{""x"":[false]},""k"":""v"",""n"":2}","[""a"",1,[],{}]"` + "\n" +
				"Zoë-😀,CM1,false,,\"王芳\nline two\",,-0.25,,\n" +
				"CM20,CM1,,,,,,,\n",
		},
		{
			name: "csv with declared columns, renamed fields and a delimiter",
			opts: WriterOptions{Format: FormatCSV, IDField: "Key", ParentField: "Up", CSVDelimiter: ';',
				Columns: []Column{{Name: "size", Type: "N"}, {Name: "name", Type: "JSON"}}},
			recs: []*transform.Record{
				{ID: "a;b", Attrs: transform.Attrs{"size": attrN("1"), "name": attrS("x;y")}},
				{ID: "c", Parent: "a;b", Attrs: transform.Attrs{"name": attrN("7")}},
			},
			want: "Key;Up;size;name\n" +
				"\"a;b\";;1;\"\"\"x;y\"\"\"\n" +
				"c;\"a;b\";;7\n",
		},
		{
			name: "csv without records",
			opts: WriterOptions{Format: FormatCSV},
			want: "id,parent_id\n",
		},
		{
			name: "json array",
			opts: WriterOptions{Format: FormatJSON},
			recs: everyTypeRecords(),
			want: "[\n" +
				`{"id":"CM1","active":true,"blob":"AAEC/w==","name":"Wheel, \"front\" left","nothing":null,"size":12345678901234567890.5,"spec":{"deep":{"x":[false]},"k":"v","n":2},"tags":["a",1,[],{}]},` + "\n" +
				`{"id":"Zoë-😀","parent_id":"CM1","active":false,"name":"王芳\nline two","size":-0.25},` + "\n" +
				`{"id":"CM20","parent_id":"CM1"}` + "\n]\n",
		},
		{
			name: "json array without records",
			opts: WriterOptions{Format: FormatJSON},
			want: "[]\n",
		},
		{
			name: "json lines with renamed fields",
			opts: WriterOptions{Format: FormatJSONL, IDField: "Id", ParentField: "ParentId"},
			recs: everyTypeRecords()[1:],
			want: `{"Id":"Zoë-😀","ParentId":"CM1","active":false,"name":"王芳\nline two","size":-0.25}` + "\n" +
				`{"Id":"CM20","ParentId":"CM1"}` + "\n",
		},
		{
			name: "json numbers and sets",
			opts: WriterOptions{Format: FormatJSONL},
			recs: []*transform.Record{{ID: "x", Attrs: transform.Attrs{
				"a":  attrN("+5"),
				"b":  attrN(".5"),
				"c":  attrN("007.50"),
				"d":  attrN("1E+3"),
				"e":  attrN("-0"),
				"ss": &types.AttributeValueMemberSS{Value: []string{"p", "q"}},
				"ns": &types.AttributeValueMemberNS{Value: []string{"1", "2.5"}},
				"bs": &types.AttributeValueMemberBS{Value: [][]byte{{1}, {}}},
			}}},
			want: `{"id":"x","a":5,"b":0.5,"bs":["AQ==",""],"c":7.5,"d":1E+3,"e":-0,"ns":[1,2.5],"ss":["p","q"]}` + "\n",
		},
		{
			name: "ddbjson",
			opts: WriterOptions{Format: FormatDDBJSON},
			recs: everyTypeRecords()[1:],
			want: `{"Item":{"active":{"BOOL":false},"id":{"S":"Zoë-😀"},"name":{"S":"王芳\nline two"},"parent_id":{"S":"CM1"},"size":{"N":"-0.25"}}}` + "\n" +
				`{"Item":{"id":{"S":"CM20"},"parent_id":{"S":"CM1"}}}` + "\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := string(writeRecords(t, tc.opts, tc.recs))
			if got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// Attributes are in byte order of their names, whatever the map's order.
func TestJSONKeyOrder(t *testing.T) {
	got := string(writeRecords(t, WriterOptions{Format: FormatJSONL}, []*transform.Record{
		{ID: "x", Attrs: transform.Attrs{"b": attrN("1"), "a": attrN("2"), "B": attrN("3")}},
	}))
	if want := `{"id":"x","B":3,"a":2,"b":1}` + "\n"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestDDBJSONIsExact(t *testing.T) {
	recs := everyTypeRecords()
	recs[0].Attrs["set"] = &types.AttributeValueMemberSS{Value: []string{"x", "y"}}
	out := writeRecords(t, WriterOptions{Format: FormatDDBJSON}, recs)
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(recs) {
		t.Fatalf("%d lines for %d records", len(lines), len(recs))
	}
	for i, line := range lines {
		item, err := ddbjson.DecodeLine([]byte(line))
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		want := transform.Attrs{"id": attrS(recs[i].ID)}
		for k, v := range recs[i].Attrs {
			want[k] = v
		}
		if recs[i].Parent != "" {
			want["parent_id"] = attrS(recs[i].Parent)
		}
		if !sameDDBJSON(item, want) {
			t.Errorf("line %d: got %s, want %s", i+1, ddbjson.AppendItem(nil, item), ddbjson.AppendItem(nil, want))
		}
	}
}

// equalAttrs compares attributes by their DynamoDB JSON, which is exact.
func sameDDBJSON(a, b transform.Attrs) bool {
	return bytes.Equal(ddbjson.AppendItem(nil, a), ddbjson.AppendItem(nil, b))
}

func TestTypesFlag(t *testing.T) {
	tests := []struct {
		name string
		cols []Column
		want string
	}{
		{name: "every type", cols: InferColumns(everyTypeRecords()), want: "active:BOOL,blob:B,nothing:JSON,size:N,spec:JSON,tags:JSON"},
		{name: "strings only", cols: []Column{{Name: "a", Type: "S"}}, want: ""},
		{name: "sets and mixed", cols: []Column{{Name: "a", Type: "SS"}, {Name: "b", Type: "JSON"}, {Name: "c", Type: "NULL"}}, want: "a:JSON,b:JSON,c:JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := TypesFlag(tc.cols); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestInferColumns(t *testing.T) {
	tests := []struct {
		name   string
		values []types.AttributeValue // one record each; nil = attribute absent
		want   Column
	}{
		{name: "strings", values: []types.AttributeValue{attrS("a"), nil, attrS("")}, want: Column{Type: "S"}},
		{name: "integers", values: []types.AttributeValue{attrN("1"), attrN("-9223372036854775808"), attrN("1E+3")}, want: Column{Type: "N", Number: NumberInt64}},
		{name: "integer too big for INT64", values: []types.AttributeValue{attrN("9223372036854775808")}, want: Column{Type: "N", Number: NumberDecimal}},
		{name: "decimals a double holds", values: []types.AttributeValue{attrN("1"), attrN("0.1"), attrN("1e300")}, want: Column{Type: "N", Number: NumberDouble}},
		{name: "exact decimal", values: []types.AttributeValue{attrN("12345678901234567890.5"), attrN("0.25")}, want: Column{Type: "N", Number: NumberDecimal, Scale: 2}},
		{name: "too many digits for a decimal", values: []types.AttributeValue{attrN("1.2345678901234567890123"), attrN("1e30")}, want: Column{Type: "N", Number: NumberJSON}},
		{name: "lists with a NULL", values: []types.AttributeValue{attrL(), attrNull()}, want: Column{Type: "L"}},
		{name: "string and NULL", values: []types.AttributeValue{attrS("a"), attrNull()}, want: Column{Type: "JSON"}},
		{name: "mixed", values: []types.AttributeValue{attrS("a"), attrN("1")}, want: Column{Type: "JSON"}},
		{name: "only NULL", values: []types.AttributeValue{attrNull()}, want: Column{Type: "NULL"}},
		{name: "maps", values: []types.AttributeValue{attrM("a", attrS("b"))}, want: Column{Type: "M"}},
		{name: "string sets", values: []types.AttributeValue{&types.AttributeValueMemberSS{Value: []string{"a"}}}, want: Column{Type: "SS"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var recs []*transform.Record
			for _, v := range tc.values {
				r := &transform.Record{ID: "x", Attrs: transform.Attrs{}}
				if v != nil {
					r.Attrs["c"] = v
				}
				recs = append(recs, r)
			}
			tc.want.Name = "c"
			got := InferColumns(recs)
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := InferColumns([]*transform.Record{{ID: "x", Attrs: transform.Attrs{"b": attrS("1"), "a": attrS("2")}}}); len(got) != 2 || got[0].Name != "a" {
		t.Errorf("columns not sorted by name: %+v", got)
	}
}

func TestWriteErrors(t *testing.T) {
	tests := []struct {
		name string
		opts WriterOptions
		rec  *transform.Record
		want string // in the error
	}{
		{name: "attribute named like the id field", opts: WriterOptions{Format: FormatJSONL},
			rec: &transform.Record{ID: "a", Attrs: transform.Attrs{"id": attrS("x")}}, want: `record "a", attribute "id"`},
		{name: "attribute named like a renamed parent field", opts: WriterOptions{Format: FormatDDBJSON, ParentField: "up"},
			rec: &transform.Record{ID: "a", Attrs: transform.Attrs{"up": attrS("x")}}, want: `attribute "up"`},
		{name: "empty id", opts: WriterOptions{Format: FormatCSV}, rec: &transform.Record{}, want: "empty id"},
		{name: "csv attribute without a column", opts: WriterOptions{Format: FormatCSV, Columns: []Column{{Name: "a", Type: "S"}}},
			rec: &transform.Record{ID: "r", Attrs: transform.Attrs{"b": attrS("x")}}, want: `attribute "b": no CSV column`},
		{name: "csv value of another type", opts: WriterOptions{Format: FormatCSV, Columns: []Column{{Name: "a", Type: "N"}}},
			rec: &transform.Record{ID: "r", Attrs: transform.Attrs{"a": attrS("x")}}, want: "a S value in a N column"},
		{name: "csv NULL in a string column", opts: WriterOptions{Format: FormatCSV, Columns: []Column{{Name: "a", Type: "S"}}},
			rec: &transform.Record{ID: "r", Attrs: transform.Attrs{"a": attrNull()}}, want: "a NULL value in a S column"},
		{name: "csv number that is not one", opts: WriterOptions{Format: FormatCSV, Columns: []Column{{Name: "a", Type: "N"}}},
			rec: &transform.Record{ID: "r", Attrs: transform.Attrs{"a": attrN("1,5")}}, want: `"1,5" is not a number`},
		{name: "json number that is not one", opts: WriterOptions{Format: FormatJSON},
			rec: &transform.Record{ID: "r", Attrs: transform.Attrs{"a": attrL(attrN("NaN"))}}, want: `attribute "a": [0]: "NaN" is not a number`},
		{name: "json nil value", opts: WriterOptions{Format: FormatJSONL},
			rec: &transform.Record{ID: "r", Attrs: transform.Attrs{"a": nil}}, want: "no value"},
		{name: "parquet attribute without a column", opts: WriterOptions{Format: FormatParquet, Columns: []Column{{Name: "a", Type: "S"}}},
			rec: &transform.Record{ID: "r", Attrs: transform.Attrs{"b": attrS("x")}}, want: `attribute "b": no Parquet column`},
		{name: "parquet integer column with a decimal", opts: WriterOptions{Format: FormatParquet, Columns: []Column{{Name: "a", Type: "N", Number: NumberInt64}}},
			rec: &transform.Record{ID: "r", Attrs: transform.Attrs{"a": attrN("1.5")}}, want: "not an integer that fits an INT64 column"},
		{name: "parquet auto number column with a long decimal", opts: WriterOptions{Format: FormatParquet, Columns: []Column{{Name: "a", Type: "N"}}},
			rec: &transform.Record{ID: "r", Attrs: transform.Attrs{"a": attrN("12345678901234567890.5")}}, want: "declare the column's number kind"},
		{name: "parquet decimal column with too many digits", opts: WriterOptions{Format: FormatParquet, Columns: []Column{{Name: "a", Type: "N", Number: NumberDecimal, Scale: 1}}},
			rec: &transform.Record{ID: "r", Attrs: transform.Attrs{"a": attrN("1.25")}}, want: "does not fit DECIMAL(38, 1)"},
		{name: "parquet NULL in a typed column", opts: WriterOptions{Format: FormatParquet, Columns: []Column{{Name: "a", Type: "BOOL"}}},
			rec: &transform.Record{ID: "r", Attrs: transform.Attrs{"a": attrNull()}}, want: "a NULL value in a column of booleans"},
		{name: "parquet value of another type", opts: WriterOptions{Format: FormatParquet, Columns: []Column{{Name: "a", Type: "B"}}},
			rec: &transform.Record{ID: "r", Attrs: transform.Attrs{"a": attrS("x")}}, want: "a S value in a column of binary"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWriter(&bytes.Buffer{}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			err = w.Write(tc.rec)
			if err == nil {
				err = w.Close() // writers that hold records find problems at Close
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestNewRecordWriterErrors(t *testing.T) {
	tests := []struct {
		name string
		opts WriterOptions
		want string
	}{
		{name: "no format", opts: WriterOptions{}, want: "no output format"},
		{name: "unknown format", opts: WriterOptions{Format: "xml"}, want: `unknown output format "xml"`},
		{name: "same field names", opts: WriterOptions{Format: FormatCSV, IDField: "k", ParentField: "k"}, want: "both named"},
		{name: "column named like the id", opts: WriterOptions{Format: FormatCSV, Columns: []Column{{Name: "id", Type: "S"}}}, want: `column "id"`},
		{name: "duplicate column", opts: WriterOptions{Format: FormatCSV, Columns: []Column{{Name: "a", Type: "S"}, {Name: "a", Type: "N"}}}, want: "declared twice"},
		{name: "unknown column type", opts: WriterOptions{Format: FormatParquet, Columns: []Column{{Name: "a", Type: "STRING"}}}, want: `type "STRING"`},
		{name: "bad csv delimiter", opts: WriterOptions{Format: FormatCSV, CSVDelimiter: '"'}, want: "cannot be a CSV delimiter"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewWriter(&bytes.Buffer{}, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestFormatFromPath(t *testing.T) {
	tests := []struct{ name, path, want string }{
		{name: "csv", path: "out/tree.csv", want: FormatCSV},
		{name: "upper case", path: "TREE.CSV", want: FormatCSV},
		{name: "json", path: "tree.json", want: FormatJSON},
		{name: "jsonl", path: "tree.jsonl", want: FormatJSONL},
		{name: "ndjson gzip", path: "tree.ndjson.gz", want: FormatJSONL},
		{name: "parquet", path: "tree.parquet", want: FormatParquet},
		{name: "pq zstd", path: "tree.pq.zst", want: FormatParquet},
		{name: "ddbjson", path: "tree.ddbjson", want: FormatDDBJSON},
		{name: "ddb.json", path: "tree.ddb.json.gz", want: FormatDDBJSON},
		{name: "unknown", path: "tree.txt", want: ""},
		{name: "no extension", path: "json", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := FormatFromPath(tc.path); got != tc.want {
				t.Errorf("FormatFromPath(%q) = %q, want %q", tc.path, got, tc.want)
			}
		})
	}
}

func TestDecimal(t *testing.T) {
	tests := []struct {
		name, in string
		ok       bool
		str      string // canonical text
		i64      bool
		f64      bool
	}{
		{name: "integer", in: "42", ok: true, str: "42", i64: true, f64: true},
		{name: "plus and zeros", in: "+007.50", ok: true, str: "7.5", f64: true},
		{name: "leading point", in: "-.5", ok: true, str: "-0.5", f64: true},
		{name: "trailing point", in: "5.", ok: true, str: "5", i64: true, f64: true},
		{name: "exponent integer", in: "1.5E+3", ok: true, str: "1500", i64: true, f64: true},
		{name: "negative zero", in: "-0.0", ok: true, str: "0", i64: true, f64: true},
		{name: "int64 min", in: "-9223372036854775808", ok: true, str: "-9223372036854775808", i64: true},
		{name: "beyond int64", in: "9223372036854775808", ok: true, str: "9223372036854775808"},
		{name: "a double's worth of digits", in: "0.30000000000000004", ok: true, str: "0.30000000000000004", f64: true},
		{name: "more digits than a double", in: "12345678901234567890.5", ok: true, str: "12345678901234567890.5"},
		{name: "huge", in: "9.99E+125", ok: true, str: "9.99e125", f64: true},
		{name: "tiny", in: "1E-130", ok: true, str: "1e-130", f64: true},
		{name: "empty", in: ""},
		{name: "sign only", in: "-"},
		{name: "two points", in: "1.2.3"},
		{name: "exponent without digits", in: "1e"},
		{name: "hex", in: "0x10"},
		{name: "NaN", in: "NaN"},
		{name: "space", in: " 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := parseDecimal(tc.in)
			if ok != tc.ok {
				t.Fatalf("parseDecimal(%q) ok = %v", tc.in, ok)
			}
			if !ok {
				return
			}
			if got := d.String(); got != tc.str {
				t.Errorf("String() = %q, want %q", got, tc.str)
			}
			if _, ok := d.int64(); ok != tc.i64 {
				t.Errorf("int64 ok = %v, want %v", ok, tc.i64)
			}
			if _, ok := d.float64(); ok != tc.f64 {
				t.Errorf("float64 ok = %v, want %v", ok, tc.f64)
			}
			if !ddbjson.IsJSONNumber(d.String()) {
				t.Errorf("String() = %q is not a JSON number", d.String())
			}
			back, _ := parseDecimal(d.String())
			if back != d {
				t.Errorf("String() does not parse back to the same number")
			}
		})
	}
}

func TestCloseReportsWriteErrors(t *testing.T) {
	for _, f := range Formats {
		t.Run(f, func(t *testing.T) {
			w, err := NewWriter(failingWriter{}, WriterOptions{Format: f})
			if err != nil {
				t.Fatal(err)
			}
			err = w.Write(&transform.Record{ID: "a"})
			if err == nil {
				err = w.Close()
			}
			if !errors.Is(err, errDiskFull) {
				t.Errorf("got %v, want the underlying write error", err)
			}
		})
	}
}

var errDiskFull = errors.New("disk full")

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errDiskFull }

func BenchmarkRecordWriter(b *testing.B) {
	cols := []Column{
		{Name: "created", Type: "S"},
		{Name: "name", Type: "S"},
		{Name: "score", Type: "N", Number: NumberDouble},
		{Name: "size", Type: "N", Number: NumberInt64},
	}
	recs := make([]*transform.Record, 10000)
	for i := range recs {
		recs[i] = &transform.Record{ID: fmt.Sprintf("N%d", i+1), Parent: fmt.Sprintf("N%d", i/4+1), Attrs: transform.Attrs{
			"name": attrS("Borami"), "size": attrN(fmt.Sprint(i * 37)), "score": attrN("12.34"), "created": attrS("2021-11-21T01:27:16Z"),
		}}
	}
	for _, f := range Formats {
		b.Run(f, func(b *testing.B) {
			for b.Loop() {
				w, err := NewWriter(io.Discard, WriterOptions{Format: f, Columns: cols})
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range recs {
					if err := w.Write(r); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
		})
	}
}

// FuzzDecimal checks parseDecimal against math/big: what it accepts is a
// number, its canonical text is valid JSON of the same value, and the int64
// and float64 conversions it allows are exact; and the Parquet writer's fast
// path for short decimals agrees with the exact one.
func FuzzDecimal(f *testing.F) {
	for _, s := range []string{"0", "-1.50", "+.5", "5.", "1E+3", "12345678901234567890.5", "9.99E+125", "1e-130", "1e", "0x1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := parseDecimal(s)
		if x, fast := shortDouble(s); fast {
			if exact, ok2 := d.float64(); !ok || !ok2 || exact != x {
				t.Fatalf("%q: the fast path gives %v, the exact one %v (%v)", s, x, exact, ok2)
			}
		}
		if !ok {
			return
		}
		want, isRat := new(big.Rat).SetString(s)
		if !isRat {
			t.Fatalf("parseDecimal accepts %q, math/big does not", s)
		}
		text := d.String()
		got, _ := new(big.Rat).SetString(text)
		if !ddbjson.IsJSONNumber(text) || got == nil || got.Cmp(want) != 0 {
			t.Fatalf("%q: canonical text %q is not the same JSON number", s, text)
		}
		if i, ok := d.int64(); ok && new(big.Rat).SetInt64(i).Cmp(want) != 0 {
			t.Fatalf("%q: int64 %d differs", s, i)
		}
		if x, ok := d.float64(); ok {
			back, _ := new(big.Rat).SetString(strconv.FormatFloat(x, 'g', -1, 64))
			if back.Cmp(want) != 0 {
				t.Fatalf("%q: float64 %v is not exact", s, x)
			}
		}
	})
}
