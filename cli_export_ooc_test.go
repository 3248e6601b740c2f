package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
)

// exportChainDepth is the deep chain's depth in the hand-built table: far
// more levels than the doubling's rounds, so that a pass a level would
// show.
const exportChainDepth = 1500

// adjacencyProblems are raw items of an adjacency table that the export
// must place as SortRecords does: an orphan with a child, a cycle of two
// with a node below it, a node its own parent, a deep chain under a car,
// and values of every type.
func adjacencyProblems() []layouts.Item {
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
	items := []layouts.Item{
		node("orphan", "gone", "name", s("lost"), "qty", n("3")),
		node("orphan-kid", "orphan", "weight_kg", n("0.125")),
		node("cyc-a", "cyc-b", "name", s("a")),
		node("cyc-b", "cyc-a", "name", s("b")),
		node("cyc-below", "cyc-a"),
		node("self", "self", "flag", &types.AttributeValueMemberBOOL{Value: true}),
		node("typed", "CM1", "blob", &types.AttributeValueMemberB{Value: []byte{0, 1, 2, 255}},
			"nothing", &types.AttributeValueMemberNULL{Value: true},
			"tags", &types.AttributeValueMemberSS{Value: []string{"x", "y"}},
			"dims", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"h": n("1.5"), "w": n("2")}},
			"list", &types.AttributeValueMemberL{Value: []types.AttributeValue{s("p"), n("7")}},
			"qty", n("12345678901234567890")),
	}
	parent := "CM2"
	for i := range exportChainDepth {
		id := fmt.Sprintf("deep%05d", i)
		items = append(items, node(id, parent, "qty", n(fmt.Sprint(i))))
		parent = id
	}
	return items
}

// exportBoth exports with args in memory and out of core (forced, in a
// tiny budget) and fails unless the two files, and a CSV's types
// sidecars, are the same bytes and the warnings the same lines. It
// returns the out-of-core run's stderr.
func exportBoth(t *testing.T, name string, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	tmp := t.TempDir()
	mem := filepath.Join(dir, "mem-"+name)
	ooc := filepath.Join(dir, "ooc-"+name)
	_, memErr, code := run(t, nil, append([]string{"export", "--out", mem}, args...)...)
	if code != 0 {
		t.Fatalf("export in memory: exit %d: %s", code, memErr)
	}
	_, oocErr, code := run(t, nil, append(append([]string{"export", "--out", ooc}, args...), oocArgs(tmp)...)...)
	if code != 0 {
		t.Fatalf("export out of core: exit %d: %s", code, oocErr)
	}
	if !strings.Contains(oocErr, "sorted out of core") || strings.Contains(memErr, "sorted out of core") {
		t.Errorf("the runs do not say which sorted out of core:\n%s\n%s", memErr, oocErr)
	}
	a, err := os.ReadFile(mem)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(ooc)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) < 40 {
		t.Fatalf("the export in memory is only %d bytes: %s\n%s", len(a), a, memErr)
	}
	if !bytes.Equal(a, b) {
		at := 0
		for at < min(len(a), len(b)) && a[at] == b[at] {
			at++
		}
		t.Errorf("%s: out of core differs at byte %d of %d/%d:\nmem %q\nooc %q", name, at, len(a), len(b),
			a[max(0, at-80):min(len(a), at+80)], b[max(0, at-80):min(len(b), at+80)])
	}
	if strings.HasSuffix(name, ".csv") {
		ta, _ := os.ReadFile(records.TypesPath(mem))
		tb, _ := os.ReadFile(records.TypesPath(ooc))
		if len(ta) == 0 || !bytes.Equal(ta, tb) {
			t.Errorf("types sidecars differ: %q, %q", ta, tb)
		}
	}
	if w, g := warnings(memErr), warnings(oocErr); w != g {
		t.Errorf("warnings differ:\nmem:\n%s\nooc:\n%s", w, g)
	}
	emptyDir(t, tmp)
	return oocErr
}

