package importfiles

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/internal/s3io"
	"github.com/treeport/treeport/internal/testserver/s3local"
)

// cutReads answers the first n reads of each manifest with a body cut short,
// as s3rver does when a read meets another copy's write of the object.
type cutReads struct {
	S3API
	n     int
	reads map[string]int
}

func (c *cutReads) GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	out, err := c.S3API.GetObject(ctx, in, opts...)
	if err != nil || !strings.Contains(*in.Key, "manifest") {
		return out, err
	}
	c.reads[*in.Key]++
	if c.reads[*in.Key] > c.n {
		return out, nil
	}
	b, _ := io.ReadAll(out.Body)
	out.Body.Close()
	out.Body = io.NopCloser(bytes.NewReader(b[:len(b)/3]))
	return out, nil
}

// A manifest read while another copy writes it is read again; one that never
// parses is an error that names it, after a few reads.
func TestShardsUploadedRereadsCutManifest(t *testing.T) {
	defer func(p time.Duration) { manifestPause = p }(manifestPause)
	manifestPause = time.Millisecond
	client := s3local.Client(t, s3local.Endpoint(t))
	bucket := s3local.NewBucket(t, client)
	loc := s3io.Location{Bucket: bucket, Prefix: "cut"}
	ctx := context.Background()
	m := &Manifest{Tool: "treeport", Layout: "path", Table: "Tree", Items: 60, Files: []DataFile{{Name: "data/part-00000.json.gz", Items: 60}}}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	s3local.Put(t, client, bucket, loc.Key("manifest.json"), b)
	cut := &cutReads{S3API: client, n: manifestReads - 1, reads: map[string]int{}}
	src, missing, err := ShardsUploaded(ctx, cut, loc, ddbwrite.Shard{})
	if err != nil || src == nil || len(missing) > 0 || src.Items() != m.Items {
		t.Fatalf("after %d cut reads: %v, missing %v, %v", cut.n, src, missing, err)
	}
	cut = &cutReads{S3API: client, n: manifestReads, reads: map[string]int{}}
	_, _, err = ShardsUploaded(ctx, cut, loc, ddbwrite.Shard{})
	if err == nil || !strings.Contains(err.Error(), "cut/manifest.json is not a treeport manifest") || cut.reads["cut/manifest.json"] != manifestReads {
		t.Errorf("a manifest cut on every read: %v after %d reads", err, cut.reads["cut/manifest.json"])
	}
}
