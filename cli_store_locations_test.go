package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// Alex DeBrie's store locations, built by hand: the table keyed by
// StoreNumber, the index StoreLocationIndex by Country and
// StateCityPostcode. Only stores are items; PORTLAND is a city of OR and
// of ME.
const slModel = "fixtures/models/store-locations.json"

func slCreate(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions:   defs("StoreNumber", "Country", "StateCityPostcode"),
		KeySchema:              keySchema("StoreNumber", ""),
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{gsi("StoreLocationIndex", "Country", "StateCityPostcode", types.ProjectionTypeAll)}}
}

func slStore(number, country, scp, name string) layouts.Item {
	return layouts.Item{"StoreNumber": s(number), "Country": s(country), "StateCityPostcode": s(scp), "Name": s(name)}
}

func slNodes() []layouts.Item {
	return []layouts.Item{
		slStore("1001", "USA", "WA#SEATTLE#98101", "Pike Place"),
		slStore("1002", "USA", "WA#SEATTLE#98101", "Westlake"),
		slStore("1003", "USA", "WA#SEATTLE#98109", "Queen Anne"),
		slStore("1004", "USA", "OR#PORTLAND#97201", "Pioneer Square"),
		slStore("1005", "USA", "ME#PORTLAND#04101", "Old Port"),
		slStore("2001", "CAN", "BC#VANCOUVER#V6B", "Gastown"),
	}
}

// slForeign is an item that is not a store: no location, so not a node.
func slForeign() []layouts.Item {
	return []layouts.Item{{"StoreNumber": s("HQ"), "Kind": s("office"), "Name": s("Head office")}}
}

// slSeedJSONL is slNodes as records: path ids, the inner nodes without
// attributes.
const slSeedJSONL = `{"id":"USA"}
{"id":"USA#WA","parent_id":"USA"}
{"id":"USA#WA#SEATTLE","parent_id":"USA#WA"}
{"id":"USA#WA#SEATTLE#98101","parent_id":"USA#WA#SEATTLE"}
{"id":"USA#WA#SEATTLE#98101#1001","parent_id":"USA#WA#SEATTLE#98101","Name":"Pike Place"}
{"id":"USA#WA#SEATTLE#98101#1002","parent_id":"USA#WA#SEATTLE#98101","Name":"Westlake"}
{"id":"USA#WA#SEATTLE#98109","parent_id":"USA#WA#SEATTLE"}
{"id":"USA#WA#SEATTLE#98109#1003","parent_id":"USA#WA#SEATTLE#98109","Name":"Queen Anne"}
{"id":"USA#OR","parent_id":"USA"}
{"id":"USA#OR#PORTLAND","parent_id":"USA#OR"}
{"id":"USA#OR#PORTLAND#97201","parent_id":"USA#OR#PORTLAND"}
{"id":"USA#OR#PORTLAND#97201#1004","parent_id":"USA#OR#PORTLAND#97201","Name":"Pioneer Square"}
{"id":"USA#ME","parent_id":"USA"}
{"id":"USA#ME#PORTLAND","parent_id":"USA#ME"}
{"id":"USA#ME#PORTLAND#04101","parent_id":"USA#ME#PORTLAND"}
{"id":"USA#ME#PORTLAND#04101#1005","parent_id":"USA#ME#PORTLAND#04101","Name":"Old Port"}
{"id":"CAN"}
{"id":"CAN#BC","parent_id":"CAN"}
{"id":"CAN#BC#VANCOUVER","parent_id":"CAN#BC"}
{"id":"CAN#BC#VANCOUVER#V6B","parent_id":"CAN#BC#VANCOUVER"}
{"id":"CAN#BC#VANCOUVER#V6B#2001","parent_id":"CAN#BC#VANCOUVER#V6B","Name":"Gastown"}
`

var slHand = handModel{file: slModel, create: slCreate}

// slQuery runs a query and returns "id@depth" of its answer, "+Name" when
// the node has its attribute, sorted.
func slQuery(t *testing.T, env []string, args ...string) []string {
	t.Helper()
	return queryAnswer(t, env, args, func(q queryLine, line string) string {
		l := q.ID + "@" + string(rune('0'+q.RelativeDepth))
		if n := asStr(q.Attributes["Name"]); n != "" {
			l += "+" + n
		}
		return l
	})
}

