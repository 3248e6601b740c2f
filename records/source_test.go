package records

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/records/infile"
	"github.com/treeport/treeport/transform"
)

type attrs = map[string]types.AttributeValue

func sv(s string) types.AttributeValue   { return &types.AttributeValueMemberS{Value: s} }
func nv(s string) types.AttributeValue   { return &types.AttributeValueMemberN{Value: s} }
func bv(b bool) types.AttributeValue     { return &types.AttributeValueMemberBOOL{Value: b} }
func binv(b []byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: b} }
func nullv() types.AttributeValue        { return &types.AttributeValueMemberNULL{Value: true} }
func lv(vs ...types.AttributeValue) types.AttributeValue {
	if vs == nil {
		vs = []types.AttributeValue{}
	}
	return &types.AttributeValueMemberL{Value: vs}
}
func mv(m attrs) types.AttributeValue { return &types.AttributeValueMemberM{Value: m} }

// writeTemp writes data to a file of the given name in a new directory.
func writeTemp(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func gzipped(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zstded(t testing.TB, data []byte) []byte {
	t.Helper()
	w, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	return w.EncodeAll(data, nil)
}

// result is what a source gave for one call of Next.
type result struct {
	rec *transform.Record
	err *transform.RowError
}

// readAll calls Next until io.EOF. Any error other than a RowError fails
// the test, as does a source that never ends.
func readAll(t testing.TB, src Source) []result {
	t.Helper()
	var out []result
	for i := 0; ; i++ {
		if i > 100000 {
			t.Fatal("the source does not end")
		}
		rec, err := src.Next(context.Background())
		if err == io.EOF {
			if rec != nil {
				t.Fatalf("io.EOF came with a record: %+v", rec)
			}
			if _, err := src.Next(context.Background()); err != io.EOF {
				t.Fatalf("Next after io.EOF = %v, want io.EOF again", err)
			}
			return out
		}
		var re *transform.RowError
		if err != nil && !errors.As(err, &re) {
			t.Fatalf("Next: %v (%T), want a RowError or io.EOF", err, err)
		}
		if err == nil && rec == nil {
			t.Fatal("Next returned neither a record nor an error")
		}
		out = append(out, result{rec: rec, err: re})
	}
}

func openAll(t testing.TB, path string, opts SourceOptions) []result {
	t.Helper()
	src, err := OpenSource(path, opts)
	if err != nil {
		t.Fatalf("OpenSource: %v", err)
	}
	defer func() {
		if err := src.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	return readAll(t, src)
}

// want is an expected record, or an expected error when errMsg is set.
type want struct {
	id, parent string
	line       int
	attrs      attrs // nil: not checked
	errMsg     string
}

func checkResults(t *testing.T, file string, got []result, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		for _, r := range got {
			if r.err != nil {
				t.Logf("error: %v", r.err)
			} else {
				t.Logf("record: %s line %d", r.rec.ID, r.rec.Line)
			}
		}
		t.Fatalf("got %d results, want %d", len(got), len(wants))
	}
	for i, w := range wants {
		r := got[i]
		if w.errMsg != "" {
			if r.err == nil {
				t.Errorf("#%d: got record %q, want an error saying %q", i, r.rec.ID, w.errMsg)
				continue
			}
			if r.err.File != file || r.err.Line != w.line || r.err.ID != w.id {
				t.Errorf("#%d: error at %s:%d id %q, want %s:%d id %q (%v)", i, r.err.File, r.err.Line, r.err.ID, file, w.line, w.id, r.err)
			}
			if !strings.Contains(r.err.Error(), w.errMsg) {
				t.Errorf("#%d: error %q does not say %q", i, r.err, w.errMsg)
			}
			if !errors.Is(r.err, transform.ErrParse) {
				t.Errorf("#%d: error %v does not wrap transform.ErrParse", i, r.err)
			}
			continue
		}
		if r.err != nil {
			t.Errorf("#%d: unexpected error %v", i, r.err)
			continue
		}
		if r.rec.ID != w.id || r.rec.Parent != w.parent || r.rec.Line != w.line || r.rec.File != file {
			t.Errorf("#%d: got id %q parent %q at %s:%d, want id %q parent %q at %s:%d",
				i, r.rec.ID, r.rec.Parent, r.rec.File, r.rec.Line, w.id, w.parent, file, w.line)
		}
		if w.attrs != nil && !reflect.DeepEqual(r.rec.Attrs, w.attrs) {
			t.Errorf("#%d (id %q): attributes\n got %s\nwant %s", i, w.id, ddbjson.AppendItem(nil, r.rec.Attrs), ddbjson.AppendItem(nil, w.attrs))
		}
	}
}

func TestDetectFormat(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, path, want string
	}{
		{name: "csv", path: "nodes.csv", want: "csv"},
		{name: "upper case", path: "NODES.CSV", want: "csv"},
		{name: "gzip csv", path: "nodes.csv.gz", want: "csv"},
		{name: "json", path: "dir/nodes.json", want: "json"},
		{name: "jsonl", path: "nodes.jsonl", want: "jsonl"},
		{name: "ndjson zstd", path: "nodes.ndjson.zst", want: "jsonl"},
		{name: "parquet", path: "nodes.parquet", want: "parquet"},
		{name: "ddbjson", path: "items.ddbjson.gz", want: "ddbjson"},
		// export --out t.ddb.jsonl writes DynamoDB JSON: read it as such.
		{name: "ddb.jsonl", path: "t.ddb.jsonl", want: "ddbjson"},
		{name: "ddb.json", path: "t.ddb.json.zst", want: "ddbjson"},
		{name: "pq", path: "nodes.pq", want: "parquet"},
		{name: "directory", path: dir, want: "ddbjson"},
		{name: "unknown", path: "nodes.txt", want: ""},
		{name: "no extension", path: "nodes", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DetectFormat(tt.path); got != tt.want {
				t.Errorf("DetectFormat(%q) = %q, want %q", tt.path, got, tt.want)
			}
		})
	}
}

