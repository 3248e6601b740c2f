package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// dynamotreePut is the rows dynamotree's Tree.Put writes for an object at
// key: a listing row (Key = each prefix and the delimiter, Child = the
// next id) for every id of the key, and the object row (Key = the full
// key, Child = the delimiter) with the object's attributes.
func dynamotreePut(key []string, attrs layouts.Item) []layouts.Item {
	var rows []layouts.Item
	prefix := ""
	for _, id := range key {
		prefix += "¦"
		rows = append(rows, layouts.Item{"Key": s(prefix), "Child": s(id)})
		prefix += id
	}
	object := layouts.Item{"Key": s(prefix), "Child": s("¦")}
	for k, v := range attrs {
		object[k] = v
	}
	return append(rows, object)
}

// dynamotreeLink is the rows dynamotree's Tree.PutLink writes: the listing
// rows of key, and its object row whose attribute "¦" is the target's full
// key.
func dynamotreeLink(key, target []string) []layouts.Item {
	return dynamotreePut(key, layouts.Item{"¦": s("¦" + strings.Join(target, "¦"))})
}

// uniqueKeys keeps the first row of each key (Key, Child): the listing
// rows dynamotreePut makes for a folder that several puts share.
func uniqueKeys(rows []layouts.Item) []layouts.Item {
	seen := map[string]bool{}
	var out []layouts.Item
	for _, r := range rows {
		k := string(ddbjson.AppendItem(nil, layouts.Item{"Key": r["Key"], "Child": r["Child"]}))
		if !seen[k] {
			seen[k] = true
			out = append(out, r)
		}
	}
	return out
}

// linkTableRows is a dynamotree table with a symbolic link, as dynamotree
// writes it, every object Put at each level (no implicit node): the
// account 123456 with a note n1, and the link Links¦short to the note.
// Listing rows written twice (each Put writes its prefixes') are one item.
func linkTableRows() []layouts.Item {
	var rows []layouts.Item
	rows = append(rows, dynamotreePut([]string{"Accounts"}, layouts.Item{"kind": s("directory")})...)
	rows = append(rows, dynamotreePut([]string{"Accounts", "123456"}, layouts.Item{"name": s("Alice"), "registered": s("2015-01-01T19:59:00")})...)
	rows = append(rows, dynamotreePut([]string{"Accounts", "123456", "Notes"}, layouts.Item{"kind": s("directory")})...)
	rows = append(rows, dynamotreePut([]string{"Accounts", "123456", "Notes", "n1"}, layouts.Item{"LinkTarget": s("http://example.com/")})...)
	rows = append(rows, dynamotreePut([]string{"Links"}, layouts.Item{"kind": s("directory")})...)
	rows = append(rows, dynamotreeLink([]string{"Links", "short"}, []string{"Accounts", "123456", "Notes", "n1"})...)
	return uniqueKeys(rows)
}

// linkTableRecords is what export writes for linkTableRows, sorted.
var linkTableRecords = []string{
	`{"id":"123456","parent_id":"Accounts","name":"Alice","registered":"2015-01-01T19:59:00"}`,
	`{"id":"Accounts","kind":"directory"}`,
	`{"id":"Links","kind":"directory"}`,
	`{"id":"Notes","parent_id":"123456","kind":"directory"}`,
	`{"id":"n1","parent_id":"Notes","LinkTarget":"http://example.com/"}`,
	`{"id":"short","parent_id":"Links","link_to":"n1"}`,
}

// prefixTable creates a table keyed as dynamotree's CreateTable does
// (Key, Child) and puts items in it with PutItem.
func prefixTable(t *testing.T, client *dynamodb.Client, items []layouts.Item) string {
	t.Helper()
	h := handModel{create: func(name string) *dynamodb.CreateTableInput {
		return &dynamodb.CreateTableInput{TableName: aws.String(name), KeySchema: keySchema("Key", "Child"),
			AttributeDefinitions: defs("Key", "Child"), BillingMode: types.BillingModePayPerRequest}
	}}
	return handTable(t, client, h, items)
}

