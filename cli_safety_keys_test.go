package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// innerModel is the path pattern of wadsworth-path with its index sort key
// {inner} alone, as the user who found issue 24 wrote it: "" for a child of
// a root. sparse adds "sparse": true to the index.
func innerModel(t *testing.T, sparse bool) (string, layouts.Layout) {
	t.Helper()
	flag := ""
	if sparse {
		flag = `"sparse": true,`
	}
	text := `{"name": "inner-path", "layout": "path", "delimiter": "/",
		"table": {"partition_key": {"name": "ID", "template": "{id}"}},
		"indexes": [{"name": "gsi1", "serves": "ByPath", ` + flag + `
			"partition_key": {"name": "Root", "template": "{root}", "absent_on_root": true},
			"sort_key": {"name": "Path", "template": "{inner}", "absent_on_root": true}}]}`
	path := filepath.Join(t.TempDir(), "inner-path.json")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := layouts.LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, l
}

// wantEmptyKeyRefusal fails unless a command exited 2 naming a node whose
// key is empty: its place, its id, the attribute and the index.
func wantEmptyKeyRefusal(t *testing.T, what string, code int, stderr string, place ...string) {
	t.Helper()
	if code != 2 {
		t.Errorf("%s: exit %d, want 2:\n%s", what, code, stderr)
	}
	for _, w := range append([]string{"empty key value", "sort key Path of index gsi1"}, place...) {
		if !strings.Contains(stderr, w) {
			t.Errorf("%s: stderr does not say %q:\n%s", what, w, stderr)
		}
	}
}

// TestEmptyKeyRefusedBeforeAnyWrite: a model whose index sort key is ""
// for a child of a root is refused node by node, with the file, line, id,
// attribute and index, before anything is written, by import (--dry-run,
// --out, --table), plan, apply, migrate and edit; DynamoDB never sees the
// item.
func TestEmptyKeyRefusedBeforeAnyWrite(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	model, l := innerModel(t, false)
	typesFlag := fixtureTypes(t, "cars")
	const in = "fixtures/cars.csv"
	// CM2 (line 3) and CM20 (line 21) are children of the root CM1.
	where := []string{`fixtures/cars.csv:3: id "CM2"`, `fixtures/cars.csv:21: id "CM20"`}

	_, stderr, code := run(t, env, "import", "--in", in, "--types", typesFlag, "--model", model, "--dry-run")
	wantEmptyKeyRefusal(t, "import --dry-run", code, stderr, where...)

	out := filepath.Join(t.TempDir(), "out")
	_, stderr, code = run(t, env, "import", "--in", in, "--types", typesFlag, "--model", model, "--out", out)
	wantEmptyKeyRefusal(t, "import --out", code, stderr, where...)
	if entries, _ := os.ReadDir(out); len(entries) > 0 {
		t.Errorf("import --out wrote %d files", len(entries))
	}

	table := ddblocal.NewTable(t, client, l.Table())
	_, stderr, code = run(t, env, "import", "--in", in, "--types", typesFlag, "--model", model, "--table", table, "--no-progress")
	wantEmptyKeyRefusal(t, "import --table", code, stderr, where...)
	_, stderr, code = run(t, env, "plan", "--in", in, "--types", typesFlag, "--model", model, "--table", table)
	wantEmptyKeyRefusal(t, "plan", code, stderr, where...)
	_, stderr, code = run(t, env, "apply", "--in", in, "--types", typesFlag, "--model", model, "--table", table, "--no-progress")
	wantEmptyKeyRefusal(t, "apply", code, stderr, where...)
	if items := scanTable(t, client, table); len(items) != 0 {
		t.Errorf("import and apply wrote %d items", len(items))
	}

	// migrate builds the items from the nodes it read from its source.
	path, _ := layouts.New(layouts.PathName, layouts.Options{})
	src := loadTable(t, env, client, in, typesFlag, path)
	dest := ddblocal.NewTable(t, client, l.Table())
	_, stderr, code = run(t, env, "migrate", "--from-table", src, "--from-layout", "path", "--to-table", dest, "--to-model", model, "--no-progress")
	// The snapshot migrate reads the source into is its own, temporary:
	// the nodes are named by the source table.
	wantEmptyKeyRefusal(t, "migrate", code, stderr, "table "+src+`: id "CM2"`, "table "+src+`: id "CM20"`)
	if items := scanTable(t, client, dest); len(items) != 0 {
		t.Errorf("migrate wrote %d items", len(items))
	}

	// edit: two roots (a table of roots alone is valid), one moved under
	// the other, where its Path would be "".
	roots := ddblocal.NewTable(t, client, l.Table())
	for _, id := range []string{"R1", "R2"} {
		putItem(t, client, roots, layouts.Item{"ID": &types.AttributeValueMemberS{Value: id}, "name": &types.AttributeValueMemberS{Value: "root " + id}})
	}
	before := rawLines(t, client, roots)
	ops := filepath.Join(t.TempDir(), "edits.jsonl")
	if err := os.WriteFile(ops, []byte(`{"op":"move","id":"R2","parent":"R1"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = run(t, env, "edit", "--ops", ops, "--model", model, "--table", roots, "--no-progress")
	wantEmptyKeyRefusal(t, "edit", code, stderr, `node "R2"`)
	if !slices.Equal(rawLines(t, client, roots), before) {
		t.Error("edit changed the table")
	}
}