func TestParseTypes(t *testing.T) {
	tests := []struct {
		name, spec string
		want       map[string]string
		err        string
	}{
		{name: "several", spec: "size:N,active:bool, tags:JSON,blob:B,name:S", want: map[string]string{"size": "N", "active": "BOOL", "tags": "JSON", "blob": "B", "name": "S"}},
		{name: "colon in the name", spec: "a:b:N", want: map[string]string{"a:b": "N"}},
		{name: "empty", spec: "", want: map[string]string{}},
		{name: "unknown type", spec: "size:INT", err: `unknown type "INT"`},
		{name: "no type", spec: "size", err: "want COLUMN:TYPE"},
		{name: "no column", spec: ":N", err: "want COLUMN:TYPE"},
		{name: "twice", spec: "a:N,a:S", err: `column "a" is typed twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTypes(tt.spec)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, %v; want an error saying %q", got, err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestOpenSourceErrors(t *testing.T) {
	csvFile := writeTemp(t, "n.csv", []byte("id,parent_id\na,\n"))
	tests := []struct {
		name string
		path string
		opts SourceOptions
		err  string
	}{
		{name: "missing file", path: filepath.Join(t.TempDir(), "none.csv"), err: "no such file"},
		{name: "unknown name", path: writeTemp(t, "n.txt", []byte("x")), err: "use --format"},
		{name: "unknown format", path: csvFile, opts: SourceOptions{Format: "xml"}, err: `unknown format "xml"`},
		{name: "types on json", path: writeTemp(t, "n.json", []byte("[]")), opts: SourceOptions{Types: map[string]string{"a": "N"}}, err: "--types applies to CSV only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := OpenSource(tt.path, tt.opts)
			if err == nil {
				src.Close()
				t.Fatalf("no error, want one saying %q", tt.err)
			}
			if !strings.Contains(err.Error(), tt.err) {
				t.Errorf("error %q does not say %q", err, tt.err)
			}
		})
	}
}

// Compressed input is recognised by its magic bytes, whatever its name.
func TestCompressedInput(t *testing.T) {
	csvData := []byte("id,parent_id,name\nr,,root\nc,r,child\n")
	jsonData := []byte(`[{"id":"r"},{"id":"c","parent_id":"r"}]`)
	tests := []struct {
		name string
		file string
		data []byte
	}{
		{name: "gzip named .csv", file: "n.csv", data: gzipped(t, csvData)},
		{name: "zstd named .csv", file: "n.csv", data: zstded(t, csvData)},
		{name: "gzip named .csv.gz", file: "n.csv.gz", data: gzipped(t, csvData)},
		{name: "zstd json", file: "n.json.zst", data: zstded(t, jsonData)},
		{name: "gzip json named .json", file: "n.json", data: gzipped(t, jsonData)},
		{name: "concatenated gzip members", file: "n.csv", data: append(gzipped(t, csvData[:18]), gzipped(t, csvData[18:])...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTemp(t, tt.file, tt.data)
			got := openAll(t, path, SourceOptions{})
			line := func(n int) int {
				if strings.Contains(tt.file, "json") {
					return 1
				}
				return n
			}
			checkResults(t, path, got, []want{{id: "r", line: line(2)}, {id: "c", parent: "r", line: line(3)}})
		})
	}
}

func TestCorruptCompressedInput(t *testing.T) {
	var rows strings.Builder
	rows.WriteString("id,parent_id\n")
	for i := range 20000 {
		rows.WriteString("node-")
		rows.WriteString(strings.Repeat("x", i%7))
		rows.WriteString(",\n")
	}
	gz := gzipped(t, []byte(rows.String()))
	path := writeTemp(t, "n.csv", gz[:len(gz)/2])
	got := openAll(t, path, SourceOptions{})
	last := got[len(got)-1]
	if last.err == nil || !strings.Contains(last.err.Error(), "gzip data is corrupt or cut short") {
		t.Fatalf("last result %+v, want a RowError about the cut gzip data", last)
	}
	if last.err.File != path || last.err.Line == 0 {
		t.Errorf("the error says %s:%d, want the file and a line", last.err.File, last.err.Line)
	}
	for _, r := range got[:len(got)-1] {
		if r.err != nil {
			t.Fatalf("error before the cut: %v", r.err)
		}
	}
}

func ssv(s ...string) types.AttributeValue { return &types.AttributeValueMemberSS{Value: s} }

// TestEmptyFileIsRefused: a file that holds nothing (or nothing but blank
// space, once decompressed) is invalid input in every format, with a
// message that says so; an empty JSON array is an input of no records.
func TestEmptyFileIsRefused(t *testing.T) {
	tests := []struct {
		name, file string
		data       []byte
		err        string // "" when the input is valid
	}{
		{"empty CSV", "n.csv", nil, "the file is empty: a CSV input needs a header row"},
		{"blank CSV", "n.csv", []byte("\n\r\n"), "nothing but blank space"},
		{"empty JSON", "n.json", nil, "the file is empty: a JSON input is an array of objects ([] for none)"},
		{"blank JSON", "n.json", []byte(" \n\t\n"), "nothing but blank space"},
		{"BOM only JSON Lines", "n.jsonl", []byte("\uFEFF\n"), "nothing but blank space"},
		{"empty JSON Lines", "n.jsonl", nil, "the file is empty: a JSON Lines input"},
		{"empty gzip JSON", "n.json.gz", gzipped(t, nil), "the file is empty"},
		{"empty Parquet", "n.parquet", nil, "the file is empty: a Parquet file"},
		{"empty DynamoDB JSON", "n.ddbjson", nil, "the file is empty: a DynamoDB JSON input"},
		{"empty, no format in the name", "n.txt", nil, "the file is empty"},
		{"empty array", "n.json", []byte("[]"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTemp(t, tt.file, tt.data)
			src, err := OpenSource(path, SourceOptions{})
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				defer src.Close()
				if _, err := src.Next(context.Background()); err != io.EOF {
					t.Errorf("Next: %v, want io.EOF", err)
				}
				return
			}
			if err == nil {
				src.Close()
				t.Fatal("no error")
			}
			if !errors.Is(err, infile.ErrInvalid) || !strings.Contains(err.Error(), path+": ") || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("error %q: want infile.ErrInvalid, the file and %q", err, tt.err)
			}
		})
	}
}
