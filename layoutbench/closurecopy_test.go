package layoutbench

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/refresh"
	"github.com/treeport/treeport/transform"
)

// bigAttrsCSV writes a tree whose nodes have attributes of a few hundred
// bytes to a few kilobytes, so that which of them closure's ancestor rows
// copy decides their write units.
func bigAttrsCSV(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("id,parent_id,bio,note,tag\n")
	for i := range 40 {
		parent := ""
		if i > 0 {
			parent = fmt.Sprintf("n%02d", (i-1)/3)
		}
		fmt.Fprintf(&b, "n%02d,%s,%s,%s,t%d\n", i, parent,
			strings.Repeat("b", 300+(i*173)%2300), strings.Repeat("n", 500+(i*97)%900), i%7)
	}
	path := filepath.Join(t.TempDir(), "big.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// realRecords reads every record of path with its attributes.
func realRecords(t *testing.T, path string, src records.SourceOptions) map[string]transform.Attrs {
	t.Helper()
	s, err := records.OpenSource(path, src)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := map[string]transform.Attrs{}
	for {
		rec, err := s.Next(context.Background())
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[rec.ID] = rec.Attrs
	}
}

// realRows are the items of node id at path with its real attributes,
// by primary key.
func realRows(t *testing.T, l layouts.Layout, id string, path []string, attrs transform.Attrs) map[string]layouts.Item {
	t.Helper()
	n := transform.Node{Record: transform.Record{ID: id, Attrs: attrs}, Depth: len(path) - 1, Path: path}
	if len(path) > 1 {
		n.Parent = path[len(path)-2]
	}
	out := map[string]layouts.Item{}
	if err := l.Items(&n, func(it layouts.Item) { out[layouts.KeyOf(l.Table(), it)] = it }); err != nil {
		t.Fatal(err)
	}
	return out
}

// billed is what DynamoDB bills to turn the rows before into the rows
// after, worked out from the rules directly: a put of a new or changed row
// ceil(size / 1 KB) of the larger of its old and new sizes, a delete
// ceil(old size / 1 KB); and in the index the same for the index's rows,
// where a row whose index key changes is a delete and a put.
func billed(spec layouts.TableSpec, before, after map[string]layouts.Item) int64 {
	wcu := func(size int) int64 { return int64((max(size, 1) + 1023) / 1024) }
	key := func(ix layouts.IndexSpec, it layouts.Item) (string, bool) {
		if it == nil {
			return "", false
		}
		pk, ok := it[ix.PK.Name]
		if !ok {
			return "", false
		}
		sk := it[ix.SK.Name]
		return fmt.Sprint(pk, sk), sk != nil
	}
	var total int64
	write := func(old, new layouts.Item) {
		so, sn := 0, 0
		if old != nil {
			so = transform.ItemSize(old)
		}
		if new != nil {
			sn = transform.ItemSize(new)
		}
		total += wcu(max(so, sn))
		for _, ix := range spec.Indexes {
			ko, inO := key(ix, old)
			kn, inN := key(ix, new)
			if inO && inN && ko == kn {
				total += wcu(max(so, sn))
				continue
			}
			if inO {
				total += wcu(so)
			}
			if inN {
				total += wcu(sn)
			}
		}
	}
	for k, it := range after {
		if old, ok := before[k]; !ok || !sameItem(old, it) {
			write(old, it)
		}
	}
	for k, it := range before {
		if _, ok := after[k]; !ok {
			write(it, nil)
		}
	}
	return total
}

// TestClosureCopyRewritesAreTheRealRows holds bench's move, delete and
// write WCU for closure, with --closure-copy all, none and a subset, to
// what the real rows (built by the layout from the records' own
// attributes) are billed, for every node of each dataset.
func TestClosureCopyRewritesAreTheRealRows(t *testing.T) {
	org := "../fixtures/org.csv"
	orgTypes, err := os.ReadFile("../fixtures/org.types")
	if err != nil {
		t.Fatal(err)
	}
	ty, err := records.ParseTypes(strings.TrimSpace(string(orgTypes)))
	if err != nil {
		t.Fatal(err)
	}
	big := bigAttrsCSV(t)
	for _, tc := range []struct {
		name, path string
		src        records.SourceOptions
		copy       []string
	}{
		{"org all", org, records.SourceOptions{Types: ty}, nil},
		{"org none", org, records.SourceOptions{Types: ty}, []string{}},
		{"org name,title", org, records.SourceOptions{Types: ty}, []string{"title", "name"}},
		{"big all", big, records.SourceOptions{}, nil},
		{"big none", big, records.SourceOptions{}, []string{}},
		{"big bio,tag", big, records.SourceOptions{}, []string{"bio", "tag"}},
		{"big tag", big, records.SourceOptions{}, []string{"tag", "missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := importer.ReadInput(context.Background(), importer.InputOptions{Path: tc.path, Source: tc.src, ClosureCopy: tc.copy})
			if err != nil {
				t.Fatal(err)
			}
			if len(in.Problems) > 0 {
				t.Fatal(in.Problems[0])
			}
			l, err := layouts.New(layouts.ClosureName, layouts.Options{ClosureCopy: tc.copy})
			if err != nil {
				t.Fatal(err)
			}
			spec := l.Table()
			recs := realRecords(t, tc.path, tc.src)
			f := in.Forest
			var byDepth [][]int32
			for _, i := range f.Order() {
				d := f.Depth(int(i))
				for len(byDepth) <= d {
					byDepth = append(byDepth, nil)
				}
				byDepth[d] = append(byDepth[d], i)
			}
			pathOf := func(i int32) []string { return f.AppendPath(nil, int(i)) }
			var moves, benchMoves, dels, benchDels, writes, benchWrites int64
			for _, x := range f.Order() {
				dx := f.Depth(int(x))
				if tgt := moveTarget(f, byDepth, x, 5); tgt >= 0 {
					var want int64
					for _, y := range subtree(f, x) {
						py := pathOf(y)
						after := append(pathOf(tgt), py[dx:]...)
						want += billed(spec, realRows(t, l, f.ID(int(y)), py, recs[f.ID(int(y))]),
							realRows(t, l, f.ID(int(y)), after, recs[f.ID(int(y))]))
					}
					c, err := moveChange(context.Background(), l, f, x, tgt)
					if err != nil {
						t.Fatal(err)
					}
					if c.wcu != want {
						t.Errorf("move %s under %s: bench %d WCU, the real rows %d", f.ID(int(x)), f.ID(int(tgt)), c.wcu, want)
					}
					moves, benchMoves = moves+want, benchMoves+c.wcu
				}
				if f.Parent(int(x)) >= 0 || len(f.Children(int(x))) == 0 {
					var want int64
					for _, y := range subtree(f, x) {
						py := pathOf(y)
						after := map[string]layouts.Item{}
						if y != x {
							after = realRows(t, l, f.ID(int(y)), append(append([]string(nil), py[:dx]...), py[dx+1:]...), recs[f.ID(int(y))])
						}
						want += billed(spec, realRows(t, l, f.ID(int(y)), py, recs[f.ID(int(y))]), after)
					}
					c, err := deleteChange(context.Background(), l, f, x)
					if err != nil {
						t.Fatal(err)
					}
					if c.wcu != want {
						t.Errorf("delete %s: bench %d WCU, the real rows %d", f.ID(int(x)), c.wcu, want)
					}
					dels, benchDels = dels+want, benchDels+c.wcu
				}
				// A write gives every attribute a new value of the same
				// size: each row holding one of them is rewritten.
				var want int64
				own := recs[f.ID(int(x))]
				for _, it := range realRows(t, l, f.ID(int(x)), pathOf(x), own) {
					holds := false
					for k := range own {
						if _, ok := it[k]; ok {
							holds = true
						}
					}
					if holds {
						want += billed(spec, nil, map[string]layouts.Item{"": it})
					}
				}
				c, err := writeChange(context.Background(), l, f, x)
				if err != nil {
					t.Fatal(err)
				}
				if len(own) > 0 && c.wcu != want {
					t.Errorf("write %s: bench %d WCU, the real rows %d", f.ID(int(x)), c.wcu, want)
				}
				writes, benchWrites = writes+want, benchWrites+c.wcu
			}
			t.Logf("move %d / %d, delete %d / %d, write %d / %d WCU (real / bench)", moves, benchMoves, dels, benchDels, writes, benchWrites)
		})
	}
}

// TestClosureCopyMoveIsWhatDynamoDBBills moves a subtree of a closure table
// with --closure-copy a subset through refresh.EditTable on DynamoDB Local,
// asking for the consumed capacity, and holds bench's move WCU of that node
// to it.
func TestClosureCopyMoveIsWhatDynamoDBBills(t *testing.T) {
	ep := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, ep)
	ctx := context.Background()
	path := bigAttrsCSV(t)
	cp := []string{"bio", "tag"}
	in, err := importer.ReadInput(ctx, importer.InputOptions{Path: path, ClosureCopy: cp})
	if err != nil {
		t.Fatal(err)
	}
	l, err := layouts.New(layouts.ClosureName, layouts.Options{ClosureCopy: cp})
	if err != nil {
		t.Fatal(err)
	}
	table := ddblocal.NewTable(t, client, l.Table())
	recs := realRecords(t, path, records.SourceOptions{})
	f := in.Forest
	for _, i := range f.Order() {
		for _, it := range realRows(t, l, f.ID(int(i)), f.AppendPath(nil, int(i)), recs[f.ID(int(i))]) {
			if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// n04 (depth 2, children n13 to n15) moves under n02, at its
	// parent's depth: its rows and its children's get new ancestors.
	x, target := int32(f.Lookup("n04")), int32(f.Lookup("n02"))
	if f.Depth(int(x)) != 2 || len(f.Children(int(x))) == 0 || f.Depth(int(target)) != 1 {
		t.Fatalf("n04 at depth %d with %d children, n02 at depth %d", f.Depth(int(x)), len(f.Children(int(x))), f.Depth(int(target)))
	}
	want, err := moveChange(ctx, l, f, x, target)
	if err != nil {
		t.Fatal(err)
	}
	ops := filepath.Join(t.TempDir(), "ops.jsonl")
	if err := os.WriteFile(ops, []byte(`{"op":"move","id":"n04","parent":"n02"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := refresh.EditTable(ctx, refresh.EditTableOptions{Client: client, Table: table, Layout: l, Ops: ops, ConsumedCapacity: true})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Run.Stats.ConsumedWCU
	t.Logf("move n04 under n02: bench %d WCU, the edit's plan %d, DynamoDB Local consumed %.1f", want.wcu, res.WCU, got)
	if got == 0 || math.Abs(got-float64(want.wcu)) > 0.01 {
		t.Errorf("move n04 under n02: bench %d WCU; DynamoDB Local consumed %.1f", want.wcu, got)
	}
	// The edit's own plan prices each put over the row it replaces (the
	// larger size; an index key change is two index writes): it said 22
	// when it priced the new rows alone.
	if math.Abs(got-float64(res.WCU)) > 0.01 {
		t.Errorf("move n04 under n02: the edit planned %d WCU; DynamoDB Local consumed %.1f", res.WCU, got)
	}
}
