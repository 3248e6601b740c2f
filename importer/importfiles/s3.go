package importfiles

//lint:file-ignore SA1019 feature/s3/manager is the transfer manager the SDK ships as a stable module; its successor, feature/s3/transfermanager, is not a dependency of treeport yet.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/importer/bulkjob"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/ddbtable"
	"github.com/treeport/treeport/internal/s3io"
	"github.com/treeport/treeport/layouts"
)

// How `import --out s3://bucket/prefix` works: WriteImportFiles writes the
// files of SPEC §6 to a local staging directory, and UploadImportFiles then
// uploads them with the S3 transfer manager, several files at once and each
// large file in parallel multipart parts. Staging first keeps one code path
// for local and S3 output, gives the upload exact sizes and checksums (in the
// manifest) and lets a failed upload be retried from the files on disk. The
// price is local disk for the compressed output, about a tenth of the
// uncompressed items.
//
// The objects:
//
//	prefix/data/part-NNNNN.json.gz      the items: what ImportTable reads (S3KeyPrefix prefix/data/)
//	prefix/create-table.json            CreateTable request
//	prefix/import-table.json            ImportTable request, naming this bucket and prefix/data/
//	prefix/manifest.json                uploaded last: its presence says the upload is complete
//
// A shard k of N (--shard k/N) writes data/shard-k-of-N-part-NNNNN.json.gz and
// manifest.shard-k-of-N.json instead, so that N copies can share one prefix
// and one ImportTable reads every shard's items.

// S3Options say how to reach S3. Empty fields leave the SDK's defaults: the
// usual environment variables, shared config files and credential chain.
type S3Options struct {
	// EndpointURL is an S3-compatible endpoint (--s3-endpoint-url), e.g.
	// s3rver or MinIO. With it, requests use path-style addressing
	// (http://host/bucket/key) and checksums only where the API requires
	// them, which is what such servers understand.
	EndpointURL string
	Region      string
	Profile     string
	// MaxConns is the number of connections kept open (default 64).
	MaxConns int
}

// NewS3Client returns an S3 client configured from opts and the SDK's usual
// sources.
func NewS3Client(ctx context.Context, opts S3Options) (*s3.Client, error) {
	cfg, err := ddb.LoadConfig(ctx, ddb.ConfigOptions{
		AWSOptions: ddb.AWSOptions{EndpointURL: opts.EndpointURL, Region: opts.Region, Profile: opts.Profile, MaxConns: opts.MaxConns},
		Service:    "S3",
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 5 })
		},
		// An S3-compatible server takes any credentials.
		StandInCredentials: opts.EndpointURL != "",
	})
	if err != nil {
		return nil, err
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if opts.EndpointURL != "" {
			o.BaseEndpoint = aws.String(opts.EndpointURL)
			o.UsePathStyle = true
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	}), nil
}

// manifestName is the name of the manifest of shard s in an S3 prefix:
// manifest.json for the whole, manifest.shard-k-of-N.json for a shard.
func manifestName(s ddbwrite.Shard) string { return s.FileName("manifest.json") }

// S3API is the part of the S3 client that uploads and reads import files;
// *s3.Client satisfies it.
type S3API interface {
	manager.UploadAPIClient
	manager.DownloadAPIClient
	manager.ListObjectsV2APIClient
}

var _ S3API = (*s3.Client)(nil)

// CheckS3Output fails, before anything is read or written, when the S3
// location already holds files that this run would mix with: for the whole
// (no shard), any object under the prefix; for shard k of N, the objects of
// shard k itself, of an unsharded run, or of a run with another N. The other
// shards of the same N may have uploaded already. The error matches
// ErrOutputNotEmpty. A bucket that does not exist, or cannot be listed, is a
// service error.
func CheckS3Output(ctx context.Context, api manager.ListObjectsV2APIClient, loc s3io.Location, shard ddbwrite.Shard) error {
	root := ""
	if loc.Prefix != "" {
		root = loc.Prefix + "/"
	}
	mine := shard.Name()
	ofN := fmt.Sprintf("-of-%d", shard.Of)
	p := s3.NewListObjectsV2Paginator(api, &s3.ListObjectsV2Input{Bucket: aws.String(loc.Bucket), Prefix: aws.String(root)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return s3Error("ListObjectsV2", loc.String(), err)
		}
		for _, o := range page.Contents {
			rel := strings.TrimPrefix(aws.ToString(o.Key), root)
			if shard.Of <= 1 {
				return fmt.Errorf("%w: %s holds %s already (choose a new prefix, or empty it first)", ErrOutputNotEmpty, loc, rel)
			}
			other, ok := ShardObject(rel, ofN)
			if !ok || other == mine {
				return fmt.Errorf("%w: %s holds %s already, which shard %s would mix with (choose a new prefix, or empty it first)",
					ErrOutputNotEmpty, loc, rel, shard)
			}
		}
	}
	return nil
}

