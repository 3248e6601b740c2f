package importer

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/treeport/treeport/records/infile"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// fillReader reads as head, then n bytes of the pattern fill over and over,
// then tail: a huge input that costs the test no memory.
type fillReader struct {
	head, fill, tail []byte
	n                int // fill bytes left
	k                int // where in fill the next byte is
}

func newFillReader(head string, fill string, n int, tail string) *fillReader {
	return &fillReader{head: []byte(head), fill: []byte(fill), n: n, tail: []byte(tail)}
}

func (r *fillReader) Read(p []byte) (int, error) {
	w := 0
	for w < len(p) {
		switch {
		case len(r.head) > 0:
			c := copy(p[w:], r.head)
			r.head = r.head[c:]
			w += c
		case r.n > 0:
			c := min(len(p)-w, r.n, len(r.fill)-r.k)
			copy(p[w:w+c], r.fill[r.k:])
			r.k = (r.k + c) % len(r.fill)
			r.n -= c
			w += c
		case len(r.tail) > 0:
			c := copy(p[w:], r.tail)
			r.tail = r.tail[c:]
			w += c
		default:
			if w == 0 {
				return 0, io.EOF
			}
			return w, nil
		}
	}
	return w, nil
}

// allocated returns the bytes allocated on the heap so far: what a reader
// costs, whatever the collector has freed of it since.
func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// TestCSVRecordOverLimit: a CSV record over infile.MaxRecordBytes (one
// huge field, quoted or not, or a quoted field of many lines) is refused
// with its line and the limit, the rows after it are read with their
// lines, and reading it allocates a bounded amount however large it is. It
// failed before the limit: the line reader grew its buffer to the whole
// record.
func TestCSVRecordOverLimit(t *testing.T) {
	const huge = 4 * infile.MaxRecordBytes
	tests := []struct {
		name       string
		head, fill string
		tail       string
		lines      int // of the bad record
		keepRaw    bool
	}{
		{name: "unquoted", head: "a,,", fill: "x", tail: "\n"},
		{name: "quoted", head: "a,,\"", fill: "xy\"\",", tail: "\"\n"},
		{name: "quoted, kept for rejects", head: "a,,\"", fill: "x", tail: "\"\n", keepRaw: true},
		// Short lines inside quotes: no line is long, the record is.
		{name: "quoted lines", head: "a,,\"", fill: "xxxxxxx\n", tail: "\"\n", lines: huge / 8},
		{name: "quoted CRLF lines", head: "a,,\"", fill: "xxxxxx\r\n", tail: "\"\n", lines: huge / 8},
	}
	for _, tc := range tests {
		for _, skel := range []bool{false, true} {
			name := tc.name
			if skel {
				name += ", skeleton read"
			}
			t.Run(name, func(t *testing.T) {
				head := "id,parent_id,note\nr,,first\n" + tc.head
				tail := tc.tail + "b,r,after\n"
				in, err := infile.New(newFillReader(head, tc.fill, huge, tail), "huge.csv")
				if err != nil {
					t.Fatal(err)
				}
				src, err := newCSVSource(in, "huge.csv", SourceOptions{KeepRaw: tc.keepRaw})
				if err != nil {
					t.Fatal(err)
				}
				defer src.Close()
				runtime.GC()
				before := allocated()
				var got []string
				var bad *transform.RowError
				if skel {
					src.skeleton(nil)
				}
				for {
					var id string
					var line int
					var err error
					if skel {
						var row skeletonRow
						err = src.nextSkeleton(context.Background(), &row)
						id, line = row.ID, row.Line
					} else {
						var rec *transform.Record
						rec, err = src.Next(context.Background())
						if rec != nil {
							id, line = rec.ID, rec.Line
						}
					}
					if err == io.EOF {
						break
					}
					if errors.As(err, &bad) {
						got = append(got, "bad@"+itoa(bad.Line))
						continue
					}
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, id+"@"+itoa(line))
				}
				cost := allocated() - before
				want := []string{"r@2", "bad@3", "b@" + itoa(4+tc.lines)}
				if strings.Join(got, " ") != strings.Join(want, " ") {
					t.Errorf("read %v, want %v", got, want)
				}
				if bad != nil {
					msg := bad.Error()
					if !strings.Contains(msg, "huge.csv:3") || !strings.Contains(msg, "16 MiB") || !errors.Is(bad, transform.ErrParse) {
						t.Errorf("error %q: want its place (huge.csv:3), the limit (16 MiB), and a parse error", msg)
					}
				}
				if limit := uint64(3 * infile.MaxRecordBytes); cost > limit {
					t.Errorf("reading a record of %d MiB allocated %d MiB; want at most %d MiB", huge>>20, cost>>20, limit>>20)
				}
			})
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// pqWide is a Parquet row of 18 string columns, each under the field limit
// and together over the record limit.
type pqWide struct {
	ID     string  `parquet:"id"`
	Parent *string `parquet:"parent_id,optional"`
	Note   string  `parquet:"note"`
	C00    string  `parquet:"c00"`
	C01    string  `parquet:"c01"`
	C02    string  `parquet:"c02"`
	C03    string  `parquet:"c03"`
	C04    string  `parquet:"c04"`
	C05    string  `parquet:"c05"`
	C06    string  `parquet:"c06"`
	C07    string  `parquet:"c07"`
	C08    string  `parquet:"c08"`
	C09    string  `parquet:"c09"`
	C10    string  `parquet:"c10"`
	C11    string  `parquet:"c11"`
	C12    string  `parquet:"c12"`
	C13    string  `parquet:"c13"`
	C14    string  `parquet:"c14"`
	C15    string  `parquet:"c15"`
	C16    string  `parquet:"c16"`
}

// TestEveryReaderHoldsTheLimits: every reader refuses a field over
// infile.MaxFieldBytes and a record over infile.MaxRecordBytes with the
// record's place and the limit, and reads the records around them.
func TestEveryReaderHoldsTheLimits(t *testing.T) {
	field := strings.Repeat("f", infile.MaxFieldBytes+1)    // one field over its limit
	record := strings.Repeat("r", infile.MaxRecordBytes+10) // one field that takes its record over
	type node struct{ id, parent, note string }
	nodes := []node{{"r", "", "ok"}, {"a", "r", field}, {"b", "r", record}, {"c", "r", "fine"}}
	lines := func(f func(n node) string) string {
		var b strings.Builder
		for _, n := range nodes {
			b.WriteString(f(n))
			b.WriteByte('\n')
		}
		return b.String()
	}
	jsonl := lines(func(n node) string {
		return `{"id":"` + n.id + `","parent_id":"` + n.parent + `","note":"` + n.note + `"}`
	})
	ddb := lines(func(n node) string {
		p := ""
		if n.parent != "" {
			p = `,"parent_id":{"S":"` + n.parent + `"}`
		}
		return `{"Item":{"id":{"S":"` + n.id + `"}` + p + `,"note":{"S":"` + n.note + `"}}}`
	})
	gz := func(s string) string {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(s))
		zw.Close()
		return b.String()
	}
	wide := strings.Repeat("w", infile.MaxRecordBytes/17+1)
	rp := "r"
	pq := []pqWide{{ID: "r", Note: "ok"}, {ID: "a", Parent: &rp, Note: field}, {ID: "b", Parent: &rp, Note: "wide"}, {ID: "c", Parent: &rp, Note: "fine"}}
	pq[2].C00, pq[2].C01, pq[2].C02, pq[2].C03, pq[2].C04, pq[2].C05, pq[2].C06, pq[2].C07, pq[2].C08 = wide, wide, wide, wide, wide, wide, wide, wide, wide
	pq[2].C09, pq[2].C10, pq[2].C11, pq[2].C12, pq[2].C13, pq[2].C14, pq[2].C15, pq[2].C16 = wide, wide, wide, wide, wide, wide, wide, wide

	tests := []struct {
		name  string
		files map[string]string // name in a new directory → content
		in    string            // what to read, in that directory
		first int               // the line (row) of the first node
		lines int               // of each record, when it is not 1
	}{
		{name: "CSV", files: map[string]string{"in.csv": "id,parent_id,note\n" + lines(func(n node) string { return n.id + "," + n.parent + "," + n.note })}, in: "in.csv", first: 2},
		{name: "CSV quoted", files: map[string]string{"in.csv": "id,parent_id,note\n" + lines(func(n node) string { return n.id + "," + n.parent + `,"` + n.note + `"` })}, in: "in.csv", first: 2},
		{name: "JSON Lines", files: map[string]string{"in.jsonl": jsonl}, in: "in.jsonl", first: 1},
		{name: "JSON array", files: map[string]string{"in.json": "[\n" + strings.ReplaceAll(strings.TrimSuffix(jsonl, "\n"), "}\n", "},\n") + "\n]\n"}, in: "in.json", first: 2},
		{name: "JSON objects over lines", files: map[string]string{"in.json": strings.ReplaceAll(jsonl, `","`, "\",\n\"")}, in: "in.json", first: 1, lines: 3},
		{name: "DynamoDB JSON", files: map[string]string{"in.ddbjson": ddb}, in: "in.ddbjson", first: 1},
		{name: "export directory", files: map[string]string{"data/part-0.json.gz": gz(ddb)}, in: ".", first: 1},
		{name: "Parquet", in: "in.parquet", first: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.files == nil {
				if err := os.WriteFile(filepath.Join(dir, tc.in), pqBytes(t, pq, 4), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			in, err := ReadInput(context.Background(), InputOptions{Path: filepath.Join(dir, tc.in)})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range in.Problems {
				limit := ""
				switch msg := p.Error(); {
				case strings.Contains(msg, "1 MiB"):
					limit = "1 MiB"
				case strings.Contains(msg, "16 MiB"):
					limit = "16 MiB"
				default:
					t.Errorf("problem %.300s names no limit", msg)
				}
				if len(p.Error()) > 1000 {
					t.Errorf("problem of %d bytes: it quotes the record", len(p.Error()))
				}
				got = append(got, itoa(p.Line)+" "+limit)
			}
			per := max(tc.lines, 1)
			want := []string{itoa(tc.first+per) + " 1 MiB", itoa(tc.first+2*per) + " 16 MiB"}
			if strings.Join(got, ", ") != strings.Join(want, ", ") {
				t.Errorf("problems at %q; want %q", got, want)
			}
			if in.Forest.Lookup("c") < 0 || in.Forest.Rejected(in.Forest.Lookup("c")) {
				t.Errorf("c, after the records over the limits, was not read as a good node")
			}
		})
	}
}

// TestManyAttrNamesBounded: an input whose every record brings a new
// attribute name keeps maxAttrNames of them, not one a record, and a
// layout's reserved name first seen past them is still found (by reading
// the input again), at its record.
func TestManyAttrNamesBounded(t *testing.T) {
	const n = maxAttrNames + 20_000
	var b strings.Builder
	b.WriteString(`{"id":"r"}` + "\n")
	for k := range n {
		b.WriteString(`{"id":"n` + itoa(k) + `","parent_id":"r","a` + itoa(k) + `":1}` + "\n")
	}
	b.WriteString(`{"id":"z","parent_id":"r","Path":"x"}` + "\n")
	path := filepath.Join(t.TempDir(), "names.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := ReadInput(context.Background(), InputOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.attrNames) > maxAttrNames || !in.manyNames {
		t.Errorf("kept %d attribute names of %d (more: %v); want at most %d", len(in.attrNames), n+1, in.manyNames, maxAttrNames)
	}
	l, err := layouts.New(layouts.PathName, layouts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	problems := in.CheckLayout(l)
	if len(problems) != 1 || problems[0].ID != "z" || problems[0].Line != n+2 || !errors.Is(problems[0], transform.ErrReservedAttr) {
		t.Fatalf("problems %v; want z's reserved name Path, at line %d", problems, n+2)
	}
	if z := in.Forest.Lookup("z"); !in.Forest.Rejected(z) || in.Forest.Rejected(in.Forest.Lookup("n5")) {
		t.Errorf("z rejected: %v, n5 rejected: %v; want z only", in.Forest.Rejected(z), in.Forest.Rejected(in.Forest.Lookup("n5")))
	}
}

// TestZstdWindowOverLimitIsNotEmpty: a CSV file compressed with a zstd
// window over infile.MaxZstdWindow is refused with that limit, not called
// empty (its first bytes could not be decompressed).
func TestZstdWindowOverLimitIsNotEmpty(t *testing.T) {
	data := []byte("id,parent_id\na,\n")
	frame := append([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, (30 - 10) << 3}, byte(1|len(data)<<3), 0, 0)
	path := filepath.Join(t.TempDir(), "in.csv.zst")
	if err := os.WriteFile(path, append(frame, data...), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadInput(context.Background(), InputOptions{Path: path})
	if err == nil || strings.Contains(err.Error(), "empty") || !strings.Contains(err.Error(), "128 MiB") || !errors.Is(err, ErrInvalid) && !errors.Is(err, transform.ErrParse) {
		t.Errorf("ReadInput: %v; want the window limit, not an empty file", err)
	}
}

// TestCSVHeaderLimits: a header row over the record limit, or of more than
// maxCSVColumns columns (each costs the reader memory before any row is
// read: 1.5M of them took 650 MB), is refused with its limit.
func TestCSVHeaderLimits(t *testing.T) {
	for _, tc := range []struct {
		name, head, fill string
		n                int
		want             string
	}{
		{"long", "id,parent_id,", "x", infile.MaxRecordBytes, "longer than 16 MiB"},
		{"wide", "id,parent_id", ",c", maxCSVColumns * 2, "has 100002 columns, over 100000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := infile.New(newFillReader(tc.head, tc.fill, tc.n, "\na,\n"), "wide.csv")
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			_, err = newCSVSource(in, "wide.csv", SourceOptions{})
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "wide.csv:1: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("newCSVSource: %v; want invalid input at wide.csv:1 saying %q", err, tc.want)
			}
		})
	}
}
