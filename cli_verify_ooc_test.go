package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// verifyBase is a forest in DynamoDB JSON with every type verify compares:
// numbers, sets, binary, booleans, null, lists and maps.
var verifyBase = []string{
	`{"Item":{"id":{"S":"r"},"name":{"S":"root"},"qty":{"N":"1"},"tags":{"SS":["a","b","c"]}}}`,
	`{"Item":{"id":{"S":"a"},"parent_id":{"S":"r"},"name":{"S":"A"},"score":{"N":"1.5"},"nums":{"NS":["1","2","30"]}}}`,
	`{"Item":{"id":{"S":"b"},"parent_id":{"S":"r"},"ok":{"BOOL":true},"none":{"NULL":true},"blob":{"B":"AAEC"}}}`,
	`{"Item":{"id":{"S":"a1"},"parent_id":{"S":"a"},"list":{"L":[{"S":"x"},{"N":"2"}]},"m":{"M":{"k":{"S":"v"},"n":{"N":"10"}}}}}`,
	`{"Item":{"id":{"S":"a2"},"parent_id":{"S":"a"},"bins":{"BS":["AQ==","Ag=="]}}}`,
	`{"Item":{"id":{"S":"b1"},"parent_id":{"S":"b"},"name":{"S":"B1"}}}`,
	`{"Item":{"id":{"S":"b2"},"parent_id":{"S":"b"},"name":{"S":"B2"},"qty":{"N":"7"}}}`,
}

// verifyCases are files to verify against a table imported from
// verifyBase: each plants one kind of difference, or none.
var verifyCases = []struct {
	name  string
	lines []string
	args  []string
}{
	{name: "equal", lines: verifyBase},
	{name: "missing from the table", lines: append(append([]string{}, verifyBase...),
		`{"Item":{"id":{"S":"new"},"parent_id":{"S":"b"},"name":{"S":"N"}}}`)},
	{name: "extra in the table", lines: verifyBase[:len(verifyBase)-2]},
	{name: "moved", lines: replaceLine(verifyBase, 5, `{"Item":{"id":{"S":"b1"},"parent_id":{"S":"a"},"name":{"S":"B1"}}}`)},
	{name: "changed typed attributes", lines: replaceLine(replaceLine(verifyBase, 0,
		`{"Item":{"id":{"S":"r"},"name":{"N":"5"},"qty":{"N":"2"},"tags":{"SS":["a","b"]},"more":{"S":"x"}}}`), 2,
		`{"Item":{"id":{"S":"b"},"parent_id":{"S":"r"},"ok":{"S":"true"},"blob":{"B":"AAED"}}}`)},
	{name: "numbers by value, sets in another order", lines: replaceLine(replaceLine(verifyBase, 0,
		`{"Item":{"id":{"S":"r"},"name":{"S":"root"},"qty":{"N":"1.0"},"tags":{"SS":["c","a","b"]}}}`), 1,
		`{"Item":{"id":{"S":"a"},"parent_id":{"S":"r"},"name":{"S":"A"},"score":{"N":"1.50"},"nums":{"NS":["30","2.0","1"]}}}`)},
	{name: "every kind, few examples", args: []string{"--max-examples", "1"}, lines: append(replaceLine(replaceLine(verifyBase[:len(verifyBase)-1], 5,
		`{"Item":{"id":{"S":"b1"},"parent_id":{"S":"r"},"name":{"S":"B"}}}`), 3,
		`{"Item":{"id":{"S":"a1"},"parent_id":{"S":"b"},"list":{"L":[{"N":"2"},{"S":"x"}]}}}`),
		`{"Item":{"id":{"S":"z9"},"parent_id":{"S":"b"}}}`, `{"Item":{"id":{"S":"c0"}}}`)},
	{name: "an id twice", lines: append(append([]string{}, verifyBase...), `{"Item":{"id":{"S":"a1"},"parent_id":{"S":"r"}}}`, `{"Item":{"id":{"S":"a"}}}`)},
	{name: "an id twice, then a bad row", lines: append(append([]string{}, verifyBase...), `{"Item":{"id":{"S":"a2"}}}`, `{"Item":{"id":`)},
	{name: "a bad row, then an id twice", lines: append(append([]string{}, verifyBase...), `{"Item":{"id":`, `{"Item":{"id":{"S":"a2"}}}`)},
	{name: "an empty file", lines: nil},
}

