package records

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/records/ddbitems"
	"github.com/treeport/treeport/records/infile"
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

// exportID is the id of the exports the tests write.
const exportID = "01234567890123-abcdefgh"

// writeExport writes an export directory as ExportTableToPointInTime does,
// with or without its manifests, and returns its data files in manifest
// order.
func writeExport(t *testing.T, manifest bool) (dir string, files []string) {
	t.Helper()
	dir = t.TempDir()
	return dir, writeExportAt(t, dir, manifest)
}

// writeExportAt writes an export into dir, which it creates: two data files
// (in manifest order, the second before the first by name), an empty one as
// an empty partition gives, and, with manifest, manifest-files.json and
// manifest-summary.json as DynamoDB writes them.
func writeExportAt(t *testing.T, dir string, manifest bool) (files []string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	contents := map[string]string{
		"zz1.json.gz": `{"Item":{"id":{"S":"r"}}}` + "\n" + `{"Item":{"id":{"S":"a"},"parent_id":{"S":"r"}}}` + "\n",
		"aa2.json.gz": `{"Item":{"id":{"S":"b"},"parent_id":{"S":"a"}}}` + "\n",
		"mm3.json.gz": "",
	}
	var lines []string
	for _, name := range []string{"zz1.json.gz", "aa2.json.gz", "mm3.json.gz"} {
		p := filepath.Join(dir, "data", name)
		data := gzipped(t, []byte(contents[name]))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
		sum := md5.Sum(data)
		lines = append(lines, fmt.Sprintf(`{"itemCount":%d,"md5Checksum":%q,"etag":"0123456789abcdef0123456789abcdef-1","dataFileS3Key":"prefix/AWSDynamoDB/%s/data/%s"}`,
			strings.Count(contents[name], "\n"), base64.StdEncoding.EncodeToString(sum[:]), exportID, name))
	}
	if manifest {
		putFile(t, filepath.Join(dir, "manifest-files.json"), strings.Join(lines, "\n")+"\n")
		putFile(t, filepath.Join(dir, "manifest-summary.json"), `{"version":"2020-06-30","exportArn":"arn:aws:dynamodb:us-east-1:123456789012:table/Org/export/`+exportID+`",`+
			`"startTime":"2020-11-04T07:28:34.028Z","endTime":"2020-11-04T07:33:43.897Z","tableArn":"arn:aws:dynamodb:us-east-1:123456789012:table/Org",`+
			`"tableId":"12345a12-abcd-123a-ab12-1234abc12345","exportTime":"2020-11-04T07:28:34.028Z","s3Bucket":"bucket","s3Prefix":"prefix",`+
			`"s3SseAlgorithm":"AES256","s3SseKmsKeyId":null,"manifestFilesS3Key":"prefix/AWSDynamoDB/`+exportID+`/manifest-files.json",`+
			`"billedSizeBytes":0,"itemCount":3,"outputFormat":"DYNAMODB_JSON","exportType":"FULL_EXPORT"}`)
		putFile(t, filepath.Join(dir, "_started"), "")
	}
	return files
}

func putFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// edit replaces old with new in the file at path, once.
func edit(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s has no %q", path, old)
	}
	putFile(t, path, strings.Replace(string(b), old, new, 1))
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
		if err == nil || !errors.Is(err, infile.ErrInvalid) || !strings.Contains(err.Error(), "manifest-files.json:2 names the data file") || !strings.Contains(err.Error(), "aa2.json.gz, which is missing") {
			t.Fatalf("got %v, want an invalid input naming the manifest line and the missing file", err)
		}
	})
	t.Run("not an export", func(t *testing.T) {
		_, err := OpenSource(t.TempDir(), SourceOptions{})
		if err == nil || !errors.Is(err, infile.ErrInvalid) || !strings.Contains(err.Error(), "is not a DynamoDB export") {
			t.Fatalf("got %v, want an invalid input saying it is not an export", err)
		}
	})
}

