package benchmarks

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/treeport/treeport/internal/gen"
	"github.com/treeport/treeport/internal/testserver/faultproxy"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

// shapeItems builds layout name's items of a generated forest.
func shapeItems(b *testing.B, name string, opts gen.Options) (layouts.Layout, []layouts.Item) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "in.csv")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	rw, err := records.NewWriter(bw, records.WriterOptions{Format: "csv", Columns: gen.Columns()})
	if err != nil {
		b.Fatal(err)
	}
	err = gen.Generate(opts, func(r *transform.Record) error { return rw.Write(r) })
	if err == nil {
		err = rw.Close()
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		b.Fatal(err)
	}
	l, err := layouts.New(name, layouts.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return l, layoutItems(b, l, path)
}

// BenchmarkPartitionLayouts loads 1,000 nodes, as one tree (a random
// recursive tree) and as a forest of small trees, in every layout, through
// the proxy in partition mode (100 WCU/s per partition key value of the
// table and of each index, DynamoDB's 1,000 scaled down by ten as the
// load is; PARTITION_WCU changes it) and straight to the engine, in turns. `s` is the
// limited load's time, `in-order-s` the same with the writer's spreading
// off (input order), `slowdown` the first's ratio to the unlimited one's, and
// `key-throttles` / `shared-cut` what the writer read (every run checks
// that the table holds exactly the items).
func BenchmarkPartitionLayouts(b *testing.B) {
	endpoint, direct := benchEngine(b)
	shapes := []struct {
		name string
		opts gen.Options
	}{
		{"tree", gen.Options{Nodes: 1000, Shape: gen.ShapeRandom, Seed: 1}},
		{"forest", gen.Options{Nodes: 1000, Shape: gen.ShapeForest, Seed: 1}},
	}
	for _, name := range layouts.Names() {
		for _, sh := range shapes {
			b.Run(name+"/"+sh.name, func(b *testing.B) {
				l, items := shapeItems(b, name, sh.opts)
				var limited, inOrder, free time.Duration
				var keyThrottles int64
				var cuts int
				for range b.N {
					for _, spread := range []int{0, -1} {
						table := tableName()
						proxy, err := faultproxy.New(faultproxy.Config{
							Target: endpoint, Operations: []string{"BatchWriteItem"}, PartitionWCU: float64(envInt("PARTITION_WCU", 100)),
							Spec: map[string]layouts.TableSpec{table: l.Table()},
						})
						if err != nil {
							b.Fatal(err)
						}
						d, st := writeThroughSpread(b, direct, proxy.URL(), table, l.Table(), items, spread)
						proxy.Close()
						if spread < 0 {
							inOrder += d
							continue
						}
						limited += d
						keyThrottles += st.KeyThrottles
						if st.MinRateWCU > 0 {
							cuts++
						}
					}
					d, _ := writeThrough(b, direct, endpoint, tableName(), l.Table(), items)
					free += d
				}
				b.ReportMetric(limited.Seconds()/float64(b.N), "s")
				b.ReportMetric(inOrder.Seconds()/float64(b.N), "in-order-s")
				b.ReportMetric(limited.Seconds()/free.Seconds(), "slowdown")
				b.ReportMetric(float64(len(items)), "items")
				b.ReportMetric(float64(keyThrottles)/float64(b.N), "key-throttles")
				b.ReportMetric(float64(cuts)/float64(b.N), "shared-cut")
			})
		}
	}
}
