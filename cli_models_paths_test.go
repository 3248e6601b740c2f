package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// s3ConstModel is the S3 inventory design with its bucket written into the
// model: partition key bucket, sort key the object's whole key.
const s3ConstModel = `{"name": "s3-media", "layout": "adjacency", "path_ids": true, "implicit_inner": true, "delimiter": "/",
	"table": {"partition_key": {"name": "bucket", "template": "media"}, "sort_key": {"name": "key", "template": "{id}"}}}`

// s3Hand is an S3 inventory table as people build it: one item an
// object, keyed by its bucket and its key; folders have no item.
// photos/2024 is an object and a folder; big is a folder of 150 objects,
// more than a listing's page. The archive bucket is another entity.
func s3Hand(big int) (nodes, foreign []layouts.Item) {
	obj := func(bucket, key, size string) layouts.Item {
		return layouts.Item{"bucket": s(bucket), "key": s(key), "size": &types.AttributeValueMemberN{Value: size}, "storage_class": s("STANDARD")}
	}
	nodes = []layouts.Item{
		obj("media", "photos/2024", "10"),
		obj("media", "photos/2024/trip/img1.jpg", "2048"),
		obj("media", "photos/2024/trip/img2.jpg", "4096"),
		obj("media", "photos/2024-old.zip", "7"),
		obj("media", "photos/cover.jpg", "99"),
		obj("media", "readme.txt", "5"),
	}
	for i := range big {
		nodes = append(nodes, obj("media", fmt.Sprintf("photos/big/%03d.raw", i), "1"))
	}
	foreign = []layouts.Item{
		obj("archive", "photos/2024/trip/img1.jpg", "1"),
		obj("archive", "photos/secret.txt", "1"),
		obj("archive", "readme.txt", "1"),
	}
	return nodes, foreign
}

var s3HandModel = handModel{
	create: func(name string) *dynamodb.CreateTableInput {
		return &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
			AttributeDefinitions: defs("bucket", "key"), KeySchema: keySchema("bucket", "key")}
	},
}

// pathQuery runs a query and returns "id<parent@depth" of its answer,
// with "+" when the node has attributes, sorted.
func pathQuery(t *testing.T, env []string, args ...string) []string {
	t.Helper()
	stdout, stderr, code := run(t, env, append([]string{"query"}, args...)...)
	if code != 0 {
		t.Fatalf("query %v: exit %d\n%s", args, code, stderr)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if line == "" {
			continue
		}
		var q queryLine
		if err := json.Unmarshal([]byte(line), &q); err != nil {
			t.Fatalf("query line %q: %v", line, err)
		}
		mark := ""
		if len(q.Attributes) > 0 {
			mark = "+"
		}
		out = append(out, fmt.Sprintf("%s<%s@%d%s", q.ID, q.Parent, q.RelativeDepth, mark))
	}
	sort.Strings(out)
	return out
}

// TestFullPathModelQueries: every query of a full-path model against a
// table built by hand with PutItem, as ListObjectsV2 would list it; the
// children of a folder skip past its child folders' keys; another
// bucket is never in an answer.
func TestFullPathModelQueries(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	model := filepath.Join(dir, "s3-media.json")
	if err := os.WriteFile(model, []byte(s3ConstModel), 0o644); err != nil {
		t.Fatal(err)
	}
	nodes, foreign := s3Hand(150)
	table := handTable(t, client, s3HandModel, append(slices.Clone(nodes), foreign...))
	tm := []string{"--table", table, "--model", model}
	for _, q := range []struct {
		args []string
		want []string
	}{
		{[]string{"get", "--id", "photos/2024"}, []string{"photos/2024<photos@0+"}},
		{[]string{"get", "--id", "photos"}, []string{"photos<@0"}},
		{[]string{"get", "--id", "photos/2024/trip"}, []string{"photos/2024/trip<photos/2024@0"}},
		{[]string{"children", "--id", "photos"}, []string{"photos/2024-old.zip<photos@1+", "photos/2024<photos@1+", "photos/big<photos@1", "photos/cover.jpg<photos@1+"}},
		{[]string{"children", "--id", "photos/2024"}, []string{"photos/2024/trip<photos/2024@1"}},
		{[]string{"children", "--id", "readme.txt"}, nil},
		{[]string{"descendants", "--id", "photos/2024", "--min-depth", "0"}, []string{
			"photos/2024/trip/img1.jpg<photos/2024/trip@2+", "photos/2024/trip/img2.jpg<photos/2024/trip@2+", "photos/2024/trip<photos/2024@1", "photos/2024<photos@0+"}},
		{[]string{"descendants", "--id", "photos", "--max-depth", "1"}, []string{"photos/2024-old.zip<photos@1+", "photos/2024<photos@1+", "photos/big<photos@1", "photos/cover.jpg<photos@1+"}},
		{[]string{"ancestors", "--id", "photos/2024/trip/img2.jpg"}, []string{"photos/2024/trip<photos/2024@1", "photos/2024<photos@2+", "photos<@3"}},
	} {
		if got := pathQuery(t, env, append(q.args, tm...)...); !slices.Equal(got, q.want) {
			t.Errorf("query %v:\n got  %v\n want %v", q.args, got, q.want)
		}
	}
	for _, id := range []string{"photos/secret.txt", "secret", "photos/20"} {
		if _, stderr, code := run(t, env, append([]string{"query", "get", "--id", id}, tm...)...); code == 0 || !strings.Contains(stderr, "not in table") {
			t.Errorf("query get %q (another bucket's, or no node): exit %d\n%s", id, code, stderr)
		}
	}
	// photos' listing: one Query up to each child folder's first key
	// (2024, big), then one past big's keys; big's 150 objects are more
	// than a page, so a listing that read them would need more requests
	// and items.
	_, stderr, code := run(t, env, append([]string{"query", "children", "--id", "photos", "--stats"}, tm...)...)
	if n := requestsSaid(stderr, `; (\d+) requests,`); code != 0 || n != 3 {
		t.Errorf("query children --stats: exit %d, %d requests, want 3:\n%s", code, n, stderr)
	}
	if got := rawLines(t, client, table); !slices.Equal(got, itemLines(append(slices.Clone(nodes), foreign...))) {
		t.Fatalf("the queries changed the table")
	}
}
