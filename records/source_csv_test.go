package records

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

func TestCSVSource(t *testing.T) {
	tests := []struct {
		name  string
		data  string
		opts  SourceOptions
		wants []want
	}{
		{
			name: "BOM and CRLF",
			data: "\uFEFFid,parent_id,name\r\nCM1,,root\r\nCM2,CM1,child\r\n",
			wants: []want{
				{id: "CM1", line: 2, attrs: attrs{"name": sv("root")}},
				{id: "CM2", parent: "CM1", line: 3, attrs: attrs{"name": sv("child")}},
			},
		},
		{
			name: "quoted fields with commas, newlines and quotes",
			data: "id,parent_id,note\n\"a,1\",,\"say \"\"hi\"\"\nnext line\"\nb,\"a,1\",x\n",
			wants: []want{
				{id: "a,1", line: 2, attrs: attrs{"note": sv("say \"hi\"\nnext line")}},
				{id: "b", parent: "a,1", line: 4, attrs: attrs{"note": sv("x")}},
			},
		},
		{
			name: "emoji and non-ASCII ids",
			data: "id,parent_id,name\n😀,,smile\nÜnïcödé,😀,ünï\n中文,Ünïcödé,\n",
			wants: []want{
				{id: "😀", line: 2, attrs: attrs{"name": sv("smile")}},
				{id: "Ünïcödé", parent: "😀", line: 3, attrs: attrs{"name": sv("ünï")}},
				{id: "中文", parent: "Ünïcödé", line: 4, attrs: attrs{}},
			},
		},
		{
			name: "empty cells are absent, an empty id is passed on",
			data: "id,parent_id,a,b\nx,,,\n,x,1,\n",
			wants: []want{
				{id: "x", line: 2, attrs: attrs{}},
				{id: "", parent: "x", line: 3, attrs: attrs{"a": sv("1")}},
			},
		},
		{
			name: "children before parents",
			data: "id,parent_id\nleaf,mid\nmid,root\nroot,\n",
			wants: []want{
				{id: "leaf", parent: "mid", line: 2},
				{id: "mid", parent: "root", line: 3},
				{id: "root", line: 4},
			},
		},
		{
			name: "typed columns",
			opts: SourceOptions{Types: map[string]string{"size": "N", "active": "BOOL", "tags": "JSON", "blob": "B", "label": "S"}},
			data: "id,parent_id,size,active,tags,blob,label\n" +
				"a,,-1.5e3,TRUE,\"[\"\"x\"\",{\"\"k\"\":1},null]\",AAEC/w==,007\n" +
				"b,a,0042,0,{},AAEC,\n",
			wants: []want{
				{id: "a", line: 2, attrs: attrs{
					"size": nv("-1.5e3"), "active": bv(true), "blob": binv([]byte{0, 1, 2, 0xff}), "label": sv("007"),
					"tags": lv(sv("x"), mv(attrs{"k": nv("1")}), nullv()),
				}},
				{id: "b", parent: "a", line: 3, attrs: attrs{"size": nv("0042"), "active": bv(false), "tags": mv(attrs{}), "blob": binv([]byte{0, 1, 2})}},
			},
		},
		{
			name: "semicolon delimiter and custom field names",
			opts: SourceOptions{CSVDelimiter: ';', IDField: "ComponentId", ParentField: "Parent"},
			data: "Parent;ComponentId;name\n;CM1;a,b\nCM1;CM2;c\n",
			wants: []want{
				{id: "CM1", line: 2, attrs: attrs{"name": sv("a,b")}},
				{id: "CM2", parent: "CM1", line: 3, attrs: attrs{"name": sv("c")}},
			},
		},
		{
			name:  "tab delimiter",
			opts:  SourceOptions{CSVDelimiter: '\t'},
			data:  "id\tparent_id\tname\nr\t\tx y\n",
			wants: []want{{id: "r", line: 2, attrs: attrs{"name": sv("x y")}}},
		},
		{
			name:  "header only",
			data:  "id,parent_id\n",
			wants: nil,
		},
		{
			name:  "no final newline",
			data:  "id,parent_id\nr,",
			wants: []want{{id: "r", line: 2}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTemp(t, "nodes.csv", []byte(tt.data))
			checkResults(t, path, openAll(t, path, tt.opts), tt.wants)
		})
	}
}

