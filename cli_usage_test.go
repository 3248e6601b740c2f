package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
)

// TestUsageAndInputErrorsExit2 holds every mistake in the command line, and
// every input that cannot be read at all, to exit code 2 (SPEC §4: invalid
// input or usage, nothing written), with a message that says what to do.
// Exit 3 is for the service and the infrastructure only.
func TestUsageAndInputErrorsExit2(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.csv", "id,parent_id\nA,\nB,A\n")
	out := filepath.Join(dir, "out")
	tests := []struct {
		name string
		args []string
		say  string
	}{
		{"a name that tells no format", []string{"import", "--in", write("data.bin", "id,parent_id\nA,\n"), "--layout", "path", "--out", out}, "use --format"},
		{"two columns of one name", []string{"import", "--in", write("dup.csv", "id,parent_id,a,a\n1,,x,y\n"), "--layout", "path", "--out", out}, `columns 3 and 4 are both named "a"`},
		{"no id column", []string{"import", "--in", write("noid.csv", "key,parent_id\n1,\n"), "--layout", "path", "--out", out}, "--id-field"},
		{"--types on a JSON input", []string{"import", "--in", write("t.jsonl", `{"id":"A"}`+"\n"), "--types", "a:N", "--layout", "path", "--out", out}, "--types applies to CSV only"},
		{"a required flag left out", []string{"gen", "--nodes", "5"}, `Required flag "out"`},
		{"an unknown command", []string{"improt", "--in", good}, `unknown command "improt"`},
		{"an unknown flag", []string{"import", "--in", good, "--layuot", "path"}, "layuot"},
		{"--shards 0", []string{"import", "--in", good, "--layout", "sharded-path", "--shards", "0", "--dry-run"}, "--shards 0: want 1 or more"},
		{"--max-errors 0", []string{"import", "--in", good, "--layout", "path", "--max-errors", "0", "--dry-run"}, "--max-errors 0: want 1 or more"},
		{"--wcu without --rcu", []string{"schema", "--layout", "path", "--table", "Tbl", "--wcu", "5"}, "both --wcu and --rcu"},
		{"a missing input", []string{"import", "--in", filepath.Join(dir, "nowhere.csv"), "--layout", "path", "--out", out}, "no such file"},
		{"on-demand ceilings on a provisioned table", []string{"import", "--in", good, "--layout", "path", "--table", "Tbl", "--create-table", "--wcu", "5", "--rcu", "5", "--max-on-demand-wcu", "100"}, "cap an on-demand table"},
		{"a warm throughput below the default", []string{"schema", "--layout", "path", "--table", "Tbl", "--warm-wcu", "1000"}, "below the 4000 writes a second"},
		{"a warm throughput without --create-table", []string{"import", "--in", good, "--layout", "path", "--table", "Tbl", "--warm-wcu", "8000"}, "give --create-table too"},
		{"a warm throughput for bulk put", []string{"import", "--in", good, "--layout", "path", "--out", "s3://bucket-1/p", "--bulk-put", "Tbl", "--warm-wcu", "8000"}, "--bulk-put loads an existing one"},
		{"a warm throughput for ImportTable", []string{"import", "--in", good, "--layout", "path", "--out", "s3://bucket-1/p", "--import-table", "Tbl", "--warm-wcu", "8000"}, "without a warm throughput"},
		{"a ceiling of 0", []string{"apply", "--in", good, "--layout", "path", "--table", "Tbl", "--create-table", "--max-on-demand-wcu", "0"}, "want a number above 0"},
		{"a ceiling without --create-table", []string{"migrate", "--from-table", "Aaa", "--from-layout", "path", "--to-table", "Bbb", "--to-layout", "closure", "--max-on-demand-wcu", "100"}, "give --create-table too"},
		{"a bulk put cap under the minimum", []string{"import", "--in", good, "--layout", "path", "--out", "s3://bucket-1/p", "--bulk-put", "Tbl", "--max-wcu", "100"}, "at least 1024"},
		{"a bulk put without S3", []string{"import", "--in", good, "--layout", "path", "--out", out, "--bulk-put", "Tbl"}, "give --out s3://BUCKET/PREFIX too"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := run(t, nil, tt.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stderr, tt.say) {
				t.Errorf("stderr lacks %q:\n%s", tt.say, stderr)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was created", out)
			}
		})
	}
}

