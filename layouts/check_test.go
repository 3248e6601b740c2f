package layouts_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

func sv(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func nv(s string) types.AttributeValue { return &types.AttributeValueMemberN{Value: s} }

// chain returns Stats for the last node of a chain of ids.
func chain(ids []string, attrBytes int) *transform.Stats {
	s := &transform.Stats{ID: ids[len(ids)-1], RootID: ids[0], Depth: len(ids) - 1, AttrBytes: attrBytes, Subtree: 1, TreeSize: len(ids), Roots: 1}
	for i, id := range ids {
		s.PathBytes += len(id)
		if i < len(ids)-1 {
			s.MaxAncestorIDBytes = max(s.MaxAncestorIDBytes, len(id))
		}
	}
	if len(ids) > 1 {
		s.ParentID = ids[len(ids)-2]
	}
	return s
}

func repeat(id string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = id + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + strings.Repeat("0", i/26)
	}
	return ids
}

func TestCheck(t *testing.T) {
	long := func(n int) string { return strings.Repeat("é", n/2) }
	deep := repeat(strings.Repeat("n", 30), 40) // Path of about 40 × 32 bytes
	tests := []struct {
		name    string
		layout  string
		opts    layouts.Options
		stats   *transform.Stats
		wantErr error
		want    []string // substrings of the message
	}{
		{"path fine", layouts.PathName, layouts.Options{}, chain([]string{"CM1", "CM2", "CM4"}, 100), nil, nil},
		{"path delimiter in id", layouts.PathName, layouts.Options{}, chain([]string{"CM1", "a|b"}, 0), transform.ErrDelimiter, []string{`"|"`, "--delimiter"}},
		{"path other delimiter", layouts.PathName, layouts.Options{Delimiter: "/"}, chain([]string{"CM1", "a/b"}, 0), transform.ErrDelimiter, []string{`"/"`}},
		{"path | fine with / delimiter", layouts.PathName, layouts.Options{Delimiter: "/"}, chain([]string{"CM1", "a|b"}, 0), nil, nil},
		{"path deep Path over 1024", layouts.PathName, layouts.Options{}, chain(deep, 0), transform.ErrKeyTooLong,
			[]string{"sort key Path of index ByPath", "over the limit of 1024", "closure"}},
		{"path renamed index in message", layouts.PathName, layouts.Options{Attr: map[string]string{"ByPath": "GSI2", "Path": "P"}}, chain(deep, 0), transform.ErrKeyTooLong,
			[]string{"sort key P of index GSI2"}},
		{"sharded deep Path", layouts.ShardedName, layouts.Options{}, chain(deep, 0), transform.ErrKeyTooLong, []string{"sort key Path of index ByPath"}},
		{"path id over 1024 is a ByParent sort key", layouts.PathName, layouts.Options{}, chain([]string{"r", long(1100)}, 0), transform.ErrKeyTooLong,
			[]string{"sort key Id of index ByParent is 1100 bytes"}},
		{"path id over 2048", layouts.PathName, layouts.Options{}, chain([]string{long(2100)}, 0), transform.ErrKeyTooLong,
			[]string{"partition key Id of the table is 2100 bytes", "over the limit of 2048", "partition key TreeId of index ByPath"}},
		{"closure id over 2048", layouts.ClosureName, layouts.Options{}, chain([]string{long(2050)}, 0), transform.ErrKeyTooLong,
			[]string{"partition key Id of the table", "partition key AncestorId of index ByAncestor"}},
		{"closure deep is fine", layouts.ClosureName, layouts.Options{}, chain(deep, 0), nil, nil},
		{"closure long ancestor", layouts.ClosureName, layouts.Options{}, chain([]string{long(2050), "b"}, 0), transform.ErrKeyTooLong,
			[]string{"AncestorId of index ByAncestor is 2050 bytes", "an id above this node"}},
		{"closure no delimiter", layouts.ClosureName, layouts.Options{}, chain([]string{"a|b", "c¦d"}, 0), nil, nil},
		{"adjacency no delimiter", layouts.AdjacencyName, layouts.Options{}, chain([]string{"a|b", "c¦d"}, 0), nil, nil},
		{"adjacency deep is fine", layouts.AdjacencyName, layouts.Options{}, chain(deep, 0), nil, nil},
		{"adjacency id over 1024 is a ByParent sort key", layouts.AdjacencyName, layouts.Options{}, chain([]string{"r", long(1100)}, 0), transform.ErrKeyTooLong,
			[]string{"sort key Id of index ByParent"}},
		{"adjacency root id over 1024 is fine", layouts.AdjacencyName, layouts.Options{}, chain([]string{long(1100)}, 0), nil, nil},
		{"adjacency id over 2048", layouts.AdjacencyName, layouts.Options{}, chain([]string{long(2100)}, 0), transform.ErrKeyTooLong,
			[]string{"partition key Id of the table"}},
		{"prefix delimiter in id", layouts.PrefixName, layouts.Options{}, chain([]string{"a¦b"}, 0), transform.ErrDelimiter, []string{`"¦"`, "prefix"}},
		{"prefix deep Key over 2048", layouts.PrefixName, layouts.Options{}, chain(repeat(strings.Repeat("k", 60), 40), 0), transform.ErrKeyTooLong,
			[]string{"partition key Key of the table"}},
		{"prefix id over 1024 is the listing sort key", layouts.PrefixName, layouts.Options{}, chain([]string{long(1030)}, 0), transform.ErrKeyTooLong,
			[]string{"sort key Child of the table is 1030 bytes"}},
		{"path item over 400 KB", layouts.PathName, layouts.Options{}, chain([]string{"a"}, transform.MaxItemBytes), transform.ErrItemTooLarge,
			[]string{"bytes, over DynamoDB's limit of 409600"}},
		{"path item of exactly 400 KB", layouts.PathName, layouts.Options{}, chain([]string{"a"}, transform.MaxItemBytes-21), nil, nil},
		{"closure ancestor row over 400 KB", layouts.ClosureName, layouts.Options{}, chain([]string{"a", "b"}, transform.MaxItemBytes-30), transform.ErrItemTooLarge,
			[]string{"--closure-copy"}},
		{"closure copy none keeps ancestor rows small", layouts.ClosureName, layouts.Options{ClosureCopy: []string{}}, chain([]string{"a", "b"}, transform.MaxItemBytes-60), nil, nil},
		{"prefix item over 400 KB", layouts.PrefixName, layouts.Options{}, chain([]string{"a"}, transform.MaxItemBytes), transform.ErrItemTooLarge, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := layouts.New(tt.layout, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			err = layouts.Check(l, tt.stats)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Check: %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Check: %v, want %v", err, tt.wantErr)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Check: %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestCheckAll: a node with several problems gets all of them.
func TestCheckAll(t *testing.T) {
	l, err := layouts.New(layouts.PathName, layouts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = layouts.Check(l, chain([]string{strings.Repeat("|", 2100)}, transform.MaxItemBytes))
	for _, want := range []error{transform.ErrDelimiter, transform.ErrKeyTooLong, transform.ErrItemTooLarge} {
		if !errors.Is(err, want) {
			t.Errorf("Check: %v, does not include %v", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("Check: %q spans lines", err)
	}
}

// TestCheckItemSizeBoundary: Check's size limit agrees with the size of the
// item Items builds, at the byte.
func TestCheckItemSizeBoundary(t *testing.T) {
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			l, err := layouts.New(name, layouts.Options{})
			if err != nil {
				t.Fatal(err)
			}
			node := &transform.Node{Record: transform.Record{ID: "b", Parent: "a"}, Depth: 1, Path: []string{"a", "b"}}
			var biggest int
			for _, pad := range []int{0, 1} {
				node.Attrs = transform.Attrs{"v": sv("")}
				biggest = 0
				if err := l.Items(node, func(it layouts.Item) { biggest = max(biggest, transform.ItemSize(it)) }); err != nil {
					t.Fatal(err)
				}
				node.Attrs["v"] = sv(strings.Repeat("x", transform.MaxItemBytes-biggest+pad))
				biggest = 0
				if err := l.Items(node, func(it layouts.Item) { biggest = max(biggest, transform.ItemSize(it)) }); err != nil {
					t.Fatal(err)
				}
				s := chain([]string{"a", "b"}, transform.AttrsSize(node.Attrs))
				s.CopyBytes = layouts.CopyBytes(l, node.Attrs)
				err := layouts.Check(l, s)
				if tooLarge := biggest > transform.MaxItemBytes; tooLarge != errors.Is(err, transform.ErrItemTooLarge) {
					t.Errorf("largest item %d bytes: Check says %v", biggest, err)
				}
			}
		})
	}
}

func TestCheckAttrName(t *testing.T) {
	tests := []struct {
		name   string
		layout string
		opts   layouts.Options
		attr   string
		want   string // "" = allowed
	}{
		{"path Path", layouts.PathName, layouts.Options{}, "Path", `attribute "Path" is a layout attribute of path; rename the layout's with --attr Path=NEWNAME`},
		{"path ParentId", layouts.PathName, layouts.Options{}, "ParentId", "--attr ParentId=NEWNAME"},
		{"path user name", layouts.PathName, layouts.Options{}, "path", ""},
		{"path renamed frees the name", layouts.PathName, layouts.Options{Attr: map[string]string{"Path": "P"}}, "Path", ""},
		{"path renamed name is taken", layouts.PathName, layouts.Options{Attr: map[string]string{"Path": "P"}}, "P", "renamed by --attr Path=P"},
		{"sharded GraphId", layouts.ShardedName, layouts.Options{}, "GraphId", "--attr GraphId=NEWNAME"},
		{"sharded has no TreeId", layouts.ShardedName, layouts.Options{}, "TreeId", ""},
		{"closure RelativeDepth", layouts.ClosureName, layouts.Options{}, "RelativeDepth", "--attr RelativeDepth=NEWNAME"},
		{"closure index name is not an attribute", layouts.ClosureName, layouts.Options{}, "ByAncestor", ""},
		{"prefix Key", layouts.PrefixName, layouts.Options{}, "Key", "--attr Key=NEWNAME"},
		{"prefix delimiter first", layouts.PrefixName, layouts.Options{}, "¦x", "starts with"},
		{"prefix delimiter inside", layouts.PrefixName, layouts.Options{}, "x¦", ""},
		{"prefix other delimiter", layouts.PrefixName, layouts.Options{Delimiter: "/"}, "¦x", ""},
		{"path delimiter first is fine", layouts.PathName, layouts.Options{}, "|x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := layouts.New(tt.layout, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			err = layouts.CheckAttrName(l, tt.attr)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("CheckAttrName(%q): %v, want nil", tt.attr, err)
				}
				return
			}
			if !errors.Is(err, transform.ErrReservedAttr) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CheckAttrName(%q): %v, want ErrReservedAttr saying %q", tt.attr, err, tt.want)
			}
		})
	}
}

