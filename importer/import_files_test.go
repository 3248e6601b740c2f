package importer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/treeport/treeport/importer/importfiles"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
)

// WriteImportFiles, which now goes through EmitAttrs and WriteAttrs,
// writes exactly what Emit's items written with Write give.
func TestImportFilesMatchEmit(t *testing.T) {
	ctx := context.Background()
	path := writeTemp(t, "random.csv", []byte(randomTreeCSV(4000, 9)))
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			l, err := layouts.New(name, layouts.Options{})
			if err != nil {
				t.Fatal(err)
			}
			in, err := ReadInput(ctx, InputOptions{Path: path, Source: records.SourceOptions{Types: randomTreeTypes}})
			if err != nil {
				t.Fatal(err)
			}
			in.CheckLayout(l)
			dir := filepath.Join(t.TempDir(), "out")
			m, err := WriteImportFiles(ctx, in, FilesOptions{Dir: dir, Table: "t", ItemsPerFile: 1500, Emit: EmitOptions{Layout: l}})
			if err != nil {
				t.Fatal(err)
			}
			var items []layouts.Item
			st, err := in.Emit(ctx, EmitOptions{Layout: l}, func(_ int64, it layouts.Item) error {
				items = append(items, it)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			sink, err := importfiles.NewFileSink(importfiles.FileSinkOptions{Dir: filepath.Join(t.TempDir(), "want"), ItemsPerFile: 1500})
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				if err := sink.Write(it); err != nil {
					t.Fatal(err)
				}
			}
			want, err := sink.Close()
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(m.Files) != fmt.Sprint(want) {
				t.Fatalf("WriteImportFiles wrote\n%+v\nEmit and Write give\n%+v", m.Files, want)
			}
			if m.Nodes != st.Nodes || m.Items != st.Items || m.Rejected != st.Rejected || st.Nodes < 3500 {
				t.Errorf("manifest: %d nodes, %d items, %d rejected; Emit: %+v", m.Nodes, m.Items, m.Rejected, st)
			}
			if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil {
				t.Error(err)
			}
		})
	}
}
