package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/models"
)

// The seed tree of the model tests: CM1 > CM2 > CM4 > CM8, and CM3 under CM1.
const modelSeedCSV = "id,parent_id,name\nCM1,,Roadster\nCM2,CM1,Powertrain\nCM4,CM2,Engine\nCM8,CM4,Piston\nCM3,CM1,Chassis\n"

// handModel is a shipped model's table as its seed documents it, written
// here by hand: the CreateTable request and the items, with no code of
// treeport's in between.
type handModel struct {
	file    string
	create  func(name string) *dynamodb.CreateTableInput
	nodes   []layouts.Item // the seed tree's items
	foreign []layouts.Item // the table's other entities
}

// seedNodes is the number of nodes of modelSeedCSV.
const seedNodes = 5

// prefixRows are the rows of prefix-directories.json for the seed: each
// node's entry, with its name, and its row in its parent's listing.
func prefixRows() []layouts.Item {
	paths := [][]string{{"CM1"}, {"CM1", "CM2"}, {"CM1", "CM2", "CM4"}, {"CM1", "CM2", "CM4", "CM8"}, {"CM1", "CM3"}}
	names := map[string]string{"CM1": "Roadster", "CM2": "Powertrain", "CM4": "Engine", "CM8": "Piston", "CM3": "Chassis"}
	var rows []layouts.Item
	for _, p := range paths {
		id := p[len(p)-1]
		dir := "DIR#/" + strings.Join(p, "/")
		rows = append(rows,
			layouts.Item{"PK": s(dir), "SK": s("ENTRY#/"), "_type": s("Entry"), "name": s(names[id])},
			layouts.Item{"PK": s(strings.TrimSuffix(dir, id)), "SK": s("ENTRY#" + id), "_type": s("Entry")})
	}
	return rows
}

// closureRows are the rows of closure-single-table.json for the seed: for
// each node, its own row and one per ancestor, each copying the name.
func closureRows() []layouts.Item {
	paths := [][]string{{"CM1"}, {"CM1", "CM2"}, {"CM1", "CM2", "CM4"}, {"CM1", "CM2", "CM4", "CM8"}, {"CM1", "CM3"}}
	names := map[string]string{"CM1": "Roadster", "CM2": "Powertrain", "CM4": "Engine", "CM8": "Piston", "CM3": "Chassis"}
	var rows []layouts.Item
	for _, p := range paths {
		id := p[len(p)-1]
		for r := 0; r < len(p); r++ {
			row := layouts.Item{"PK": s("NODE#" + id), "SK": s(fmt.Sprintf("ANC#%04d", r)), "_type": s("TreeRow"),
				"GSI1PK": s("ANC#" + p[len(p)-1-r]), "name": s(names[id])}
			if len(p) > 1 {
				row["ParentId"] = s(p[len(p)-2])
			}
			rows = append(rows, row)
		}
	}
	return rows
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func keySchema(pk, sk string) []types.KeySchemaElement {
	ks := []types.KeySchemaElement{{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash}}
	if sk != "" {
		ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(sk), KeyType: types.KeyTypeRange})
	}
	return ks
}

func defs(names ...string) []types.AttributeDefinition {
	var out []types.AttributeDefinition
	for _, n := range names {
		out = append(out, types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS})
	}
	return out
}

func gsi(name, pk, sk string, p types.ProjectionType) types.GlobalSecondaryIndex {
	return types.GlobalSecondaryIndex{IndexName: aws.String(name), KeySchema: keySchema(pk, sk), Projection: &types.Projection{ProjectionType: p}}
}

