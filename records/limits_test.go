package records

import (
	"context"
	"errors"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/treeport/treeport/records/infile"
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
					src.Skeleton(nil)
				}
				for {
					var id string
					var line int
					var err error
					if skel {
						var row SkeletonRow
						err = src.NextSkeleton(context.Background(), &row)
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
			if err == nil || !errors.Is(err, infile.ErrInvalid) || !strings.Contains(err.Error(), "wide.csv:1: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("newCSVSource: %v; want invalid input at wide.csv:1 saying %q", err, tc.want)
			}
		})
	}
}
