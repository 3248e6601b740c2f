package main

import (
	"encoding/json"
	"fmt"
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

// s3Model is the shipped S3 inventory model, for the bucket s3Bucket.
const (
	s3Model  = "fixtures/models/s3-inventory.json"
	s3Bucket = "photos-bucket"
)

// s3Hand is an S3 inventory table as people build it: one item an
// object, keyed by its bucket and its key; folders have no item.
// photos/2024 is an object and a folder; big is a folder of 150 objects,
// more than a listing's page. The archive bucket is another entity.
func s3Hand(big int) (nodes, foreign []layouts.Item) {
	const media = s3Bucket
	obj := func(bucket, key, size string) layouts.Item {
		return layouts.Item{"bucket": s(bucket), "key": s(key), "size": &types.AttributeValueMemberN{Value: size}, "storage_class": s("STANDARD")}
	}
	nodes = []layouts.Item{
		obj(media, "photos/2024", "10"),
		obj(media, "photos/2024/trip/img1.jpg", "2048"),
		obj(media, "photos/2024/trip/img2.jpg", "4096"),
		obj(media, "photos/2024-old.zip", "7"),
		obj(media, "photos/cover.jpg", "99"),
		obj(media, "readme.txt", "5"),
	}
	for i := range big {
		nodes = append(nodes, obj(media, fmt.Sprintf("photos/big/%03d.raw", i), "1"))
	}
	foreign = []layouts.Item{
		obj("archive", "photos/2024/trip/img1.jpg", "1"),
		obj("archive", "photos/secret.txt", "1"),
		obj("archive", "readme.txt", "1"),
	}
	return nodes, foreign
}

var s3HandModel = handModel{
	file: s3Model,
	create: func(name string) *dynamodb.CreateTableInput {
		return &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
			AttributeDefinitions: defs("bucket", "key"), KeySchema: keySchema("bucket", "key")}
	},
}

// pathQuery runs a query and returns "id<parent@depth" of its answer,
// with "+" when the node has attributes, sorted.
func pathQuery(t *testing.T, env []string, args ...string) []string {
	t.Helper()
	return queryAnswer(t, env, args, func(q queryLine, line string) string {
		mark := ""
		if len(q.Attributes) > 0 {
			mark = "+"
		}
		return fmt.Sprintf("%s<%s@%d%s", q.ID, q.Parent, q.RelativeDepth, mark)
	})
}

// TestFullPathModelQueries: every query of a full-path model against a
// table built by hand with PutItem, as ListObjectsV2 would list it; the
// children of a folder skip past its child folders' keys; another
// bucket is never in an answer.
func TestFullPathModelQueries(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	nodes, foreign := s3Hand(150)
	table := handTable(t, client, s3HandModel, append(slices.Clone(nodes), foreign...))
	tm := []string{"--table", table, "--model", s3Model, "--model-param", "bucket=" + s3Bucket}
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

// s3SeedJSONL is the bucket of s3Hand(0) as records: path ids, the
// folders photos and photos/2024/trip as nodes without attributes.
const s3SeedJSONL = `{"id":"photos"}
{"id":"photos/2024","parent_id":"photos","size":10,"storage_class":"STANDARD"}
{"id":"photos/2024/trip","parent_id":"photos/2024"}
{"id":"photos/2024/trip/img1.jpg","parent_id":"photos/2024/trip","size":2048,"storage_class":"STANDARD"}
{"id":"photos/2024/trip/img2.jpg","parent_id":"photos/2024/trip","size":4096,"storage_class":"STANDARD"}
{"id":"photos/2024-old.zip","parent_id":"photos","size":7,"storage_class":"STANDARD"}
{"id":"photos/cover.jpg","parent_id":"photos","size":99,"storage_class":"STANDARD"}
{"id":"readme.txt","size":5,"storage_class":"STANDARD"}
`

// s3Exported runs export and returns "id<parent:size" of each record,
// sorted.
func s3Exported(t *testing.T, env []string, out string, args ...string) []string {
	t.Helper()
	_, stderr, code := run(t, env, append([]string{"export", "--out", out}, args...)...)
	if code != 0 {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, out)), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s<%s:%v", asStr(rec["id"]), asStr(rec["parent_id"]), rec["size"]))
	}
	sort.Strings(got)
	return got
}

