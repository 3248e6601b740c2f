package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenFormats are the formats every fixture is written in
// (internal/fixturegen). The golden files are written from the first.
var goldenFormats = []string{"json", "csv", "parquet"}

// csvLacks is what each fixture's CSV is known to lack: CSV cannot tell an
// empty cell from an absent attribute, so an attribute whose value is ""
// is absent from the items read from CSV (internal/fixturegen says which).
// Each entry is a node id and an attribute name.
var csvLacks = map[string][][2]string{
	"org": {{"E016", "nickname"}},
}

// TestGoldenFixtureItems pins the exact items of every layout for every
// bundled fixture, as sorted DynamoDB JSON lines, and checks that each of
// the fixture's formats gives them, both through Emit and through
// EmitAttrs (what import --out writes). Refresh them with
// go test -run TestGoldenFixtureItems -update . after a deliberate change.
func TestGoldenFixtureItems(t *testing.T) {
	ctx := context.Background()
	for _, fx := range []string{"cars", "folders", "org"} {
		for _, format := range goldenFormats {
			opts := importer.InputOptions{Path: filepath.Join("fixtures", fx+"."+format)}
			if format == "csv" {
				spec, err := os.ReadFile(filepath.Join("fixtures", fx+".types"))
				if err != nil {
					t.Fatal(err)
				}
				if opts.Source.Types, err = records.ParseTypes(strings.TrimSpace(string(spec))); err != nil {
					t.Fatal(err)
				}
			}
			in, err := importer.ReadInput(ctx, opts)
			if err != nil {
				t.Fatalf("%s: %v", opts.Path, err)
			}
			if len(in.Problems) > 0 {
				t.Fatalf("%s: %v", opts.Path, in.Problems[0])
			}
			for _, name := range layouts.Names() {
				t.Run(fx+"/"+format+"/"+name, func(t *testing.T) {
					l, err := layouts.New(name, layouts.Options{})
					if err != nil {
						t.Fatal(err)
					}
					if p := in.CheckLayout(l); len(p) > 0 {
						t.Fatal(p[0])
					}
					var lines, attrLines []string
					if _, err := in.Emit(ctx, importer.EmitOptions{Layout: l}, func(_ int64, it layouts.Item) error {
						lines = append(lines, string(ddbjson.AppendLine(nil, it)))
						return nil
					}); err != nil {
						t.Fatal(err)
					}
					if _, err := in.EmitAttrs(ctx, importer.EmitOptions{Layout: l}, func(_ int64, attrs []layouts.Attr) error {
						it := layouts.ItemOf(attrs)
						if len(it) != len(attrs) {
							return fmt.Errorf("EmitAttrs gave an item with a name twice: %v", attrs)
						}
						attrLines = append(attrLines, string(ddbjson.AppendLine(nil, it)))
						return nil
					}); err != nil {
						t.Fatal(err)
					}
					sort.Strings(lines)
					sort.Strings(attrLines)
					got := strings.Join(lines, "")
					path := filepath.Join("testdata", "golden", fx+"."+name+".jsonl")
					if *update && format == goldenFormats[0] {
						if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
							t.Fatal(err)
						}
						if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
							t.Fatal(err)
						}
					}
					data, err := os.ReadFile(path)
					if err != nil {
						t.Fatalf("%v (run with -update to create it)", err)
					}
					want := string(data)
					if format == "csv" {
						want = withoutEmptyStrings(t, want, csvLacks[fx])
					}
					compareLines(t, path+" (Emit from "+format+")", got, want)
					compareLines(t, path+" (EmitAttrs from "+format+")", strings.Join(attrLines, ""), want)
				})
			}
		}
	}
}

// withoutEmptyStrings returns the golden lines with their top-level S ""
// attributes removed, sorted, as a CSV input gives them. The attributes it
// removes must be exactly those of lacks, on the nodes lacks names (every
// item of such a node); any other empty string, or an entry of lacks that
// never shows up, is an error.
func withoutEmptyStrings(t *testing.T, golden string, lacks [][2]string) string {
	t.Helper()
	removed := map[[2]string]bool{}
	var out []string
	for _, line := range strings.SplitAfter(golden, "\n") {
		if line == "" {
			continue
		}
		item, err := ddbjson.DecodeLine([]byte(line))
		if err != nil {
			t.Fatalf("golden line %q: %v", line, err)
		}
		for k, v := range item {
			if s, ok := v.(*types.AttributeValueMemberS); ok && s.Value == "" {
				place := [2]string{goldenNodeID(item), k}
				if !slices.Contains(lacks, place) {
					t.Fatalf("golden item %s has %s = \"\", which the CSV fixture is not known to lack", strings.TrimSpace(line), k)
				}
				removed[place] = true
				delete(item, k)
			}
		}
		out = append(out, string(ddbjson.AppendLine(nil, item)))
	}
	for _, place := range lacks {
		if !removed[place] {
			t.Fatalf("no golden item of node %s has %s = \"\": csvLacks is out of date", place[0], place[1])
		}
	}
	sort.Strings(out)
	return strings.Join(out, "")
}

// goldenNodeID is the id of the node an item with the default attribute
// names belongs to: its Id (path, sharded-path, closure rows), or the last
// part of its Key (prefix rows).
func goldenNodeID(item layouts.Item) string {
	if s, ok := item["Id"].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	if s, ok := item["Key"].(*types.AttributeValueMemberS); ok {
		return s.Value[strings.LastIndex(s.Value, "¦")+len("¦"):]
	}
	return ""
}

// compareLines fails the test at the first line where got and want differ.
func compareLines(t *testing.T, what, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(gl) && i < len(wl); i++ {
		if gl[i] != wl[i] {
			t.Fatalf("%s differs at line %d:\n got %s\nwant %s", what, i+1, gl[i], wl[i])
		}
	}
	t.Fatalf("%s: %d lines, want %d", what, len(gl), len(wl))
}
