// Command fixturegen writes the small datasets in fixtures/ that tests and
// the README use, each in CSV, JSON and Parquet, from the records defined
// here, with treeport's own writers, so that the three formats of a dataset
// always agree. Run it from the repository root after changing the data:
//
//	go run ./internal/fixturegen
//
// It writes, for each dataset NAME:
//
//   - NAME.csv, with NAME.types holding the --types value that reads it typed
//     (treeport import --in fixtures/NAME.csv --types "$(cat fixtures/NAME.types)");
//   - NAME.json, one array;
//   - NAME.parquet.
//
// The datasets:
//
//   - folders: 53 files and directories under two roots, home and srv, with
//     a depth of 7; ids are paths with spaces, dots, a comma and quotes;
//     name S, size_bytes N, is_dir BOOL, modified S (RFC 3339), tags L on a
//     few (one empty), acl M {owner, group, mode} on a few.
//   - cars: a 48-part bill of materials with CM-style ids; CM20 is a
//     sibling of CM2 (the begins_with prefix trap), depth 6; name S,
//     part_no S, weight_kg N (decimal), qty N, supplier M {name, country}
//     and materials L on bought parts.
//   - org: a 46-person org chart of depth 5, with non-ASCII names (Zoë
//     Åström, Łukasz Żółć, 王芳, Ngozi Ọ̀kọ́ with combining marks, Σωκράτης…)
//     and emoji in nicknames, in an order where people often come before
//     their managers; name, title, email S, salary N, remote BOOL,
//     languages L, manager_since S (a date) on managers, and nickname S on
//     some, empty on one (DynamoDB allows empty non-key strings; CSV cannot
//     tell an empty cell from an absent attribute, so NAME.csv lacks it).
//
// It also writes the Parquet members of the bad-input corpus in
// fixtures/bad (the corpus's text files are written by hand), so that a
// problem is located by Parquet row as well as by line.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

func main() {
	dir := flag.String("dir", "fixtures", "directory to write the fixtures to")
	flag.Parse()
	if err := writeAll(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "fixturegen:", err)
		os.Exit(1)
	}
}

// formats are the formats each dataset is written in, by file extension.
var formats = []string{records.FormatCSV, records.FormatJSON, records.FormatParquet}

// writeAll writes every dataset's files into dir.
func writeAll(dir string) error {
	for _, ds := range datasets() {
		files, err := render(ds)
		if err != nil {
			return err
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				return err
			}
		}
	}
	files, err := renderBad()
	if err != nil {
		return err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// renderBad returns the Parquet files of the bad-input corpus, by their
// names under dir: each holds one problem of SPEC §2, at a known row.
func renderBad() (map[string][]byte, error) {
	node := func(id, parent, name string) *transform.Record {
		return &transform.Record{ID: id, Parent: parent, Attrs: transform.Attrs{"name": &types.AttributeValueMemberS{Value: name}}}
	}
	bad := map[string][]*transform.Record{
		// B again at row 4; the first B is at row 2.
		"duplicate-id.parquet": {node("A", "", "root"), node("B", "A", "first"), node("C", "B", "child"), node("B", "A", "again")},
		// C's parent Z is nowhere, at row 3.
		"missing-parent.parquet": {node("A", "", "root"), node("B", "A", "child"), node("C", "Z", "orphan")},
	}
	files := map[string][]byte{}
	for name, recs := range bad {
		var buf bytes.Buffer
		w, err := records.NewWriter(&buf, records.WriterOptions{Format: records.FormatParquet})
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			if err := w.Write(rec); err != nil {
				return nil, fmt.Errorf("bad/%s: %w", name, err)
			}
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("bad/%s: %w", name, err)
		}
		files[filepath.Join("bad", name)] = buf.Bytes()
	}
	return files, nil
}

// render returns a dataset's files, by name.
func render(ds dataset) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, f := range formats {
		var buf bytes.Buffer
		w, err := records.NewWriter(&buf, records.WriterOptions{Format: f})
		if err != nil {
			return nil, err
		}
		for _, rec := range ds.recs {
			if err := w.Write(rec); err != nil {
				return nil, fmt.Errorf("%s.%s: %w", ds.name, f, err)
			}
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("%s.%s: %w", ds.name, f, err)
		}
		files[ds.name+"."+f] = buf.Bytes()
	}
	files[ds.name+".types"] = []byte(records.TypesFlag(records.InferColumns(ds.recs)) + "\n")
	return files, nil
}
