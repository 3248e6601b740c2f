package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// TestSkipReservedAttrRejectsOnlyItsRecords: with --on-invalid=skip, a
// record with an attribute named like a layout attribute (Path, in the path
// layout) is rejected with its subtree, each record with its own reason;
// the other records are written, and records in = written + rejected.
func TestSkipReservedAttrRejectsOnlyItsRecords(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	records := "A,,\nB,A,y\nC,B,\nD,A,\nE,,\nF,E,z\nG,,w\n"
	if err := os.WriteFile(in, []byte("id,parent_id,Path\n"+records), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	rejects := filepath.Join(dir, "rejects.jsonl")
	stdout, stderr, code := run(t, nil, "import", "--in", in, "--layout", "path", "--out", out, "--on-invalid", "skip", "--rejects", rejects)
	if code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", code, stdout, stderr)
	}
	var m struct {
		Nodes    int64 `json:"nodes"`
		Rejected int64 `json:"rejected_records"`
	}
	b, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	in7 := int64(strings.Count(records, "\n"))
	if m.Nodes != 3 || m.Nodes+m.Rejected != in7 {
		t.Errorf("manifest: %d nodes written, %d rejected; want 3 written (A, D, E) and %d in all:\n%s", m.Nodes, m.Rejected, in7, b)
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(readFile(t, rejects)), "\n") {
		var r struct{ ID, Reason string }
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("rejects line %q: %v", l, err)
		}
		got[r.ID] = r.Reason
	}
	want := map[string]string{
		"B": `attribute "Path" is a layout attribute of path; rename the layout's with --attr Path=NEWNAME`,
		"C": `ancestor "B"`,
		"F": `attribute "Path" is a layout attribute`,
		"G": `attribute "Path" is a layout attribute`,
	}
	if len(got) != len(want) {
		t.Errorf("rejects: %v, want the records %v", got, want)
	}
	for id, reason := range want {
		if !strings.Contains(got[id], reason) {
			t.Errorf("reject of %s: %q, want it to say %q", id, got[id], reason)
		}
		if id != "C" && strings.Contains(got[id], "ancestor") {
			t.Errorf("reject of %s: %q is not its own reason", id, got[id])
		}
	}
	// Without skip, nothing is written, and each record is a problem.
	out2 := filepath.Join(dir, "out2")
	_, stderr, code = run(t, nil, "import", "--in", in, "--layout", "path", "--out", out2)
	if code != 2 {
		t.Fatalf("fail mode: exit %d, want 2:\n%s", code, stderr)
	}
	for _, at := range []string{":3: id \"B\"", ":7: id \"F\"", ":8: id \"G\""} {
		if !strings.Contains(stderr, in+at) {
			t.Errorf("stderr lacks %q:\n%s", in+at, stderr)
		}
	}
	if _, err := os.Stat(out2); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("output directory was created (%v)", err)
	}
}

// deepInput writes a chain of n nodes.
func deepInput(t *testing.T, n int) string {
	t.Helper()
	in := filepath.Join(t.TempDir(), "deep.csv")
	if _, stderr, code := run(t, nil, "gen", "--nodes", fmt.Sprint(n), "--shape", "deep", "--seed", "1", "--out", in); code != 0 {
		t.Fatalf("gen: %s", stderr)
	}
	return in
}

// TestClosureSizeLimit: a closure load of many more items than the input
// has nodes says its size first and does not start without --yes or a
// --max-items that holds it; other layouts are not held.
func TestClosureSizeLimit(t *testing.T) {
	in := deepInput(t, 250) // 31,375 items: over 100 a node
	dir := t.TempDir()
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"over 100 items a node", []string{"--layout", "closure"}, 2, "over the limit of 25000 items (100 items a node of the input); nothing was written"},
		{"over --max-items", []string{"--layout", "closure", "--max-items", "30000"}, 2, "over the limit of 30000 items (--max-items)"},
		{"within --max-items", []string{"--layout", "closure", "--max-items", "31375"}, 0, ""},
		{"--yes", []string{"--layout", "closure", "--yes"}, 0, ""},
		{"--closure-copy none is still 31,375 items", []string{"--layout", "closure", "--closure-copy", "none"}, 2, "--closure-copy none"},
	}
	for k, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, fmt.Sprint(k))
			args := append([]string{"import", "--in", in, "--out", out}, tt.args...)
			_, stderr, code := run(t, nil, args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tt.code, stderr)
			}
			if !strings.Contains(stderr, "treeport: plan: the closure layout writes 31375 items") {
				t.Errorf("the plan's size is not said first:\n%s", stderr)
			}
			if !strings.Contains(stderr, tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, stderr)
			}
			if code == 2 {
				if !strings.Contains(stderr, "--max-items N") || !strings.Contains(stderr, "--yes") {
					t.Errorf("stderr does not say how to go on:\n%s", stderr)
				}
				if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("output directory was created (%v)", err)
				}
			}
		})
	}
	// A small closure load says nothing more than it did.
	_, stderr, code := run(t, nil, "import", "--in", "fixtures/folders.json", "--layout", "closure", "--out", filepath.Join(dir, "small"))
	if code != 0 || strings.Contains(stderr, "plan:") {
		t.Errorf("a small closure load: exit %d:\n%s", code, stderr)
	}
}

