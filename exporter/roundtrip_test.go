package exporter_test

import (
	"encoding/base64"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

func attrS(v string) types.AttributeValue  { return &types.AttributeValueMemberS{Value: v} }
func attrN(v string) types.AttributeValue  { return &types.AttributeValueMemberN{Value: v} }
func attrBool(v bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: v} }
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

func writeRecordFile(t *testing.T, path string, opts records.WriterOptions, recs []*transform.Record) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := records.NewWriter(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// canonical renders a record for comparison: DynamoDB JSON with numbers in
// one canonical form, as DynamoDB itself normalises them (1.50 is 1.5).
func canonicalRecord(t *testing.T, r *transform.Record) string {
	t.Helper()
	attrs := transform.Attrs{}
	for k, v := range r.Attrs {
		attrs[k] = canonicalValue(t, v)
	}
	return r.ID + " ← " + r.Parent + " " + string(ddbjson.AppendItem(nil, attrs))
}

func canonicalValue(t *testing.T, v types.AttributeValue) types.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberN:
		x, ok := new(big.Rat).SetString(v.Value)
		if !ok {
			t.Errorf("N value %q is not a number", v.Value)
			return v
		}
		return attrN(x.RatString())
	case *types.AttributeValueMemberL:
		out := make([]types.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			out[i] = canonicalValue(t, e)
		}
		return attrL(out...)
	case *types.AttributeValueMemberM:
		out := map[string]types.AttributeValue{}
		for k, e := range v.Value {
			out[k] = canonicalValue(t, e)
		}
		return &types.AttributeValueMemberM{Value: out}
	}
	return v
}

// sameRecords compares two record sets in any order.
func sameRecordSets(t *testing.T, what string, got, want []*transform.Record) {
	t.Helper()
	render := func(recs []*transform.Record) []string {
		out := make([]string, len(recs))
		for i, r := range recs {
			out[i] = canonicalRecord(t, r)
		}
		slices.Sort(out)
		return out
	}
	g, w := render(got), render(want)
	if len(g) != len(w) {
		t.Errorf("%s: %d records, want %d", what, len(g), len(w))
	}
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			t.Errorf("%s:\n got %s\nwant %s", what, g[i], w[i])
		}
	}
}

// asJSON is what a value becomes once written as plain JSON and read back:
// binary is base64 text, and sets are lists.
func throughJSON(v types.AttributeValue) types.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberB:
		return attrS(base64.StdEncoding.EncodeToString(v.Value))
	case *types.AttributeValueMemberSS:
		out := make([]types.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			out[i] = attrS(e)
		}
		return attrL(out...)
	case *types.AttributeValueMemberNS:
		out := make([]types.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			out[i] = attrN(e)
		}
		return attrL(out...)
	case *types.AttributeValueMemberBS:
		out := make([]types.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			out[i] = attrS(base64.StdEncoding.EncodeToString(e))
		}
		return attrL(out...)
	case *types.AttributeValueMemberL:
		out := make([]types.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			out[i] = throughJSON(e)
		}
		return attrL(out...)
	case *types.AttributeValueMemberM:
		out := map[string]types.AttributeValue{}
		for k, e := range v.Value {
			out[k] = throughJSON(e)
		}
		return &types.AttributeValueMemberM{Value: out}
	}
	return v
}

// mapAttrs returns copies of recs with f applied to every attribute; f
// returns nil to drop one.
func mapAttrs(recs []*transform.Record, f func(name string, v types.AttributeValue) types.AttributeValue) []*transform.Record {
	out := make([]*transform.Record, len(recs))
	for i, r := range recs {
		c := &transform.Record{ID: r.ID, Parent: r.Parent, Attrs: transform.Attrs{}}
		for k, v := range r.Attrs {
			if v = f(k, v); v != nil {
				c.Attrs[k] = v
			}
		}
		out[i] = c
	}
	return out
}

// roundTripRecords use every type. Each column keeps to one type, so that
// Parquet types every column.
func roundTripRecords() []*transform.Record {
	return []*transform.Record{
		{ID: "CM1", Attrs: transform.Attrs{
			"name":   attrS(`Wheel, "front" left`),
			"size":   attrN("12345678901234567890.5"),
			"count":  attrN("42"),
			"active": attrBool(true),
			"blob":   &types.AttributeValueMemberB{Value: []byte{0, 1, 2, 0xff}},
			"tags":   attrL(attrS("a"), attrNull(), attrS("c")),
			"spec":   attrM("k", attrS("v"), "deep", attrM("x", attrL(attrBool(false)))),
			"dims":   attrM("w", attrN("1.5"), "h", attrNull()),
			"set":    &types.AttributeValueMemberSS{Value: []string{"x", "y"}},
			"empty":  attrS(""),
		}},
		{ID: "Zoë-😀", Parent: "CM1", Attrs: transform.Attrs{
			"name":   attrS("王芳\nline two"),
			"size":   attrN("-0.25"),
			"count":  attrN("-7"),
			"active": attrBool(false),
			"tags":   attrL(),
		}},
		{ID: "CM20", Parent: "CM1"},
		{ID: "Ngozi Ọ̀kọ́", Parent: "Zoë-😀", Attrs: transform.Attrs{"name": attrS("Σωκράτης"), "spec": attrM("k", attrS(""))}},
	}
}

