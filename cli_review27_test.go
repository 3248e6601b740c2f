package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// adjacencyHand creates an adjacency table (Id) and puts items in it.
func adjacencyHand(t *testing.T, client *dynamodb.Client, items []layouts.Item) string {
	t.Helper()
	h := handModel{create: func(name string) *dynamodb.CreateTableInput {
		return &dynamodb.CreateTableInput{TableName: aws.String(name), KeySchema: keySchema("Id", ""),
			AttributeDefinitions: defs("Id", "ParentId"), BillingMode: types.BillingModePayPerRequest,
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{gsi("ByParent", "ParentId", "Id", types.ProjectionTypeAll)}}
	}}
	return handTable(t, client, h, items)
}

// TestExportOutOfCoreProbes: inputs the first tests did not cover, each
// exported in memory and out of core, compared byte for byte.
func TestExportOutOfCoreProbes(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	node := func(id, parent string, attrs ...any) layouts.Item {
		it := layouts.Item{"Id": s(id)}
		if parent != "" {
			it["ParentId"] = s(parent)
		}
		for i := 0; i+1 < len(attrs); i += 2 {
			it[attrs[i].(string)] = attrs[i+1].(types.AttributeValue)
		}
		return it
	}
	long := strings.Repeat("é", 510)
	items := []layouts.Item{
		node("a", ""),
		node("a\x00", "a", "z_late", s("only here")),
		node("a|b", "a", "num", n("1e2")),
		node("a|", "a", "num", n("100")),
		node("ab", "a", "empty_m", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}},
			"empty_l", &types.AttributeValueMemberL{Value: []types.AttributeValue{}}, "empty_s", s("")),
		node("\u00ff\u4e16", "", "ns", &types.AttributeValueMemberNS{Value: []string{"1e2", "3", "-0.5"}},
			"bs", &types.AttributeValueMemberBS{Value: [][]byte{{0xff}, {0}, {1, 2}}}),
		node("😀", "\u00ff\u4e16", "nested", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{
				&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}, n("0.10"),
				&types.AttributeValueMemberNULL{Value: true}, &types.AttributeValueMemberBOOL{Value: false}}}}}),
		node(long, "a", "big", n("-1.0E-130")),
		node(long+"x", long),
		node("cy1", "cy2"), node("cy2", "cy1", "w", s("w")), node("cy3", "cy2"),
		node("with,comma\"quote\nnewline", "a", "col,comma", s("v\"q")),
	}
	table := adjacencyHand(t, client, items)
	common := []string{"--table", table, "--layout", "adjacency", "--endpoint-url", endpoint, "--segments", "1"}
	for _, name := range []string{"t.jsonl", "t.json", "t.csv", "t.parquet", "t.ddbjson"} {
		t.Run(name, func(t *testing.T) { exportBoth(t, name, common...) })
	}
	t.Run("root in a cycle", func(t *testing.T) {
		for _, name := range []string{"c.jsonl", "c.csv"} {
			exportBothCode(t, name, append(common, "--root", "cy2")...)
		}
	})
	t.Run("root deep", func(t *testing.T) {
		exportBoth(t, "r.csv", append(common, "--root", "a")...)
	})
}

// exportBothCode is exportBoth for runs that may fail: the exit codes,
// the error and warning lines and the files (or their absence) must be
// the same in memory and out of core.
func exportBothCode(t *testing.T, name string, args ...string) {
	t.Helper()
	dir := t.TempDir()
	tmp := t.TempDir()
	mem := filepath.Join(dir, "mem-"+name)
	ooc := filepath.Join(dir, "ooc-"+name)
	_, memErr, memCode := run(t, nil, append([]string{"export", "--no-progress", "--out", mem}, args...)...)
	_, oocErr, oocCode := run(t, nil, append(append([]string{"export", "--no-progress", "--out", ooc}, args...), oocArgs(tmp)...)...)
	if memCode != oocCode {
		t.Errorf("%s: exit %d in memory, %d out of core:\n%s\n%s", name, memCode, oocCode, memErr, oocErr)
	}
	lines := func(s string) string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "warning:") || strings.HasPrefix(l, "error:") || strings.HasPrefix(l, "treeport:") {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	if a, b := lines(memErr), strings.ReplaceAll(lines(oocErr), ooc, mem); a != b {
		t.Errorf("%s: stderr differs:\nmem:\n%s\nooc:\n%s", name, memErr, oocErr)
	}
	a, aErr := os.ReadFile(mem)
	b, bErr := os.ReadFile(ooc)
	if (aErr == nil) != (bErr == nil) || !bytes.Equal(a, b) {
		t.Errorf("%s: files differ (%v, %v):\nmem %q\nooc %q", name, aErr, bErr, a, b)
	}
	emptyDir(t, tmp)
}