// TestFormatFromFirstBytes reads a Parquet file and a DynamoDB JSON file
// whatever their names say, as their first bytes tell (an export to S3 names
// its DynamoDB JSON data files *.json.gz), and gives the same items as the
// same data under its proper name.
func TestFormatFromFirstBytes(t *testing.T) {
	dir := t.TempDir()
	items := func(in string) string {
		t.Helper()
		out := filepath.Join(dir, "out-"+filepath.Base(in))
		stdout, stderr, code := run(t, nil, "import", "--in", in, "--layout", "path", "--out", out)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", in, code, stdout, stderr)
		}
		return strings.Join(importItems(t, out), "\n")
	}
	gen := func(name string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if _, stderr, code := run(t, nil, "gen", "--nodes", "50", "--shape", "random", "--seed", "3", "--out", p); code != 0 {
			t.Fatalf("gen %s: exit %d: %s", name, code, stderr)
		}
		return p
	}
	want := items(gen("g.jsonl"))

	pq, err := os.ReadFile(gen("g.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	asJSON := filepath.Join(dir, "parquet.json")
	if err := os.WriteFile(asJSON, pq, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := items(asJSON); got != want {
		t.Errorf("a Parquet file named .json gave other items:\n%s\nwant:\n%s", got, want)
	}

	ddb, err := os.ReadFile(gen("g.ddbjson"))
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(ddb)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	exportName := filepath.Join(dir, "01700000000000-a1b2c3d4.json.gz")
	if err := os.WriteFile(exportName, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := items(exportName); got != want {
		t.Errorf("an export's DynamoDB JSON data file gave other items:\n%s\nwant:\n%s", got, want)
	}

	// Records whose first attribute is named Item are JSON Lines, as the
	// name says, and JSON when it says JSON: they are no DynamoDB JSON.
	for _, name := range []string{"item.jsonl", "item.json"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(`{"Item": "x", "id": "a"}`+"\n"+`{"id": "b", "parent_id": "a"}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := items(p); !strings.Contains(got, `"Item":{"S":"x"}`) || strings.Count(got, "\n") != 1 {
			t.Errorf("%s: items\n%s", name, got)
		}
	}
}

// importItems returns the lines of the import files in out, sorted.
func importItems(t *testing.T, out string) []string {
	t.Helper()
	var m struct {
		Files []struct{ Name string } `json:"files"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(out, "manifest.json"))), &m); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range m.Files {
		zr, err := gzip.NewReader(strings.NewReader(readFile(t, filepath.Join(out, filepath.FromSlash(f.Name)))))
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(strings.TrimSpace(string(data)), "\n")...)
	}
	if len(lines) == 0 {
		t.Fatalf("%s holds no items", out)
	}
	sort.Strings(lines)
	return lines
}

// TestOutNamesTheTable: with --out, --table names the table of
// create-table.json and import-table.json, so the files fit a table that
// already has a name; --create-table with --out is refused.
func TestOutNamesTheTable(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if _, stderr, code := run(t, nil, "import", "--in", "fixtures/cars.json", "--layout", "path", "--out", out, "--table", "Parts"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var create struct{ TableName string }
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(out, "create-table.json"))), &create); err != nil {
		t.Fatal(err)
	}
	var imp struct{ TableCreationParameters struct{ TableName string } }
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(out, "import-table.json"))), &imp); err != nil {
		t.Fatal(err)
	}
	if create.TableName != "Parts" || imp.TableCreationParameters.TableName != "Parts" {
		t.Errorf("create-table.json names %q, import-table.json %q; want Parts", create.TableName, imp.TableCreationParameters.TableName)
	}
	out2 := filepath.Join(dir, "out2")
	_, stderr, code := run(t, nil, "import", "--in", "fixtures/cars.json", "--layout", "path", "--out", out2, "--table", "Parts", "--create-table")
	if code != 2 || !strings.Contains(stderr, "--create-table goes with --table alone") {
		t.Errorf("--create-table with --out: exit %d: %s", code, stderr)
	}
}

