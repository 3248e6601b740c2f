package layouts_test

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/layouts/layoutstest"
	"github.com/treeport/treeport/models"
	"github.com/treeport/treeport/transform"
)

// benchForest is a balanced forest: 4 trees of fan-out 8, 10,000 nodes in
// all (depth up to 4), each node with three small attributes.
func benchForest() *layoutstest.Forest {
	const n, trees, fanout = 10000, 4, 8
	ids := make([]string, n)
	parents := make([]int, n)
	attrs := make([]transform.Attrs, n)
	for i := range n {
		ids[i] = fmt.Sprintf("node-%06d", i)
		parents[i] = -1
		if i >= trees {
			parents[i] = (i - trees) / fanout
		}
		attrs[i] = transform.Attrs{
			"name":   &types.AttributeValueMemberS{Value: "component " + ids[i]},
			"weight": &types.AttributeValueMemberN{Value: fmt.Sprint(i % 977)},
			"active": &types.AttributeValueMemberBOOL{Value: i%2 == 0},
		}
	}
	return layoutstest.NewForest(ids, parents, attrs)
}

// benchLayouts are every layout with its defaults and every shipped model.
func benchLayouts(b *testing.B) []layouts.Layout {
	var ls []layouts.Layout
	for _, name := range layouts.Names() {
		l, err := layouts.New(name, layouts.Options{})
		if err != nil {
			b.Fatal(err)
		}
		ls = append(ls, l)
	}
	for _, file := range layoutstest.ShippedModels(b) {
		l, err := models.LoadModelParams(file, layoutstest.ModelParams)
		if err != nil {
			b.Fatal(err)
		}
		ls = append(ls, l)
	}
	return ls
}

// BenchmarkItems measures building items, per item (closure writes several
// per node): go test -bench Items ./layouts/
func BenchmarkItems(b *testing.B) {
	f := benchForest()
	for _, l := range benchLayouts(b) {
		b.Run(l.Name(), func(b *testing.B) {
			items := 0
			emit := func(layouts.Item) { items++ }
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := l.Items(f.Nodes[i%len(f.Nodes)], emit); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(items)/b.Elapsed().Seconds(), "items/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(items), "ns/item")
		})
	}
}

// BenchmarkMeasure measures the dry run's cost per node.
func BenchmarkMeasure(b *testing.B) {
	f := benchForest()
	for _, l := range benchLayouts(b) {
		b.Run(l.Name(), func(b *testing.B) {
			m := layouts.NewMeasure(l)
			for i := 0; b.Loop(); i++ {
				l.Measure(&f.Stats[i%len(f.Stats)], m)
			}
			b.ReportMetric(float64(m.Nodes)/b.Elapsed().Seconds(), "nodes/s")
		})
	}
}