// followIntoPath puts rows into a new prefix table and starts migrate
// --follow of it into a new path table, dest, with --path-ids and flags;
// it returns once the follower follows the stream.
func followIntoPath(t *testing.T, client *dynamodb.Client, endpoint string, rows []layouts.Item, flags ...string) (table, dest string, cmd *exec.Cmd, out *syncBuf) {
	t.Helper()
	table = prefixTable(t, client, rows)
	dest = ddblocal.TableName(t)
	dropTableLater(t, client, dest)
	ck := filepath.Join(t.TempDir(), "ck.json")
	args := append([]string{"migrate", "--from-table", table, "--from-layout", "prefix", "--to-table", dest, "--to-layout", "path", "--to-delimiter", "¦",
		"--path-ids", "--create-table", "--enable-stream", "--follow", "--follow-idle", "4s", "--checkpoint", ck,
		"--endpoint-url", endpoint, "--no-progress"}, flags...)
	cmd, out = startFollower(t, args)
	waitForOutput(t, cmd, out, "following the stream")
	return table, dest, cmd, out
}

// sortedLines returns the non-empty lines of text, sorted.
func sortedLines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

// TestLinksHandBuiltTable reads a table of dynamotree's rows, a symbolic
// link among them, written with PutItem: export writes the link as a
// record with link_to; query get answers the link, and with
// --follow-links the node it links to, saying through which link; verify
// finds the table identical to the export, and reports a link to a node
// that is not in the table; the export imported into a new table gives
// back the same items byte for byte, and so does a migration to the path
// layout (where link_to is an attribute) and back; a plan of the export
// on the table changes nothing.
func TestLinksHandBuiltTable(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	rows := linkTableRows()
	table := prefixTable(t, client, rows)

	out := filepath.Join(dir, "export.jsonl")
	if _, stderr, code := run(t, env, "export", "--table", table, "--layout", "prefix", "--out", out); code != 0 {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	if got := sortedLines(readFile(t, out)); !slices.Equal(got, linkTableRecords) {
		t.Fatalf("export:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(linkTableRecords, "\n      "))
	}

	get := func(args ...string) (string, string, int) {
		return run(t, env, append([]string{"query", "get", "--table", table, "--layout", "prefix"}, args...)...)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"the link itself", []string{"--path", "Links¦short"},
			`{"id":"short","parent_id":"Links","relative_depth":0,"attributes":{"link_to":"n1"}}`},
		{"through the link", []string{"--path", "Links¦short", "--follow-links"},
			`{"id":"n1","parent_id":"Notes","relative_depth":0,"via_link":"short","attributes":{"LinkTarget":"http://example.com/"}}`},
		{"through the link, found by a Scan", []string{"--id", "short", "--follow-links"},
			`{"id":"n1","parent_id":"Notes","relative_depth":0,"via_link":"short","attributes":{"LinkTarget":"http://example.com/"}}`},
		{"a node that is no link", []string{"--path", "Accounts¦123456", "--follow-links"},
			`{"id":"123456","parent_id":"Accounts","relative_depth":0,"attributes":{"name":"Alice","registered":"2015-01-01T19:59:00"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := get(tt.args...)
			if code != 0 || strings.TrimSpace(stdout) != tt.want {
				t.Fatalf("query get %v: exit %d\n got  %s\n want %s\n%s", tt.args, code, strings.TrimSpace(stdout), tt.want, stderr)
			}
		})
	}
	if _, stderr, code := run(t, env, "query", "get", "--table", table, "--layout", "path", "--id", "short", "--follow-links"); code != 2 || !strings.Contains(stderr, "--follow-links: the path layout has no links") {
		t.Errorf("--follow-links on the path layout: exit %d, want 2\n%s", code, stderr)
	}

	stdout, stderr, code := run(t, env, "verify", "--in", out, "--table", table, "--layout", "prefix")
	if code != 0 || !strings.Contains(stdout, "identical") {
		t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
	}

	// Export then import gives back the same table, link rows and all.
	again := ddblocal.TableName(t)
	dropTableLater(t, client, again)
	if _, stderr, code := run(t, env, "import", "--in", out, "--layout", "prefix", "--table", again, "--create-table", "--no-progress"); code != 0 {
		t.Fatalf("import: exit %d\n%s", code, stderr)
	}
	sameLines(t, "the export imported", rawLines(t, client, again), rows)

	// A plan of the export on the table changes nothing.
	if stdout, stderr, code := run(t, env, "plan", "--in", out, "--table", table, "--layout", "prefix", "--detailed-exitcode"); code != 0 {
		t.Errorf("plan: exit %d, want 0 (no change)\n%s%s", code, stdout, stderr)
	}

	// To the path layout, where link_to is an attribute, and back.
	path, back := ddblocal.TableName(t), ddblocal.TableName(t)
	dropTableLater(t, client, path)
	dropTableLater(t, client, back)
	for _, m := range [][]string{{table, "prefix", path, "path"}, {path, "path", back, "prefix"}} {
		if _, stderr, code := run(t, env, "migrate", "--from-table", m[0], "--from-layout", m[1], "--to-table", m[2], "--to-layout", m[3], "--create-table", "--no-progress"); code != 0 {
			t.Fatalf("migrate %s to %s: exit %d\n%s", m[1], m[3], code, stderr)
		}
	}
	if got := scanTable(t, client, path); !pathHasAttr(got, "short", "link_to", "n1") {
		t.Errorf("the path table's item of short has no link_to n1: %v", got)
	}
	sameLines(t, "migrated to path and back", rawLines(t, client, back), rows)

	// A link to a node that is not in the table: verify finds it.
	putItems(t, client, table, dynamotreeLink([]string{"Links", "gone"}, []string{"Accounts", "999"})...)
	withGone := filepath.Join(dir, "with-gone.jsonl")
	text := readFile(t, out) + `{"id":"gone","parent_id":"Links","link_to":"999"}` + "\n"
	if err := os.WriteFile(withGone, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = run(t, env, "verify", "--in", withGone, "--table", table, "--layout", "prefix")
	if code != 1 || !strings.Contains(stdout, "links to a node not in the table: 1") ||
		!strings.Contains(stdout, `"gone" (parent "Links") links to "999", which is not in the table`) {
		t.Errorf("verify of a dangling link: exit %d, want 1 and the link\n%s%s", code, stdout, stderr)
	}
	if _, stderr, code := get("--path", "Links¦gone", "--follow-links"); code == 0 || !strings.Contains(stderr, `node "999" (path ¦Accounts¦999), which the link node "gone" (path ¦Links¦gone) links to, is not in table `+table) {
		t.Errorf("following a dangling link: exit %d\n%s", code, stderr)
	}
}

// pathHasAttr reports whether the path layout's item of id has the string
// attribute name = value.
func pathHasAttr(items []layouts.Item, id, name, value string) bool {
	for _, it := range items {
		if v, ok := it["Id"].(*types.AttributeValueMemberS); ok && v.Value == id {
			a, ok := it[name].(*types.AttributeValueMemberS)
			return ok && a.Value == value
		}
	}
	return false
}

// TestLinksBadInput imports links the prefix layout cannot write: each
// is a located problem, exit 2, nothing written. The path layout keeps
// link_to as an attribute and takes them all.
func TestLinksBadInput(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, jsonl string
		want        []string // lines of stderr, after the file name
	}{
		{"a link to itself", `{"id":"a"}
{"id":"b","parent_id":"a","link_to":"b"}
`, []string{`:2: id "b": bad link: link_to "b": the node links to itself`}},
		{"a cycle of links", `{"id":"a"}
{"id":"b","parent_id":"a","link_to":"c"}
{"id":"c","parent_id":"a","link_to":"b"}
{"id":"d","parent_id":"a","link_to":"c"}
`, []string{`:2: id "b": bad link: a cycle of links: "b" → "c" → "b"`, `:3: id "c": bad link: a cycle of links: "b" → "c" → "b"`,
			`:4: id "d": bad link: link_to "c": the target is a link that cannot be written`}},
		{"a link to an id not in the input", `{"id":"a"}
{"id":"b","parent_id":"a","link_to":"zz"}
`, []string{`:2: id "b": bad link: link_to "zz" is not an id of the input`}},
		{"link_to not a string", `{"id":"a"}
{"id":"b","parent_id":"a","link_to":5}
{"id":"c","parent_id":"a","link_to":{"id":"a"}}
`, []string{`:2: id "b": bad link: link_to is N, want the id of the node it links to (a string)`, `:3: id "c": bad link: link_to is M, want`}},
	}
	for k, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := filepath.Join(dir, string(rune('a'+k))+".jsonl")
			if err := os.WriteFile(in, []byte(tt.jsonl), 0o644); err != nil {
				t.Fatal(err)
			}
			outDir := filepath.Join(dir, "out"+string(rune('a'+k)))
			stdout, stderr, code := run(t, nil, "import", "--in", in, "--layout", "prefix", "--out", outDir)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, in+w) {
					t.Errorf("stderr lacks %q:\n%s", in+w, stderr)
				}
			}
			if stdout != "" {
				t.Errorf("stdout: %q", stdout)
			}
			if _, err := os.Stat(outDir); !os.IsNotExist(err) {
				t.Errorf("output directory was created (%v)", err)
			}
			pathOut := filepath.Join(dir, "path"+string(rune('a'+k)))
			if _, stderr, code := run(t, nil, "import", "--in", in, "--layout", "path", "--out", pathOut); code != 0 {
				t.Errorf("path layout: exit %d, want 0: link_to is an attribute there\n%s", code, stderr)
			}
		})
	}
}

// TestLinksChainAndChildren imports a chain of links (a link to a link)
// and a link with a child of its own into a prefix table and exports them
// back: the same records; following the first link once answers the
// second.
func TestLinksChainAndChildren(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	records := []string{
		`{"id":"L1","parent_id":"r","link_to":"L2"}`,
		`{"id":"L2","parent_id":"r","link_to":"t","note":"second"}`,
		`{"id":"c","parent_id":"L2","size":3}`,
		`{"id":"r"}`,
		`{"id":"t","parent_id":"r","name":"target"}`,
	}
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(strings.Join(records, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	table := ddblocal.TableName(t)
	dropTableLater(t, client, table)
	if _, stderr, code := run(t, env, "import", "--in", in, "--layout", "prefix", "--table", table, "--create-table", "--no-progress"); code != 0 {
		t.Fatalf("import: exit %d\n%s", code, stderr)
	}
	want := []layouts.Item{
		{"Key": s("¦"), "Child": s("r")}, {"Key": s("¦r"), "Child": s("¦")},
		{"Key": s("¦r¦"), "Child": s("L1")}, {"Key": s("¦r¦L1"), "Child": s("¦"), "¦": s("¦r¦L2")},
		{"Key": s("¦r¦"), "Child": s("L2")}, {"Key": s("¦r¦L2"), "Child": s("¦"), "¦": s("¦r¦t"), "note": s("second")},
		{"Key": s("¦r¦L2¦"), "Child": s("c")}, {"Key": s("¦r¦L2¦c"), "Child": s("¦"), "size": &types.AttributeValueMemberN{Value: "3"}},
		{"Key": s("¦r¦"), "Child": s("t")}, {"Key": s("¦r¦t"), "Child": s("¦"), "name": s("target")},
	}
	sameLines(t, "the table", rawLines(t, client, table), want)
	out := filepath.Join(dir, "out.jsonl")
	if _, stderr, code := run(t, env, "export", "--table", table, "--layout", "prefix", "--out", out); code != 0 {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	if got := sortedLines(readFile(t, out)); !slices.Equal(got, records) {
		t.Fatalf("export:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(records, "\n      "))
	}
	stdout, stderr, code := run(t, env, "query", "get", "--table", table, "--layout", "prefix", "--path", "r¦L1", "--follow-links")
	var line map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &line) != nil || line["id"] != "L2" || line["via_link"] != "L1" {
		t.Errorf("following L1 once: exit %d, want L2 via L1: %s%s", code, stdout, stderr)
	}
}

// readmeRows are the rows of dynamotree's README example, as its Put and
// PutLink write them: two accounts, each with a link under a directory of
// the same name, Links (¦Accounts¦123456¦Links has listing rows only: no
// object of its own), and the symbolic link ¦Links¦xyzpdq to
// ¦Accounts¦123456¦Links¦xyzpdq.
func readmeRows() []layouts.Item {
	var rows []layouts.Item
	rows = append(rows, dynamotreePut([]string{"Accounts", "123456"}, layouts.Item{"name": s("Alice"), "registered": s("2015-01-01T19:59:00"), "email": s("alice@example.com")})...)
	rows = append(rows, dynamotreePut([]string{"Accounts", "123456", "Links", "xyzpdq"}, layouts.Item{"LinkTarget": s("http://example.com/")})...)
	rows = append(rows, dynamotreePut([]string{"Accounts", "654321"}, layouts.Item{"name": s("Bob")})...)
	rows = append(rows, dynamotreePut([]string{"Accounts", "654321", "Links", "abc"}, layouts.Item{"LinkTarget": s("http://example.org/")})...)
	rows = append(rows, dynamotreeLink([]string{"Links", "xyzpdq"}, []string{"Accounts", "123456", "Links", "xyzpdq"})...)
	return uniqueKeys(rows)
}

// readmeRecords is what export --path-ids writes for readmeRows, sorted:
// the implicit inner nodes without attributes.
var readmeRecords = []string{
	`{"id":"Accounts"}`,
	`{"id":"Accounts¦123456","parent_id":"Accounts","email":"alice@example.com","name":"Alice","registered":"2015-01-01T19:59:00"}`,
	`{"id":"Accounts¦123456¦Links","parent_id":"Accounts¦123456"}`,
	`{"id":"Accounts¦123456¦Links¦xyzpdq","parent_id":"Accounts¦123456¦Links","LinkTarget":"http://example.com/"}`,
	`{"id":"Accounts¦654321","parent_id":"Accounts","name":"Bob"}`,
	`{"id":"Accounts¦654321¦Links","parent_id":"Accounts¦654321"}`,
	`{"id":"Accounts¦654321¦Links¦abc","parent_id":"Accounts¦654321¦Links","LinkTarget":"http://example.org/"}`,
	`{"id":"Links"}`,
	`{"id":"Links¦xyzpdq","parent_id":"Links","link_to":"Accounts¦123456¦Links¦xyzpdq"}`,
}

// TestDynamotreeReadmeExample runs dynamotree's README example, its rows
// put by hand, through every command with --path-ids --implicit-inner:
// export gives each node its path id, the names that repeat (Links) apart
// and the link's link_to its target's path id; query answers each
// account's Links apart and reads through the link; verify finds the
// export identical; a plan of it changes nothing; import of the export
// into a new table, and a migration to the path layout (link_to an
// attribute there) and back, give the same items byte for byte.
func TestDynamotreeReadmeExample(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	rows := readmeRows()
	table := prefixTable(t, client, rows)
	ids := []string{"--layout", "prefix", "--path-ids", "--implicit-inner"}

	out := filepath.Join(dir, "export.jsonl")
	if _, stderr, code := run(t, env, append([]string{"export", "--table", table, "--out", out}, ids...)...); code != 0 {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	if got := sortedLines(readFile(t, out)); !slices.Equal(got, readmeRecords) {
		t.Fatalf("export:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(readmeRecords, "\n      "))
	}

	query := func(kind, id string, more ...string) string {
		t.Helper()
		args := append(append([]string{"query", kind, "--table", table, "--id", id}, ids...), more...)
		stdout, stderr, code := run(t, env, args...)
		if code != 0 {
			t.Fatalf("query %s %s: exit %d\n%s", kind, id, code, stderr)
		}
		return strings.TrimSpace(stdout)
	}
	for _, tt := range []struct{ kind, id, want string }{
		{"children", "Accounts¦123456¦Links", `{"id":"Accounts¦123456¦Links¦xyzpdq","parent_id":"Accounts¦123456¦Links","relative_depth":1,"attributes":{"LinkTarget":"http://example.com/"}}`},
		{"children", "Accounts¦654321¦Links", `{"id":"Accounts¦654321¦Links¦abc","parent_id":"Accounts¦654321¦Links","relative_depth":1,"attributes":{"LinkTarget":"http://example.org/"}}`},
		{"get", "Links¦xyzpdq", `{"id":"Links¦xyzpdq","parent_id":"Links","relative_depth":0,"attributes":{"link_to":"Accounts¦123456¦Links¦xyzpdq"}}`},
	} {
		if got := query(tt.kind, tt.id); got != tt.want {
			t.Errorf("query %s %s:\n got  %s\n want %s", tt.kind, tt.id, got, tt.want)
		}
	}
	want := `{"id":"Accounts¦123456¦Links¦xyzpdq","parent_id":"Accounts¦123456¦Links","relative_depth":0,"via_link":"Links¦xyzpdq","attributes":{"LinkTarget":"http://example.com/"}}`
	if got := query("get", "Links¦xyzpdq", "--follow-links"); got != want {
		t.Errorf("query get --follow-links:\n got  %s\n want %s", got, want)
	}

	if stdout, stderr, code := run(t, env, append([]string{"verify", "--in", out, "--table", table}, ids...)...); code != 0 || !strings.Contains(stdout, "identical") {
		t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
	if stdout, stderr, code := run(t, env, append([]string{"plan", "--in", out, "--table", table, "--detailed-exitcode"}, ids...)...); code != 0 {
		t.Errorf("plan: exit %d, want 0 (no change)\n%s%s", code, stdout, stderr)
	}
	sameLines(t, "the table after plan", rawLines(t, client, table), rows)

	again := ddblocal.TableName(t)
	dropTableLater(t, client, again)
	if _, stderr, code := run(t, env, append([]string{"import", "--in", out, "--table", again, "--create-table", "--no-progress"}, ids...)...); code != 0 {
		t.Fatalf("import: exit %d\n%s", code, stderr)
	}
	sameLines(t, "the export imported", rawLines(t, client, again), rows)

	// Into every layout and back (adjacency takes no implicit inner
	// nodes: each gets an item there, and none back in prefix).
	for _, layout := range layouts.Names() {
		if layout == layouts.PrefixName {
			continue
		}
		var to, from []string
		if layout != layouts.AdjacencyName {
			to, from = []string{"--to-implicit-inner"}, []string{"--from-implicit-inner"}
		}
		mid, back := ddblocal.TableName(t), ddblocal.TableName(t)
		dropTableLater(t, client, mid)
		dropTableLater(t, client, back)
		for _, m := range [][]string{
			append([]string{"--from-table", table, "--from-layout", "prefix", "--from-implicit-inner", "--to-table", mid, "--to-layout", layout, "--to-delimiter", "¦"}, to...),
			append([]string{"--from-table", mid, "--from-layout", layout, "--from-delimiter", "¦", "--to-table", back, "--to-layout", "prefix", "--to-implicit-inner"}, from...),
		} {
			args := append(append([]string{"migrate"}, m...), "--path-ids", "--create-table", "--no-progress")
			if _, stderr, code := run(t, env, args...); code != 0 {
				t.Fatalf("%v: exit %d\n%s", args, code, stderr)
			}
		}
		if layout == layouts.PathName {
			if got := scanTable(t, client, mid); !pathHasAttr(got, "Links¦xyzpdq", "link_to", "Accounts¦123456¦Links¦xyzpdq") {
				t.Errorf("the path table's link has no link_to: %v", got)
			}
		}
		sameLines(t, "migrated to "+layout+" and back", rawLines(t, client, back), rows)
	}

	// A link to a path that is not in the table: verify finds it by its
	// path id, though a node of that name is (Accounts¦654321¦Links¦abc).
	putItems(t, client, table, dynamotreeLink([]string{"Links", "gone"}, []string{"Accounts", "123456", "Links", "abc"})...)
	withGone := filepath.Join(dir, "with-gone.jsonl")
	text := readFile(t, out) + `{"id":"Links¦gone","parent_id":"Links","link_to":"Accounts¦123456¦Links¦abc"}` + "\n"
	if err := os.WriteFile(withGone, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := run(t, env, append([]string{"verify", "--in", withGone, "--table", table}, ids...)...)
	if code != 1 || !strings.Contains(stdout, `"Links¦gone" (parent "Links") links to "Accounts¦123456¦Links¦abc", which is not in the table`) {
		t.Errorf("verify of a dangling link: exit %d, want 1 and the link\n%s%s", code, stdout, stderr)
	}
}

// TestLinksSkipInvalid: under --on-invalid=skip, a link whose target the
// layout's checks reject is rejected too, down a chain of links, with its
// subtree, and written to the rejects file; the rest is written.
func TestLinksSkipInvalid(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	text := `{"id":"a"}
{"id":"b","parent_id":"a","link_to":"c"}
{"id":"c","parent_id":"a","Key":"reserved"}
{"id":"e","parent_id":"a","link_to":"b"}
{"id":"f","parent_id":"e"}
{"id":"g","parent_id":"a","link_to":"a"}
`
	if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, rejects := filepath.Join(dir, "out"), filepath.Join(dir, "rejects.jsonl")
	if _, stderr, code := run(t, nil, "import", "--in", in, "--layout", "prefix", "--out", out, "--on-invalid=skip", "--rejects", rejects); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var ids []string
	for _, line := range sortedLines(readFile(t, rejects)) {
		var r struct {
			ID     string `json:"id"`
			Reason string `json:"reason"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
		if r.ID == "b" && !strings.Contains(r.Reason, `link_to "c": the target was rejected (see `+in+`:3)`) {
			t.Errorf("b's reason: %s", r.Reason)
		}
	}
	sort.Strings(ids)
	if want := []string{"b", "c", "e", "f"}; !slices.Equal(ids, want) {
		t.Errorf("rejected %v, want %v", ids, want)
	}
	items := importedItems(t, out)
	want := []string{
		`{"Child":{"S":"a"},"Key":{"S":"¦"}}`, `{"Child":{"S":"g"},"Key":{"S":"¦a¦"}}`,
		`{"Child":{"S":"¦"},"Key":{"S":"¦a"}}`, `{"Child":{"S":"¦"},"Key":{"S":"¦a¦g"},"¦":{"S":"¦a"}}`,
	}
	if !slices.Equal(items, want) {
		t.Errorf("items:\n got  %s\n want %s", strings.Join(items, "\n      "), strings.Join(want, "\n      "))
	}
}

// importedItems reads every item of an import --out directory's data
// files, in DynamoDB JSON with its names sorted, sorted.
func importedItems(t *testing.T, out string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(out, "data", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no data files in %s (%v)", out, err)
	}
	var items []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range gunzipLines(t, data) {
			item, err := ddbjson.DecodeLine([]byte(line))
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			items = append(items, string(ddbjson.AppendItem(nil, item)))
		}
	}
	sort.Strings(items)
	return items
}

// TestFollowLinks follows a table of dynamotree's rows with a link, put by
// hand, into the path layout with --path-ids: a new link put on the source
// while the follower runs arrives as a node whose link_to is its target's
// path id, and the final verify is exact. (The README example's implicit
// inner nodes are not followed yet: a follow's verify wants an item for
// every node of the copy.)
func TestFollowLinks(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: follows a stream")
	}
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	table, dest, cmd, out := followIntoPath(t, client, endpoint, linkTableRows())
	putItems(t, client, table, dynamotreeLink([]string{"Links", "alice"}, []string{"Accounts", "123456"})...)
	followerExact(t, cmd, out)
	if got := scanTable(t, client, dest); !pathHasAttr(got, "Links¦alice", "link_to", "Accounts¦123456") ||
		!pathHasAttr(got, "Links¦short", "link_to", "Accounts¦123456¦Notes¦n1") {
		t.Errorf("the destination's links: %v", got)
	}
}

