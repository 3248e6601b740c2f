package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
)

// runPeak runs treeport as run does and also returns its peak resident
// memory in MiB, as the program itself reads it at exit (VmHWM, written to
// the file TREEPORT_PEAKRSS names). The rusage of the child is not used:
// Linux counts the test process's own resident memory at the fork in it.
func runPeak(t *testing.T, args ...string) (stdout, stderr string, code int, peakMiB int64) {
	t.Helper()
	return runPeakEnv(t, nil, args...)
}

// runPeakEnv is runPeak with env added to the environment.
func runPeakEnv(t *testing.T, env []string, args ...string) (stdout, stderr string, code int, peakMiB int64) {
	t.Helper()
	report := filepath.Join(t.TempDir(), "peak")
	cmd := exec.Command(treeportBin, args...)
	cmd.Env = append(append(os.Environ(), env...), "TREEPORT_PEAKRSS="+report)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	line, err := os.ReadFile(report)
	if err != nil {
		if runtime.GOOS != "linux" {
			t.Skipf("no peak resident memory on %s: %v", runtime.GOOS, err)
		}
		t.Fatalf("treeport wrote no peak resident memory (TREEPORT_PEAKRSS): %v", err)
	}
	f := strings.Fields(string(line)) // "VmHWM:", N, "kB"
	if len(f) != 3 || f[2] != "kB" {
		t.Fatalf("%s holds %q, want a VmHWM line", report, line)
	}
	kb, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	peakMiB = kb >> 10
	t.Logf("treeport %s: exit %d, peak RSS %d MiB", args[0], code, peakMiB)
	return out.String(), errb.String(), code, peakMiB
}

