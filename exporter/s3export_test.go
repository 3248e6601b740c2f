package exporter_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/s3io"
	"github.com/treeport/treeport/internal/testserver/s3local"
	"github.com/treeport/treeport/layouts"
)

// layoutItems are the items a layout makes of a fixture.
func layoutItems(t *testing.T, l layouts.Layout, fixture string) []layouts.Item {
	t.Helper()
	path, opts := fixtureSource(t, fixture, "csv")
	in, err := importer.ReadInput(context.Background(), importer.InputOptions{Path: path, Source: opts})
	if err != nil {
		t.Fatal(err)
	}
	if p := in.CheckLayout(l); len(p) > 0 {
		t.Fatal(p)
	}
	var items []layouts.Item
	if _, err := in.Emit(context.Background(), importer.EmitOptions{Layout: l}, func(_ int64, item layouts.Item) error {
		items = append(items, item)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return items
}

// s3Export is an ExportTableToPointInTime export as DynamoDB writes it to S3.
type s3Export struct {
	summary string            // manifest-summary.json; "" for none
	files   map[string][]byte // data file name → gzip DynamoDB JSON
	order   []string          // the files in manifest order
	counts  map[string]int    // items a data file holds
	// manifestKey gives a data file's dataFileS3Key; nil for no
	// manifest-files.json.
	manifestKey func(folder, name string) string
	badMD5      string // a data file whose manifest MD5 is wrong
}

const exportID = "01700000000000-a1b2c3d4"

// newS3Export splits items into data files, one of them empty as an empty
// partition's is.
func newS3Export(t *testing.T, items []layouts.Item, perFile int) *s3Export {
	t.Helper()
	e := &s3Export{
		summary: `{"version":"2020-06-30","exportArn":"arn:aws:dynamodb:us-east-1:1:table/T/export/` + exportID + `","itemCount":` + fmt.Sprint(len(items)) + `,"outputFormat":"DYNAMODB_JSON","exportType":"FULL_EXPORT"}`,
		files:   map[string][]byte{},
		counts:  map[string]int{},
		manifestKey: func(folder, name string) string {
			return folder + "data/" + name
		},
	}
	gz := func(items []layouts.Item) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		for _, item := range items {
			zw.Write(ddbjson.AppendLine(nil, item))
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for n := 0; n*perFile < len(items); n++ {
		name := fmt.Sprintf("%08xexample%d.json.gz", n*7919, n)
		part := items[n*perFile : min((n+1)*perFile, len(items))]
		e.files[name] = gz(part)
		e.counts[name] = len(part)
		e.order = append(e.order, name)
	}
	e.files["emptypartition.json.gz"] = gz(nil)
	e.order = append(e.order, "emptypartition.json.gz")
	return e
}

// put writes the export under s3://bucket/prefix/AWSDynamoDB/<id>/ and
// returns that folder's key prefix.
func (e *s3Export) put(t *testing.T, client *s3.Client, bucket, prefix string) string {
	t.Helper()
	folder := prefix + "/AWSDynamoDB/" + exportID + "/"
	s3local.Put(t, client, bucket, folder+"_started", nil)
	if e.summary != "" {
		s3local.Put(t, client, bucket, folder+"manifest-summary.json", []byte(e.summary))
	}
	var manifest strings.Builder
	for _, name := range e.order {
		body := e.files[name]
		s3local.Put(t, client, bucket, folder+"data/"+name, body)
		sum := md5.Sum(body)
		md5b64 := base64.StdEncoding.EncodeToString(sum[:])
		if name == e.badMD5 {
			md5b64 = base64.StdEncoding.EncodeToString(make([]byte, 16))
		}
		if e.manifestKey != nil {
			fmt.Fprintf(&manifest, `{"itemCount":%d,"md5Checksum":%q,"etag":"x-1","dataFileS3Key":%q}`+"\n", e.counts[name], md5b64, e.manifestKey(folder, name))
		}
	}
	if e.manifestKey != nil {
		s3local.Put(t, client, bucket, folder+"manifest-files.json", []byte(manifest.String()))
	}
	return folder
}

// An export in S3 rebuilds the same file as the same export on local disk,
// with no table and no read capacity; the ways it can be wrong are named.
func TestExportFromS3(t *testing.T) {
	client := s3local.Client(t, s3local.Endpoint(t))
	bucket := s3local.NewBucket(t, client)
	l := mustLayout(t, layouts.ClosureName, layouts.Options{})
	items := layoutItems(t, l, "org")
	local := filepath.Join(t.TempDir(), "export")
	writeExportDir(t, local, items, 25)
	want := filepath.Join(t.TempDir(), "want.jsonl")
	wantSt, err := exporter.Export(context.Background(), exporter.ExportOptions{Layout: l, In: local, Out: want})
	if err != nil {
		t.Fatal(err)
	}
	wantBytes, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		change  func(e *s3Export)
		url     func(folder string) string // the --in given; default the folder
		wantErr string
		notAnEx bool
	}{
		{name: "full export"},
		{name: "data keys without the export prefix", change: func(e *s3Export) {
			e.manifestKey = func(_, name string) string { return "AWSDynamoDB/" + exportID + "/data/" + name }
		}},
		{name: "no manifests, data only", change: func(e *s3Export) { e.summary, e.manifestKey = "", nil }},
		{name: "no trailing slash", url: func(folder string) string { return "s3://" + bucket + "/" + strings.TrimSuffix(folder, "/") }},
		{name: "a damaged data file", change: func(e *s3Export) { e.badMD5 = e.order[0] }, wantErr: "MD5"},
		{name: "an Ion export", change: func(e *s3Export) { e.summary = `{"outputFormat":"ION","exportType":"FULL_EXPORT"}` }, wantErr: "ION export", notAnEx: true},
		{name: "an incremental export", change: func(e *s3Export) {
			e.summary = `{"outputFormat":"DYNAMODB_JSON","exportType":"INCREMENTAL_EXPORT"}`
		}, wantErr: "INCREMENTAL_EXPORT", notAnEx: true},
		{name: "the export prefix instead of the export's folder", url: func(folder string) string {
			return "s3://" + bucket + "/" + strings.TrimSuffix(folder, "AWSDynamoDB/"+exportID+"/")
		}, wantErr: "AWSDynamoDB/" + exportID + "/", notAnEx: true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newS3Export(t, items, 25)
			if tc.change != nil {
				tc.change(e)
			}
			folder := e.put(t, client, bucket, fmt.Sprintf("exports/case-%d", i))
			url := "s3://" + bucket + "/" + folder
			if tc.url != nil {
				url = tc.url(folder)
			}
			loc, err := s3io.ParseURL(url)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			var progress int
			st, err := exporter.DownloadExport(context.Background(), client, loc, dir, exporter.DownloadOptions{
				OnFile: func(exporter.DownloadStats) { progress++ },
			})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				if tc.notAnEx != errors.Is(err, exporter.ErrNotAnExport) {
					t.Errorf("errors.Is(err, ErrNotAnExport) = %v, want %v", !tc.notAnEx, tc.notAnEx)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.Files != len(e.order) || progress != st.Files || st.Bytes <= 0 {
				t.Errorf("stats %+v after %d OnFile calls, want %d files", st, progress, len(e.order))
			}
			out := filepath.Join(t.TempDir(), "got.jsonl")
			gotSt, err := exporter.Export(context.Background(), exporter.ExportOptions{Layout: l, In: dir, Out: out})
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, wantBytes) || gotSt.Nodes != wantSt.Nodes || gotSt.Read.Items != int64(len(items)) {
				t.Errorf("from S3: %d nodes of %d items; from disk: %d nodes; files equal: %v", gotSt.Nodes, gotSt.Read.Items, wantSt.Nodes, bytes.Equal(got, wantBytes))
			}
		})
	}
}
