package importer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/treeport/treeport/internal/pricing"
	"github.com/treeport/treeport/layouts"
)

// TestImportSourceBytesAreTheFiles: the dry run's ImportTable source bytes
// are the uncompressed bytes of the files import --out writes, exactly, for
// every fixture and layout (it used to add an estimate of the JSON framing,
// 21–47% too much).
func TestImportSourceBytesAreTheFiles(t *testing.T) {
	for _, name := range []string{"cars", "folders", "org"} {
		path := filepath.Join("..", "fixtures", name+".csv")
		var src SourceOptions
		if ty, err := os.ReadFile(strings.TrimSuffix(path, ".csv") + ".types"); err == nil {
			if src.Types, err = ParseTypes(strings.TrimSpace(string(ty))); err != nil {
				t.Fatal(err)
			}
		}
		in, err := ReadInput(context.Background(), InputOptions{Path: path, Source: src})
		if err != nil {
			t.Fatal(err)
		}
		for _, ln := range layouts.Names() {
			l, err := layouts.New(ln, layouts.Options{})
			if err != nil {
				t.Fatal(err)
			}
			plan, problems := PlanLayout(in, l, pricing.Default)
			if len(problems) > 0 {
				t.Fatalf("%s %s: %v", name, ln, problems[0])
			}
			sink, err := NewFileSink(FileSinkOptions{Dir: filepath.Join(t.TempDir(), "out"), ItemsPerFile: 7})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := in.EmitAttrs(context.Background(), EmitOptions{Layout: l}, func(_ int64, item []layouts.Attr) error {
				return sink.WriteAttrs(item)
			}); err != nil {
				t.Fatal(err)
			}
			files, err := sink.Close()
			if err != nil {
				t.Fatal(err)
			}
			var raw int64
			for _, f := range files {
				raw += f.Raw
			}
			if raw == 0 || plan.Cost.ImportBytes != raw {
				t.Errorf("%s %s: the dry run says %d source bytes, the files hold %d uncompressed", name, ln, plan.Cost.ImportBytes, raw)
			}
			if want := pricing.Default.Import(raw); plan.Cost.ImportTable != want {
				t.Errorf("%s %s: ImportTable $%v, want $%v", name, ln, plan.Cost.ImportTable, want)
			}
		}
	}
}
