package importer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/s3io"
)

// S3Output is where LoadFiles uploads: an S3 location checked, before the
// input is read, to hold nothing the run would mix with.
type S3Output struct {
	Loc    s3io.Location
	Client *s3.Client
}

// OpenS3Output makes the S3 client for loc and checks that the location
// holds no files of another run (see CheckS3Output).
func OpenS3Output(ctx context.Context, loc s3io.Location, opts S3Options, shard Shard) (*S3Output, error) {
	client, err := NewS3Client(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := CheckS3Output(ctx, client, loc, shard); err != nil {
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
	Billing     Billing
	AWS         ddb.AWSOptions
	// Poll is the pause between two DescribeImport calls (15 s).
	Poll time.Duration

	// OnStaged is told the files are written, before they are uploaded.
	OnStaged func(*Manifest)
	// OnUpload is told the upload's progress after each file.
	OnUpload func(UploadStats)
	// OnImportStarted is told the import began; OnImportStatus is told
	// its status at every poll until it ends.
	OnImportStarted func(ImportStarted)
	OnImportStatus  func(ImportStatus)
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
	Manifest *Manifest
	// Dir is where the files were written (a temporary directory, removed
	// since, with S3).
	Dir string
	// Upload is the upload's (nil without S3).
	Upload *UploadStats
	// Waiting lists the shards that have not finished uploading: the last
	// copy to finish starts the import.
	Waiting []int
	// Import is the import's last status (nil when none was started).
	Import *ImportStatus
	Took   time.Duration
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
		// UploadImportFiles).
		tmp, err := os.MkdirTemp("", "treeport-import-*")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		res.Dir = filepath.Join(tmp, "out")
	}
	fo := opts.Files
	fo.Dir = res.Dir
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
	st, err := UploadImportFiles(ctx, opts.S3.Client, res.Dir, m, l.Table(), UploadOptions{
		To: opts.S3.Loc, Shard: shard, OnFile: opts.OnUpload,
	})
	if err != nil {
		return nil, err
	}
	res.Upload = &st
	if opts.ImportTable == "" {
		return res, nil
	}
	return res, startImport(ctx, opts, res)
}

// startImport starts DynamoDB's ImportTable once every shard has uploaded,
// and follows it to the end.
func startImport(ctx context.Context, opts LoadFilesOptions, res *LoadFilesResult) error {
	loc, shard, table := opts.S3.Loc, opts.Files.Emit.Shard, opts.ImportTable
	src, missing, err := ShardsUploaded(ctx, opts.S3.Client, loc, shard)
	if err != nil {
		return err
	}
	if src == nil {
		res.Waiting = missing
		return nil
	}
	in, err := ImportTableInput(table, opts.Files.Emit.Layout.Table(), opts.Billing, loc.Bucket, loc.DataPrefix(), src.Token)
	if err != nil {
		return err
	}
	client, err := ddb.NewClient(ctx, opts.AWS)
	if err != nil {
		return err
	}
	st, err := StartImport(ctx, client, in)
	if err != nil {
		return fmt.Errorf("%w\nthe files are in %s; start the import by hand with: aws dynamodb import-table --cli-input-json file://import-table.json (%s)",
			err, loc, loc.Key("import-table.json"))
	}
	if opts.OnImportStarted != nil {
		opts.OnImportStarted(ImportStarted{ARN: st.ARN, Items: src.Items(), Source: s3io.ObjectURL(loc.Bucket, loc.DataPrefix()),
			Table: table, RawBytes: src.RawBytes()})
	}
	last, err := FollowImport(ctx, client, st.ARN, FollowOptions{
		Poll: opts.Poll,
		OnStatus: func(s ImportStatus) {
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