// TestVerifyOutOfCoreProbes verifies files the first tests did not
// cover, in memory and out of core: numbers past DynamoDB's range or
// precision in a JSON Lines file, ids that are prefixes of each other
// (NUL, '|', unicode), empty maps and lists, and a CSV whose column
// appears late.
func TestVerifyOutOfCoreProbes(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	env := awsEnv(endpoint)
	client := ddblocal.Client(t, endpoint)
	dir := t.TempDir()
	base := writeLines(t, filepath.Join(dir, "base.jsonl"), []string{
		`{"id":"a","n":100,"m":{},"l":[]}`,
		`{"id":"a\u0000","parent_id":"a","n":1e2}`,
		`{"id":"a|","parent_id":"a","s":"x"}`,
		`{"id":"a|b","parent_id":"a|"}`,
		`{"id":"\u00e9","parent_id":"a","u":"\ud83d\ude00"}`,
	})
	table := ddblocal.TableName(t)
	dropTableLater(t, client, table)
	if _, stderr, code := run(t, env, "import", "--in", base, "--layout", "adjacency", "--table", table, "--create-table", "--no-progress"); code != 0 {
		t.Fatalf("import: exit %d\n%s", code, stderr)
	}
	cases := map[string][]string{
		"equal": {
			`{"id":"a","n":1E2,"m":{},"l":[]}`,
			`{"id":"a\u0000","parent_id":"a","n":100.0}`,
			`{"id":"a|","parent_id":"a","s":"x"}`,
			`{"id":"a|b","parent_id":"a|"}`,
			`{"id":"\u00e9","parent_id":"a","u":"\ud83d\ude00"}`,
		},
		"numbers past the range": {
			`{"id":"a","n":1e200,"m":{},"l":[]}`,
			`{"id":"a\u0000","parent_id":"a","n":1.00000000000000000000000000000000000000000000001}`,
			`{"id":"a|","parent_id":"a","s":"x","big":-1e-200}`,
			`{"id":"a|b","parent_id":"a|"}`,
			`{"id":"\u00e9","parent_id":"a","u":"\ud83d\ude00"}`,
		},
		"prefixes differ": {
			`{"id":"a","n":100,"m":{"k":{}},"l":[[]]}`,
			`{"id":"a\u0000\u0000","parent_id":"a","n":1e2}`,
			`{"id":"a|","parent_id":"a\u0000","s":"x"}`,
			`{"id":"\u00e9","parent_id":"a","u":"\ud83d\ude01"}`,
		},
	}
	for name, lines := range cases {
		t.Run(name, func(t *testing.T) {
			in := writeLines(t, filepath.Join(t.TempDir(), "in.jsonl"), lines)
			out, errText, code := sameVerify(t, env, "--in", in, "--table", table, "--layout", "adjacency")
			t.Logf("exit %d\n%s%s", code, out, errText)
		})
	}
	t.Run("csv column late", func(t *testing.T) {
		in := filepath.Join(t.TempDir(), "in.csv")
		os.WriteFile(in, []byte("id,parent_id,n,s,u\na,,100,,\n\"a|\",a,,x,\n\"a|b\",\"a|\",,,\n\u00e9,a,,,\U0001F600\n"), 0o644)
		sameVerify(t, env, "--in", in, "--table", table, "--layout", "adjacency")
	})
}

// TestExportOutOfCoreEmptyTables: an empty table, and a model's table of
// only items that are not its nodes, exported and verified in memory and
// out of core: the same files, messages and exit codes.
func TestExportOutOfCoreEmptyTables(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	empty := adjacencyHand(t, client, nil)
	foreign := handTable(t, client, slHand, slForeign())
	for _, name := range []string{"e.jsonl", "e.csv", "e.parquet", "e.json"} {
		exportBothCode(t, name, "--table", empty, "--layout", "adjacency", "--endpoint-url", endpoint)
		exportBothCode(t, name, "--table", foreign, "--model", slModel, "--endpoint-url", endpoint)
	}
	in := writeLines(t, filepath.Join(t.TempDir(), "in.jsonl"), []string{`{"id":"a"}`})
	_, _, code := sameVerify(t, env, "--in", in, "--table", empty, "--layout", "adjacency")
	if code != 1 {
		t.Errorf("verify against an empty table: exit %d, want 1", code)
	}
	sameVerify(t, env, "--in", in, "--table", foreign, "--model", slModel)
}

// TestExportOutOfCoreInEveryFormat exports a DynamoDB export (--in) of
// tricky records in every format, in memory and out of core.
func TestExportOutOfCoreInEveryFormat(t *testing.T) {
	dir := t.TempDir()
	in := writeLines(t, filepath.Join(dir, "in.jsonl"), []string{
		`{"id":"a","n":100,"m":{},"l":[],"late":null}`,
		`{"id":"a\u0000","parent_id":"a","n":1e2,"nested":{"x":[1,"y",{"z":true}]}}`,
		`{"id":"a|","parent_id":"a","s":"x,\"y\"\nz"}`,
		`{"id":"a|b","parent_id":"a|","n":-0.000001}`,
		`{"id":"\u00e9","parent_id":"a","u":"\ud83d\ude00"}`,
		`{"id":"z","parent_id":"a|b","late":"here"}`,
	})
	for _, layout := range []string{"adjacency", "path", "closure"} {
		files := filepath.Join(t.TempDir(), "files")
		var delim []string
		if layout == "path" {
			delim = []string{"--delimiter", "¦"}
		}
		if _, stderr, code := run(t, nil, append([]string{"import", "--in", in, "--layout", layout, "--out", files, "--items-per-file", "2"}, delim...)...); code != 0 {
			t.Fatalf("import --out: exit %d: %s", code, stderr)
		}
		for _, name := range []string{"t.jsonl", "t.json", "t.csv", "t.parquet", "t.ddbjson"} {
			t.Run(layout+"/"+name, func(t *testing.T) {
				exportBoth(t, name, append([]string{"--in", files, "--layout", layout}, delim...)...)
			})
		}
	}
}