// shardObject matches the objects a shard writes: its data files and its
// manifest. create-table.json and import-table.json are the same for every
// shard, so any shard may overwrite them.
var shardObject = regexp.MustCompile(`^(?:data/(shard-\d+-of-\d+)-part-\d+\.json\.gz|manifest\.(shard-\d+-of-\d+)\.json)$`)

// ShardObject reports whether rel is an object a shard of the same N
// writes, and which shard's it is ("" for the shared request files).
func ShardObject(rel, ofN string) (string, bool) {
	if rel == "create-table.json" || rel == "import-table.json" {
		return "", true
	}
	m := shardObject.FindStringSubmatch(rel)
	if m == nil {
		return "", false
	}
	name := m[1] + m[2]
	return name, strings.HasSuffix(name, ofN)
}

// UploadOptions configure UploadImportFiles.
type UploadOptions struct {
	// To is where the files go.
	To s3io.Location
	// Shard names this copy's manifest (see s3io.Location); its data files are
	// named by WriteImportFiles already.
	Shard ddbwrite.Shard
	// Billing is the capacity import-table.json asks for, as
	// WriteImportFiles was told.
	Billing ddbtable.Billing
	// Transfer is how many files are uploaded at once and the multipart
	// parts of each (4 files, parts of 16 MiB, 4 parts in flight); a file
	// smaller than a part is one PutObject.
	s3io.Transfer
	// OnFile, when set, is called after each object is uploaded, from any
	// goroutine but never twice at once.
	OnFile func(st UploadStats)
}

// UploadStats count what an upload did.
type UploadStats struct {
	Objects int           // objects uploaded
	Bytes   int64         // bytes uploaded
	Took    time.Duration // wall time
}

// UploadImportFiles uploads the directory WriteImportFiles wrote (described
// by m) to opts.To: the data files first, several at once, then
// create-table.json and import-table.json (rewritten to name the bucket and
// the data prefix instead of placeholders), and the manifest last, so that
// its presence says the upload is complete. On failure the manifest is not
// uploaded; a multipart upload in progress is aborted. spec is the layout's
// table, for import-table.json.
func UploadImportFiles(ctx context.Context, api S3API, dir string, m *Manifest, spec layouts.TableSpec, opts UploadOptions) (UploadStats, error) {
	started := time.Now()
	opts.Transfer = opts.Transfer.WithDefaults()
	importReq, err := bulkjob.ImportTableJSON(m.Table, spec, opts.Billing, opts.To.Bucket, opts.To.DataPrefix())
	if err != nil {
		return UploadStats{}, err
	}
	if err := WriteFile(filepath.Join(dir, "import-table.json"), importReq); err != nil {
		return UploadStats{}, fmt.Errorf("importfiles: %w", err)
	}
	up := manager.NewUploader(api, func(u *manager.Uploader) {
		u.PartSize = opts.PartSize
		u.Concurrency = opts.PartConcurrency
	})
	var (
		mu sync.Mutex
		st UploadStats
	)
	put := func(ctx context.Context, rel, key, contentType string) error {
		f, err := os.Open(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return fmt.Errorf("importfiles: %w", err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("importfiles: %w", err)
		}
		if _, err := up.Upload(ctx, &s3.PutObjectInput{
			Bucket: aws.String(opts.To.Bucket), Key: aws.String(key), Body: f,
			ContentType: aws.String(contentType),
		}); err != nil {
			return s3Error("upload of "+rel, "s3://"+opts.To.Bucket+"/"+key, err)
		}
		mu.Lock()
		defer mu.Unlock()
		st.Objects++
		st.Bytes += fi.Size()
		st.Took = time.Since(started)
		if opts.OnFile != nil {
			opts.OnFile(st)
		}
		return nil
	}
	// The biggest files first, so that the last one to finish is small.
	files := append([]DataFile(nil), m.Files...)
	sort.SliceStable(files, func(i, j int) bool { return files[i].Bytes > files[j].Bytes })
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Files)
	for _, f := range files {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return put(gctx, f.Name, opts.To.Key(f.Name), "application/gzip") })
	}
	if err := g.Wait(); err != nil {
		return st, err
	}
	for _, rel := range []string{"create-table.json", "import-table.json"} {
		if err := put(ctx, rel, opts.To.Key(rel), "application/json"); err != nil {
			return st, err
		}
	}
	if err := put(ctx, "manifest.json", opts.To.Key(manifestName(opts.Shard)), "application/json"); err != nil {
		return st, err
	}
	st.Took = time.Since(started)
	return st, nil
}