// TestDDBJSONExportFolders reads an export from the folders a user may give:
// the export's own, the AWSDynamoDB folder above it, or the export prefix
// that holds AWSDynamoDB.
func TestDDBJSONExportFolders(t *testing.T) {
	root := t.TempDir()
	export := filepath.Join(root, "AWSDynamoDB", exportID)
	files := writeExportAt(t, export, true)
	// An incremental export's shared data folder is no export of its own.
	if err := os.MkdirAll(filepath.Join(root, "AWSDynamoDB", "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, dir string }{
		{name: "the export's folder", dir: export},
		{name: "AWSDynamoDB", dir: filepath.Join(root, "AWSDynamoDB")},
		{name: "the export prefix", dir: root},
		{name: "the export prefix with a trailing slash", dir: root + string(filepath.Separator)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := openAll(t, tt.dir, SourceOptions{})
			if len(got) != 3 {
				t.Fatalf("got %d results, want 3", len(got))
			}
			checkResults(t, files[0], got[:2], []want{{id: "r", line: 1}, {id: "a", parent: "r", line: 2}})
			checkResults(t, files[1], got[2:], []want{{id: "b", parent: "a", line: 1}})
		})
	}

	t.Run("two exports", func(t *testing.T) {
		other := filepath.Join(root, "AWSDynamoDB", "01700000000000-a1b2c3d4")
		writeExportAt(t, other, true)
		defer os.RemoveAll(other)
		for _, dir := range []string{root, filepath.Join(root, "AWSDynamoDB")} {
			_, err := OpenSource(dir, SourceOptions{})
			if !errors.Is(err, infile.ErrInvalid) {
				t.Fatalf("%s: got %v, want an invalid input", dir, err)
			}
			for _, s := range []string{"holds 2 DynamoDB exports", "pass the folder of the one to read", export + " (table Org, as of 2020-11-04T07:28:34.028Z)", other} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%s: the error does not say %q:\n%v", dir, s, err)
				}
			}
		}
		// One of them, named, is read.
		if got := openAll(t, other, SourceOptions{}); len(got) != 3 {
			t.Errorf("got %d results from %s, want 3", len(got), other)
		}
	})

	t.Run("an export that has not finished", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "AWSDynamoDB", exportID)
		writeExportAt(t, dir, false)
		putFile(t, filepath.Join(dir, "_started"), "")
		_, err := OpenSource(filepath.Dir(dir), SourceOptions{})
		if !errors.Is(err, infile.ErrInvalid) || !strings.Contains(err.Error(), "has not finished") {
			t.Fatalf("got %v, want an invalid input saying the export has not finished", err)
		}
	})
}

// readToError reads src to its end and returns the error that ended it, with
// the ids read before.
func readToError(t *testing.T, path string) (ids []string, err error) {
	t.Helper()
	src, err := OpenSource(path, SourceOptions{})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	for {
		rec, err := src.Next(context.Background())
		if err == io.EOF {
			return ids, nil
		}
		var re *transform.RowError
		if errors.As(err, &re) {
			ids = append(ids, "bad:"+re.Error())
			continue
		}
		if err != nil {
			if _, again := src.Next(context.Background()); again != io.EOF {
				t.Errorf("Next after %v = %v, want io.EOF", err, again)
			}
			return ids, err
		}
		ids = append(ids, rec.ID)
	}
}

// TestDDBJSONExportChecks checks an export against its own manifests: each
// way it can be incomplete or damaged is an invalid input that says which
// file, what was expected and found, and what to do.
// exportCheck is an export with one thing wrong, and what reading it says.
type exportCheck struct {
	name   string
	tamper func(t *testing.T, dir string, files []string)
	atOpen bool     // the error comes from OpenSource, before any item
	ids    []string // read before the error
	want   []string // in the error
}