// TestRejectsKeepTheRecordAsItCame: the rejects file gives back every
// rejected record byte for byte: a CSV line as text, a JSON record as JSON,
// and a line that is not UTF-8 as base64 bytes.
func TestRejectsKeepTheRecordAsItCame(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, file, input string
		want              map[string]string // id → the record as it came in
	}{
		{"csv", "in.csv", "id,parent_id,name\r\nR,,root\r\nE,R,caf\xe9\r\nC,Z,orphan\r\nG,R,\"bad \"quote\"\r\n",
			map[string]string{"E": "E,R,caf\xe9", "C": "C,Z,orphan", "G": `G,R,"bad "quote"`}},
		// A record over two lines with a stray quote, then one whose quote
		// never closes: it takes the rest of the file, which the rejects
		// file must then hold.
		{"csv over lines", "lines.csv", "id,parent_id,note\nR,,root\nM,R,\"two\nlines\" x\nU,R,\"never closed\nV,U,v\nW,R,w\n",
			map[string]string{"M": "M,R,\"two\nlines\" x", "U": "U,R,\"never closed\nV,U,v\nW,R,w"}},
		{"jsonl", "in.jsonl", "{\"id\":\"R\"}\n{\"id\":\"C\",\"parent_id\":\"Z\",\"n\":1.50}\n{\"id\":\"E\",\"parent_id\":\"R\",\"name\":\"caf\xe9\"}\n",
			map[string]string{"C": `{"id":"C","parent_id":"Z","n":1.50}`, "E": "{\"id\":\"E\",\"parent_id\":\"R\",\"name\":\"caf\xe9\"}"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := filepath.Join(dir, tt.file)
			if err := os.WriteFile(in, []byte(tt.input), 0o644); err != nil {
				t.Fatal(err)
			}
			rejects := filepath.Join(dir, tt.name+"-rejects.jsonl")
			_, stderr, code := run(t, nil, "import", "--in", in, "--layout", "path", "--out", filepath.Join(dir, tt.name+"-out"), "--on-invalid", "skip", "--rejects", rejects)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			got := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(readFile(t, rejects)), "\n") {
				var r struct {
					ID     string          `json:"id"`
					Record json.RawMessage `json:"record"`
					Text   string          `json:"text"`
					Bytes  []byte          `json:"bytes"`
				}
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatalf("rejects line %q: %v", line, err)
				}
				got[r.ID] = string(r.Record) + r.Text + string(r.Bytes)
			}
			for id, want := range tt.want {
				if got[id] != want {
					t.Errorf("reject %s: %q, want %q", id, got[id], want)
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("rejects: %q, want %d", got, len(tt.want))
			}
		})
	}
}

// TestInvalidTableNamesExit2: a table name DynamoDB refuses is a usage error
// found before any call: exit 2 with the rule, for every command that names
// a table. The endpoint is a closed port, so a call would end in exit 3.
func TestInvalidTableNamesExit2(t *testing.T) {
	closed := "http://127.0.0.1:9" // discard: nothing listens
	env := []string{"AWS_ACCESS_KEY_ID=x", "AWS_SECRET_ACCESS_KEY=x", "AWS_REGION=us-east-1", "TREEPORT_ENDPOINT_URL=" + closed}
	in := "fixtures/cars.csv"
	cases := [][]string{
		{"import", "--in", in, "--layout", "path", "--table", "ab"},
		{"import", "--in", in, "--layout", "path", "--table", "bad name", "--out", t.TempDir() + "/out"},
		{"export", "--table", "ab", "--layout", "path", "--out", t.TempDir() + "/x.csv"},
		{"query", "get", "--table", "tab!", "--layout", "path", "--id", "CM1"},
		{"verify", "--in", in, "--table", "ab", "--layout", "path"},
		{"plan", "--in", in, "--table", "ab", "--layout", "path"},
		{"apply", "--in", in, "--table", "ab", "--layout", "path"},
		{"migrate", "--from-table", "ab", "--from-layout", "path", "--to-table", "Parts", "--to-layout", "closure"},
		{"migrate", "--from-table", "Parts", "--from-layout", "path", "--to-table", "x/y", "--to-layout", "closure"},
		{"schema", "--layout", "path", "--table", "ab"},
	}
	for _, args := range cases {
		_, stderr, code := run(t, env, args...)
		if code != 2 || !strings.Contains(stderr, "is not a DynamoDB table name: a table name is 3 to 255 characters") {
			t.Errorf("%v: exit %d, want 2 with the rule:\n%s", args, code, stderr)
		}
	}
}

