package exporter_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

// TestVerify loads a fixture, then plants one difference at a time in a
// fresh copy of the table and checks that Verify reports exactly it.
func TestVerify(t *testing.T) {
	client := localClient(t)
	in, srcOpts := fixtureSource(t, "cars", "csv")
	recs := readFile(t, in, srcOpts)
	byID := map[string]*transform.Record{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	// A leaf to delete or move, and a node with a number to change.
	o := newOracle(recs)
	var leaf, numbered string
	for _, r := range recs {
		if len(o.children[r.ID]) == 0 && r.Parent != "" && leaf == "" {
			leaf = r.ID
		}
		if _, ok := r.Attrs["qty"].(*types.AttributeValueMemberN); ok && numbered == "" && r.ID != leaf {
			numbered = r.ID
		}
	}
	if leaf == "" || numbered == "" {
		t.Fatal("the fixture has no leaf or no qty")
	}
	newParent := recs[0].ID // the first root
	if byID[leaf].Parent == newParent {
		newParent = byID[leaf].Parent
		for _, r := range recs {
			if r.ID != leaf && r.ID != byID[leaf].Parent && len(o.children[r.ID]) > 0 {
				newParent = r.ID
				break
			}
		}
	}

	type plant func(recs []*transform.Record) []*transform.Record
	edit := func(id string, f func(r *transform.Record)) plant {
		return func(recs []*transform.Record) []*transform.Record {
			out := make([]*transform.Record, 0, len(recs))
			for _, r := range recs {
				if r.ID == id {
					c := *r
					c.Attrs = transform.Attrs{}
					for k, v := range r.Attrs {
						c.Attrs[k] = v
					}
					f(&c)
					r = &c
				}
				out = append(out, r)
			}
			return out
		}
	}
	tests := []struct {
		name  string
		plant plant
		check func(t *testing.T, d *exporter.Diff)
	}{
		{
			name:  "identical",
			plant: func(recs []*transform.Record) []*transform.Record { return recs },
			check: func(t *testing.T, d *exporter.Diff) {
				if d.Differences() != 0 {
					t.Errorf("%d differences in an exact copy: %+v", d.Differences(), d)
				}
			},
		},
		{
			name: "missing",
			plant: func(recs []*transform.Record) []*transform.Record {
				var out []*transform.Record
				for _, r := range recs {
					if r.ID != leaf {
						out = append(out, r)
					}
				}
				return out
			},
			check: func(t *testing.T, d *exporter.Diff) {
				only(t, d, "missing", d.Missing, leaf)
			},
		},
		{
			name: "extra",
			plant: func(recs []*transform.Record) []*transform.Record {
				return append(recs, &transform.Record{ID: "ZZ-extra", Parent: leaf, Attrs: transform.Attrs{"name": &types.AttributeValueMemberS{Value: "stowaway"}}})
			},
			check: func(t *testing.T, d *exporter.Diff) {
				only(t, d, "extra", d.Extra, "ZZ-extra")
				if d.Extra.Examples[0].TableParent != leaf {
					t.Errorf("extra node's parent %q, want %q", d.Extra.Examples[0].TableParent, leaf)
				}
			},
		},
		{
			name:  "moved",
			plant: edit(leaf, func(r *transform.Record) { r.Parent = newParent }),
			check: func(t *testing.T, d *exporter.Diff) {
				only(t, d, "moved", d.Moved, leaf)
				e := d.Moved.Examples[0]
				if e.FileParent != byID[leaf].Parent || e.TableParent != newParent {
					t.Errorf("moved %+v, want from %q to %q", e, byID[leaf].Parent, newParent)
				}
			},
		},
		{
			name: "changed type",
			plant: edit(numbered, func(r *transform.Record) {
				r.Attrs["qty"] = &types.AttributeValueMemberS{Value: r.Attrs["qty"].(*types.AttributeValueMemberN).Value}
			}),
			check: func(t *testing.T, d *exporter.Diff) {
				only(t, d, "changed", d.Changed, numbered)
				attrs := d.Changed.Examples[0].Attrs
				if len(attrs) != 1 || attrs[0].Name != "qty" || attrs[0].Kind() != "type" {
					t.Errorf("changed attributes %+v, want qty's type", attrs)
				}
			},
		},
		{
			name: "changed value",
			plant: edit(numbered, func(r *transform.Record) {
				r.Attrs["qty"] = &types.AttributeValueMemberN{Value: "123456.5"}
			}),
			check: func(t *testing.T, d *exporter.Diff) {
				only(t, d, "changed", d.Changed, numbered)
				attrs := d.Changed.Examples[0].Attrs
				if len(attrs) != 1 || attrs[0].Name != "qty" || attrs[0].Kind() != "value" {
					t.Errorf("changed attributes %+v, want qty's value", attrs)
				}
			},
		},
		{
			name: "number text differs, value does not",
			plant: edit(numbered, func(r *transform.Record) {
				r.Attrs["qty"] = &types.AttributeValueMemberN{Value: r.Attrs["qty"].(*types.AttributeValueMemberN).Value + ".000"}
			}),
			check: func(t *testing.T, d *exporter.Diff) {
				if d.Differences() != 0 {
					t.Errorf("%d differences for 1 and 1.000", d.Differences())
				}
			},
		},
		{
			name:  "attribute missing from the table",
			plant: edit(numbered, func(r *transform.Record) { delete(r.Attrs, "qty") }),
			check: func(t *testing.T, d *exporter.Diff) {
				only(t, d, "changed", d.Changed, numbered)
				if k := d.Changed.Examples[0].Attrs[0].Kind(); k != "missing from the table" {
					t.Errorf("kind %q", k)
				}
			},
		},
	}
	for _, name := range []string{layouts.PathName, layouts.PrefixName} {
		l := mustLayout(t, name, layouts.Options{})
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				table := loadTable(t, client, l, tt.plant(recs))
				opts := exporter.VerifyOptions{Layout: l, Client: client, Table: table, In: in, Records: openInput(t, in, srcOpts)}
				d, err := exporter.Verify(context.Background(), opts)
				if err != nil {
					t.Fatal(err)
				}
				opts.Records = openInput(t, in, srcOpts)
				sameOutOfCore(t, opts, d)
				if d.FileNodes != len(recs) {
					t.Errorf("%d file nodes, want %d", d.FileNodes, len(recs))
				}
				tt.check(t, d)
				var report strings.Builder
				if err := d.WriteReport(&report); err != nil {
					t.Fatal(err)
				}
				if d.Differences() == 0 && !strings.Contains(report.String(), "identical") {
					t.Errorf("report of no differences:\n%s", report.String())
				}
				if d.Differences() > 0 && !strings.Contains(report.String(), units.Count(int64(d.Differences()), "difference")+"\n") {
					t.Errorf("report:\n%s", report.String())
				}
			})
		}
	}
}