// TestStoreLocationsModel runs every command that takes a model against
// the store locations table built by hand: the countries, states, cities
// and postcodes are implicit nodes, PORTLAND is two nodes, the head
// office's item (no location) is never a node and stays byte for byte.
func TestStoreLocationsModel(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	seed := writeText(t, dir, "seed.jsonl", slSeedJSONL)
	model := []string{"--model", slModel}
	all := append(slNodes(), slForeign()...)
	table := handTable(t, client, slHand, all)
	tm := append([]string{"--table", table}, model...)

	t.Run("import", func(t *testing.T) {
		imported := handTable(t, client, slHand, slForeign())
		if _, stderr, code := run(t, env, append([]string{"import", "--in", seed, "--table", imported, "--no-progress"}, model...)...); code != 0 {
			t.Fatalf("import: exit %d\n%s", code, stderr)
		}
		sameLines(t, "after import", rawLines(t, client, imported), all)
		stdout, stderr, code := run(t, env, append([]string{"import", "--in", seed, "--dry-run", "--json"}, model...)...)
		if code != 0 || !strings.Contains(strings.ReplaceAll(stdout, " ", ""), `"items":6`) {
			t.Errorf("import --dry-run: exit %d, want 6 items (21 nodes, 6 stores):\n%s%s", code, stdout, stderr)
		}
		// A city given attributes: the model cannot hold them.
		bad := writeText(t, dir, "bad.jsonl", strings.Replace(slSeedJSONL, `{"id":"USA#OR#PORTLAND","parent_id":"USA#OR"}`, `{"id":"USA#OR#PORTLAND","parent_id":"USA#OR","Name":"Rose City"}`, 1))
		if _, stderr, code := run(t, env, append([]string{"import", "--in", bad, "--table", imported, "--no-progress"}, model...)...); code != 2 ||
			!strings.Contains(stderr, `bad.jsonl:10: id "USA#OR#PORTLAND"`) || !strings.Contains(stderr, "cannot hold attributes") {
			t.Errorf("import of a city with attributes: exit %d\n%s", code, stderr)
		}
		sameLines(t, "after the refused import", rawLines(t, client, imported), all)
	})

	t.Run("export verify", func(t *testing.T) {
		out := filepath.Join(dir, "stores.jsonl")
		_, stderr, code := run(t, env, append([]string{"export", "--out", out}, tm...)...)
		if code != 0 {
			t.Fatalf("export: exit %d\n%s", code, stderr)
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(readFile(t, out)), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatal(err)
			}
			got = append(got, asStr(rec["id"])+"<"+asStr(rec["parent_id"])+":"+asStr(rec["Name"]))
		}
		sort.Strings(got)
		var want []string
		for _, line := range strings.Split(strings.TrimSpace(slSeedJSONL), "\n") {
			var rec map[string]any
			json.Unmarshal([]byte(line), &rec)
			want = append(want, asStr(rec["id"])+"<"+asStr(rec["parent_id"])+":"+asStr(rec["Name"]))
		}
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Fatalf("export:\n got  %v\n want %v", got, want)
		}
		if stdout, stderr, code := run(t, env, append([]string{"verify", "--in", seed}, tm...)...); code != 0 {
			t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
		}
	})

	t.Run("query", func(t *testing.T) {
		for _, q := range []struct {
			args []string
			want []string
		}{
			{[]string{"get", "--id", "USA#WA#SEATTLE#98101#1001"}, []string{"USA#WA#SEATTLE#98101#1001@0+Pike Place"}},
			{[]string{"get", "--id", "USA#ME#PORTLAND"}, []string{"USA#ME#PORTLAND@0"}},
			{[]string{"get", "--id", "CAN"}, []string{"CAN@0"}},
			{[]string{"children", "--id", "USA"}, []string{"USA#ME@1", "USA#OR@1", "USA#WA@1"}},
			{[]string{"children", "--id", "USA#WA#SEATTLE"}, []string{"USA#WA#SEATTLE#98101@1", "USA#WA#SEATTLE#98109@1"}},
			{[]string{"children", "--id", "USA#WA#SEATTLE#98101"}, []string{"USA#WA#SEATTLE#98101#1001@1+Pike Place", "USA#WA#SEATTLE#98101#1002@1+Westlake"}},
			{[]string{"children", "--id", "USA#WA#SEATTLE#98101#1001"}, nil},
			{[]string{"descendants", "--id", "USA#OR"}, []string{"USA#OR#PORTLAND#97201#1004@3+Pioneer Square", "USA#OR#PORTLAND#97201@2", "USA#OR#PORTLAND@1"}},
			{[]string{"descendants", "--id", "USA", "--max-depth", "2"}, []string{"USA#ME#PORTLAND@2", "USA#ME@1", "USA#OR#PORTLAND@2", "USA#OR@1", "USA#WA#SEATTLE@2", "USA#WA@1"}},
			{[]string{"ancestors", "--id", "USA#ME#PORTLAND#04101#1005"}, []string{"USA#ME#PORTLAND#04101@1", "USA#ME#PORTLAND@2", "USA#ME@3", "USA@4"}},
		} {
			if got := slQuery(t, env, append(q.args, tm...)...); !slices.Equal(got, q.want) {
				t.Errorf("query %v:\n got  %v\n want %v", q.args, got, q.want)
			}
		}
		for _, id := range []string{"USA#CA", "USA#OR#PORTLAND#97201#1005", "HQ", "MEX"} {
			if _, stderr, code := run(t, env, append([]string{"query", "get", "--id", id}, tm...)...); code == 0 || !strings.Contains(stderr, "not in table") {
				t.Errorf("query get %q: exit %d\n%s", id, code, stderr)
			}
		}
	})

	t.Run("schema", func(t *testing.T) {
		for _, format := range []string{"json", "workbench", "cloudformation"} {
			stdout, stderr, code := run(t, nil, append([]string{"schema", "--table", "Stores", "--format", format, "--in", seed}, model...)...)
			if code != 0 || !strings.Contains(stdout, "StoreLocationIndex") || !strings.Contains(stdout, "StateCityPostcode") {
				t.Errorf("schema --format %s: exit %d\n%s%s", format, code, stdout, stderr)
			}
			if format == "workbench" && !strings.Contains(stdout, "WA#SEATTLE#98101") {
				t.Errorf("schema --format workbench: no store as a sample item:\n%s", stdout)
			}
		}
	})

	t.Run("bench", func(t *testing.T) {
		out := filepath.Join(dir, "bench.json")
		stdout, stderr, code := run(t, env, append([]string{"bench", "--in", seed, "--out", out}, model...)...)
		if code != 0 {
			t.Fatalf("bench: exit %d\n%s%s", code, stdout, stderr)
		}
		if b := readFile(t, out); !strings.Contains(b, "model-store-locations") {
			t.Errorf("bench report does not name the model:\n%s", b)
		}
	})

	t.Run("migrate both ways", func(t *testing.T) { slMigrate(t, client, env, table, all) })

	t.Run("plan apply edit", func(t *testing.T) { slPlanApplyEdit(t, client, env, dir, model, all) })

	t.Run("follow", func(t *testing.T) { slFollow(t, client, env) })

	if got := rawLines(t, client, table); !slices.Equal(got, itemLines(all)) {
		t.Fatalf("the table read by export, query, verify, schema and migrate changed")
	}
}

