package importer

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/importer/importfiles"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/s3io"
	"github.com/treeport/treeport/internal/testserver/s3local"
	"github.com/treeport/treeport/layouts"
)

// writeShardFiles writes the import files of one shard of a small forest.
func writeShardFiles(t *testing.T, in *Input, l layouts.Layout, s ddbwrite.Shard, perFile int) (string, *importfiles.Manifest) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out")
	m, err := WriteImportFiles(context.Background(), in, FilesOptions{
		Dir: dir, Table: "Tree", ItemsPerFile: perFile,
		Emit:     EmitOptions{Layout: l, Shard: s},
		Settings: map[string]any{"layout": l.Name(), "shard": s.String()},
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir, m
}

// The uploaded objects are the local files, byte for byte, under the
// prefix; import-table.json names the bucket and the data prefix.
func TestUploadImportFiles(t *testing.T) {
	client := s3local.Client(t, s3local.Endpoint(t))
	bucket := s3local.NewBucket(t, client)
	in := readForest(t, writeForest(t, t.TempDir(), 1200, 3))
	l, _ := layouts.New(layouts.PathName, layouts.Options{})
	if p := in.CheckLayout(l); len(p) > 0 {
		t.Fatal(p)
	}
	dir, m := writeShardFiles(t, in, l, ddbwrite.Shard{}, 300)
	loc := s3io.Location{Bucket: bucket, Prefix: "loads/run-1"}
	if err := importfiles.CheckS3Output(context.Background(), client, loc, ddbwrite.Shard{}); err != nil {
		t.Fatalf("an empty prefix: %v", err)
	}
	var calls []int
	st, err := importfiles.UploadImportFiles(context.Background(), client, dir, m, l.Table(), importfiles.UploadOptions{
		To: loc, OnFile: func(s importfiles.UploadStats) { calls = append(calls, s.Objects) },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"create-table.json", "import-table.json", "manifest.json"}
	for _, f := range m.Files {
		want = append(want, f.Name)
	}
	slices.Sort(want)
	var got []string
	for _, k := range s3local.Keys(t, client, bucket, "loads/run-1/") {
		got = append(got, strings.TrimPrefix(k, "loads/run-1/"))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("uploaded %v, want %v", got, want)
	}
	if st.Objects != len(want) || len(calls) != len(want) || calls[len(calls)-1] != len(want) {
		t.Errorf("stats %+v, OnFile calls %v", st, calls)
	}
	var size int64
	for _, rel := range want {
		local, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		size += int64(len(local))
		if remote := s3local.Get(t, client, bucket, loc.Key(rel)); !bytes.Equal(remote, local) {
			t.Errorf("%s: S3 has %d bytes that differ from the local %d", rel, len(remote), len(local))
		}
	}
	if st.Bytes != size {
		t.Errorf("stats say %d bytes, files have %d", st.Bytes, size)
	}
	var req struct {
		S3BucketSource struct{ S3Bucket, S3KeyPrefix string }
	}
	if err := json.Unmarshal(s3local.Get(t, client, bucket, loc.Key("import-table.json")), &req); err != nil {
		t.Fatal(err)
	}
	if req.S3BucketSource.S3Bucket != bucket || req.S3BucketSource.S3KeyPrefix != "loads/run-1/data/" {
		t.Errorf("import-table.json reads from %+v", req.S3BucketSource)
	}
	// The prefix is now taken.
	if err := importfiles.CheckS3Output(context.Background(), client, loc, ddbwrite.Shard{}); !errors.Is(err, importfiles.ErrOutputNotEmpty) {
		t.Errorf("CheckS3Output on a used prefix: %v", err)
	}
}

// A file bigger than a part goes up in several parts and comes back whole.
func TestUploadMultipart(t *testing.T) {
	client := s3local.Client(t, s3local.Endpoint(t))
	bucket := s3local.NewBucket(t, client)
	dir := t.TempDir()
	big := make([]byte, 11<<20+12345)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"data/part-00000.json.gz": big, "create-table.json": []byte("{}"), "import-table.json": []byte("{}"), "manifest.json": []byte("{}")} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, _ := layouts.New(layouts.PathName, layouts.Options{})
	m := &importfiles.Manifest{Table: "Tree", Files: []importfiles.DataFile{{Name: "data/part-00000.json.gz", Bytes: int64(len(big))}}}
	loc := s3io.Location{Bucket: bucket, Prefix: "mp"}
	if _, err := importfiles.UploadImportFiles(context.Background(), client, dir, m, l.Table(), importfiles.UploadOptions{To: loc, Transfer: s3io.Transfer{PartSize: 5 << 20}}); err != nil {
		t.Fatal(err)
	}
	if got := s3local.Get(t, client, bucket, "mp/data/part-00000.json.gz"); !bytes.Equal(got, big) {
		t.Fatalf("got %d bytes back, want the %d uploaded", len(got), len(big))
	}
}

func TestCheckS3Output(t *testing.T) {
	client := s3local.Client(t, s3local.Endpoint(t))
	bucket := s3local.NewBucket(t, client)
	tests := []struct {
		name    string
		objects []string // under the prefix
		shard   ddbwrite.Shard
		wantErr string // "" for no error
	}{
		{name: "empty prefix, whole", shard: ddbwrite.Shard{}},
		{name: "empty prefix, shard", shard: ddbwrite.Shard{K: 1, Of: 3}},
		{name: "anything stops the whole", objects: []string{"notes.txt"}, wantErr: "notes.txt"},
		{name: "other shards of the same N", objects: []string{"data/shard-0-of-3-part-00000.json.gz", "manifest.shard-2-of-3.json", "create-table.json", "import-table.json"}, shard: ddbwrite.Shard{K: 1, Of: 3}},
		{name: "this shard's data", objects: []string{"data/shard-1-of-3-part-00000.json.gz"}, shard: ddbwrite.Shard{K: 1, Of: 3}, wantErr: "data/shard-1-of-3-part-00000.json.gz"},
		{name: "this shard's manifest", objects: []string{"manifest.shard-1-of-3.json"}, shard: ddbwrite.Shard{K: 1, Of: 3}, wantErr: "manifest.shard-1-of-3.json"},
		{name: "a run with another N", objects: []string{"data/shard-0-of-2-part-00000.json.gz"}, shard: ddbwrite.Shard{K: 1, Of: 3}, wantErr: "shard-0-of-2"},
		{name: "an unsharded run", objects: []string{"data/part-00000.json.gz"}, shard: ddbwrite.Shard{K: 1, Of: 3}, wantErr: "data/part-00000.json.gz"},
		{name: "a stray file", objects: []string{"data/other.json.gz"}, shard: ddbwrite.Shard{K: 0, Of: 3}, wantErr: "data/other.json.gz"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			loc := s3io.Location{Bucket: bucket, Prefix: fmt.Sprintf("check-%d", i)}
			for _, o := range tc.objects {
				s3local.Put(t, client, bucket, loc.Key(o), []byte("x"))
			}
			// A neighbour that shares the prefix's first letters is not in it.
			s3local.Put(t, client, bucket, loc.Prefix+"x/manifest.json", []byte("x"))
			err := importfiles.CheckS3Output(context.Background(), client, loc, tc.shard)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if !errors.Is(err, importfiles.ErrOutputNotEmpty) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want importfiles.ErrOutputNotEmpty naming %q", err, tc.wantErr)
			}
		})
	}
	t.Run("a missing bucket is a service error", func(t *testing.T) {
		err := importfiles.CheckS3Output(context.Background(), client, s3io.Location{Bucket: "no-such-bucket-treeport"}, ddbwrite.Shard{})
		var s3err *s3io.Error
		if !errors.As(err, &s3err) || !errors.Is(err, ddb.ErrService) || !strings.Contains(err.Error(), "s3://no-such-bucket-treeport/") {
			t.Fatalf("err = %v", err)
		}
	})
}

