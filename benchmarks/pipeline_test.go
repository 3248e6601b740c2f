// Package benchmarks holds treeport's Go benchmarks and the recorded figures
// (see README.md in this folder for the commands and the results).
package benchmarks

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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
	// csvDir holds the generated inputs for the whole process: a
	// benchmark's own TempDir goes away between its runs, and each
	// benchmark function runs several times.
	csvDir string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "treeport-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	csvDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

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
	path := filepath.Join(csvDir, fmt.Sprintf("random-%d.csv", n))
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
// Run with -cpu 1 for the one-core figure. nodes/cpu-s divides by the CPU
// time the process used instead of the wall clock: on a shared machine, it
// is what one core of its own would do.
func BenchmarkCSVToItems(b *testing.B) {
	path := randomCSV(b)
	colTypes, _ := importer.ParseTypes("size:N,score:N")
	for _, name := range layouts.Names() {
		b.Run(name, func(b *testing.B) {
			l, err := layouts.New(name, layouts.Options{})
			if err != nil {
				b.Fatal(err)
			}
			var items int64
			b.ResetTimer()
			cpu := cpuTime()
			for range b.N {
				in, err := importer.ReadInput(context.Background(), importer.InputOptions{
					Path: path, Source: importer.SourceOptions{Types: colTypes}, SizeHint: benchNodes,
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
			reportRates(b, cpuTime()-cpu, benchNodes, items)
		})
	}
}

// reportRates reports nodes and items per second, and per CPU second when
// the CPU time is known.
func reportRates(b *testing.B, cpu time.Duration, nodes, items int64) {
	secs := b.Elapsed().Seconds()
	n := float64(b.N)
	if nodes > 0 {
		b.ReportMetric(float64(nodes)*n/secs, "nodes/s")
	}
	if items > 0 {
		b.ReportMetric(float64(items)*n/secs, "items/s")
	}
	if cpu > 0 {
		if nodes > 0 {
			b.ReportMetric(float64(nodes)*n/cpu.Seconds(), "nodes/cpu-s")
		}
		if items > 0 {
			b.ReportMetric(float64(items)*n/cpu.Seconds(), "items/cpu-s")
		}
	}
}

// BenchmarkCSVPhases times the three steps of BenchmarkCSVToItems/path one
// by one: ReadInput (the skeleton read), CheckLayout and Emit.
func BenchmarkCSVPhases(b *testing.B) {
	path := randomCSV(b)
	colTypes, _ := importer.ParseTypes("size:N,score:N")
	l, _ := layouts.New("path", layouts.Options{})
	opts := importer.InputOptions{Path: path, Source: importer.SourceOptions{Types: colTypes}, SizeHint: benchNodes}
	read := func(b *testing.B) *importer.Input {
		in, err := importer.ReadInput(context.Background(), opts)
		if err != nil {
			b.Fatal(err)
		}
		return in
	}
	b.Run("read", func(b *testing.B) {
		cpu := cpuTime()
		for range b.N {
			read(b)
		}
		reportRates(b, cpuTime()-cpu, benchNodes, 0)
	})
	in := read(b)
	b.Run("check", func(b *testing.B) {
		cpu := cpuTime()
		for range b.N {
			in.Forest.Reset()
			if p := in.CheckLayout(l); len(p) > 0 {
				b.Fatal(p[0])
			}
		}
		reportRates(b, cpuTime()-cpu, benchNodes, 0)
	})
	b.Run("emit", func(b *testing.B) {
		cpu := cpuTime()
		for range b.N {
			if _, err := in.Emit(context.Background(), importer.EmitOptions{Layout: l}, func(int64, layouts.Item) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
		reportRates(b, cpuTime()-cpu, benchNodes, 0)
	})
}

// BenchmarkImportFiles measures the gzip DynamoDB JSON writer alone, on
// path-layout items built beforehand: the default settings, then each gzip
// level for comparison.
func BenchmarkImportFiles(b *testing.B) {
	path := randomCSV(b)
	l, _ := layouts.New("path", layouts.Options{})
	colTypes, _ := importer.ParseTypes("size:N,score:N")
	in, err := importer.ReadInput(context.Background(), importer.InputOptions{Path: path, Source: importer.SourceOptions{Types: colTypes}})
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
	for _, level := range []int{0, 1, 2, 3, 4, 5, 6} {
		name := "default"
		if level > 0 {
			name = fmt.Sprintf("level-%d", level)
		}
		b.Run(name, func(b *testing.B) {
			var raw, compressed int64
			cpu := cpuTime()
			for range b.N {
				dir := filepath.Join(b.TempDir(), "out")
				sink, err := importer.NewFileSink(importer.FileSinkOptions{Dir: dir, ItemsPerFile: 50_000, Level: level})
				if err != nil {
					b.Fatal(err)
				}
				for _, it := range items {
					if err := sink.Write(it); err != nil {
						b.Fatal(err)
					}
				}
				files, err := sink.Close()
				if err != nil {
					b.Fatal(err)
				}
				raw, compressed = 0, 0
				for _, f := range files {
					raw += f.Raw
					compressed += f.Bytes
				}
			}
			reportRates(b, cpuTime()-cpu, 0, int64(len(items)))
			b.ReportMetric(float64(raw)*float64(b.N)/b.Elapsed().Seconds()/1e6, "rawMB/s")
			b.ReportMetric(float64(compressed)/float64(raw), "ratio")
		})
	}
}

// BenchmarkItemMap measures the least a path item costs however it is
// built: a map with the nine attributes of a path item of the random tree
// (four of its own, five of the layout's). BenchmarkCSVToItems/path cannot
// beat one of these per node.
func BenchmarkItemMap(b *testing.B) {
	names := []string{"created", "name", "score", "size", "Id", "ParentId", "TreeId", "Path", "Depth"}
	v := &types.AttributeValueMemberS{Value: "x"}
	var sink layouts.Item
	cpu := cpuTime()
	for range b.N {
		item := make(layouts.Item, len(names))
		for _, k := range names {
			item[k] = v
		}
		sink = item
	}
	_ = sink
	reportRates(b, cpuTime()-cpu, 0, int64(1))
}
