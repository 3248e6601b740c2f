package exporter_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

// fixtureSource is where a fixture is read from, with its CSV types.
func fixtureSource(t testing.TB, name, format string) (string, records.SourceOptions) {
	t.Helper()
	base := filepath.Join("..", "fixtures", name)
	var opts records.SourceOptions
	if format == "csv" {
		spec, err := os.ReadFile(base + ".types")
		if err != nil {
			t.Fatal(err)
		}
		if opts.Types, err = records.ParseTypes(strings.TrimSpace(string(spec))); err != nil {
			t.Fatal(err)
		}
	}
	return base + "." + format, opts
}

// readFile reads every record of a file with treeport's own reader.
func readFile(t testing.TB, path string, opts records.SourceOptions) []*transform.Record {
	t.Helper()
	src, err := records.OpenSource(path, opts)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer src.Close()
	var recs []*transform.Record
	for {
		rec, err := src.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return recs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		recs = append(recs, rec)
	}
}

// withoutEmptyStrings drops empty S attributes, which a CSV cell cannot
// tell from an absent one.
func withoutEmptyStrings(recs []*transform.Record) []*transform.Record {
	out := make([]*transform.Record, len(recs))
	for i, r := range recs {
		c := *r
		c.Attrs = transform.Attrs{}
		for k, v := range r.Attrs {
			if s, ok := v.(*types.AttributeValueMemberS); ok && s.Value == "" {
				continue
			}
			c.Attrs[k] = v
		}
		out[i] = &c
	}
	return out
}

// checkOrder checks that recs are in SortRecords' order: each tree in
// pre-order, siblings and trees by id.
func checkOrder(t *testing.T, what string, recs []*transform.Record) {
	t.Helper()
	sorted := exporter.SortRecords(recs)
	for i := range recs {
		if recs[i].ID != sorted[i].ID {
			t.Errorf("%s: record %d is %q, want %q (pre-order, siblings by id)", what, i, recs[i].ID, sorted[i].ID)
			return
		}
	}
}

var formatExt = map[string]string{"csv": "csv", "json": "json", "jsonl": "jsonl", "parquet": "parquet", "ddbjson": "ddbjson"}

// TestExportRoundTrip imports every fixture into a table of every layout,
// exports the table in every format and reads the file back: the same
// records, with their types, in the documented order.
func TestExportRoundTrip(t *testing.T) {
	client := localClient(t)
	datasets := []string{"cars", "folders", "org"}
	sources := []string{"csv", "json", "parquet"}
	roots := map[string]string{"cars": "CM2", "folders": "home/zoe", "org": "E003"}
	for li, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l := mustLayout(t, name, layouts.Options{})
			for di, ds := range datasets {
				// Each layout loads each fixture from another of its
				// formats, so every fixture file is imported.
				in, srcOpts := fixtureSource(t, ds, sources[(li+di)%len(sources)])
				want := readFile(t, in, srcOpts)
				table := importFile(t, client, l, in, srcOpts)
				for _, format := range records.Formats {
					t.Run(ds+"/"+format, func(t *testing.T) {
						out := filepath.Join(t.TempDir(), "export."+formatExt[format])
						st, err := exporter.Export(context.Background(), exporter.ExportOptions{
							Layout: l, Client: client, Table: table, Out: out,
							Scan: exporter.ScanOptions{Segments: 3},
						})
						if err != nil {
							t.Fatal(err)
						}
						if st.Nodes != int64(len(want)) || !st.Forest.OK() || st.Format != format {
							t.Errorf("stats %+v: want %d nodes of a forest in %s", st, len(want), format)
						}
						if st.Read.Requests < 3 || st.Read.Items < st.Nodes {
							t.Errorf("read stats %+v: want a request per segment and an item per node at least", st.Read)
						}
						readOpts := records.SourceOptions{Format: format}
						expected := want
						if format == "csv" {
							typesFlag := records.TypesFlag(records.InferColumns(want))
							if readOpts.Types, err = records.ParseTypes(typesFlag); err != nil {
								t.Fatal(err)
							}
							expected = withoutEmptyStrings(want)
						}
						got := readFile(t, out, readOpts)
						if d := recordDiff(withoutEmptyStringsIf(format == "csv", got), expected); d != "" {
							t.Errorf("%s export of %s differs from %s:\n%s", format, ds, in, d)
						}
						checkOrder(t, out, got)
					})
				}
				t.Run(ds+"/root", func(t *testing.T) {
					root := roots[ds]
					out := filepath.Join(t.TempDir(), "subtree.jsonl")
					opts := exporter.ExportOptions{Layout: l, Client: client, Table: table, Out: out, Root: root}
					if name == layouts.PrefixName {
						// Without its path, a prefix node is found with a Scan.
						opts.RootPath = pathOf(want, root)
					}
					st, err := exporter.Export(context.Background(), opts)
					if err != nil {
						t.Fatal(err)
					}
					got := readFile(t, out, records.SourceOptions{})
					wantSub := subtreeOf(want, root)
					// The subtree's root keeps its parent, outside the file.
					if d := recordDiff(got, wantSub); d != "" {
						t.Errorf("subtree of %s:\n%s", root, d)
					}
					if len(got) < 2 || got[0].ID != root {
						t.Errorf("subtree export starts with %v, want %q and its descendants", got[:min(1, len(got))], root)
					}
					checkOrder(t, out, got)
					if st.Forest.Orphans != 1 {
						t.Errorf("subtree export counted %d orphans, want 1 (its root, whose parent is outside)", st.Forest.Orphans)
					}
					if st.Read.Items >= int64(len(want)*2) {
						t.Errorf("subtree export read %d items for %d of %d nodes: it should not scan", st.Read.Items, len(got), len(want))
					}
				})
			}
		})
	}
}

