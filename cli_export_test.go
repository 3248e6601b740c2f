package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
)

// importFixture loads fixtures/cars.csv into a new table with the CLI and
// deletes the table when the test ends.
func importFixture(t *testing.T, endpoint, layout string) string {
	t.Helper()
	table := ddblocal.TableName(t)
	types, err := os.ReadFile(filepath.Join("fixtures", "cars.types"))
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, code := run(t, nil, "import", "--in", filepath.Join("fixtures", "cars.csv"), "--types", strings.TrimSpace(string(types)),
		"--layout", layout, "--table", table, "--create-table", "--endpoint-url", endpoint, "--no-progress")
	if code != 0 {
		t.Fatalf("import: exit %d: %s", code, stderr)
	}
	client := ddblocal.Client(t, endpoint)
	t.Cleanup(func() {
		client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	return table
}

// TestExportQueryVerifyCLI runs the three reading commands as a user would
// and checks their output, summaries and exit codes.
func TestExportQueryVerifyCLI(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	table := importFixture(t, endpoint, "closure")
	common := []string{"--table", table, "--layout", "closure", "--endpoint-url", endpoint}
	dir := t.TempDir()

	t.Run("export", func(t *testing.T) {
		out := filepath.Join(dir, "cars.parquet")
		_, stderr, code := run(t, nil, append([]string{"export", "--out", out, "--segments", "3"}, common...)...)
		if code != 0 || !strings.Contains(stderr, "exported 48 nodes") || !strings.Contains(stderr, "RCU consumed") {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
		// The export is what import reads: verify it against the table.
		stdout, stderr, code := run(t, nil, append([]string{"verify", "--in", out}, common...)...)
		if code != 0 || !strings.Contains(stdout, "identical") {
			t.Errorf("verify of the export: exit %d\n%s%s", code, stdout, stderr)
		}
	})
	t.Run("export a subtree to stdout", func(t *testing.T) {
		stdout, stderr, code := run(t, nil, append([]string{"export", "--root", "CM2", "--out", "-", "--format", "csv"}, common...)...)
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if code != 0 || len(lines) < 3 || !strings.HasPrefix(lines[0], "id,parent_id,") || !strings.HasPrefix(lines[1], "CM2,CM1,") {
			t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		if !strings.Contains(stderr, `subtree of "CM2"`) || strings.Contains(stderr, "warning") {
			t.Errorf("stderr:\n%s", stderr)
		}
	})
	t.Run("query", func(t *testing.T) {
		stdout, stderr, code := run(t, nil, append([]string{"query", "descendants", "--id", "CM2", "--min-depth", "0", "--max-depth", "1", "--stats"}, common...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		sc := bufio.NewScanner(strings.NewReader(stdout))
		n, prev := 0, -1
		for sc.Scan() {
			var line struct {
				ID            string          `json:"id"`
				ParentID      *string         `json:"parent_id"`
				RelativeDepth int             `json:"relative_depth"`
				Attributes    json.RawMessage `json:"attributes"`
			}
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			if n == 0 && (line.ID != "CM2" || line.RelativeDepth != 0 || line.ParentID == nil || *line.ParentID != "CM1") {
				t.Errorf("first line %s, want CM2 at depth 0 with parent CM1", sc.Text())
			}
			if n > 0 && (line.RelativeDepth != 1 || line.ParentID == nil || *line.ParentID != "CM2") {
				t.Errorf("line %s, want a child of CM2", sc.Text())
			}
			if line.RelativeDepth < prev {
				t.Errorf("line %s is out of order", sc.Text())
			}
			prev = line.RelativeDepth
			n++
		}
		if n < 2 || !strings.Contains(stderr, "requests") || !strings.Contains(stderr, "RCU consumed") {
			t.Errorf("%d lines; stderr %q", n, stderr)
		}
	})
	t.Run("query a root: no parent_id", func(t *testing.T) {
		stdout, _, code := run(t, []string{"TREEPORT_TABLE=" + table, "TREEPORT_LAYOUT=closure", "TREEPORT_ENDPOINT_URL=" + endpoint}, "query", "get", "--id", "CM1")
		if code != 0 || strings.Contains(stdout, "parent_id") || !strings.HasPrefix(stdout, `{"id":"CM1","relative_depth":0,"attributes":{`) {
			t.Errorf("exit %d, stdout %q (flags from TREEPORT_* variables)", code, stdout)
		}
	})
	exits := []struct {
		name  string
		args  []string
		table string // instead of the fixture's
		code  int
		want  string
	}{
		{name: "node not in the table", args: []string{"query", "children", "--id", "NOPE"}, code: 2, want: `"NOPE" is not in table`},
		{name: "band upside down", args: []string{"query", "ancestors", "--id", "CM2", "--min-depth", "3", "--max-depth", "1"}, code: 2, want: "below --min-depth"},
		{name: "path on another layout", args: []string{"query", "get", "--path", "CM1|CM2"}, code: 2, want: "--path is for the prefix layout"},
		{name: "export without --out", args: []string{"export"}, code: 2, want: "--out"},
		{name: "export to an unknown format", args: []string{"export", "--out", filepath.Join(dir, "x.txt")}, code: 2, want: "--format"},
		{name: "verify finds differences", args: []string{"verify", "--in", filepath.Join("fixtures", "org.json")}, code: 1, want: "missing from the table: 46"},
		// A table that is not there is a mistake in --table, --region or
		// --endpoint-url, exit 2 as import's check of it is.
		{name: "table that does not exist", args: []string{"export", "--out", filepath.Join(dir, "y.jsonl")}, table: "no-such-table", code: 2, want: "--table"},
	}
	for _, tt := range exits {
		t.Run(tt.name, func(t *testing.T) {
			args := append(tt.args, common...)
			if tt.table != "" {
				args = append(tt.args, "--table", tt.table, "--layout", "closure", "--endpoint-url", endpoint)
			}
			stdout, stderr, code := run(t, nil, args...)
			if code != tt.code || !strings.Contains(stdout+stderr, tt.want) {
				t.Errorf("exit %d (want %d), output does not say %q:\n%s%s", code, tt.code, tt.want, stdout, stderr)
			}
		})
	}
}

// TestCSVExportRoundTripsTypes exports a typed table to CSV, which holds
// every value as text, and reads it back without --types: the sidecar
// FILE.types export writes beside it gives verify and import the types, so
// verify finds the file identical and a table imported from the export
// holds numbers as numbers. Without the sidecar, verify says why every
// number differs and how to fix it.
func TestCSVExportRoundTripsTypes(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	table := importFixture(t, endpoint, "path")
	common := []string{"--layout", "path", "--endpoint-url", endpoint}
	out := filepath.Join(t.TempDir(), "cars.csv")
	_, stderr, code := run(t, nil, append([]string{"export", "--table", table, "--out", out}, common...)...)
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	sidecar, err := os.ReadFile(out + ".types")
	if err != nil {
		t.Fatalf("export wrote no sidecar: %v\n%s", err, stderr)
	}
	want, err := os.ReadFile(filepath.Join("fixtures", "cars.types"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(sidecar)) != strings.TrimSpace(string(want)) {
		t.Errorf("sidecar %q, want the fixture's types %q", sidecar, want)
	}
	if !strings.Contains(stderr, out+".types") {
		t.Errorf("the export's summary does not name the sidecar:\n%s", stderr)
	}

	stdout, stderr, code := run(t, nil, append([]string{"verify", "--in", out, "--table", table}, common...)...)
	if code != 0 || !strings.Contains(stdout, "identical") || !strings.Contains(stderr, "reading the column types") {
		t.Errorf("verify of the CSV export with its sidecar: exit %d\n%s%s", code, stdout, stderr)
	}

	// Imported again from the export, numbers are numbers.
	second := ddblocal.TableName(t)
	client := ddblocal.Client(t, endpoint)
	t.Cleanup(func() {
		client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(second)})
	})
	if _, stderr, code := run(t, nil, append([]string{"import", "--in", out, "--table", second, "--create-table", "--no-progress"}, common...)...); code != 0 {
		t.Fatalf("import of the export: exit %d: %s", code, stderr)
	}
	got, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(second), Key: map[string]types.AttributeValue{"Id": &types.AttributeValueMemberS{Value: "CM2"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Item["qty"].(*types.AttributeValueMemberN); !ok {
		t.Errorf("qty of CM2 imported from the CSV export is %T, want a number", got.Item["qty"])
	}

	// Without the sidecar every number is a string: verify says why.
	if err := os.Remove(out + ".types"); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = run(t, nil, append([]string{"verify", "--in", out, "--table", table}, common...)...)
	if code != 1 || !strings.Contains(stderr, "read without --types") || !strings.Contains(stderr, out+".types") {
		t.Errorf("verify without the sidecar: exit %d, want 1 with a hint\n%s%s", code, stdout, stderr)
	}
}