// everyLayout are the verifyCases run against every layout's table; the
// others run against path's.
var everyLayout = map[string]bool{"equal": true, "changed typed attributes": true,
	"numbers by value, sets in another order": true, "every kind, few examples": true}

// replaceLine returns a copy of lines with line i replaced.
func replaceLine(lines []string, i int, with string) []string {
	out := append([]string{}, lines...)
	out[i] = with
	return out
}

// sameVerify runs verify in memory and out of core (forced, in a 1 MiB
// budget) and fails unless both print the same stdout, the same stderr
// (the progress lines aside) and exit with the same code; it returns them.
// The out-of-core run leaves nothing in its --tmp-dir.
// readCost is the cost part of a table read's summary line.
var readCost = regexp.MustCompile(`(?m)^(read table \S+: )[0-9,]+ requests?, ([0-9,]+ items? read), [0-9.,]+ RCU consumed`)

func sameVerify(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	args = append([]string{"verify"}, args...)
	tmp := t.TempDir()
	wantOut, wantErr, wantCode := run(t, env, args...)
	gotOut, gotErr, gotCode := run(t, env, append(args, oocArgs(tmp)...)...)
	wantErr, gotErr = progressLine.ReplaceAllString(wantErr, ""), progressLine.ReplaceAllString(gotErr, "")
	// Out of core, the Scan's pages are cut to fit the budget
	// (ScanOptions.Memory): more requests, and a few RCU more of
	// rounding; the items read are the same.
	wantErr, gotErr = readCost.ReplaceAllString(wantErr, "$1$2"), readCost.ReplaceAllString(gotErr, "$1$2")
	if gotOut != wantOut || gotErr != wantErr || gotCode != wantCode {
		t.Errorf("out of core: exit %d\n%s\n%s\nin memory: exit %d\n%s\n%s", gotCode, gotOut, gotErr, wantCode, wantOut, wantErr)
	}
	emptyDir(t, tmp)
	return wantOut, wantErr, wantCode
}