// TestS3InventoryModel runs every command that takes a model against an
// S3 inventory table built by hand: folders are implicit nodes, an object
// shares its name with a folder, and the other bucket's items are never
// read as nodes nor written (byte for byte).
func TestS3InventoryModel(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	seed := writeText(t, dir, "seed.jsonl", s3SeedJSONL)
	model := []string{"--model", s3Model, "--model-param", "bucket=" + s3Bucket}
	nodes, foreign := s3Hand(0)
	all := append(slices.Clone(nodes), foreign...)
	table := handTable(t, client, s3HandModel, all)
	tm := append([]string{"--table", table}, model...)
	wantRecords := []string{"photos/2024-old.zip<photos:7", "photos/2024/trip/img1.jpg<photos/2024/trip:2048", "photos/2024/trip/img2.jpg<photos/2024/trip:4096",
		"photos/2024/trip<photos/2024:<nil>", "photos/2024<photos:10", "photos/cover.jpg<photos:99", "photos<:<nil>", "readme.txt<:5"}

	t.Run("import", func(t *testing.T) {
		// Into a table holding the other bucket: the bucket's objects,
		// no item for a folder.
		imported := handTable(t, client, s3HandModel, foreign)
		if _, stderr, code := run(t, env, append([]string{"import", "--in", seed, "--table", imported, "--no-progress"}, model...)...); code != 0 {
			t.Fatalf("import: exit %d\n%s", code, stderr)
		}
		sameLines(t, "after import", rawLines(t, client, imported), all)
		stdout, stderr, code := run(t, env, append([]string{"import", "--in", seed, "--dry-run", "--json"}, model...)...)
		if code != 0 || !strings.Contains(strings.ReplaceAll(stdout, " ", ""), `"items":6`) {
			t.Errorf("import --dry-run: exit %d, want 6 items (8 nodes, 2 of them folders):\n%s%s", code, stdout, stderr)
		}
		// A path id whose parent is not its prefix: exit 2, located.
		bad := writeText(t, dir, "bad.jsonl", `{"id":"photos"}`+"\n"+`{"id":"videos/a.mp4","parent_id":"photos"}`+"\n")
		if _, stderr, code := run(t, env, append([]string{"import", "--in", bad, "--table", imported, "--no-progress"}, model...)...); code != 2 ||
			!strings.Contains(stderr, `bad.jsonl:2: id "videos/a.mp4"`) || !strings.Contains(stderr, `"videos"`) {
			t.Errorf("import of a path id under another parent: exit %d\n%s", code, stderr)
		}
		sameLines(t, "after the refused import", rawLines(t, client, imported), all)
	})

	t.Run("export verify", func(t *testing.T) {
		if got := s3Exported(t, env, filepath.Join(dir, "bucket.jsonl"), tm...); !slices.Equal(got, wantRecords) {
			t.Fatalf("export:\n got  %v\n want %v", got, wantRecords)
		}
		if stdout, stderr, code := run(t, env, append([]string{"verify", "--in", seed}, tm...)...); code != 0 {
			t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
		}
		// The other bucket, with the same model: its own objects alone.
		archive := []string{"--table", table, "--model", s3Model, "--model-param", "bucket=archive"}
		want := []string{"photos/2024/trip/img1.jpg<photos/2024/trip:1", "photos/2024/trip<photos/2024:<nil>", "photos/2024<photos:<nil>",
			"photos/secret.txt<photos:1", "photos<:<nil>", "readme.txt<:1"}
		if got := s3Exported(t, env, filepath.Join(dir, "archive.jsonl"), archive...); !slices.Equal(got, want) {
			t.Fatalf("export archive:\n got  %v\n want %v", got, want)
		}
	})

	t.Run("schema", func(t *testing.T) {
		for _, format := range []string{"json", "workbench", "cloudformation"} {
			stdout, stderr, code := run(t, nil, append([]string{"schema", "--table", "Inventory", "--format", format, "--in", seed}, model...)...)
			if code != 0 || !strings.Contains(stdout, `"bucket"`) || !strings.Contains(stdout, `"key"`) {
				t.Errorf("schema --format %s: exit %d\n%s%s", format, code, stdout, stderr)
			}
			if format == "workbench" && (!strings.Contains(stdout, "photos/2024/trip/img1.jpg") || strings.Contains(stdout, `"photos/2024/trip"`)) {
				t.Errorf("schema --format workbench: want the objects as sample items, and no item for a folder:\n%s", stdout)
			}
		}
	})

	t.Run("bench", func(t *testing.T) {
		out := filepath.Join(dir, "bench.json")
		stdout, stderr, code := run(t, env, append([]string{"bench", "--in", seed, "--out", out}, model...)...)
		if code != 0 {
			t.Fatalf("bench: exit %d\n%s%s", code, stdout, stderr)
		}
		if b := readFile(t, out); !strings.Contains(b, "model-s3-inventory") {
			t.Errorf("bench report does not name the model:\n%s", b)
		}
	})

	t.Run("migrate both ways", func(t *testing.T) { s3Migrate(t, client, env, table, all, foreign) })

	t.Run("plan apply edit", func(t *testing.T) {
		work := handTable(t, client, s3HandModel, all)
		wm := append([]string{"--table", work}, model...)
		// img2 goes; an object in a new folder comes; cover.jpg grows.
		text := strings.Replace(s3SeedJSONL, `{"id":"photos/2024/trip/img2.jpg","parent_id":"photos/2024/trip","size":4096,"storage_class":"STANDARD"}`+"\n", "", 1)
		text = strings.Replace(text, `"size":99`, `"size":100`, 1)
		text += `{"id":"photos/2025","parent_id":"photos"}` + "\n" + `{"id":"photos/2025/jan.png","parent_id":"photos/2025","size":1,"storage_class":"STANDARD"}` + "\n"
		snap := writeText(t, dir, "snap.jsonl", text)
		stdout, stderr, code := run(t, env, append([]string{"plan", "--in", snap, "--json"}, wm...)...)
		if code != 0 {
			t.Fatalf("plan: exit %d\n%s%s", code, stdout, stderr)
		}
		// The bucket's partition alone is read: the other bucket's items
		// are not even counted.
		if sum := parseSummary(t, stdout); sum.TableItems != int64(len(nodes)) || sum.TableOtherItems != 0 {
			t.Errorf("plan summary: %d items and %d other items, want %d and 0", sum.TableItems, sum.TableOtherItems, len(nodes))
		}
		if stdout, stderr, code := run(t, env, append([]string{"apply", "--in", snap, "--no-progress", "--allow-mass-delete"}, wm...)...); code != 0 {
			t.Fatalf("apply: exit %d\n%s%s", code, stdout, stderr)
		}
		if stdout, stderr, code := run(t, env, append([]string{"plan", "--in", snap, "--detailed-exitcode"}, wm...)...); code != 0 {
			t.Fatalf("plan after apply: exit %d\n%s%s", code, stdout, stderr)
		}
		obj := func(key, size string) layouts.Item {
			return layouts.Item{"bucket": s(s3Bucket), "key": s(key), "size": &types.AttributeValueMemberN{Value: size}, "storage_class": s("STANDARD")}
		}
		want := []layouts.Item{nodes[0], nodes[1], nodes[3], obj("photos/cover.jpg", "100"), nodes[5], obj("photos/2025/jan.png", "1")}
		sameLines(t, "after apply", rawLines(t, client, work), append(slices.Clone(want), foreign...))

		// Edit: a folder gets attributes (an item of its own); an
		// object goes, then its folder (a folder left without objects
		// is still a node, which would need an item of its own); a move
		// would change the ids of the subtree: refused.
		ops := writeText(t, dir, "ops.jsonl", `{"op":"set","id":"photos/2024/trip","attributes":{"size":0}}`+"\n"+`{"op":"delete","id":"photos/2025/jan.png"}`+"\n"+
			`{"op":"delete","id":"photos/2025"}`+"\n")
		if stdout, stderr, code := run(t, env, append([]string{"edit", "--ops", ops, "--no-progress"}, wm...)...); code != 0 {
			t.Fatalf("edit: exit %d\n%s%s", code, stdout, stderr)
		}
		want = append(want[:5], layouts.Item{"bucket": s(s3Bucket), "key": s("photos/2024/trip"), "size": &types.AttributeValueMemberN{Value: "0"}})
		sameLines(t, "after edit", rawLines(t, client, work), append(slices.Clone(want), foreign...))
		if got := pathQuery(t, env, append([]string{"children", "--id", "photos"}, wm...)...); !slices.Equal(got, []string{"photos/2024-old.zip<photos@1+", "photos/2024<photos@1+", "photos/cover.jpg<photos@1+"}) {
			t.Errorf("after edit: children of photos %v", got)
		}
		move := writeText(t, dir, "move.jsonl", `{"op":"move","id":"photos/cover.jpg","parent":"readme.txt"}`+"\n")
		if _, stderr, code := run(t, env, append([]string{"edit", "--ops", move, "--no-progress"}, wm...)...); code != 2 || !strings.Contains(stderr, "photos/cover.jpg") {
			t.Errorf("edit move of a path id: exit %d, want 2 naming it\n%s", code, stderr)
		}
		sameLines(t, "after the refused move", rawLines(t, client, work), append(slices.Clone(want), foreign...))
	})

	t.Run("follow", func(t *testing.T) { s3Follow(t, client, env) })

	if got := rawLines(t, client, table); !slices.Equal(got, itemLines(all)) {
		t.Fatalf("the table read by export, query, verify, schema and migrate changed")
	}
}

