package models_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/layouts/layoutstest"
	"github.com/treeport/treeport/models"
	"github.com/treeport/treeport/transform"
)

// s3Model is the S3 inventory design with its bucket written out: a
// constant partition key and the object's whole key as the sort key.
const s3Model = `{"name": "s3-const", "layout": "adjacency", "path_ids": true, "implicit_inner": true, "delimiter": "/",
	"table": {"partition_key": {"name": "bucket", "template": "media"}, "sort_key": {"name": "key", "template": "{id}"}}}`

// s3Items are a bucket's objects as S3 inventory rows, put by hand, and
// another bucket's: photos/2024 is an object and a folder; photos, trip,
// 2025 and big are folders alone; big holds many objects.
func s3Items(big int) []layouts.Item {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	obj := func(bucket, key string, size string) layouts.Item {
		return layouts.Item{"bucket": s(bucket), "key": s(key), "size": n(size), "etag": s("e-" + key)}
	}
	items := []layouts.Item{
		obj("media", "photos/2024", "10"),
		obj("media", "photos/2024/trip/img1.jpg", "2048"),
		obj("media", "photos/2024/trip/img2.jpg", "4096"),
		obj("media", "photos/2024-old.zip", "7"),
		obj("media", "photos/2025/jan/a.png", "1"),
		obj("media", "photos/cover.jpg", "99"),
		obj("media", "readme.txt", "5"),
		obj("archive", "photos/2024/trip/img1.jpg", "1"),
		obj("archive", "photos/secret.txt", "1"),
	}
	for i := range big {
		items = append(items, obj("media", fmt.Sprintf("photos/big/%04d.raw", i), "1"))
	}
	return items
}

func loadS3(t *testing.T) (layouts.Layout, *layoutstest.MemTable) {
	t.Helper()
	l, err := models.ParseModel("s3-const.json", []byte(s3Model))
	if err != nil {
		t.Fatal(err)
	}
	return l, layoutstest.NewMemTable(l.Table(), s3Items(500), 1000)
}

// brief is a query's answer as "id<parent:depth{attrs}" lines, sorted.
func brief(res []layouts.Result) []string {
	var out []string
	for _, r := range res {
		names := slices.Sorted(func(yield func(string) bool) {
			for k := range r.Attrs {
				if !yield(k) {
					return
				}
			}
		})
		out = append(out, fmt.Sprintf("%s<%s:%d%v", r.ID, r.Parent, r.RelativeDepth, names))
	}
	slices.Sort(out)
	return out
}

