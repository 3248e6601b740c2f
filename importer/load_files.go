package importer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/importer/bulkjob"
	"github.com/treeport/treeport/importer/importfiles"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/ddbtable"
	"github.com/treeport/treeport/internal/s3io"
)

// S3Output is where LoadFiles uploads: an S3 location checked, before the
// input is read, to hold nothing the run would mix with.
type S3Output struct {
	Loc    s3io.Location
	Client *s3.Client
}

// OpenS3Output makes the S3 client for loc and checks that the location
// holds no files of another run (see importfiles.CheckS3Output).
func OpenS3Output(ctx context.Context, loc s3io.Location, opts importfiles.S3Options, shard ddbwrite.Shard) (*S3Output, error) {
	client, err := importfiles.NewS3Client(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := importfiles.CheckS3Output(ctx, client, loc, shard); err != nil {
		return nil, err
	}
	return &S3Output{Loc: loc, Client: client}, nil
}

// LoadFilesOptions configure LoadFiles.
type LoadFilesOptions struct {
	// Files say what to write: Files.Dir is the directory, unless S3 is
	// set (the files are then staged in a temporary directory).
	Files FilesOptions
	// S3, when set, is where the files are uploaded.
	S3 *S3Output
	// ImportTable, with S3, is the new table DynamoDB's import from S3
	// loads, once every shard has uploaded; LoadFiles follows the import to
	// its end. Billing is its capacity; AWS makes its DynamoDB client.
	ImportTable string
	Billing     ddbtable.Billing
	AWS         ddb.AWSOptions
	// BulkPut, with S3, is the existing table DynamoDB's bulk put loads
	// from the files (StartBulkPutItems), once every shard has uploaded;
	// LoadFiles follows it to its end. MaxWCU, when above 0, caps its
	// write rate (at least bulkjob.MinBulkPutWCU). The table must be checked by
	// the caller first (CheckTable), before the input is read.
	BulkPut string
	MaxWCU  int64
	// Poll is the pause between two DescribeImport or
	// DescribeBulkOperation calls (15 s).
	Poll time.Duration

	// OnStaged is told the files are written, before they are uploaded.
	OnStaged func(*importfiles.Manifest)
	// OnUpload is told the upload's progress after each file.
	OnUpload func(importfiles.UploadStats)
	// OnImportStarted is told the import began; OnImportStatus is told
	// its status at every poll until it ends.
	OnImportStarted func(ImportStarted)
	OnImportStatus  func(bulkjob.ImportStatus)
	// OnBulkPutStarted is told the bulk put began (or was found running);
	// OnBulkPutStatus is told its status at every poll until it ends.
	OnBulkPutStarted func(BulkPutStarted)
	OnBulkPutStatus  func(bulkjob.BulkPutStatus)
}

// BulkPutStarted describes a bulk put just started, or found running
// under the same client token.
type BulkPutStarted struct {
	ARN    string
	Items  int64  // in the files of every shard
	Source string // s3://BUCKET/PREFIX/data/
	Report string // s3://BUCKET/PREFIX/bulk-put-report/
	Table  string
	MaxWCU int64
}

// ImportStarted describes an import from S3 just started.
type ImportStarted struct {
	ARN      string
	Items    int64  // in the files of every shard
	Source   string // s3://BUCKET/PREFIX/data/
	Table    string
	RawBytes int64 // what the import bills
}

// LoadFilesResult is what LoadFiles did.
type LoadFilesResult struct {
	Manifest *importfiles.Manifest
	// Dir is where the files were written (a temporary directory, removed
	// since, with S3).
	Dir string
	// Upload is the upload's (nil without S3).
	Upload *importfiles.UploadStats
	// Waiting lists the shards that have not finished uploading: the last
	// copy to finish starts the import.
	Waiting []int
	// Import is the import's last status (nil when none was started).
	Import *bulkjob.ImportStatus
	// BulkPut is the bulk put's last status (nil when none was started);
	// Report is what its report of failed items holds, read when some
	// failed.
	BulkPut *bulkjob.BulkPutStatus
	Report  *bulkjob.BulkPutReport
	Took    time.Duration
}

// LoadFiles writes the items of in as the files DynamoDB's import from S3
// reads (see WriteImportFiles), to a directory or to S3, and with
// ImportTable starts DynamoDB's import once every shard of the run has
// uploaded (every shard that finds the upload complete asks for the same
// import, with the same client token, and DynamoDB runs it once), and
// follows it to its end. An import that ends with items it could not
// import is no error here: the result says how many.
func LoadFiles(ctx context.Context, in *Input, opts LoadFilesOptions) (*LoadFilesResult, error) {
	started := time.Now()
	res := &LoadFilesResult{Dir: opts.Files.Dir}
	if opts.S3 != nil {
		// The files are staged on local disk, then uploaded (see
		// importfiles.UploadImportFiles), in --tmp-dir when there is one:
		// they are the whole output.
		tmp, err := os.MkdirTemp(in.Opts.OutOfCore.Dir(), "treeport-import-*")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		res.Dir = filepath.Join(tmp, "out")
	}
	fo := opts.Files
	fo.Dir = res.Dir
	if opts.S3 != nil && opts.BulkPut != "" && fo.Spread == 0 {
		// A bulk put wants its input in random key order.
		fo.Spread = importfiles.BulkPutSpread
	}
	m, err := WriteImportFiles(ctx, in, fo)
	if err != nil {
		return nil, err
	}
	res.Manifest = m
	res.Took = time.Since(started)
	if opts.S3 == nil {
		return res, nil
	}
	if opts.OnStaged != nil {
		opts.OnStaged(m)
	}
	l, shard := fo.Emit.Layout, fo.Emit.Shard
	st, err := importfiles.UploadImportFiles(ctx, opts.S3.Client, res.Dir, m, l.Table(), importfiles.UploadOptions{
		To: opts.S3.Loc, Shard: shard, Billing: fo.Billing, OnFile: opts.OnUpload,
	})
	if err != nil {
		return nil, err
	}
	res.Upload = &st
	switch {
	case opts.BulkPut != "":
		return res, startBulkPut(ctx, opts, res, nil)
	case opts.ImportTable != "":
		return res, startImport(ctx, opts, res)
	}
	return res, nil
}

// UploadedBefore returns the complete upload in opts.S3 of an earlier run
// of the same job (every shard's manifest there, made from the same input
// path with the same settings), or nil when there is none. A rerun of a
// bulk put finds it, and follows the bulk put that upload started instead
// of staging the files again: the same manifests give the same client
// token, so DynamoDB returns the bulk put it runs (for 8 hours) rather
// than starting a second one.
func UploadedBefore(ctx context.Context, opts LoadFilesOptions, input string) (*importfiles.ImportSource, error) {
	src, _, err := importfiles.ShardsUploaded(ctx, opts.S3.Client, opts.S3.Loc, opts.Files.Emit.Shard)
	if err != nil || src == nil {
		return nil, err
	}
	want := &importfiles.Manifest{Layout: opts.Files.Emit.Layout.Name(), Table: opts.Files.Table, Settings: opts.Files.Settings}
	for _, m := range src.Manifests {
		if m.Input != input || importfiles.SameRun(m, want) != nil {
			return nil, nil
		}
	}
	return src, nil
}

// ResumeBulkPut starts (or finds running) and follows the bulk put of an
// upload found by UploadedBefore.
func ResumeBulkPut(ctx context.Context, src *importfiles.ImportSource, opts LoadFilesOptions) (*LoadFilesResult, error) {
	started := time.Now()
	res := &LoadFilesResult{Manifest: src.Manifests[0]}
	err := startBulkPut(ctx, opts, res, src)
	res.Took = time.Since(started)
	return res, err
}

// startBulkPut starts DynamoDB's StartBulkPutItems once every shard has
// uploaded, follows it to the end, and reads its report of failed items.
func startBulkPut(ctx context.Context, opts LoadFilesOptions, res *LoadFilesResult, src *importfiles.ImportSource) error {
	loc, shard, table := opts.S3.Loc, opts.Files.Emit.Shard, opts.BulkPut
	if src == nil {
		var missing []int
		var err error
		if src, missing, err = importfiles.ShardsUploaded(ctx, opts.S3.Client, loc, shard); err != nil {
			return err
		}
		if src == nil {
			res.Waiting = missing
			return nil
		}
	}
	report := loc.Key(bulkjob.ReportDir)
	in, err := bulkjob.BulkPutInput(table, loc.Bucket, loc.DataPrefix(), report, src.Token, opts.MaxWCU)
	if err != nil {
		return err
	}
	client, err := ddb.NewClient(ctx, opts.AWS)
	if err != nil {
		return err
	}
	st, err := bulkjob.StartBulkPut(ctx, client, in)
	if err != nil {
		return fmt.Errorf("%w\nthe files are in %s", err, loc)
	}
	if opts.OnBulkPutStarted != nil {
		opts.OnBulkPutStarted(BulkPutStarted{ARN: st.ARN, Items: src.Items(), Source: s3io.ObjectURL(loc.Bucket, loc.DataPrefix()),
			Report: s3io.ObjectURL(loc.Bucket, report), Table: table, MaxWCU: opts.MaxWCU})
	}
	last, err := bulkjob.FollowBulkPut(ctx, client, st.ARN, bulkjob.BulkFollowOptions{
		Poll: opts.Poll,
		OnStatus: func(s bulkjob.BulkPutStatus) {
			if !s.Done() && opts.OnBulkPutStatus != nil {
				opts.OnBulkPutStatus(s)
			}
		},
	})
	if last.ARN != "" {
		res.BulkPut = &last
	}
	if last.FailedItems > 0 || last.Status == types.BulkOperationStatusCompletedWithErrors {
		bucket, prefix := last.ReportBucket, last.ReportPrefix
		if bucket == "" {
			bucket, prefix = loc.Bucket, report
		}
		rep, rerr := bulkjob.ReadBulkPutReport(ctx, opts.S3.Client, bucket, prefix, 5)
		res.Report = rep
		if err == nil && rerr != nil {
			err = fmt.Errorf("the bulk put ended %s with %d failed items, but its report could not be read: %w", last.Status, last.FailedItems, rerr)
		}
	}
	return err
}

// startImport starts DynamoDB's ImportTable once every shard has uploaded,
// and follows it to the end.
func startImport(ctx context.Context, opts LoadFilesOptions, res *LoadFilesResult) error {
	loc, shard, table := opts.S3.Loc, opts.Files.Emit.Shard, opts.ImportTable
	src, missing, err := importfiles.ShardsUploaded(ctx, opts.S3.Client, loc, shard)
	if err != nil {
		return err
	}
	if src == nil {
		res.Waiting = missing
		return nil
	}
	in, err := bulkjob.ImportTableInput(table, opts.Files.Emit.Layout.Table(), opts.Billing, loc.Bucket, loc.DataPrefix(), src.Token)
	if err != nil {
		return err
	}
	client, err := ddb.NewClient(ctx, opts.AWS)
	if err != nil {
		return err
	}
	st, err := bulkjob.StartImport(ctx, client, in)
	if err != nil {
		return fmt.Errorf("%w\nthe files are in %s; start the import by hand with: aws dynamodb import-table --cli-input-json file://import-table.json (%s)",
			err, loc, loc.Key("import-table.json"))
	}
	if opts.OnImportStarted != nil {
		opts.OnImportStarted(ImportStarted{ARN: st.ARN, Items: src.Items(), Source: s3io.ObjectURL(loc.Bucket, loc.DataPrefix()),
			Table: table, RawBytes: src.RawBytes()})
	}
	last, err := bulkjob.FollowImport(ctx, client, st.ARN, bulkjob.FollowOptions{
		Poll: opts.Poll,
		OnStatus: func(s bulkjob.ImportStatus) {
			if !s.Done() && opts.OnImportStatus != nil {
				opts.OnImportStatus(s)
			}
		},
	})
	if err != nil {
		return err
	}
	res.Import = &last
	return nil
}
