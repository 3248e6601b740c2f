package importer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/treeport/treeport/importer/importfiles"
	"github.com/treeport/treeport/internal/pricing"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/models"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

// TestImportSourceBytesAreTheFiles: the dry run's ImportTable source bytes
// are the uncompressed bytes of the files import --out writes, exactly, for
// every fixture and layout (it used to add an estimate of the JSON framing,
// 21–47% too much).
func TestImportSourceBytesAreTheFiles(t *testing.T) {
	for _, name := range []string{"cars", "folders", "org"} {
		path := filepath.Join("..", "fixtures", name+".csv")
		var src records.SourceOptions
		if ty, err := os.ReadFile(strings.TrimSuffix(path, ".csv") + ".types"); err == nil {
			if src.Types, err = records.ParseTypes(strings.TrimSpace(string(ty))); err != nil {
				t.Fatal(err)
			}
		}
		in, err := ReadInput(context.Background(), InputOptions{Path: path, Source: src})
		if err != nil {
			t.Fatal(err)
		}
		for _, ln := range layouts.Names() {
			l, err := layouts.New(ln, layouts.Options{})
			if err != nil {
				t.Fatal(err)
			}
			plan, problems := mustPlan(t, in, l)
			if len(problems) > 0 {
				t.Fatalf("%s %s: %v", name, ln, problems[0])
			}
			sink, err := importfiles.NewFileSink(importfiles.FileSinkOptions{Dir: filepath.Join(t.TempDir(), "out"), ItemsPerFile: 7})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := in.EmitAttrs(context.Background(), EmitOptions{Layout: l}, func(_ int64, item []layouts.Attr) error {
				return sink.WriteAttrs(item)
			}); err != nil {
				t.Fatal(err)
			}
			files, err := sink.Close()
			if err != nil {
				t.Fatal(err)
			}
			var raw int64
			for _, f := range files {
				raw += f.Raw
			}
			if raw == 0 || plan.Cost.ImportBytes != raw {
				t.Errorf("%s %s: the dry run says %d source bytes, the files hold %d uncompressed", name, ln, plan.Cost.ImportBytes, raw)
			}
			if want := pricing.Default.Import(raw); plan.Cost.ImportTable != want {
				t.Errorf("%s %s: ImportTable $%v, want $%v", name, ln, plan.Cost.ImportTable, want)
			}
		}
	}
}