// A full-path table answers as ListObjectsV2 lists: implicit folders,
// an object that is a folder too, and another bucket never in an answer.
func TestFullPathQueries(t *testing.T) {
	l, mt := loadS3(t)
	ctx := context.Background()
	bigChildren := make([]string, 0, 500)
	for i := range 500 {
		bigChildren = append(bigChildren, fmt.Sprintf("photos/big/%04d.raw<photos/big:1[etag size]", i))
	}
	tests := []struct {
		name string
		q    layouts.Request
		want []string
	}{
		{"get object", layouts.Request{Kind: layouts.QueryGet, ID: "photos/cover.jpg"}, []string{"photos/cover.jpg<photos:0[etag size]"}},
		{"get implicit folder", layouts.Request{Kind: layouts.QueryGet, ID: "photos/2024/trip"}, []string{"photos/2024/trip<photos/2024:0[]"}},
		{"get implicit root", layouts.Request{Kind: layouts.QueryGet, ID: "photos"}, []string{"photos<:0[]"}},
		{"children", layouts.Request{Kind: layouts.QueryChildren, ID: "photos", MinDepth: 1, MaxDepth: 1}, []string{
			"photos/2024-old.zip<photos:1[etag size]", "photos/2024<photos:1[etag size]", "photos/2025<photos:1[]",
			"photos/big<photos:1[]", "photos/cover.jpg<photos:1[etag size]"}},
		{"children of an object that is a folder", layouts.Request{Kind: layouts.QueryChildren, ID: "photos/2024", MinDepth: 1, MaxDepth: 1},
			[]string{"photos/2024/trip<photos/2024:1[]"}},
		{"children of a big folder", layouts.Request{Kind: layouts.QueryChildren, ID: "photos/big", MinDepth: 1, MaxDepth: 1}, bigChildren},
		{"children of a leaf", layouts.Request{Kind: layouts.QueryChildren, ID: "readme.txt", MinDepth: 1, MaxDepth: 1}, nil},
		{"descendants 1-2", layouts.Request{Kind: layouts.QueryDescendants, ID: "photos/2024", MinDepth: 0, MaxDepth: 2}, []string{
			"photos/2024/trip/img1.jpg<photos/2024/trip:2[etag size]", "photos/2024/trip/img2.jpg<photos/2024/trip:2[etag size]",
			"photos/2024/trip<photos/2024:1[]", "photos/2024<photos:0[etag size]"}},
		{"descendants 2-", layouts.Request{Kind: layouts.QueryDescendants, ID: "photos/2025", MinDepth: 2, MaxDepth: layouts.NoMaxDepth}, []string{
			"photos/2025/jan/a.png<photos/2025/jan:2[etag size]"}},
		{"ancestors", layouts.Request{Kind: layouts.QueryAncestors, ID: "photos/2024/trip/img1.jpg", MinDepth: 1, MaxDepth: layouts.NoMaxDepth}, []string{
			"photos/2024/trip<photos/2024:1[]", "photos/2024<photos:2[etag size]", "photos<:3[]"}},
		{"ancestors of a root", layouts.Request{Kind: layouts.QueryAncestors, ID: "readme.txt", MinDepth: 0, MaxDepth: layouts.NoMaxDepth}, []string{
			"readme.txt<:0[etag size]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.q.Concurrency = 2
			res, err := l.Query(ctx, mt, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := brief(res); !slices.Equal(got, tc.want) {
				t.Fatalf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
	for _, id := range []string{"secret.txt", "photos/secret.txt", "photos/20", "photos/2024/", "/photos"} {
		for _, kind := range []layouts.QueryKind{layouts.QueryGet, layouts.QueryChildren, layouts.QueryDescendants, layouts.QueryAncestors} {
			_, err := l.Query(ctx, mt, layouts.Request{Kind: kind, ID: id, MinDepth: 1, MaxDepth: layouts.NoMaxDepth, Concurrency: 1})
			if nf := (*layouts.NotFoundError)(nil); !errors.As(err, &nf) {
				t.Errorf("%s %q: %v, want a node that is not in the table", kind, id, err)
			}
		}
	}
}

// Listing a folder skips past each child folder's keys: the children of
// photos, whose folder big holds 500 objects, read a few items of big, not
// its 500, and a Query a child folder.
func TestFullPathChildrenSkipFolders(t *testing.T) {
	l, mt := loadS3(t)
	mt.Take()
	if _, err := l.Query(context.Background(), mt, layouts.Request{Kind: layouts.QueryChildren, ID: "photos", MinDepth: 1, MaxDepth: 1, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	c := mt.Take()
	// One Query up to each child folder's first key (2024, 2025, big),
	// then one past big to the end of photos' keys: each reads a page
	// of at most 100 keys, so big's 500 are not all read.
	if c.Requests != 4 || c.Items >= 500 {
		t.Fatalf("children of photos: %d requests reading %d items, want 4 reading fewer than big's 500", c.Requests, c.Items)
	}
	if _, err := l.Query(context.Background(), mt, layouts.Request{Kind: layouts.QueryDescendants, ID: "photos", MinDepth: 1, MaxDepth: layouts.NoMaxDepth, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	if c := mt.Take(); c.Items != 506 {
		t.Fatalf("descendants of photos read %d items, want every key below photos/ (506) and nothing else", c.Items)
	}
}

// Other buckets are never nodes: Node and the scan filter leave them,
// and reading a node gives the path id's parent.
func TestFullPathReading(t *testing.T) {
	l, mt := loadS3(t)
	var nodes []string
	err := mt.Scan(context.Background(), l.NodeFilter(), func(items []layouts.Item) error {
		for _, it := range items {
			rec, ok, err := l.Node(it)
			if err != nil {
				return err
			}
			if ok {
				nodes = append(nodes, rec.ID+"<"+rec.Parent)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 507 || !slices.Contains(nodes, "photos/2024/trip/img1.jpg<photos/2024/trip") || !slices.Contains(nodes, "readme.txt<") {
		t.Fatalf("nodes %d: %v…", len(nodes), nodes[:min(len(nodes), 10)])
	}
	other := s3Items(0)[7]
	if rec, ok, err := l.Node(other); ok || err != nil || !models.Foreign(l, layouts.MapView(other)) {
		t.Fatalf("another bucket's item read as %v %v %v", rec, ok, err)
	}
}

// Writing: the key is the path; a path id whose parent is not its prefix,
// or with an empty name, is refused where it is.
func TestFullPathItems(t *testing.T) {
	l, _ := loadS3(t)
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	node := func(path ...string) *transform.Node {
		parent := ""
		if len(path) > 1 {
			parent = path[len(path)-2]
		}
		return &transform.Node{Record: transform.Record{ID: path[len(path)-1], Parent: parent, Attrs: transform.Attrs{"etag": s("x")}}, Depth: len(path) - 1, Path: path}
	}
	var got []string
	if err := l.Items(node("photos", "photos/2024", "photos/2024/a.jpg"), func(it layouts.Item) { got = append(got, layoutstest.DDBJSON(it)) }); err != nil {
		t.Fatal(err)
	}
	want := layoutstest.DDBJSON(layouts.Item{"bucket": s("media"), "key": s("photos/2024/a.jpg"), "etag": s("x")})
	if len(got) != 1 || got[0] != want {
		t.Fatalf("items %v, want %s", got, want)
	}
	// A folder (an inner node without attributes) has no item; an inner
	// node with attributes (an object that is a folder too) and an empty
	// leaf have theirs; Measure counts the same.
	for _, tc := range []struct {
		inner, attrs bool
		want         int
	}{{true, false, 0}, {true, true, 1}, {false, false, 1}} {
		n := node("photos", "photos/2024")
		n.Inner = tc.inner
		if !tc.attrs {
			n.Attrs = transform.Attrs{}
		}
		got := 0
		if err := l.Items(n, func(layouts.Item) { got++ }); err != nil || got != tc.want {
			t.Errorf("inner %v, attributes %v: %d items (%v), want %d", tc.inner, tc.attrs, got, err, tc.want)
		}
		children := 0
		if tc.inner {
			children = 1
		}
		st := &transform.Stats{ID: n.ID, ParentID: n.Parent, RootID: "photos", Depth: 1, AttrBytes: transform.AttrsSize(n.Attrs), Children: children}
		m := layouts.NewMeasure(l)
		l.Measure(st, m)
		if m.Items != int64(tc.want) || m.Nodes != 1 {
			t.Errorf("inner %v, attributes %v: Measure %d items of %d nodes, want %d of 1", tc.inner, tc.attrs, m.Items, m.Nodes, tc.want)
		}
	}
	for _, tc := range []struct {
		path []string
		msg  string
	}{
		{[]string{"photos", "videos/a.mp4"}, `the path id "videos/a.mp4" has the parent "photos", but a path id's parent is the id without its last name, "videos"`},
		{[]string{"photos", "photos//a"}, `the path id "photos//a" has an empty name`},
		{[]string{"a/b"}, `"a/b" is a root, but a root's path id holds no "/"`},
		{[]string{"a", "b"}, `the path id "b" has no "/", so it is a root's, but its parent is "a"`},
	} {
		err := l.Items(node(tc.path...), func(layouts.Item) { t.Fatalf("%v: an item was emitted", tc.path) })
		if err == nil || !strings.Contains(err.Error(), tc.msg) || !errors.Is(err, transform.ErrPathID) {
			t.Errorf("%v: %v, want %q", tc.path, err, tc.msg)
		}
	}
}

// A constant key is a full-path model's alone, and such a model is checked
// when loaded.
func TestFullPathModelErrors(t *testing.T) {
	tests := []struct{ name, model, want string }{
		{"sort key not the path", `{"layout": "adjacency", "path_ids": true, "delimiter": "/", "table": {"partition_key": {"name": "b", "template": "media"}, "sort_key": {"name": "k", "template": "{id}#x"}}}`,
			`table.sort_key.template: "{id}#x": under a constant partition key the sort key is the node's whole path`},
		{"no sort key", `{"layout": "adjacency", "path_ids": true, "delimiter": "/", "table": {"partition_key": {"name": "b", "template": "media"}}}`,
			`table.sort_key: a constant partition key needs a sort key`},
		{"an index", `{"layout": "adjacency", "path_ids": true, "delimiter": "/", "table": {"partition_key": {"name": "b", "template": "media"}, "sort_key": {"name": "k", "template": "{id}"}},
			"indexes": [{"name": "byp", "serves": "ByParent", "partition_key": {"name": "p", "template": "{parent}"}}]}`, `indexes: a model whose sort key is the whole path reads its table alone`},
		{"implicit without path ids", `{"layout": "adjacency", "implicit_inner": true, "delimiter": "/", "table": {"partition_key": {"name": "b", "template": "{id}"}}}`,
			`implicit_inner: an implicit inner node is named by its descendants' path ids`},
		{"located without implicit inner", `{"layout": "adjacency", "path_ids": true, "delimiter": "#", "table": {"partition_key": {"name": "S", "template": "{name}"}},
			"indexes": [{"name": "loc", "serves": "ByParent", "partition_key": {"name": "C", "template": "{root}"}, "sort_key": {"name": "P", "template": "{parent_subpath}"}}]}`,
			`implicit_inner: a table keyed by the node's name ({name}) holds the leaves alone`},
		{"located index by parent", `{"layout": "adjacency", "path_ids": true, "implicit_inner": true, "delimiter": "#", "table": {"partition_key": {"name": "S", "template": "{name}"}},
			"indexes": [{"name": "loc", "serves": "ByParent", "partition_key": {"name": "C", "template": "{parent}"}}]}`,
			`indexes[0].partition_key.template: "{parent}": a model keyed by {name} lists a node's subtree from the index partition of its root`},
		{"located index projecting keys", `{"layout": "adjacency", "path_ids": true, "implicit_inner": true, "delimiter": "#", "table": {"partition_key": {"name": "S", "template": "{name}"}},
			"indexes": [{"name": "loc", "serves": "ByParent", "partition_key": {"name": "C", "template": "{root}"}, "sort_key": {"name": "P", "template": "{parent_subpath}"}, "projection": {"type": "KEYS_ONLY"}}]}`,
			`indexes[0].projection: a model keyed by {name} reads its leaves whole from the index: project ALL`},
		{"path ids on path", `{"layout": "path", "path_ids": true, "delimiter": "/", "table": {"partition_key": {"name": "b", "template": "{id}"}}}`,
			`path_ids: a model's path ids and implicit inner nodes are read and written with the adjacency base`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := models.ParseModel("m.json", []byte(tc.model))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