// TestKeyAttrNameOver255 refuses a key attribute renamed to more than 255
// bytes, DynamoDB's limit for the names of key attributes.
func TestKeyAttrNameOver255(t *testing.T) {
	for _, n := range []int{255, 256} {
		out := filepath.Join(t.TempDir(), "out")
		_, stderr, code := run(t, nil, "import", "--in", "fixtures/folders.json", "--layout", "path", "--attr", "Id="+strings.Repeat("k", n), "--out", out)
		want := 0
		if n > 255 {
			want = 2
		}
		if code != want {
			t.Fatalf("a name of %d bytes: exit %d, want %d:\n%s", n, code, want, stderr)
		}
		if want == 2 && !strings.Contains(stderr, "an attribute name is 1 to 255 bytes") {
			t.Errorf("stderr does not say the limit:\n%s", stderr)
		}
	}
}

// TestBadInputNeverReachesTheTable: with --table --create-table, an item
// that DynamoDB would refuse is found first: exit 2 with its place, and no
// table is created (before, the root was written and the run ended with
// exit 3 on the service's error). The same holds for a closure load over
// its size limit and for an empty input.
func TestBadInputNeverReachesTheTable(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	deep := deepInput(t, 250)
	tests := []struct {
		name, in, layout, want string
	}{
		{"SS member twice", "fixtures/bad/duplicate-set-members.ddbjson", "path", `duplicate-set-members.ddbjson:2: id "B"`},
		{"NS equal by value", "fixtures/bad/duplicate-ns-by-value.ddbjson", "path", `duplicate-ns-by-value.ddbjson:2: id "B"`},
		{"empty map key", "fixtures/bad/empty-map-key-in-list.jsonl", "closure", `empty-map-key-in-list.jsonl:2: id "B"`},
		{"attribute name of 64 KB", "fixtures/bad/attr-name-64kb.jsonl", "prefix", `attr-name-64kb.jsonl:2: id "B"`},
		{"empty input", "fixtures/bad/empty.json", "path", "the file is empty"},
		{"closure over its size limit", deep, "closure", "over the limit of 25000 items"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := ddblocal.TableName(t)
			t.Cleanup(func() {
				client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
			})
			_, stderr, code := run(t, awsEnv(endpoint), "import", "--in", tt.in, "--layout", tt.layout, "--table", table, "--create-table")
			if code != 2 {
				t.Fatalf("exit %d, want 2:\n%s", code, stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, stderr)
			}
			if _, err := client.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)}); err == nil {
				t.Errorf("table %s was created", table)
			}
		})
	}
}