// writeGzipRepeat writes head, then chunk times times, then tail, as a gzip
// file of several members (which a gzip reader reads as one stream): the
// repeated chunk is compressed once, so that a gigabyte of input costs the
// test a megabyte and no time.
func writeGzipRepeat(t *testing.T, path, head string, chunk []byte, times int, tail string) {
	t.Helper()
	member := func(b []byte) []byte {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(b)
		zw.Close()
		return buf.Bytes()
	}
	var file bytes.Buffer
	file.Write(member([]byte(head)))
	c := member(chunk)
	for range times {
		file.Write(c)
	}
	file.Write(member([]byte(tail)))
	if err := os.WriteFile(path, file.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHugeCSVFieldRefusedInBoundedMemory: a 1 MB .csv.gz holding one field
// of 1 GiB, quoted or not, is refused with its file, its line and the
// limit, exit 2, nothing written, and the process never holds more than a
// fraction of the field. Before the record limit it ran out of memory at
// 1-2.8 GB.
func TestHugeCSVFieldRefusedInBoundedMemory(t *testing.T) {
	const gib = 1 << 30
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for _, tc := range []struct{ name, open, close string }{
		{"unquoted", "", ""},
		{"quoted", `"`, `"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "huge.csv.gz")
			writeGzipRepeat(t, in, "id,parent_id,note\nr,,ok\na,r,"+tc.open, chunk, gib/len(chunk), tc.close+"\nb,r,fine\n")
			out := filepath.Join(dir, "out")
			_, stderr, code, peak := runPeak(t, "import", "--in", in, "--layout", "path", "--out", out)
			if code != 2 {
				t.Fatalf("exit %d, want 2:\n%s", code, stderr)
			}
			if !strings.Contains(stderr, in+":3: ") || !strings.Contains(stderr, "16 MiB") {
				t.Errorf("stderr does not name the place (%s:3) and the limit (16 MiB):\n%s", in, stderr)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s exists: nothing may be written", out)
			}
			if peak > 128 {
				t.Errorf("peak resident memory %d MiB reading a 1 GiB field; want at most 128 MiB", peak)
			}
		})
	}
}

// TestRepeatedIDCostsACount: millions of rows of one id (a 20 KB gzip)
// print the first 100 problems and the count of the others, exit 2, in
// bounded memory; with --on-invalid=skip --rejects, every row is in the
// rejects file, which streams to disk. Before, each repeated row kept about
// 300 bytes (6 million ran out of memory).
func TestRepeatedIDCostsACount(t *testing.T) {
	const rows = 3_000_000
	dir := t.TempDir()
	in := filepath.Join(dir, "same.csv.gz")
	writeGzipRepeat(t, in, "id,parent_id\n", bytes.Repeat([]byte("x,\n"), rows/1000), 1000, "")
	_, stderr, code, peak := runPeak(t, "import", "--in", in, "--layout", "path", "--out", filepath.Join(dir, "out"))
	if code != 2 {
		t.Fatalf("exit %d, want 2:\n%.2000s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	dups := 0
	for _, l := range lines {
		if strings.Contains(l, `id "x": duplicate id`) {
			dups++
		}
	}
	more := "… and " + units.Thousands(int64(rows-1-100)) + " problems more"
	if dups != 100 || !strings.Contains(stderr, more) || !strings.Contains(stderr, units.Thousands(rows-1)+" problems in "+in) {
		t.Errorf("want 100 duplicate-id lines (got %d), %q and the total of %d problems:\n%.3000s", dups, more, rows-1, stderr)
	}
	if peak > 100 {
		t.Errorf("peak resident memory %d MiB for %d rows of one id; want at most 100 MiB", peak, rows)
	}

	t.Run("skip with rejects", func(t *testing.T) {
		// Fewer rows: each is a line of the rejects file.
		const rows = 1_000_000
		in := filepath.Join(dir, "same-1m.csv.gz")
		writeGzipRepeat(t, in, "id,parent_id\n", bytes.Repeat([]byte("x,\n"), rows/1000), 1000, "")
		rejects := filepath.Join(dir, "rejects.jsonl")
		_, stderr, code, peak := runPeak(t, "import", "--in", in, "--layout", "path", "--out", filepath.Join(dir, "out2"),
			"--on-invalid", "skip", "--rejects", rejects)
		if code == 2 || code == 3 {
			t.Fatalf("exit %d:\n%.2000s", code, stderr)
		}
		f, err := os.Open(rejects)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		n, buf := 0, make([]byte, 1<<20)
		for {
			k, err := f.Read(buf)
			n += bytes.Count(buf[:k], []byte("\n"))
			if err != nil {
				break
			}
		}
		if n != rows {
			t.Errorf("the rejects file has %d lines; want one for each of the %d rows", n, rows)
		}
		if peak > 100 {
			t.Errorf("peak resident memory %d MiB for %d rejected rows; want at most 100 MiB", peak, rows)
		}
	})
}

// pqLimitRow is a Parquet row for TestEveryFormatOverLimitsExits2.
type pqLimitRow struct {
	ID     string  `parquet:"id"`
	Parent *string `parquet:"parent_id,optional"`
	Note   string  `parquet:"note"`
}

// overLimitInput is an input of each format with a field over 1 MiB and
// a record over 16 MiB (but Parquet's), and where each is refused.
type overLimitInput struct {
	name, file, content string
	want                []string // "PLACE: … LIMIT", the place after the file's path
}

func overLimitInputs(t *testing.T) []overLimitInput {
	t.Helper()
	field := strings.Repeat("f", 1<<20+1)
	record := strings.Repeat("r", 16<<20+1)
	jsonl := `{"id":"r"}` + "\n" + `{"id":"a","parent_id":"r","note":"` + field + `"}` + "\n" +
		`{"id":"b","parent_id":"r","note":"` + record + `"}` + "\n" + `{"id":"c","parent_id":"r"}` + "\n"
	ddb := `{"Item":{"id":{"S":"r"}}}` + "\n" + `{"Item":{"id":{"S":"a"},"parent_id":{"S":"r"},"note":{"S":"` + field + `"}}}` + "\n" +
		`{"Item":{"id":{"S":"b"},"parent_id":{"S":"r"},"note":{"S":"` + record + `"}}}` + "\n" + `{"Item":{"id":{"S":"c"},"parent_id":{"S":"r"}}}` + "\n"
	r := "r"
	var pq bytes.Buffer
	w := parquet.NewGenericWriter[pqLimitRow](&pq)
	if _, err := w.Write([]pqLimitRow{{ID: "r"}, {ID: "a", Parent: &r, Note: field}, {ID: "c", Parent: &r}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return []overLimitInput{
		{"CSV", "in.csv", "id,parent_id,note\nr,,\na,r," + field + "\nb,r,\"" + record + "\"\nc,r,\n", []string{":3: ", "1 MiB", ":4: ", "16 MiB"}},
		{"JSON Lines", "in.jsonl", jsonl, []string{":2: ", "1 MiB", ":3: ", "16 MiB"}},
		{"JSON array", "in.json", "[\n" + strings.ReplaceAll(strings.TrimSpace(jsonl), "}\n", "},\n") + "\n]\n", []string{":3: ", "1 MiB", ":4: ", "16 MiB"}},
		{"DynamoDB JSON", "in.ddbjson", ddb, []string{":2: ", "1 MiB", ":3: ", "16 MiB"}},
		{"Parquet", "in.parquet", pq.String(), []string{" (row 2): ", "1 MiB"}},
	}
}

// TestEveryFormatOverLimitsExits2: in every input format, a field over
// 1 MiB and a record over 16 MiB make treeport exit 2 with nothing written,
// each reported at its place (file and line, or Parquet row) with its
// limit.
func TestEveryFormatOverLimitsExits2(t *testing.T) {
	tests := overLimitInputs(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, tc.file)
			if err := os.WriteFile(in, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out")
			_, stderr, code, _ := runPeak(t, "import", "--in", in, "--layout", "path", "--out", out)
			if code != 2 {
				t.Fatalf("exit %d, want 2:\n%.2000s", code, stderr)
			}
			for k := 0; k < len(tc.want); k += 2 {
				found := false
				for _, l := range strings.Split(stderr, "\n") {
					if strings.HasPrefix(l, in+tc.want[k]) && strings.Contains(l, tc.want[k+1]) {
						found = true
					}
				}
				if !found {
					t.Errorf("no line %q…%q in:\n%.2000s", in+tc.want[k], tc.want[k+1], stderr)
				}
			}
			if len(stderr) > 8000 {
				t.Errorf("%d bytes of messages: a refused record is quoted", len(stderr))
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s exists: nothing may be written", out)
			}
		})
	}
}

// TestPlanRepeatedIDCostsACount: plan and apply, like import, keep the
// problems they print (--max-errors) and count the others: a snapshot of
// three million rows of one id exits 2, prints 5 problems and the count of the
// rest, in bounded memory, and writes nothing.
func TestPlanRepeatedIDCostsACount(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	l, _ := layouts.New("path", layouts.Options{})
	table := loadTable(t, awsEnv(endpoint), client, "fixtures/cars.csv", fixtureTypes(t, "cars"), l)
	const rows = 3_000_000
	in := filepath.Join(t.TempDir(), "same.csv.gz")
	writeGzipRepeat(t, in, "id,parent_id\n", bytes.Repeat([]byte("x,\n"), rows/1000), 1000, "")
	for _, args := range [][]string{{"plan"}, {"apply", "--no-progress"}} {
		cmd := append(args, "--in", in, "--layout", "path", "--table", table, "--max-errors", "5",
			"--endpoint-url", endpoint, "--region", "us-east-1")
		_, stderr, code, peak := runPeak(t, cmd...)
		if code != 2 {
			t.Fatalf("%s: exit %d, want 2:\n%.2000s", args[0], code, stderr)
		}
		more := "… and " + units.Thousands(int64(rows-1-5)) + " problems more"
		if n := strings.Count(stderr, `id "x": duplicate id`); n != 5 || !strings.Contains(stderr, more) || !strings.Contains(stderr, units.Thousands(rows-1)+" problems in ") {
			t.Errorf("%s: %d problems printed; want 5, %q and the total %d:\n%.2000s", args[0], n, more, rows-1, stderr)
		}
		// Kept problems would cost ~300 bytes a row, 900 MB; a count
		// costs ~30 MiB.
		if peak > 100 {
			t.Errorf("%s: peak resident memory %d MiB; want at most 100 MiB", args[0], peak)
		}
	}
}

// TestVerifyAndExportInHoldTheLimits: verify and export --in, which read an
// input record by record without ReadInput, hold it to the same limits: a
// field over 1 MiB in any format is refused at its place with the limit,
// exit 2, and nothing is compared or written. Before, only the 16 MiB record
// limit held them (verify compared a 1 MiB field; export --in rebuilt it).
func TestVerifyAndExportInHoldTheLimits(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	l, _ := layouts.New("path", layouts.Options{})
	table := ddblocal.NewTable(t, client, l.Table())
	for _, tc := range overLimitInputs(t) {
		t.Run("verify "+tc.name, func(t *testing.T) {
			in := filepath.Join(t.TempDir(), tc.file)
			if err := os.WriteFile(in, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, stderr, code := run(t, awsEnv(endpoint), "verify", "--in", in, "--layout", "path", "--table", table)
			if code != 2 || !strings.Contains(stderr, in+tc.want[0]) || !strings.Contains(stderr, tc.want[1]) {
				t.Errorf("exit %d, want 2 with %q…%q:\n%.2000s", code, in+tc.want[0], tc.want[1], stderr)
			}
			if strings.Contains(stderr, "verify: ") {
				t.Errorf("a refused input was compared:\n%.2000s", stderr)
			}
		})
	}
	// A record over 16 MiB made of fields each under 1 MiB: the record
	// limit holds on its own.
	t.Run("verify record of small fields", func(t *testing.T) {
		var b strings.Builder
		b.WriteString(`{"id":"r"}` + "\n" + `{"id":"a","parent_id":"r"`)
		for k := range 17 {
			fmt.Fprintf(&b, `,"f%d":"%s"`, k, strings.Repeat("x", 1_000_000))
		}
		b.WriteString("}\n")
		in := filepath.Join(t.TempDir(), "wide.jsonl")
		if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := run(t, awsEnv(endpoint), "verify", "--in", in, "--layout", "path", "--table", table)
		if code != 2 || !strings.Contains(stderr, in+":2") || !strings.Contains(stderr, "16 MiB") {
			t.Errorf("exit %d, want 2 naming %s:2 and the 16 MiB limit:\n%.2000s", code, in, stderr)
		}
	})
	t.Run("export --in", func(t *testing.T) {
		dir := t.TempDir()
		small := filepath.Join(dir, "small.jsonl")
		if err := os.WriteFile(small, []byte(`{"id":"r"}`+"\n"+`{"id":"a","parent_id":"r"}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		exp := filepath.Join(dir, "export")
		if _, stderr, code := run(t, nil, "import", "--in", small, "--layout", "path", "--out", exp); code != 0 {
			t.Fatalf("import --out: exit %d:\n%s", code, stderr)
		}
		data, err := filepath.Glob(filepath.Join(exp, "data", "*.json.gz"))
		if err != nil || len(data) != 1 {
			t.Fatalf("import --out wrote data files %v (%v), want one", data, err)
		}
		// A third item with a field over 1 MiB, as a gzip member of its own.
		f, err := os.OpenFile(data[0], os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		zw := gzip.NewWriter(f)
		fmt.Fprintf(zw, `{"Item":{"Id":{"S":"b"},"ParentId":{"S":"r"},"note":{"S":"%s"}}}`+"\n", strings.Repeat("f", 1<<20+1))
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		out := filepath.Join(dir, "out.jsonl")
		_, stderr, code := run(t, nil, "export", "--in", exp, "--layout", "path", "--out", out)
		if code != 2 || !strings.Contains(stderr, data[0]+":3") || !strings.Contains(stderr, "1 MiB") {
			t.Errorf("exit %d, want 2 naming %s:3 and the 1 MiB limit:\n%.2000s", code, data[0], stderr)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s exists: nothing may be written", out)
		}
	})
}

// TestBenchRejectsStream: bench --on-invalid=skip --rejects with a million
// rows of one id writes each rejected row to the rejects file, with its
// layout, place and reason, and keeps only the problems it prints: its
// memory does not grow with the problems. Before, every problem was kept in
// memory to be written at the end (about 300 bytes each).
func TestBenchRejectsStream(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	const rows = 1_000_000
	dir := t.TempDir()
	in := filepath.Join(dir, "same.csv.gz")
	writeGzipRepeat(t, in, "id,parent_id\nr,\nc,r\n", bytes.Repeat([]byte("x,\n"), rows/1000), 1000, "")
	rejects := filepath.Join(dir, "rejects.jsonl")
	_, stderr, code, peak := runPeakEnv(t, awsEnv(endpoint), "bench", "--in", in, "--layouts", "path", "--sample", "2",
		"--on-invalid", "skip", "--rejects", rejects, "--max-errors", "5")
	if code != 0 {
		t.Fatalf("exit %d, want 0 (the valid tree benched):\n%.2000s", code, stderr)
	}
	f, err := os.Open(rejects)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, buf := 0, make([]byte, 1<<20)
	var first []byte
	for {
		k, err := f.Read(buf)
		if first == nil {
			first = bytes.Clone(buf[:bytes.IndexByte(buf[:k], '\n')+1])
		}
		n += bytes.Count(buf[:k], []byte("\n"))
		if err != nil {
			break
		}
	}
	if n != rows {
		t.Errorf("the rejects file has %d lines; want one for each of the %d rows", n, rows)
	}
	want := `{"layout":"path","file":"` + in + `","line":4,"id":"x","reason":"transform: duplicate id: at ` + in + `:4, ` + in + `:5, `
	if !bytes.HasPrefix(first, []byte(want)) {
		t.Errorf("the rejects file starts %q, want %q…", first, want)
	}
	if !strings.Contains(stderr, "… and "+units.Thousands(int64(rows-1-5))+" problems more") {
		t.Errorf("stderr does not count the problems past the 5 printed:\n%.2000s", stderr)
	}
	if peak > 100 {
		t.Errorf("peak resident memory %d MiB for %d rejected rows; want at most 100 MiB", peak, rows)
	}
}

// zstdOneSegment is a zstd frame of one segment (no window descriptor: its
// content size is its window, as a one-shot encoder writes it) holding
// head, then n bytes of b (RLE blocks of 128 KiB, four bytes each), then
// tail: some kilobytes that decode to n bytes.
func zstdOneSegment(head string, b byte, n int, tail string) []byte {
	size := uint64(len(head) + n + len(tail))
	out := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0} // single segment, 8-byte content size
	for i := range 8 {
		out = append(out, byte(size>>(8*i)))
	}
	block := func(last bool, typ, size int, data ...byte) {
		h := typ<<1 | size<<3
		if last {
			h |= 1
		}
		out = append(out, byte(h), byte(h>>8), byte(h>>16))
		out = append(out, data...)
	}
	block(false, 0, len(head), []byte(head)...)
	for left := n; left > 0; left -= 128 << 10 {
		block(false, 1, min(left, 128<<10), b)
	}
	block(true, 0, len(tail), []byte(tail)...)
	return out
}

// TestZstdOneSegmentWindowRefused: a .csv.zst of 4 KB, one zstd segment
// that declares 120 MiB of content (which a decoder takes for its window
// and holds), is refused with the window limit, exit 2, without holding
// the window. Before, a window up to 128 MiB passed (and a single segment
// up to 1 GiB): this one was read, holding 174 MiB at the peak.
func TestZstdOneSegmentWindowRefused(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "one.csv.zst")
	if err := os.WriteFile(in, zstdOneSegment("id,parent_id,note\nr,,ok\na,r,", 'x', 120<<20, "\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code, peak := runPeak(t, "import", "--in", in, "--layout", "path", "--out", filepath.Join(dir, "out"))
	if code != 2 || !strings.Contains(stderr, in) || !strings.Contains(stderr, "32 MiB") {
		t.Errorf("exit %d, want 2 naming %s and the 32 MiB window limit:\n%.2000s", code, in, stderr)
	}
	if peak > 100 {
		t.Errorf("peak resident memory %d MiB; want at most 100 MiB", peak)
	}
}

// gzipParquet writes, by hand, a Parquet file of one row group and one
// required string column "id" with one gzip-compressed PLAIN data page of
// n values of valueBytes bytes each ("x"), whose header declares declared
// bytes once decompressed. The value is compressed once and repeated as
// gzip members, so that a gigabyte of page costs the file a megabyte.
func gzipParquet(t *testing.T, path string, n, valueBytes int, declared int32) {
	t.Helper()
	value := append(binary.LittleEndian.AppendUint32(nil, uint32(valueBytes)), bytes.Repeat([]byte("x"), valueBytes)...)
	var member bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	zw.Write(value)
	zw.Close()
	data := bytes.Repeat(member.Bytes(), n)
	header, err := thrift.Marshal(&thrift.CompactProtocol{}, &format.PageHeader{
		Type: format.DataPage, UncompressedPageSize: declared, CompressedPageSize: int32(len(data)),
		DataPageHeader: thrift.New(format.DataPageHeader{NumValues: int32(n), Encoding: format.Plain,
			DefinitionLevelEncoding: format.RLE, RepetitionLevelEncoding: format.RLE}),
	})
	if err != nil {
		t.Fatal(err)
	}
	chunk := int64(len(header) + len(data))
	footer, err := thrift.Marshal(&thrift.CompactProtocol{}, &format.FileMetaData{
		Version: 1,
		Schema: []format.SchemaElement{
			{Name: "schema", NumChildren: thrift.New(int32(1))},
			{Name: "id", Type: thrift.New(format.ByteArray), RepetitionType: thrift.New(format.Required)},
		},
		NumRows: int64(n),
		RowGroups: []format.RowGroup{{NumRows: int64(n), TotalByteSize: int64(declared), Columns: []format.ColumnChunk{{
			FileOffset: 4,
			MetaData: format.ColumnMetaData{Type: format.ByteArray, Encoding: []format.Encoding{format.Plain}, PathInSchema: []string{"id"},
				Codec: format.Gzip, NumValues: int64(n), TotalUncompressedSize: int64(declared), TotalCompressedSize: chunk, DataPageOffset: 4},
		}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	file.WriteString("PAR1")
	file.Write(header)
	file.Write(data)
	file.Write(footer)
	file.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(footer))))
	file.WriteString("PAR1")
	if err := os.WriteFile(path, file.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCraftedParquetPageRefused: a Parquet file of some hundred KB whose
// one page decodes to 600 MB is refused before it is decoded, exit 2, the
// file named, in bounded memory, whether its header says so (over the
// 64 MiB a page may declare) or declares 1 KiB (its data decodes to more
// than it declares). Before, the first was under the 4 GiB budget and the
// second under any budget: each was decoded, holding over 600 MB.
func TestCraftedParquetPageRefused(t *testing.T) {
	const values, valueBytes = 600, 1_000_000
	for _, tc := range []struct {
		name     string
		declared int32
		want     string
	}{
		{"declared", values * (valueBytes + 4), "more than the 64 MiB treeport allows a page"},
		{"undeclared", 1 << 10, "decodes to more than the 1024 bytes it declares"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "crafted.parquet")
			gzipParquet(t, in, values, valueBytes, tc.declared)
			out := filepath.Join(dir, "out")
			_, stderr, code, peak := runPeak(t, "import", "--in", in, "--layout", "path", "--out", out)
			if code != 2 || !strings.Contains(stderr, in) || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want 2 naming %s and %q:\n%.2000s", code, in, tc.want, stderr)
			}
			if peak > 100 {
				t.Errorf("peak resident memory %d MiB; want at most 100 MiB", peak)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s exists: nothing may be written", out)
			}
		})
	}
}