// ImportSource is the uploaded files of every shard of a sharded run, or of
// one unsharded run, found complete in S3 by ShardsUploaded.
type ImportSource struct {
	Loc       s3io.Location
	Manifests []*Manifest // in shard order
	// Token is an idempotency token for ImportTable derived from the
	// manifests' bytes: every shard that finds the upload complete starts
	// the same import with it, and DynamoDB runs it once.
	Token string
}

// Items is the number of items of every shard.
func (s *ImportSource) Items() int64 {
	var n int64
	for _, m := range s.Manifests {
		n += m.Items
	}
	return n
}

// RawBytes is the uncompressed size of every shard's data, which is what
// ImportTable bills.
func (s *ImportSource) RawBytes() int64 {
	var n int64
	for _, m := range s.Manifests {
		n += m.RawBytes
	}
	return n
}

// ShardsUploaded looks for the manifests of every shard of shard.Of in loc
// (for the whole, the one manifest.json). It returns nil and the shards still
// missing when some have not finished uploading, and the complete source
// otherwise. Manifests that disagree (another layout or table, other flags)
// are an error: those shards were not run as one job.
func ShardsUploaded(ctx context.Context, api S3API, loc s3io.Location, shard ddbwrite.Shard) (*ImportSource, []int, error) {
	n := max(shard.Of, 1)
	src := &ImportSource{Loc: loc, Manifests: make([]*Manifest, n)}
	h := sha256.New()
	var missing []int
	var first *Manifest
	for k := range n {
		s := ddbwrite.Shard{K: k, Of: shard.Of}
		key := loc.Key(manifestName(s))
		m, raw, err := readManifest(ctx, api, loc.Bucket, key)
		if s3io.IsNotFound(err) {
			missing = append(missing, k)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if first == nil {
			first = m
		} else if err := SameRun(first, m); err != nil {
			return nil, nil, fmt.Errorf("importfiles: s3://%s/%s: %v; every shard must run with the same input and flags", loc.Bucket, key, err)
		}
		src.Manifests[k] = m
		fmt.Fprintf(h, "%s\x00%d\x00", key, len(raw))
		h.Write(raw)
	}
	if len(missing) > 0 {
		return nil, missing, nil
	}
	src.Token = hex.EncodeToString(h.Sum(nil))[:32]
	return src, nil, nil
}

// manifestReads is how many times readManifest reads a manifest that does
// not parse before it calls it broken, and manifestPause the first pause
// between reads (doubled each time).
var (
	manifestReads = 5
	manifestPause = 100 * time.Millisecond
)

// readManifest reads and parses one shard's manifest. Another copy may be
// writing it at that moment: S3 shows a whole object or none, but some
// S3-compatible stores (s3rver among them) answer a read during the write
// with an empty or cut body. A body that does not parse is read again a few
// times, over about 3 s, before it is called broken; a missing object is the
// SDK's not-found error, for the caller to test with s3io.IsNotFound.
func readManifest(ctx context.Context, api S3API, bucket, key string) (*Manifest, []byte, error) {
	pause := manifestPause
	for try := 1; ; try++ {
		raw, err := s3io.GetSmall(ctx, api, bucket, key, 64<<20)
		if s3io.IsNotFound(err) {
			return nil, nil, err
		}
		if err != nil {
			return nil, nil, s3Error("GetObject", "s3://"+bucket+"/"+key, err)
		}
		var m Manifest
		err = json.Unmarshal(raw, &m)
		if err == nil {
			return &m, raw, nil
		}
		if try >= manifestReads {
			return nil, nil, fmt.Errorf("importfiles: s3://%s/%s is not a treeport manifest (read %d times over %s): %v; "+
				"remove it and run that shard again", bucket, key, try, pause-manifestPause, err)
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(pause):
		}
		pause *= 2
	}
}

// SameRun reports how two shards' manifests differ in what shapes the table.
func SameRun(a, b *Manifest) error {
	if a.Layout != b.Layout || a.Table != b.Table {
		return fmt.Errorf("layout %s, table %s; another shard has layout %s, table %s", b.Layout, b.Table, a.Layout, a.Table)
	}
	strip := func(m map[string]any) string {
		c := make(map[string]any, len(m))
		for k, v := range m {
			if k != "shard" {
				c[k] = v
			}
		}
		j, _ := json.Marshal(c)
		return string(j)
	}
	if sa, sb := strip(a.Settings), strip(b.Settings); sa != sb {
		return fmt.Errorf("its settings %s differ from another shard's %s", sb, sa)
	}
	return nil
}

// s3Error is s3io.Wrap, the failure matching ddb.ErrService.
func s3Error(op, url string, err error) error { return s3io.Wrap(op, url, err, ddb.ErrService) }
