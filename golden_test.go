package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/layouts"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestGoldenFixtureItems pins the exact items of every layout for every
// bundled fixture, as sorted DynamoDB JSON lines. Refresh them with
// go test -run TestGoldenFixtureItems -update . after a deliberate change.
func TestGoldenFixtureItems(t *testing.T) {
	for _, fx := range []string{"cars", "folders", "org"} {
		for _, name := range layouts.Names() {
			t.Run(fx+"/"+name, func(t *testing.T) {
				l, err := layouts.New(name, layouts.Options{})
				if err != nil {
					t.Fatal(err)
				}
				in, err := importer.ReadInput(context.Background(), importer.InputOptions{Path: filepath.Join("fixtures", fx+".json")})
				if err != nil {
					t.Fatal(err)
				}
				if p := in.CheckLayout(l); len(p) > 0 {
					t.Fatal(p[0])
				}
				var lines []string
				if _, err := in.Emit(context.Background(), importer.EmitOptions{Layout: l}, func(_ int64, it layouts.Item) error {
					lines = append(lines, string(ddbjson.AppendLine(nil, it)))
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				sort.Strings(lines)
				got := strings.Join(lines, "")
				path := filepath.Join("testdata", "golden", fx+"."+name+".jsonl")
				if *update {
					os.MkdirAll(filepath.Dir(path), 0o755)
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if got != string(want) {
					gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
					for i := 0; i < len(gl) && i < len(wl); i++ {
						if gl[i] != wl[i] {
							t.Fatalf("%s differs at line %d:\n got %s\nwant %s", path, i+1, gl[i], wl[i])
						}
					}
					t.Fatalf("%s: %d lines, want %d", path, len(gl), len(wl))
				}
			})
		}
	}
}
