package layouts_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/layouts/layoutstest"
	"github.com/treeport/treeport/models"
	"github.com/treeport/treeport/transform"
)

// innerModels are models whose ByPath sort key is {inner} alone, which is
// "" for a root and a child of a root: refused when the model is loaded
// (emptyKeyModels), or, sparse, left off those nodes' items.
var innerModels = map[string]string{
	"inner-sparse": `{"layout": "path", "delimiter": "/",
		"table": {"partition_key": {"name": "ID", "template": "{id}"}},
		"indexes": [{"name": "gsi1", "serves": "ByPath", "sparse": true,
			"partition_key": {"name": "Root", "template": "{root}"},
			"sort_key": {"name": "Path", "template": "{inner}"}}]}`,
	// {subpath} is "" for a root alone, which does not have it.
	"subpath-off-roots": `{"layout": "path", "delimiter": "/",
		"table": {"partition_key": {"name": "ID", "template": "{id}"}},
		"indexes": [{"name": "gsi1", "serves": "ByPath",
			"partition_key": {"name": "Root", "template": "{root}"},
			"sort_key": {"name": "Path", "template": "/{path}"}},
			{"name": "gsi2", "serves": "ByParent",
			"partition_key": {"name": "Up", "template": "{parent}"},
			"sort_key": {"name": "Below", "template": "{subpath}", "absent_on_root": true}}]}`,
}

// emptyKeyModels are models one of whose keys is "" for some node, each
// with who that is: refused when loaded, naming the field, the attribute,
// the index and what to do.
var emptyKeyModels = map[string]struct{ text, field, who string }{
	"inner": {`{"layout": "path", "delimiter": "/",
		"table": {"partition_key": {"name": "ID", "template": "{id}"}},
		"indexes": [{"name": "gsi1", "serves": "ByPath",
			"partition_key": {"name": "Root", "template": "{root}", "absent_on_root": true},
			"sort_key": {"name": "Path", "template": "{inner}", "absent_on_root": true}}]}`, "indexes[0].sort_key.template", "for a child of a root"},
	"inner-on-roots": {`{"layout": "path", "delimiter": "/",
		"table": {"partition_key": {"name": "ID", "template": "{id}"}},
		"indexes": [{"name": "gsi1", "serves": "ByPath",
			"partition_key": {"name": "Root", "template": "{root}"},
			"sort_key": {"name": "Path", "template": "{inner}"}}]}`, "indexes[0].sort_key.template", "for a root and a child of a root"},
	// Path is also a key of a second, not sparse index: an empty value
	// there is refused, sparse or not.
	"inner-shared": {`{"layout": "path", "delimiter": "/",
		"table": {"partition_key": {"name": "ID", "template": "{id}"}},
		"indexes": [{"name": "gsi1", "serves": "ByPath", "sparse": true,
			"partition_key": {"name": "Root", "template": "{root}"},
			"sort_key": {"name": "Path", "template": "{inner}"}},
			{"name": "gsi2", "serves": "ByParent",
			"partition_key": {"name": "Up", "template": "{parent}"},
			"sort_key": {"name": "Path", "template": "{inner}"}}]}`, "indexes[0].sort_key.template", "for a root and a child of a root"},
	"subpath-on-roots": {`{"layout": "path", "delimiter": "/",
		"table": {"partition_key": {"name": "ID", "template": "{id}"}},
		"indexes": [{"name": "gsi1", "serves": "ByPath",
			"partition_key": {"name": "Root", "template": "{root}"},
			"sort_key": {"name": "Path", "template": "/{path}"}},
			{"name": "gsi2", "serves": "ByParent",
			"partition_key": {"name": "Up", "template": "{parent}"},
			"sort_key": {"name": "Below", "template": "{subpath}"}}]}`, "indexes[1].sort_key.template", "for a root"},
}

