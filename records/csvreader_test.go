package records

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/transform"
)

// csvDelims are the delimiters the differential tests try, picked by index.
var csvDelims = []rune{',', ';', '\t', '|', '¦', '😀'}

// compareCSV reads data with csvReader and with encoding/csv and fails at
// the first record where they differ: in fields, in the record's line, or
// in the error.
func compareCSV(t *testing.T, data []byte, comma rune, bufSize int) {
	t.Helper()
	want := csv.NewReader(bytes.NewReader(data))
	want.Comma = comma
	want.ReuseRecord = true
	got := newCSVReader(bufio.NewReaderSize(bytes.NewReader(data), bufSize), comma)
	for n := 0; n < 10000; n++ {
		wf, werr := want.Read()
		gf, gerr := got.read()
		if !sameCSVError(werr, gerr) {
			t.Fatalf("record %d: error %v, encoding/csv says %v", n, gerr, werr)
		}
		if werr == io.EOF {
			return
		}
		if len(wf) != len(gf) {
			t.Fatalf("record %d: %d fields %q, encoding/csv reads %d: %q", n, len(gf), gf, len(wf), wf)
		}
		for i := range wf {
			// treeport keeps a \r\n inside quotes, where encoding/csv
			// gives \n (TestCSVKeepsQuotedCRLF).
			if wf[i] != strings.ReplaceAll(string(gf[i]), "\r\n", "\n") {
				t.Fatalf("record %d, field %d: %q, encoding/csv reads %q", n, i, gf[i], wf[i])
			}
			if start := got.starts[i]; start+len(gf[i]) > len(got.data) || !bytes.Equal(got.data[start:start+len(gf[i])], gf[i]) {
				t.Fatalf("record %d, field %d: %q is not at %d in the record's data %q", n, i, gf[i], start, got.data)
			}
		}
		var pe *csv.ParseError
		if werr == nil || (errors.As(werr, &pe) && pe.Err == csv.ErrFieldCount) {
			if line, _ := want.FieldPos(0); line != got.recLine {
				t.Fatalf("record %d starts on line %d, encoding/csv says %d", n, got.recLine, line)
			}
		}
		if werr != nil && !errors.As(werr, &pe) {
			return // a failure to read ends the stream
		}
	}
}

func sameCSVError(want, got error) bool {
	var wp, gp *csv.ParseError
	switch {
	case want == nil || got == nil:
		return want == got
	case errors.As(want, &wp):
		return errors.As(got, &gp) && *wp == *gp
	}
	return want == got
}

func TestCSVReaderMatchesEncodingCSV(t *testing.T) {
	tests := []struct {
		name string
		data string
	}{
		{name: "plain", data: "id,parent_id,name\na,,x\nb,a,y\n"},
		{name: "no final newline", data: "a,b\nc,d"},
		{name: "CRLF", data: "a,b\r\nc,d\r\n"},
		{name: "CR at the end", data: "a,b\nc,d\r"},
		{name: "lone CR inside a line", data: "a,b\rc\nd,e\n"},
		{name: "empty lines are skipped", data: "\n\na,b\n\r\n\nc,d\n\n"},
		{name: "quoted fields", data: "a,b\n\"x,1\",\"say \"\"hi\"\"\"\n"},
		{name: "quoted CRLF inside a field", data: "a,b\n\"x\r\ny\",z\r\n"},
		{name: "multi-line field", data: "a,b\n\"one\n\ntwo\",z\nc,d\n"},
		{name: "ragged", data: "a,b,c\n1,2\n1,2,3,4\n1,2,3\n"},
		{name: "bare quote", data: "a,b\nx\"y,z\nc,d\n"},
		{name: "quote after a quoted field", data: "a,b\n\"x\"y,z\nc,d\n"},
		{name: "unterminated quote", data: "a,b\n\"open,z\nc,d\n"},
		{name: "unterminated quote at the end", data: "a,b\nc,\"d"},
		{name: "a lone quote", data: "\""},
		{name: "empty fields", data: ",\n,\n\"\",\"\"\n"},
		{name: "line longer than the buffer", data: "a,b\n" + strings.Repeat("x", 100) + "," + strings.Repeat("y", 50) + "\n\"" + strings.Repeat("q", 70) + "\",z\n"},
		{name: "invalid UTF-8", data: "a,b\n\xff,\xfe\"\n"},
		{name: "empty", data: ""},
	}
	for _, tt := range tests {
		for _, comma := range csvDelims {
			t.Run(tt.name+"/"+string(comma), func(t *testing.T) {
				data := strings.ReplaceAll(tt.data, ",", string(comma))
				compareCSV(t, []byte(data), comma, 16)
				compareCSV(t, []byte(data), comma, 4096)
			})
		}
	}
}