var handModels = []handModel{
	{
		file: "fixtures/models/aws-components.json",
		create: func(name string) *dynamodb.CreateTableInput {
			return &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
				AttributeDefinitions: defs("ComponentId", "ParentId", "GraphId", "Path"),
				KeySchema:            keySchema("ComponentId", ""),
				GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
					gsi("GSI1", "ParentId", "ComponentId", types.ProjectionTypeAll),
					gsi("GSI2", "GraphId", "Path", types.ProjectionTypeKeysOnly),
				}}
		},
		nodes: []layouts.Item{
			{"ComponentId": s("CM1"), "GraphId": s("CM1#1"), "Path": s("CM1"), "name": s("Roadster")},
			{"ComponentId": s("CM2"), "ParentId": s("CM1"), "GraphId": s("CM1#1"), "Path": s("CM1|CM2"), "name": s("Powertrain")},
			{"ComponentId": s("CM4"), "ParentId": s("CM2"), "GraphId": s("CM1#1"), "Path": s("CM1|CM2|CM4"), "name": s("Engine")},
			{"ComponentId": s("CM8"), "ParentId": s("CM4"), "GraphId": s("CM1#1"), "Path": s("CM1|CM2|CM4|CM8"), "name": s("Piston")},
			{"ComponentId": s("CM3"), "ParentId": s("CM1"), "GraphId": s("CM1#1"), "Path": s("CM1|CM3"), "name": s("Chassis")},
		},
	},
	{
		file: "fixtures/models/wadsworth-path.json",
		create: func(name string) *dynamodb.CreateTableInput {
			return &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
				AttributeDefinitions:   defs("ID", "Root", "Path"),
				KeySchema:              keySchema("ID", ""),
				GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{gsi("gsi1", "Root", "Path", types.ProjectionTypeAll)}}
		},
		nodes: []layouts.Item{
			{"ID": s("CM1"), "name": s("Roadster")},
			{"ID": s("CM2"), "Root": s("CM1"), "Path": s("/"), "name": s("Powertrain")},
			{"ID": s("CM4"), "Root": s("CM1"), "Path": s("/CM2/"), "name": s("Engine")},
			{"ID": s("CM8"), "Root": s("CM1"), "Path": s("/CM2/CM4/"), "name": s("Piston")},
			{"ID": s("CM3"), "Root": s("CM1"), "Path": s("/"), "name": s("Chassis")},
		},
	},
	{
		file: "fixtures/models/single-table.json",
		create: func(name string) *dynamodb.CreateTableInput {
			return &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
				AttributeDefinitions: defs("PK", "SK", "GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK"),
				KeySchema:            keySchema("PK", "SK"),
				GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
					gsi("GSI1", "GSI1PK", "GSI1SK", types.ProjectionTypeAll),
					gsi("GSI2", "GSI2PK", "GSI2SK", types.ProjectionTypeAll),
				}}
		},
		nodes: []layouts.Item{
			{"PK": s("NODE#CM1"), "SK": s("NODE#CM1"), "_type": s("Node"), "GSI1SK": s("NODE#CM1"), "GSI2PK": s("TREE#CM1"), "GSI2SK": s("PATH#CM1"), "name": s("Roadster")},
			{"PK": s("NODE#CM2"), "SK": s("NODE#CM2"), "_type": s("Node"), "GSI1PK": s("PARENT#CM1"), "GSI1SK": s("NODE#CM2"), "GSI2PK": s("TREE#CM1"), "GSI2SK": s("PATH#CM1|CM2"), "name": s("Powertrain")},
			{"PK": s("NODE#CM4"), "SK": s("NODE#CM4"), "_type": s("Node"), "GSI1PK": s("PARENT#CM2"), "GSI1SK": s("NODE#CM4"), "GSI2PK": s("TREE#CM1"), "GSI2SK": s("PATH#CM1|CM2|CM4"), "name": s("Engine")},
			{"PK": s("NODE#CM8"), "SK": s("NODE#CM8"), "_type": s("Node"), "GSI1PK": s("PARENT#CM4"), "GSI1SK": s("NODE#CM8"), "GSI2PK": s("TREE#CM1"), "GSI2SK": s("PATH#CM1|CM2|CM4|CM8"), "name": s("Piston")},
			{"PK": s("NODE#CM3"), "SK": s("NODE#CM3"), "_type": s("Node"), "GSI1PK": s("PARENT#CM1"), "GSI1SK": s("NODE#CM3"), "GSI2PK": s("TREE#CM1"), "GSI2SK": s("PATH#CM1|CM3"), "name": s("Chassis")},
		},
		foreign: []layouts.Item{
			{"PK": s("USER#ann"), "SK": s("USER#ann"), "_type": s("User"), "name": s("Ann"), "email": s("ann@example.com")},
			// A comment in CM4's own partition, and in GSI1 and GSI2
			// beside CM4's children and CM1's tree: the queries must
			// leave it out.
			{"PK": s("NODE#CM4"), "SK": s("COMMENT#1"), "_type": s("Comment"), "text": s("torque it"),
				"GSI1PK": s("PARENT#CM2"), "GSI1SK": s("NODE#CM4#COMMENT#1"), "GSI2PK": s("TREE#CM1"), "GSI2SK": s("PATH#CM1|CM2|CM4|COMMENT")},
		},
	},
	{
		file: "fixtures/models/closure-single-table.json",
		create: func(name string) *dynamodb.CreateTableInput {
			return &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
				AttributeDefinitions: defs("PK", "SK", "GSI1PK"),
				KeySchema:            keySchema("PK", "SK"),
				GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("GSI1"), KeySchema: keySchema("GSI1PK", "SK"),
					Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: []string{"_type", "ParentId"}}}},
			}
		},
		nodes: closureRows(),
		foreign: []layouts.Item{
			{"PK": s("USER#ann"), "SK": s("USER#ann"), "_type": s("User"), "name": s("Ann")},
			// A comment in CM4's partition and in CM2's of GSI1, outside
			// the rows' range of SK; a note inside it, in CM8's partition
			// and CM1's of GSI1: the type field leaves it out.
			{"PK": s("NODE#CM4"), "SK": s("COMMENT#1"), "_type": s("Comment"), "GSI1PK": s("ANC#CM2"), "text": s("torque it")},
			{"PK": s("NODE#CM8"), "SK": s("ANC#0009"), "_type": s("Note"), "GSI1PK": s("ANC#CM1"), "text": s("ring gap")},
		},
	},
	{
		file: "fixtures/models/prefix-directories.json",
		create: func(name string) *dynamodb.CreateTableInput {
			return &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
				AttributeDefinitions: defs("PK", "SK"), KeySchema: keySchema("PK", "SK")}
		},
		nodes: prefixRows(),
		foreign: []layouts.Item{
			{"PK": s("USER#ann"), "SK": s("USER#ann"), "_type": s("User"), "name": s("Ann")},
			// A note in CM1's listing, and one on CM2's entry: the
			// type field leaves them out.
			{"PK": s("DIR#/CM1/"), "SK": s("ENTRY#README"), "_type": s("Note"), "text": s("read me")},
			{"PK": s("DIR#/CM1/CM2"), "SK": s("NOTE#1"), "_type": s("Note"), "text": s("torque it")},
		},
	},
}

// handTable creates the model's table by hand and puts items in it.
func handTable(t *testing.T, client *dynamodb.Client, h handModel, items []layouts.Item) string {
	t.Helper()
	name := ddblocal.TableName(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := client.CreateTable(ctx, h.create(name)); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	dropTableLater(t, client, name)
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 50 * time.Millisecond })
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute); err != nil {
		t.Fatal(err)
	}
	putItems(t, client, name, items...)
	return name
}

func itemLines(items []layouts.Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, string(ddbjson.AppendItem(nil, it)))
	}
	sort.Strings(out)
	return out
}