// TestEmptyKeyModelRefusedAtLoad: a model that can give a node an empty
// key of the table or of an index that is not sparse is refused when it is
// loaded (ErrEmptyKey), naming the field, the attribute, the index, who
// the nodes are and the fix, not node by node.
func TestEmptyKeyModelRefusedAtLoad(t *testing.T) {
	for name, c := range emptyKeyModels {
		t.Run(name, func(t *testing.T) {
			_, err := models.ParseModel(name+".json", []byte(c.text))
			var me *models.ModelError
			if !errors.As(err, &me) || !errors.Is(err, transform.ErrEmptyKey) {
				t.Fatalf("ParseModel: %v, want a *ModelError wrapping ErrEmptyKey", err)
			}
			if me.Field != c.field {
				t.Errorf("field %q, want %q", me.Field, c.field)
			}
			for _, w := range []string{"would be empty " + c.who, "of index gsi", `"sparse": true`, "literal text"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v does not say %q", err, w)
				}
			}
		})
	}
}

// emptyKeyOf names a key attribute of the table or an index that item
// holds as an empty string or empty binary, or "" when there is none. It
// reads the spec itself rather than calling CheckKeys, which it checks.
func emptyKeyOf(spec layouts.TableSpec, item layouts.Item) string {
	keys := []*layouts.KeyAttr{&spec.PK, spec.SK}
	for _, ix := range spec.Indexes {
		keys = append(keys, &ix.PK, ix.SK)
	}
	for _, k := range keys {
		if k == nil {
			continue
		}
		switch v := item[k.Name].(type) {
		case *types.AttributeValueMemberS:
			if v.Value == "" {
				return k.Name
			}
		case *types.AttributeValueMemberB:
			if len(v.Value) == 0 {
				return k.Name
			}
		}
	}
	return ""
}

// rootsAndChildren is a forest of roots, each with a few children and
// some grandchildren: the depths where {inner} is empty, and one below.
func rootsAndChildren(rng *rand.Rand) *layoutstest.Forest {
	var ids []string
	var parents []int
	var attrs []transform.Attrs
	used := map[string]bool{}
	add := func(p int) int {
		id := layoutstest.RandomID(rng, used)
		for _, bad := range []string{"/", "|", "¦", "#", "~", "="} {
			id = strings.ReplaceAll(id, bad, "_")
		}
		for used[id] {
			id += "+"
		}
		used[id] = true
		ids, parents, attrs = append(ids, id), append(parents, p), append(attrs, transform.Attrs{"x": &types.AttributeValueMemberS{Value: "1"}})
		return len(ids) - 1
	}
	for range 1 + rng.IntN(4) {
		r := add(-1)
		for range rng.IntN(4) {
			c := add(r)
			for range rng.IntN(3) {
				add(c)
			}
		}
	}
	return layoutstest.NewForest(ids, parents, attrs)
}

