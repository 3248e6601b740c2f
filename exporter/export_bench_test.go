package exporter_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/internal/gen"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// benchExportNodes is the size of the benchmark's table.
const benchExportNodes = 20_000

// rawScan is the least a parallel Scan can do: read every page of every
// segment and count the items.
func rawScan(ctx context.Context, client *dynamodb.Client, table string, segments int) (int64, error) {
	var n atomic.Int64
	g, ctx := errgroup.WithContext(ctx)
	for seg := range segments {
		g.Go(func() error {
			in := &dynamodb.ScanInput{
				TableName: aws.String(table), Segment: aws.Int32(int32(seg)), TotalSegments: aws.Int32(int32(segments)),
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
			}
			for {
				out, err := client.Scan(ctx, in)
				if err != nil {
					return err
				}
				n.Add(int64(len(out.Items)))
				if len(out.LastEvaluatedKey) == 0 {
					return nil
				}
				in.ExclusiveStartKey = out.LastEvaluatedKey
			}
		})
	}
	err := g.Wait()
	return n.Load(), err
}

// BenchmarkExportVsRawScan exports a table of 20,000 nodes (path layout)
// and, in the same run, scans it with rawScan: it reports the items a
// second of each and export's share of the raw rate. The difference is what
// export adds to reading: rebuilding the records, sorting and writing them.
//
//	scripts/ddblocal.sh start && eval "$(scripts/ddblocal.sh env)"
//	go test ./exporter -run '^$' -bench ExportVsRawScan -benchtime 5x
func BenchmarkExportVsRawScan(b *testing.B) {
	client := localClient(b)
	l := mustLayout(b, layouts.PathName, layouts.Options{})
	var recs []*transform.Record
	if err := gen.Generate(gen.Options{Nodes: benchExportNodes, Shape: "random", Seed: 1}, func(r *transform.Record) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	// b.Loop runs this function once, so the table is loaded once.
	benchTable := loadTable(b, client, l, recs)
	var nodes int64
	const segments = 4
	ctx := context.Background()
	out := filepath.Join(b.TempDir(), "export.jsonl")
	var rawTime, exportTime time.Duration
	var rawItems int64
	for b.Loop() {
		start := time.Now()
		n, err := rawScan(ctx, client, benchTable, segments)
		if err != nil {
			b.Fatal(err)
		}
		rawTime += time.Since(start)
		rawItems += n

		start = time.Now()
		st, err := exporter.Export(ctx, exporter.ExportOptions{
			Layout: l, Client: client, Table: benchTable, Out: out,
			Scan: exporter.ScanOptions{Segments: segments},
		})
		if err != nil {
			b.Fatal(err)
		}
		exportTime += time.Since(start)
		nodes += st.Nodes
	}
	rawRate := float64(rawItems) / rawTime.Seconds()
	exportRate := float64(nodes) / exportTime.Seconds()
	b.ReportMetric(rawRate, "raw-items/s")
	b.ReportMetric(exportRate, "export-nodes/s")
	b.ReportMetric(exportRate/rawRate, "export/raw")
}