func withoutEmptyStringsIf(cond bool, recs []*transform.Record) []*transform.Record {
	if cond {
		return withoutEmptyStrings(recs)
	}
	return recs
}

// pathOf returns the ids from the root to id.
func pathOf(recs []*transform.Record, id string) []string {
	parent := map[string]string{}
	for _, r := range recs {
		parent[r.ID] = r.Parent
	}
	path := []string{id}
	for p := parent[id]; p != ""; p = parent[p] {
		path = append([]string{p}, path...)
	}
	return path
}

// subtreeOf returns root and its descendants.
func subtreeOf(recs []*transform.Record, root string) []*transform.Record {
	kids := map[string][]*transform.Record{}
	var top *transform.Record
	for _, r := range recs {
		kids[r.Parent] = append(kids[r.Parent], r)
		if r.ID == root {
			top = r
		}
	}
	out := []*transform.Record{top}
	for i := 0; i < len(out); i++ {
		out = append(out, kids[out[i].ID]...)
	}
	return out
}

// TestExportIsDeterministic exports one table with different numbers of
// segments: the files are the same bytes.
func TestExportIsDeterministic(t *testing.T) {
	client := localClient(t)
	l := mustLayout(t, layouts.PrefixName, layouts.Options{})
	in, srcOpts := fixtureSource(t, "folders", "json")
	table := importFile(t, client, l, in, srcOpts)
	var files [][]byte
	for _, segments := range []int{1, 2, 7} {
		for _, format := range []string{"jsonl", "csv", "parquet"} {
			out := filepath.Join(t.TempDir(), fmt.Sprintf("s%d.%s", segments, format))
			if _, err := exporter.Export(context.Background(), exporter.ExportOptions{
				Layout: l, Client: client, Table: table, Out: out, Scan: exporter.ScanOptions{Segments: segments},
			}); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, data)
		}
	}
	for i := 3; i < len(files); i++ {
		if !bytes.Equal(files[i], files[i%3]) {
			t.Errorf("export %d differs from export %d of the same table", i, i%3)
		}
	}
}

