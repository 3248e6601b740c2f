package records_test

// The importer's ReadInput and Emit over this package's sources: what the
// import job gets of an input that the sources' own tests read.

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/klauspost/compress/gzip"

	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/records/infile"
)

// TestCSVKeepsQuotedCRLFEmitAttrs is TestCSVKeepsQuotedCRLF's flat second
// read: EmitAttrs gives each note as it is.
func TestCSVKeepsQuotedCRLFEmitAttrs(t *testing.T) {
	path := records.WriteTemp(t, "crlf.csv", []byte(records.CRLFCSV))
	want := records.CRLFNotes
	in, err := importer.ReadInput(context.Background(), importer.InputOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	l, err := layouts.New("path", layouts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p := in.CheckLayout(l); len(p) > 0 {
		t.Fatal(p[0])
	}
	seen := 0
	_, err = in.EmitAttrs(context.Background(), importer.EmitOptions{Layout: l}, func(_ int64, item []layouts.Attr) error {
		var id, note string
		for _, a := range item {
			if s, ok := a.Value.(*types.AttributeValueMemberS); ok {
				switch a.Name {
				case "Id":
					id = s.Value
				case "note":
					note = s.Value
				}
			}
		}
		if note != want[id] {
			t.Errorf("EmitAttrs %s: note %q, want %q", id, note, want[id])
		}
		seen++
		return nil
	})
	if err != nil || seen != len(want) {
		t.Fatalf("EmitAttrs: %d items, %v", seen, err)
	}
}

// TestDDBJSONExportChecksReadInput: ReadInput stops where the sources do
// (TestDDBJSONExportChecks), with nothing written: exit 2.
func TestDDBJSONExportChecksReadInput(t *testing.T) {
	for _, tt := range records.ExportChecks() {
		t.Run(tt.Name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "AWSDynamoDB", records.ExportID)
			files := records.WriteExportAt(t, dir, true)
			tt.Tamper(t, dir, files)
			_, err := importer.ReadInput(context.Background(), importer.InputOptions{Path: root})
			records.CheckInvalid(t, err, tt.Want)
		})
	}
}

// TestParquetUndecodableEndsTheRead: data that cannot be decoded ends a
// Parquet read, so the rows after it cannot be read; ReadInput fails
// (infile.ErrInvalid) instead of taking it as one bad row, which skip mode would
// set aside while it lost the rest without a trace.
func TestParquetUndecodableEndsTheRead(t *testing.T) {
	path := records.WriteTemp(t, "corrupt.parquet", records.FuzzInput(t, "page-size-1.6GB"))
	in, err := importer.ReadInput(context.Background(), importer.InputOptions{Path: path})
	if err == nil || !errors.Is(err, infile.ErrInvalid) || !errors.Is(err, records.ErrRestUnreadable) || !strings.Contains(err.Error(), path+" (row 1)") {
		t.Fatalf("ReadInput = %v, %v; want infile.ErrInvalid and ErrRestUnreadable, naming the file and row", in, err)
	}
}

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
				if err := os.WriteFile(filepath.Join(dir, tc.in), records.PQBytes(t, pq, 4), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			in, err := importer.ReadInput(context.Background(), importer.InputOptions{Path: filepath.Join(dir, tc.in)})
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
				got = append(got, strconv.Itoa(p.Line)+" "+limit)
			}
			per := max(tc.lines, 1)
			want := []string{strconv.Itoa(tc.first+per) + " 1 MiB", strconv.Itoa(tc.first+2*per) + " 16 MiB"}
			if strings.Join(got, ", ") != strings.Join(want, ", ") {
				t.Errorf("problems at %q; want %q", got, want)
			}
			if in.Forest.Lookup("c") < 0 || in.Forest.Rejected(in.Forest.Lookup("c")) {
				t.Errorf("c, after the records over the limits, was not read as a good node")
			}
		})
	}
}
