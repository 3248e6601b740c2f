package layouts_test

import (
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/layouts/layoutstest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGolden pins the exact items of each layout for the small forest
// CM1{CM2{CM4{CM8}},CM20}, CM3, Ω{"é 1", `q,"uote`}: one DynamoDB JSON line
// per item, sorted. Run with -update to rewrite them after a deliberate change.
func TestGolden(t *testing.T) {
	tests := []struct {
		name   string
		layout string
		opts   layouts.Options
	}{
		{"path", layouts.PathName, layouts.Options{}},
		{"sharded-path", layouts.ShardedName, layouts.Options{}},
		{"sharded-path-1", layouts.ShardedName, layouts.Options{Shards: 1}},
		{"closure", layouts.ClosureName, layouts.Options{}},
		{"closure-copy-name", layouts.ClosureName, layouts.Options{ClosureCopy: []string{"name"}}},
		{"prefix", layouts.PrefixName, layouts.Options{}},
		{"path-renamed", layouts.PathName, layouts.Options{Attr: map[string]string{"Id": "ComponentId", "ByPath": "GSI2"}, Delimiter: "/"}},
		{"adjacency", layouts.AdjacencyName, layouts.Options{}},
		{"adjacency-renamed", layouts.AdjacencyName, layouts.Options{Attr: map[string]string{"Id": "NodeId", "ByParent": "GSI1"}}},
	}
	f := layoutstest.SmallForest()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := layouts.New(tt.layout, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, n := range f.Nodes {
				if err := l.Items(n, func(it layouts.Item) { lines = append(lines, layoutstest.DDBJSON(it)) }); err != nil {
					t.Fatalf("Items(%q): %v", n.ID, err)
				}
			}
			sort.Strings(lines)
			got := strings.Join(lines, "\n") + "\n"
			file := filepath.Join("testdata", tt.name+".jsonl")
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test ./layouts -run TestGolden -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("items differ from %s (run with -update after a deliberate change):\n got:\n%s\nwant:\n%s", file, got, want)
			}
		})
	}
}
