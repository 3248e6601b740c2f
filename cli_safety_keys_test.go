package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/testserver/faultproxy"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/models"
)

// innerModelText is the path pattern of wadsworth-path with its index
// sort key {inner} alone, as the user who found issue 24 wrote it: "" for
// a child of a root. sparse adds "sparse": true to the index.
func innerModelText(sparse bool) string {
	flag := ""
	if sparse {
		flag = `"sparse": true,`
	}
	return `{"name": "inner-path", "layout": "path", "delimiter": "/",
		"table": {"partition_key": {"name": "ID", "template": "{id}"}},
		"indexes": [{"name": "gsi1", "serves": "ByPath", ` + flag + `
			"partition_key": {"name": "Root", "template": "{root}", "absent_on_root": true},
			"sort_key": {"name": "Path", "template": "{inner}", "absent_on_root": true}}]}`
}

// innerModel writes innerModelText(true) to a file and loads it.
func innerModel(t *testing.T, sparse bool) (string, layouts.Layout) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "inner-path.json")
	if err := os.WriteFile(path, []byte(innerModelText(sparse)), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := models.LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, l
}

// TestEmptyKeyRefusedBeforeAnyWrite: a model whose index sort key is ""
// for a child of a root is refused when it is loaded, by every command
// that takes it (import --dry-run, --out, --table, plan, apply, migrate,
// edit, export, query, verify, schema, bench), with exit 2 naming the
// field, the attribute, the index and the fix, before anything is read or
// written; DynamoDB never sees an item.
func TestEmptyKeyRefusedBeforeAnyWrite(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	model := filepath.Join(dir, "inner-path.json")
	if err := os.WriteFile(model, []byte(innerModelText(false)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, sparse := innerModel(t, true) // the same keys, to build the table
	typesFlag := fixtureTypes(t, "cars")
	const in = "fixtures/cars.csv"
	table := ddblocal.NewTable(t, client, sparse.Table())
	for _, id := range []string{"R1", "R2"} {
		putItems(t, client, table, layouts.Item{"ID": &types.AttributeValueMemberS{Value: id}, "name": &types.AttributeValueMemberS{Value: "root " + id}})
	}
	before := rawLines(t, client, table)
	path, _ := layouts.New(layouts.PathName, layouts.Options{})
	src := loadTable(t, env, client, in, typesFlag, path)
	dest := ddblocal.NewTable(t, client, sparse.Table())
	ops := filepath.Join(dir, "edits.jsonl")
	if err := os.WriteFile(ops, []byte(`{"op":"move","id":"R2","parent":"R1"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	for _, args := range [][]string{
		{"import", "--in", in, "--types", typesFlag, "--model", model, "--dry-run"},
		{"import", "--in", in, "--types", typesFlag, "--model", model, "--out", out},
		{"import", "--in", in, "--types", typesFlag, "--model", model, "--table", dest, "--no-progress"},
		{"plan", "--in", in, "--types", typesFlag, "--model", model, "--table", table},
		{"apply", "--in", in, "--types", typesFlag, "--model", model, "--table", table, "--no-progress"},
		{"migrate", "--from-table", src, "--from-layout", "path", "--to-table", dest, "--to-model", model, "--no-progress"},
		{"edit", "--ops", ops, "--model", model, "--table", table, "--no-progress"},
		{"export", "--model", model, "--table", table, "--out", filepath.Join(dir, "x.jsonl")},
		{"query", "children", "--id", "R1", "--model", model, "--table", table},
		{"verify", "--in", in, "--types", typesFlag, "--model", model, "--table", table},
		{"schema", "--model", model, "--table", table},
		{"bench", "--in", in, "--types", typesFlag, "--model", model, "--offline"},
	} {
		_, stderr, code := run(t, env, args...)
		if code != 2 {
			t.Errorf("%s: exit %d, want 2:\n%s", args[0], code, stderr)
		}
		for _, w := range []string{"indexes[0].sort_key.template", "empty key value", "sort key Path of index gsi1", "for a child of a root", `"/{inner}"`, `"sparse": true`} {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: stderr does not say %q:\n%s", args[0], w, stderr)
			}
		}
	}
	if entries, _ := os.ReadDir(out); len(entries) > 0 {
		t.Errorf("import --out wrote %d files", len(entries))
	}
	if items := scanTable(t, client, dest); len(items) != 0 {
		t.Errorf("import and migrate wrote %d items", len(items))
	}
	if !slices.Equal(rawLines(t, client, table), before) {
		t.Error("apply or edit changed the table")
	}
}

// requestLog is the operations a fault proxy saw, in order.
type requestLog struct {
	mu  sync.Mutex
	ops []string
}

func (r *requestLog) add(op string, _ []byte) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

func (r *requestLog) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ops := r.ops
	r.ops = nil
	return ops
}

// TestSchemaMismatchRefusedBeforeAnyRead: every command that reads (or
// writes) a table of a layout or model checks the table's keys, their
// types and the indexes it uses with DescribeTable first: a table of
// another shape is refused with exit 2, a message saying what differs and
// what to do, before any read or write (the requests DynamoDB got are
// DescribeTable alone, through a fault proxy's request log) and the tables
// are unchanged. Both sides of migrate are checked before the source is
// read, with --follow too.
func TestSchemaMismatchRefusedBeforeAnyRead(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	typesFlag := fixtureTypes(t, "cars")
	const in = "fixtures/cars.csv"
	closure, _ := layouts.New(layouts.ClosureName, layouts.Options{})
	path, _ := layouts.New(layouts.PathName, layouts.Options{})
	// A closure table, by hand: the wrong keys for path and for the model.
	wrong := ddblocal.NewTable(t, client, closure.Table())
	putItems(t, client, wrong, layouts.Item{"Id": &types.AttributeValueMemberS{Value: "CM1"},
		"RelativeDepth": &types.AttributeValueMemberN{Value: "0"}, "AncestorId": &types.AttributeValueMemberS{Value: "CM1"}})
	// A path table of the cars, for the side of migrate that fits.
	good := loadTable(t, awsEnv(endpoint), client, in, typesFlag, path)
	empty := ddblocal.NewTable(t, client, path.Table())
	// A table whose keys are the model's but lacking its GSI2.
	single := "fixtures/models/single-table.json"
	sl, err := models.LoadModel(single)
	if err != nil {
		t.Fatal(err)
	}
	noGSI2 := sl.Table()
	noGSI2.Indexes = noGSI2.Indexes[:1]
	partial := ddblocal.NewTable(t, client, noGSI2)

	// A sharded-path table, by hand: adjacency's keys and ByParent, and
	// its ByPath on GraphId.
	sharded, _ := layouts.New(layouts.ShardedName, layouts.Options{})
	shardedTable := ddblocal.NewTable(t, client, sharded.Table())

	ops := filepath.Join(t.TempDir(), "edits.jsonl")
	if err := os.WriteFile(ops, []byte(`{"op":"set","id":"CM2","attributes":{"qty":"2"}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want []string // in stderr, besides "does not match"
	}{
		{"export", []string{"export", "--table", wrong, "--layout", "path", "--out", filepath.Join(out, "x.jsonl")}, []string{"sort key: table has RelativeDepth (N), layout wants none"}},
		{"query", []string{"query", "descendants", "--table", wrong, "--layout", "path", "--id", "CM1"}, []string{"index ByPath: missing"}},
		{"query with a model", []string{"query", "children", "--table", partial, "--model", single, "--id", "CM1"}, []string{"index GSI2: missing", "GSI2PK"}},
		{"verify", []string{"verify", "--in", in, "--types", typesFlag, "--table", wrong, "--layout", "path"}, []string{"index ByParent: missing"}},
		{"plan", []string{"plan", "--in", in, "--types", typesFlag, "--table", wrong, "--layout", "path"}, nil},
		{"plan with a model", []string{"plan", "--in", in, "--types", typesFlag, "--table", partial, "--model", single}, []string{"index GSI2: missing"}},
		{"apply", []string{"apply", "--in", in, "--types", typesFlag, "--table", wrong, "--layout", "path", "--no-progress"}, nil},
		{"edit", []string{"edit", "--ops", ops, "--table", wrong, "--layout", "path", "--no-progress"}, nil},
		{"migrate source", []string{"migrate", "--from-table", wrong, "--from-layout", "path", "--to-table", empty, "--to-layout", "path", "--no-progress"}, []string{"source:"}},
		{"migrate destination", []string{"migrate", "--from-table", good, "--from-layout", "path", "--to-table", wrong, "--to-layout", "path", "--no-progress"}, []string{"destination:"}},
		{"migrate destination, --create-table", []string{"migrate", "--from-table", good, "--from-layout", "path", "--to-table", wrong, "--to-layout", "path", "--create-table", "--no-progress"}, []string{"destination:"}},
		{"migrate --follow source", []string{"migrate", "--from-table", wrong, "--from-layout", "path", "--to-table", empty, "--to-layout", "path", "--follow", "--follow-idle", "1s", "--no-progress"}, []string{"source:"}},
		{"migrate --follow destination", []string{"migrate", "--from-table", good, "--from-layout", "path", "--to-table", wrong, "--to-layout", "path", "--follow", "--follow-idle", "1s", "--enable-stream", "--no-progress"}, []string{"destination:"}},
		// A path table has every key and index adjacency uses: only its
		// ByPath tells it, and read as adjacency its items' Path, TreeId
		// and Depth would be the user's attributes (apply would strip them).
		{"export a path table as adjacency", []string{"export", "--table", good, "--layout", "adjacency", "--out", filepath.Join(out, "y.csv")}, []string{"index ByPath (TreeId, Path) is the path layout's", "TreeId, Path, Depth", "Use --layout path"}},
		{"apply adjacency to a path table", []string{"apply", "--in", in, "--types", typesFlag, "--table", good, "--layout", "adjacency", "--no-progress"}, []string{"is the path layout's"}},
		{"import adjacency into a path table", []string{"import", "--in", in, "--types", typesFlag, "--table", good, "--layout", "adjacency", "--no-progress"}, []string{"is the path layout's"}},
		{"edit a path table as adjacency", []string{"edit", "--ops", ops, "--table", good, "--layout", "adjacency", "--no-progress"}, []string{"is the path layout's"}},
		{"migrate from a path table as adjacency", []string{"migrate", "--from-table", good, "--from-layout", "adjacency", "--to-table", empty, "--to-layout", "path", "--no-progress"}, []string{"source:", "is the path layout's"}},
		{"query a sharded-path table as adjacency", []string{"query", "children", "--table", shardedTable, "--layout", "adjacency", "--id", "CM1"}, []string{"index ByPath (GraphId, Path) is the sharded-path layout's", "Use --layout sharded-path"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log requestLog
			proxy, err := faultproxy.New(faultproxy.Config{Target: endpoint, Lifetime: 5 * time.Minute, OnRequest: log.add})
			if err != nil {
				t.Fatal(err)
			}
			defer proxy.Close()
			before := map[string][]string{}
			for _, tb := range []string{wrong, good, empty, partial, shardedTable} {
				before[tb] = rawLines(t, client, tb)
			}
			_, stderr, code := run(t, awsEnv(proxy.URL()), tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2:\n%s", code, stderr)
			}
			for _, w := range append([]string{"does not match", "nothing was read or written"}, tc.want...) {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			seen := log.take()
			if len(seen) == 0 {
				t.Error("no request reached DynamoDB: the refusal did not come from the table's description")
			}
			for _, op := range seen {
				if op != "DescribeTable" {
					t.Errorf("%s was sent before the refusal (requests: %v)", op, seen)
					break
				}
			}
			for tb, lines := range before {
				if !slices.Equal(rawLines(t, client, tb), lines) {
					t.Errorf("table %s changed", tb)
				}
			}
		})
	}
}

// TestSparseModelRoundTrip: with "sparse": true on the index, the nodes
// whose Path would be empty are written without it (so they are not in the
// index), and the model round-trips: the table holds exactly the items
// the model builds, verify finds the file, export gives back the records
// (verify of the export), the workbench model's sample items leave Path
// off the children of the root, a query below them is answered and one the
// index cannot answer (the root's children, left out of it) exits 2 saying
// why instead of answering without them.
func TestSparseModelRoundTrip(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	model, l := innerModel(t, true)
	typesFlag := fixtureTypes(t, "cars")
	const in = "fixtures/cars.csv"
	table := ddblocal.NewTable(t, client, l.Table())
	if _, stderr, code := run(t, env, "import", "--in", in, "--types", typesFlag, "--model", model, "--table", table, "--no-progress"); code != 0 {
		t.Fatalf("import: exit %d:\n%s", code, stderr)
	}
	sameState(t, "the table", tableState(t, client, table, l.Table()), wantState(t, in, typesFlag, l))
	for _, it := range scanTable(t, client, table) {
		id := it["ID"].(*types.AttributeValueMemberS).Value
		_, root := it["Root"]
		_, hasPath := it["Path"]
		if (id == "CM2" || id == "CM20") && (!root || hasPath) {
			t.Errorf("child of the root %s: %s, want Root and no Path", id, ddbjson.AppendItem(nil, it))
		}
	}
	if _, stderr, code := run(t, env, "verify", "--in", in, "--types", typesFlag, "--model", model, "--table", table); code != 0 {
		t.Errorf("verify: exit %d:\n%s", code, stderr)
	}
	exported := filepath.Join(t.TempDir(), "cars.jsonl")
	if _, stderr, code := run(t, env, "export", "--model", model, "--table", table, "--out", exported); code != 0 {
		t.Fatalf("export: exit %d:\n%s", code, stderr)
	}
	if _, stderr, code := run(t, env, "verify", "--in", exported, "--model", model, "--table", table); code != 0 {
		t.Errorf("verify of the export: exit %d:\n%s", code, stderr)
	}
	wb, stderr, code := run(t, env, "schema", "--model", model, "--table", "Cars", "--format", "workbench", "--in", in, "--types", typesFlag, "--sample", "48")
	if code != 0 {
		t.Fatalf("schema --format workbench: exit %d:\n%s", code, stderr)
	}
	var doc struct {
		DataModel []struct {
			TableData []map[string]map[string]any
		}
	}
	if err := json.Unmarshal([]byte(wb), &doc); err != nil || len(doc.DataModel) != 1 {
		t.Fatalf("schema --format workbench: %v:\n%.2000s", err, wb)
	}
	paths := map[string]string{}
	for _, it := range doc.DataModel[0].TableData {
		if p, ok := it["Path"]; ok {
			id, _ := it["ID"]["S"].(string)
			paths[id], _ = p["S"].(string)
		}
	}
	if _, ok := paths["CM2"]; ok || paths["CM3"] != "CM2/" || len(paths) != 48-1-5 {
		t.Errorf("workbench sample items: Path of CM2 %q, of CM3 %q, %d with a Path; want none, CM2/, 42 (the nodes below the 5 children of the root)", paths["CM2"], paths["CM3"], len(paths))
	}
	stdout, stderr, code := run(t, env, "query", "descendants", "--model", model, "--table", table, "--id", "CM2")
	if code != 0 || strings.Count(stdout, "\n") < 2 {
		t.Errorf("descendants of CM2: exit %d, %q:\n%s", code, stdout, stderr)
	}
	_, stderr, code = run(t, env, "query", "children", "--model", model, "--table", table, "--id", "CM1")
	if code != 2 || !strings.Contains(stderr, "not in index gsi1") {
		t.Errorf("children of the root CM1: exit %d, want 2 saying they are not in gsi1:\n%s", code, stderr)
	}
	// edit reads a moved node's subtree through the index: moving a root,
	// whose children are not in it, is refused before anything is written.
	dir := t.TempDir()
	two := filepath.Join(dir, "two.json")
	ops := filepath.Join(dir, "ops.jsonl")
	if err := os.WriteFile(two, []byte(`[{"id":"A"},{"id":"B","parent_id":"A"},{"id":"C","parent_id":"B"},{"id":"X"},{"id":"Y","parent_id":"X"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ops, []byte(`{"op":"move","id":"X","parent":"C"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	trees := ddblocal.NewTable(t, client, l.Table())
	if _, stderr, code := run(t, env, "import", "--in", two, "--model", model, "--table", trees, "--no-progress"); code != 0 {
		t.Fatalf("import: exit %d:\n%s", code, stderr)
	}
	before := rawLines(t, client, trees)
	_, stderr, code = run(t, env, "edit", "--ops", ops, "--model", model, "--table", trees, "--no-progress")
	if code != 2 || !strings.Contains(stderr, "not in index gsi1") || !strings.Contains(stderr, "nothing was written") {
		t.Errorf("edit moving the root X: exit %d, want 2 saying X's children are not in gsi1:\n%s", code, stderr)
	}
	if !slices.Equal(rawLines(t, client, trees), before) {
		t.Error("edit changed the table")
	}
}