// openInput opens the input file path as verify does, to be closed when
// the test ends.
func openInput(t *testing.T, path string, opts records.SourceOptions) records.Source {
	t.Helper()
	src, err := records.OpenSource(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// only checks that the diff has exactly one difference, of the kind given,
// about id.
func only(t *testing.T, d *exporter.Diff, kind string, s exporter.DiffSet, id string) {
	t.Helper()
	if d.Differences() != 1 || s.Count != 1 || len(s.Examples) != 1 || s.Examples[0].ID != id {
		var b strings.Builder
		d.WriteReport(&b)
		t.Errorf("want one %s difference about %q; got:\n%s", kind, id, b.String())
	}
}

// TestVerifyReportsManyDifferences caps the examples and counts all.
func TestVerifyReportsManyDifferences(t *testing.T) {
	client := localClient(t)
	recs := randomForest(21, "")
	l := mustLayout(t, layouts.ClosureName, layouts.Options{})
	table := loadTable(t, client, l, recs[:2]) // two of the roots
	dir := t.TempDir()
	file := filepath.Join(dir, "forest.ddbjson")
	writeRecordFileForTest(t, file, recs)
	opts := exporter.VerifyOptions{Layout: l, Client: client, Table: table, In: file, Records: openInput(t, file, records.SourceOptions{}), MaxExamples: 3}
	d, err := exporter.Verify(context.Background(), opts)
	if err == nil {
		opts.Records = openInput(t, file, records.SourceOptions{})
		sameOutOfCore(t, opts, d)
	}
	if err != nil {
		t.Fatal(err)
	}
	if d.Missing.Count != len(recs)-2 || len(d.Missing.Examples) != 3 {
		t.Errorf("missing %d (%d examples), want %d (3 examples)", d.Missing.Count, len(d.Missing.Examples), len(recs)-2)
	}
	var b strings.Builder
	d.WriteReport(&b)
	if !strings.Contains(b.String(), "… and ") {
		t.Errorf("report does not say how many more:\n%s", b.String())
	}
	// The examples are the first ids.
	if d.Missing.Examples[0].ID > d.Missing.Examples[1].ID {
		t.Errorf("examples out of order: %+v", d.Missing.Examples)
	}
}

func writeRecordFileForTest(t *testing.T, path string, recs []*transform.Record) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := records.NewWriter(f, records.WriterOptions{Format: records.FormatDDBJSON})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyBadInput: a file with an id twice cannot be compared.
func TestVerifyBadInput(t *testing.T) {
	client := localClient(t)
	l := mustLayout(t, layouts.PathName, layouts.Options{})
	table := loadTable(t, client, l, randomForest(1, "")[:2])
	file := filepath.Join(t.TempDir(), "dup.csv")
	if err := os.WriteFile(file, []byte("id,parent_id\nA,\nB,A\nA,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := exporter.Verify(context.Background(), exporter.VerifyOptions{Layout: l, Client: client, Table: table, In: file, Records: openInput(t, file, records.SourceOptions{})})
	var re *transform.RowError
	if !errors.As(err, &re) || !errors.Is(err, transform.ErrDuplicateID) || re.Line != 4 || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("err = %v, want a duplicate id error at line 4 naming line 2", err)
	}
	// verify opens its file as import does: a missing one is not found.
	_, err = records.OpenSource(filepath.Join(t.TempDir(), "missing.csv"), records.SourceOptions{})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v for a missing file, want one matching os.ErrNotExist", err)
	}
	// A table that does not exist is a service error that says what to check.
	_, _, err = exporter.Scan(context.Background(), client, "no-such-table", l, exporter.ScanOptions{})
	if !errors.Is(err, ddb.ErrService) || !strings.Contains(err.Error(), "--table") {
		t.Errorf("err = %v, want ErrService with a hint about --table", err)
	}
}
