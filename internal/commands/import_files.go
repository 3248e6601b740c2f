package commands

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/importer/bulkjob"
	"github.com/treeport/treeport/importer/importfiles"
	"github.com/treeport/treeport/internal/pricing"
	"github.com/treeport/treeport/internal/s3io"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/models"
)

// settings are the flags that shape the items; they go into manifests and
// checkpoint fingerprints. The shard is one of them, so that a checkpoint is
// only ever resumed by the copy of the job that wrote it; so are --path-ids
// and --implicit-inner (an inner node without attributes gets an item or
// not: another sequence of items).
func settings(c *cli.Context, l layouts.Layout) map[string]any {
	s := map[string]any{"layout": l.Name()}
	for _, name := range []string{"format", "id-field", "parent-field", "csv-delimiter", "types", "delimiter", "shards", "closure-copy", "on-invalid", "shard", "table", "import-table", "bulk-put", "path-ids", "implicit-inner"} {
		if c.IsSet(name) || name == "id-field" || name == "parent-field" {
			s[name] = c.Value(name)
		}
	}
	if a := c.StringSlice("attr"); len(a) > 0 {
		s["attr"] = a
	}
	if p := c.StringSlice("model-param"); len(p) > 0 {
		// Another tenant's values write other items.
		s["model-param"] = slices.Sorted(slices.Values(p))
	}
	if d := models.Digest(l); d != "" {
		// So does the model file, changed under the same name.
		s["model"] = d
	}
	return s
}

// s3EndpointFlag is --s3-endpoint-url, for the commands that read or write S3.
func s3EndpointFlag() cli.Flag {
	return &cli.StringFlag{Name: "s3-endpoint-url", Usage: "S3 endpoint for s3:// locations: an S3-compatible server such as s3rver or MinIO (path-style addressing)", Category: catAWS}
}

func s3Options(c *cli.Context) importfiles.S3Options {
	return importfiles.S3Options{
		EndpointURL: c.String("s3-endpoint-url"),
		Region:      c.String("region"),
		Profile:     c.String("profile"),
	}
}

// openS3Output parses --out s3://BUCKET/PREFIX and checks that the
// location holds nothing this run would mix with, before the input is read.
func openS3Output(c *cli.Context, out string, shard ddbwrite.Shard) (*importer.S3Output, error) {
	loc, err := s3io.ParseURL(out)
	if err != nil {
		return nil, usagef("--out: %v", err)
	}
	return importer.OpenS3Output(c.Context, loc, s3Options(c), shard)
}

// importToFiles is import --out: importer.LoadFiles.
func importToFiles(c *cli.Context, in *importer.Input, emit importer.EmitOptions, started time.Time, s3out *importer.S3Output) error {
	l := emit.Layout
	opts, err := loadFilesOptions(c, emit, s3out)
	if err != nil {
		return err
	}
	w, log := c.App.Writer, c.App.ErrWriter
	var items int64
	if s3out != nil {
		files, last := 0, time.Now()
		opts.OnStaged = func(m *importfiles.Manifest) {
			files = len(m.Files) + 3
			fmt.Fprintf(log, "wrote %s of %s (%s layout) in %s (%s); uploading to %s\n",
				countOf(int(m.Items), "item"), countOf(int(m.Nodes), "node"), l.Name(), countOf(len(m.Files), "file"), units.SizeText(m.Bytes), s3out.Loc)
		}
		opts.OnUpload = func(st importfiles.UploadStats) {
			if time.Since(last) >= progressEvery {
				last = time.Now()
				fmt.Fprintf(log, "uploading: %d/%d files, %s, %s/s\n", st.Objects, files, units.SizeText(st.Bytes), units.SizeText(rate(st.Bytes, st.Took)))
			}
		}
		opts.OnImportStarted = func(s importer.ImportStarted) {
			items = s.Items
			fmt.Fprintf(log, "import %s started: %s from %s into the new table %s (about $%s at list price, no write capacity)\n",
				s.ARN, units.Count(s.Items, "item"), s.Source, s.Table, money(pricing.Default.Import(s.RawBytes)))
		}
		opts.OnImportStatus = func(s bulkjob.ImportStatus) { printImportStatus(log, s, items) }
		bulkPutProgress(c, &opts)
	}
	res, err := importer.LoadFiles(c.Context, in, opts)
	if res == nil {
		return err
	}
	m := res.Manifest
	if s3out == nil {
		fmt.Fprintf(w, "wrote %s of %s (%s layout) in %s to %s in %s\n",
			countOf(int(m.Items), "item"), countOf(int(m.Nodes), "node"), l.Name(), countOf(len(m.Files), "file"), res.Dir, time.Since(started).Round(time.Millisecond))
	} else if st := res.Upload; st != nil {
		fmt.Fprintf(w, "uploaded %s of %s (%s layout) in %s, with the manifest and the CreateTable and ImportTable requests (%s), to %s in %s (%s/s)\n",
			countOf(int(m.Items), "item"), countOf(int(m.Nodes), "node"), l.Name(), countOf(len(m.Files), "data file"), units.SizeText(st.Bytes), s3out.Loc, st.Took.Round(time.Millisecond), units.SizeText(rate(st.Bytes, st.Took)))
	}
	if res.Upload != nil || s3out == nil {
		if m.Rejected > 0 {
			fmt.Fprintf(w, "%s rejected: see %s\n", countOf(int(m.Rejected), "record"), c.String("rejects"))
		}
	}
	if err != nil {
		if res.BulkPut != nil {
			printBulkPutReport(log, res)
		}
		return err
	}
	if res.Waiting != nil {
		shard := emit.Shard
		what := "the import into " + opts.ImportTable
		if opts.BulkPut != "" {
			what = "the bulk put into " + opts.BulkPut
		}
		fmt.Fprintf(w, "shard %s uploaded; waiting for shards %s of %d: the last copy to finish starts %s\n",
			shard, joinInts(res.Waiting), shard.Of, what)
		return nil
	}
	if res.BulkPut != nil {
		return bulkPutResult(w, log, res)
	}
	if res.Import == nil {
		return nil
	}
	return importResult(w, log, *res.Import)
}

