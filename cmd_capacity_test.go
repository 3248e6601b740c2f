package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/treeport/treeport/internal/ddblocal"
)

// --create-table with a warm throughput and on-demand ceilings creates the
// table on DynamoDB Local (which takes the fields and ignores them) for
// import and apply, and loads it; schema and the files of import --out
// carry them, import-table.json the ceilings only (ImportTable takes no
// warm throughput).
func TestCreateTableWarmAndCapped(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	capacity := []string{"--warm-wcu", "8000", "--warm-rcu", "15000", "--max-on-demand-wcu", "20000", "--max-on-demand-rcu", "40000"}
	for _, cmd := range []string{"import", "apply"} {
		t.Run(cmd, func(t *testing.T) {
			table := ddblocal.TableName(t)
			t.Cleanup(func() {
				client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
			})
			args := append([]string{cmd, "--in", "fixtures/org.csv", "--layout", "path", "--table", table, "--create-table"}, capacity...)
			stdout, stderr, code := run(t, awsEnv(endpoint), args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			if items := scanTable(t, client, table); len(items) != 46 {
				t.Errorf("%d items, want 46", len(items))
			}
		})
	}

	stdout, stderr, code := run(t, nil, append([]string{"schema", "--layout", "closure", "--table", "Tree"}, capacity...)...)
	if code != 0 {
		t.Fatalf("schema: exit %d %s", code, stderr)
	}
	var doc struct {
		WarmThroughput         map[string]int64
		OnDemandThroughput     map[string]int64
		GlobalSecondaryIndexes []struct {
			IndexName          string
			WarmThroughput     map[string]int64
			OnDemandThroughput map[string]int64
		}
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	warm := map[string]int64{"WriteUnitsPerSecond": 8000, "ReadUnitsPerSecond": 15000}
	ceiling := map[string]int64{"MaxWriteRequestUnits": 20000, "MaxReadRequestUnits": 40000}
	same := func(a, b map[string]int64) bool {
		j1, _ := json.Marshal(a)
		j2, _ := json.Marshal(b)
		return string(j1) == string(j2)
	}
	if !same(doc.WarmThroughput, warm) || !same(doc.OnDemandThroughput, ceiling) || len(doc.GlobalSecondaryIndexes) != 1 {
		t.Errorf("schema:\n%s", stdout)
	}
	for _, ix := range doc.GlobalSecondaryIndexes {
		if !same(ix.WarmThroughput, warm) || !same(ix.OnDemandThroughput, ceiling) {
			t.Errorf("index %s: %v %v", ix.IndexName, ix.WarmThroughput, ix.OnDemandThroughput)
		}
	}

	out := filepath.Join(t.TempDir(), "files")
	if _, stderr, code := run(t, nil, append([]string{"import", "--in", "fixtures/org.csv", "--layout", "path", "--out", out}, capacity...)...); code != 0 {
		t.Fatalf("import --out: exit %d %s", code, stderr)
	}
	create, _ := os.ReadFile(filepath.Join(out, "create-table.json"))
	imp, _ := os.ReadFile(filepath.Join(out, "import-table.json"))
	if !strings.Contains(string(create), `"WriteUnitsPerSecond": 8000`) || !strings.Contains(string(create), `"MaxWriteRequestUnits": 20000`) {
		t.Errorf("create-table.json:\n%s", create)
	}
	if strings.Contains(string(imp), "WarmThroughput") || !strings.Contains(string(imp), `"MaxReadRequestUnits": 40000`) {
		t.Errorf("import-table.json:\n%s", imp)
	}
}
