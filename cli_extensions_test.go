package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/records"
)

// TestEveryExportExtensionReadsBack exports a table to every file name
// ending export knows, plain, gzip and zstd, and reads each file back with
// verify (import's reader) and import --dry-run: every one is the same
// forest, read as the format its name says, and compressed as its name
// says. export --out t.ddb.jsonl once wrote DynamoDB JSON that verify then
// read as JSON Lines ("duplicate id"), and t.csv.gz was plain text.
func TestEveryExportExtensionReadsBack(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	table := importFixture(t, endpoint, "path")
	common := []string{"--table", table, "--layout", "path", "--endpoint-url", endpoint}
	types, err := os.ReadFile(filepath.Join("fixtures", "cars.types"))
	if err != nil {
		t.Fatal(err)
	}
	magic := map[string][]byte{
		records.Gzip: {0x1f, 0x8b},
		records.Zstd: {0x28, 0xb5, 0x2f, 0xfd},
	}
	dir := t.TempDir()
	n := 0
	for format, exts := range records.Extensions {
		for _, ext := range exts {
			for _, z := range []string{"", ".gz", ".zst"} {
				name := "cars" + ext + z
				t.Run(name, func(t *testing.T) {
					n++
					out := filepath.Join(dir, name)
					if format == records.FormatParquet && z != "" {
						// Parquet compresses its own columns and is read
						// with random access: a name that asks for a
						// compressed stream is refused before the scan.
						_, stderr, code := run(t, nil, append([]string{"export", "--out", out}, common...)...)
						if _, err := os.Stat(out); code != 2 || !strings.Contains(stderr, "name it "+filepath.Join(dir, "cars"+ext)) || err == nil {
							t.Errorf("export: exit %d, want 2 and nothing written (%v)\n%s", code, err, stderr)
						}
						return
					}
					_, stderr, code := run(t, nil, append([]string{"export", "--out", out}, common...)...)
					if code != 0 || !strings.Contains(stderr, "exported 48 nodes") {
						t.Fatalf("export: exit %d\n%s", code, stderr)
					}
					data, err := os.ReadFile(out)
					if err != nil {
						t.Fatal(err)
					}
					zc := records.CompressionFromPath(name)
					for c, m := range magic {
						if got := bytes.HasPrefix(data, m); got != (c == zc) {
							t.Errorf("%s: starts with %s's magic bytes: %v, want %v", name, c, got, c == zc)
						}
					}
					// A CSV cell is text: the types say what it was.
					var typed []string
					if format == records.FormatCSV {
						typed = []string{"--types", strings.TrimSpace(string(types))}
					}
					stdout, stderr, code := run(t, nil, append(append([]string{"verify", "--in", out}, typed...), common...)...)
					if code != 0 || !strings.Contains(stdout, "identical") {
						t.Errorf("verify --in %s: exit %d\n%s%s", name, code, stdout, stderr)
					}
					stdout, stderr, code = run(t, nil, append([]string{"import", "--in", out, "--layout", "path", "--dry-run"}, typed...)...)
					if code != 0 || !strings.Contains(stdout+stderr, "48 records") {
						t.Errorf("import --in %s --dry-run: exit %d\n%s", name, code, stderr)
					}
				})
			}
		}
	}
	if n != 27 {
		t.Errorf("%d names tried, want 27 (9 endings, 3 compressions each)", n)
	}
}