// TestDynamotreeReadmeExampleFollow follows dynamotree's README example,
// its rows put by hand (Links under two accounts, each account's Links
// with listing rows only, a link), from the prefix layout to the path
// layout with --path-ids --implicit-inner: what is written while it
// follows arrives (a repeated name under the implicit Links of the other
// account, a second link, an object row deleted), and the --follow-idle
// verify is exact.
func TestDynamotreeReadmeExampleFollow(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: follows a stream")
	}
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	table, dest, cmd, out := followIntoPath(t, client, endpoint, readmeRows(), "--implicit-inner")
	var puts []layouts.Item
	puts = append(puts, dynamotreePut([]string{"Accounts", "654321", "Links", "xyzpdq"}, layouts.Item{"LinkTarget": s("http://example.net/")})...)
	puts = append(puts, dynamotreeLink([]string{"Links", "bob"}, []string{"Accounts", "654321"})...)
	putItems(t, client, table, puts...)
	// Alice's email goes: her object row is put again without it.
	alice := dynamotreePut([]string{"Accounts", "123456"}, layouts.Item{"name": s("Alice"), "registered": s("2015-01-01T19:59:00")})
	putItems(t, client, table, alice[len(alice)-1])
	followerExact(t, cmd, out)
	got := scanTable(t, client, dest)
	if !pathHasAttr(got, "Links¦bob", "link_to", "Accounts¦654321") ||
		!pathHasAttr(got, "Links¦xyzpdq", "link_to", "Accounts¦123456¦Links¦xyzpdq") ||
		!pathHasAttr(got, "Accounts¦654321¦Links¦xyzpdq", "LinkTarget", "http://example.net/") ||
		!pathHasAttr(got, "Accounts¦123456¦Links¦xyzpdq", "LinkTarget", "http://example.com/") {
		t.Errorf("the destination: %v", got)
	}
	if pathHasAttr(got, "Accounts¦123456", "email", "alice@example.com") {
		t.Errorf("Alice's email, deleted while following, is still in the destination: %v", got)
	}

	// The destination migrated back to the prefix layout is the source's
	// rows, byte for byte.
	back := ddblocal.TableName(t)
	dropTableLater(t, client, back)
	if _, stderr, code := run(t, nil, "migrate", "--from-table", dest, "--from-layout", "path", "--from-delimiter", "¦", "--to-table", back,
		"--to-layout", "prefix", "--path-ids", "--implicit-inner", "--create-table", "--endpoint-url", endpoint, "--no-progress"); code != 0 {
		t.Fatalf("migrate back: exit %d\n%s", code, stderr)
	}
	if got, want := rawLines(t, client, back), rawLines(t, client, table); !slices.Equal(got, want) {
		t.Errorf("back in prefix:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestDynamotreeReadmeExampleCommands runs dynamotree's README example, its
// rows put by hand, through the commands TestDynamotreeReadmeExample does
// not: the dry run counts its rows; schema's workbench model holds them
// as sample items and its CloudFormation resource dynamotree's keys;
// bench compares the layouts on it; apply of its export with a new link
// puts that link's two rows only; edit gives an implicit Links
// attributes (its object row) and sets a link's target (its "¦").
func TestDynamotreeReadmeExampleCommands(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	rows := readmeRows()
	table := prefixTable(t, client, rows)
	ids := []string{"--layout", "prefix", "--path-ids", "--implicit-inner"}
	in := writeText(t, dir, "readme.jsonl", strings.Join(readmeRecords, "\n")+"\n")

	stdout, stderr, code := run(t, nil, append([]string{"import", "--in", in, "--dry-run", "--json"}, ids...)...)
	if want := `"items":` + strconv.Itoa(len(rows)) + ","; code != 0 || !strings.Contains(strings.ReplaceAll(stdout, " ", ""), want) {
		t.Errorf("import --dry-run: exit %d, want %s\n%s%s", code, want, stdout, stderr)
	}
	stdout, stderr, code = run(t, nil, append([]string{"schema", "--table", "Tree", "--format", "workbench", "--in", in, "--sample", "100"}, ids...)...)
	if code != 0 || !json.Valid([]byte(stdout)) || !strings.Contains(stdout, `"¦Accounts¦654321¦Links¦"`) ||
		!strings.Contains(stdout, `"¦Accounts¦123456¦Links¦xyzpdq"`) || strings.Contains(stdout, `"¦Accounts¦654321¦Links"`) {
		t.Errorf("schema --format workbench: exit %d, want the listing rows and no object row for an implicit Links\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code = run(t, nil, append([]string{"schema", "--table", "Tree", "--format", "cloudformation"}, ids...)...)
	if code != 0 || !strings.Contains(stdout, `"AttributeName": "Key"`) || !strings.Contains(stdout, `"AttributeName": "Child"`) {
		t.Errorf("schema --format cloudformation: exit %d\n%s%s", code, stdout, stderr)
	}
	report := filepath.Join(dir, "bench.json")
	stdout, stderr, code = run(t, nil, "bench", "--offline", "--in", in, "--layouts", "path,sharded-path,closure,prefix", "--path-ids", "--implicit-inner",
		"--delimiter", "¦", "--out", report)
	if code != 0 || !strings.Contains(readFile(t, report), `"prefix"`) {
		t.Errorf("bench: exit %d\n%s%s", code, stdout, stderr)
	}

	// apply: the export and a new link under Links.
	common := append([]string{"--table", table, "--no-progress"}, ids...)
	spec := layouts.TableSpec{PK: layouts.KeyAttr{Name: "Key"}, SK: &layouts.KeyAttr{Name: "Child"}}
	before := tableState(t, client, table, spec)
	snap := writeText(t, dir, "snap.jsonl", readFile(t, in)+`{"id":"Links¦bob","parent_id":"Links","link_to":"Accounts¦654321"}`+"\n")
	if stdout, stderr, code := run(t, env, append([]string{"apply", "--in", snap}, common...)...); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, stdout, stderr)
	}
	after := tableState(t, client, table, spec)
	puts, dels := diffStates(before, after)
	if len(puts) != 2 || puts["¦Links¦\x00bob"] == "" || !strings.Contains(puts["¦Links¦bob\x00¦"], `"¦":{"S":"¦Accounts¦654321"}`) || len(dels) != 0 {
		t.Errorf("apply put %v and deleted %v, want the new link's listing and object rows", puts, dels)
	}

	// edit: an implicit Links gets attributes; the new link is pointed
	// at Bob's Links.
	ops := writeText(t, dir, "ops.jsonl", `{"op":"set","id":"Accounts¦654321¦Links","attributes":{"kind":"folder"}}`+"\n"+
		`{"op":"set","id":"Links¦bob","attributes":{"link_to":"Accounts¦654321¦Links"}}`+"\n")
	if stdout, stderr, code := run(t, env, append([]string{"edit", "--ops", ops}, common...)...); code != 0 {
		t.Fatalf("edit: exit %d\n%s%s", code, stdout, stderr)
	}
	puts, dels = diffStates(after, tableState(t, client, table, spec))
	if len(puts) != 2 || !strings.Contains(puts["¦Accounts¦654321¦Links\x00¦"], `"kind":{"S":"folder"}`) ||
		!strings.Contains(puts["¦Links¦bob\x00¦"], `"¦":{"S":"¦Accounts¦654321¦Links"}`) || len(dels) != 0 {
		t.Errorf("edit put %v and deleted %v, want Links' object row and the link's new target", puts, dels)
	}
	stdout, stderr, code = run(t, env, "query", "get", "--id", "Links¦bob", "--follow-links", "--table", table, "--layout", "prefix", "--path-ids")
	if want := `{"id":"Accounts¦654321¦Links","parent_id":"Accounts¦654321","relative_depth":0,"via_link":"Links¦bob","attributes":{"kind":"folder"}}`; code != 0 || strings.TrimSpace(stdout) != want {
		t.Errorf("query get --follow-links after edit: exit %d\n got  %s\n want %s\n%s", code, stdout, want, stderr)
	}
}