func TestRoundTripThroughImporter(t *testing.T) {
	recs := roundTripRecords()
	cols := records.InferColumns(recs)
	jsonCols := map[string]bool{}
	for _, c := range cols {
		jsonCols[c.Name] = !slices.Contains([]string{"S", "N", "BOOL", "B"}, c.Type)
	}
	// What CSV gives back: an empty string is an empty cell, which reads
	// as absent; JSON columns hold binary as base64 text.
	throughCSV := mapAttrs(recs, func(k string, v types.AttributeValue) types.AttributeValue {
		if sv, ok := v.(*types.AttributeValueMemberS); ok && sv.Value == "" {
			return nil
		}
		if jsonCols[k] {
			return throughJSON(v)
		}
		return v
	})
	tests := []struct {
		name    string
		file    string
		wopts   records.WriterOptions
		ropts   records.SourceOptions
		want    []*transform.Record
		compare func(t *testing.T, got []*transform.Record)
	}{
		{
			name:  "csv",
			file:  "out.csv",
			wopts: records.WriterOptions{Format: records.FormatCSV},
			want:  throughCSV,
		},
		{
			name:  "csv with renamed fields and a delimiter",
			file:  "out.tsv",
			wopts: records.WriterOptions{Format: records.FormatCSV, IDField: "Key", ParentField: "Up", CSVDelimiter: '\t'},
			ropts: records.SourceOptions{Format: records.FormatCSV, IDField: "Key", ParentField: "Up", CSVDelimiter: '\t'},
			want:  throughCSV,
		},
		{
			name:  "json",
			file:  "out.json",
			wopts: records.WriterOptions{Format: records.FormatJSON},
			want:  mapAttrs(recs, func(_ string, v types.AttributeValue) types.AttributeValue { return throughJSON(v) }),
		},
		{
			name:  "jsonl",
			file:  "out.jsonl",
			wopts: records.WriterOptions{Format: records.FormatJSONL},
			want:  mapAttrs(recs, func(_ string, v types.AttributeValue) types.AttributeValue { return throughJSON(v) }),
		},
		{
			name:  "ddbjson",
			file:  "out.ddbjson",
			wopts: records.WriterOptions{Format: records.FormatDDBJSON},
			want:  recs,
		},
		{
			name:  "parquet",
			file:  "out.parquet",
			wopts: records.WriterOptions{Format: records.FormatParquet},
			// Sets are lists in Parquet.
			want: mapAttrs(recs, func(_ string, v types.AttributeValue) types.AttributeValue {
				if _, ok := v.(*types.AttributeValueMemberSS); ok {
					return throughJSON(v)
				}
				return v
			}),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			writeRecordFile(t, path, tc.wopts, recs)
			if tc.wopts.Format == records.FormatCSV {
				types, err := records.ParseTypes(records.TypesFlag(cols))
				if err != nil {
					t.Fatal(err)
				}
				tc.ropts.Types = types
			}
			sameRecordSets(t, tc.name, readFile(t, path, tc.ropts), tc.want)
		})
	}
}

// TestParquetJSONColumnRoundTrip covers the columns Parquet cannot type:
// values of several types, and NULLs where a null would read as absent.
// They are JSON-annotated strings that a reader must parse.
func TestParquetJSONColumnRoundTrip(t *testing.T) {
	recs := []*transform.Record{
		{ID: "a", Attrs: transform.Attrs{"mixed": attrS("x"), "nothing": attrNull(), "l": attrL(attrS("a"), attrN("1"))}},
		{ID: "b", Parent: "a", Attrs: transform.Attrs{"mixed": attrN("12345678901234567890123456789012345678")}},
	}
	path := filepath.Join(t.TempDir(), "out.parquet")
	writeRecordFile(t, path, records.WriterOptions{Format: records.FormatParquet}, recs)
	got := readFile(t, path, records.SourceOptions{})
	sameRecordSets(t, "parquet JSON columns", got, recs)
}

// TestFixturesAgree checks that the CSV, JSON and Parquet files of each
// dataset in fixtures/ hold the same records.
func TestFixturesAgree(t *testing.T) {
	for _, name := range []string{"folders", "cars", "org"} {
		t.Run(name, func(t *testing.T) {
			base := filepath.Join("..", "fixtures", name)
			spec, err := os.ReadFile(base + ".types")
			if err != nil {
				t.Fatal(err)
			}
			typed, err := records.ParseTypes(strings.TrimSpace(string(spec)))
			if err != nil {
				t.Fatalf("%s.types: %v", name, err)
			}
			fromJSON := readFile(t, base+".json", records.SourceOptions{})
			fromCSV := readFile(t, base+".csv", records.SourceOptions{Types: typed})
			fromParquet := readFile(t, base+".parquet", records.SourceOptions{})
			if len(fromJSON) < 40 {
				t.Fatalf("%s.json has %d records", name, len(fromJSON))
			}
			sameRecordSets(t, name+".parquet against .json", fromParquet, fromJSON)
			// CSV cannot tell an empty string from an absent attribute.
			noEmpty := mapAttrs(fromJSON, func(_ string, v types.AttributeValue) types.AttributeValue {
				if sv, ok := v.(*types.AttributeValueMemberS); ok && sv.Value == "" {
					return nil
				}
				return v
			})
			sameRecordSets(t, name+".csv against .json", fromCSV, noEmpty)
		})
	}
}
