package importer

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/importer/importfiles"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/gen"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/records/ddbitems"
)

// genWide writes twenty wide trees (a root and its children) of n nodes in
// all as JSON Lines, tree by tree, as treeport gen --shape wide --trees 20.
func genWide(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wide.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	rw, err := records.NewWriter(bw, records.WriterOptions{Format: records.FormatFromPath(path), Columns: gen.Columns()})
	if err != nil {
		t.Fatal(err)
	}
	if err := gen.Generate(gen.Options{Nodes: n, Shape: gen.ShapeWide, Trees: 20, Seed: 3}, rw.Write); err != nil {
		t.Fatal(err)
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	return path
}

// stagedRuns reads the items of an import directory in the order of its
// files and lines, and returns them encoded, and the longest run of items
// in a row that share a partition (partsOf: the table's partition key
// value, or one index's), by the table ("") or index.
func stagedRuns(t *testing.T, dir string, spec layouts.TableSpec) ([]string, map[string]int) {
	t.Helper()
	src, err := ddbitems.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var lines []string
	longest := map[string]int{}
	run := map[string]int{} // by partition, the run it ends now
	for {
		item, _, _, err := src.Next(context.Background())
		if err == io.EOF {
			return lines, longest
		}
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(ddbjson.AppendItem(nil, item)))
		parts := ddbwrite.PartsOf(spec, item, true)
		next := map[string]int{}
		for _, p := range parts {
			next[p] = run[p] + 1
			ix, _, _ := strings.Cut(p, "\x00") // the index, "" for the table
			longest[ix] = max(longest[ix], next[p])
		}
		run = next
	}
}

// The files staged for a bulk put hold the same items as the others, each
// once, but spread: on wide trees, whose items come a parent's children
// together (in path, runs of a thousand of one ByParent and ByPath value),
// no more than three items in a row share a partition key value of the
// table or of an index, in any layout. Without Spread the files keep the
// input's order (TestImportFilesMatchEmit holds them).
func TestBulkPutFilesAreSpread(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 20,000 nodes in every layout (48 s under -race)")
	}
	ctx := context.Background()
	const nodes = 20000
	path := genWide(t, nodes)
	worst := 0 // the longest run in input order, of every layout
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			l, err := layouts.New(name, layouts.Options{})
			if err != nil {
				t.Fatal(err)
			}
			in, err := ReadInput(ctx, InputOptions{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			if p := in.CheckLayout(l); len(p) > 0 {
				t.Fatal(p[0])
			}
			spec := l.Table()
			stage := func(spread int) ([]string, map[string]int, *importfiles.Manifest) {
				in.Forest.Reset()
				dir := filepath.Join(t.TempDir(), "out")
				m, err := WriteImportFiles(ctx, in, FilesOptions{Dir: dir, Table: "t", ItemsPerFile: 7000,
					Emit: EmitOptions{Layout: l}, Spread: spread})
				if err != nil {
					t.Fatal(err)
				}
				lines, runs := stagedRuns(t, dir, spec)
				return lines, runs, m
			}
			plain, plainRuns, pm := stage(0)
			spread, spreadRuns, sm := stage(importfiles.BulkPutSpread)
			t.Logf("longest runs in input order %v, spread %v", plainRuns, spreadRuns)
			if sm.Items != pm.Items || int64(len(spread)) != sm.Items || len(plain) < nodes {
				t.Fatalf("spread: %d items (manifest %d), in input order %d (manifest %d)", len(spread), sm.Items, len(plain), pm.Items)
			}
			if slices.Equal(plain, spread) {
				t.Fatal("the spread files hold the items in the input's order")
			}
			slices.Sort(plain)
			slices.Sort(spread)
			if !slices.Equal(plain, spread) {
				t.Fatal("the spread files do not hold the same items as the others")
			}
			if len(slices.Compact(slices.Clone(spread))) != len(spread) {
				t.Fatal("an item is twice in the files")
			}
			for ix, n := range plainRuns {
				worst = max(worst, n)
				if spreadRuns[ix] > 3 {
					t.Errorf("%q: %d items in a row share a partition key value (%d in input order)", ix, spreadRuns[ix], n)
				}
			}
		})
	}
	if worst < 900 {
		t.Errorf("in input order the longest run is %d items: the test's trees are not wide", worst)
	}
}
