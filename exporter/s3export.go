package exporter

//lint:file-ignore SA1019 feature/s3/manager is the transfer manager the SDK ships as a stable module; its successor, feature/s3/transfermanager, is not a dependency of treeport yet.

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"

	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/s3io"
	"github.com/treeport/treeport/records/infile"
)

// Reading an ExportTableToPointInTime export from S3 (export --in
// s3://bucket/prefix/AWSDynamoDB/<export id>/): DownloadExport copies the
// export's manifests and data files into a local directory with the layout
// ddbitems.Open reads, and Export then reads that directory as it
// reads any export directory. The files are fetched with the S3 transfer
// manager, several at once and large ones in parallel ranges, so the copy runs
// at the network's speed; the records are held in memory to be sorted anyway,
// so reading from disk costs nothing extra. Nothing reads the table: an
// export from S3 spends no read capacity.

// S3ExportAPI is the part of the S3 client that DownloadExport uses;
// *s3.Client satisfies it.
type S3ExportAPI interface {
	manager.DownloadAPIClient
	manager.ListObjectsV2APIClient
}

var _ S3ExportAPI = (*s3.Client)(nil)

// ErrNotAnExport marks an S3 location that holds no DynamoDB export data.
var ErrNotAnExport = errors.New("exporter: not a DynamoDB export")

// DownloadOptions configure DownloadExport. The zero value works.
type DownloadOptions struct {
	// Transfer is how many data files are fetched at once (default 4) and
	// the ranged GETs of one file (default 16 MiB, 4 in flight).
	s3io.Transfer
	// OnFile, when set, is called after each data file is fetched, never
	// twice at once.
	OnFile func(DownloadStats)
}

// DownloadStats count what DownloadExport fetched.
type DownloadStats struct {
	Files int   // data files fetched
	Bytes int64 // their compressed size
	// Items is the item count the export's manifest gives (0 without one).
	Items int64
	Took  time.Duration
}

// exportSummary is the part of manifest-summary.json that decides whether
// treeport can read the export.
type exportSummary struct {
	OutputFormat string `json:"outputFormat"`
	ExportType   string `json:"exportType"`
	ItemCount    int64  `json:"itemCount"`
}

// exportFile is one line of manifest-files.json.
type exportFile struct {
	ItemCount     int64  `json:"itemCount"`
	MD5Checksum   string `json:"md5Checksum"`
	DataFileS3Key string `json:"dataFileS3Key"`
}

// DownloadExport fetches the DynamoDB export at loc, the folder
// s3://bucket/prefix/AWSDynamoDB/<export id>/ that ExportTableToPointInTime
// writes, into dir (which it creates): manifest-files.json,
// manifest-summary.json when there is one, and each data file the manifest
// names, into dir/data/ under its base name. A data file whose MD5 differs
// from the manifest's md5Checksum is an error. Without manifest-files.json,
// every data/*.json.gz under loc is fetched. An Amazon Ion or incremental
// export is refused: treeport reads full exports in DynamoDB JSON. The
// caller removes dir.
func DownloadExport(ctx context.Context, api S3ExportAPI, loc s3io.Location, dir string, opts DownloadOptions) (DownloadStats, error) {
	started := time.Now()
	var st DownloadStats
	opts.Transfer = opts.Transfer.WithDefaults()
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return st, fmt.Errorf("exporter: %w", err)
	}

	summary, err := s3io.GetSmall(ctx, api, loc.Bucket, loc.Key("manifest-summary.json"), infile.MaxManifestBytes+1)
	switch {
	case s3io.IsNotFound(err):
	case err != nil:
		return st, s3Err("GetObject", s3io.ObjectURL(loc.Bucket, loc.Key("manifest-summary.json")), err)
	case len(summary) > infile.MaxManifestBytes:
		return st, manifestTooLong(loc.Bucket, loc.Key("manifest-summary.json"))
	default:
		var s exportSummary
		if err := json.Unmarshal(summary, &s); err != nil {
			return st, fmt.Errorf("exporter: %s: not the summary of a DynamoDB export: %v", s3io.ObjectURL(loc.Bucket, loc.Key("manifest-summary.json")), err)
		}
		if s.OutputFormat != "" && s.OutputFormat != "DYNAMODB_JSON" {
			return st, fmt.Errorf("%w in DynamoDB JSON: %s is an %s export; export the table again with --export-format DYNAMODB_JSON", ErrNotAnExport, loc, s.OutputFormat)
		}
		if s.ExportType != "" && s.ExportType != "FULL_EXPORT" {
			return st, fmt.Errorf("%w that holds a whole table: %s is an %s, which holds changes; use a full export", ErrNotAnExport, loc, s.ExportType)
		}
		st.Items = s.ItemCount
		if err := os.WriteFile(filepath.Join(dir, "manifest-summary.json"), summary, 0o644); err != nil {
			return st, fmt.Errorf("exporter: %w", err)
		}
	}

	files, err := exportFiles(ctx, api, loc, dir)
	if err != nil {
		return st, err
	}
	down := manager.NewDownloader(api, func(d *manager.Downloader) {
		d.PartSize = opts.PartSize
		d.Concurrency = opts.PartConcurrency
	})
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Files)
	for _, f := range files {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			n, err := fetch(gctx, down, loc, f, filepath.Join(dir, "data", path.Base(f.DataFileS3Key)))
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			st.Files++
			st.Bytes += n
			st.Took = time.Since(started)
			if opts.OnFile != nil {
				opts.OnFile(st)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return st, err
	}
	st.Took = time.Since(started)
	return st, nil
}