// slFollow: migrate --follow from the store table with a stream into a
// path table with path ids: a store opened in a new country is copied,
// with its implicit country, state, city and postcode.
func slFollow(t *testing.T, client *dynamodb.Client, env []string) {
	create := func(name string) *dynamodb.CreateTableInput {
		in := slCreate(name)
		in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}
		return in
	}
	src := handTable(t, client, handModel{file: slModel, create: create}, slNodes())
	dest := ddblocal.TableName(t)
	dropTableLater(t, client, dest)
	ck := filepath.Join(t.TempDir(), "ck.json")
	args := []string{"migrate", "--from-table", src, "--from-model", slModel,
		"--to-table", dest, "--to-layout", "path", "--to-path-ids", "--to-implicit-inner", "--to-delimiter", "#",
		"--create-table", "--follow", "--follow-idle", "3s", "--checkpoint", ck, "--no-progress",
		"--endpoint-url", envValue(env, "TREEPORT_ENDPOINT_URL")}
	cmd, out := startFollower(t, args)
	waitForOutput(t, cmd, out, "following the stream")
	putItems(t, client, src, slStore("3001", "MEX", "CDMX#CUAUHTEMOC#06000", "Centro"))
	followerExact(t, cmd, out)
	var ids []string
	for _, it := range scanTable(t, client, dest) {
		ids = append(ids, valueOf(it["Id"]))
	}
	sort.Strings(ids)
	want := []string{"CAN#BC#VANCOUVER#V6B#2001", "MEX#CDMX#CUAUHTEMOC#06000#3001", "USA#ME#PORTLAND#04101#1005", "USA#OR#PORTLAND#97201#1004",
		"USA#WA#SEATTLE#98101#1001", "USA#WA#SEATTLE#98101#1002", "USA#WA#SEATTLE#98109#1003"}
	if !slices.Equal(ids, want) {
		t.Fatalf("followed copy:\n got  %v\n want %v", ids, want)
	}
}

// slMigrate migrates the store table into every layout (adjacency
// without implicit inner nodes) and back into a table holding the head
// office: the same items, byte for byte.
func slMigrate(t *testing.T, client *dynamodb.Client, env []string, table string, all []layouts.Item) {
	for _, layout := range layouts.Names() {
		// adjacency takes no implicit inner nodes: each gets an item.
		implicit := []string{"--implicit-inner"}
		if layout == layouts.AdjacencyName {
			implicit = nil
		}
		mid := ddblocal.TableName(t)
		dropTableLater(t, client, mid)
		args := append([]string{"migrate", "--from-table", table, "--from-model", slModel, "--to-table", mid, "--create-table", "--no-progress",
			"--to-layout", layout, "--to-path-ids", "--to-delimiter", "#"}, prefixed("--to-", implicit)...)
		if stdout, stderr, code := run(t, env, args...); code != 0 {
			t.Fatalf("migrate into %s: exit %d\n%s%s", layout, code, stdout, stderr)
		}
		back := handTable(t, client, slHand, slForeign())
		from := append([]string{"migrate", "--from-table", mid, "--from-layout", layout, "--from-path-ids", "--from-delimiter", "#",
			"--to-table", back, "--to-model", slModel, "--no-progress"}, prefixed("--from-", implicit)...)
		if stdout, stderr, code := run(t, env, from...); code != 0 {
			t.Fatalf("migrate back from %s: exit %d\n%s%s", layout, code, stdout, stderr)
		}
		sameLines(t, "migrated back from "+layout, rawLines(t, client, back), all)
	}
}