func TestCSVSourceErrors(t *testing.T) {
	typed := func(col, typ string) SourceOptions { return SourceOptions{Types: map[string]string{col: typ}} }
	tests := []struct {
		name  string
		data  string
		opts  SourceOptions
		wants []want
	}{
		{
			name: "ragged rows",
			data: "id,parent_id,name\na,,x\nb,a\nc,a,x,extra\nd,a,x\n",
			wants: []want{
				{id: "a", line: 2},
				{id: "b", line: 3, errMsg: "the row has 2 fields, the header has 3"},
				{id: "c", line: 4, errMsg: "the row has 4 fields, the header has 3"},
				{id: "d", parent: "a", line: 5},
			},
		},
		{
			name: "not a number",
			opts: typed("size", "N"),
			data: "id,parent_id,size\na,,12x\nb,,1e400\nc,,123456789012345678901234567890123456789\nd,,7\n",
			wants: []want{
				{id: "a", line: 2, errMsg: `column "size" (N): "12x" is not a number`},
				{id: "b", line: 3, errMsg: "larger than DynamoDB's largest number"},
				{id: "c", line: 4, errMsg: "39 significant digits"},
				{id: "d", line: 5, attrs: attrs{"size": nv("7")}},
			},
		},
		{
			name: "not a boolean",
			opts: typed("ok", "BOOL"),
			data: "id,parent_id,ok\na,,yes\nb,,False\n",
			wants: []want{
				{id: "a", line: 2, errMsg: `column "ok" (BOOL): "yes" is not true, false, 1 or 0`},
				{id: "b", line: 3, attrs: attrs{"ok": bv(false)}},
			},
		},
		{
			name: "bad JSON",
			opts: typed("tags", "JSON"),
			data: "id,parent_id,tags\na,,\"{\"\"x\"\":}\"\nb,,[1]\n",
			wants: []want{
				{id: "a", line: 2, errMsg: `column "tags" (JSON): "{\"x\":}" is not valid JSON: at x: want a JSON value, found '}'`},
				{id: "b", line: 3, attrs: attrs{"tags": lv(nv("1"))}},
			},
		},
		{
			name:  "bad base64",
			opts:  typed("blob", "B"),
			data:  "id,parent_id,blob\na,,!!!!\n",
			wants: []want{{id: "a", line: 2, errMsg: `column "blob" (B): "!!!!" is not base64`}},
		},
		{
			name: "invalid UTF-8",
			data: "id,parent_id,name\na,,ok\nb,,bad\xff\n\xfe,,x\nd,,ok\n",
			wants: []want{
				{id: "a", line: 2},
				{id: "b", line: 3, errMsg: `column "name" is not valid UTF-8: "bad\xff"`},
				{id: "", line: 4, errMsg: `column "id" is not valid UTF-8`},
				{id: "d", line: 5},
			},
		},
		{
			name: "bare quote",
			data: "id,parent_id,name\na,,x\"y\nb,,z\n",
			wants: []want{
				{id: "a", line: 2, errMsg: `line 2, column 5: bare " in non-quoted-field`},
				{id: "b", line: 3},
			},
		},
		{
			name: "unterminated quote",
			data: "id,parent_id,name\na,,x\nb,,\"open\nc,,z\n",
			wants: []want{
				{id: "a", line: 2},
				{id: "b", line: 3, errMsg: `extraneous or missing " in quoted-field`},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTemp(t, "nodes.csv", []byte(tt.data))
			checkResults(t, path, openAll(t, path, tt.opts), tt.wants)
		})
	}
}