// sameLines fails when the table's items, byte for byte, are not want.
func sameLines(t *testing.T, what string, got []string, want []layouts.Item) {
	t.Helper()
	w := itemLines(want)
	if !slices.Equal(got, w) {
		t.Fatalf("%s:\n got  %s\n want %s", what, strings.Join(got, "\n      "), strings.Join(w, "\n      "))
	}
}

// foreignOf keeps the table's lines that are foreign items.
func foreignLines(t *testing.T, client *dynamodb.Client, table string, h handModel) []string {
	t.Helper()
	want := map[string]bool{}
	for _, l := range itemLines(h.foreign) {
		want[l] = true
	}
	var out []string
	for _, l := range rawLines(t, client, table) {
		if want[l] {
			out = append(out, l)
		}
	}
	return out
}

type queryLine struct {
	ID            string         `json:"id"`
	Parent        string         `json:"parent_id"`
	RelativeDepth int            `json:"relative_depth"`
	Attributes    map[string]any `json:"attributes"`
}

// queryAnswer runs a query and returns each line of its answer as show
// makes it of the line parsed, sorted.
func queryAnswer(t *testing.T, env []string, args []string, show func(q queryLine, line string) string) []string {
	t.Helper()
	stdout, stderr, code := run(t, env, append([]string{"query"}, args...)...)
	if code != 0 {
		t.Fatalf("query %v: exit %d\n%s", args, code, stderr)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if line == "" {
			continue
		}
		var q queryLine
		if err := json.Unmarshal([]byte(line), &q); err != nil {
			t.Fatalf("query line %q: %v", line, err)
		}
		out = append(out, show(q, line))
	}
	sort.Strings(out)
	return out
}

// queryIDs runs a query and returns "id@depth" of its answer, sorted.
func queryIDs(t *testing.T, env []string, args ...string) []string {
	t.Helper()
	return queryAnswer(t, env, args, func(q queryLine, line string) string {
		if q.Attributes["name"] == nil {
			t.Fatalf("query line %q has no name attribute", line)
		}
		return q.ID + "@" + string(rune('0'+q.RelativeDepth))
	})
}

