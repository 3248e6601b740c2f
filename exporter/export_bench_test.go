package exporter_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
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

// The benchmark's table and the Scan both sides run: the same segments and
// the same page Limit (0: pages of 1 MB, export's default).
const (
	benchExportNodes    = 20_000
	benchExportSegments = 4
	benchExportPageSize = 0
)

// rawScan is the least a parallel Scan can do: read every page of every
// segment and count the items. It reads with the SDK's defaults.
func rawScan(ctx context.Context, client *dynamodb.Client, table string, segments int, limit int32) (int64, error) {
	var n atomic.Int64
	g, ctx := errgroup.WithContext(ctx)
	for seg := range segments {
		g.Go(func() error {
			in := &dynamodb.ScanInput{
				TableName: aws.String(table), Segment: aws.Int32(int32(seg)), TotalSegments: aws.Int32(int32(segments)),
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
			}
			if limit > 0 {
				in.Limit = aws.Int32(limit)
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

// BenchmarkExportVsRawScan exports a table of 20,000 nodes (path layout,
// JSON Lines) and, in the same run and on the same table, scans it with
// rawScan, with the same segments and page Limit: it reports the items a
// second of each and export's share of the raw rate (export/raw). The
// difference is what export adds to reading (rebuilding the records,
// sorting and writing them) less what it saves by decoding the pages itself
// rather than with the SDK. A third run, export with the SDK's decoding
// (sdk-decoding-nodes/s, sdk-decoding/raw), tells the two apart.
//
// The three alternate, each going first in turn, and each starts from a
// collected heap, so that none pays for another's garbage; one untimed run
// of each first warms DynamoDB Local up.
//
//	scripts/ddblocal.sh start && eval "$(scripts/ddblocal.sh env)"
//	go test ./exporter -run '^$' -bench ExportVsRawScan -benchtime 20x -count 5
func BenchmarkExportVsRawScan(b *testing.B) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		if os.Getenv(k) == "" {
			b.Setenv(k, "treeport")
		}
	}
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
	ctx := context.Background()
	out := filepath.Join(b.TempDir(), "export.jsonl")
	raw := func() int64 {
		n, err := rawScan(ctx, client, benchTable, benchExportSegments, benchExportPageSize)
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	export := func(sdkDecoding bool) func() int64 {
		return func() int64 {
			exporter.SetSDKScanDecoding(sdkDecoding)
			defer exporter.SetSDKScanDecoding(false)
			st, err := exporter.Export(ctx, exporter.ExportOptions{
				Layout: l, Client: client, Table: benchTable, Out: out,
				Scan: exporter.ScanOptions{Segments: benchExportSegments, PageSize: benchExportPageSize},
			})
			if err != nil {
				b.Fatal(err)
			}
			return st.Nodes
		}
	}
	runs := []struct {
		name  string
		run   func() int64
		items int64
		took  time.Duration
	}{
		{name: "raw", run: raw},
		{name: "export", run: export(false)},
		{name: "export with the SDK's decoding", run: export(true)},
	}
	for _, r := range runs {
		if n := r.run(); n != benchExportNodes {
			b.Fatalf("%s: %d items, want %d", r.name, n, benchExportNodes)
		}
	}

	// ratios[i] holds each round's raw time over run i's: its share of the
	// raw rate in that round, which a burst of load on the machine affects
	// less than it does the totals.
	ratios := make([][]float64, len(runs))
	turn := 0
	for b.Loop() {
		var took [3]time.Duration
		for k := range runs {
			i := (turn + k) % len(runs)
			r := &runs[i]
			runtime.GC()
			start := time.Now()
			r.items += r.run()
			took[i] = time.Since(start)
			r.took += took[i]
		}
		for i := range runs {
			ratios[i] = append(ratios[i], took[0].Seconds()/took[i].Seconds())
		}
		turn++
	}
	rate := func(i int) float64 { return float64(runs[i].items) / runs[i].took.Seconds() }
	median := func(i int) float64 {
		slices.Sort(ratios[i])
		return ratios[i][len(ratios[i])/2]
	}
	b.ReportMetric(rate(0), "raw-items/s")
	b.ReportMetric(rate(1), "export-nodes/s")
	b.ReportMetric(rate(1)/rate(0), "export/raw")
	b.ReportMetric(median(1), "export/raw-median")
	b.ReportMetric(rate(2), "sdk-decoding-nodes/s")
	b.ReportMetric(rate(2)/rate(0), "sdk-decoding/raw")
}