// TestTableOwnIndexKeysCheckedFirst: an existing table may have an index of
// its own on a user attribute. A value DynamoDB would refuse for that key
// (another type, an empty string) is found before the first write: exit 2,
// located, and the table stays empty; DynamoDB's writer is not the first to
// find it.
func TestTableOwnIndexKeysCheckedFirst(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	l, _ := layouts.New("path", layouts.Options{})
	spec := l.Table()
	spec.Indexes = append(spec.Indexes, layouts.IndexSpec{Name: "ByEmail", PK: layouts.KeyAttr{Name: "email", Type: "S"}})
	table := ddblocal.NewTable(t, client, spec)
	dir := t.TempDir()
	in := filepath.Join(dir, "people.jsonl")
	data := `{"id":"A","email":"a@example.com"}
{"id":"B","parent_id":"A","email":42}
{"id":"C","parent_id":"A","email":""}
{"id":"D","parent_id":"A"}
`
	if err := os.WriteFile(in, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := run(t, awsEnv(endpoint), "import", "--in", in, "--layout", "path", "--table", table, "--no-progress")
	if code != 2 {
		t.Fatalf("exit %d, want 2:\n%s", code, stderr)
	}
	for _, want := range []string{
		`people.jsonl:2: id "B": attribute "email" is the partition key of the table's index ByEmail, of type S; this value is N`,
		`people.jsonl:3: id "C": attribute "email" is the partition key of the table's index ByEmail; DynamoDB refuses an empty S there`,
		"nothing was written",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if items := scanTable(t, client, table); len(items) != 0 {
		t.Errorf("the table holds %d items; want none", len(items))
	}
	// Without the bad values the same load goes through.
	if err := os.WriteFile(in, []byte(strings.ReplaceAll(strings.ReplaceAll(data, `"email":42`, `"email":"b@example.com"`), `,"email":""`, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := run(t, awsEnv(endpoint), "import", "--in", in, "--layout", "path", "--table", table, "--no-progress"); code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	if items := scanTable(t, client, table); len(items) != 4 {
		t.Errorf("the table holds %d items; want 4", len(items))
	}
}

// TestOwnIndexKeysCheckedBeforeRefreshWrites: plan, apply, migrate into
// an existing table and edit check the writes they are about to make
// against the keys of the table's own indexes, as import does: a value
// DynamoDB would refuse is exit 2, located, and nothing is written. (The
// writer used to be the first to meet it: a dead letter and exit 1, after
// the rest was written.)
func TestOwnIndexKeysCheckedBeforeRefreshWrites(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	l, _ := layouts.New("path", layouts.Options{})
	spec := l.Table()
	spec.Indexes = append(spec.Indexes, layouts.IndexSpec{Name: "ByEmail", PK: layouts.KeyAttr{Name: "email", Type: "S"}})
	table := ddblocal.NewTable(t, client, spec)
	dir := t.TempDir()
	good := `{"id":"A","email":"a@example.com"}
{"id":"B","parent_id":"A","email":"b@example.com"}
{"id":"D","parent_id":"A"}
`
	in := filepath.Join(dir, "people.jsonl")
	os.WriteFile(in, []byte(good), 0o644)
	if _, stderr, code := run(t, env, "import", "--in", in, "--layout", "path", "--table", table, "--no-progress"); code != 0 {
		t.Fatalf("import: exit %d:\n%s", code, stderr)
	}
	before := rawLines(t, client, table)

	snap := filepath.Join(dir, "snap.jsonl")
	os.WriteFile(snap, []byte(good+`{"id":"E","parent_id":"D","email":42}`+"\n"), 0o644)
	for _, cmd := range []string{"plan", "apply"} {
		_, stderr, code := run(t, env, cmd, "--in", snap, "--layout", "path", "--table", table)
		if code != 2 || !strings.Contains(stderr, `snap.jsonl:4: id "E": attribute "email" is the partition key of the table's index ByEmail, of type S; this value is N`) ||
			!strings.Contains(stderr, "nothing was written") {
			t.Errorf("%s: exit %d, want 2 naming snap.jsonl:4 and E:\n%s", cmd, code, stderr)
		}
	}

	// migrate from a table that has the value into this one.
	src := ddblocal.TableName(t)
	dropTableLater(t, client, src)
	if _, stderr, code := run(t, env, "import", "--in", snap, "--layout", "adjacency", "--table", src, "--create-table", "--no-progress"); code != 0 {
		t.Fatalf("import into the source: exit %d:\n%s", code, stderr)
	}
	_, stderr, code := run(t, env, "migrate", "--from-table", src, "--from-layout", "adjacency", "--to-table", table, "--to-layout", "path", "--no-progress")
	if code != 2 || !strings.Contains(stderr, `id "E": attribute "email"`) {
		t.Errorf("migrate: exit %d, want 2 naming E:\n%s", code, stderr)
	}

	// edit: a set that gives B a number.
	ops := filepath.Join(dir, "ops.jsonl")
	os.WriteFile(ops, []byte(`{"op":"set","id":"B","attributes":{"email":7}}`+"\n"), 0o644)
	_, stderr, code = run(t, env, "edit", "--ops", ops, "--layout", "path", "--table", table, "--no-progress")
	if code != 2 || !strings.Contains(stderr, `ops.jsonl: id "B": attribute "email" is the partition key of the table's index ByEmail`) {
		t.Errorf("edit: exit %d, want 2 naming ops.jsonl and B:\n%s", code, stderr)
	}
	if after := rawLines(t, client, table); !slices.Equal(after, before) {
		t.Errorf("the table changed:\n%v\nwant\n%v", after, before)
	}
}