// TestModelsAgainstHandBuiltTables runs every command that takes --model
// against each shipped model's table built by hand, with the seed's items:
// import gives the seed's rows exactly; export, every query, verify,
// plan/apply and edit work; the single table's other entities are never
// exported, changed or deleted.
func TestModelsAgainstHandBuiltTables(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed.csv")
	if err := os.WriteFile(seed, []byte(modelSeedCSV), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, h := range handModels {
		t.Run(filepath.Base(h.file), func(t *testing.T) {
			m := []string{"--model", h.file}

			// Import into a table made by hand (holding the other
			// entities): exactly the seed's rows, the rest untouched.
			imported := handTable(t, client, h, h.foreign)
			if _, stderr, code := run(t, env, append([]string{"import", "--in", seed, "--table", imported, "--no-progress"}, m...)...); code != 0 {
				t.Fatalf("import: exit %d\n%s", code, stderr)
			}
			sameLines(t, "after import", rawLines(t, client, imported), append(slices.Clone(h.nodes), h.foreign...))

			// Import to files (--out): the same items, in the import
			// format's lines.
			files := filepath.Join(dir, filepath.Base(h.file)+"-out")
			if _, stderr, code := run(t, env, append([]string{"import", "--in", seed, "--out", files}, m...)...); code != 0 {
				t.Fatalf("import --out: exit %d\n%s", code, stderr)
			}
			var wantFiles []string
			for _, l := range itemLines(h.nodes) {
				wantFiles = append(wantFiles, `{"Item":`+l+`}`)
			}
			sort.Strings(wantFiles)
			if got := importItems(t, files); !slices.Equal(got, wantFiles) {
				t.Fatalf("import --out:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(wantFiles, "\n      "))
			}

			table := handTable(t, client, h, append(slices.Clone(h.nodes), h.foreign...))
			tm := append([]string{"--table", table}, m...)

			// Export: the five nodes, nothing else.
			out := filepath.Join(dir, filepath.Base(h.file)+".jsonl")
			if _, stderr, code := run(t, env, append([]string{"export", "--out", out}, tm...)...); code != 0 {
				t.Fatalf("export: exit %d\n%s", code, stderr)
			}
			var ids []string
			for _, line := range strings.Split(strings.TrimSpace(readFile(t, out)), "\n") {
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, rec["id"].(string)+"<"+asStr(rec["parent_id"])+":"+asStr(rec["name"]))
				if len(rec) > 3 {
					t.Errorf("exported record %s has more than id, parent_id and name", line)
				}
			}
			sort.Strings(ids)
			if want := []string{"CM1<:Roadster", "CM2<CM1:Powertrain", "CM3<CM1:Chassis", "CM4<CM2:Engine", "CM8<CM4:Piston"}; !slices.Equal(ids, want) {
				t.Fatalf("export: %v, want %v", ids, want)
			}

			// Every kind of query.
			for _, q := range []struct {
				args []string
				want []string
			}{
				{[]string{"get", "--id", "CM4"}, []string{"CM4@0"}},
				{[]string{"children", "--id", "CM1"}, []string{"CM2@1", "CM3@1"}},
				{[]string{"children", "--id", "CM2"}, []string{"CM4@1"}},
				{[]string{"children", "--id", "CM8"}, nil},
				{[]string{"descendants", "--id", "CM1"}, []string{"CM2@1", "CM3@1", "CM4@2", "CM8@3"}},
				{[]string{"descendants", "--id", "CM2", "--min-depth", "0", "--max-depth", "1"}, []string{"CM2@0", "CM4@1"}},
				{[]string{"descendants", "--id", "CM1", "--min-depth", "2"}, []string{"CM4@2", "CM8@3"}},
				{[]string{"ancestors", "--id", "CM8"}, []string{"CM1@3", "CM2@2", "CM4@1"}},
				{[]string{"ancestors", "--id", "CM4", "--max-depth", "1"}, []string{"CM2@1"}},
			} {
				if got := queryIDs(t, env, append(q.args, tm...)...); !slices.Equal(got, q.want) {
					t.Errorf("query %v: %v, want %v", q.args, got, q.want)
				}
			}
			// Descendants read the node (GetItem) and its tree's index
			// (Query); an index projecting only the keys adds the
			// BatchGetItem of the items found, which --stats counts.
			// Prefix finds the node's path with a Scan (8 segments), then
			// lists each level (5 Queries) and reads the entries found.
			// The Scan's segments stop once one finds the node, so how many
			// of its requests were sent varies (7 or 8): the queries' own
			// requests are what is counted past them.
			wantRequests := map[string]int{"aws-components.json": 3, "wadsworth-path.json": 2, "single-table.json": 2, "closure-single-table.json": 2,
				"prefix-directories.json": 6}[filepath.Base(h.file)]
			_, stderr, code := run(t, env, append([]string{"query", "descendants", "--id", "CM1", "--stats"}, tm...)...)
			total, scan := requestsSaid(stderr, `; (\d+) requests,`), requestsSaid(stderr, `with a Scan of \S+ \((\d+) requests,`)
			if code != 0 || total < 0 || total-max(scan, 0) != wantRequests {
				t.Errorf("query descendants --stats: exit %d, %d requests (%d of them the Scan's), want %d past the Scan:\n%s", code, total, scan, wantRequests, stderr)
			}
			if _, _, code := run(t, env, append([]string{"query", "get", "--id", "USER#ann"}, tm...)...); code == 0 {
				t.Errorf("query get of a foreign key: exit 0, want not found")
			}

			// Verify against the seed, in memory and out of core.
			if stdout, stderr, code := sameVerify(t, env, append([]string{"--in", seed}, tm...)...); code != 0 {
				t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
			}

			// A snapshot without CM3 and with CM8 renamed: apply, then
			// nothing left to plan, the other entities untouched.
			snap := filepath.Join(dir, "snap.csv")
			text := strings.Replace(strings.Replace(modelSeedCSV, "CM3,CM1,Chassis\n", "", 1), "Piston", "Piston ring", 1)
			if err := os.WriteFile(snap, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			before := foreignLines(t, client, table, h)
			// The plan's summary counts the nodes' items and the other
			// entities' apart.
			stdout, stderr, code := run(t, env, append([]string{"plan", "--in", snap, "--json"}, tm...)...)
			if code != 0 {
				t.Fatalf("plan: exit %d\n%s%s", code, stdout, stderr)
			}
			if sum := parseSummary(t, stdout); sum.TableItems != int64(len(h.nodes)) || sum.TableOtherItems != int64(len(h.foreign)) {
				t.Errorf("plan summary: table %d items and %d other items, want %d and %d", sum.TableItems, sum.TableOtherItems, len(h.nodes), len(h.foreign))
			}
			stdout, _, _ = run(t, env, append([]string{"plan", "--in", snap}, tm...)...)
			if len(h.foreign) > 0 && !strings.Contains(stdout, fmt.Sprintf("table %s in %s and %s (left alone)", units.Count(int64(seedNodes), "node"), units.Count(int64(len(h.nodes)), "item"), units.Count(int64(len(h.foreign)), "other item"))) {
				t.Errorf("plan summary does not count the other items apart:\n%s", stdout)
			}
			if stdout, stderr, code := run(t, env, append([]string{"apply", "--in", snap, "--no-progress", "--max-delete-ratio", "0.25"}, tm...)...); code != 0 {
				t.Fatalf("apply: exit %d\n%s%s", code, stdout, stderr)
			}
			if stdout, stderr, code := run(t, env, append([]string{"plan", "--in", snap, "--detailed-exitcode"}, tm...)...); code != 0 {
				t.Fatalf("plan after apply: exit %d\n%s%s", code, stdout, stderr)
			}
			if got := queryIDs(t, env, append([]string{"descendants", "--id", "CM1"}, tm...)...); !slices.Equal(got, []string{"CM2@1", "CM4@2", "CM8@3"}) {
				t.Fatalf("after apply: descendants %v", got)
			}
			if got := foreignLines(t, client, table, h); !slices.Equal(got, before) || len(got) != len(h.foreign) {
				t.Fatalf("apply touched the other entities: %v, want %v", got, before)
			}

			// Edit: CM8 moves under CM2, CM4 goes.
			ops := filepath.Join(dir, "ops.jsonl")
			os.WriteFile(ops, []byte(`{"op":"move","id":"CM8","parent":"CM2"}`+"\n"+`{"op":"delete","id":"CM4"}`+"\n"), 0o644)
			if stdout, stderr, code := run(t, env, append([]string{"edit", "--ops", ops, "--no-progress"}, tm...)...); code != 0 {
				t.Fatalf("edit: exit %d\n%s%s", code, stdout, stderr)
			}
			if got := queryIDs(t, env, append([]string{"descendants", "--id", "CM1"}, tm...)...); !slices.Equal(got, []string{"CM2@1", "CM8@2"}) {
				t.Fatalf("after edit: descendants %v", got)
			}
			if got := queryIDs(t, env, append([]string{"ancestors", "--id", "CM8"}, tm...)...); !slices.Equal(got, []string{"CM1@2", "CM2@1"}) {
				t.Fatalf("after edit: ancestors %v", got)
			}
			if got := foreignLines(t, client, table, h); !slices.Equal(got, before) {
				t.Fatalf("edit touched the other entities: %v, want %v", got, before)
			}
		})
	}
}

func asStr(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return ""
}

// TestMigrateModelsEveryLayout: migrate from each shipped model's table
// (built by hand) into each layout, and back into a fresh table of the
// model, gives the seed's rows exactly; the other entities of the source
// are never copied, and those of the destination are left as they are.
func TestMigrateModelsEveryLayout(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: migrates every model to every layout (12 s under -race)")
	}
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	for _, h := range handModels {
		t.Run(filepath.Base(h.file), func(t *testing.T) {
			src := handTable(t, client, h, append(slices.Clone(h.nodes), h.foreign...))
			srcBefore := rawLines(t, client, src)
			for _, layout := range layouts.Names() {
				t.Run(layout, func(t *testing.T) {
					mid := ddblocal.TableName(t)
					dropTableLater(t, client, mid)
					if stdout, stderr, code := run(t, env, "migrate", "--from-table", src, "--from-model", h.file,
						"--to-table", mid, "--to-layout", layout, "--create-table", "--no-progress"); code != 0 {
						t.Fatalf("migrate into %s: exit %d\n%s%s", layout, code, stdout, stderr)
					}
					back := handTable(t, client, h, h.foreign)
					if stdout, stderr, code := run(t, env, "migrate", "--from-table", mid, "--from-layout", layout,
						"--to-table", back, "--to-model", h.file, "--no-progress"); code != 0 {
						t.Fatalf("migrate back from %s: exit %d\n%s%s", layout, code, stdout, stderr)
					}
					sameLines(t, "migrated back", rawLines(t, client, back), append(slices.Clone(h.nodes), h.foreign...))
				})
			}
			if got := rawLines(t, client, src); !slices.Equal(got, srcBefore) {
				t.Fatalf("the source changed")
			}
		})
	}
}

// TestModelUsage: --model with --layout, --attr, or a bad file exits 2 and
// names the file and the field.
func TestModelUsage(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"layout": "path", "table": {"partition_key": {"name": "PK", "template": "{id}"}}, "colour": "red"}`), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"schema", "--table", "t1x", "--model", "fixtures/models/single-table.json", "--layout", "path"}, "give one"},
		{[]string{"schema", "--table", "t1x", "--model", "fixtures/models/single-table.json", "--attr", "Id=X"}, "--attr does not go with --model"},
		{[]string{"schema", "--table", "t1x", "--model", bad}, bad + ": colour: unknown field"},
		{[]string{"migrate", "--from-table", "a1x", "--to-table", "b1x", "--from-model", "fixtures/models/single-table.json", "--from-layout", "path", "--to-layout", "path"}, "--from-model and --from-layout"},
	} {
		_, stderr, code := run(t, nil, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	// schema of a model: the model's keys and projections.
	stdout, stderr, code := run(t, nil, "schema", "--table", "comp", "--model", "fixtures/models/aws-components.json")
	if code != 0 || !strings.Contains(stdout, `"KEYS_ONLY"`) || !strings.Contains(stdout, `"ComponentId"`) {
		t.Fatalf("schema --model: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestModelUnparsableItems: an item with the type field that does not read
// back is named by plan and apply, which refuse to run (exit 2) until
// --ignore-unparsable, and then leave it as it is.
func TestModelUnparsableItems(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	h := handModels[2] // single-table
	bad := layouts.Item{"PK": s("NODE#CM9"), "SK": s("NODE#CM9"), "_type": s("Node"), "GSI2PK": s("TREE#CM1"), "GSI2SK": s("CM1|CM9")}
	table := handTable(t, client, h, append(append(slices.Clone(h.nodes), h.foreign...), bad))
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed.csv")
	os.WriteFile(seed, []byte(modelSeedCSV), 0o644)
	common := []string{"--in", seed, "--table", table, "--model", h.file}
	for _, cmd := range []string{"plan", "apply"} {
		_, stderr, code := run(t, env, append([]string{cmd, "--no-progress"}[:1+btoi(cmd == "apply")], common...)...)
		if code != 2 || !strings.Contains(stderr, "NODE#CM9") || !strings.Contains(stderr, "--ignore-unparsable") {
			t.Fatalf("%s with an unparsable item: exit %d, want 2 naming NODE#CM9 and --ignore-unparsable:\n%s", cmd, code, stderr)
		}
	}
	if stdout, stderr, code := run(t, env, append([]string{"apply", "--no-progress", "--ignore-unparsable"}, common...)...); code != 0 {
		t.Fatalf("apply --ignore-unparsable: exit %d\n%s%s", code, stdout, stderr)
	}
	sameLines(t, "after apply --ignore-unparsable", rawLines(t, client, table), append(append(slices.Clone(h.nodes), h.foreign...), bad))
	// export leaves it out, counts it and names it; verify counts it as
	// a difference (exit 1).
	out := filepath.Join(dir, "x.jsonl")
	stdout, stderr, code := run(t, env, "export", "--out", out, "--table", table, "--model", h.file)
	if code != 0 || !strings.Contains(stdout+stderr, "1 items carry the model's type field") || !strings.Contains(stdout+stderr, "NODE#CM9") {
		t.Fatalf("export with an unparsable item: exit %d, want 0 counting it and naming NODE#CM9:\n%s%s", code, stdout, stderr)
	}
	if n := strings.Count(strings.TrimSpace(readFile(t, out)), "\n") + 1; n != len(h.nodes) {
		t.Fatalf("export wrote %d records, want %d", n, len(h.nodes))
	}
	stdout, stderr, code = sameVerify(t, env, "--in", seed, "--table", table, "--model", h.file)
	if code != 1 || !strings.Contains(stderr, "NODE#CM9") {
		t.Fatalf("verify with an unparsable item: exit %d, want 1 naming NODE#CM9:\n%s%s", code, stdout, stderr)
	}
}

// TestModelEditUnparsable: an edit whose subtree holds an item that
// carries the type field but does not read back through the templates
// refuses (exit 2, naming the item) and writes nothing: moving the rest
// around it would leave that item under the old path.
func TestModelEditUnparsable(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	h := handModels[2] // single-table
	// CM7 under CM2: its index keys are right, its sort key is not.
	bad := layouts.Item{"PK": s("NODE#CM7"), "SK": s("NODE#X"), "_type": s("Node"), "GSI1PK": s("PARENT#CM2"), "GSI1SK": s("NODE#CM7"),
		"GSI2PK": s("TREE#CM1"), "GSI2SK": s("PATH#CM1|CM2|CM7")}
	all := append(append(slices.Clone(h.nodes), h.foreign...), bad)
	table := handTable(t, client, h, all)
	ops := filepath.Join(t.TempDir(), "ops.jsonl")
	os.WriteFile(ops, []byte(`{"op":"move","id":"CM2","parent":"CM3"}`+"\n"), 0o644)
	stdout, stderr, code := run(t, env, "edit", "--ops", ops, "--no-progress", "--table", table, "--model", h.file)
	if code != 2 || !strings.Contains(stderr, "NODE#CM7") || !strings.Contains(stderr, "--model "+h.file) {
		t.Fatalf("edit over an unparsable item: exit %d, want 2 naming NODE#CM7 and --model %s:\n%s%s", code, h.file, stdout, stderr)
	}
	sameLines(t, "after the refused edit", rawLines(t, client, table), all)
}

// TestSchemaWorkbenchGolden: schema --format workbench of each shipped
// model, with the seed tree as sample items, matches its golden file
// (testdata/golden/workbench/, rewritten with -update), and has the
// structure of the Workbench's own exports (aws-samples'
// amazon-dynamodb-design-patterns models): every attribute of TableData
// declared, every index with its projection.
func TestSchemaWorkbenchGolden(t *testing.T) {
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed.csv")
	os.WriteFile(seed, []byte(modelSeedCSV), 0o644)
	for _, h := range handModels {
		name := strings.TrimSuffix(filepath.Base(h.file), ".json")
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := run(t, nil, "schema", "--format", "workbench", "--model", h.file, "--table", "Components", "--in", seed, "--sample", "20")
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			var m struct {
				ModelName     string
				ModelMetadata struct{ Version, DateCreated string }
				DataModel     []struct {
					TableName     string
					KeyAttributes struct {
						PartitionKey struct{ AttributeName, AttributeType string }
						SortKey      *struct{ AttributeName, AttributeType string }
					}
					NonKeyAttributes       []struct{ AttributeName, AttributeType string }
					GlobalSecondaryIndexes []struct {
						IndexName  string
						Projection struct{ ProjectionType string }
					}
					TableData []map[string]map[string]any
				}
			}
			if err := json.Unmarshal([]byte(stdout), &m); err != nil {
				t.Fatal(err)
			}
			if m.ModelName != "Components" || m.ModelMetadata.Version != "3.0" || len(m.DataModel) != 1 {
				t.Fatalf("model header: %+v", m)
			}
			tb := m.DataModel[0]
			declared := map[string]bool{tb.KeyAttributes.PartitionKey.AttributeName: true}
			if tb.KeyAttributes.SortKey != nil {
				declared[tb.KeyAttributes.SortKey.AttributeName] = true
			}
			for _, a := range tb.NonKeyAttributes {
				declared[a.AttributeName] = true
			}
			if len(tb.TableData) != len(h.nodes) {
				t.Fatalf("TableData has %d items, want %d", len(tb.TableData), len(h.nodes))
			}
			for _, it := range tb.TableData {
				for a := range it {
					if !declared[a] {
						t.Errorf("TableData uses %q, which is not declared", a)
					}
				}
			}
			l, err := models.LoadModel(h.file)
			if err != nil {
				t.Fatal(err)
			}
			if len(tb.GlobalSecondaryIndexes) != len(l.Table().Indexes) {
				t.Fatalf("%d GlobalSecondaryIndexes, the model has %d", len(tb.GlobalSecondaryIndexes), len(l.Table().Indexes))
			}
			got := strings.ReplaceAll(stdout, m.ModelMetadata.DateCreated, "DATE")
			golden := filepath.Join("testdata", "golden", "workbench", name+".json")
			if *update {
				os.MkdirAll(filepath.Dir(golden), 0o755)
				os.WriteFile(golden, []byte(got), 0o644)
			}
			if want := readFile(t, golden); got != want {
				t.Fatalf("workbench model differs from %s (run with -update after a deliberate change):\n%s", golden, got)
			}
		})
	}
	// CloudFormation: one AWS::DynamoDB::Table resource, for a model and a
	// layout.
	for _, args := range [][]string{{"--model", handModels[0].file}, {"--model", handModels[3].file}, {"--layout", "adjacency"}} {
		stdout, stderr, code := run(t, nil, append([]string{"schema", "--format", "cloudformation", "--table", "my-parts"}, args...)...)
		var tmpl struct {
			Resources map[string]struct {
				Type       string
				Properties struct {
					TableName              string
					KeySchema              []any
					GlobalSecondaryIndexes []struct {
						Projection struct{ ProjectionType string }
					}
				}
			}
		}
		if code != 0 || json.Unmarshal([]byte(stdout), &tmpl) != nil || len(tmpl.Resources) != 1 {
			t.Fatalf("cloudformation %v: exit %d\n%s%s", args, code, stdout, stderr)
		}
		for _, r := range tmpl.Resources {
			if r.Type != "AWS::DynamoDB::Table" || r.Properties.TableName != "my-parts" || len(r.Properties.KeySchema) == 0 || len(r.Properties.GlobalSecondaryIndexes) == 0 {
				t.Fatalf("cloudformation %v: %+v", args, r)
			}
		}
	}
}

// TestModelSchemaCheck: writing into an existing table that does not have
// the model's shape lists every difference (keys, indexes, projections)
// and exits 2, writing nothing.
func TestModelSchemaCheck(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	h := handModels[0] // aws-components, GSI2 KEYS_ONLY
	wrong := h
	wrong.create = func(name string) *dynamodb.CreateTableInput {
		return &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
			AttributeDefinitions:   defs("ComponentId", "GraphId", "Path"),
			KeySchema:              keySchema("ComponentId", ""),
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{gsi("GSI2", "GraphId", "Path", types.ProjectionTypeAll)}}
	}
	table := handTable(t, client, wrong, nil)
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed.csv")
	os.WriteFile(seed, []byte(modelSeedCSV), 0o644)
	_, stderr, code := run(t, env, "import", "--in", seed, "--table", table, "--model", h.file, "--no-progress")
	if code != 2 || !strings.Contains(stderr, "index GSI1: missing") || !strings.Contains(stderr, "index GSI2: projects ALL, layout needs KEYS_ONLY") {
		t.Fatalf("import into a table of another shape: exit %d, want 2 listing both differences:\n%s", code, stderr)
	}
	if n := len(rawLines(t, client, table)); n != 0 {
		t.Fatalf("%d items written", n)
	}
	// The right shape, made by hand, passes the check.
	good := handTable(t, client, h, nil)
	if _, stderr, code := run(t, env, "import", "--in", seed, "--table", good, "--model", h.file, "--no-progress"); code != 0 {
		t.Fatalf("import into the model's table: exit %d\n%s", code, stderr)
	}

	// The closure model: a sort key of numbers where the model has text,
	// and GSI1 projecting every attribute.
	c := handModels[3]
	wrong.create = func(name string) *dynamodb.CreateTableInput {
		return &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("PK"), AttributeType: types.ScalarAttributeTypeS},
				{AttributeName: aws.String("SK"), AttributeType: types.ScalarAttributeTypeN}, {AttributeName: aws.String("GSI1PK"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:              keySchema("PK", "SK"),
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{gsi("GSI1", "GSI1PK", "SK", types.ProjectionTypeAll)}}
	}
	table = handTable(t, client, wrong, nil)
	_, stderr, code = run(t, env, "import", "--in", seed, "--table", table, "--model", c.file, "--no-progress")
	if code != 2 || !strings.Contains(stderr, "layout wants SK (S)") || !strings.Contains(stderr, "index GSI1: projects ALL") {
		t.Fatalf("import of the closure model into a table of another shape: exit %d, want 2 listing the sort key's type and GSI1's projection:\n%s", code, stderr)
	}
	if n := len(rawLines(t, client, table)); n != 0 {
		t.Fatalf("%d items written", n)
	}
}

// TestModelStoredBytesProjected: the dry run and bench count an index's
// copy of an item as the index projects it. aws-components' GSI2 is
// KEYS_ONLY, so it stores ComponentId, GraphId and Path of each of the
// five nodes, and GSI1 (ALL) the four non-roots whole; by hand, each
// attribute its name and value bytes:
//
//	table: CM1 14+12+7+12=45, CM2 14+11+12+11+14=62, CM4 14+11+12+15+10=62,
//	       CM8 14+11+12+19+10=66, CM3 14+11+12+11+11=59: 294
//	GSI1:  62+62+66+59 = 249
//	GSI2:  33+37+41+45+37 = 193
func TestModelStoredBytesProjected(t *testing.T) {
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed.csv")
	if err := os.WriteFile(seed, []byte(modelSeedCSV), 0o644); err != nil {
		t.Fatal(err)
	}
	model := "fixtures/models/aws-components.json"
	const items, bytes = 14, 294 + 249 + 193
	stdout, stderr, code := run(t, nil, "import", "--in", seed, "--model", model, "--dry-run", "--json")
	if code != 0 {
		t.Fatalf("dry run: exit %d: %s", code, stderr)
	}
	var dry struct {
		Plans []struct {
			StoredItems int64 `json:"stored_items"`
			StoredBytes int64 `json:"stored_bytes"`
		} `json:"plans"`
	}
	if err := json.Unmarshal([]byte(stdout), &dry); err != nil || len(dry.Plans) != 1 {
		t.Fatalf("dry run JSON: %v\n%s", err, stdout)
	}
	if d := dry.Plans[0]; d.StoredItems != items || d.StoredBytes != bytes {
		t.Errorf("dry run stores %d items, %d bytes; want %d, %d", d.StoredItems, d.StoredBytes, items, bytes)
	}

	out := filepath.Join(dir, "bench.json")
	if _, stderr, code := run(t, nil, "bench", "--in", seed, "--model", model, "--offline", "--out", out); code != 0 {
		t.Fatalf("bench: exit %d: %s", code, stderr)
	}
	type layoutRep struct {
		Layout  string `json:"layout"`
		Storage []struct {
			Index        string
			Items, Bytes int64
		} `json:"storage"`
	}
	var rep struct {
		Layouts []layoutRep `json:"layouts"`
	}
	if err := json.Unmarshal([]byte(readFile(t, out)), &rep); err != nil {
		t.Fatalf("bench JSON: %v", err)
	}
	i := slices.IndexFunc(rep.Layouts, func(l layoutRep) bool { return l.Layout == "model-aws-components" })
	if i < 0 {
		t.Fatalf("bench reports no model-aws-components: %+v", rep.Layouts)
	}
	want := map[string][2]int64{"": {5, 294}, "GSI1": {4, 249}, "GSI2": {5, 193}}
	for _, s := range rep.Layouts[i].Storage {
		if w := want[s.Index]; s.Items != w[0] || s.Bytes != w[1] {
			t.Errorf("bench: %q stores %d items, %d bytes; want %d, %d", s.Index, s.Items, s.Bytes, w[0], w[1])
		}
		delete(want, s.Index)
	}
	if len(want) != 0 {
		t.Errorf("bench reports no storage for %v", want)
	}
}

// TestClosureModelCopy: --closure-copy is honoured with a closure model. The
// closure model's table holds ancestor rows copying nothing: import with
// --closure-copy none writes exactly them; descendants read GSI1's keys and
// then the nodes' own rows (no BatchGetItem of the rows found, which the
// keys GSI1 projects make needless: 2 requests); verify and plan agree with
// the table under --closure-copy none, and plan without it (copy all)
// would rewrite every ancestor row. migrate --to-closure-copy none gives
// the same rows. --closure-copy with a model whose base is not closure is a
// usage error.
func TestClosureModelCopy(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed.csv")
	if err := os.WriteFile(seed, []byte(modelSeedCSV), 0o644); err != nil {
		t.Fatal(err)
	}
	h := handModels[3]
	if !strings.Contains(h.file, "closure") {
		t.Fatalf("handModels[3] is %s, want the closure model", h.file)
	}
	var want []layouts.Item
	ancestorRows := 0
	for _, row := range closureRows() {
		if row["SK"].(*types.AttributeValueMemberS).Value != "ANC#0000" {
			delete(row, "name")
			ancestorRows++
		}
		want = append(want, row)
	}
	m := []string{"--model", h.file, "--closure-copy", "none"}
	table := handTable(t, client, h, h.foreign)
	if _, stderr, code := run(t, env, append([]string{"import", "--in", seed, "--table", table, "--no-progress"}, m...)...); code != 0 {
		t.Fatalf("import --closure-copy none: exit %d\n%s", code, stderr)
	}
	sameLines(t, "after import --closure-copy none", rawLines(t, client, table), append(slices.Clone(want), h.foreign...))
	tm := append([]string{"--table", table}, m...)
	if got := queryIDs(t, env, append([]string{"descendants", "--id", "CM1"}, tm...)...); !slices.Equal(got, []string{"CM2@1", "CM3@1", "CM4@2", "CM8@3"}) {
		t.Fatalf("descendants of CM1: %v", got)
	}
	if got := queryIDs(t, env, append([]string{"ancestors", "--id", "CM8", "--min-depth", "2"}, tm...)...); !slices.Equal(got, []string{"CM1@3", "CM2@2"}) {
		t.Fatalf("ancestors of CM8 from 2: %v", got)
	}
	if _, stderr, code := run(t, env, append([]string{"query", "descendants", "--id", "CM1", "--stats"}, tm...)...); code != 0 || !strings.Contains(stderr, "2 requests") {
		t.Errorf("query descendants --stats: exit %d, want 2 requests (GSI1, then the own rows):\n%s", code, stderr)
	}
	if stdout, stderr, code := run(t, env, append([]string{"verify", "--in", seed}, tm...)...); code != 0 {
		t.Fatalf("verify --closure-copy none: exit %d\n%s%s", code, stdout, stderr)
	}
	if stdout, stderr, code := run(t, env, append([]string{"plan", "--in", seed, "--detailed-exitcode"}, tm...)...); code != 0 {
		t.Fatalf("plan --closure-copy none: exit %d, want no changes\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code := run(t, env, "plan", "--in", seed, "--json", "--table", table, "--model", h.file)
	if code != 0 {
		t.Fatalf("plan (copy all): exit %d\n%s", code, stderr)
	}
	if sum := parseSummary(t, stdout); sum.Total.Puts != int64(ancestorRows) || sum.Total.Deletes != 0 {
		t.Errorf("plan copying all: %d puts, %d deletes; want the %d ancestor rows put", sum.Total.Puts, sum.Total.Deletes, ancestorRows)
	}
	// migrate from the model's table, copying nothing, into a fresh one
	// of the model's that copies nothing too.
	back := handTable(t, client, h, nil)
	if stdout, stderr, code := run(t, env, "migrate", "--from-table", table, "--from-model", h.file, "--from-closure-copy", "none",
		"--to-table", back, "--to-model", h.file, "--to-closure-copy", "none", "--no-progress"); code != 0 {
		t.Fatalf("migrate --to-closure-copy none: exit %d\n%s%s", code, stdout, stderr)
	}
	sameLines(t, "migrated with --to-closure-copy none", rawLines(t, client, back), want)

	if _, stderr, code := run(t, env, "schema", "--table", "parts", "--model", "fixtures/models/single-table.json", "--closure-copy", "none"); code != 2 || !strings.Contains(stderr, "--closure-copy") {
		t.Errorf("--closure-copy with a path model: exit %d, want 2 naming --closure-copy:\n%s", code, stderr)
	}
}

// TestClosureCopyTypoWarned: --closure-copy naming an attribute no record
// has is warned of (a typo?) for the closure layout and for a closure
// model alike, and the load still runs.
func TestClosureCopyTypoWarned(t *testing.T) {
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed.csv")
	if err := os.WriteFile(seed, []byte(modelSeedCSV), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sel := range [][]string{{"--layout", "closure"}, {"--model", "fixtures/models/closure-single-table.json"}} {
		args := append([]string{"import", "--in", seed, "--out", filepath.Join(dir, "out-"+sel[0][2:]), "--closure-copy", "nmae"}, sel...)
		_, stderr, code := run(t, nil, args...)
		if code != 0 || !strings.Contains(stderr, `--closure-copy names "nmae", which no record of`) {
			t.Errorf("%v: exit %d, want 0 and the warning:\n%s", sel, code, stderr)
		}
	}
}

// requestsSaid returns the number the first submatch of pattern finds in
// text, or -1.
func requestsSaid(text, pattern string) int {
	m := regexp.MustCompile(pattern).FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return -1
	}
	return n
}
