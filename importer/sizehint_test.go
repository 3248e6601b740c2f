package importer

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/treeport/treeport/records"
)

// estimateRecords counts a small file's records, guesses a large one's
// within a few percent (a little over), counts neither the line ends in
// quoted cells nor blank lines, and makes no guess for what it cannot tell
// from the size.
func TestEstimateRecords(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var big bytes.Buffer
	big.WriteString("id,parent_id,name\n")
	for i := range 200000 {
		fmt.Fprintf(&big, "N%d,N%d,name %d\n", i, i/3, i%1000)
	}
	small := write("small.csv", []byte("id,parent_id\na,\nb,a\n"))
	large := write("large.csv", big.Bytes())
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(big.Bytes())
	zw.Close()
	// Records of many lines each (a quoted note), and blank lines.
	var notes, blanks bytes.Buffer
	notes.WriteString("id,parent_id,note\n")
	blanks.WriteString("id,parent_id\n")
	for i := range 3000 {
		fmt.Fprintf(&notes, "N%d,,\"%s\"\n", i, strings.Repeat("a line, of a \"\"note\"\"\r\n", 30))
		fmt.Fprintf(&blanks, "N%d,\n\n\r\n\n", i)
	}
	for _, tc := range []struct {
		path, format string
		lo, hi       int
	}{
		{small, "csv", 2, 2}, // the rows, exactly
		{write("nolastend.csv", []byte("id,parent_id\na,\nb,a")), "csv", 2, 2},
		{large, "csv", 200000, 200000 * 110 / 100},
		{large, "CSV", 200000, 200000 * 110 / 100},
		{large, "jsonl", 200000, 200000 * 110 / 100},
		{write("notes.csv", notes.Bytes()), "csv", 3000, 3000 * 110 / 100},
		{write("blanks.csv", blanks.Bytes()), "csv", 3000, 3000 * 110 / 100},
		{large, "json", 0, 0},
		{large, "parquet", 0, 0},
		{write("large.csv.gz", gz.Bytes()), "csv", 0, 0},
		{filepath.Join(dir, "missing.csv"), "csv", 0, 0},
	} {
		if got := estimateRecords(tc.path, tc.format); got < tc.lo || got > tc.hi {
			t.Errorf("%s as %s: %d, want %d to %d", filepath.Base(tc.path), tc.format, got, tc.lo, tc.hi)
		}
	}
}

// A Parquet source tells the rows its footer counts, which ReadInput
// sizes the forest by.
func TestParquetRecords(t *testing.T) {
	for _, name := range []string{"cars", "folders", "org"} {
		src, err := records.OpenSource(filepath.Join("..", "fixtures", name+".parquet"), records.SourceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rows := 0
		for {
			_, err := src.Next(context.Background())
			if err == io.EOF {
				break
			}
			rows++
		}
		got := src.(records.CountedSource).Records()
		src.Close()
		if got != rows || rows == 0 {
			t.Errorf("%s: the footer counts %d rows, the file has %d", name, got, rows)
		}
	}
}
