package models_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/layouts/layoutstest"
	"github.com/treeport/treeport/models"
	"github.com/treeport/treeport/transform"
)

// tenantModel is a path model under a partition key constant per tenant.
const tenantModel = `{"layout": "adjacency",
	"table": {"partition_key": {"name": "pk", "template": "T#{param:org}"}, "sort_key": {"name": "sk", "template": "N#{id}"}},
	"indexes": [{"name": "gsi1", "serves": "ByParent", "partition_key": {"name": "gsi1pk", "template": "T#{param:org}#P#{parent}"}}]}`

// TestModelParamErrors: each problem of a parameter is refused when the
// model is loaded, naming the field, the parameter and what to do.
func TestModelParamErrors(t *testing.T) {
	acme := map[string]string{"org": "acme"}
	if _, err := models.ParseModelParams("m.json", []byte(tenantModel), acme); err != nil {
		t.Fatalf("the tenant model the cases below break: %v", err)
	}
	tests := []struct {
		name, text string
		params     map[string]string
		field      string
		what       []string
	}{
		{"not set", tenantModel, nil, "table.partition_key.template", []string{"{param:org}", "--model-param org=VALUE"}},
		{"another set", tenantModel, map[string]string{"orgs": "acme"}, "table.partition_key.template", []string{"--model-param org=VALUE"}},
		{"empty", tenantModel, map[string]string{"org": ""}, "table.partition_key.template", []string{"parameter org is empty"}},
		{"holds its end", tenantModel, map[string]string{"org": "a#P#b"}, "indexes[0].partition_key.template", []string{`"#P#"`, "without it"}},
		{"bad name", `{"layout": "adjacency", "table": {"partition_key": {"name": "pk", "template": "T#{param:1org}#{id}"}}}`, acme,
			"table.partition_key.template", []string{"a parameter's name"}},
		{"next to the id", `{"layout": "adjacency", "table": {"partition_key": {"name": "pk", "template": "{id}{param:org}"}}}`, acme,
			"table.partition_key.template", []string{"no text between"}},
		{"outside the key", `{"layout": "adjacency", "table": {"partition_key": {"name": "pk", "template": "N#{id}"}},
			"indexes": [{"name": "gsi1", "serves": "ByParent", "partition_key": {"name": "p", "template": "T#{param:org}#{parent}"}}]}`, acme,
			"indexes[0].partition_key.template", []string{"not in the table's key", "each over the other's"}},
		{"constant keys alone", `{"layout": "adjacency", "table": {"partition_key": {"name": "pk", "template": "T#{param:org}"}, "sort_key": {"name": "sk", "template": "EMP"}}}`, acme,
			"table", []string{"no table key uses {id}"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := models.ParseModelParams("m.json", []byte(tc.text), tc.params)
			var me *models.ModelError
			if !errors.As(err, &me) {
				t.Fatalf("err = %v, want a *ModelError", err)
			}
			if me.Field != tc.field {
				t.Errorf("field %q, want %q (%v)", me.Field, tc.field, err)
			}
			for _, w := range tc.what {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v does not say %q", err, w)
				}
			}
			if (tc.name == "not set" || tc.name == "another set") != errors.Is(err, models.ErrParamNotSet) {
				t.Errorf("errors.Is(%v, ErrParamNotSet) is wrong", err)
			}
		})
	}
}