// TestMissingAWSConfigSaysWhatToDo runs commands that reach DynamoDB or S3
// with nothing configured: an empty HOME (no ~/.aws), no AWS_* variables and
// no instance metadata. Each exits 2 before touching anything, with a
// message that names what is missing and how to give it, never the SDK's
// chain of attempts or a package name.
func TestMissingAWSConfigSaysWhatToDo(t *testing.T) {
	home := t.TempDir()
	good := filepath.Join(t.TempDir(), "good.csv")
	if err := os.WriteFile(good, []byte("id,parent_id\nA,\nB,A\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "TREEPORT_") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+home, "AWS_EC2_METADATA_DISABLED=true")
	bad := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(bad, []byte("id,parent_id\nA,\nB,Z\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		say  []string
	}{
		{"no region", []string{"export", "--table", "Things", "--layout", "path", "--out", filepath.Join(home, "x.csv")},
			[]string{"no AWS region", "--region", "AWS_REGION", "--profile", "--endpoint-url http://localhost:8000"}},
		{"no credentials", []string{"query", "children", "--table", "Things", "--layout", "path", "--id", "A", "--region", "eu-west-1"},
			[]string{"no AWS credentials", "AWS_ACCESS_KEY_ID", "--profile", "--endpoint-url http://localhost:8000"}},
		{"no credentials for an import", []string{"import", "--in", good, "--layout", "path", "--table", "Things", "--region", "eu-west-1"},
			[]string{"no AWS credentials", "AWS_ACCESS_KEY_ID", "--endpoint-url"}},
		// Told before the input is read: an invalid input would be
		// reported first otherwise, after a pass over all of it.
		{"no region for an import, before its input", []string{"import", "--in", bad, "--layout", "path", "--table", "Things"},
			[]string{"no AWS region", "--region"}},
		{"no credentials for S3", []string{"import", "--in", good, "--layout", "path", "--out", "s3://bucket-1/p", "--region", "eu-west-1"},
			[]string{"no AWS credentials for S3", "AWS_ACCESS_KEY_ID"}},
		{"a profile that is not there", []string{"verify", "--in", good, "--table", "Things", "--layout", "path", "--profile", "nope"},
			[]string{`AWS profile "nope"`, "aws configure --profile nope"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(treeportBin, tt.args...)
			cmd.Env = env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("%v: %v, want exit 2; stderr:\n%s", tt.args, err, stderr.String())
			}
			msg := stderr.String()
			for _, s := range tt.say {
				if !strings.Contains(msg, s) {
					t.Errorf("stderr lacks %q:\n%s", s, msg)
				}
			}
			for _, s := range []string{"IMDS", "EC2", "importer:", "exporter:", "ddb:", "operation error", "get identity"} {
				if strings.Contains(msg, s) {
					t.Errorf("stderr has %q:\n%s", s, msg)
				}
			}
		})
	}
}

// TestMissingTableSaysSoOnce points commands at a table that is not on
// DynamoDB Local: each exits 2 (nothing was written: a mistake in --table,
// --region or --endpoint-url), says so once, with no SDK request ids or
// package names, and import's hint to create it is given once.
func TestMissingTableSaysSoOnce(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.csv")
	if err := os.WriteFile(good, []byte("id,parent_id\nA,\nB,A\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("id,parent_id\nA,\nB,Z\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	table := ddblocal.TableName(t) // never created
	tests := []struct {
		name string
		args []string
		say  string
	}{
		{"import", []string{"import", "--in", good, "--layout", "path", "--table", table, "--no-progress"}, "add --create-table"},
		// Before the input is read: its missing parent would be told
		// first otherwise, after a pass over all of it.
		{"import, before its input", []string{"import", "--in", bad, "--layout", "path", "--table", table, "--no-progress"}, "add --create-table"},
		{"plan", []string{"plan", "--in", good, "--layout", "path", "--table", table}, "table not found"},
		{"export", []string{"export", "--layout", "path", "--table", table, "--out", filepath.Join(dir, "o.csv")}, "ResourceNotFoundException"},
		{"query", []string{"query", "children", "--layout", "path", "--table", table, "--id", "A"}, "check --table"},
		{"migrate", []string{"migrate", "--from-layout", "path", "--from-table", table, "--to-layout", "closure", "--to-table", table + "-b"}, "table not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := run(t, env, tt.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2:\n%s", code, stderr)
			}
			if !strings.Contains(stderr, tt.say) {
				t.Errorf("stderr lacks %q:\n%s", tt.say, stderr)
			}
			if n := strings.Count(stderr, "--create-table"); n > 1 {
				t.Errorf("the hint to create the table is given %d times:\n%s", n, stderr)
			}
			for _, s := range []string{"RequestID", "StatusCode", "importer:", "exporter:", "refresh:"} {
				if strings.Contains(stderr, s) {
					t.Errorf("stderr has %q:\n%s", s, stderr)
				}
			}
		})
	}
}

// TestMissingCredentialsWhereIMDSRefuses is TestMissingAWSConfigSaysWhatToDo
// on a machine where the instance metadata service answers, but with 403
// (a proxy in front of it, a container without a role), as a newcomer's
// machine did: the SDK's own "WARN falling back to IMDSv1" is not printed
// beside treeport's message.
func TestMissingCredentialsWhereIMDSRefuses(t *testing.T) {
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "forbidden", http.StatusForbidden)
	}))
	defer imds.Close()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "TREEPORT_") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+t.TempDir(), "AWS_EC2_METADATA_SERVICE_ENDPOINT="+imds.URL)
	cmd := exec.Command(treeportBin, "query", "children", "--table", "Things", "--layout", "path", "--id", "A", "--region", "eu-west-1")
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("%v, want exit 2; stderr:\n%s", err, stderr.String())
	}
	msg := stderr.String()
	if !strings.Contains(msg, "no AWS credentials") {
		t.Errorf("stderr does not say what is missing:\n%s", msg)
	}
	for _, s := range []string{"WARN", "SDK ", "IMDSv1", "403"} {
		if strings.Contains(msg, s) {
			t.Errorf("stderr has %q:\n%s", s, msg)
		}
	}
}