func TestCSVHeaderErrors(t *testing.T) {
	tests := []struct {
		name, data string
		opts       SourceOptions
		err        string
	}{
		{name: "empty file", data: "", err: "is empty: a CSV input needs a header row"},
		{name: "no id column", data: "name,parent_id\n", err: `has no column "id" (its columns: name, parent_id); name the id column with --id-field`},
		{name: "no parent column", data: "id,name\n", err: `has no column "parent_id"`},
		{name: "renamed id missing", data: "id,parent_id\n", opts: SourceOptions{IDField: "key"}, err: `has no column "key"`},
		{name: "duplicate column", data: "id,parent_id,a,a\n", err: `columns 3 and 4 are both named "a"`},
		{name: "unnamed column", data: "id,parent_id,\n", err: "column 3 has no name"},
		{name: "typed column missing", data: "id,parent_id\n", opts: SourceOptions{Types: map[string]string{"size": "N"}}, err: `--types names column "size"`},
		{name: "typed id", data: "id,parent_id\n", opts: SourceOptions{Types: map[string]string{"id": "N"}}, err: `"id" is the id or parent column`},
		{name: "bad quote in header", data: "id,\"parent_id\n", err: "the header row cannot be read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTemp(t, "nodes.csv", []byte(tt.data))
			src, err := OpenSource(path, tt.opts)
			if err == nil {
				src.Close()
				t.Fatalf("no error, want one saying %q", tt.err)
			}
			if !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not say %q and the file", err, tt.err)
			}
		})
	}
}

func TestCSVRaw(t *testing.T) {
	data := "id,parent_id,note,size\n\"a,1\",, lead,\n\"b\",a,\"q\"\"x\"\"\nz\",x\nc,a\n"
	path := writeTemp(t, "nodes.csv", []byte(data))
	got := openAll(t, path, SourceOptions{KeepRaw: true, Types: map[string]string{"size": "N"}})
	wantRaw := []string{
		`"a,1",," lead",`,
		"b,a,\"q\"\"x\"\"\nz\",x",
		"c,a",
	}
	if len(got) != len(wantRaw) {
		t.Fatalf("got %d results, want %d", len(got), len(wantRaw))
	}
	for i, r := range got {
		if string(r.rec.Raw) != wantRaw[i] {
			t.Errorf("#%d: Raw %q, want %q", i, r.rec.Raw, wantRaw[i])
		}
	}
	// A bad row keeps what could be read of it, for the rejects file.
	if got[1].err == nil || got[1].rec == nil || got[1].rec.ID != "b" || got[1].rec.Parent != "a" {
		t.Errorf("the bad typed row: %+v, want a RowError with the record's id and parent", got[1])
	}
	if got[2].err == nil || got[2].rec.ID != "c" {
		t.Errorf("the ragged row: %+v, want a RowError with id c", got[2])
	}
	// Without KeepRaw, no Raw.
	for _, r := range openAll(t, path, SourceOptions{}) {
		if r.rec != nil && r.rec.Raw != nil {
			t.Errorf("Raw %q without KeepRaw", r.rec.Raw)
		}
	}
}

// crlfCSV is a CSV input with line ends inside quotes, and the notes it holds.
const crlfCSV = "id,parent_id,note\r\nA,,\"two\r\nlines\"\r\nB,A,\"lf\nonly\"\r\nC,A,\"cr\r\r\nlf\"\r\n"

var crlfNotes = map[string]string{"A": "two\r\nlines", "B": "lf\nonly", "C": "cr\r\r\nlf"}

