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

	"github.com/treeport/treeport/internal/testserver/ddblocal"
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

// import --dry-run projects the load time from the hottest partition key
// values: one tree of 3,000 nodes puts 3,000 ByPath entries on one
// partition, 3 s at 1,000 WCU/s, which bounds the load; the text says so
// and how to avoid it, and --json has the same figures under load_time.
func TestDryRunProjectsHotKeys(t *testing.T) {
	in := filepath.Join(t.TempDir(), "tree.csv")
	if _, stderr, code := run(t, nil, "gen", "--nodes", "3000", "--shape", "random", "--seed", "3", "--out", in); code != 0 {
		t.Fatalf("gen: %s", stderr)
	}
	stdout, stderr, code := run(t, nil, "import", "--in", in, "--layout", "path", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d %s", code, stderr)
	}
	for _, want := range []string{
		"projected load time through BatchWriteItem (DynamoDB writes at most 1,000 WCU/s to one partition key value)",
		"index ByPath TreeId N1  3,000",
		"path: ByPath's TreeId N1 takes 3,000 writes (3,000 WCU at 1,000 WCU/s a partition): at least 3 s; sharded-path with --shards 4 spreads it",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("dry run lacks %q:\n%s", want, stdout)
		}
	}
	stdout, stderr, code = run(t, nil, "import", "--in", in, "--layout", "path", "--dry-run", "--json", "--max-wcu", "100")
	if code != 0 {
		t.Fatalf("exit %d %s", code, stderr)
	}
	var out struct {
		Plans []struct {
			WCU      int64 `json:"wcu"`
			LoadTime struct {
				HotKeys []struct {
					Index, Value string
					Items        int64
					Seconds      float64
				} `json:"hot_keys"`
				MinSeconds float64 `json:"min_seconds"`
				MaxWCU     float64 `json:"max_wcu"`
				BoundBy    string  `json:"bound_by"`
			} `json:"load_time"`
		}
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	lt := out.Plans[0].LoadTime
	if len(lt.HotKeys) != 3 || lt.HotKeys[2].Index != "ByPath" || lt.HotKeys[2].Value != "N1" || lt.HotKeys[2].Items != 3000 || lt.HotKeys[2].Seconds != 3 {
		t.Errorf("hot keys %+v", lt.HotKeys)
	}
	// Capped at 100 WCU/s, the cap is the bound.
	if lt.BoundBy != "max_wcu" || lt.MaxWCU != 100 || lt.MinSeconds != float64(out.Plans[0].WCU)/100 {
		t.Errorf("load_time %+v", lt)
	}
}
