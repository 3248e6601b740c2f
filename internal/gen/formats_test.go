package gen

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

// writeGen writes the forest of opts to dir/name as `treeport gen` does: a
// RecordWriter with Columns.
func writeGen(t *testing.T, dir, name string, opts Options) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	rw, err := records.NewWriter(bw, records.WriterOptions{Format: records.FormatFromPath(name), Columns: Columns()})
	if err != nil {
		t.Fatal(err)
	}
	if err := Generate(opts, rw.Write); err != nil {
		t.Fatal(err)
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// readBack reads a file with treeport's own reader, keyed by id.
func readBack(t *testing.T, path string, opts records.SourceOptions) map[string]*transform.Record {
	t.Helper()
	src, err := records.OpenSource(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out := map[string]*transform.Record{}
	for {
		rec, err := src.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		rec.File, rec.Line, rec.Raw = "", 0, nil // where it was, not what it is
		out[rec.ID] = rec
	}
}

// A generated Parquet file stores created as a TIMESTAMP, and reads back to
// the very records the CSV and JSON Lines files of the same seed hold, the
// created text included.
func TestParquetTimestampReadsBackAsOtherFormats(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Nodes: 3000, Shape: ShapeRandom, Seed: 11, Shuffle: true}
	types, err := records.ParseTypes(records.TypesFlag(Columns()))
	if err != nil {
		t.Fatal(err)
	}
	csv := readBack(t, writeGen(t, dir, "g.csv", opts), records.SourceOptions{Types: types})
	jsonl := readBack(t, writeGen(t, dir, "g.jsonl", opts), records.SourceOptions{})
	pqPath := writeGen(t, dir, "g.parquet", opts)
	pq := readBack(t, pqPath, records.SourceOptions{})
	if len(csv) != opts.Nodes {
		t.Fatalf("read %d records from the CSV file, want %d", len(csv), opts.Nodes)
	}
	for name, got := range map[string]map[string]*transform.Record{"JSON Lines": jsonl, "Parquet": pq} {
		if len(got) != len(csv) {
			t.Errorf("%s: %d records, CSV: %d", name, len(got), len(csv))
		}
		for id, want := range csv {
			if !reflect.DeepEqual(got[id], want) {
				t.Errorf("%s: record %s is %+v (%v), CSV: %+v (%v)", name, id, got[id], attrsOf(got[id]), want, attrsOf(want))
				break
			}
		}
	}

	f, err := os.Open(pqPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	col, ok := pf.Schema().Lookup(AttrCreated)
	if !ok {
		t.Fatalf("the Parquet schema has no %s column:\n%s", AttrCreated, pf.Schema())
	}
	var ts *format.TimestampType
	if lt := col.Node.Type().LogicalType(); lt != nil {
		ts, _ = lt.Value.(*format.TimestampType)
	}
	if ts == nil || !ts.IsAdjustedToUTC || col.Node.Type().Kind() != parquet.Int64 {
		t.Errorf("column %s is %v, want an INT64 TIMESTAMP adjusted to UTC:\n%s", AttrCreated, col.Node.Type(), pf.Schema())
	}
}

func attrsOf(r *transform.Record) map[string]string {
	if r == nil {
		return nil
	}
	out := map[string]string{}
	for k, v := range r.Attrs {
		out[k] = reflect.ValueOf(v).Elem().Field(0).String()
	}
	return out
}
