package models_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/models"
	"github.com/treeport/treeport/transform"
)

// The tests of models that run the layouts' conformance suite (memory
// table, random forests, cost checks) are in layouts/model_test.go, beside
// that suite.

// A bad model is refused with the file, the field and what to do.
func TestModelErrors(t *testing.T) {
	const ok = `"table": {"partition_key": {"name": "PK", "template": "N#{id}"}},
		"indexes": [{"name": "GSI1", "serves": "ByParent", "partition_key": {"name": "P", "template": "{parent}"}}]`
	const closureNoParent = `"table": {"partition_key": {"name": "PK", "template": "N#{id}"}, "sort_key": {"name": "SK", "template": "R#{relative_depth}"}},
		"indexes": [{"name": "GSI1", "serves": "ByAncestor", "partition_key": {"name": "A", "template": "A#{ancestor}"}, "sort_key": {"name": "SK", "template": "R#{relative_depth}"}}]`
	const closureOK = closureNoParent + `, "attributes": [{"name": "Up", "template": "{parent}"}]`
	if _, err := models.ParseModel("m.json", []byte(`{"layout": "closure", `+closureOK+`}`)); err != nil {
		t.Fatalf("the closure model the cases below break: %v", err)
	}
	tests := []struct {
		name, text, field, what string
	}{
		{"unknown field", `{"layout": "adjacency", "colour": 1, ` + ok + `}`, "colour", "unknown field"},
		{"bad base", `{"layout": "nested-set", ` + ok + `}`, "layout", "cannot be a model's base"},
		{"template references nothing", `{"layout": "adjacency", "table": {"partition_key": {"name": "PK", "template": "NODE"}}}`, "table.partition_key.template", "references nothing"},
		{"unknown placeholder", `{"layout": "adjacency", "table": {"partition_key": {"name": "PK", "template": "{name}"}}}`, "table.partition_key.template", "unknown placeholder"},
		{"adjacent placeholders", `{"layout": "sharded-path", "shards": 2, "table": {"partition_key": {"name": "PK", "template": "{id}"}},
			"indexes": [{"name": "GSI2", "serves": "ByPath", "partition_key": {"name": "G", "template": "{root}{shard}"}, "sort_key": {"name": "P", "template": "{path}"}}]}`, "indexes[0].partition_key.template", "no text between"},
		{"two nodes one key", `{"layout": "path", "table": {"partition_key": {"name": "PK", "template": "T#{root}"}}}`, "table.partition_key.template", "from {id} alone"},
		{"same name two templates", `{"layout": "adjacency", "table": {"partition_key": {"name": "PK", "template": "N#{id}"}},
			"indexes": [{"name": "GSI1", "serves": "ByParent", "partition_key": {"name": "PK", "template": "{parent}"}}]}`, "indexes[0].partition_key", "declared again"},
		{"index not served", `{"layout": "path", "table": {"partition_key": {"name": "PK", "template": "{id}"}},
			"indexes": [{"name": "GSI1", "serves": "ByParent", "partition_key": {"name": "P", "template": "{parent}"}}]}`, "indexes", `"serves": "ByPath"`},
		{"path sort key not a prefix", `{"layout": "path", "table": {"partition_key": {"name": "PK", "template": "{id}"}},
			"indexes": [{"name": "GSI", "serves": "ByPath", "partition_key": {"name": "T", "template": "{root}"}, "sort_key": {"name": "P", "template": "{path}#x"}}]}`, "indexes[0].sort_key.template", "must end with {path}"},
		{"partition key of other parts", `{"layout": "path", "table": {"partition_key": {"name": "PK", "template": "{id}"}},
			"indexes": [{"name": "GSI", "serves": "ByPath", "partition_key": {"name": "T", "template": "{parent}"}, "sort_key": {"name": "P", "template": "{path}"}}]}`, "indexes[0].partition_key.template", "queried by {root}"},
		{"cannot rebuild", `{"layout": "path", "table": {"partition_key": {"name": "PK", "template": "{id}"}},
			"indexes": [{"name": "GSI", "serves": "ByPath", "partition_key": {"name": "T", "template": "{root}"}, "sort_key": {"name": "P", "template": "/{inner}"}}]}`, "", "could not be read back"},
		{"type field is a key", `{"layout": "adjacency", "type_field": {"name": "PK", "value": "x"}, ` + ok + `}`, "type_field.name", "attribute of the model"},
		{"projection", `{"layout": "adjacency", "table": {"partition_key": {"name": "PK", "template": "{id}"}},
			"indexes": [{"name": "GSI1", "serves": "ByParent", "partition_key": {"name": "P", "template": "{parent}"}, "projection": {"type": "SOME"}}]}`, "indexes[0].projection.type", "ALL, KEYS_ONLY or INCLUDE"},
		{"N text", `{"layout": "adjacency", ` + ok + `, "attributes": [{"name": "d", "template": "D{depth}", "type": "N"}]}`, "attributes[0].type", "make it S"},
		{"path on the adjacency base", `{"layout": "adjacency", ` + ok + `, "attributes": [{"name": "p", "template": "{path}"}]}`, "attributes[0].template", "a path table"},
		{"root on the adjacency base", `{"layout": "adjacency", ` + ok + `, "attributes": [{"name": "t", "template": "T#{root}"}]}`, "attributes[0].template", "{root} is not a part of the adjacency base's items"},
		{"depth on the adjacency base", `{"layout": "adjacency", ` + ok + `, "attributes": [{"name": "d", "template": "{depth}", "type": "N"}]}`, "attributes[0].template", "{depth} is not a part of the adjacency base's items"},
		// closure's parts, and a closure model's keys.
		{"ancestor on a path base", `{"layout": "adjacency", ` + ok + `, "attributes": [{"name": "a", "template": "A#{ancestor}"}]}`, "attributes[0].template", "{ancestor} is a part of the closure base's rows"},
		{"relative depth on a path base", `{"layout": "path", "table": {"partition_key": {"name": "PK", "template": "{id}"}, "sort_key": {"name": "SK", "template": "{relative_depth}"}}}`, "table.sort_key.template", "{relative_depth} is a part of the closure base's rows"},
		{"digits on a path base", `{"layout": "adjacency", "relative_depth_digits": 3, ` + ok + `}`, "relative_depth_digits", "only the closure base"},
		{"path part on closure", `{"layout": "closure", ` + closureNoParent + `, "attributes": [{"name": "Up", "template": "{parent}"}, {"name": "t", "template": "T#{root}"}]}`, "attributes[1].template", "{root} is not a part of the closure base's items"},
		{"closure without a sort key", `{"layout": "closure", "table": {"partition_key": {"name": "PK", "template": "N#{id}"}}}`, "table.sort_key", "built from {relative_depth}"},
		{"closure sort key text after the depth", `{"layout": "closure", "table": {"partition_key": {"name": "PK", "template": "N#{id}"}, "sort_key": {"name": "SK", "template": "{relative_depth}#A"}}}`, "table.sort_key.template", "at its end"},
		{"closure sort key of the ancestor", `{"layout": "closure", "table": {"partition_key": {"name": "PK", "template": "N#{id}"}, "sort_key": {"name": "SK", "template": "A#{ancestor}"}}}`, "table.sort_key.template", "band of relative depths"},
		{"closure partition key of the depth", `{"layout": "closure", "table": {"partition_key": {"name": "PK", "template": "N#{id}#{relative_depth}"}, "sort_key": {"name": "SK", "template": "{relative_depth}", "type": "N"}}}`, "table.partition_key.template", "from {id} alone"},
		{"closure without ByAncestor", `{"layout": "closure", "table": {"partition_key": {"name": "PK", "template": "N#{id}"}, "sort_key": {"name": "SK", "template": "R#{relative_depth}"}}}`, "indexes", `"serves": "ByAncestor"`},
		{"ByAncestor keyed by the id", `{"layout": "closure", "table": {"partition_key": {"name": "PK", "template": "N#{id}"}, "sort_key": {"name": "SK", "template": "R#{relative_depth}"}},
			"indexes": [{"name": "GSI1", "serves": "ByAncestor", "partition_key": {"name": "A", "template": "{id}"}, "sort_key": {"name": "SK", "template": "R#{relative_depth}"}}]}`, "indexes[0].partition_key.template", "queried by {ancestor}"},
		{"ByAncestor without a sort key", `{"layout": "closure", "table": {"partition_key": {"name": "PK", "template": "N#{id}"}, "sort_key": {"name": "SK", "template": "R#{relative_depth}"}},
			"indexes": [{"name": "GSI1", "serves": "ByAncestor", "partition_key": {"name": "A", "template": "{ancestor}"}}]}`, "indexes[0].sort_key", "band of {relative_depth}"},
		{"ByAncestor sorted by the id", `{"layout": "closure", "table": {"partition_key": {"name": "PK", "template": "N#{id}"}, "sort_key": {"name": "SK", "template": "R#{relative_depth}"}},
			"indexes": [{"name": "GSI1", "serves": "ByAncestor", "partition_key": {"name": "A", "template": "{ancestor}"}, "sort_key": {"name": "B", "template": "{id}#{relative_depth}"}}]}`, "indexes[0].sort_key.template", "{relative_depth} alone"},
		{"ambiguous ancestor and depth", `{"layout": "closure", ` + closureNoParent + `, "attributes": [{"name": "Up", "template": "{parent}"}, {"name": "x", "template": "{ancestor}{relative_depth}"}]}`, "attributes[1].template", "no text between"},
		{"N relative depth as text", `{"layout": "closure", ` + closureNoParent + `, "attributes": [{"name": "Up", "template": "{parent}"}, {"name": "x", "template": "R{relative_depth}", "type": "N"}]}`, "attributes[1].type", "make it S"},
		{"closure with a delimiter", `{"layout": "closure", "delimiter": "|", ` + closureOK + `}`, "delimiter", "no delimiter"},
		{"closure digits", `{"layout": "closure", "relative_depth_digits": 12, ` + closureOK + `}`, "relative_depth_digits", "1 to 9"},
		{"closure copy", `{"layout": "closure", "closure_copy": "some", ` + closureOK + `}`, "closure_copy", `"all", "none" or a list`},
		{"closure copy on a path base", `{"layout": "adjacency", "closure_copy": "none", ` + ok + `}`, "closure_copy", "only the closure base"},
		{"closure rows without the parent", `{"layout": "closure", ` + closureNoParent + `}`, "", "{parent}"},
		// prefix's parts, and a prefix model's keys.
		{"key on a path base", `{"layout": "path", "table": {"partition_key": {"name": "PK", "template": "K#{key}"}}}`, "table.partition_key.template", "{key} is a part of the prefix base's rows"},
		{"id on prefix", `{"layout": "prefix", "table": {"partition_key": {"name": "PK", "template": "N#{id}"}, "sort_key": {"name": "SK", "template": "{child}"}}}`, "table.partition_key.template", "{id} is not a part of the prefix base's rows"},
		{"prefix key not at its end", `{"layout": "prefix", "table": {"partition_key": {"name": "PK", "template": "{key}#D"}, "sort_key": {"name": "SK", "template": "{child}"}}}`, "table.partition_key.template", "alone, at its end"},
		{"prefix partition key of the child", `{"layout": "prefix", "table": {"partition_key": {"name": "PK", "template": "C#{child}"}, "sort_key": {"name": "SK", "template": "K#{key}"}}}`, "table.partition_key.template", "build the partition key from {key}"},
		{"prefix without a sort key", `{"layout": "prefix", "table": {"partition_key": {"name": "PK", "template": "D#{key}"}}}`, "table.sort_key", "built from {child}"},
		{"prefix with an index", `{"layout": "prefix", "table": {"partition_key": {"name": "PK", "template": "D#{key}"}, "sort_key": {"name": "SK", "template": "{child}"}},
			"indexes": [{"name": "GSI1", "serves": "ByParent", "partition_key": {"name": "P", "template": "{key}"}}]}`, "indexes[0].serves", "the prefix layout has no index"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := models.ParseModel("m.json", []byte(tc.text))
			var me *models.ModelError
			if !errors.As(err, &me) {
				t.Fatalf("err = %v, want a *ModelError", err)
			}
			if me.File != "m.json" || me.Field != tc.field || !strings.Contains(err.Error(), tc.what) {
				t.Fatalf("err = %v (field %q), want field %q and %q", err, me.Field, tc.field, tc.what)
			}
		})
	}
}

// An id holding text that separates a template's parts is refused, as a
// delimiter in an id is.
func TestModelAmbiguousID(t *testing.T) {
	l, err := models.LoadModel("../fixtures/models/aws-components.json")
	if err != nil {
		t.Fatal(err)
	}
	n := &transform.Node{Record: transform.Record{ID: "a#1"}, Path: []string{"a#1"}}
	err = l.Items(n, func(layouts.Item) {})
	if !errors.Is(err, transform.ErrDelimiter) || !strings.Contains(err.Error(), `"#"`) {
		t.Fatalf("Items of id a#1: %v, want ErrDelimiter naming #", err)
	}
	var s transform.Stats
	s.ID, s.RootID, s.PathBytes, s.TreeSize = "a#1", "a#1", 3, 1
	if err := layouts.Check(l, &s); !errors.Is(err, transform.ErrDelimiter) {
		t.Fatalf("Check of id a#1: %v, want ErrDelimiter", err)
	}
}
