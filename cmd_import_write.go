package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/urfave/cli/v2"

	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/pricing"
	"github.com/treeport/treeport/layouts"
)

// settings are the flags that shape the items; they go into manifests and
// checkpoint fingerprints. The shard is one of them, so that a checkpoint is
// only ever resumed by the copy of the job that wrote it.
func settings(c *cli.Context, l layouts.Layout) map[string]any {
	s := map[string]any{"layout": l.Name()}
	for _, name := range []string{"format", "id-field", "parent-field", "csv-delimiter", "types", "delimiter", "shards", "closure-copy", "on-invalid", "shard", "table", "import-table"} {
		if c.IsSet(name) || name == "id-field" || name == "parent-field" {
			s[name] = c.Value(name)
		}
	}
	if a := c.StringSlice("attr"); len(a) > 0 {
		s["attr"] = a
	}
	return s
}

// s3EndpointFlag is --s3-endpoint-url, for the commands that read or write S3.
func s3EndpointFlag() cli.Flag {
	return &cli.StringFlag{Name: "s3-endpoint-url", Usage: "S3 endpoint for s3:// locations: an S3-compatible server such as s3rver or MinIO (path-style addressing)", Category: catAWS}
}

func s3Options(c *cli.Context) importer.S3Options {
	return importer.S3Options{
		EndpointURL: c.String("s3-endpoint-url"),
		Region:      c.String("region"),
		Profile:     c.String("profile"),
	}
}

// s3Output is where `import --out s3://...` uploads, checked before the
// input is read.
type s3Output struct {
	loc    importer.S3Location
	client *s3.Client
}

// prepareS3Output parses --out s3://BUCKET/PREFIX and checks that the
// location holds nothing this run would mix with.
func prepareS3Output(c *cli.Context, out string, shard importer.Shard) (*s3Output, error) {
	loc, err := importer.ParseS3URL(out)
	if err != nil {
		return nil, usagef("--out: %v", err)
	}
	client, err := importer.NewS3Client(c.Context, s3Options(c))
	if err != nil {
		return nil, err
	}
	if err := importer.CheckS3Output(c.Context, client, loc, shard); err != nil {
		return nil, err
	}
	return &s3Output{loc: loc, client: client}, nil
}