// TestImportSourceBytesClosureRuns: the closure layout's source bytes,
// counted from the nodes' depths, are what encoding every row gives, with
// depths across 9 → 10 and 99 → 100 (a digit more in RelativeDepth), ids
// that JSON escapes (quotes, backslashes, control bytes) and every
// --closure-copy; and so are those of table models on the closure base,
// whose templates hold the ancestor's id twice and the relative depth
// zero-padded or as a number.
func TestImportSourceBytesClosureRuns(t *testing.T) {
	var b strings.Builder
	b.WriteString("id,parent_id,name,size\n")
	ids := []string{`r"0`, `a\b`, "tab\tid", "ü", "x"}
	prev := ""
	for d := range 130 {
		id := ids[d%len(ids)] + strconv.Itoa(d)
		fmt.Fprintf(&b, "%s,%s,n%d,%d\n", csvQuote(id), csvQuote(prev), d, d*7)
		if d%9 == 0 { // a side branch here and there
			fmt.Fprintf(&b, "%s,%s,,%d\n", csvQuote("leaf\"\\"+id), csvQuote(id), d)
		}
		prev = id
	}
	path := filepath.Join(t.TempDir(), "chain.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := ReadInput(context.Background(), InputOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	// Table models on the closure base: {ancestor} in several places and
	// none, {relative_depth} zero-padded in text and as it is in a number.
	const keys = `"table": {"partition_key": {"name": "PK", "template": "NODE#{id}"}, "sort_key": {"name": "SK", "template": "ANC#{relative_depth}"}}`
	const index = `"indexes": [{"name": "GSI1", "serves": "ByAncestor", "partition_key": {"name": "GSI1PK", "template": "ANC#{ancestor}"}, "sort_key": {"name": "SK", "template": "ANC#{relative_depth}"}, "projection": {"type": "INCLUDE", "non_key_attributes": ["Up"]}}]`
	mods := map[string]string{
		"model": `{"name": "m", "layout": "closure", "relative_depth_digits": 3, "type_field": {"name": "_type", "value": "Row"}, ` + keys + `, ` + index + `,
			"attributes": [{"name": "Up", "template": "{parent}"}, {"name": "Twice", "template": "{ancestor}/{id}/{ancestor}"}, {"name": "Rel", "template": "{relative_depth}", "type": "N"}]}`,
		"model, wide digits": `{"name": "w", "layout": "closure", "relative_depth_digits": 6, ` + keys + `, ` + index + `,
			"attributes": [{"name": "Up", "template": "{parent}"}, {"name": "Copy", "template": "{relative_depth}-{relative_depth}"}]}`,
	}
	for _, tc := range []struct {
		name string
		copy []string
	}{
		{"copy all", nil},
		{"copy none", []string{}},
		{"copy name", []string{"name"}},
		{"model", nil},
		{"model, wide digits", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l layouts.Layout
			var err error
			if text, ok := mods[tc.name]; ok {
				l, err = models.ParseModel("model.json", []byte(text))
			} else {
				l, err = layouts.New(layouts.ClosureName, layouts.Options{ClosureCopy: tc.copy})
			}
			if err != nil {
				t.Fatal(err)
			}
			if !layouts.EmitsRuns(l) {
				t.Fatalf("%s does not emit runs: it would be sized row by row", l.Name())
			}
			in.Forest.Reset()
			if problems := in.CheckLayout(l); len(problems) > 0 {
				t.Fatal(problems[0])
			}
			var want, rows int64
			var buf []byte
			if _, err := in.EmitAttrs(context.Background(), EmitOptions{Layout: l}, func(_ int64, item []layouts.Attr) error {
				buf = importfiles.AppendAttrsLine(buf[:0], item)
				want += int64(len(buf))
				rows++
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			got, err := in.ImportSourceBytes(context.Background(), l)
			if err != nil {
				t.Fatal(err)
			}
			if rows < 130*131/2 || got != want {
				t.Errorf("ImportSourceBytes = %d, the %d rows encoded one by one are %d bytes", got, rows, want)
			}
		})
	}
}

// csvQuote quotes s for a CSV cell.
func csvQuote(s string) string {
	if s == "" {
		return ""
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// BenchmarkDeepChainDryRun is the dry run (PlanLayout: the checks, the
// measure and the ImportTable source's size) of a chain 100,000 nodes deep,
// whose closure rows number 5,000,050,000: for the closure layout and for
// a table model on it, both sized from the nodes' depths (the model's used
// to be sized row by row, more than 10 minutes). A run takes well under a
// second; rows/op says how many rows one plan stands for.
func BenchmarkDeepChainDryRun(b *testing.B) {
	const depth = 100000
	var sb strings.Builder
	sb.WriteString("id,parent_id,name\n")
	for d := range depth {
		parent := ""
		if d > 0 {
			parent = "n" + strconv.Itoa(d-1)
		}
		fmt.Fprintf(&sb, "n%d,%s,x%d\n", d, parent, d)
	}
	path := filepath.Join(b.TempDir(), "chain.csv")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	in, err := ReadInput(context.Background(), InputOptions{Path: path})
	if err != nil {
		b.Fatal(err)
	}
	closure, err := layouts.New(layouts.ClosureName, layouts.Options{})
	if err != nil {
		b.Fatal(err)
	}
	model, err := models.ParseModel("deep.json", []byte(`{"name": "deep", "layout": "closure", "relative_depth_digits": 6,
		"type_field": {"name": "_type", "value": "TreeRow"},
		"table": {"partition_key": {"name": "PK", "template": "NODE#{id}"}, "sort_key": {"name": "SK", "template": "ANC#{relative_depth}"}},
		"indexes": [{"name": "GSI1", "serves": "ByAncestor", "partition_key": {"name": "GSI1PK", "template": "ANC#{ancestor}"}, "sort_key": {"name": "SK", "template": "ANC#{relative_depth}"}, "projection": {"type": "INCLUDE", "non_key_attributes": ["_type", "ParentId"]}}],
		"attributes": [{"name": "ParentId", "template": "{parent}"}]}`))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range []layouts.Layout{closure, model} {
		b.Run(l.Name(), func(b *testing.B) {
			var p *Plan
			for b.Loop() {
				var problems []*transform.RowError
				if p, problems, err = PlanLayout(context.Background(), in, l, pricing.Default, nil); err != nil || len(problems) > 0 {
					b.Fatal(err, problems)
				}
			}
			if p.Items != depth*(depth+1)/2 || p.Cost.ImportBytes <= p.Bytes {
				b.Fatalf("%d items, %d source bytes of %d item bytes", p.Items, p.Cost.ImportBytes, p.Bytes)
			}
			b.ReportMetric(float64(p.Items), "rows/op")
		})
	}
}