// loadFilesOptions are import --out's options: the table the request files
// name, and the import or bulk put to start.
func loadFilesOptions(c *cli.Context, emit importer.EmitOptions, s3out *importer.S3Output) (importer.LoadFilesOptions, error) {
	l := emit.Layout
	table := c.String("table")
	for _, name := range []string{"import-table", "bulk-put"} {
		if t := c.String(name); t != "" {
			table = t
		}
	}
	if table == "" {
		table = "treeport-" + l.Name()
	}
	opts := importer.LoadFilesOptions{
		Files: importer.FilesOptions{
			Dir: c.String("out"), Table: table, ItemsPerFile: c.Int("items-per-file"),
			Emit: emit, Settings: settings(c, l),
		},
		S3: s3out, ImportTable: c.String("import-table"), BulkPut: c.String("bulk-put"), AWS: awsOptions(c), Poll: importPoll,
	}
	b, err := billing(c)
	if err != nil {
		return opts, err
	}
	opts.Files.Billing = b
	if opts.ImportTable != "" {
		opts.Billing = b
	}
	if opts.BulkPut != "" {
		n, err := bulkPutWCU(c)
		if err != nil {
			return opts, err
		}
		opts.MaxWCU = n
	}
	return opts, nil
}

func rate(n int64, d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(float64(n) / d.Seconds())
}

// importPoll is the pause between two DescribeImport calls.
const importPoll = 15 * time.Second

// printImportStatus is a line of an import's progress.
func printImportStatus(log io.Writer, s bulkjob.ImportStatus, items int64) {
	pct := ""
	if items > 0 {
		pct = fmt.Sprintf(" (%.0f%%)", 100*float64(s.ProcessedItems)/float64(items))
	}
	fmt.Fprintf(log, "importing into %s: %s, %s of %s processed%s, %s, %s\n",
		s.Table, s.Status, units.Thousands(s.ProcessedItems), units.Count(items, "item"), pct, units.Count(s.Errors, "error"), importElapsed(s).Round(time.Second))
}

// importResult reports how an import ended.
func importResult(w, log io.Writer, last bulkjob.ImportStatus) error {
	fmt.Fprintf(w, "imported %s into %s in %s (%s processed, %s)\n",
		units.Count(last.ImportedItems, "item"), last.Table, importElapsed(last).Round(time.Second), units.Thousands(last.ProcessedItems), units.Count(last.Errors, "error"))
	if last.Errors > 0 {
		where := "the import's CloudWatch log group"
		if last.LogGroup != "" {
			where = "CloudWatch log group " + last.LogGroup
		}
		fmt.Fprintf(log, "%s could not be imported; they are described in %s\n", units.Count(last.Errors, "item"), where)
		return errDifferences
	}
	return nil
}

func importElapsed(s bulkjob.ImportStatus) time.Duration {
	switch {
	case s.Started.IsZero():
		return 0
	case !s.Ended.IsZero():
		return s.Ended.Sub(s.Started)
	}
	return time.Since(s.Started)
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}
