package ooc_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/treeport/treeport/importer/ooc"
	"github.com/treeport/treeport/layouts"
)

// TestOutOfCoreOversizedField: a record with a value over a field's limit
// (1 MiB; the record itself under the reader's 16 MiB) and a line over the
// record's limit, among good ones, in JSON Lines and CSV: out of core they
// are rejected as in memory, with the same problems, rejects and items;
// the emit's second read had taken the oversized field's row for one the
// passes never saw ("did the input change?") and failed.
func TestOutOfCoreOversizedField(t *testing.T) {
	big := strings.Repeat("x", 1<<20+10)
	var jsonl, csv strings.Builder
	csv.WriteString("id,parent_id,v\n")
	for i := range 600 {
		parent := ""
		if i > 0 {
			parent = fmt.Sprintf("n%d", i/3)
		}
		fmt.Fprintf(&jsonl, `{"id":"n%d","parent_id":"%s","v":"%d"}`+"\n", i, parent, i)
		fmt.Fprintf(&csv, "n%d,%s,%d\n", i, parent, i)
		switch i {
		case 200:
			fmt.Fprintf(&jsonl, `{"id":"big","parent_id":"n1","link_to":"n5","v":"%s"}`+"\n", big)
			fmt.Fprintf(&jsonl, `{"id":"lnk","parent_id":"n2","link_to":"big"}`+"\n")
			fmt.Fprintf(&csv, "big,n1,%s\n", big)
		case 201:
			fmt.Fprintf(&jsonl, `{"id":"kid","parent_id":"big"}`+"\n")
			fmt.Fprintf(&csv, "kid,big,\n")
		case 400:
			fmt.Fprintf(&jsonl, `{"id":"huge","parent_id":"n1","v":"%s"}`+"\n", strings.Repeat("y", 17<<20))
		}
	}
	for _, tc := range []struct{ name, text string }{{"in.jsonl", jsonl.String()}, {"in.csv", csv.String()}} {
		for _, name := range []string{layouts.PathName, layouts.AdjacencyName, layouts.PrefixName} {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				path := writeTemp(t, tc.name, []byte(tc.text))
				l, err := layouts.New(name, layouts.Options{})
				if err != nil {
					t.Fatal(err)
				}
				tmp := t.TempDir()
				want := oocEmitAll(t, path, l, nil, 100)
				got := oocEmitAll(t, path, l, &ooc.OutOfCore{Memory: 1 << 20, TmpDir: tmp, Layout: l, Force: true}, 100)
				if want.rejected < 2 || !strings.Contains(strings.Join(want.problems, "\n"), "over 1 MiB") {
					t.Fatalf("in memory: %d rejected, problems %q", want.rejected, want.problems)
				}
				if !slices.Equal(got.problems, want.problems) || got.rejected != want.rejected || got.stats != want.stats {
					t.Errorf("out of core: %q, %d rejected, %+v; in memory: %q, %d, %+v", got.problems, got.rejected, got.stats, want.problems, want.rejected, want.stats)
				}
				if !slices.Equal(got.items, want.items) || got.rejects != want.rejects {
					t.Errorf("out of core: %d items, rejects %.300q; in memory: %d, %.300q", len(got.items), got.rejects, len(want.items), want.rejects)
				}
				if left, _ := os.ReadDir(tmp); len(left) != 0 {
					t.Errorf("%d files left in the tmp dir", len(left))
				}
			})
		}
	}
}

// TestOutOfCoreCraftedInputs: inputs made to hurt the passes (an id of
// 1 MiB with a child, one id 5,000 times under random parents, a cycle
// of parents beside a cycle of links and links into the cycle, a chain
// 20,000 deep) give out of core, in 1 MiB, the same problems, rejects
// and items as in memory, in the layouts they concern, and leave nothing
// in --tmp-dir.
func TestOutOfCoreCraftedInputs(t *testing.T) {
	forest := func(b *strings.Builder) {
		for i := range 400 {
			parent := ""
			if i > 0 {
				parent = fmt.Sprintf("n%d", (i*7919)%i)
			}
			fmt.Fprintf(b, `{"id":"n%d","parent_id":"%s"}`+"\n", i, parent)
		}
	}
	var bigID, dups, cycles, deep strings.Builder
	forest(&bigID)
	huge := strings.Repeat("I", 1<<20)
	fmt.Fprintf(&bigID, `{"id":"%s","parent_id":"n5"}`+"\n"+`{"id":"kid","parent_id":"%s"}`+"\n", huge, huge)
	forest(&dups)
	for i := range 5000 {
		fmt.Fprintf(&dups, `{"id":"n7","parent_id":"n%d","v":%d}`+"\n", (i*31)%400, i)
	}
	forest(&cycles)
	cycles.WriteString(`{"id":"ca","parent_id":"cb"}
{"id":"cb","parent_id":"ca"}
{"id":"cc","parent_id":"cb"}
{"id":"la","parent_id":"n1","link_to":"lb"}
{"id":"lb","parent_id":"n2","link_to":"lc"}
{"id":"lc","parent_id":"n3","link_to":"la"}
{"id":"ld","parent_id":"n3","link_to":"ca"}
{"id":"le","parent_id":"ca","link_to":"la"}
{"id":"lf","parent_id":"n4","link_to":"ld"}
`)
	for i := range 20000 {
		parent := ""
		if i > 0 {
			parent = fmt.Sprintf("d%d", i-1)
		}
		fmt.Fprintf(&deep, `{"id":"d%d","parent_id":"%s"}`+"\n", i, parent)
	}
	for _, tc := range []struct {
		name, text string
		layouts    []string
	}{
		{"id of 1 MiB", bigID.String(), []string{layouts.PathName, layouts.AdjacencyName, layouts.ClosureName}},
		{"one id 5,000 times", dups.String(), []string{layouts.PathName, layouts.ClosureName}},
		{"cycles of parents and links", cycles.String(), []string{layouts.PrefixName}},
		{"chain 20,000 deep", deep.String(), []string{layouts.AdjacencyName}},
	} {
		for _, name := range tc.layouts {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				path := writeTemp(t, "in.jsonl", []byte(tc.text))
				l, err := layouts.New(name, layouts.Options{})
				if err != nil {
					t.Fatal(err)
				}
				tmp := t.TempDir()
				want := oocEmitAll(t, path, l, nil, 100)
				got := oocEmitAll(t, path, l, &ooc.OutOfCore{Memory: 1 << 20, TmpDir: tmp, Layout: l, Force: true}, 100)
				if deep := strings.HasPrefix(tc.name, "chain"); deep != (len(want.problems) == 0) || len(want.items) == 0 {
					t.Fatalf("in memory: %d problems, %d items", len(want.problems), len(want.items))
				}
				if !slices.Equal(got.problems, want.problems) || got.rejected != want.rejected || got.more != want.more || got.stats != want.stats {
					t.Errorf("out of core: %.500q, %d rejected, %+v; in memory: %.500q, %d, %+v", got.problems, got.rejected, got.stats, want.problems, want.rejected, want.stats)
				}
				if !slices.Equal(got.items, want.items) || got.rejects != want.rejects {
					t.Errorf("out of core: %d items; in memory: %d; rejects the same: %v", len(got.items), len(want.items), got.rejects == want.rejects)
				}
				if left, _ := os.ReadDir(tmp); len(left) != 0 {
					t.Errorf("%d files left in the tmp dir", len(left))
				}
			})
		}
	}
}
