package records

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/klauspost/compress/gzip"

	"github.com/treeport/treeport/records/ddbitems"
	"github.com/treeport/treeport/records/infile"
	"github.com/treeport/treeport/transform"
)

// drain reads a source to its end and checks the Source contract: no panic,
// errors are RowErrors or io.EOF, io.EOF stays io.EOF, records and errors
// name their place, in the order of the input, and records hold valid
// UTF-8 ids. unit is the RowError.Unit of the source's format: "row" for
// Parquet, "" (meaning "line") for the others.
//
// A RowError's Line is 0 only for a problem that has no single line (see
// transform.RowError), which only the checks of the whole forest find; a
// source reports one row or one place at a time, so its lines count from 1.
func drain(t *testing.T, src Source, file, unit string) {
	t.Helper()
	// The memory ceiling: whatever the input, reading it allocates a
	// bounded amount (a record is refused past infile.MaxRecordBytes, a
	// Parquet row group's pages past its memory budget), and no more for
	// a small input that unpacks to gigabytes.
	defer memoryCeiling(t)()
	defer func() {
		// The input is in memory: there is nothing that could fail to close.
		if err := src.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	last := 0 // the line of the last record or error
	for i := 0; i < 20000; i++ {
		rec, err := src.Next(context.Background())
		if err == io.EOF {
			if _, err := src.Next(context.Background()); err != io.EOF {
				t.Fatalf("Next after io.EOF: %v", err)
			}
			return
		}
		if err != nil {
			var re *transform.RowError
			if !errors.As(err, &re) {
				t.Fatalf("Next: %v (%T), want a RowError or io.EOF", err, err)
			}
			if re.File != file {
				t.Fatalf("RowError.File = %q, want %q", re.File, file)
			}
			if re.Line < 1 {
				t.Fatalf("RowError %v: Line = %d, want the line (or row) it is at, from 1", err, re.Line)
			}
			if re.Unit != unit && (unit != "" || re.Unit != "line") {
				t.Fatalf("RowError %v: Unit = %q, want %q", err, re.Unit, unit)
			}
			if re.Line < last {
				t.Fatalf("RowError %v at %d comes after line %d", err, re.Line, last)
			}
			last = re.Line
			if !errors.Is(err, transform.ErrParse) {
				t.Fatalf("RowError %v does not wrap transform.ErrParse", err)
			}
			continue
		}
		if rec == nil {
			t.Fatal("Next returned neither a record nor an error")
		}
		if rec.File != file || rec.Line < 1 {
			t.Fatalf("record at %s:%d", rec.File, rec.Line)
		}
		if rec.Line < last {
			t.Fatalf("record %q at %d comes after line %d", rec.ID, rec.Line, last)
		}
		last = rec.Line
		if !utf8.ValidString(rec.ID) || !utf8.ValidString(rec.Parent) {
			t.Fatalf("id %q or parent %q is not valid UTF-8", rec.ID, rec.Parent)
		}
		for k := range rec.Attrs {
			if k == "" || !utf8.ValidString(k) {
				t.Fatalf("attribute name %q", k)
			}
		}
	}
}

// fuzzAllocCeiling is the most that draining one input may allocate: the
// buffers of a record at the limit (which grow by doubling), and the 32 MiB
// budget FuzzParquetSource gives a row group's pages.
const fuzzAllocCeiling = 4*infile.MaxRecordBytes + 32<<20

// fuzzMemoryLimit is the Go runtime's memory limit (GOMEMLIMIT) while the
// readers are fuzzed, unless the environment sets one, and fuzzRSSCeiling
// the most the process's resident memory may grow, at its peak, while one
// input is read: an input that makes a reader hold more than its limits
// allow shows as a peak over it, whatever the collector did meanwhile.
const (
	fuzzMemoryLimit = 2 * fuzzAllocCeiling
	fuzzRSSCeiling  = 512 << 20
)

var setFuzzMemoryLimit sync.Once

// memoryCeiling starts the memory checks of reading one input and returns
// the function that ends them: what the reading allocated is held to
// fuzzAllocCeiling, and (on Linux) the growth of the process's peak
// resident memory, reset first, to fuzzRSSCeiling, under the
// fuzzMemoryLimit.
func memoryCeiling(t *testing.T) func() {
	setFuzzMemoryLimit.Do(func() {
		if os.Getenv("GOMEMLIMIT") == "" {
			debug.SetMemoryLimit(fuzzMemoryLimit)
		}
	})
	// Linux resets the peak to the resident memory of now when "5" is
	// written to clear_refs; where it cannot be, the peak is not checked.
	reset := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	start, _ := procStatus("VmRSS:")
	before := allocated()
	return func() {
		if cost := allocated() - before; cost > fuzzAllocCeiling {
			t.Errorf("reading the input allocated %d MiB; the ceiling is %d MiB", cost>>20, fuzzAllocCeiling>>20)
		}
		if peak, ok := procStatus("VmHWM:"); ok && reset && peak > start+fuzzRSSCeiling {
			t.Errorf("the process's resident memory grew by %d MiB at its peak reading the input; the ceiling is %d MiB", (peak-start)>>20, fuzzRSSCeiling>>20)
		}
	}
}

// procStatus is the field of /proc/self/status named key (VmRSS:, VmHWM:)
// in bytes, and false where it cannot be read.
func procStatus(key string) (uint64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == key && f[2] == "kB" {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// hugeField is a gzip input whose second record holds one field of
// 4*infile.MaxRecordBytes, quoted when quote is '"': some tens of KB that
// a reader without a record limit reads whole.
func hugeField(tb testing.TB, head string, quote string, tail string) []byte {
	tb.Helper()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.Write([]byte(head + quote))
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for range 4 * infile.MaxRecordBytes >> 20 {
		zw.Write(chunk)
	}
	zw.Write([]byte(quote + tail))
	zw.Close()
	return b.Bytes()
}

func memInput(t *testing.T, data []byte) *infile.Input {
	in, err := infile.New(bytes.NewReader(data), "fuzz")
	if err != nil {
		return nil
	}
	return in
}

func FuzzCSVSource(f *testing.F) {
	f.Add([]byte("\uFEFFid,parent_id,n,b,j,x\r\na,,1.5,true,[1],AAE=\r\n\"b,\"\"q\"\"\",a,,,\"{\"\"k\"\":null}\",\n"), false)
	f.Add([]byte("id,parent_id,n,b,j,x\nc,d,1e999,maybe,{,!!\ne,f\n\"open"), true)
	f.Add([]byte("id;parent_id\n😀;\xff\n"), false)
	f.Add(gzipped(f, []byte("id,parent_id\na,\n")), false)
	f.Add(zstdWindowFrame([]byte("id,parent_id\na,\n"), 25), false)
	f.Add(zstdWindowFrame([]byte("id,parent_id\na,\n"), 27), false)
	f.Add(hugeField(f, "id,parent_id,note\na,,", `"`, "\nb,a,c\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, typed bool) {
		in := memInput(t, data)
		if in == nil {
			return
		}
		opts := SourceOptions{KeepRaw: true}
		if typed {
			opts.Types = map[string]string{"n": "N", "b": "BOOL", "j": "JSON", "x": "B"}
		}
		src, err := newCSVSource(in, "fuzz.csv", opts)
		if err != nil {
			return
		}
		drain(t, src, "fuzz.csv", "")
	})
}

// zstdWindowFrame is data as one zstd frame whose header asks for a window
// of 1<<windowLog bytes, holding data as one raw block.
func zstdWindowFrame(data []byte, windowLog int) []byte {
	b := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, byte(windowLog-10) << 3}
	h := 1 | len(data)<<3 // the last block, raw
	b = append(b, byte(h), byte(h>>8), byte(h>>16))
	return append(b, data...)
}

func fuzzJSON(f *testing.F, format string) {
	f.Add([]byte("[\n{\"id\":\"a\",\"n\":1.5,\"l\":[true,null,{}]},\n{\"id\":2,\"parent_id\":\"a\"}]"))
	f.Add([]byte("{\"id\":\"a\"}\n{\"id\":\"b\",\"parent_id\":\"a\"}\r\n\n{bad}\n"))
	f.Add([]byte("{\n \"id\": \"a\"\n}\n{\"id\":\"b\"} {\"id\":\"c\""))
	f.Add([]byte(`[{"id":"a"} {"id":"b"}]`))
	f.Add([]byte(`[1,"x",{"id":true},{"id":"\ud800"}]x`))
	f.Add(hugeField(f, `{"id":"a"}`+"\n"+`{"id":"b","note":`, `"`, "}\n"+`{"id":"c"}`+"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := memInput(t, data)
		if in == nil {
			return
		}
		src, err := newJSONSource(in, "fuzz.json", format, SourceOptions{KeepRaw: true})
		if err != nil {
			return
		}
		drain(t, src, "fuzz.json", "")
	})
}

func FuzzJSONSource(f *testing.F)  { fuzzJSON(f, FormatJSON) }
func FuzzJSONLSource(f *testing.F) { fuzzJSON(f, FormatJSONL) }

func FuzzDDBJSONSource(f *testing.F) {
	f.Add([]byte(`{"Item":{"id":{"S":"a"},"n":{"N":"1"}}}` + "\n" + `{"Item":{"id":{"N":"2"},"parent_id":{"S":"a"},"m":{"M":{"l":{"L":[{"NULL":true}]}}}}}`))
	f.Add([]byte("{\"id\":{\"S\":\"bare\"}}\n\nnot json\n{\"Item\":{\"id\":{\"BOOL\":true}}}\n"))
	f.Add(gzipped(f, []byte(`{"Item":{"id":{"S":"a"}}}`)))
	f.Add(hugeField(f, `{"Item":{"id":{"S":"a"}}}`+"\n"+`{"Item":{"id":{"S":"b"},"n":{"S":`, `"`, "}}}\n"+`{"Item":{"id":{"S":"c"}}}`+"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		items := ddbitems.NewReader(bytes.NewReader(data), "fuzz.json")
		src := &ddbjsonSource{items: items, opts: SourceOptions{KeepRaw: true}}
		if in := memInput(t, data); in == nil {
			return // not even its compression header can be read: ddbitems.Open would fail
		}
		drain(t, src, "fuzz.json", "")
	})
}

// FuzzExportDir reads an ExportTableToPointInTime folder whose
// manifest-files.json ("": none) and one data file are the fuzzer's: the
// folder is refused at its open, or read to its end with each problem a
// RowError or a refusal of the export (infile.ErrInvalid), within the
// memory ceiling.
func FuzzExportDir(f *testing.F) {
	line := `{"Item":{"id":{"S":"a"}}}` + "\n" + `{"Item":{"id":{"S":"b"},"parent_id":{"S":"a"}}}` + "\n"
	f.Add(`{"itemCount":2,"md5Checksum":"","dataFileS3Key":"AWSDynamoDB/0123/data/part-0.json.gz"}`+"\n", gzipped(f, []byte(line)))
	f.Add(`{"itemCount":9,"dataFileS3Key":"AWSDynamoDB/0123/data/part-0.json.gz"}`+"\n"+`{"dataFileS3Key":"../x"}`, []byte(line))
	f.Add("", gzipped(f, []byte(line+"not json\n")))
	f.Add("{", []byte(line))
	f.Fuzz(func(t *testing.T, manifest string, data []byte) {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "data", "part-0.json.gz"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if manifest != "" {
			if err := os.WriteFile(filepath.Join(dir, "manifest-files.json"), []byte(manifest), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		defer memoryCeiling(t)()
		src, err := OpenSource(dir, SourceOptions{Format: FormatDDBJSON, KeepRaw: true})
		if err != nil {
			return
		}
		defer src.Close()
		for range 20000 {
			rec, err := src.Next(context.Background())
			if err == io.EOF {
				return
			}
			var re *transform.RowError
			switch {
			case errors.As(err, &re):
				if re.Line < 0 {
					t.Fatalf("RowError %v: Line %d", err, re.Line)
				}
			case errors.Is(err, infile.ErrInvalid):
				return
			case err != nil:
				t.Fatalf("Next: %v (%T), want a RowError, a refusal of the export or io.EOF", err, err)
			case rec == nil || !utf8.ValidString(rec.ID):
				t.Fatalf("Next returned %v", rec)
			}
		}
	})
}

// FuzzParquetSource reads mutated Parquet files. Its seeds are a few
// hundred bytes each (compactParquet): Go minimizes every input that finds
// new coverage, for up to -fuzzminimizetime (60s), by trying to delete each
// range of its bytes, a number of runs that grows as the square of its size
// (golang/go#48820). Inputs of some kilobytes, such as the files of every
// column type TestParquetSource writes, keep the workers minimizing for
// minutes, and the fuzzer shows no progress; those types are the unit
// tests' to cover.
func FuzzParquetSource(f *testing.F) {
	type ids struct { // two row groups, an optional column, invalid UTF-8
		ID     int64   `parquet:"id"`
		Parent *string `parquet:"parent_id,optional"`
	}
	f.Add(compactParquet(f, pqBytes(f, []ids{{ID: 1}, {ID: 2, Parent: ptr("\xff")}}, 1)))
	type list struct {
		ID   string   `parquet:"id"`
		Tags []string `parquet:"tags,list"`
	}
	f.Add(compactParquet(f, pqBytes(f, []list{{ID: "a", Tags: []string{"x", "y"}}}, 1)))
	type nested struct {
		Owner *pqOwner         `parquet:"owner,optional"`
		Attrs map[string]int32 `parquet:"attrs"`
	}
	f.Add(compactParquet(f, pqBytes(f, []nested{{Owner: &pqOwner{Name: "o", Age: ptr(int32(3))}, Attrs: map[string]int32{"k": 1}}}, 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		src, err := newParquetSource(bytes.NewReader(data), int64(len(data)), "fuzz.parquet", SourceOptions{KeepRaw: true})
		if err != nil {
			return
		}
		// The checks of what the pages declare are the same against a
		// smaller budget, which keeps every run to some tens of MiB.
		src.maxMemory = 32 << 20
		drain(t, src, "fuzz.parquet", "row")
	})
}

// BenchmarkCSVSource reads a 100k-row CSV (id,parent_id,name,size,created)
// from memory, with size typed N.
func BenchmarkCSVSource(b *testing.B) {
	const rows = 100_000
	var sb strings.Builder
	sb.WriteString("id,parent_id,name,size,created\n")
	for i := range rows {
		sb.WriteString("n")
		sb.WriteString(strconv.Itoa(i))
		sb.WriteByte(',')
		if i > 0 {
			sb.WriteString("n")
			sb.WriteString(strconv.Itoa((i - 1) / 8))
		}
		sb.WriteString(",file ")
		sb.WriteString(strconv.Itoa(i % 1000))
		sb.WriteString(".txt,")
		sb.WriteString(strconv.Itoa(i * 37 % 100000))
		sb.WriteString(",2024-01-02T03:04:05Z\n")
	}
	data := []byte(sb.String())
	opts := SourceOptions{Types: map[string]string{"size": "N"}}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		in, err := infile.New(bytes.NewReader(data), "bench.csv")
		if err != nil {
			b.Fatal(err)
		}
		src, err := newCSVSource(in, "bench.csv", opts)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			_, err := src.Next(context.Background())
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != rows {
			b.Fatalf("read %d rows, want %d", n, rows)
		}
		if err := src.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