// FuzzCSVReader checks csvReader against encoding/csv on arbitrary input:
// the same records, fields, lines and errors.
func FuzzCSVReader(f *testing.F) {
	f.Add([]byte("id,parent_id,n\r\na,,1\r\n\"b,\"\"q\"\"\",a,\"x\ny\"\n"), uint8(0), uint8(16))
	f.Add([]byte("a;b\n\n\"c\"d;e\nf\"g;h\n\"open"), uint8(1), uint8(0))
	f.Add([]byte("a¦b\n\"x¦y\"¦z\r\nq¦\"\"\r"), uint8(4), uint8(200))
	f.Fuzz(func(t *testing.T, data []byte, delim, buf uint8) {
		comma := csvDelims[int(delim)%len(csvDelims)]
		compareCSV(t, data, comma, 16+int(buf))
	})
}

// FuzzCSVReads holds the CSV source's three reads together on arbitrary
// input: Next, the skeleton read (the same rows, errors, ids and lines, and
// the sizes transform.AttrsSize gives Next's attributes) and the read into
// a reused record (the same records as Next).
func FuzzCSVReads(f *testing.F) {
	addCSVFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, typed bool) {
		open := fuzzCSVOpener(t, data, typed)
		next, skel, reuse := open(), open(), open()
		if next == nil {
			return
		}
		copySet := map[string]bool{"n": true, "j": true, "name": true}
		skel.Skeleton(copySet)
		ctx := context.Background()
		var row SkeletonRow
		var rec transform.Record
		for n := 0; n < 20000; n++ {
			want, werr := next.Next(ctx)
			serr := skel.NextSkeleton(ctx, &row)
			rerr := reuse.NextReuse(ctx, &rec)
			if errText(werr) != errText(serr) || errText(werr) != errText(rerr) {
				t.Fatalf("row %d: Next says %v, the skeleton read %v, the reused read %v", n, werr, serr, rerr)
			}
			if werr == io.EOF {
				return
			}
			if want == nil {
				if row.ID != "" || rec.ID != "" || rec.Raw != nil {
					t.Fatalf("row %d: no record from Next, but the skeleton read has id %q, the reused read %+v", n, row.ID, rec)
				}
				continue
			}
			if row.ID != want.ID || row.Parent != want.Parent || row.Line != want.Line || row.File != want.File {
				t.Fatalf("row %d: skeleton %q<%q at %s:%d, Next %q<%q at %s:%d", n, row.ID, row.Parent, row.File, row.Line, want.ID, want.Parent, want.File, want.Line)
			}
			if rec.ID != want.ID || rec.Parent != want.Parent || rec.Line != want.Line || !bytes.Equal(rec.Raw, want.Raw) ||
				string(ddbjson.AppendItem(nil, rec.Attrs)) != string(ddbjson.AppendItem(nil, want.Attrs)) {
				t.Fatalf("row %d: reused read %+v, Next %+v", n, rec, *want)
			}
			if werr != nil {
				continue
			}
			size, copyBytes := 0, 0
			for k, v := range want.Attrs {
				vs := len(k) + transform.ValueSize(v)
				size += vs
				if copySet[k] {
					copyBytes += vs
				}
			}
			if row.AttrBytes != size || row.CopyBytes != copyBytes {
				t.Fatalf("row %d: skeleton sizes %d and %d, Next's attributes %d and %d", n, row.AttrBytes, row.CopyBytes, size, copyBytes)
			}
		}
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// addCSVFuzzSeeds adds the seeds of the CSV source's fuzzers: a BOM, CRLF,
// quotes, bad cells of every type, a short row, an open quote, invalid
// UTF-8 and a quoted line break.
func addCSVFuzzSeeds(f *testing.F) {
	f.Add([]byte("\uFEFFid,parent_id,n,b,j,x\r\na,,1.5,true,[1],AAE=\r\n\"b,\"\"q\"\"\",a,,,\"{\"\"k\"\":null}\",\n"), true)
	f.Add([]byte("id,parent_id,n,b,j,x\nc,d,1e999,maybe,{,!!\ne,f\n\"open"), true)
	f.Add([]byte("id,parent_id,name\nx,,\xff\n,x,ok\ny,x,\"two\nlines\"\n"), false)
}

// fuzzCSVOpener returns a function that opens data as a CSV source each
// time it is called (typed: with a type for each of the seeds' columns), or
// returns nil where the input cannot be opened.
func fuzzCSVOpener(t *testing.T, data []byte, typed bool) func() *csvSource {
	opts := SourceOptions{KeepRaw: true}
	if typed {
		opts.Types = map[string]string{"n": "N", "b": "BOOL", "j": "JSON", "x": "B"}
	}
	return func() *csvSource {
		in := memInput(t, data)
		if in == nil {
			return nil
		}
		s, err := newCSVSource(in, "fuzz.csv", opts)
		if err != nil {
			return nil
		}
		return s
	}
}