// TestModelParamsNamed: Params lists what a model names, for the command
// to refuse a --model-param that none names.
func TestModelParamsNamed(t *testing.T) {
	l, err := models.ParseModelParams("m.json", []byte(tenantModel), map[string]string{"org": "acme", "other": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got := models.Params(l); len(got) != 1 || got[0] != "org" {
		t.Fatalf("Params = %v, want [org]", got)
	}
	p, _ := layouts.New(layouts.PathName, layouts.Options{})
	if got := models.Params(p); len(got) != 0 {
		t.Fatalf("Params of a layout = %v", got)
	}
}

// TestModelTenants: an item of another tenant (its partition key is not
// this tenant's constant) is none of the model's: not a node, not an
// item that does not read; the same item read as its own tenant's is a
// node. The ElectroDB model's offices and tasks are not employees.
func TestModelTenants(t *testing.T) {
	load := func(org string) layouts.Layout {
		l, err := models.LoadModelParams("../fixtures/models/electrodb-employees.json", map[string]string{"org": org})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	acme, globex := load("acme"), load("globex")
	emp := layouts.Item{"pk": sv("$hr#orgid_globex"), "sk": sv("$employee_1#employeeid_e7"), "gsi1pk": sv("$hr#orgid_globex#managerid_e1"),
		"gsi1sk": sv("$employee_1#employeeid_e7"), "employeeId": sv("e7"), "managerId": sv("e1"), "orgId": sv("globex"),
		"__edb_e__": sv("employee"), "__edb_v__": sv("1"), "firstName": sv("Gina")}
	if rec, ok, err := globex.Node(emp); !ok || err != nil || rec.ID != "e7" || rec.Parent != "e1" || len(rec.Attrs) != 1 {
		t.Fatalf("globex's employee read by globex: %+v %v %v", rec, ok, err)
	}
	if rec, ok, err := acme.Node(emp); ok || err != nil {
		t.Errorf("globex's employee read by acme: %+v %v %v, want none of its", rec, ok, err)
	}
	if !models.Foreign(acme, layouts.MapView(emp)) || models.CheckItem(acme, emp) != nil || acme.IsNode(layouts.MapView(emp)) || acme.Owner(layouts.MapView(emp)) != "" {
		t.Errorf("globex's employee is acme's")
	}
	task := layouts.Item{"pk": sv("$hr#orgid_acme"), "sk": sv("$task_1#taskid_t9"), "gsi1pk": sv("$hr#orgid_acme#managerid_e7"),
		"gsi1sk": sv("$task_1#taskid_t9"), "__edb_e__": sv("task"), "__edb_v__": sv("1")}
	if _, ok, err := acme.Node(task); ok || err != nil || !models.Foreign(acme, layouts.MapView(task)) {
		t.Errorf("acme's task is an employee: %v %v", ok, err)
	}
	// acme's employee whose version or organisation is not the model's:
	// carries the type field, does not read.
	bad := layouts.Item{"pk": sv("$hr#orgid_acme"), "sk": sv("$employee_1#employeeid_e7"), "employeeId": sv("e7"), "orgId": sv("globex"),
		"__edb_e__": sv("employee"), "__edb_v__": sv("1")}
	if err := models.CheckItem(acme, bad); !errors.Is(err, layouts.ErrItem) || !strings.Contains(err.Error(), "orgId") {
		t.Errorf("acme's employee with orgId globex: %v, want ErrItem naming orgId", err)
	}
}

// TestModelTextAfterIDEndsIt: under {id}#{param:t}, the text after the id
// is "#" whatever t holds, so an id holding "#" is refused: it could read
// as another tenant's id ("a#b" of tenant "x" is "a" of tenant "b#x").
func TestModelTextAfterIDEndsIt(t *testing.T) {
	l, err := models.ParseModelParams("m.json", []byte(`{"layout": "adjacency",
		"table": {"partition_key": {"name": "pk", "template": "N#{id}#{param:t}"}},
		"indexes": [{"name": "gsi1", "serves": "ByParent", "partition_key": {"name": "p", "template": "{parent}"}}]}`), map[string]string{"t": "x"})
	if err != nil {
		t.Fatal(err)
	}
	n := &transform.Node{Record: transform.Record{ID: "a#b"}, Path: []string{"a#b"}}
	if err := l.Items(n, func(layouts.Item) {}); !errors.Is(err, transform.ErrDelimiter) || !strings.Contains(err.Error(), `"#"`) {
		t.Fatalf("Items of id a#b: %v, want ErrDelimiter naming #", err)
	}
}

// TestModelSubpath: {subpath} and {parent_subpath} write the path below
// the root without a trailing delimiter (WA#SEATTLE#98101), read back.
func TestModelSubpath(t *testing.T) {
	l, err := models.ParseModel("m.json", []byte(`{"layout": "path", "delimiter": "#",
		"table": {"partition_key": {"name": "StoreNumber", "template": "{id}"}},
		"indexes": [{"name": "StoreLocationIndex", "serves": "ByPath", "partition_key": {"name": "Country", "template": "{root}"}, "sort_key": {"name": "P", "template": "{path}"}}],
		"attributes": [{"name": "StateCityPostcode", "template": "{parent_subpath}"}, {"name": "Below", "template": "{subpath}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	path := []string{"USA", "WA", "SEATTLE", "98101", "S1"}
	for d, want := range []struct{ above, below string }{{"", ""}, {"", "WA"}, {"WA", "WA#SEATTLE"}, {"WA#SEATTLE", "WA#SEATTLE#98101"}, {"WA#SEATTLE#98101", "WA#SEATTLE#98101#S1"}} {
		parent := ""
		if d > 0 {
			parent = path[d-1]
		}
		n := &transform.Node{Record: transform.Record{ID: path[d], Parent: parent, Attrs: transform.Attrs{"name": sv("x")}}, Depth: d, Path: path[:d+1]}
		var items []layouts.Item
		if err := l.Items(n, func(it layouts.Item) { items = append(items, it) }); err != nil || len(items) != 1 {
			t.Fatalf("Items of %s: %v", path[d], err)
		}
		it := items[0]
		if got := asText(it["StateCityPostcode"]) + "|" + asText(it["Below"]); got != want.above+"|"+want.below {
			t.Errorf("%s: StateCityPostcode|Below = %q, want %q", path[d], got, want.above+"|"+want.below)
		}
		rec, ok, err := l.Node(it)
		if !ok || err != nil || rec.ID != path[d] || rec.Parent != parent {
			t.Errorf("%s read back: %+v %v %v", path[d], rec, ok, err)
		}
		// A value that disagrees with the path does not read.
		it["StateCityPostcode"] = sv("OR#PORTLAND")
		if d > 1 {
			if _, _, err := l.Node(it); !errors.Is(err, layouts.ErrItem) {
				t.Errorf("%s with another StateCityPostcode: %v, want ErrItem", path[d], err)
			}
		}
	}
}

// asText is the text of an S value, "" for another or none.
func asText(v types.AttributeValue) string {
	if x, ok := v.(*types.AttributeValueMemberS); ok {
		return x.Value
	}
	return ""
}

// sv is an S value.
func sv(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// TestModelTenantVariants: for each base, the items a model writes for one
// tenant are none of the same model's for another tenant: not nodes, not
// items that do not read, owned by no node; and they are its own tenant's.
func TestModelTenantVariants(t *testing.T) {
	for _, name := range []string{"tenant-subpath", "closure-tenant", "prefix-tenant"} {
		t.Run(name, func(t *testing.T) {
			text := []byte(layoutstest.ModelVariants[name])
			acme, err := models.ParseModelParams(name+".json", text, map[string]string{"org": "acme"})
			if err != nil {
				t.Fatal(err)
			}
			globex, err := models.ParseModelParams(name+".json", text, map[string]string{"org": "globex"})
			if err != nil {
				t.Fatal(err)
			}
			f := layoutstest.SmallForest()
			nodes := 0
			for _, n := range f.Nodes {
				err := acme.Items(n, func(it layouts.Item) {
					v := layouts.MapView(it)
					if _, ok, err := globex.Node(it); ok || err != nil || globex.IsNode(v) || !models.Foreign(globex, v) ||
						models.CheckItem(globex, it) != nil || globex.Owner(v) != "" {
						t.Errorf("acme's item %s is globex's (node %v, err %v)", layoutstest.DDBJSON(it), ok, err)
					}
					if models.Foreign(acme, v) {
						t.Errorf("acme's item %s is not acme's", layoutstest.DDBJSON(it))
					}
					if _, ok, _ := acme.Node(it); ok {
						nodes++
					}
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if nodes != len(f.Nodes) {
				t.Errorf("acme reads %d nodes of its %d", nodes, len(f.Nodes))
			}
		})
	}
}
