package exporter_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/internal/spill"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// oocExportItems are adjacency items as a DynamoDB export might hold
// them: a random forest with values of every type, an id twice (under
// two parents), an orphan, a cycle with a tree below it, and a chain
// 3,000 deep.
func oocExportItems() []layouts.Item {
	rng := rand.New(rand.NewPCG(27, 2))
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	node := func(id, parent string) layouts.Item {
		it := layouts.Item{"Id": s(id)}
		if parent != "" {
			it["ParentId"] = s(parent)
		}
		return it
	}
	var items []layouts.Item
	for i := range 2000 {
		parent := ""
		if i > 0 && rng.IntN(20) > 0 {
			parent = fmt.Sprintf("r%d", rng.IntN(i))
		}
		it := node(fmt.Sprintf("r%d", i), parent)
		switch i % 5 {
		case 0:
			it["name"] = s(fmt.Sprintf("name %d, \"quoted\"", i))
		case 1:
			it["size"] = n(fmt.Sprint(rng.IntN(1e6)))
		case 2:
			it["size"] = n(fmt.Sprintf("%d.%03d", rng.IntN(100), rng.IntN(1000)))
			it["ok"] = &types.AttributeValueMemberBOOL{Value: i%2 == 0}
		case 3:
			it["meta"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"a": n("1"), "b": s("x")}}
			it["list"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{s("p"), n("2")}}
		case 4:
			it["blob"] = &types.AttributeValueMemberB{Value: []byte{byte(i), 0, 255}}
			it["none"] = &types.AttributeValueMemberNULL{Value: true}
		}
		items = append(items, it)
	}
	items = append(items,
		node("r7", "r3"), node("orphan", "gone"), node("orphan-kid", "orphan"),
		node("cyc-a", "cyc-b"), node("cyc-b", "cyc-a"), node("cyc-c", "cyc-b"), node("self", "self"))
	parent := "r1"
	for i := range 3000 {
		id := fmt.Sprintf("deep%05d", i)
		items = append(items, node(id, parent))
		parent = id
	}
	rng.Shuffle(len(items), func(a, b int) { items[a], items[b] = items[b], items[a] })
	return items
}

// TestExportOutOfCoreFromExport exports a DynamoDB export in every format
// in memory and forced out of core in a tiny budget, and compares the
// files byte for byte, and their checks.
func TestExportOutOfCoreFromExport(t *testing.T) {
	l := mustLayout(t, layouts.AdjacencyName, layouts.Options{})
	dir := filepath.Join(t.TempDir(), "export")
	writeExportDir(t, dir, oocExportItems(), 700)
	for _, name := range []string{"t.jsonl", "t.json", "t.ddbjson", "t.csv", "t.parquet", "t.csv.zst"} {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			tmp := t.TempDir()
			mem, err := exporter.Export(context.Background(), exporter.ExportOptions{Layout: l, In: dir, Out: filepath.Join(out, "mem-"+name)})
			if err != nil {
				t.Fatal(err)
			}
			var phases []string
			ooc, err := exporter.Export(context.Background(), exporter.ExportOptions{Layout: l, In: dir, Out: filepath.Join(out, "ooc-"+name),
				OutOfCore: &exporter.ExportOutOfCore{Memory: 1 << 20, TmpDir: tmp, Force: true,
					OnPhase: func(p string, _, _ int64) { phases = append(phases, p) }}})
			if err != nil {
				t.Fatal(err)
			}
			if !ooc.OutOfCore || mem.OutOfCore || ooc.Nodes != mem.Nodes || mem.Nodes != 5007 {
				t.Errorf("nodes %d (out of core %v), in memory %d (%v)", ooc.Nodes, ooc.OutOfCore, mem.Nodes, mem.OutOfCore)
			}
			if fmt.Sprint(ooc.Forest) != fmt.Sprint(mem.Forest) || mem.Forest.InCycles != 4 || mem.Forest.Duplicates != 2 || mem.Forest.Orphans != 1 {
				t.Errorf("forest %+v, in memory %+v", ooc.Forest, mem.Forest)
			}
			if ooc.Types != mem.Types {
				t.Errorf("types %q, in memory %q", ooc.Types, mem.Types)
			}
			a, _ := os.ReadFile(filepath.Join(out, "mem-"+name))
			b, _ := os.ReadFile(filepath.Join(out, "ooc-"+name))
			if len(a) < 1000 || !bytes.Equal(a, b) {
				t.Errorf("out of core: %d bytes, in memory %d, not the same", len(b), len(a))
			}
			if !strings.Contains(strings.Join(phases, "\n"), "ranking the tour") {
				t.Errorf("no ranking phase among %q", phases)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("%d files left in the tmp dir", len(left))
			}
		})
	}
}