// TestNoEmptyKeyReachesAnItem: for every layout, every shipped model, the
// model variants and the {inner} models, on random forests and forests of
// roots and children, no item that Items produces has an empty key
// attribute (the table's or an index's); a node whose key would be empty
// is refused by Check first (ErrEmptyKey, naming the attribute and the
// index), and Items refuses it too rather than emit it.
func TestNoEmptyKeyReachesAnItem(t *testing.T) {
	ls := map[string]layouts.Layout{}
	for _, name := range layouts.Names() {
		l, err := layouts.New(name, layouts.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ls[name] = l
	}
	for name, l := range layoutstest.LoadModels(t) {
		if layouts.PathIDs(l) {
			// Its ids are paths, which this test's forests' are not; the
			// conformance suite runs it on path ids (ModelForest).
			continue
		}
		ls[name] = l
	}
	for name, text := range innerModels {
		l, err := models.ParseModel(name+".json", []byte(text))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ls[name] = l
	}
	// The nodes each of these models must refuse: none, since a model
	// that could give one an empty key is refused when loaded.
	refuses := map[string]func(depth int) bool{
		"inner-sparse":      func(int) bool { return false },
		"subpath-off-roots": func(int) bool { return false },
	}
	rng := rand.New(rand.NewPCG(24, 2))
	for name, l := range ls {
		t.Run(name, func(t *testing.T) {
			spec := l.Table()
			checker := layouts.NewChecker(l)
			refused := 0
			for round := range 30 {
				f := rootsAndChildren(rng)
				if round%2 == 1 {
					f = layoutstest.ModelForest(t, l, rng)
				}
				for i, n := range f.Nodes {
					checkErr := checker.Check(f.StatsFor(l, i))
					var items []layouts.Item
					itemsErr := l.Items(n, func(it layouts.Item) { items = append(items, it) })
					if errors.Is(checkErr, transform.ErrEmptyKey) {
						refused++
						if !errors.Is(itemsErr, transform.ErrEmptyKey) {
							t.Errorf("node %q (depth %d): Check refuses an empty key, Items says %v", n.ID, n.Depth, itemsErr)
						}
						msg := checkErr.Error()
						if !strings.Contains(msg, "Path") || !strings.Contains(msg, "gsi1") && !strings.Contains(msg, "gsi2") {
							t.Errorf("node %q: %q does not name the attribute and the index", n.ID, msg)
						}
						continue
					}
					if checkErr != nil {
						continue // another problem (a delimiter in a random id)
					}
					if itemsErr != nil {
						t.Errorf("node %q (depth %d): Check finds nothing, Items fails: %v", n.ID, n.Depth, itemsErr)
						continue
					}
					for _, it := range items {
						if k := emptyKeyOf(spec, it); k != "" {
							t.Fatalf("node %q (depth %d): item %s has an empty key %s", n.ID, n.Depth, layoutstest.DDBJSON(it), k)
						}
					}
					if want, ok := refuses[name]; ok && want(n.Depth) {
						t.Errorf("node %q at depth %d: Check found no empty key", n.ID, n.Depth)
					}
				}
			}
			if want, ok := refuses[name]; ok && want(1) && refused == 0 {
				t.Error("no node was refused")
			}
			if _, ok := refuses[name]; !ok && refused > 0 {
				t.Errorf("%d nodes refused for an empty key", refused)
			}
		})
	}
}

// TestSparseIndex: "sparse": true leaves an empty key off the item, so the
// item is not in the index; the model says so in its TableSpec, Measure
// counts the item outside the index, and reading the items back gives
// the nodes (the missing Path is the empty {inner}). A query whose key
// condition would be empty on it is refused, not answered without the
// nodes it left out; one below them is answered.
func TestSparseIndex(t *testing.T) {
	l, err := models.ParseModel("inner-sparse.json", []byte(innerModels["inner-sparse"]))
	if err != nil {
		t.Fatal(err)
	}
	spec := l.Table()
	if len(spec.Indexes) != 1 || !spec.Indexes[0].Sparse {
		t.Fatalf("Table() = %+v, want gsi1 sparse", spec)
	}
	if _, err := models.ParseModel("plain.json", []byte(strings.Replace(innerModels["inner-sparse"], `"sparse": true,`, "", 1))); err == nil {
		t.Fatal("the same model, not sparse, loads")
	}
	plain, err := models.ParseModel("subpath.json", []byte(innerModels["subpath-off-roots"]))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Table().Indexes[0].Sparse {
		t.Error("an index without \"sparse\" is sparse")
	}
	if _, err := models.ParseModel("bad.json", []byte(strings.Replace(innerModels["inner-sparse"], `"sparse": true`, `"sparse": "yes"`, 1))); err == nil {
		t.Error(`"sparse": "yes" was taken`)
	}
	f := layoutstest.SmallForest()
	var all []layouts.Item
	for i, n := range f.Nodes {
		var items []layouts.Item
		if err := l.Items(n, func(it layouts.Item) { items = append(items, it) }); err != nil {
			t.Fatalf("node %q: %v", n.ID, err)
		}
		if len(items) != 1 {
			t.Fatalf("node %q: %d items", n.ID, len(items))
		}
		it := items[0]
		all = append(all, it)
		_, hasPath := it["Path"]
		if hasPath != (n.Depth >= 2) {
			t.Errorf("node %q at depth %d: Path present %v: %s", n.ID, n.Depth, hasPath, layoutstest.DDBJSON(it))
		}
		rec, ok, err := l.Node(it)
		if err != nil || !ok || rec.ID != n.ID || rec.Parent != n.Parent || !layoutstest.SameAttrs(rec.Attrs, n.Attrs) {
			t.Errorf("node %q read back as %+v, %v, %v", n.ID, rec, ok, err)
		}
		ms := layouts.NewMeasure(l)
		l.Measure(f.StatsFor(l, i), ms)
		inIndex := len(ms.Keys) > 3 && ms.Keys[3] > 0
		if inIndex != hasPath {
			t.Errorf("node %q: Measure counts it in gsi1: %v; the item is in it: %v", n.ID, inIndex, hasPath)
		}
	}
	table := layoutstest.NewMemTable(spec, all, 4)
	ctx := context.Background()
	// CM1 is a root: its children and descendants have an empty Path.
	for _, q := range []layouts.Request{
		{Kind: layouts.QueryDescendants, ID: "CM1", MinDepth: 1, MaxDepth: layouts.NoMaxDepth, Concurrency: 1},
		{Kind: layouts.QueryChildren, ID: "CM1", MinDepth: 1, MaxDepth: 1, Concurrency: 1},
	} {
		if res, err := l.Query(ctx, table, q); !errors.Is(err, models.ErrSparseMiss) {
			t.Errorf("%s of the root CM1: %v, %v; want ErrSparseMiss", q.Kind, res, err)
		}
	}
	// CM2 is a child of the root: everything below it has a Path.
	res, err := l.Query(ctx, table, layouts.Request{Kind: layouts.QueryDescendants, ID: "CM2", MinDepth: 1, MaxDepth: layouts.NoMaxDepth, Concurrency: 1})
	if err != nil || len(res) != 2 {
		t.Errorf("descendants of CM2: %v, %v; want CM4 and CM8", res, err)
	}
}

// TestCheckKeys: an empty string or empty binary in any key attribute is
// refused, naming the attribute and where it is a key; an index key that
// is absent is not (the item is not in that index).
func TestCheckKeys(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	b := func(v string) types.AttributeValue { return &types.AttributeValueMemberB{Value: []byte(v)} }
	spec := layouts.TableSpec{
		PK: layouts.KeyAttr{Name: "PK", Type: types.ScalarAttributeTypeS},
		SK: &layouts.KeyAttr{Name: "SK", Type: types.ScalarAttributeTypeS},
		Indexes: []layouts.IndexSpec{{Name: "GSI1", PK: layouts.KeyAttr{Name: "G", Type: types.ScalarAttributeTypeB},
			SK: &layouts.KeyAttr{Name: "H", Type: types.ScalarAttributeTypeS}}},
	}
	for _, tc := range []struct {
		name string
		item layouts.Item
		want []string // in the message; nil: no error
	}{
		{"fine", layouts.Item{"PK": s("a"), "SK": s("b"), "G": b("x"), "H": s("y")}, nil},
		{"not in the index", layouts.Item{"PK": s("a"), "SK": s("b")}, nil},
		{"empty table sort key", layouts.Item{"PK": s("a"), "SK": s("")}, []string{"sort key SK", "the table"}},
		{"empty binary index key", layouts.Item{"PK": s("a"), "SK": s("b"), "G": b(""), "H": s("y")}, []string{"partition key G", "index GSI1"}},
		{"two", layouts.Item{"PK": s(""), "SK": s("b"), "G": b("x"), "H": s("")}, []string{"partition key PK", "sort key H", "index GSI1"}},
		{"empty non-key attribute", layouts.Item{"PK": s("a"), "SK": s("b"), "note": s("")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := layouts.CheckKeys(spec, tc.item)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("CheckKeys = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, transform.ErrEmptyKey) {
				t.Fatalf("CheckKeys = %v, want ErrEmptyKey", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}
