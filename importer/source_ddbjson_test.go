package importer

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/transform"
)

func TestDDBJSONSource(t *testing.T) {
	data := `{"Item":{"id":{"S":"r"},"name":{"S":"root"},"tags":{"SS":["a","b"]}}}
{"Item":{"id":{"N":"42"},"parent_id":{"S":"r"},"size":{"N":"1.50"},"m":{"M":{"k":{"L":[{"NULL":true},{"B":"AAE="}]}}}}}

{"Item":{"id":{"S":"c"},"parent_id":{"N":"42"},"gone":{"NULL":true}}}
{"Item":{"id":{"S":"d"},"parent_id":{"NULL":true}}}
{"id":{"S":"bare"}}
{"Item":{"id":{"S":"e"},"x":{"S":1}}}
{"Item":{"id":{"BOOL":true}}}
not json
{"Item":{"id":{"S":"f"},"parent_id":{"S":"e"}}}`
	tests := []struct {
		name string
		file string
		data []byte
	}{
		{name: "plain", file: "items.ddbjson", data: []byte(data)},
		{name: "gzip", file: "items.ddbjson.gz", data: gzipped(t, []byte(data))},
		{name: "zstd without a telling suffix", file: "items.ddbjson", data: zstded(t, []byte(data))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTemp(t, tt.file, tt.data)
			checkResults(t, path, openAll(t, path, SourceOptions{}), []want{
				{id: "r", line: 1, attrs: attrs{"name": sv("root"), "tags": ssv("a", "b")}},
				{id: "42", parent: "r", line: 2, attrs: attrs{"size": nv("1.50"), "m": mv(attrs{"k": lv(nullv(), binv([]byte{0, 1}))})}},
				{id: "c", parent: "42", line: 4, attrs: attrs{"gone": nullv()}},
				{id: "d", line: 5, attrs: attrs{}},
				{id: "bare", line: 6, attrs: attrs{}},
				{id: "e", line: 7, errMsg: "column 34: attribute x: S wants a string, found a number"},
				{id: "", line: 8, errMsg: `the id field "id" is a boolean`},
				{id: "", line: 9, errMsg: "column 1: want '{', found 'n'"},
				{id: "f", parent: "e", line: 10, attrs: attrs{}},
			})
		})
	}
}

// writeExport writes an export directory as ExportTableToPointInTime does.
func writeExport(t *testing.T, manifest bool) (dir string, files []string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	contents := map[string]string{
		"zz1.json.gz": `{"Item":{"id":{"S":"r"}}}` + "\n" + `{"Item":{"id":{"S":"a"},"parent_id":{"S":"r"}}}` + "\n",
		"aa2.json.gz": `{"Item":{"id":{"S":"b"},"parent_id":{"S":"a"}}}` + "\n",
	}
	var lines []string
	for _, name := range []string{"zz1.json.gz", "aa2.json.gz"} {
		p := filepath.Join(dir, "data", name)
		if err := os.WriteFile(p, gzipped(t, []byte(contents[name])), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
		lines = append(lines, `{"itemCount":1,"md5Checksum":"x","etag":"y","dataFileS3Key":"prefix/AWSDynamoDB/01234567890123-abcdefgh/data/`+name+`"}`)
	}
	if manifest {
		m := strings.Join(lines, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(dir, "manifest-files.json"), []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "manifest-summary.json"), []byte(`{"itemCount":3}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, files
}

func TestDDBJSONExportDir(t *testing.T) {
	t.Run("in manifest order", func(t *testing.T) {
		dir, files := writeExport(t, true)
		got := openAll(t, dir, SourceOptions{})
		if len(got) != 3 {
			t.Fatalf("got %d results, want 3", len(got))
		}
		checkResults(t, files[0], got[:2], []want{{id: "r", line: 1}, {id: "a", parent: "r", line: 2}})
		checkResults(t, files[1], got[2:], []want{{id: "b", parent: "a", line: 1}})
	})
	t.Run("without a manifest, in name order", func(t *testing.T) {
		dir, files := writeExport(t, false)
		got := openAll(t, dir, SourceOptions{})
		if len(got) != 3 {
			t.Fatalf("got %d results, want 3", len(got))
		}
		checkResults(t, files[1], got[:1], []want{{id: "b", parent: "a", line: 1}})
		checkResults(t, files[0], got[1:], []want{{id: "r", line: 1}, {id: "a", parent: "r", line: 2}})
	})
	t.Run("a data file the manifest names is missing", func(t *testing.T) {
		dir, files := writeExport(t, true)
		os.Remove(files[1])
		_, err := OpenSource(dir, SourceOptions{})
		if err == nil || !strings.Contains(err.Error(), "manifest-files.json:2 names the data file") || !strings.Contains(err.Error(), "aa2.json.gz, which is missing") {
			t.Fatalf("got %v, want an error naming the manifest line and the missing file", err)
		}
	})
	t.Run("not an export", func(t *testing.T) {
		_, err := OpenSource(t.TempDir(), SourceOptions{})
		if err == nil || !strings.Contains(err.Error(), "is not a DynamoDB export") {
			t.Fatalf("got %v, want an error saying it is not an export", err)
		}
	})
}

func TestOpenItemSource(t *testing.T) {
	dir, files := writeExport(t, true)
	src, err := OpenItemSource(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	type seen struct {
		id, file string
		line     int
	}
	var got []seen
	for {
		item, file, line, err := src.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		id := item["id"]
		if _, ok := item["id"]; !ok {
			t.Fatalf("item without its id: %s", ddbjson.AppendItem(nil, item))
		}
		got = append(got, seen{id: string(ddbjson.AppendValue(nil, id)), file: file, line: line})
	}
	want := []seen{
		{id: `{"S":"r"}`, file: files[0], line: 1},
		{id: `{"S":"a"}`, file: files[0], line: 2},
		{id: `{"S":"b"}`, file: files[1], line: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestItemSourceBadLine(t *testing.T) {
	path := writeTemp(t, "x.json", []byte("{\"Item\":{\"a\":{\"S\":\"x\"}}}\n{\"Item\":{\"a\":{\"Q\":1}}}\n{\"Item\":{}}\n"))
	src, err := OpenItemSource(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var errs, items int
	for {
		_, file, line, err := src.Next(context.Background())
		if err == io.EOF {
			break
		}
		var re *transform.RowError
		if errors.As(err, &re) {
			errs++
			if re.File != path || re.Line != 2 || file != path || line != 2 || !strings.Contains(re.Error(), `unknown type "Q"`) {
				t.Errorf("got %v at %s:%d", re, file, line)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		items++
	}
	if errs != 1 || items != 2 {
		t.Errorf("got %d items and %d errors, want 2 and 1", items, errs)
	}
}