func warnings(stderr string) string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "warning:") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestExportOutOfCoreMatchesInMemory exports tables forced out of core in
// a tiny --memory, and compares them byte for byte with the in-memory
// export: an adjacency table with items put by hand (an orphan, cycles, a
// chain 1,500 deep, every type) in every format, a subtree (--root), a
// prefix table built by hand with a duplicate id, the same with
// --path-ids (implied inner nodes), a table model's table with items
// that are not nodes, and a DynamoDB export (--in).
func TestExportOutOfCoreMatchesInMemory(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)

	t.Run("adjacency by hand", func(t *testing.T) {
		table := importFixture(t, endpoint, "adjacency")
		putItems(t, client, table, adjacencyProblems()...)
		common := []string{"--table", table, "--layout", "adjacency", "--endpoint-url", endpoint, "--segments", "1"}
		for _, name := range []string{"t.jsonl", "t.json", "t.csv", "t.parquet", "t.ddbjson", "t.jsonl.gz"} {
			stderr := exportBoth(t, name, common...)
			for _, w := range []string{"1 nodes have a parent that is not in the table (orphan)", "4 nodes are in a cycle"} {
				if !strings.Contains(stderr, w) {
					t.Errorf("%s: stderr lacks %q:\n%s", name, w, stderr)
				}
			}
		}
		exportBoth(t, "root.jsonl", append(common, "--root", "CM2")...)
		exportBoth(t, "root.csv", append(common, "--root", "CM2")...)
	})

	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	row := func(key, child string, attrs ...string) layouts.Item {
		it := layouts.Item{"Key": s(key), "Child": s(child)}
		for i := 0; i+1 < len(attrs); i += 2 {
			it[attrs[i]] = s(attrs[i+1])
		}
		return it
	}
	t.Run("prefix by hand with a duplicate id", func(t *testing.T) {
		table := prefixTable(t, client, []layouts.Item{
			row("¦A", "¦", "name", "a"), row("¦B", "¦", "name", "b"),
			row("¦A¦", "d"), row("¦A¦d", "¦", "name", "first d"),
			row("¦B¦", "d"), row("¦B¦d", "¦", "name", "second d"),
			row("¦A¦d¦e", "¦"), row("¦B¦d¦f", "¦", "name", "f"),
			row("¦gone¦lost", "¦", "name", "orphan"),
		})
		common := []string{"--table", table, "--layout", "prefix", "--endpoint-url", endpoint, "--segments", "1"}
		for _, name := range []string{"p.jsonl", "p.csv", "p.parquet"} {
			stderr := exportBoth(t, name, common...)
			if !strings.Contains(stderr, "share an id") {
				t.Errorf("no duplicate reported:\n%s", stderr)
			}
		}
	})

	t.Run("path ids", func(t *testing.T) {
		table := prefixTable(t, client, dynamotreeRows())
		common := []string{"--table", table, "--layout", "prefix", "--path-ids", "--endpoint-url", endpoint}
		exportBoth(t, "ids.jsonl", common...)
		exportBoth(t, "ids.csv", common...)
	})

	t.Run("model", func(t *testing.T) {
		table := handTable(t, client, slHand, append(slNodes(), slForeign()...))
		common := []string{"--table", table, "--model", slModel, "--endpoint-url", endpoint}
		exportBoth(t, "stores.jsonl", common...)
		exportBoth(t, "stores.csv", common...)
	})

	t.Run("DynamoDB export", func(t *testing.T) {
		files := filepath.Join(t.TempDir(), "files")
		args := append(append([]string{"import"}, orgArgs...), "--out", files, "--items-per-file", "20")
		if _, stderr, code := run(t, nil, args...); code != 0 {
			t.Fatalf("import --out: exit %d: %s", code, stderr)
		}
		exportBoth(t, "in.jsonl", "--in", files, "--layout", "path")
		exportBoth(t, "in.parquet", "--in", files, "--layout", "path")
	})
}

// TestExportOutOfCoreSignal: SIGINT or SIGTERM during the passes of an
// export out of core stops it within about a second, exit 130, with its
// temporary files removed and no output file.
func TestExportOutOfCoreSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: generates and exports 200,000 nodes")
	}
	files := filepath.Join(t.TempDir(), "files")
	if _, stderr, code := run(t, nil, "import", "--in", genShuffled(t, 200_000, "csv"), "--layout", "path", "--out", files); code != 0 {
		t.Fatalf("import --out: exit %d: %s", code, stderr)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			out := filepath.Join(t.TempDir(), "t.jsonl")
			args := append([]string{"export", "--in", files, "--layout", "path", "--out", out}, oocArgs(tmp)...)
			signalDuring(t, nil, sig, tmp, "treeport-export-*/run-*", "", args...)
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("the output is there after %v: %v", sig, err)
			}
		})
	}
}
