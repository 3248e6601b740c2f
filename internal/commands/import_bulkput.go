package commands

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/importer/bulkjob"
	"github.com/treeport/treeport/importer/importfiles"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/ddbtable"
	"github.com/treeport/treeport/internal/s3io"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
)

// bulkPutWCU is --max-wcu for --bulk-put: a whole number of write request
// units a second, at least the API's minimum (0: no cap).
func bulkPutWCU(c *cli.Context) (int64, error) {
	if c.String("bulk-put") == "" || !c.IsSet("max-wcu") {
		return 0, nil
	}
	v := c.Float64("max-wcu")
	n := int64(math.Ceil(v))
	if n < bulkjob.MinBulkPutWCU {
		return 0, usagef("--max-wcu %g: a bulk put takes a cap of at least %d write request units a second (StartBulkPutItems' minimum); leave --max-wcu out for no cap, or load with --table for a lower rate", v, bulkjob.MinBulkPutWCU)
	}
	return n, nil
}

// checkBulkPut runs before the input is read: the table must exist with
// the layout's keys and indexes. When the S3 location holds the complete
// upload of an earlier run of the same command, it follows the bulk put
// that upload started (the same client token: DynamoDB starts none) and
// reports done.
func checkBulkPut(c *cli.Context, l layouts.Layout, shard ddbwrite.Shard, maxWCU int64) (bool, error) {
	table := c.String("bulk-put")
	client, err := ddb.NewClient(c.Context, awsOptions(c))
	if err != nil {
		return false, err
	}
	if err := ddbtable.CheckTable(c.Context, client, table, l.Table()); err != nil {
		if errors.Is(err, ddb.ErrTableNotFound) {
			return false, fmt.Errorf("%w; bulk put loads an existing table (--import-table creates one from the files)", err)
		}
		return false, err
	}
	loc, err := s3io.ParseURL(c.String("out"))
	if err != nil {
		return false, usagef("--out: %v", err)
	}
	s3c, err := importfiles.NewS3Client(c.Context, s3Options(c))
	if err != nil {
		return false, err
	}
	opts, err := loadFilesOptions(c, importer.EmitOptions{Layout: l, Shard: shard}, &importer.S3Output{Loc: loc, Client: s3c})
	if err != nil {
		return false, err
	}
	opts.MaxWCU = maxWCU
	src, err := importer.UploadedBefore(c.Context, opts, c.String("in"))
	if err != nil || src == nil {
		return false, err
	}
	log := c.App.ErrWriter
	fmt.Fprintf(log, "%s holds the complete upload of an earlier run of this command (%s, %d items); following its bulk put instead of uploading again (empty the prefix, or choose another, to load a new input)\n",
		loc, src.Manifests[0].Created, src.Items())
	bulkPutProgress(c, &opts)
	res, err := importer.ResumeBulkPut(c.Context, src, opts)
	if res.BulkPut == nil {
		return true, err
	}
	if err != nil {
		printBulkPutReport(log, res)
		return true, err
	}
	return true, bulkPutResult(c.App.Writer, log, res)
}

// bulkPutProgress makes the bulk put's start and polls print a line each.
func bulkPutProgress(c *cli.Context, opts *importer.LoadFilesOptions) {
	log := c.App.ErrWriter
	var items int64
	opts.OnBulkPutStarted = func(s importer.BulkPutStarted) {
		items = s.Items
		limit := "no cap"
		if s.MaxWCU > 0 {
			limit = fmt.Sprintf("at most %d WCU/s", s.MaxWCU)
		}
		fmt.Fprintf(log, "bulk put %s: %s from %s into %s (%s); failed items are reported in %s\n",
			s.ARN, units.Count(s.Items, "item"), s.Source, s.Table, limit, s.Report)
	}
	opts.OnBulkPutStatus = func(s bulkjob.BulkPutStatus) { printBulkPutStatus(log, s, items) }
}

func printBulkPutStatus(log io.Writer, s bulkjob.BulkPutStatus, items int64) {
	pct := ""
	if items > 0 {
		pct = fmt.Sprintf(" (%.0f%%)", 100*float64(s.ProcessedItems)/float64(items))
	}
	fmt.Fprintf(log, "bulk put into %s: %s, %s of %s processed%s, %s failed, %s\n",
		s.Table, s.Status, units.Thousands(s.ProcessedItems), units.Count(items, "item"), pct, units.Thousands(s.FailedItems), elapsed(s.Started, s.Ended).Round(time.Second))
}

// bulkPutResult reports how a bulk put ended: exit 1 when items failed,
// with the report's location and first records.
func bulkPutResult(w, log io.Writer, res *importer.LoadFilesResult) error {
	s := res.BulkPut
	fmt.Fprintf(w, "wrote %s into %s by bulk put in %s (%s processed, %s failed)\n",
		units.Count(s.Written(), "item"), s.Table, elapsed(s.Started, s.Ended).Round(time.Second), units.Thousands(s.ProcessedItems), units.Thousands(s.FailedItems))
	if s.FailedItems == 0 && res.Report == nil {
		return nil
	}
	printBulkPutReport(log, res)
	return errDifferences
}

func printBulkPutReport(log io.Writer, res *importer.LoadFilesResult) {
	s, rep := res.BulkPut, res.Report
	if rep == nil {
		return
	}
	fmt.Fprintf(log, "%s could not be written (%s); DynamoDB's report in %s: %s, %s\n",
		units.Count(s.FailedItems, "item"), s.Status, rep.Location, countOf(len(rep.Objects), "object"), units.Count(int64(rep.Lines), "record"))
	for _, line := range rep.Samples {
		fmt.Fprintf(log, "  %s\n", line)
	}
	if n := rep.Lines - int64(len(rep.Samples)); n > 0 {
		fmt.Fprintf(log, "  … and %d more\n", n)
	}
}

func elapsed(start, end time.Time) time.Duration {
	switch {
	case start.IsZero():
		return 0
	case !end.IsZero():
		return end.Sub(start)
	}
	return time.Since(start)
}