// s3Follow: migrate --follow from an S3 inventory table with a stream into
// a path table with path ids: an object put in a new folder is copied
// (its folder implicit on both sides), another bucket's is not.
func s3Follow(t *testing.T, client *dynamodb.Client, env []string) {
	create := func(name string) *dynamodb.CreateTableInput {
		in := s3HandModel.create(name)
		in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}
		return in
	}
	nodes, foreign := s3Hand(0)
	src := handTable(t, client, handModel{file: s3Model, create: create}, append(slices.Clone(nodes), foreign...))
	dest := ddblocal.TableName(t)
	dropTableLater(t, client, dest)
	ck := filepath.Join(t.TempDir(), "ck.json")
	args := []string{"migrate", "--from-table", src, "--from-model", s3Model, "--model-param", "bucket=" + s3Bucket,
		"--to-table", dest, "--to-layout", "path", "--to-path-ids", "--to-implicit-inner", "--to-delimiter", "/",
		"--create-table", "--follow", "--follow-idle", "3s", "--checkpoint", ck, "--no-progress",
		"--endpoint-url", envValue(env, "TREEPORT_ENDPOINT_URL")}
	cmd, out := startFollower(t, args)
	waitForOutput(t, cmd, out, "following the stream")
	putItems(t, client, src, []layouts.Item{
		{"bucket": s(s3Bucket), "key": s("photos/2026/feb/x.png"), "size": &types.AttributeValueMemberN{Value: "3"}},
		{"bucket": s("archive"), "key": s("photos/2026/y.png"), "size": &types.AttributeValueMemberN{Value: "4"}},
	}...)
	followerExact(t, cmd, out)
	var ids []string
	for _, it := range scanTable(t, client, dest) {
		ids = append(ids, valueOf(it["Id"])+"<"+valueOf(it["ParentId"]))
	}
	sort.Strings(ids)
	want := []string{"photos/2024-old.zip<photos", "photos/2024/trip/img1.jpg<photos/2024/trip", "photos/2024/trip/img2.jpg<photos/2024/trip",
		"photos/2024<photos", "photos/2026/feb/x.png<photos/2026/feb", "photos/cover.jpg<photos", "readme.txt<"}
	if !slices.Equal(ids, want) {
		t.Fatalf("followed copy:\n got  %v\n want %v", ids, want)
	}
}