func writeLines(t *testing.T, path string, lines []string) string {
	t.Helper()
	text := strings.Join(lines, "\n")
	if len(lines) > 0 {
		text += "\n"
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestVerifyOutOfCoreMatchesInMemory imports verifyBase in every layout,
// then verifies verifyCases against the table in memory and out of core
// (all of them on path, everyLayout's on the others): the same output byte for byte, the same exit code, and the
// exit code and counts a user expects of each.
func TestVerifyOutOfCoreMatchesInMemory(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	base := writeLines(t, filepath.Join(dir, "base.ddb.jsonl"), verifyBase)
	want := map[string]struct {
		code int
		text string
	}{
		"equal":                    {0, "(7 nodes): identical"},
		"missing from the table":   {1, "missing from the table: 1\n  \"new\" (parent \"b\")"},
		"extra in the table":       {1, "extra in the table: 2\n  \"b1\" (parent \"b\")\n  \"b2\" (parent \"b\")"},
		"moved":                    {1, "moved (another parent): 1\n  \"b1\": parent \"a\" in the file, \"b\" in the table"},
		"changed typed attributes": {1, `"b": attribute "none": not in the file: absent in the file, {"NULL":true} in the table`},
		"numbers by value, sets in another order": {0, "identical"},
		"every kind, few examples":                {1, "  … and 1 more"},
		"an id twice":                             {2, `:8: id "a1": duplicate id (first at line 4)`},
		"an id twice, then a bad row":             {2, `:8: id "a2": duplicate id (first at line 5)`},
		"a bad row, then an id twice":             {2, ":8"},
		"an empty file":                           {2, "the file is empty"},
	}
	for _, layout := range layouts.Names() {
		t.Run(layout, func(t *testing.T) {
			table := ddblocal.TableName(t)
			dropTableLater(t, client, table)
			if _, stderr, code := run(t, env, "import", "--in", base, "--layout", layout, "--table", table, "--create-table", "--no-progress"); code != 0 {
				t.Fatalf("import: exit %d\n%s", code, stderr)
			}
			for _, tc := range verifyCases {
				if layout != layouts.PathName && !everyLayout[tc.name] {
					// What the file alone decides (its errors, the
					// examples' order) is the same whatever the layout:
					// path has it.
					continue
				}
				t.Run(tc.name, func(t *testing.T) {
					in := writeLines(t, filepath.Join(t.TempDir(), "in.ddb.jsonl"), tc.lines)
					stdout, stderr, code := sameVerify(t, env, append([]string{"--in", in, "--table", table, "--layout", layout}, tc.args...)...)
					w := want[tc.name]
					if code != w.code || !strings.Contains(stdout+stderr, w.text) {
						t.Errorf("exit %d, want %d and %q\n%s%s", code, w.code, w.text, stdout, stderr)
					}
				})
			}
		})
	}
}

// TestVerifyOutOfCoreHandBuiltTable verifies, in memory and out of core,
// a prefix table of dynamotree's rows written with PutItem: identical to
// its export, then with a link to a node not in the table, and read with
// --path-ids --implicit-inner where only the deepest objects were put (the
// inner nodes implied by the listing rows).
func TestVerifyOutOfCoreHandBuiltTable(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	table := prefixTable(t, client, linkTableRows())
	out := filepath.Join(dir, "export.jsonl")
	if _, stderr, code := run(t, env, "export", "--table", table, "--layout", "prefix", "--out", out); code != 0 {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	if stdout, _, code := sameVerify(t, env, "--in", out, "--table", table, "--layout", "prefix"); code != 0 || !strings.Contains(stdout, "identical") {
		t.Errorf("verify of the export: exit %d\n%s", code, stdout)
	}
	putItems(t, client, table, dynamotreeLink([]string{"Links", "gone"}, []string{"Accounts", "999"})...)
	putItems(t, client, table, dynamotreeLink([]string{"Links", "alsogone"}, []string{"Zzz"})...)
	stdout, _, code := sameVerify(t, env, "--in", out, "--table", table, "--layout", "prefix")
	if code != 1 || !strings.Contains(stdout, "links to a node not in the table: 2\n  \"alsogone\" (parent \"Links\") links to \"Zzz\"") {
		t.Errorf("verify of dangling links: exit %d\n%s", code, stdout)
	}

	implied := prefixTable(t, client, uniqueKeys(append(
		dynamotreePut([]string{"Accounts", "123456", "Notes", "n1"}, layouts.Item{"LinkTarget": s("http://example.com/")}),
		dynamotreePut([]string{"Accounts", "7", "n2"}, layouts.Item{"size": &types.AttributeValueMemberN{Value: "3"}})...)))
	flags := []string{"--table", implied, "--layout", "prefix", "--path-ids", "--implicit-inner"}
	exp := filepath.Join(dir, "implied.jsonl")
	if _, stderr, code := run(t, env, append([]string{"export", "--out", exp}, flags...)...); code != 0 {
		t.Fatalf("export --path-ids --implicit-inner: exit %d\n%s", code, stderr)
	}
	if stdout, _, code := sameVerify(t, env, append([]string{"--in", exp}, flags...)...); code != 0 || !strings.Contains(stdout, "(6 nodes): identical") {
		t.Errorf("verify --path-ids --implicit-inner: exit %d\n%s", code, stdout)
	}
	// Without an inner node the file says nothing of, and with one more.
	lines := strings.Split(strings.TrimSpace(readFile(t, exp)), "\n")
	lines = append(lines[1:], `{"id":"Accounts¦8","parent_id":"Accounts"}`)
	if stdout, _, code := sameVerify(t, env, append([]string{"--in", writeLines(t, filepath.Join(dir, "less.jsonl"), lines)}, flags...)...); code != 1 ||
		!strings.Contains(stdout, "missing from the table: 1") || !strings.Contains(stdout, "extra in the table: 1") {
		t.Errorf("verify --path-ids --implicit-inner with differences: exit %d\n%s", code, stdout)
	}
}

// TestVerifyOutOfCoreChosenByBudget: a file and a table larger than
// --memory allows are compared out of core without --force-out-of-core
// (a --tmp-dir that cannot be written is then a usage error, exit 2,
// before anything is read; under a large budget it is not used), and
// sorts that spill several runs give the in-memory report byte for byte.
func TestVerifyOutOfCoreChosenByBudget(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	in := genShuffled(t, 5000, "jsonl")
	table := ddblocal.TableName(t)
	dropTableLater(t, client, table)
	if _, stderr, code := run(t, env, "import", "--in", in, "--layout", "path", "--table", table, "--create-table", "--no-progress"); code != 0 {
		t.Fatalf("import: exit %d\n%s", code, stderr)
	}
	tmp := t.TempDir()
	stdout, stderr, code := run(t, env, "verify", "--in", in, "--table", table, "--layout", "path", "--memory", "1MiB", "--tmp-dir", tmp)
	if code != 0 || !strings.Contains(stdout, "(5,000 nodes): identical") {
		t.Errorf("verify in 1 MiB: exit %d\n%s%s", code, stdout, stderr)
	}
	emptyDir(t, tmp)
	// The budget chose: in 1 MiB the sorts need --tmp-dir, and one that
	// is a file is refused (exit 2), before anything is compared; in 4 GiB
	// it is not used.
	bad := filepath.Join(t.TempDir(), "file")
	writeLines(t, bad, []string{"x"})
	stdout, stderr, code = run(t, env, "verify", "--in", in, "--table", table, "--layout", "path", "--memory", "1MiB", "--tmp-dir", bad)
	if code != 2 || !strings.Contains(stderr, "--tmp-dir") || stdout != "" {
		t.Errorf("verify with a --tmp-dir that is a file: exit %d, want 2\n%s%s", code, stdout, stderr)
	}
	if stdout, stderr, code = run(t, env, "verify", "--in", in, "--table", table, "--layout", "path", "--memory", "4GiB", "--tmp-dir", bad); code != 0 {
		t.Errorf("verify in 4 GiB with a --tmp-dir that is a file: exit %d, want 0 (in memory)\n%s%s", code, stdout, stderr)
	}
	// Sorts of several runs each, merged: 5,000 records do not fit a
	// sort's quarter of 1 MiB. Some nodes left out of the file, one more.
	lines := strings.Split(strings.TrimSpace(readFile(t, in)), "\n")
	lines = append(append(lines[:100:100], lines[130:]...), `{"id":"extra-node","parent_id":"`+firstID(t, lines[0])+`","size":1}`)
	stdout, _, code = sameVerify(t, env, "--in", writeLines(t, filepath.Join(t.TempDir(), "less.jsonl"), lines), "--table", table, "--layout", "path")
	if code != 1 || !strings.Contains(stdout, "missing from the table: 1") || !strings.Contains(stdout, "extra in the table: 30") {
		t.Errorf("verify of 5,000 nodes with differences: exit %d\n%s", code, stdout)
	}
}

// firstID is the id of a JSON Lines record.
func firstID(t *testing.T, line string) string {
	t.Helper()
	var r struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(line), &r); err != nil || r.ID == "" {
		t.Fatalf("no id in %s: %v", line, err)
	}
	return r.ID
}

// TestVerifyOutOfCoreSignal: SIGINT or SIGTERM while verify out of core
// sorts the file stops it within about a second, exit 130, with
// treeport-verify-* removed.
func TestVerifyOutOfCoreSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: generates and sorts 300,000 nodes")
	}
	_, client, env := ddbLocal(t)
	path, _ := layouts.New("path", layouts.Options{})
	table := ddblocal.NewTable(t, client, path.Table())
	in := genShuffled(t, 300_000, "csv")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			args := append([]string{"verify", "--in", in, "--layout", "path", "--table", table}, oocArgs(tmp)...)
			t.Logf("stderr:\n%s", signalDuring(t, env, sig, tmp, "treeport-verify-*/run-*", "", args...))
		})
	}
}
