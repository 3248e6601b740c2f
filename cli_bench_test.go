package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

func benchTypes(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("fixtures", name+".types"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// benchReport is the part of the JSON report the CLI tests read.
type benchReport struct {
	Mode    string `json:"mode"`
	Layouts []struct {
		Layout string `json:"layout"`
		Items  int64  `json:"items"`
		Table  string `json:"table"`
		Rank   int    `json:"rank"`
	} `json:"layouts"`
	Ranking []struct {
		Layout string `json:"layout"`
		Why    string `json:"why"`
	} `json:"ranking"`
}

func readBenchReport(t *testing.T, path string) benchReport {
	t.Helper()
	var r benchReport
	if err := json.Unmarshal([]byte(readFile(t, path)), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestBenchOffline: the terminal table, and the three report files by
// their extensions, from the file alone.
func TestBenchOffline(t *testing.T) {
	dir := t.TempDir()
	md, js, html := filepath.Join(dir, "r.md"), filepath.Join(dir, "r.json"), filepath.Join(dir, "r.html")
	out, msg, code := run(t, nil, "bench", "--in", "fixtures/org.csv", "--types", benchTypes(t, "org"), "--offline",
		"--layouts", "path,closure", "--out", md, "--out", js, "--out", html, "--read-mix", "children=1")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, msg)
	}
	for _, want := range []string{"layout", "path", "closure", "recommendation for this workload", "1. "} {
		if !strings.Contains(out, want) {
			t.Errorf("the terminal table lacks %q:\n%s", want, out)
		}
	}
	r := readBenchReport(t, js)
	if r.Mode != "offline" || len(r.Layouts) != 2 || r.Layouts[0].Items != 46 || len(r.Ranking) != 2 {
		t.Errorf("report %+v", r)
	}
	if !strings.Contains(out, r.Ranking[0].Why) {
		t.Errorf("the terminal does not give the reason of the first layout %q", r.Ranking[0].Why)
	}
	if page := readFile(t, html); !strings.Contains(page, "<svg") || !strings.Contains(page, "Recommendation") {
		t.Error("the HTML report has no chart or no recommendation")
	}
	if doc := readFile(t, md); !strings.Contains(doc, "## Recommendation") || !strings.Contains(doc, "| path |") {
		t.Errorf("the Markdown report:\n%s", doc)
	}
}

// TestBenchUsage: mistakes exit 2 with a message, before anything runs.
func TestBenchUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no input", []string{"bench", "--offline"}, "--in is required"},
		{"no server", []string{"bench", "--in", "fixtures/org.csv"}, "--endpoint-url"},
		{"bad format", []string{"bench", "--in", "fixtures/org.csv", "--offline", "--out", "r.txt"}, ".md, .json or .html"},
		{"bad mix", []string{"bench", "--in", "fixtures/org.csv", "--offline", "--read-mix", "scan=1"}, "--read-mix"},
		{"bad layout", []string{"bench", "--in", "fixtures/org.csv", "--offline", "--layouts", "path,tree"}, "--layouts"},
		{"bad sample", []string{"bench", "--in", "fixtures/org.csv", "--offline", "--sample", "0"}, "--sample"},
		{"a move is not a read", []string{"bench", "--in", "fixtures/org.csv", "--offline", "--read-mix", "children=5,move=5"}, "--moves-per-month"},
		{"negative reads", []string{"bench", "--in", "fixtures/org.csv", "--offline", "--reads-per-month", "-1"}, "--reads-per-month"},
		{"no months", []string{"bench", "--in", "fixtures/org.csv", "--offline", "--months", "0"}, "--months"},
		{"missing workload", []string{"bench", "--in", "fixtures/org.csv", "--offline", "--workload", "no-such-file.json"}, "--workload"},
		{"invalid input", []string{"bench", "--in", "fixtures/bad/cycle.csv", "--offline"}, "cycle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, msg, code := run(t, nil, tc.args...)
			if code != 2 || !strings.Contains(msg, tc.want) {
				t.Errorf("exit %d, want 2 with %q:\n%s", code, tc.want, msg)
			}
		})
	}
}

// tablesWithPrefix lists the tables whose names start with prefix.
func tablesWithPrefix(t *testing.T, client *dynamodb.Client, prefix string) []string {
	t.Helper()
	var names []string
	p := dynamodb.NewListTablesPaginator(client, &dynamodb.ListTablesInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range page.TableNames {
			if strings.HasPrefix(n, prefix) {
				names = append(names, n)
			}
		}
	}
	return names
}

// TestBenchOnline runs bench against DynamoDB Local: every layout is
// loaded and queried, and no table is left behind.
func TestBenchOnline(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	prefix := ddblocal.TableName(t)
	js := filepath.Join(t.TempDir(), "r.json")
	out, msg, code := run(t, awsEnv(endpoint), "bench", "--in", "fixtures/cars.csv", "--types", benchTypes(t, "cars"),
		"--table-prefix", prefix, "--sample", "10", "--out", js)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, msg)
	}
	r := readBenchReport(t, js)
	if r.Mode != "online" || len(r.Layouts) != len(layouts.Names()) {
		t.Fatalf("report %+v", r)
	}
	for _, l := range r.Layouts {
		if !strings.HasPrefix(l.Table, prefix+"-"+l.Layout+"-") || !strings.Contains(msg, "deleting table "+l.Table) {
			t.Errorf("%s: table %q, not created and deleted as expected:\n%s", l.Layout, l.Table, msg)
		}
	}
	if !strings.Contains(out, "load s") {
		t.Errorf("the online table has no load time:\n%s", out)
	}
	if left := tablesWithPrefix(t, client, prefix); len(left) > 0 {
		t.Errorf("tables left behind: %v", left)
	}
}

// TestBenchInterrupt: Ctrl-C during the load exits 130 and deletes the
// table.
func TestBenchInterrupt(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	prefix := ddblocal.TableName(t)
	in := genInput(t, 30000)
	// Ctrl-C once the load says it has begun (its table is there).
	args := []string{"bench", "--in", in, "--layouts", "closure", "--table-prefix", prefix, "--concurrency", "2"}
	stderr, _ := interruptWhen(t, awsEnv(endpoint), args, `"loading" on stderr`, func(stderr string) bool {
		return strings.Contains(stderr, "loading")
	})
	if !strings.Contains(stderr, "deleting table "+prefix) {
		t.Errorf("no table deleted:\n%s", stderr)
	}
	if left := tablesWithPrefix(t, client, prefix); len(left) > 0 {
		t.Errorf("tables left behind after Ctrl-C: %v", left)
	}
}