// prefixed returns each flag ("--implicit-inner") with its side
// ("--to-implicit-inner").
func prefixed(side string, flags []string) []string {
	var out []string
	for _, f := range flags {
		out = append(out, side+strings.TrimPrefix(f, "--"))
	}
	return out
}

// s3Migrate migrates the bucket from the S3 inventory table into every
// layout (adjacency without implicit inner nodes) and back into a table
// holding the other bucket: the same items, byte for byte.
func s3Migrate(t *testing.T, client *dynamodb.Client, env []string, table string, all, foreign []layouts.Item) {
	for _, layout := range layouts.Names() {
		// adjacency takes no implicit inner nodes: each folder gets an item.
		implicit := []string{"--implicit-inner"}
		if layout == layouts.AdjacencyName {
			implicit = nil
		}
		mid := ddblocal.TableName(t)
		dropTableLater(t, client, mid)
		args := append([]string{"migrate", "--from-table", table, "--from-model", s3Model, "--model-param", "bucket=" + s3Bucket,
			"--to-table", mid, "--create-table", "--no-progress", "--to-layout", layout, "--to-path-ids", "--to-delimiter", "/"}, prefixed("--to-", implicit)...)
		if stdout, stderr, code := run(t, env, args...); code != 0 {
			t.Fatalf("migrate into %s: exit %d\n%s%s", layout, code, stdout, stderr)
		}
		back := handTable(t, client, s3HandModel, foreign)
		from := append([]string{"migrate", "--from-table", mid, "--to-table", back, "--to-model", s3Model, "--model-param", "bucket=" + s3Bucket, "--no-progress",
			"--from-layout", layout, "--from-path-ids", "--from-delimiter", "/"}, prefixed("--from-", implicit)...)
		if stdout, stderr, code := run(t, env, from...); code != 0 {
			t.Fatalf("migrate back from %s: exit %d\n%s%s", layout, code, stdout, stderr)
		}
		sameLines(t, "migrated back from "+layout, rawLines(t, client, back), all)
	}
}
