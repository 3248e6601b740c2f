package layoutstest

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/models"
	"github.com/treeport/treeport/transform"
)

// ShippedModels are the model files fixtures/models holds, for the tests
// of a package one folder below the module's root.
func ShippedModels(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob("../fixtures/models/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no shipped models: %v", err)
	}
	return files
}

// ModelVariants are the shipped models and a few more that exercise the
// templates: a number key, INCLUDE, adjacency as a base.
var ModelVariants = map[string]string{
	"adjacency-typed": `{"layout": "adjacency", "type_field": {"name": "kind", "value": "folder"},
		"table": {"partition_key": {"name": "pk", "template": "F#{id}"}, "sort_key": {"name": "sk", "template": "META#{id}"}},
		"indexes": [{"name": "children", "serves": "ByParent",
			"partition_key": {"name": "parent", "template": "F#{parent}"}, "sort_key": {"name": "pk", "template": "F#{id}"},
			"projection": {"type": "INCLUDE", "non_key_attributes": ["name"]}}]}`,
	"path-depth-n": `{"layout": "path", "delimiter": "/",
		"table": {"partition_key": {"name": "nid", "template": "{id}"}},
		"indexes": [{"name": "tree", "serves": "ByPath",
			"partition_key": {"name": "T", "template": "T={root}"}, "sort_key": {"name": "P", "template": "/{path}"},
			"projection": {"type": "KEYS_ONLY"}}],
		"attributes": [{"name": "Lvl", "template": "{depth}", "type": "N"}]}`,
	"path-include-own": `{"layout": "path", "type_field": {"name": "kind", "value": "N"},
		"table": {"partition_key": {"name": "nid", "template": "{id}"}},
		"indexes": [{"name": "tree", "serves": "ByPath",
			"partition_key": {"name": "T", "template": "{root}"}, "sort_key": {"name": "P", "template": "{path}"},
			"projection": {"type": "INCLUDE", "non_key_attributes": ["Lvl", "kind", "Up"]}}],
		"attributes": [{"name": "Lvl", "template": "{depth}", "type": "N"}, {"name": "Up", "template": "{parent}", "absent_on_root": true}]}`,
	// closure as a base: the relative depth as a number, every attribute
	// projected, nothing copied to the ancestor rows, no type field.
	"closure-n": `{"layout": "closure", "closure_copy": "none",
		"table": {"partition_key": {"name": "nid", "template": "{id}"}, "sort_key": {"name": "rd", "template": "{relative_depth}", "type": "N"}},
		"indexes": [{"name": "anc", "serves": "ByAncestor",
			"partition_key": {"name": "a", "template": "{ancestor}"}, "sort_key": {"name": "rd", "template": "{relative_depth}", "type": "N"}}],
		"attributes": [{"name": "p", "template": "P={parent}"}]}`,
	// closure with the relative depth as 2-digit text, an index of the
	// keys alone, some attributes copied, a type field, the ancestor twice
	// and the relative depth as a number too.
	"closure-keys-some": `{"layout": "closure", "relative_depth_digits": 2, "closure_copy": ["name", "meta"],
		"type_field": {"name": "kind", "value": "row"},
		"table": {"partition_key": {"name": "PK", "template": "N#{id}"}, "sort_key": {"name": "SK", "template": "UP#{relative_depth}"}},
		"indexes": [{"name": "byanc", "serves": "ByAncestor",
			"partition_key": {"name": "A", "template": "A#{ancestor}"}, "sort_key": {"name": "SK", "template": "UP#{relative_depth}"},
			"projection": {"type": "KEYS_ONLY"}}],
		"attributes": [{"name": "Up", "template": "{parent}"}, {"name": "Lvl", "template": "{relative_depth}", "type": "N"},
			{"name": "Who", "template": "{ancestor}~{id}"}]}`,
	// closure copying every attribute, read through an index that
	// projects part of each row (the rows found are read whole), its
	// sort key the depth as a number where the table's is 4-digit text.
	"closure-include-all": `{"layout": "closure", "type_field": {"name": "kind", "value": "row"},
		"table": {"partition_key": {"name": "PK", "template": "{id}"}, "sort_key": {"name": "SK", "template": "{relative_depth}"}},
		"indexes": [{"name": "byanc", "serves": "ByAncestor",
			"partition_key": {"name": "A", "template": "{ancestor}"}, "sort_key": {"name": "L", "template": "{relative_depth}", "type": "N"},
			"projection": {"type": "INCLUDE", "non_key_attributes": ["kind", "Up"]}}],
		"attributes": [{"name": "Up", "template": "{parent}", "absent_on_root": true}]}`,
	// closure copying nothing, with an index projecting the type field:
	// the keys the index holds are enough, and the nodes' own rows are
	// read.
	"closure-none-typed": `{"layout": "closure", "closure_copy": "none", "type_field": {"name": "kind", "value": "row"},
		"table": {"partition_key": {"name": "PK", "template": "N/{id}"}, "sort_key": {"name": "SK", "template": "R/{relative_depth}"}},
		"indexes": [{"name": "byanc", "serves": "ByAncestor",
			"partition_key": {"name": "A", "template": "N/{ancestor}"}, "sort_key": {"name": "SK", "template": "R/{relative_depth}"},
			"projection": {"type": "INCLUDE", "non_key_attributes": ["kind"]}}],
		"attributes": [{"name": "Up", "template": "N/{parent}"}]}`,
	// prefix as a base: each of a node's two rows, by templates of its
	// Key and Child.
	"prefix-typed": `{"layout": "prefix", "delimiter": "/", "type_field": {"name": "kind", "value": "entry"},
		"table": {"partition_key": {"name": "PK", "template": "DIR#{key}"}, "sort_key": {"name": "SK", "template": "E#{child}"}},
		"attributes": [{"name": "Raw", "template": "{key}", "absent_on_root": true}]}`,
	"prefix-plain": `{"layout": "prefix",
		"table": {"partition_key": {"name": "K", "template": "{key}"}, "sort_key": {"name": "C", "template": "{child}"}}}`,
	// a partition key constant per tenant ({param:org}, ModelParams),
	// the path below the root as attributes, with and without the node.
	"tenant-subpath": `{"layout": "path", "delimiter": "/", "type_field": {"name": "kind", "value": "node"},
		"table": {"partition_key": {"name": "PK", "template": "T#{param:org}"}, "sort_key": {"name": "SK", "template": "N#{id}"}},
		"indexes": [{"name": "bypath", "serves": "ByPath", "partition_key": {"name": "G", "template": "T#{param:org}#{root}"}, "sort_key": {"name": "P", "template": "/{path}"}},
			{"name": "byparent", "serves": "ByParent", "partition_key": {"name": "U", "template": "T#{param:org}#U#{parent}"}, "sort_key": {"name": "SK", "template": "N#{id}"}}],
		"attributes": [{"name": "Sub", "template": "{subpath}"}, {"name": "Above", "template": "{parent_subpath}"}, {"name": "Org", "template": "{param:org}"}]}`,
	// closure and prefix under a tenant's parameter.
	"closure-tenant": `{"layout": "closure", "type_field": {"name": "kind", "value": "row"},
		"table": {"partition_key": {"name": "PK", "template": "T#{param:org}#N#{id}"}, "sort_key": {"name": "SK", "template": "R#{relative_depth}"}},
		"indexes": [{"name": "byanc", "serves": "ByAncestor",
			"partition_key": {"name": "A", "template": "T#{param:org}#A#{ancestor}"}, "sort_key": {"name": "SK", "template": "R#{relative_depth}"}}],
		"attributes": [{"name": "Up", "template": "{parent}"}]}`,
	"prefix-tenant": `{"layout": "prefix", "delimiter": "/",
		"table": {"partition_key": {"name": "PK", "template": "{param:org}#{key}"}, "sort_key": {"name": "SK", "template": "{child}"}},
		"attributes": [{"name": "Org", "template": "{param:org}"}]}`,
	"sharded-3": `{"layout": "sharded-path", "shards": 3,
		"table": {"partition_key": {"name": "k", "template": "N:{id}"}},
		"indexes": [{"name": "byp", "serves": "ByParent", "partition_key": {"name": "p", "template": "{parent}"}},
			{"name": "bypath", "serves": "ByPath", "partition_key": {"name": "g", "template": "{root}~{shard}"}, "sort_key": {"name": "s", "template": "{path}"}}]}`,
}