// exportChecks are the exports TestDDBJSONExportChecks reads, and the
// importer's ReadInput too (readinput_test.go).
func exportChecks() []exportCheck {
	return []exportCheck{
		{
			name: "a data file changed",
			tamper: func(t *testing.T, dir string, files []string) {
				// The same number of items, other contents.
				putFile(t, files[1], string(gzipped(t, []byte(`{"Item":{"id":{"S":"B"},"parent_id":{"S":"a"}}}`+"\n"))))
			},
			ids:  []string{"r", "a", "B"},
			want: []string{"aa2.json.gz has the MD5 ", "but manifest-files.json:2 says ", "the file changed or was cut short", "export the table again"},
		},
		{
			name: "a tampered md5Checksum",
			tamper: func(t *testing.T, dir string, files []string) {
				sum := md5.Sum([]byte("something else"))
				b, _ := os.ReadFile(files[0])
				right := md5.Sum(b)
				edit(t, filepath.Join(dir, "manifest-files.json"), base64.StdEncoding.EncodeToString(right[:]), base64.StdEncoding.EncodeToString(sum[:]))
			},
			ids:  []string{"r", "a"},
			want: []string{"zz1.json.gz has the MD5 ", "but manifest-files.json:1 says " + func() string { s := md5.Sum([]byte("something else")); return base64.StdEncoding.EncodeToString(s[:]) }(), "export the table again"},
		},
		{
			name: "a data file cut short",
			tamper: func(t *testing.T, dir string, files []string) {
				b, err := os.ReadFile(files[0])
				if err != nil {
					t.Fatal(err)
				}
				putFile(t, files[0], string(b[:len(b)-10]))
			},
			// The items come out before the stream breaks; then the MD5
			// says more than a broken gzip stream would.
			ids:  []string{"r", "a"},
			want: []string{"zz1.json.gz has the MD5 ", "but manifest-files.json:1 says ", "cut short", "the export is incomplete or damaged"},
		},
		{
			name: "an itemCount that is not the file's",
			tamper: func(t *testing.T, dir string, files []string) {
				edit(t, filepath.Join(dir, "manifest-files.json"), `{"itemCount":1,`, `{"itemCount":2,`)
				edit(t, filepath.Join(dir, "manifest-summary.json"), `"itemCount":3`, `"itemCount":4`)
			},
			ids:  []string{"r", "a", "b"},
			want: []string{"aa2.json.gz holds 1 item, but manifest-files.json:2 says 2", "the export is incomplete or damaged; export the table again"},
		},
		{
			name: "a summary itemCount that is not the files'",
			tamper: func(t *testing.T, dir string, files []string) {
				edit(t, filepath.Join(dir, "manifest-summary.json"), `"itemCount":3`, `"itemCount":5`)
			},
			atOpen: true,
			want:   []string{"manifest-summary.json counts 5 items, but the lines of ", "manifest-files.json add up to 3", "export the table again"},
		},
		{
			name: "a summary itemCount that is not the data's, without manifest-files.json",
			tamper: func(t *testing.T, dir string, files []string) {
				os.Remove(filepath.Join(dir, "manifest-files.json"))
				edit(t, filepath.Join(dir, "manifest-summary.json"), `"itemCount":3`, `"itemCount":5`)
			},
			ids:  []string{"b", "r", "a"},
			want: []string{"manifest-summary.json counts 5 items, but the data files hold 3", "export the table again"},
		},
		{
			name: "an Amazon Ion export",
			tamper: func(t *testing.T, dir string, files []string) {
				edit(t, filepath.Join(dir, "manifest-summary.json"), `"outputFormat":"DYNAMODB_JSON"`, `"outputFormat":"ION"`)
			},
			atOpen: true,
			want:   []string{"is an Amazon Ion export", "treeport reads DynamoDB JSON exports only", "--export-format DYNAMODB_JSON"},
		},
		{
			name: "Amazon Ion data files, without a summary",
			tamper: func(t *testing.T, dir string, files []string) {
				os.Remove(filepath.Join(dir, "manifest-summary.json"))
				edit(t, filepath.Join(dir, "manifest-files.json"), `zz1.json.gz"`, `zz1.ion.gz"`)
			},
			atOpen: true,
			want:   []string{"is an Amazon Ion export"},
		},
		{
			name: "an incremental export",
			tamper: func(t *testing.T, dir string, files []string) {
				edit(t, filepath.Join(dir, "manifest-summary.json"), `"exportType":"FULL_EXPORT"`, `"exportType":"INCREMENTAL_EXPORT"`)
			},
			atOpen: true,
			want:   []string{"INCREMENTAL_EXPORT", "holds changes", "--export-type FULL_EXPORT"},
		},
		{
			name: "an md5Checksum that is not one",
			tamper: func(t *testing.T, dir string, files []string) {
				b, _ := os.ReadFile(files[1])
				right := md5.Sum(b)
				edit(t, filepath.Join(dir, "manifest-files.json"), base64.StdEncoding.EncodeToString(right[:]), "x")
			},
			atOpen: true,
			want:   []string{`manifest-files.json:2: md5Checksum "x" is not a base64 MD5`},
		},
	}
}

func TestDDBJSONExportChecks(t *testing.T) {
	tests := exportChecks()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "AWSDynamoDB", exportID)
			files := writeExportAt(t, dir, true)
			tt.tamper(t, dir, files)
			if tt.atOpen {
				_, err := OpenSource(root, SourceOptions{})
				checkInvalid(t, err, tt.want)
				return
			}
			ids, err := readToError(t, root)
			checkInvalid(t, err, tt.want)
			if !reflect.DeepEqual(ids, tt.ids) {
				t.Errorf("read %q before the error, want %q", ids, tt.ids)
			}
		})
	}
}

func checkInvalid(t *testing.T, err error, want []string) {
	t.Helper()
	if !errors.Is(err, infile.ErrInvalid) {
		t.Fatalf("got %v, want an error wrapping infile.ErrInvalid", err)
	}
	for _, s := range want {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the error does not say %q:\n%v", s, err)
		}
	}
}

func TestOpenItemSource(t *testing.T) {
	dir, files := writeExport(t, true)
	src, err := ddbitems.Open(dir)
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
	src, err := ddbitems.Open(path)
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