// slPlanApplyEdit applies a snapshot to a copy of the store table and
// edits it: stores come and go, a city given attributes is refused.
func slPlanApplyEdit(t *testing.T, client *dynamodb.Client, env []string, dir string, model []string, all []layouts.Item) {
	work := handTable(t, client, slHand, all)
	wm := append([]string{"--table", work}, model...)
	// 1003 goes (and with it 98109); a store comes in a new city.
	text := strings.Replace(slSeedJSONL, `{"id":"USA#WA#SEATTLE#98109","parent_id":"USA#WA#SEATTLE"}`+"\n"+`{"id":"USA#WA#SEATTLE#98109#1003","parent_id":"USA#WA#SEATTLE#98109","Name":"Queen Anne"}`+"\n", "", 1)
	text += `{"id":"USA#WA#TACOMA","parent_id":"USA#WA"}` + "\n" + `{"id":"USA#WA#TACOMA#98402","parent_id":"USA#WA#TACOMA"}` + "\n" +
		`{"id":"USA#WA#TACOMA#98402#1006","parent_id":"USA#WA#TACOMA#98402","Name":"Pacific Ave"}` + "\n"
	snap := writeText(t, dir, "snap.jsonl", text)
	if stdout, stderr, code := run(t, env, append([]string{"apply", "--in", snap, "--no-progress", "--allow-mass-delete"}, wm...)...); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, stdout, stderr)
	}
	if stdout, stderr, code := run(t, env, append([]string{"plan", "--in", snap, "--detailed-exitcode"}, wm...)...); code != 0 {
		t.Fatalf("plan after apply: exit %d\n%s%s", code, stdout, stderr)
	}
	n := slNodes()
	want := []layouts.Item{n[0], n[1], n[3], n[4], n[5], slStore("1006", "USA", "WA#TACOMA#98402", "Pacific Ave")}
	sameLines(t, "after apply", rawLines(t, client, work), append(slices.Clone(want), slForeign()...))

	// Edit: a store renamed, another gone; a city given attributes
	// is refused, nothing written.
	// Maine's only store goes, then its postcode, city and state
	// (each left without a store would be a leaf: a store).
	ops := writeText(t, dir, "ops.jsonl", `{"op":"set","id":"USA#WA#SEATTLE#98101#1002","attributes":{"Name":"Westlake Center"}}`+"\n"+
		`{"op":"delete","id":"USA#ME#PORTLAND#04101#1005"}`+"\n"+`{"op":"delete","id":"USA#ME#PORTLAND#04101"}`+"\n"+
		`{"op":"delete","id":"USA#ME#PORTLAND"}`+"\n"+`{"op":"delete","id":"USA#ME"}`+"\n")
	if stdout, stderr, code := run(t, env, append([]string{"edit", "--ops", ops, "--no-progress"}, wm...)...); code != 0 {
		t.Fatalf("edit: exit %d\n%s%s", code, stdout, stderr)
	}
	want = []layouts.Item{n[0], slStore("1002", "USA", "WA#SEATTLE#98101", "Westlake Center"), n[3], n[5], want[5]}
	sameLines(t, "after edit", rawLines(t, client, work), append(slices.Clone(want), slForeign()...))
	city := writeText(t, dir, "city.jsonl", `{"op":"set","id":"USA#OR#PORTLAND","attributes":{"Name":"Rose City"}}`+"\n")
	if _, stderr, code := run(t, env, append([]string{"edit", "--ops", city, "--no-progress"}, wm...)...); code != 2 || !strings.Contains(stderr, "USA#OR#PORTLAND") {
		t.Errorf("edit giving a city attributes: exit %d, want 2 naming it\n%s", code, stderr)
	}
	sameLines(t, "after the refused edit", rawLines(t, client, work), append(slices.Clone(want), slForeign()...))
	if got := slQuery(t, env, append([]string{"children", "--id", "USA"}, wm...)...); !slices.Equal(got, []string{"USA#OR@1", "USA#WA@1"}) {
		t.Errorf("after edit: children of USA %v (ME has no store left)", got)
	}
}
