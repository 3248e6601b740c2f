// Package benchmarks holds treeport's Go benchmarks and the recorded figures
// (see README.md in this folder for the commands and the results).
package benchmarks

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/gen"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

const benchNodes = 200_000

var (
	csvMu    sync.Mutex
	csvPaths = map[int]string{}
)

// randomCSV writes a gen random tree of benchNodes nodes once per process.
func randomCSV(b *testing.B) string { return randomCSVN(b, benchNodes) }

// randomCSVN writes a gen random tree of n nodes (seed 1) once per process.
func randomCSVN(b *testing.B, n int) string {
	b.Helper()
	csvMu.Lock()
	defer csvMu.Unlock()
	if p, ok := csvPaths[n]; ok {
		return p
	}
	dir := b.TempDir()
	path := filepath.Join(dir, "random.csv")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	rw, err := exporter.NewRecordWriter(bw, exporter.WriterOptions{Format: "csv", Columns: gen.Columns()})
	if err != nil {
		b.Fatal(err)
	}
	err = gen.Generate(gen.Options{Nodes: n, Shape: "random", Seed: 1}, func(r *transform.Record) error { return rw.Write(r) })
	if err == nil {
		err = rw.Close()
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		b.Fatal(err)
	}
	csvPaths[n] = path
	return path
}

// BenchmarkCSVToItems measures the whole in-memory pipeline: reading the CSV
// twice (skeleton, then attributes), validating, and building every item.
// Run with -cpu 1 for the one-core figure.
func BenchmarkCSVToItems(b *testing.B) {
	path := randomCSV(b)
	types, _ := importer.ParseTypes("size:N,score:N")
	for _, name := range layouts.Names() {
		b.Run(name, func(b *testing.B) {
			l, err := layouts.New(name, layouts.Options{})
			if err != nil {
				b.Fatal(err)
			}
			var items int64
			b.ResetTimer()
			for range b.N {
				in, err := importer.ReadInput(context.Background(), importer.InputOptions{
					Path: path, Source: importer.SourceOptions{Types: types}, SizeHint: benchNodes,
				})
				if err != nil {
					b.Fatal(err)
				}
				if p := in.CheckLayout(l); len(p) > 0 {
					b.Fatal(p[0])
				}
				st, err := in.Emit(context.Background(), importer.EmitOptions{Layout: l}, func(int64, layouts.Item) error { return nil })
				if err != nil {
					b.Fatal(err)
				}
				items = st.Items
			}
			secs := b.Elapsed().Seconds()
			b.ReportMetric(float64(benchNodes)*float64(b.N)/secs, "nodes/s")
			b.ReportMetric(float64(items)*float64(b.N)/secs, "items/s")
		})
	}
}

// BenchmarkImportFiles measures the gzip DynamoDB JSON writer alone, on
// path-layout items built beforehand.
func BenchmarkImportFiles(b *testing.B) {
	path := randomCSV(b)
	l, _ := layouts.New("path", layouts.Options{})
	types, _ := importer.ParseTypes("size:N,score:N")
	in, err := importer.ReadInput(context.Background(), importer.InputOptions{Path: path, Source: importer.SourceOptions{Types: types}})
	if err != nil {
		b.Fatal(err)
	}
	in.CheckLayout(l)
	var items []layouts.Item
	if _, err := in.Emit(context.Background(), importer.EmitOptions{Layout: l}, func(_ int64, it layouts.Item) error {
		items = append(items, it)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		dir := filepath.Join(b.TempDir(), "out")
		sink, err := importer.NewFileSink(importer.FileSinkOptions{Dir: dir, ItemsPerFile: 50_000})
		if err != nil {
			b.Fatal(err)
		}
		for _, it := range items {
			if err := sink.Write(it); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := sink.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(items))*float64(b.N)/b.Elapsed().Seconds(), "items/s")
}
