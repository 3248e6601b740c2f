package benchmarks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/refresh"
)

// moveTree writes a tree whose subtree X (size nodes, a random recursive
// tree) hangs at depth depth below a chain from the root R, next to a leaf T
// at depth 1: moving X under T brings the subtree up depth-2 levels.
func moveTree(b *testing.B, size, depth int) string {
	var sb strings.Builder
	sb.WriteString("id,parent_id,name,score,size\n")
	sb.WriteString("R,,root,1,1\nT,R,target,1,1\n")
	prev := "R"
	for d := 1; d < depth; d++ {
		id := fmt.Sprintf("s%d", d)
		fmt.Fprintf(&sb, "%s,%s,spine %d,1,1\n", id, prev, d)
		prev = id
	}
	r := rand.New(rand.NewPCG(uint64(size), uint64(depth)))
	fmt.Fprintf(&sb, "x0,%s,subtree root,1,1\n", prev)
	for i := 1; i < size; i++ {
		fmt.Fprintf(&sb, "x%d,x%d,node %d,1,1\n", i, r.IntN(i), i)
	}
	path := filepath.Join(b.TempDir(), "tree.csv")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkMoveSubtree moves a subtree of S nodes from depth D to depth 2
// with treeport's editor, in every layout, and reports the items the move
// writes (puts and deletes), their WCU and what reading the subtree cost.
// The move itself is planned, not written: the figures are the plan's.
//
//	go test -run x -bench MoveSubtree -benchtime 1x ./benchmarks/
func BenchmarkMoveSubtree(b *testing.B) {
	endpoint := os.Getenv(ddblocal.EnvEndpoint)
	if endpoint == "" {
		b.Skip("needs DynamoDB Local: eval \"$(./scripts/ddblocal.sh env)\"")
	}
	client := ddblocal.Client(b, endpoint)
	ctx := context.Background()
	for _, name := range layouts.Names() {
		for _, size := range []int{10, 100, 1000} {
			for _, depth := range []int{4, 12} {
				b.Run(fmt.Sprintf("%s/S=%d/D=%d", name, size, depth), func(b *testing.B) {
					l, _ := layouts.New(name, layouts.Options{})
					table := ddblocal.NewTable(b, client, l.Table())
					path := moveTree(b, size, depth)
					if _, err := treeportLoad(ctx, client, table, path, l, 8); err != nil {
						b.Fatal(err)
					}
					var ops []refresh.Op
					var read exporter.Stats
					b.ResetTimer()
					for range b.N {
						ed, err := refresh.NewEditor(client, table, l)
						if err != nil {
							b.Fatal(err)
						}
						if _, err := ed.Apply(ctx, []refresh.Edit{{Op: refresh.EditMove, ID: "x0", Parent: "T"}}); err != nil {
							b.Fatal(err)
						}
						if ops, err = ed.Ops(); err != nil {
							b.Fatal(err)
						}
						read = ed.Read
					}
					b.StopTimer()
					var puts, dels, wcu int
					for _, op := range ops {
						if op.Kind == refresh.Put {
							puts++
						} else {
							dels++
						}
						wcu += op.WCU
					}
					b.ReportMetric(float64(puts), "puts")
					b.ReportMetric(float64(dels), "deletes")
					b.ReportMetric(float64(puts+dels)/float64(size), "writes/node")
					b.ReportMetric(float64(wcu), "WCU")
					b.ReportMetric(float64(read.Items), "items-read")
				})
			}
		}
	}
}
