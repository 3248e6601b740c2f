package importer

import (
	"context"
	"testing"

	"github.com/treeport/treeport/internal/pricing"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// TestPlanCountsValidNodesOnly: a plan measures what would be written, so a
// rejected subtree (here D, whose id is twice in the input, with its
// children) is in none of its counts: not in the children of A,
// not in the size of A's tree, and the orphan tree below Z is not a tree.
func TestPlanCountsValidNodesOnly(t *testing.T) {
	path := writeTemp(t, "in.csv", []byte("id,parent_id\nA,\nB,A\nC,A\nD,A\nE,D\nF,D\nG,E\nD,A\nO,Z\nP,O\n"))
	in, err := ReadInput(context.Background(), InputOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	collections := func(name string) map[string]int64 {
		t.Helper()
		l, err := layouts.New(name, layouts.Options{Shards: 1})
		if err != nil {
			t.Fatal(err)
		}
		p, problems := mustPlan(t, in, l)
		if len(problems) == 0 {
			t.Fatalf("%s: no problems", name)
		}
		if p.Nodes != 3 {
			t.Errorf("%s: %d nodes, want A, B and C", name, p.Nodes)
		}
		got := map[string]int64{}
		for _, c := range p.Collections {
			got[c.Index+"/"+c.Attr] = c.Items
		}
		return got
	}
	for _, tt := range []struct {
		layout string
		want   map[string]int64
	}{
		// ByParent: A's two valid children; ByPath: A's tree of three.
		{"path", map[string]int64{"/Id": 1, "ByParent/ParentId": 2, "ByPath/TreeId": 3}},
		{"sharded-path", map[string]int64{"/Id": 1, "ByParent/ParentId": 2, "ByPath/GraphId": 3}},
		// ByAncestor: A is the ancestor of B and C, and its own.
		{"closure", map[string]int64{"/Id": 2, "ByAncestor/AncestorId": 3}},
		// The key ¦A¦ lists B and C; ¦ lists the one valid root.
		{"prefix", map[string]int64{"/Key": 2}},
	} {
		got := collections(tt.layout)
		for k, want := range tt.want {
			if got[k] != want {
				t.Errorf("%s: largest collection of %s: %d items, want %d (all: %v)", tt.layout, k, got[k], want, got)
			}
		}
	}
}

// mustPlan is PlanLayout at list prices, which fails the test only when
// it cannot finish (its context never ends here).
func mustPlan(t *testing.T, in *Input, l layouts.Layout) (*Plan, []*transform.RowError) {
	t.Helper()
	p, problems, err := PlanLayout(context.Background(), in, l, pricing.Default, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p, problems
}
