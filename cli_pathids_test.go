package main

import (
	"bufio"
	"context"
	"encoding/json"
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

// dynamotreeRows are the rows of dynamotree's README example as its own
// code would write them, built by hand: two accounts, each with a
// "Links" folder that is no object at all (only listing rows name it, as
// "Accounts" itself), and the name "xyzpdq" under both.
func dynamotreeRows() []layouts.Item {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	row := func(key, child string, attrs ...string) layouts.Item {
		it := layouts.Item{"Key": s(key), "Child": s(child)}
		for i := 0; i+1 < len(attrs); i += 2 {
			it[attrs[i]] = s(attrs[i+1])
		}
		return it
	}
	return []layouts.Item{
		row("¦", "Accounts"),
		row("¦Accounts¦", "123456"), row("¦Accounts¦123456", "¦", "owner", "alice"),
		row("¦Accounts¦", "654321"), row("¦Accounts¦654321", "¦", "owner", "bob"),
		row("¦Accounts¦123456¦", "Links"), row("¦Accounts¦654321¦", "Links"),
		row("¦Accounts¦123456¦Links¦", "xyzpdq"), row("¦Accounts¦123456¦Links¦xyzpdq", "¦", "url", "https://a.example/1"),
		row("¦Accounts¦123456¦Links¦", "abc"), row("¦Accounts¦123456¦Links¦abc", "¦", "url", "https://a.example/2"),
		row("¦Accounts¦654321¦Links¦", "xyzpdq"), row("¦Accounts¦654321¦Links¦xyzpdq", "¦", "url", "https://b.example/1"),
	}
}

// newPrefixTable creates an empty table keyed (Key, Child), as a
// dynamotree user would, and drops it when the test ends.
func newPrefixTable(t *testing.T, client *dynamodb.Client) string {
	t.Helper()
	table := ddblocal.TableName(t)
	_, err := client.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName: aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("Key"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("Child"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("Key"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("Child"), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	dropTableLater(t, client, table)
	return table
}

type pathQueryLine struct {
	ID       string         `json:"id"`
	ParentID string         `json:"parent_id"`
	Depth    int            `json:"relative_depth"`
	Attrs    map[string]any `json:"attributes"`
}

func pathQueryLines(t *testing.T, stdout string) []pathQueryLine {
	t.Helper()
	var out []pathQueryLine
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var l pathQueryLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		out = append(out, l)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out
}

// TestDynamotreeExamplePathIDs reads dynamotree's README example, built by
// hand, with --path-ids: the export has unique ids and the implicit
// folders as nodes without attributes; query children of a path id
// answers from that path only, the same on every run; the export imports
// back with --implicit-inner into the same rows, and a plan of it against
// the hand-built table has nothing to do.
func TestDynamotreeExamplePathIDs(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	table := newPrefixTable(t, client)
	for _, it := range dynamotreeRows() {
		putItem(t, client, table, it)
	}
	common := []string{"--table", table, "--layout", "prefix", "--path-ids", "--endpoint-url", endpoint}
	dir := t.TempDir()
	out := filepath.Join(dir, "accounts.jsonl")

	_, stderr, code := run(t, nil, append([]string{"export", "--out", out}, common...)...)
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		id, _ := rec["id"].(string)
		if _, dup := got[id]; dup {
			t.Errorf("id %q twice in the export", id)
		}
		parent, _ := rec["parent_id"].(string)
		delete(rec, "id")
		delete(rec, "parent_id")
		attrs, _ := json.Marshal(rec)
		got[id] = parent + " " + string(attrs)
	}
	want := map[string]string{
		"Accounts":                     " {}",
		"Accounts¦123456":              `Accounts {"owner":"alice"}`,
		"Accounts¦654321":              `Accounts {"owner":"bob"}`,
		"Accounts¦123456¦Links":        "Accounts¦123456 {}",
		"Accounts¦654321¦Links":        "Accounts¦654321 {}",
		"Accounts¦123456¦Links¦xyzpdq": `Accounts¦123456¦Links {"url":"https://a.example/1"}`,
		"Accounts¦123456¦Links¦abc":    `Accounts¦123456¦Links {"url":"https://a.example/2"}`,
		"Accounts¦654321¦Links¦xyzpdq": `Accounts¦654321¦Links {"url":"https://b.example/1"}`,
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("export: %q is %q, want %q", id, got[id], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("export has %d records, want %d:\n%s", len(got), len(want), b)
	}

	t.Run("query children of a path id", func(t *testing.T) {
		var first string
		for range 3 {
			stdout, stderr, code := run(t, nil, append([]string{"query", "children", "--id", "Accounts¦123456¦Links"}, common...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			lines := pathQueryLines(t, stdout)
			if len(lines) != 2 || lines[0].ID != "Accounts¦123456¦Links¦abc" || lines[1].ID != "Accounts¦123456¦Links¦xyzpdq" ||
				lines[1].ParentID != "Accounts¦123456¦Links" || lines[1].Attrs["url"] != "https://a.example/1" {
				t.Fatalf("children: %+v", lines)
			}
			if first == "" {
				first = stdout
			}
		}
	})
	t.Run("query get of an implicit node", func(t *testing.T) {
		stdout, stderr, code := run(t, nil, append([]string{"query", "get", "--id", "Accounts¦654321¦Links"}, common...)...)
		lines := pathQueryLines(t, stdout)
		if code != 0 || len(lines) != 1 || lines[0].ParentID != "Accounts¦654321" || len(lines[0].Attrs) != 0 {
			t.Fatalf("exit %d: %+v %s", code, lines, stderr)
		}
		_, stderr, code = run(t, nil, append([]string{"query", "get", "--id", "Accounts¦654321¦Nothing"}, common...)...)
		if code == 0 {
			t.Errorf("a missing node: exit 0: %s", stderr)
		}
	})
	t.Run("query ancestors through implicit nodes", func(t *testing.T) {
		stdout, stderr, code := run(t, nil, append([]string{"query", "ancestors", "--id", "Accounts¦654321¦Links¦xyzpdq"}, common...)...)
		lines := pathQueryLines(t, stdout)
		if code != 0 || len(lines) != 3 || lines[0].ID != "Accounts" || lines[2].ID != "Accounts¦654321¦Links" || lines[2].Depth != 1 {
			t.Fatalf("exit %d: %+v %s", code, lines, stderr)
		}
	})
	t.Run("plan against the hand-built table", func(t *testing.T) {
		stdout, stderr, code := run(t, nil, append([]string{"plan", "--in", out, "--implicit-inner", "--detailed-exitcode"}, common...)...)
		if code != 0 {
			t.Fatalf("plan of the export: exit %d\n%s%s", code, stdout, stderr)
		}
	})
	t.Run("import back gives the same rows", func(t *testing.T) {
		copyTable := newPrefixTable(t, client)
		_, stderr, code := run(t, nil, "import", "--in", out, "--table", copyTable, "--layout", "prefix", "--path-ids", "--implicit-inner",
			"--endpoint-url", endpoint, "--no-progress")
		if code != 0 {
			t.Fatalf("import: exit %d: %s", code, stderr)
		}
		sameState(t, "the imported copy", rawState(t, client, copyTable), rawState(t, client, table))
	})
}

// rawState is a prefix table's rows by key, as DynamoDB returns them.
func rawState(t *testing.T, client *dynamodb.Client, table string) map[string]string {
	t.Helper()
	spec := layouts.TableSpec{PK: layouts.KeyAttr{Name: "Key"}, SK: &layouts.KeyAttr{Name: "Child"}}
	return tableState(t, client, table, spec)
}

// TestPathIDsBadInput: a path id whose parent is not its prefix, an empty
// name, and --implicit-inner where it cannot be read back exit 2, say
// where, and write nothing.
func TestPathIDsBadInput(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, csv string
		flags     []string
		want      []string
	}{
		{"parent not the prefix", "id,parent_id\na,\na|b,a\nx,\nx|c,a\n", []string{"--layout", "path"},
			[]string{":5", `"x|c"`, `without its last name, "x"`}},
		{"leading delimiter", "id,parent_id\n|a,\n", []string{"--layout", "closure"},
			[]string{":2", "empty name"}},
		{"trailing delimiter", "id,parent_id\nAccounts,\nAccounts¦,Accounts\n", []string{"--layout", "prefix"},
			[]string{":3", "empty name"}},
		{"root with a delimiter", "id,parent_id\na|b,\n", []string{"--layout", "sharded-path"},
			[]string{":2", `"a|b" is a root`}},
		{"implicit inner in adjacency", "id,parent_id\na,\n", []string{"--layout", "adjacency", "--implicit-inner"},
			[]string{"adjacency", "ByParent"}},
		{"implicit inner without path ids", "id,parent_id\na,\n", []string{"--layout", "path", "--implicit-inner", "--no-path-ids"},
			[]string{"--path-ids"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".csv")
			if err := os.WriteFile(in, []byte(tc.csv), 0o644); err != nil {
				t.Fatal(err)
			}
			outDir := filepath.Join(dir, "out-"+strings.ReplaceAll(tc.name, " ", "-"))
			flags := []string{"import", "--in", in, "--out", outDir}
			if !slices.Contains(tc.flags, "--no-path-ids") {
				flags = append(flags, "--path-ids")
			}
			for _, f := range tc.flags {
				if f != "--no-path-ids" {
					flags = append(flags, f)
				}
			}
			_, stderr, code := run(t, nil, flags...)
			if code != 2 {
				t.Fatalf("exit %d, want 2: %s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			if entries, _ := os.ReadDir(outDir); len(entries) > 0 {
				t.Errorf("%s holds %d files", outDir, len(entries))
			}
		})
	}
}