// Three copies upload into one prefix; the import is ready only once the
// last has, and every copy that looks then gets the same token.
func TestShardsUploaded(t *testing.T) {
	client := s3local.Client(t, s3local.Endpoint(t))
	bucket := s3local.NewBucket(t, client)
	in := readForest(t, writeForest(t, t.TempDir(), 600, 5))
	l, _ := layouts.New(layouts.ClosureName, layouts.Options{})
	if p := in.CheckLayout(l); len(p) > 0 {
		t.Fatal(p)
	}
	loc := s3io.Location{Bucket: bucket, Prefix: "sharded"}
	ctx := context.Background()
	upload := func(k int) *importfiles.Manifest {
		s := ddbwrite.Shard{K: k, Of: 3}
		if err := importfiles.CheckS3Output(ctx, client, loc, s); err != nil {
			t.Fatalf("shard %s: %v", s, err)
		}
		dir, m := writeShardFiles(t, in, l, s, 200)
		if _, err := importfiles.UploadImportFiles(ctx, client, dir, m, l.Table(), importfiles.UploadOptions{To: loc, Shard: s}); err != nil {
			t.Fatal(err)
		}
		return m
	}
	var items int64
	for i, k := range []int{2, 0} {
		items += upload(k).Items
		src, missing, err := importfiles.ShardsUploaded(ctx, client, loc, ddbwrite.Shard{K: k, Of: 3})
		want := [][]int{{0, 1}, {1}}[i]
		if err != nil || src != nil || !slices.Equal(missing, want) {
			t.Fatalf("after shard %d: %v, missing %v, %v; want missing %v", k, src, missing, err, want)
		}
	}
	items += upload(1).Items
	src, missing, err := importfiles.ShardsUploaded(ctx, client, loc, ddbwrite.Shard{K: 1, Of: 3})
	if err != nil || src == nil || len(missing) > 0 {
		t.Fatalf("after every shard: %v, missing %v, %v", src, missing, err)
	}
	if src.Items() != items || len(src.Token) != 32 || src.RawBytes() <= 0 {
		t.Errorf("items %d (want %d), token %q, raw %d", src.Items(), items, src.Token, src.RawBytes())
	}
	again, _, err := importfiles.ShardsUploaded(ctx, client, loc, ddbwrite.Shard{K: 0, Of: 3})
	if err != nil || again.Token != src.Token {
		t.Errorf("another shard's look: token %v, %v; want %s", again, err, src.Token)
	}
	for _, k := range s3local.Keys(t, client, bucket, "sharded/") {
		rel := strings.TrimPrefix(k, "sharded/")
		if _, ok := importfiles.ShardObject(rel, "-of-3"); !ok {
			t.Errorf("unexpected object %s", rel)
		}
	}

	// A shard run with other flags spoils the set.
	var m importfiles.Manifest
	if err := json.Unmarshal(s3local.Get(t, client, bucket, loc.Key("manifest.shard-1-of-3.json")), &m); err != nil {
		t.Fatal(err)
	}
	m.Settings["delimiter"] = "/"
	b, _ := json.Marshal(m)
	s3local.Put(t, client, bucket, loc.Key("manifest.shard-1-of-3.json"), b)
	if _, _, err := importfiles.ShardsUploaded(ctx, client, loc, ddbwrite.Shard{K: 1, Of: 3}); err == nil || !strings.Contains(err.Error(), "same input and flags") {
		t.Errorf("mismatched shards: %v", err)
	}
}
