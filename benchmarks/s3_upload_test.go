package benchmarks

//lint:file-ignore SA1019 the baseline is the SDK's feature/s3/manager uploader, which treeport itself uses.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"

	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/importer/importfiles"
	"github.com/treeport/treeport/internal/s3io"
	"github.com/treeport/treeport/internal/testserver/s3local"
	"github.com/treeport/treeport/layouts"
)

// s3UploadNodes is the size of the forest whose import files the S3 upload
// benchmarks send: its path-layout files are about 40 MiB of gzip.
const s3UploadNodes = 1_000_000

var (
	uploadOnce  sync.Once
	uploadDir   string
	uploadFiles *importfiles.Manifest
	uploadErr   error
)

// importFilesForUpload writes, once per process, the import files both S3
// upload benchmarks send.
func importFilesForUpload(b *testing.B) (string, *importfiles.Manifest, layouts.Layout) {
	b.Helper()
	l, err := layouts.New(layouts.PathName, layouts.Options{})
	if err != nil {
		b.Fatal(err)
	}
	uploadOnce.Do(func() {
		path := randomCSVN(b, s3UploadNodes)
		in, err := importer.ReadInput(context.Background(), importer.InputOptions{Path: path, Source: benchSourceOptions()})
		if err != nil {
			uploadErr = err
			return
		}
		if p := in.CheckLayout(l); len(p) > 0 {
			uploadErr = fmt.Errorf("%d problems, first %v", len(p), p[0])
			return
		}
		uploadDir = filepath.Join(csvDir, "upload")
		uploadFiles, uploadErr = importer.WriteImportFiles(context.Background(), in, importer.FilesOptions{
			Dir: uploadDir, Table: "Bench", ItemsPerFile: 125_000, Emit: importer.EmitOptions{Layout: l},
		})
	})
	if uploadErr != nil {
		b.Fatal(uploadErr)
	}
	return uploadDir, uploadFiles, l
}

// uploadBytes is the size of every file UploadImportFiles sends.
func uploadBytes(b *testing.B, dir string, m *importfiles.Manifest) int64 {
	var n int64
	for _, rel := range append(dataNames(m), "create-table.json", "import-table.json", "manifest.json") {
		fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			b.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

func dataNames(m *importfiles.Manifest) []string {
	var names []string
	for _, f := range m.Files {
		names = append(names, f.Name)
	}
	return names
}

// BenchmarkS3Upload compares, on s3rver, treeport's upload of a directory of
// import files (importfiles.UploadImportFiles) with the same files sent by the
// SDK's transfer manager with its default settings, one file at a time and
// four at a time. The figures are in S3_UPLOAD.md.
func BenchmarkS3Upload(b *testing.B) {
	client := s3local.Client(b, s3local.Endpoint(b))
	bucket := s3local.NewBucket(b, client)
	dir, m, l := importFilesForUpload(b)
	size := uploadBytes(b, dir, m)
	run := 0
	prefix := func() string { run++; return fmt.Sprintf("run-%d", run) }

	b.Run("treeport", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			loc := s3io.Location{Bucket: bucket, Prefix: prefix()}
			if _, err := importfiles.UploadImportFiles(context.Background(), client, dir, m, l.Table(), importfiles.UploadOptions{To: loc}); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The raw uploads: the SDK's transfer manager with its default part
	// size and concurrency, one file after the other, and then four files
	// at once, as treeport sends them.
	for _, files := range []int{1, 4} {
		b.Run(fmt.Sprintf("transfer-manager-%d-files", files), func(b *testing.B) {
			b.SetBytes(size)
			up := manager.NewUploader(client)
			for b.Loop() {
				p := prefix()
				g := new(errgroup.Group)
				g.SetLimit(files)
				for _, rel := range append(dataNames(m), "create-table.json", "import-table.json", "manifest.json") {
					g.Go(func() error {
						f, err := os.Open(filepath.Join(dir, filepath.FromSlash(rel)))
						if err != nil {
							return err
						}
						defer f.Close()
						_, err = up.Upload(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(p + "/" + rel), Body: f})
						return err
					})
				}
				if err := g.Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