// exportFiles reads the export's manifest-files.json and copies it into dir;
// without one, it lists data/ instead.
func exportFiles(ctx context.Context, api S3ExportAPI, loc s3io.Location, dir string) ([]exportFile, error) {
	manifestURL := s3io.ObjectURL(loc.Bucket, loc.Key("manifest-files.json"))
	raw, err := s3io.GetSmall(ctx, api, loc.Bucket, loc.Key("manifest-files.json"), infile.MaxManifestBytes+1)
	if s3io.IsNotFound(err) {
		return listDataFiles(ctx, api, loc)
	}
	if err != nil {
		return nil, s3Err("GetObject", manifestURL, err)
	}
	if len(raw) > infile.MaxManifestBytes {
		return nil, manifestTooLong(loc.Bucket, loc.Key("manifest-files.json"))
	}
	var files []exportFile
	seen := map[string]string{}
	for i, line := range bytes.Split(raw, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var f exportFile
		if err := json.Unmarshal(line, &f); err != nil || f.DataFileS3Key == "" {
			return nil, fmt.Errorf("exporter: %s:%d: want a JSON object with a dataFileS3Key", manifestURL, i+1)
		}
		base := path.Base(f.DataFileS3Key)
		if prev, dup := seen[base]; dup {
			return nil, fmt.Errorf("exporter: %s:%d: data files %s and %s have the same name", manifestURL, i+1, prev, f.DataFileS3Key)
		}
		seen[base] = f.DataFileS3Key
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: %s names no data files", ErrNotAnExport, manifestURL)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest-files.json"), raw, 0o644); err != nil {
		return nil, fmt.Errorf("exporter: %w", err)
	}
	return files, nil
}

// listDataFiles lists data/*.json.gz and data/*.json under loc, for an
// export without its manifest. With none, the error lists the exports found
// below loc, if loc is the export prefix rather than an export's folder.
func listDataFiles(ctx context.Context, api S3ExportAPI, loc s3io.Location) ([]exportFile, error) {
	var files []exportFile
	p := s3.NewListObjectsV2Paginator(api, &s3.ListObjectsV2Input{Bucket: aws.String(loc.Bucket), Prefix: aws.String(loc.Key("data/"))})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, s3Err("ListObjectsV2", loc.String(), err)
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			if strings.HasSuffix(k, ".json.gz") || strings.HasSuffix(k, ".json") {
				files = append(files, exportFile{DataFileS3Key: k})
			}
		}
	}
	if len(files) > 0 {
		return files, nil
	}
	var found []string
	out, err := api.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
		Bucket: aws.String(loc.Bucket), Prefix: aws.String(loc.Key("AWSDynamoDB/")), Delimiter: aws.String("/"), MaxKeys: aws.Int32(10),
	})
	if err == nil {
		for _, cp := range out.CommonPrefixes {
			found = append(found, "s3://"+loc.Bucket+"/"+aws.ToString(cp.Prefix))
		}
	}
	hint := "give the export's folder, s3://bucket/prefix/AWSDynamoDB/<export id>/"
	if len(found) > 0 {
		hint = "exports found below it: " + strings.Join(found, ", ")
	}
	return nil, fmt.Errorf("%w: %s has no manifest-files.json and no data/*.json.gz; %s", ErrNotAnExport, loc, hint)
}

// fetch downloads one data file to dst and checks its MD5 against the
// manifest's. It returns the file's size.
func fetch(ctx context.Context, down *manager.Downloader, loc s3io.Location, f exportFile, dst string) (int64, error) {
	// The manifest's key names the file in the bucket; some writers leave
	// the export prefix out of it, so the file is looked for in the
	// export's own data/ folder by its base name.
	key := loc.Key("data/" + path.Base(f.DataFileS3Key))
	url := s3io.ObjectURL(loc.Bucket, key)
	out, err := os.Create(dst)
	if err != nil {
		return 0, fmt.Errorf("exporter: %w", err)
	}
	n, err := down.Download(ctx, out, &s3.GetObjectInput{Bucket: aws.String(loc.Bucket), Key: aws.String(key)})
	if err != nil {
		out.Close()
		return 0, s3Err("download", url, err)
	}
	if f.MD5Checksum != "" {
		h := md5.New()
		_, err := out.Seek(0, io.SeekStart)
		if err == nil {
			_, err = io.Copy(h, out)
		}
		if err != nil {
			out.Close()
			return 0, fmt.Errorf("exporter: checking %s: %w", dst, err)
		}
		if got := base64.StdEncoding.EncodeToString(h.Sum(nil)); got != f.MD5Checksum {
			out.Close()
			return 0, fmt.Errorf("exporter: %s: MD5 %s, but manifest-files.json says %s: the file changed or was cut short; download the export again", url, got, f.MD5Checksum)
		}
	}
	if err := out.Close(); err != nil {
		return 0, fmt.Errorf("exporter: %w", err)
	}
	return n, nil
}

// s3Err is s3io.Wrap, the failure matching ErrService.
// manifestTooLong is the error of an export manifest over
// infile.MaxManifestBytes, which is read whole and so is not read at all.
func manifestTooLong(bucket, key string) error {
	return fmt.Errorf("%w: %s is over %s, the limit of an export's manifest; it is not the manifest of a DynamoDB export",
		infile.ErrInvalid, s3io.ObjectURL(bucket, key), infile.LimitText(infile.MaxManifestBytes))
}

func s3Err(op, url string, err error) error { return s3io.Wrap(op, url, err, ddb.ErrService) }