// TestItemsRefuses: Items fails, rather than writing items that cannot be
// read back, on what Check and CheckAttrName would have caught.
func TestItemsRefuses(t *testing.T) {
	node := func(attrs transform.Attrs, path ...string) *transform.Node {
		n := &transform.Node{Record: transform.Record{ID: path[len(path)-1], Attrs: attrs}, Depth: len(path) - 1, Path: path}
		if len(path) > 1 {
			n.Parent = path[len(path)-2]
		}
		return n
	}
	tests := []struct {
		name    string
		layout  string
		node    *transform.Node
		wantErr error
	}{
		{"path reserved attribute", layouts.PathName, node(transform.Attrs{"Depth": nv("1")}, "a"), transform.ErrReservedAttr},
		{"path delimiter in ancestor", layouts.PathName, node(nil, "a|b", "c"), transform.ErrDelimiter},
		{"closure reserved attribute", layouts.ClosureName, node(transform.Attrs{"AncestorId": sv("x")}, "a"), transform.ErrReservedAttr},
		{"prefix delimiter attribute", layouts.PrefixName, node(transform.Attrs{"¦a": sv("x")}, "a"), transform.ErrReservedAttr},
		{"prefix delimiter in id", layouts.PrefixName, node(nil, "a", "b¦"), transform.ErrDelimiter},
		{"path inconsistent node", layouts.PathName, &transform.Node{Record: transform.Record{ID: "b"}, Depth: 1, Path: []string{"a", "b"}}, nil},
		{"closure empty path", layouts.ClosureName, &transform.Node{Record: transform.Record{ID: "b"}}, nil},
		{"prefix negative depth", layouts.PrefixName, &transform.Node{Record: transform.Record{ID: "b"}, Depth: -1}, nil},
		{"path empty id", layouts.PathName, &transform.Node{Path: []string{""}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := layouts.New(tt.layout, layouts.Options{})
			if err != nil {
				t.Fatal(err)
			}
			emitted := 0
			err = l.Items(tt.node, func(layouts.Item) { emitted++ })
			if err == nil || emitted > 0 {
				t.Fatalf("Items: %v after %d items, want an error and none", err, emitted)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Items: %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name   string
		layout string
		opts   layouts.Options
		want   string // "" = no error
	}{
		{"unknown layout", "tree", layouts.Options{}, "choose one of path, sharded-path, closure, prefix, adjacency"},
		{"unknown attr", layouts.PathName, layouts.Options{Attr: map[string]string{"GraphId": "G"}}, `no attribute or index "GraphId"; its names are Id, ParentId, TreeId, Path, Depth, ByParent, ByPath`},
		{"attribute collision", layouts.PathName, layouts.Options{Attr: map[string]string{"Id": "Path"}}, `the same name "Path"`},
		{"collision between two renames", layouts.ClosureName, layouts.Options{Attr: map[string]string{"Id": "X", "AncestorId": "X"}}, `the same name "X"`},
		{"index collision", layouts.PathName, layouts.Options{Attr: map[string]string{"ByPath": "ByParent"}}, `the same name "ByParent"`},
		{"swap is fine", layouts.PathName, layouts.Options{Attr: map[string]string{"ByPath": "ByParent", "ByParent": "ByPath"}}, ""},
		{"attribute may share an index's name", layouts.PathName, layouts.Options{Attr: map[string]string{"Path": "ByPath"}}, ""},
		{"bad index name", layouts.PathName, layouts.Options{Attr: map[string]string{"ByPath": "a b"}}, "an index name is 3 to 255"},
		{"long attribute name", layouts.PrefixName, layouts.Options{Attr: map[string]string{"Key": strings.Repeat("k", 256)}}, "1 to 255 bytes"},
		{"negative shards", layouts.ShardedName, layouts.Options{Shards: -1}, "at least 1 shard"},
		{"shards ignored by path", layouts.PathName, layouts.Options{Shards: 9}, ""},
		{"two-character delimiter", layouts.PathName, layouts.Options{Delimiter: "::"}, "give one character"},
		{"invalid UTF-8 delimiter", layouts.PrefixName, layouts.Options{Delimiter: "\xff"}, "give one character"},
		{"closure has no delimiter", layouts.ClosureName, layouts.Options{Delimiter: "|"}, "has no delimiter"},
		{"adjacency has no delimiter", layouts.AdjacencyName, layouts.Options{Delimiter: "|"}, "the adjacency layout has no delimiter"},
		{"adjacency unknown attr", layouts.AdjacencyName, layouts.Options{Attr: map[string]string{"Path": "P"}}, `no attribute or index "Path"; its names are Id, ParentId, ByParent`},
		{"closure copy of a layout attribute", layouts.ClosureName, layouts.Options{ClosureCopy: []string{"ParentId"}}, "--closure-copy ParentId"},
		{"closure copy empty name", layouts.ClosureName, layouts.Options{ClosureCopy: []string{"a", ""}}, "empty attribute name"},
		{"prefix attribute starting with delimiter", layouts.PrefixName, layouts.Options{Attr: map[string]string{"Key": "¦K"}}, "starts with the delimiter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := layouts.New(tt.layout, tt.opts)
			if tt.want == "" {
				if err != nil || l == nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

func TestParseAttrRenames(t *testing.T) {
	tests := []struct {
		name  string
		flags []string
		want  map[string]string
		err   string
	}{
		{"none", nil, map[string]string{}, ""},
		{"two", []string{"Id=ComponentId", "ByPath=GSI2"}, map[string]string{"Id": "ComponentId", "ByPath": "GSI2"}, ""},
		{"spaces trimmed", []string{" Id = C "}, map[string]string{"Id": "C"}, ""},
		{"same twice", []string{"Id=C", "Id=C"}, map[string]string{"Id": "C"}, ""},
		{"no equals", []string{"Id"}, nil, "want OLD=NEW"},
		{"empty new", []string{"Id="}, nil, "want OLD=NEW"},
		{"empty old", []string{"=X"}, nil, "want OLD=NEW"},
		{"conflict", []string{"Id=A", "Id=B"}, nil, `renames "Id" twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := layouts.ParseAttrRenames(tt.flags)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseAttrRenames: %v, want an error saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("ParseAttrRenames = %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Fatalf("ParseAttrRenames = %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestKeyOf(t *testing.T) {
	closure := layouts.TableSpec{PK: layouts.KeyAttr{Name: "Id", Type: types.ScalarAttributeTypeS}, SK: &layouts.KeyAttr{Name: "RelativeDepth", Type: types.ScalarAttributeTypeN}}
	prefix := layouts.TableSpec{PK: layouts.KeyAttr{Name: "Key", Type: types.ScalarAttributeTypeS}, SK: &layouts.KeyAttr{Name: "Child", Type: types.ScalarAttributeTypeS}}
	tests := []struct {
		name string
		spec layouts.TableSpec
		a, b layouts.Item
		same bool
	}{
		{"same key, other attributes", closure, layouts.Item{"Id": sv("a"), "RelativeDepth": nv("1"), "x": sv("1")}, layouts.Item{"Id": sv("a"), "RelativeDepth": nv("1")}, true},
		{"numbers by value", closure, layouts.Item{"Id": sv("a"), "RelativeDepth": nv("1")}, layouts.Item{"Id": sv("a"), "RelativeDepth": nv("1.00")}, true},
		{"numbers by value with exponent", closure, layouts.Item{"Id": sv("a"), "RelativeDepth": nv("10")}, layouts.Item{"Id": sv("a"), "RelativeDepth": nv("+1e1")}, true},
		{"zero is zero", closure, layouts.Item{"Id": sv("a"), "RelativeDepth": nv("0")}, layouts.Item{"Id": sv("a"), "RelativeDepth": nv("-0.0")}, true},
		{"different numbers", closure, layouts.Item{"Id": sv("a"), "RelativeDepth": nv("1")}, layouts.Item{"Id": sv("a"), "RelativeDepth": nv("10")}, false},
		{"sign matters", closure, layouts.Item{"Id": sv("a"), "RelativeDepth": nv("1")}, layouts.Item{"Id": sv("a"), "RelativeDepth": nv("-1")}, false},
		{"no ambiguity at the seam", prefix, layouts.Item{"Key": sv("ab"), "Child": sv("c")}, layouts.Item{"Key": sv("a"), "Child": sv("bc")}, false},
		{"seam with digits", prefix, layouts.Item{"Key": sv("1:a"), "Child": sv("b")}, layouts.Item{"Key": sv("1"), "Child": sv("a1:b")}, false},
		{"S is not B", prefix, layouts.Item{"Key": sv("a"), "Child": sv("b")}, layouts.Item{"Key": &types.AttributeValueMemberB{Value: []byte("a")}, "Child": sv("b")}, false},
		{"missing is not empty", prefix, layouts.Item{"Key": sv("a")}, layouts.Item{"Key": sv("a"), "Child": sv("")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ka, kb := layouts.KeyOf(tt.spec, tt.a), layouts.KeyOf(tt.spec, tt.b)
			if (ka == kb) != tt.same {
				t.Fatalf("KeyOf: %q and %q, want same = %v", ka, kb, tt.same)
			}
		})
	}
}

func TestIndexesOf(t *testing.T) {
	l, err := layouts.New(layouts.PathName, layouts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec := l.Table()
	tests := []struct {
		name string
		item layouts.Item
		want int
	}{
		{"root lands in ByPath only", layouts.Item{"Id": sv("a"), "TreeId": sv("a"), "Path": sv("a")}, 1},
		{"child lands in both", layouts.Item{"Id": sv("b"), "ParentId": sv("a"), "TreeId": sv("a"), "Path": sv("a|b")}, 2},
		{"partition key without sort key", layouts.Item{"Id": sv("b"), "TreeId": sv("a")}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := layouts.IndexesOf(spec, tt.item); got != tt.want {
				t.Fatalf("IndexesOf = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestNodeErrors: items that are not of the layout are refused with an
// error that wraps ErrItem and names the attribute.
func TestNodeErrors(t *testing.T) {
	tests := []struct {
		name   string
		layout string
		opts   layouts.Options
		item   layouts.Item
		want   string
	}{
		{"path no Id", layouts.PathName, layouts.Options{}, layouts.Item{"TreeId": sv("a"), "Path": sv("a"), "Depth": nv("0")}, `"Id" is missing`},
		{"path Id is N", layouts.PathName, layouts.Options{}, layouts.Item{"Id": nv("1"), "TreeId": sv("a"), "Path": sv("1"), "Depth": nv("0")}, `"Id" is N, want S`},
		{"path nil value", layouts.PathName, layouts.Options{}, layouts.Item{"Id": nil, "TreeId": sv("a"), "Path": sv("1"), "Depth": nv("0")}, `"Id" is no value`},
		{"path typed nil", layouts.PathName, layouts.Options{}, layouts.Item{"Id": (*types.AttributeValueMemberS)(nil)}, `"Id" is a nil S`},
		{"path no Depth", layouts.PathName, layouts.Options{}, layouts.Item{"Id": sv("a"), "TreeId": sv("a"), "Path": sv("a")}, `"Depth" is missing`},
		{"path Depth not whole", layouts.PathName, layouts.Options{}, layouts.Item{"Id": sv("a"), "TreeId": sv("a"), "Path": sv("a"), "Depth": nv("0.5")}, "whole number"},
		{"path wrong delimiter", layouts.PathName, layouts.Options{}, layouts.Item{"Id": sv("b"), "ParentId": sv("a"), "TreeId": sv("a"), "Path": sv("a/b"), "Depth": nv("1")}, "--delimiter"},
		{"path parent at depth 0", layouts.PathName, layouts.Options{}, layouts.Item{"Id": sv("b"), "ParentId": sv("a"), "TreeId": sv("b"), "Path": sv("b"), "Depth": nv("0")}, "exactly when"},
		{"path renamed attr missing", layouts.PathName, layouts.Options{Attr: map[string]string{"Id": "C"}}, layouts.Item{"Id": sv("a"), "TreeId": sv("a"), "Path": sv("a"), "Depth": nv("0")}, `"C" is missing`},
		{"sharded no GraphId", layouts.ShardedName, layouts.Options{}, layouts.Item{"Id": sv("a"), "TreeId": sv("a"), "Path": sv("a"), "Depth": nv("0")}, `"GraphId" is missing`},
		{"closure no RelativeDepth", layouts.ClosureName, layouts.Options{}, layouts.Item{"Id": sv("a"), "AncestorId": sv("a")}, `"RelativeDepth" is missing`},
		{"closure negative", layouts.ClosureName, layouts.Options{}, layouts.Item{"Id": sv("a"), "AncestorId": sv("a"), "RelativeDepth": nv("-1")}, "whole number"},
		{"closure self row of another", layouts.ClosureName, layouts.Options{}, layouts.Item{"Id": sv("a"), "AncestorId": sv("b"), "RelativeDepth": nv("0")}, "not the row's own"},
		{"prefix no Child", layouts.PrefixName, layouts.Options{}, layouts.Item{"Key": sv("¦a")}, `"Child" is missing`},
		{"prefix wrong delimiter", layouts.PrefixName, layouts.Options{}, layouts.Item{"Key": sv("/a"), "Child": sv("/")}, "does not start with"},
		{"prefix empty id", layouts.PrefixName, layouts.Options{}, layouts.Item{"Key": sv("¦a¦"), "Child": sv("¦")}, "empty id"},
		{"prefix empty parent", layouts.PrefixName, layouts.Options{}, layouts.Item{"Key": sv("¦¦a"), "Child": sv("¦")}, "empty id"},
		{"prefix listing without trailing delimiter", layouts.PrefixName, layouts.Options{}, layouts.Item{"Key": sv("¦a"), "Child": sv("b")}, "does not end with"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := layouts.New(tt.layout, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			_, ok, err := l.Node(tt.item)
			if ok || !errors.Is(err, layouts.ErrItem) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Node: %v, %v, want ErrItem saying %q", ok, err, tt.want)
			}
		})
	}
}

// TestNodeNotANode: listing rows and ancestor rows are not nodes, and not errors.
func TestNodeNotANode(t *testing.T) {
	tests := []struct {
		name   string
		layout string
		item   layouts.Item
	}{
		{"closure ancestor row", layouts.ClosureName, layouts.Item{"Id": sv("b"), "AncestorId": sv("a"), "RelativeDepth": nv("1"), "ParentId": sv("a")}},
		{"prefix listing row", layouts.PrefixName, layouts.Item{"Key": sv("¦a¦"), "Child": sv("b")}},
		{"prefix root listing row", layouts.PrefixName, layouts.Item{"Key": sv("¦"), "Child": sv("a")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := layouts.New(tt.layout, layouts.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok, err := l.Node(tt.item); ok || err != nil {
				t.Fatalf("Node: %v, %v, want false, nil", ok, err)
			}
		})
	}
}

// TestReplaceUnits prices a put over an existing item by DynamoDB's rules:
// the larger item for the table, and per index nothing, one write or two.
func TestReplaceUnits(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	spec := layouts.TableSpec{PK: layouts.KeyAttr{Name: "Id", Type: types.ScalarAttributeTypeS},
		Indexes: []layouts.IndexSpec{
			{Name: "ByParent", PK: layouts.KeyAttr{Name: "ParentId", Type: types.ScalarAttributeTypeS}},
			{Name: "Keys", PK: layouts.KeyAttr{Name: "Tree", Type: types.ScalarAttributeTypeS}, Projection: types.ProjectionTypeKeysOnly},
		}}
	big := strings.Repeat("x", 1500) // 2 WCU with the rest of the item
	old := layouts.Item{"Id": s("a"), "ParentId": s("p"), "Tree": s("t"), "note": s(big)}
	cases := []struct {
		name string
		new  layouts.Item
		want int
	}{
		// Table at the larger (2); ByParent same key, changed: 2; Keys
		// (KEYS_ONLY) same key: nothing.
		{"smaller, same keys", layouts.Item{"Id": s("a"), "ParentId": s("p"), "Tree": s("t"), "note": s("y")}, 2 + 2},
		// ByParent's key changes: delete (2) and put (1); Keys: nothing.
		{"moved", layouts.Item{"Id": s("a"), "ParentId": s("q"), "Tree": s("t"), "note": s("y")}, 2 + 2 + 1},
		// Leaves ByParent (a delete of 2) and Keys' key changes: its
		// copies hold the keys alone, 1 KB at most each (1 + 1).
		{"root in another tree", layouts.Item{"Id": s("a"), "Tree": s("u"), "note": s("y")}, 2 + 2 + 1 + 1},
	}
	for _, c := range cases {
		if got := layouts.ReplaceUnits(spec, old, c.new); got != c.want {
			t.Errorf("%s: %d WCU, want %d", c.name, got, c.want)
		}
	}
	if got, want := layouts.ReplaceUnits(spec, nil, old), layouts.WriteUnits(spec, old); got != want {
		t.Errorf("a new item: %d WCU, want WriteUnits' %d", got, want)
	}
	// The table and ByParent (ALL) write the whole item, Keys its keys.
	if got := layouts.WriteUnits(spec, old); got != 2+2+1 {
		t.Errorf("WriteUnits: %d, want 5", got)
	}
}