// writeExportDir writes items as an ExportTableToPointInTime directory:
// manifest-files.json and gzip DynamoDB JSON data files.
func writeExportDir(t *testing.T, dir string, items []layouts.Item, perFile int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	var manifest bytes.Buffer
	for n := 0; n*perFile < len(items); n++ {
		name := fmt.Sprintf("part-%04d.json.gz", n)
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		for _, item := range items[n*perFile : min((n+1)*perFile, len(items))] {
			zw.Write(ddbjson.AppendLine(nil, item))
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "data", name), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&manifest, `{"itemCount":%d,"dataFileS3Key":"AWSDynamoDB/0123/data/%s"}`+"\n", min(perFile, len(items)-n*perFile), name)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest-files.json"), manifest.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestExportFromDynamoDBExport rebuilds the records from a table's items
// written as a DynamoDB export, with no table: the layouts whose tables hold
// items that are not nodes (closure ancestor rows, prefix listing rows) too.
func TestExportFromDynamoDBExport(t *testing.T) {
	client := localClient(t)
	in, srcOpts := fixtureSource(t, "cars", "json")
	want := readFile(t, in, srcOpts)
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			l := mustLayout(t, name, layouts.Options{})
			table := importFile(t, client, l, in, srcOpts)
			var mu sync.Mutex
			var items []layouts.Item
			if _, err := exporter.ScanItems(context.Background(), client, table, exporter.ScanOptions{Segments: 2}, func(page []layouts.Item) error {
				mu.Lock()
				items = append(items, page...)
				mu.Unlock()
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "export")
			writeExportDir(t, dir, items, 40)
			out := filepath.Join(t.TempDir(), "cars.ddbjson")
			st, err := exporter.Export(context.Background(), exporter.ExportOptions{Layout: l, In: dir, Out: out})
			if err != nil {
				t.Fatal(err)
			}
			if st.Read.Items != int64(len(items)) {
				t.Errorf("read %d items, want %d", st.Read.Items, len(items))
			}
			got := readFile(t, out, records.SourceOptions{})
			if d := recordDiff(got, want); d != "" {
				t.Errorf("records rebuilt from the export differ:\n%s", d)
			}
			checkOrder(t, out, got)
		})
	}
}

// TestExportErrors checks that a wrong layout or a bad export names the item
// and what to check, and that no output file is left behind.
func TestExportErrors(t *testing.T) {
	client := localClient(t)
	in, srcOpts := fixtureSource(t, "cars", "json")
	pathTable := importFile(t, client, mustLayout(t, layouts.PathName, layouts.Options{}), in, srcOpts)
	closureTable := importFile(t, client, mustLayout(t, layouts.ClosureName, layouts.Options{}), in, srcOpts)
	badLine := filepath.Join(t.TempDir(), "bad.ddbjson")
	if err := os.WriteFile(badLine, []byte(`{"Item":{"Id":{"S":"A"},"TreeId":{"S":"A"},"Path":{"S":"A"},"Depth":{"N":"0"}}}`+"\n"+`{"Item":{"Id":{"S":"B"}}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts exporter.ExportOptions
		want []string
	}{
		{
			name: "table of another layout",
			opts: exporter.ExportOptions{Layout: mustLayout(t, layouts.ClosureName, layouts.Options{}), Client: client, Table: pathTable},
			want: []string{"48 items", "closure layout", "RelativeDepth = 0", "--layout"},
		},
		{
			name: "closure table read as path",
			opts: exporter.ExportOptions{Layout: mustLayout(t, layouts.PathName, layouts.Options{}), Client: client, Table: closureTable},
			want: []string{"Id=", "TreeId", "--layout path"},
		},
		{
			name: "item of an export that does not fit",
			opts: exporter.ExportOptions{Layout: mustLayout(t, layouts.PathName, layouts.Options{}), In: badLine},
			want: []string{"bad.ddbjson:2", `Id="B"`, "TreeId"},
		},
		{
			name: "root not in the table",
			opts: exporter.ExportOptions{Layout: mustLayout(t, layouts.PathName, layouts.Options{}), Client: client, Table: pathTable, Root: "NOPE"},
			want: []string{`"NOPE"`, "not in table"},
		},
		{
			name: "no format",
			opts: exporter.ExportOptions{Layout: mustLayout(t, layouts.PathName, layouts.Options{}), Client: client, Table: pathTable},
			want: []string{"--format"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.opts.Out = filepath.Join(dir, "out.jsonl")
			if tt.name == "no format" {
				tt.opts.Out = filepath.Join(dir, "out.txt")
			}
			_, err := exporter.Export(context.Background(), tt.opts)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if entries, _ := os.ReadDir(dir); len(entries) > 0 {
				t.Errorf("a failed export left %s behind", entries[0].Name())
			}
		})
	}
}
