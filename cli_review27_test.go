package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
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
	_, memErr, memCode := run(t, nil, append([]string{"export", "--out", mem}, args...)...)
	_, oocErr, oocCode := run(t, nil, append(append([]string{"export", "--out", ooc}, args...), oocArgs(tmp)...)...)
	if strings.Contains(memErr, "--help") {
		t.Fatalf("%s: the command line is wrong, not what the runs compare: %s", name, memErr)
	}
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

// TestOutOfCoreLinksRandom: random inputs of the prefix layout's links
// (links to links, to missing ids, to themselves, in cycles, under bad
// links; duplicate ids, orphans, reserved attributes), imported in
// memory and out of core under --on-invalid=skip: the same problems, the
// same files.
func TestOutOfCoreLinksRandom(t *testing.T) {
	for seed := range 8 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(uint64(seed), 27))
			n := 60 + rng.IntN(200)
			id := func(i int) string { return fmt.Sprintf("n%d", i) }
			var b strings.Builder
			for i := range n {
				rec := map[string]any{"id": id(i)}
				if i > 0 {
					rec["parent_id"] = id(rng.IntN(i))
				}
				switch k := rng.IntN(40); {
				case k < 12:
					rec["link_to"] = id(rng.IntN(n))
				case k < 13:
					rec["link_to"] = "missing" + id(i)
				case k < 14:
					rec["parent_id"] = "gone"
				case k < 15:
					rec["Key"] = "reserved"
				case k < 16 && i > 1:
					rec["id"] = id(1 + rng.IntN(i-1)) // a duplicate id
				case k < 17:
					rec["link_to"] = 7
				}
				line, _ := json.Marshal(rec)
				b.Write(line)
				b.WriteByte('\n')
			}
			dir := t.TempDir()
			in := filepath.Join(dir, "in.jsonl")
			if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			tmp := t.TempDir()
			args := []string{"import", "--in", in, "--layout", "prefix", "--items-per-file", "7", "--on-invalid=skip"}
			memDir, oocDir := filepath.Join(dir, "mem"), filepath.Join(dir, "ooc")
			_, memErr, memCode := run(t, nil, append(args, "--out", memDir, "--rejects", memDir+"-rejects")...)
			_, oocErr, oocCode := run(t, nil, append(append(args, "--out", oocDir, "--rejects", oocDir+"-rejects"), oocArgs(tmp)...)...)
			if memCode != oocCode {
				t.Fatalf("exit %d out of core, %d in memory\n%s\n%s", oocCode, memCode, oocErr, memErr)
			}
			if got, want := problemLines(oocErr, in), problemLines(memErr, in); !slices.Equal(got, want) {
				t.Errorf("problems out of core:\n  %s\nin memory:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
			if !strings.Contains(readFile(t, memDir+"-rejects"), "link_to") {
				t.Errorf("no link's problem in memory: the case is not about them\n%s", memErr)
			}
			if memCode == 0 {
				sameFiles(t, memDir, oocDir)
				if got, want := sortedLines(readFile(t, oocDir+"-rejects")), sortedLines(readFile(t, memDir+"-rejects")); !slices.Equal(got, want) {
					t.Errorf("rejects differ:\nooc:\n  %s\nmem:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
				}
			}
			emptyDir(t, tmp)
		})
	}
}

// TestExportOutOfCoreRandom exports random DynamoDB JSON files of the
// adjacency layout (orphans, cycles, self-parents, long shared prefixes;
// duplicate ids when dups) in memory and out of core in several formats.
func TestExportOutOfCoreRandom(t *testing.T) {
	for seed := range 6 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 99))
			n := 200 + rng.IntN(600)
			id := func(i int) string { return fmt.Sprintf("%s%d", strings.Repeat("p", rng.IntN(12)), i) }
			ids := make([]string, n)
			for i := range n {
				ids[i] = id(i)
				if seed%2 == 1 && i > 0 && rng.IntN(15) == 0 {
					ids[i] = ids[rng.IntN(i)]
				}
			}
			var b strings.Builder
			for i := range n {
				item := map[string]any{"Id": map[string]string{"S": ids[i]}}
				switch k := rng.IntN(20); {
				case k < 14 && i > 0:
					item["ParentId"] = map[string]string{"S": ids[rng.IntN(i)]}
				case k < 16:
					item["ParentId"] = map[string]string{"S": ids[rng.IntN(n)]}
				case k < 17:
					item["ParentId"] = map[string]string{"S": "gone" + ids[i]}
				}
				if rng.IntN(3) == 0 {
					item[fmt.Sprintf("a%d", rng.IntN(5))] = map[string]string{"N": fmt.Sprint(rng.IntN(1000))}
				}
				line, _ := json.Marshal(map[string]any{"Item": item})
				b.Write(line)
				b.WriteByte('\n')
			}
			in := filepath.Join(t.TempDir(), "in.json")
			if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"r.jsonl", "r.csv", "r.parquet"} {
				exportBoth(t, name, "--in", in, "--layout", "adjacency")
			}
		})
	}
}

// TestVerifyOutOfCoreTableDuplicates verifies files against a prefix
// table built by hand with an id twice and a link to a node not in it,
// in memory and out of core.
func TestVerifyOutOfCoreTableDuplicates(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	row := func(key, child string, attrs ...string) layouts.Item {
		it := layouts.Item{"Key": s(key), "Child": s(child)}
		for i := 0; i+1 < len(attrs); i += 2 {
			it[attrs[i]] = s(attrs[i+1])
		}
		return it
	}
	table := prefixTable(t, client, []layouts.Item{
		row("¦A", "¦", "name", "a"), row("¦B", "¦", "name", "b"),
		row("¦A¦", "d"), row("¦A¦d", "¦", "name", "first d"),
		row("¦B¦", "d"), row("¦B¦d", "¦", "name", "second d"),
		row("¦A¦", "l"), row("¦A¦l", "¦", "¦", "¦nowhere"),
		row("¦gone¦lost", "¦", "name", "orphan"),
	})
	for k, lines := range [][]string{
		{`{"id":"A","name":"a"}`, `{"id":"d","parent_id":"A","name":"first d"}`},
		{`{"id":"A","name":"a"}`, `{"id":"B","name":"b"}`, `{"id":"d","parent_id":"B","name":"second d"}`, `{"id":"l","parent_id":"A"}`},
	} {
		in := writeLines(t, filepath.Join(t.TempDir(), fmt.Sprintf("in%d.jsonl", k)), lines)
		out, errText, code := sameVerify(t, env, "--in", in, "--table", table, "--layout", "prefix")
		if code != 1 {
			t.Errorf("exit %d, want 1:\n%s%s", code, out, errText)
		}
	}
}
