// Package s3local connects tests to s3rver, the local S3 server that
// treeport's tests of S3 uploads and S3 export reads run against.
//
// Start one with scripts/s3rver.sh and export its endpoint:
//
//	scripts/s3rver.sh start && eval "$(scripts/s3rver.sh env)"
//
// Without TREEPORT_TEST_S3_ENDPOINT the tests that need it skip, except
// under CI (CI=true), where a missing server is a failure.
package s3local

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// EnvEndpoint names the environment variable holding s3rver's URL.
const EnvEndpoint = "TREEPORT_TEST_S3_ENDPOINT"

// AccessKey and SecretKey are the one key pair s3rver accepts. A test that
// runs the treeport command against s3rver sets them as AWS_ACCESS_KEY_ID
// and AWS_SECRET_ACCESS_KEY.
const (
	AccessKey = "S3RVER"
	SecretKey = "S3RVER"
)

// Endpoint returns s3rver's URL from TREEPORT_TEST_S3_ENDPOINT. When it is
// not set, the test fails under CI (CI=true) and is skipped otherwise.
func Endpoint(t testing.TB) string {
	t.Helper()
	if ep := strings.TrimSpace(os.Getenv(EnvEndpoint)); ep != "" {
		return ep
	}
	msg := EnvEndpoint + " is not set; start s3rver with " +
		`scripts/s3rver.sh start && eval "$(scripts/s3rver.sh env)"`
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (under CI a missing server is a failure, not a skip)")
	}
	t.Skip(msg)
	return ""
}

// Client returns an S3 client for endpoint, as treeport makes one for
// --s3-endpoint-url: path-style addressing, region
// us-east-1, checksums only where the API requires them, and s3rver's key.
func Client(t testing.TB, endpoint string) *s3.Client {
	t.Helper()
	return s3.New(s3.Options{
		Region:                     "us-east-1",
		BaseEndpoint:               aws.String(endpoint),
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

var seq atomic.Int64

// NewBucket creates a bucket no other test uses and empties and deletes it
// when the test ends. It returns the bucket's name.
func NewBucket(t testing.TB, client *s3.Client) string {
	t.Helper()
	name := fmt.Sprintf("treeport-test-%d-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9, seq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for _, k := range Keys(t, client, name, "") {
			if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: aws.String(k)}); err != nil {
				t.Errorf("delete s3://%s/%s: %v", name, k, err)
			}
		}
		if _, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Errorf("delete bucket %s: %v", name, err)
		}
	})
	return name
}

// Keys lists the keys under prefix, in S3's order (by key).
func Keys(t testing.TB, client *s3.Client, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	for _, o := range Objects(t, client, bucket, prefix) {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// Objects lists the objects under prefix, in S3's order (by key).
func Objects(t testing.TB, client *s3.Client, bucket, prefix string) []types.Object {
	t.Helper()
	var out []types.Object
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("list s3://%s/%s: %v", bucket, prefix, err)
		}
		out = append(out, page.Contents...)
	}
	return out
}

// Put writes one object.
func Put(t testing.TB, client *s3.Client, bucket, key string, body []byte) {
	t.Helper()
	if _, err := client.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body),
	}); err != nil {
		t.Fatalf("put s3://%s/%s: %v", bucket, key, err)
	}
}

// Get reads one object whole.
func Get(t testing.TB, client *s3.Client, bucket, key string) []byte {
	t.Helper()
	out, err := client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get s3://%s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("read s3://%s/%s: %v", bucket, key, err)
	}
	return b
}
