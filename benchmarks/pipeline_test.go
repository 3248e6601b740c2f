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

	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/importer/importfiles"
	"github.com/treeport/treeport/internal/gen"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
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

// TestMain makes the directory of the generated inputs: a temporary one, or
// $TREEPORT_BENCH_DIR, where they are kept from one run to the next (which
// keeps their generation out of instruction counts such as callgrind's).
func TestMain(m *testing.M) {
	dir, keep := os.Getenv("TREEPORT_BENCH_DIR"), true
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "treeport-bench-"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		keep = false
	}
	csvDir = dir
	code := m.Run()
	if !keep {
		os.RemoveAll(dir)
	}
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
	if _, err := os.Stat(path); err == nil {
		csvPaths[n] = path
		return path
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	rw, err := records.NewWriter(bw, records.WriterOptions{Format: "csv", Columns: gen.Columns()})
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
	if err == nil {
		err = f.Close()
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		b.Fatal(err)
	}
	csvPaths[n] = path
	return path
}

// BenchmarkCSVToItems measures the whole in-memory pipeline: reading the CSV
// twice (skeleton, then attributes), validating, and building every item
// with EmitAttrs, the way the import-file writer takes them: each item a
// slice of attributes whose values are built in memory reused for the next
// item. Run with -cpu 1 for the one-core figure. nodes/cpu-s divides by the
// CPU time the process used instead of the wall clock: on a shared machine,
// it is what one core of its own would do. attrs/item counts the attributes
// the callback saw, so that an item that was not built shows.
func BenchmarkCSVToItems(b *testing.B) {
	benchCSVToItems(b, func(in *importer.Input, l layouts.Layout) (items, attrs int64) {
		st, err := in.EmitAttrs(context.Background(), importer.EmitOptions{Layout: l}, func(_ int64, item []layouts.Attr) error {
			attrs += int64(len(item))
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		return st.Items, attrs
	})
}

// BenchmarkCSVToItemMaps is BenchmarkCSVToItems with Emit, which gives each
// item as a fresh map the callback may keep (what the DynamoDB writer
// takes).
func BenchmarkCSVToItemMaps(b *testing.B) {
	benchCSVToItems(b, func(in *importer.Input, l layouts.Layout) (items, attrs int64) {
		st, err := in.Emit(context.Background(), importer.EmitOptions{Layout: l}, func(_ int64, item layouts.Item) error {
			attrs += int64(len(item))
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		return st.Items, attrs
	})
}

func benchCSVToItems(b *testing.B, emit func(*importer.Input, layouts.Layout) (items, attrs int64)) {
	path := randomCSV(b)
	colTypes, _ := records.ParseTypes("size:N,score:N")
	for _, name := range layouts.Names() {
		b.Run(name, func(b *testing.B) {
			l, err := layouts.New(name, layouts.Options{})
			if err != nil {
				b.Fatal(err)
			}
			var items, attrs int64
			b.ResetTimer()
			cpu := cpuTime()
			for range b.N {
				in, err := importer.ReadInput(context.Background(), importer.InputOptions{
					Path: path, Source: records.SourceOptions{Types: colTypes},
				})
				if err != nil {
					b.Fatal(err)
				}
				if p := in.CheckLayout(l); len(p) > 0 {
					b.Fatal(p[0])
				}
				items, attrs = emit(in, l)
			}
			reportRates(b, cpuTime()-cpu, benchNodes, items)
			b.ReportMetric(float64(attrs)/float64(items), "attrs/item")
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
// by one: ReadInput (the skeleton read), CheckLayout and EmitAttrs; and
// Emit, which BenchmarkCSVToItemMaps uses instead.
func BenchmarkCSVPhases(b *testing.B) {
	path := randomCSV(b)
	colTypes, _ := records.ParseTypes("size:N,score:N")
	l, _ := layouts.New("path", layouts.Options{})
	opts := importer.InputOptions{Path: path, Source: records.SourceOptions{Types: colTypes}}
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
			if _, err := in.EmitAttrs(context.Background(), importer.EmitOptions{Layout: l}, func(int64, []layouts.Attr) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
		reportRates(b, cpuTime()-cpu, benchNodes, 0)
	})
	b.Run("emit-maps", func(b *testing.B) {
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
// path-layout items built beforehand: by WriteAttrs (attrs, what
// WriteImportFiles uses), then by Write with the default settings and each
// gzip level for comparison.
func BenchmarkImportFiles(b *testing.B) {
	path := randomCSV(b)
	l, _ := layouts.New("path", layouts.Options{})
	colTypes, _ := records.ParseTypes("size:N,score:N")
	in, err := importer.ReadInput(context.Background(), importer.InputOptions{Path: path, Source: records.SourceOptions{Types: colTypes}})
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
	// The same items as attributes, for WriteAttrs (the order of a map's
	// attributes does not matter: the encoder sorts them).
	attrs := make([][]layouts.Attr, len(items))
	for i, it := range items {
		for k, v := range it {
			attrs[i] = append(attrs[i], layouts.Attr{Name: k, Value: v})
		}
	}
	b.Run("attrs", func(b *testing.B) {
		var raw int64
		cpu := cpuTime()
		for range b.N {
			dir := filepath.Join(b.TempDir(), "out")
			sink, err := importfiles.NewFileSink(importfiles.FileSinkOptions{Dir: dir, ItemsPerFile: 50_000})
			if err != nil {
				b.Fatal(err)
			}
			for _, it := range attrs {
				if err := sink.WriteAttrs(it); err != nil {
					b.Fatal(err)
				}
			}
			files, err := sink.Close()
			if err != nil {
				b.Fatal(err)
			}
			raw = 0
			for _, f := range files {
				raw += f.Raw
			}
		}
		reportRates(b, cpuTime()-cpu, 0, int64(len(items)))
		b.ReportMetric(float64(raw)*float64(b.N)/b.Elapsed().Seconds()/1e6, "rawMB/s")
	})
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
				sink, err := importfiles.NewFileSink(importfiles.FileSinkOptions{Dir: dir, ItemsPerFile: 50_000, Level: level})
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

// BenchmarkCSVToImportFiles measures what `treeport import --out` does, on
// both cores: ReadInput, CheckLayout, then WriteImportFiles (EmitAttrs
// into the file writer, which encodes each item at once and compresses on
// another goroutine), for the path layout.
func BenchmarkCSVToImportFiles(b *testing.B) {
	path := randomCSV(b)
	colTypes, _ := records.ParseTypes("size:N,score:N")
	l, _ := layouts.New("path", layouts.Options{})
	var items int64
	cpu := cpuTime()
	for range b.N {
		in, err := importer.ReadInput(context.Background(), importer.InputOptions{
			Path: path, Source: records.SourceOptions{Types: colTypes},
		})
		if err != nil {
			b.Fatal(err)
		}
		if p := in.CheckLayout(l); len(p) > 0 {
			b.Fatal(p[0])
		}
		m, err := importer.WriteImportFiles(context.Background(), in, importer.FilesOptions{
			Dir: filepath.Join(b.TempDir(), "out"), Table: "t", ItemsPerFile: 50_000, Emit: importer.EmitOptions{Layout: l},
		})
		if err != nil {
			b.Fatal(err)
		}
		items = m.Items
	}
	reportRates(b, cpuTime()-cpu, benchNodes, items)
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
