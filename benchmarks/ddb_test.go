package benchmarks

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/ddbtable"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
)

// loadNodes is the size of the forest loaded by BenchmarkLoad.
const loadNodes = 30_000

// rawLoad is the baseline: a minimal BatchWriteItem loop over prebuilt
// items, `concurrency` goroutines taking 25-item batches from a shared
// counter, retrying UnprocessedItems at once. No rate limiting, no
// accounting: what the engine gives to the simplest possible client.
func rawLoad(ctx context.Context, client *dynamodb.Client, table string, items []layouts.Item, concurrency int) error {
	var next atomic.Int64
	g, ctx := errgroup.WithContext(ctx)
	for range concurrency {
		g.Go(func() error {
			for {
				start := int(next.Add(25)) - 25
				if start >= len(items) {
					return nil
				}
				end := min(start+25, len(items))
				reqs := make([]types.WriteRequest, 0, end-start)
				for _, it := range items[start:end] {
					reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
				}
				pending := map[string][]types.WriteRequest{table: reqs}
				for len(pending) > 0 {
					out, err := client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
					if err != nil {
						return err
					}
					pending = out.UnprocessedItems
				}
			}
		})
	}
	return g.Wait()
}

// treeportLoad is the whole of treeport's import minus process start: the
// input read twice (skeleton, then attributes), validated, turned into
// items and written by the throttled writer with the same concurrency.
func treeportLoad(ctx context.Context, client *dynamodb.Client, table, path string, l layouts.Layout, concurrency int) (int64, error) {
	in, err := importer.ReadInput(ctx, importer.InputOptions{Path: path, Source: benchSourceOptions()})
	if err != nil {
		return 0, err
	}
	if p := in.CheckLayout(l); len(p) > 0 {
		return 0, p[0]
	}
	w := ddbwrite.NewDDBWriter(client, table, l.Table(), ddbwrite.WriterOptions{Concurrency: concurrency})
	_, err = in.Emit(ctx, importer.EmitOptions{Layout: l}, func(seq int64, it layouts.Item) error {
		return w.Write(ctx, seq, it)
	})
	st, cerr := w.Close(ctx)
	if err == nil {
		err = cerr
	}
	return st.Items, err
}

func benchSourceOptions() records.SourceOptions {
	types, _ := records.ParseTypes("size:N,score:N")
	return records.SourceOptions{Types: types}
}

// BenchmarkLoad compares treeport's import with the raw loop on the same
// items, the same DynamoDB Local and the same concurrency, alternating the
// two so that both see the same machine. It reports both rates and their
// ratio. It needs TREEPORT_TEST_ENDPOINT.
func BenchmarkLoad(b *testing.B) {
	endpoint := os.Getenv(ddblocal.EnvEndpoint)
	if endpoint == "" {
		b.Skip("set " + ddblocal.EnvEndpoint + " (scripts/ddblocal.sh start; eval \"$(scripts/ddblocal.sh env)\")")
	}
	// DynamoDB Local takes any credentials; without some, the SDK would go
	// looking for an instance role.
	if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		b.Setenv("AWS_ACCESS_KEY_ID", "local")
		b.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	}
	ctx := context.Background()
	client, err := ddb.NewClient(ctx, ddb.AWSOptions{EndpointURL: endpoint, Region: "us-east-1"})
	if err != nil {
		b.Fatal(err)
	}
	path := randomCSVN(b, loadNodes)
	l, _ := layouts.New("path", layouts.Options{})
	items := layoutItems(b, l, path)
	// Warm the engine's JIT up, so that the first measured run is not the
	// slowest for a reason that has nothing to do with the client.
	warm := fmt.Sprintf("bench-warm-%d", time.Now().UnixNano())
	if err := ddbtable.CreateTable(ctx, client, warm, l.Table(), ddbtable.Billing{}); err != nil {
		b.Fatal(err)
	}
	if err := rawLoad(ctx, client, warm, items, 8); err != nil {
		b.Fatal(err)
	}
	client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(warm)})
	for _, concurrency := range []int{4, 8} {
		b.Run(fmt.Sprintf("concurrency=%d", concurrency), func(b *testing.B) {
			var rawTime, tpTime, wTime time.Duration
			for i := range b.N {
				for _, which := range []string{"raw", "treeport", "writer"} {
					table := fmt.Sprintf("bench-%s-%d-%d-%d", which, concurrency, i, time.Now().UnixNano())
					if err := ddbtable.CreateTable(ctx, client, table, l.Table(), ddbtable.Billing{}); err != nil {
						b.Fatal(err)
					}
					start := time.Now()
					switch which {
					case "raw":
						err = rawLoad(ctx, client, table, items, concurrency)
						rawTime += time.Since(start)
					case "writer":
						// The writer alone, on the prebuilt items.
						w := ddbwrite.NewDDBWriter(client, table, l.Table(), ddbwrite.WriterOptions{Concurrency: concurrency})
						for seq, it := range items {
							if err = w.Write(ctx, int64(seq), it); err != nil {
								break
							}
						}
						if _, cerr := w.Close(ctx); err == nil {
							err = cerr
						}
						wTime += time.Since(start)
					default:
						var n int64
						n, err = treeportLoad(ctx, client, table, path, l, concurrency)
						tpTime += time.Since(start)
						if err == nil && n != int64(len(items)) {
							err = fmt.Errorf("treeport wrote %d items, want %d", n, len(items))
						}
					}
					if err != nil {
						b.Fatal(err)
					}
					client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
				}
			}
			raw := float64(len(items)*b.N) / rawTime.Seconds()
			tp := float64(len(items)*b.N) / tpTime.Seconds()
			b.ReportMetric(raw, "raw-items/s")
			b.ReportMetric(tp, "treeport-items/s")
			b.ReportMetric(tp/raw, "ratio")
			wr := float64(len(items)*b.N) / wTime.Seconds()
			b.ReportMetric(wr, "writer-items/s")
			b.ReportMetric(wr/raw, "writer-ratio")
		})
	}
}