func importToFiles(c *cli.Context, in *importer.Input, l layouts.Layout, emit importer.EmitOptions, started time.Time, s3out *s3Output) error {
	table := c.String("table")
	if t := c.String("import-table"); t != "" {
		table = t
	}
	if table == "" {
		table = "treeport-" + l.Name()
	}
	dir := c.String("out")
	if s3out != nil {
		// The files are staged on local disk, then uploaded (see
		// importer.UploadImportFiles).
		tmp, err := os.MkdirTemp("", "treeport-import-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = filepath.Join(tmp, "out")
	}
	m, err := importer.WriteImportFiles(c.Context, in, importer.FilesOptions{
		Dir: dir, Table: table, ItemsPerFile: c.Int("items-per-file"),
		Emit: emit, Settings: settings(c, l),
	})
	if err != nil {
		return err
	}
	w := c.App.Writer
	if s3out == nil {
		fmt.Fprintf(w, "wrote %s of %s (%s layout) in %s to %s in %s\n",
			countOf(int(m.Items), "item"), countOf(int(m.Nodes), "node"), l.Name(), countOf(len(m.Files), "file"), dir, time.Since(started).Round(time.Millisecond))
	} else {
		fmt.Fprintf(c.App.ErrWriter, "wrote %s of %s (%s layout) in %s (%s); uploading to %s\n",
			countOf(int(m.Items), "item"), countOf(int(m.Nodes), "node"), l.Name(), countOf(len(m.Files), "file"), humanBytes(m.Bytes), s3out.loc)
		if err := uploadFiles(c, s3out, dir, m, l, emit.Shard); err != nil {
			return err
		}
	}
	if m.Rejected > 0 {
		fmt.Fprintf(w, "%s rejected: see %s\n", countOf(int(m.Rejected), "record"), c.String("rejects"))
	}
	if s3out == nil || c.String("import-table") == "" {
		return nil
	}
	return startImport(c, s3out, l, emit.Shard)
}

// uploadFiles uploads the staged files, with a log line every few seconds.
func uploadFiles(c *cli.Context, s3out *s3Output, dir string, m *importer.Manifest, l layouts.Layout, shard importer.Shard) error {
	total := len(m.Files) + 3
	last := time.Now()
	st, err := importer.UploadImportFiles(c.Context, s3out.client, dir, m, l.Table(), importer.UploadOptions{
		To: s3out.loc, Shard: shard,
		OnFile: func(st importer.UploadStats) {
			if !c.Bool("no-progress") && time.Since(last) >= progressEvery {
				last = time.Now()
				fmt.Fprintf(c.App.ErrWriter, "uploading: %d/%d files, %s, %s/s\n", st.Objects, total, humanBytes(st.Bytes), humanBytes(rate(st.Bytes, st.Took)))
			}
		},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "uploaded %s of %s (%s layout) in %s, with the manifest and the CreateTable and ImportTable requests (%s), to %s in %s (%s/s)\n",
		countOf(int(m.Items), "item"), countOf(int(m.Nodes), "node"), l.Name(), countOf(len(m.Files), "data file"), humanBytes(st.Bytes), s3out.loc, st.Took.Round(time.Millisecond), humanBytes(rate(st.Bytes, st.Took)))
	return nil
}

func rate(n int64, d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(float64(n) / d.Seconds())
}

// importPoll is the pause between two DescribeImport calls.
const importPoll = 15 * time.Second

// startImport starts DynamoDB's ImportTable once every shard has uploaded
// (the whole run has when it is not sharded), and follows it to the end.
// Every shard that finds the upload complete asks for the same import, with
// the same client token, and DynamoDB runs it once.
func startImport(c *cli.Context, s3out *s3Output, l layouts.Layout, shard importer.Shard) error {
	ctx := c.Context
	table := c.String("import-table")
	src, missing, err := importer.ShardsUploaded(ctx, s3out.client, s3out.loc, shard)
	if err != nil {
		return err
	}
	if src == nil {
		fmt.Fprintf(c.App.Writer, "shard %s uploaded; waiting for shards %s of %d: the last copy to finish starts the import into %s\n",
			shard, joinInts(missing), shard.Of, table)
		return nil
	}
	b, err := billing(c)
	if err != nil {
		return err
	}
	in, err := importer.ImportTableInput(table, l.Table(), b, s3out.loc.Bucket, s3out.loc.DataPrefix(), src.Token)
	if err != nil {
		return err
	}
	client, err := ddb.NewClient(ctx, awsOptions(c))
	if err != nil {
		return err
	}
	st, err := importer.StartImport(ctx, client, in)
	if err != nil {
		return fmt.Errorf("%w\nthe files are in %s; start the import by hand with: aws dynamodb import-table --cli-input-json file://import-table.json (%s)",
			err, s3out.loc, s3out.loc.Key("import-table.json"))
	}
	items := src.Items()
	fmt.Fprintf(c.App.ErrWriter, "import %s started: %d items from %s into the new table %s (about $%s at list price, no write capacity)\n",
		st.ARN, items, importer.ObjectURL(s3out.loc.Bucket, s3out.loc.DataPrefix()), table, money(pricing.Default.Import(src.RawBytes())))
	return followImport(ctx, c.App.Writer, c.App.ErrWriter, client, st.ARN, items, importPoll)
}

// followImport follows an import to its end with a line of progress at
// every poll, and reports how it ended.
func followImport(ctx context.Context, w, log io.Writer, api importer.ImportAPI, arn string, items int64, poll time.Duration) error {
	last, err := importer.FollowImport(ctx, api, arn, importer.FollowOptions{
		Poll: poll,
		OnStatus: func(s importer.ImportStatus) {
			if s.Done() {
				return
			}
			pct := ""
			if items > 0 {
				pct = fmt.Sprintf(" (%.0f%%)", 100*float64(s.ProcessedItems)/float64(items))
			}
			fmt.Fprintf(log, "importing into %s: %s, %d of %d items processed%s, %d errors, %s\n",
				s.Table, s.Status, s.ProcessedItems, items, pct, s.Errors, importElapsed(s).Round(time.Second))
		},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "imported %d items into %s in %s (%d processed, %d errors)\n",
		last.ImportedItems, last.Table, importElapsed(last).Round(time.Second), last.ProcessedItems, last.Errors)
	if last.Errors > 0 {
		where := "the import's CloudWatch log group"
		if last.LogGroup != "" {
			where = "CloudWatch log group " + last.LogGroup
		}
		fmt.Fprintf(log, "%d items could not be imported; they are described in %s\n", last.Errors, where)
		return errDifferences
	}
	return nil
}

func importElapsed(s importer.ImportStatus) time.Duration {
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
