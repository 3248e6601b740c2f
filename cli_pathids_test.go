package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

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
	table := prefixTable(t, client, dynamotreeRows())
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
	t.Run("export a subtree", func(t *testing.T) {
		sub := filepath.Join(dir, "sub.jsonl")
		_, stderr, code := run(t, nil, append([]string{"export", "--root", "Accounts¦654321", "--out", sub}, common...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		got := exportedPathRecords(t, sub)
		want := map[string]string{"Accounts¦654321": " ", "Accounts¦654321¦Links": "Accounts¦654321 ", "Accounts¦654321¦Links¦xyzpdq": "Accounts¦654321¦Links "}
		if len(got) != len(want) {
			t.Fatalf("subtree: %v", got)
		}
		for id := range want {
			if _, ok := got[id]; !ok {
				t.Errorf("subtree misses %q: %v", id, got)
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
	t.Run("migrate to path and back gives the same rows", func(t *testing.T) {
		mid := ddblocal.TableName(t)
		dropTableLater(t, client, mid)
		_, stderr, code := run(t, nil, "migrate", "--from-table", table, "--from-layout", "prefix", "--to-table", mid, "--to-layout", "path",
			"--path-ids", "--implicit-inner", "--to-delimiter", "¦", "--create-table", "--endpoint-url", endpoint, "--no-progress")
		if code != 0 {
			t.Fatalf("migrate to path: exit %d: %s", code, stderr)
		}
		if items := scanTable(t, client, mid); len(items) != 5 {
			t.Errorf("the path table has %d items, want 5: one for each node with attributes", len(items))
		}
		back := prefixTable(t, client, nil)
		_, stderr, code = run(t, nil, "migrate", "--from-table", mid, "--from-layout", "path", "--from-delimiter", "¦", "--to-table", back, "--to-layout", "prefix",
			"--path-ids", "--implicit-inner", "--endpoint-url", endpoint, "--no-progress")
		if code != 0 {
			t.Fatalf("migrate back: exit %d: %s", code, stderr)
		}
		if got, want := rawLines(t, client, back), rawLines(t, client, table); !slices.Equal(got, want) {
			t.Errorf("back in prefix:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		_, stderr, code = run(t, nil, "migrate", "--from-table", table, "--from-layout", "prefix", "--to-table", mid+"-x", "--to-layout", "path",
			"--path-ids", "--endpoint-url", endpoint, "--no-progress")
		if code != 2 || !strings.Contains(stderr, "--to-delimiter ¦") {
			t.Errorf("two path-id sides with different delimiters: exit %d: %s", code, stderr)
		}
	})
	t.Run("import back gives the same rows", func(t *testing.T) {
		copyTable := prefixTable(t, client, nil)
		_, stderr, code := run(t, nil, "import", "--in", out, "--table", copyTable, "--layout", "prefix", "--path-ids", "--implicit-inner",
			"--endpoint-url", endpoint, "--no-progress")
		if code != 0 {
			t.Fatalf("import: exit %d: %s", code, stderr)
		}
		sameState(t, "the imported copy", rawState(t, client, copyTable), rawState(t, client, table))

		// A snapshot without the link under 654321: its Links folder is a
		// leaf now, with no attributes, and gets the object row an
		// implicit node did not need; the link's rows go; nothing else
		// is written.
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var kept []string
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if !strings.Contains(line, `"Accounts¦654321¦Links¦xyzpdq"`) {
				kept = append(kept, line)
			}
		}
		snap := filepath.Join(dir, "snapshot.jsonl")
		if err := os.WriteFile(snap, []byte(strings.Join(kept, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		before := rawState(t, client, copyTable)
		stdout, stderr, code := run(t, nil, "apply", "--in", snap, "--table", copyTable, "--layout", "prefix", "--path-ids", "--implicit-inner",
			"--allow-mass-delete", "--endpoint-url", endpoint, "--no-progress")
		if code != 0 {
			t.Fatalf("apply: exit %d\n%s%s", code, stdout, stderr)
		}
		after := rawState(t, client, copyTable)
		added, removed := diffStates(before, after)
		if len(added) != 1 || added["¦Accounts¦654321¦Links\x00¦"] == "" {
			t.Errorf("apply put %v, want the object row of ¦Accounts¦654321¦Links only", added)
		}
		if len(removed) != 2 || !removed["¦Accounts¦654321¦Links¦xyzpdq\x00¦"] || !removed["¦Accounts¦654321¦Links¦\x00xyzpdq"] {
			t.Errorf("apply deleted %v, want the link's two rows", removed)
		}
		_, stderr, code = run(t, nil, "plan", "--in", snap, "--table", copyTable, "--layout", "prefix", "--path-ids", "--implicit-inner",
			"--detailed-exitcode", "--endpoint-url", endpoint)
		if code != 0 {
			t.Errorf("plan after apply: exit %d: %s", code, stderr)
		}
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

// pathIDsCSV is a forest with path ids joined by delim: "Links" and
// "xyzpdq" under two accounts, and two inner nodes without attributes
// (Accounts and each Links), which --implicit-inner writes no item for.
func pathIDsCSV(delim string) string {
	j := func(names ...string) string { return strings.Join(names, delim) }
	rows := [][]string{
		{"Accounts", "", ""},
		{j("Accounts", "123456"), "Accounts", "10"},
		{j("Accounts", "123456", "Links"), j("Accounts", "123456"), ""},
		{j("Accounts", "123456", "Links", "xyzpdq"), j("Accounts", "123456", "Links"), "1"},
		{j("Accounts", "123456", "Links", "abc"), j("Accounts", "123456", "Links"), "3"},
		{j("Accounts", "654321"), "Accounts", "20"},
		{j("Accounts", "654321", "Links"), j("Accounts", "654321"), ""},
		{j("Accounts", "654321", "Links", "xyzpdq"), j("Accounts", "654321", "Links"), "2"},
		{"Other", "", "5"},
	}
	var b strings.Builder
	b.WriteString("id,parent_id,size\n")
	for _, r := range rows {
		b.WriteString(strings.Join(r, ",") + "\n")
	}
	return b.String()
}

// exportedPathRecords reads an export (JSON Lines) as id → "parent size".
func exportedPathRecords(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		id, _ := rec["id"].(string)
		if _, dup := out[id]; dup {
			t.Errorf("%s: id %q twice", path, id)
		}
		parent, _ := rec["parent_id"].(string)
		size := ""
		if v, ok := rec["size"]; ok {
			size = strings.TrimSpace(string(mustJSON(t, v)))
		}
		out[id] = parent + " " + size
	}
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPathIDsEveryLayout: for every layout, a forest with path ids and
// repeated names imports (with --implicit-inner where the layout takes
// it: no item for the inner nodes without attributes), exports as the
// same records, its export imports into the same items, verify and plan
// of the input find nothing to do, and query children of an inner node
// answers with its own children only.
func TestPathIDsEveryLayout(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	dir := t.TempDir()
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			flags := []string{"--layout", name, "--path-ids", "--endpoint-url", endpoint}
			implicit := name != layouts.AdjacencyName
			if implicit {
				flags = append(flags, "--implicit-inner")
			}
			l, err := layouts.New(name, layouts.Options{PathIDs: true})
			if err != nil {
				t.Fatal(err)
			}
			delim := l.Delimiter()
			in := filepath.Join(dir, name+".csv")
			if err := os.WriteFile(in, []byte(pathIDsCSV(delim)), 0o644); err != nil {
				t.Fatal(err)
			}
			table := ddblocal.TableName(t)
			dropTableLater(t, client, table)
			_, stderr, code := run(t, nil, append([]string{"import", "--in", in, "--types", "size:N", "--table", table, "--create-table", "--no-progress"}, flags...)...)
			if code != 0 {
				t.Fatalf("import: exit %d: %s", code, stderr)
			}
			want := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(pathIDsCSV(delim)), "\n")[1:] {
				f := strings.Split(line, ",")
				want[f[0]] = f[1] + " " + f[2]
			}
			// With --implicit-inner, no item names Accounts or a Links
			// folder as its own node.
			nodes := 0
			for _, it := range scanTable(t, client, table) {
				rec, ok, err := l.Node(it)
				if err != nil {
					t.Fatal(err)
				}
				if ok {
					nodes++
				}
				if ok && implicit && (strings.HasSuffix(rec.ID, "Links") || rec.ID == "Accounts") {
					t.Errorf("an item of its own for the implicit node %q", rec.ID)
				}
			}
			if wantNodes := len(want) - 3*btoi(implicit); nodes != wantNodes {
				t.Errorf("%d nodes have items of their own, want %d", nodes, wantNodes)
			}

			out := filepath.Join(dir, name+".jsonl")
			_, stderr, code = run(t, nil, append([]string{"export", "--table", table, "--out", out}, flags...)...)
			if code != 0 {
				t.Fatalf("export: exit %d: %s", code, stderr)
			}
			got := exportedPathRecords(t, out)
			for id, w := range want {
				if got[id] != w {
					t.Errorf("export: %q is %q, want %q", id, got[id], w)
				}
			}
			if len(got) != len(want) {
				t.Errorf("export: %d records, want %d", len(got), len(want))
			}

			copyTable := ddblocal.TableName(t) + "-copy"
			dropTableLater(t, client, copyTable)
			_, stderr, code = run(t, nil, append([]string{"import", "--in", out, "--table", copyTable, "--create-table", "--no-progress"}, flags...)...)
			if code != 0 {
				t.Fatalf("import of the export: exit %d: %s", code, stderr)
			}
			spec := l.Table()
			sameState(t, "the export imported", tableState(t, client, copyTable, spec), tableState(t, client, table, spec))

			stdout, stderr, code := run(t, nil, append([]string{"verify", "--in", in, "--types", "size:N", "--table", table}, flags...)...)
			if code != 0 {
				t.Errorf("verify: exit %d\n%s%s", code, stdout, stderr)
			}
			stdout, stderr, code = run(t, nil, append([]string{"plan", "--in", in, "--types", "size:N", "--table", table, "--detailed-exitcode"}, flags...)...)
			if code != 0 {
				t.Errorf("plan: exit %d\n%s%s", code, stdout, stderr)
			}

			links := "Accounts" + delim + "654321" + delim + "Links"
			stdout, stderr, code = run(t, nil, append([]string{"query", "children", "--table", table, "--id", "Accounts" + delim + "654321"}, flags...)...)
			lines := pathQueryLines(t, stdout)
			if code != 0 || len(lines) != 1 || lines[0].ID != links || len(lines[0].Attrs) != 0 {
				t.Errorf("children: exit %d %+v %s", code, lines, stderr)
			}
			stdout, stderr, code = run(t, nil, append([]string{"query", "descendants", "--table", table, "--id", "Accounts", "--min-depth", "2", "--max-depth", "2"}, flags...)...)
			lines = pathQueryLines(t, stdout)
			if code != 0 || len(lines) != 2 || lines[0].ID != "Accounts"+delim+"123456"+delim+"Links" || lines[1].ID != links {
				t.Errorf("descendants at depth 2: exit %d %+v %s", code, lines, stderr)
			}
		})
	}
}