// ModelParams are the values the tests give the shipped models'
// parameters ({param:NAME}): one each, whatever model names it.
var ModelParams = map[string]string{"org": "acme", "bucket": "photos-bucket"}

// ModelParamFlags are the --model-param flags of ModelParams that model
// file names: what a command of the tests takes beside --model file.
func ModelParamFlags(t testing.TB, file string) []string {
	t.Helper()
	l, err := models.LoadModelParams(file, ModelParams)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var flags []string
	for _, name := range models.Params(l) {
		flags = append(flags, "--model-param", name+"="+ModelParams[name])
	}
	return flags
}

// LoadModels are the shipped models (with ModelParams) and ModelVariants,
// by file or variant name.
func LoadModels(t *testing.T) map[string]layouts.Layout {
	out := map[string]layouts.Layout{}
	for _, f := range ShippedModels(t) {
		l, err := models.LoadModelParams(f, ModelParams)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = l
	}
	for name, text := range ModelVariants {
		l, err := models.ParseModelParams(name+".json", []byte(text), ModelParams)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = l
	}
	return out
}

// ModelForest is a random forest whose ids hold none of the text the
// model's templates use to separate their parts (nor its delimiter).
func ModelForest(t *testing.T, l layouts.Layout, rng *rand.Rand) *Forest {
	f := RandomForest(rng, 50, false)
	ids := make([]string, len(f.Nodes))
	attrs := make([]transform.Attrs, len(f.Nodes))
	used := map[string]bool{}
	for i, n := range f.Nodes {
		id := n.ID
		for _, bad := range []string{l.Delimiter(), "#", "~", "="} {
			id = strings.ReplaceAll(id, bad, "_")
		}
		for used[id] {
			id += "+"
		}
		used[id] = true
		ids[i], attrs[i] = id, n.Attrs
	}
	parents := f.Parents
	if models.LeavesOnly(l) {
		// Only leaves have items, keyed by name and by the names above
		// them (store-locations: a store at depth 2 or more): two nodes
		// above every tree, and no attributes on an inner node.
		ids = append([]string{"top", "mid"}, ids...)
		attrs = append([]transform.Attrs{{}, {}}, attrs...)
		parents = append([]int{-1, 0}, parents...)
		for i := 2; i < len(parents); i++ {
			if parents[i] < 0 {
				parents[i] = 1
			} else {
				parents[i] += 2
			}
		}
		for _, p := range parents {
			if p >= 0 {
				attrs[p] = transform.Attrs{}
			}
		}
	}
	if layouts.PathIDs(l) {
		ids = pathIDs(ids, parents, l.Delimiter())
	}
	return NewForest(ids, parents, attrs)
}

// pathIDs turns the ids of a forest into path ids: each is its parent's
// path id, the delimiter and its own id as its name.
func pathIDs(names []string, parents []int, delim string) []string {
	out := make([]string, len(names))
	var id func(i int) string
	id = func(i int) string {
		if out[i] == "" {
			out[i] = names[i]
			if p := parents[i]; p >= 0 {
				out[i] = id(p) + delim + names[i]
			}
		}
		return out[i]
	}
	for i := range names {
		id(i)
	}
	return out
}
