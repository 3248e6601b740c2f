// Package s3io holds what importer and exporter both need of S3: locations
// (s3://bucket/prefix) and object URLs, reading a small object whole, telling
// a missing object, and the error that says which S3 call failed on which
// object. Building the client is the caller's.
package s3io

//lint:file-ignore SA1019 feature/s3/manager is the transfer manager the SDK ships as a stable module; its successor, feature/s3/transfermanager, is not a dependency of treeport yet.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Location is an S3 bucket and a key prefix, as s3://bucket/prefix names
// them. Prefix has no leading or trailing slash; it is "" for the whole
// bucket.
type Location struct {
	Bucket string
	Prefix string
}

// IsURL reports whether s names an S3 location (s3://...).
func IsURL(s string) bool { return strings.HasPrefix(s, "s3://") }

// bucketName is the rule for S3 bucket names (general purpose buckets).
var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// ValidBucket reports whether name follows the rule for the names of
// general purpose buckets.
func ValidBucket(name string) bool { return bucketName.MatchString(name) }

// ParseURL reads s3://bucket/prefix. A trailing slash is allowed and
// dropped; the prefix may be empty.
func ParseURL(raw string) (Location, error) {
	rest, ok := strings.CutPrefix(raw, "s3://")
	if !ok {
		return Location{}, fmt.Errorf("importer: %q is not an S3 URL: want s3://bucket/prefix", raw)
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	if !ValidBucket(bucket) {
		return Location{}, fmt.Errorf("importer: %q: %q is not a valid bucket name (3 to 63 lower-case letters, digits, dots and dashes)", raw, bucket)
	}
	prefix = strings.Trim(prefix, "/")
	if strings.Contains(prefix, "//") {
		return Location{}, fmt.Errorf("importer: %q: the prefix has an empty folder (//)", raw)
	}
	return Location{Bucket: bucket, Prefix: prefix}, nil
}

// String is s3://bucket/prefix/.
func (l Location) String() string {
	if l.Prefix == "" {
		return "s3://" + l.Bucket + "/"
	}
	return "s3://" + l.Bucket + "/" + l.Prefix + "/"
}

// Key is the object key of rel (a slash-separated name) under the prefix.
func (l Location) Key(rel string) string {
	if l.Prefix == "" {
		return rel
	}
	return l.Prefix + "/" + rel
}

// DataPrefix is the S3KeyPrefix ImportTable reads: prefix/data/.
func (l Location) DataPrefix() string { return l.Key("data/") }

// ObjectURL is s3://bucket/key.
func ObjectURL(bucket, key string) string { return "s3://" + bucket + "/" + key }

// Transfer says how many files an upload or a download moves at once, and
// how it splits each file with the S3 transfer manager. The zero value
// takes the defaults.
type Transfer struct {
	// Files is how many files move at once (default 4).
	Files int
	// PartSize is the size of a multipart part or of a ranged GET (default
	// 16 MiB; S3's minimum part is 5 MiB). A smaller file is one request.
	PartSize int64
	// PartConcurrency is how many parts of one file are in flight
	// (default 4).
	PartConcurrency int
}

// WithDefaults is t with each field that is not positive set to its
// default.
func (t Transfer) WithDefaults() Transfer {
	if t.Files <= 0 {
		t.Files = 4
	}
	if t.PartSize <= 0 {
		t.PartSize = 16 << 20
	}
	if t.PartConcurrency <= 0 {
		t.PartConcurrency = 4
	}
	return t
}

// GetSmall reads a small object whole, or its first limit bytes.
func GetSmall(ctx context.Context, api manager.DownloadAPIClient, bucket, key string, limit int64) ([]byte, error) {
	out, err := api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(io.LimitReader(out.Body, limit))
}

// IsNotFound reports whether err says the object does not exist.
func IsNotFound(err error) bool {
	var re *awshttp.ResponseError
	return err != nil && errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound
}

// Error is an S3 failure: what was being done, on which object, and the
// SDK's error.
type Error struct {
	Op  string // "ListObjectsV2", "upload of data/part-00000.json.gz", ...
	URL string // s3://bucket/key
	Err error
	// Class, when not nil, is the caller's sentinel for a failure of the
	// service (its ErrService): errors.Is(e, Class) is true, so that the
	// command exits 3.
	Class error
}

func (e *Error) Error() string {
	hint := ""
	var re *awshttp.ResponseError
	if errors.As(e.Err, &re) {
		switch re.HTTPStatusCode() {
		case http.StatusForbidden:
			hint = "; check the credentials (--profile, AWS_PROFILE) and that they may read and write the bucket"
		case http.StatusNotFound:
			hint = "; check the bucket name and --region (or --s3-endpoint-url)"
		}
	}
	return fmt.Sprintf("importer: S3 %s (%s) failed: %v%s", e.Op, e.URL, e.Err, hint)
}

// Unwrap returns the SDK's error.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, e.Class) true.
func (e *Error) Is(target error) bool { return e.Class != nil && target == e.Class }

// Wrap returns err as an *Error of op on url, of class class; a canceled
// context is returned as it is, since it is no failure of S3.
func Wrap(op, url string, err, class error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	return &Error{Op: op, URL: url, Err: err, Class: class}
}