// TestExportOutOfCoreRefusesTmpDir: a --tmp-dir without the room the
// passes need, or that cannot be written, is a usage error before
// anything is read.
func TestExportOutOfCoreRefusesTmpDir(t *testing.T) {
	l := mustLayout(t, layouts.AdjacencyName, layouts.Options{})
	dir := filepath.Join(t.TempDir(), "export")
	writeExportDir(t, dir, oocExportItems(), 700)
	export := func(tmp string) error {
		_, err := exporter.Export(context.Background(), exporter.ExportOptions{Layout: l, In: dir, Out: filepath.Join(t.TempDir(), "t.jsonl"),
			OutOfCore: &exporter.ExportOutOfCore{Memory: 1 << 20, TmpDir: tmp, Force: true}})
		return err
	}
	free := spill.FreeBytes
	spill.FreeBytes = func(string) (int64, bool) { return 1000, true }
	err := export(t.TempDir())
	spill.FreeBytes = free
	if !errors.Is(err, ddbwrite.ErrUsage) || !strings.Contains(err.Error(), "has 1000 B free") || !strings.Contains(err.Error(), "need about") {
		t.Errorf("a full tmp dir: %v", err)
	}
	ro := t.TempDir()
	os.Chmod(ro, 0o500)
	defer os.Chmod(ro, 0o700)
	if os.Getuid() != 0 {
		if err := export(ro); !errors.Is(err, ddbwrite.ErrUsage) || !strings.Contains(err.Error(), "--tmp-dir") {
			t.Errorf("an unwritable tmp dir: %v", err)
		}
	}
}

// failingDescribe is a DynamoDB Local client whose DescribeTable fails
// (a role without dynamodb:DescribeTable): its Scan and Query work.
type failingDescribe struct{ *dynamodb.Client }

func (failingDescribe) DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return nil, errors.New("AccessDeniedException: not authorized to perform dynamodb:DescribeTable")
}

// TestExportUnknownSizeGoesOutOfCore: a table whose DescribeTable fails
// is not read as one that fits (a size of 0): it is exported out of core,
// with a warning that says why, to the same bytes as in memory.
func TestExportUnknownSizeGoesOutOfCore(t *testing.T) {
	l := mustLayout(t, layouts.AdjacencyName, layouts.Options{})
	var recs []*transform.Record
	for i := range 500 {
		parent := ""
		if i > 0 {
			parent = fmt.Sprintf("n%03d", i/3)
		}
		recs = append(recs, &transform.Record{ID: fmt.Sprintf("n%03d", i), Parent: parent})
	}
	client := localClient(t)
	table := loadTable(t, client, l, recs)
	out := t.TempDir()
	export := func(name string, c exporter.QueryAPI, ooc *exporter.ExportOutOfCore) (exporter.ExportStats, []byte) {
		t.Helper()
		path := filepath.Join(out, name)
		st, err := exporter.Export(context.Background(), exporter.ExportOptions{Layout: l, Client: c, Table: table, Out: path, OutOfCore: ooc})
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return st, b
	}
	memSt, mem := export("mem.jsonl", client, nil)
	var warned []string
	started := false
	oocSt, ooc := export("ooc.jsonl", failingDescribe{client}, &exporter.ExportOutOfCore{Memory: 1 << 30, TmpDir: t.TempDir(),
		Warn: func(s string) { warned = append(warned, s) }, OnStart: func() { started = true }})
	if memSt.OutOfCore || !oocSt.OutOfCore || !started {
		t.Errorf("out of core: in memory %v, with DescribeTable failing %v (started %v); want false, true", memSt.OutOfCore, oocSt.OutOfCore, started)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "DescribeTable") || !strings.Contains(warned[0], "out of core") {
		t.Errorf("warnings %q; want one that names DescribeTable's failure and the out-of-core export", warned)
	}
	if len(mem) == 0 || !bytes.Equal(mem, ooc) {
		t.Errorf("out of core %d bytes, in memory %d: not the same", len(ooc), len(mem))
	}
	// The same client that can describe the table exports it in memory.
	if st, _ := export("mem2.jsonl", client, &exporter.ExportOutOfCore{Memory: 1 << 30, TmpDir: t.TempDir()}); st.OutOfCore {
		t.Errorf("a table of 500 nodes in 1 GiB exported out of core")
	}
}