// TestCSVKeepsQuotedCRLF: a line end inside quotes is part of the value as it
// is, \r\n included (RFC 4180; encoding/csv would give \n), on the first
// read, the flat second read (readinput_test.go) and in Raw; the line ends
// between records are not values.
func TestCSVKeepsQuotedCRLF(t *testing.T) {
	path := writeTemp(t, "crlf.csv", []byte(crlfCSV))
	want := crlfNotes
	got := openAll(t, path, SourceOptions{KeepRaw: true})
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for _, r := range got {
		if r.err != nil {
			t.Fatal(r.err)
		}
		note, _ := r.rec.Attrs["note"].(*types.AttributeValueMemberS)
		if note == nil || note.Value != want[r.rec.ID] {
			t.Errorf("%s: note %#v, want %q", r.rec.ID, r.rec.Attrs["note"], want[r.rec.ID])
		}
	}
}

// FuzzCSVFlatRead holds the flat read to Next on arbitrary input: the
// same rows, errors, ids, lines, raw text and attributes.
func FuzzCSVFlatRead(f *testing.F) {
	addCSVFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, typed bool) {
		open := fuzzCSVOpener(t, data, typed)
		next, flat := open(), open()
		if next == nil {
			return
		}
		ctx := context.Background()
		var rec FlatRecord
		for n := 0; n < 20000; n++ {
			want, werr := next.Next(ctx)
			ferr := flat.NextFlat(ctx, &rec)
			if errText(werr) != errText(ferr) {
				t.Fatalf("row %d: Next says %v, the flat read %v", n, werr, ferr)
			}
			if werr == io.EOF {
				return
			}
			if want == nil {
				if rec.ID != "" || rec.Raw != nil || len(rec.Flat) > 0 {
					t.Fatalf("row %d: no record from Next, but the flat read has %+v", n, rec)
				}
				continue
			}
			if rec.ID != want.ID || rec.Parent != want.Parent || rec.Line != want.Line || rec.File != want.File || !bytes.Equal(rec.Raw, want.Raw) {
				t.Fatalf("row %d: flat read %+v, Next %+v", n, rec.Record, *want)
			}
			if werr != nil {
				continue
			}
			if rec.Attrs != nil {
				t.Fatalf("row %d: the flat read filled the Attrs map", n)
			}
			got := layouts.ItemOf(rec.Flat)
			if len(got) != len(rec.Flat) {
				t.Fatalf("row %d: an attribute name twice in %v", n, rec.Flat)
			}
			if g, w := string(ddbjson.AppendItem(nil, got)), string(ddbjson.AppendItem(nil, want.Attrs)); g != w {
				t.Fatalf("row %d: flat read's attributes %s, Next's %s", n, g, w)
			}
			if transform.AttrsSize(got) != transform.AttrsSize(want.Attrs) {
				t.Fatalf("row %d: sizes differ", n)
			}
		}
	})
}

func TestNumberSizeMatches(t *testing.T) {
	numbers := []string{"0", "-0", "+0.000", "0e99", "1", "-1", "10", "100", "1000e-3", "12345", "0.001230",
		".5", "5.", "-00012.34000", "1E+125", "9.9999999999999999999999999999999999999E+125", "1e-130",
		"12345678901234567890123456789012345678", "0.00000000000000000000000000000000000001", "7.50e1", "305"}
	rng := rand.New(rand.NewSource(1))
	for range 2000 {
		var sb strings.Builder
		sb.WriteString([]string{"", "-", "+"}[rng.Intn(3)])
		for range rng.Intn(12) {
			sb.WriteByte("0001234567890"[rng.Intn(13)])
		}
		if rng.Intn(2) == 0 {
			sb.WriteByte('.')
		}
		for range rng.Intn(12) {
			sb.WriteByte("0001234567890"[rng.Intn(13)])
		}
		if rng.Intn(3) == 0 {
			fmt.Fprintf(&sb, "e%d", rng.Intn(40)-20)
		}
		numbers = append(numbers, sb.String())
	}
	checked := 0
	for _, n := range numbers {
		if ddbjson.CheckNumber(n) != nil {
			continue
		}
		checked++
		if got, want := numberSize([]byte(n)), transform.NumberSize(n); got != want {
			t.Errorf("numberSize(%q) = %d, transform.NumberSize says %d", n, got, want)
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d valid numbers checked", checked)
	}
}
