package refresh

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/itemdigest"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

// tree is the test's own model of a forest: the oracle the tables are
// compared with.
type tree struct {
	parent map[string]string
	attrs  map[string]transform.Attrs
}

func (f *tree) clone() *tree {
	c := &tree{parent: map[string]string{}, attrs: map[string]transform.Attrs{}}
	for id, p := range f.parent {
		c.parent[id] = p
		a := transform.Attrs{}
		for k, v := range f.attrs[id] {
			a[k] = v
		}
		c.attrs[id] = a
	}
	return c
}

func (f *tree) ids() []string {
	ids := make([]string, 0, len(f.parent))
	for id := range f.parent {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (f *tree) children(id string) []string {
	var out []string
	for _, c := range f.ids() {
		if f.parent[c] == id {
			out = append(out, c)
		}
	}
	return out
}

// inSubtree reports whether x is id or below it.
func (f *tree) inSubtree(x, id string) bool {
	for p := x; p != ""; p = f.parent[p] {
		if p == id {
			return true
		}
	}
	return false
}

func (f *tree) subtree(id string) []string {
	var out []string
	for _, x := range f.ids() {
		if f.inSubtree(x, id) {
			out = append(out, x)
		}
	}
	return out
}

func randomAttrs(r *rand.Rand, id string) transform.Attrs {
	a := transform.Attrs{"name": s("node " + id)}
	size := r.IntN(1000)
	// The same number in several texts: DynamoDB keeps one of them.
	switch r.IntN(3) {
	case 0:
		a["size"] = n(fmt.Sprint(size))
	case 1:
		a["size"] = n(fmt.Sprintf("%d.0", size))
	default:
		a["size"] = n(fmt.Sprintf("%de0", size))
	}
	if r.IntN(3) == 0 {
		a["tags"] = &types.AttributeValueMemberSS{Value: []string{"b", "a", id}}
	}
	if r.IntN(4) == 0 {
		a["meta"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": s("v"), "n": &types.AttributeValueMemberNULL{Value: true}}}
	}
	return a
}

// idSeq numbers the ids of every test's trees; subtests run in parallel.
// No two formats give the same id ("CM%d0" made CM120 of 12, as "CM%d" of 120).
var idSeq atomic.Int64

func newID(r *rand.Rand) string {
	names := []string{"CM%d", "n %d", "é%d", "CM%d_0", "x\"%d"}
	return fmt.Sprintf(names[r.IntN(len(names))], idSeq.Add(1))
}

func randomTree(r *rand.Rand, nodes int) *tree {
	f := &tree{parent: map[string]string{}, attrs: map[string]transform.Attrs{}}
	var ids []string
	for i := range nodes {
		id := newID(r)
		parent := ""
		if i > 0 && r.IntN(8) != 0 {
			parent = ids[r.IntN(len(ids))]
		}
		f.parent[id] = parent
		f.attrs[id] = randomAttrs(r, id)
		ids = append(ids, id)
	}
	return f
}

// mutate changes a tree the way a nightly snapshot does: new nodes,
// removed subtrees, moved subtrees, changed attributes, and numbers written
// differently without changing their value.
func mutate(r *rand.Rand, f *tree) *tree {
	g := f.clone()
	for range 1 + r.IntN(4) { // new
		ids := g.ids()
		id := newID(r)
		g.parent[id] = ids[r.IntN(len(ids))]
		g.attrs[id] = randomAttrs(r, id)
	}
	for range r.IntN(2) { // removed: a subtree of at most a few nodes
		ids := g.ids()
		x := ids[r.IntN(len(ids))]
		if sub := g.subtree(x); len(sub) <= 3 {
			for _, y := range sub {
				delete(g.parent, y)
				delete(g.attrs, y)
			}
		}
	}
	for range 1 + r.IntN(3) { // moved
		ids := g.ids()
		x, p := ids[r.IntN(len(ids))], ids[r.IntN(len(ids))]
		if r.IntN(5) == 0 {
			p = ""
		}
		if p != "" && g.inSubtree(p, x) {
			continue
		}
		g.parent[x] = p
	}
	for range 1 + r.IntN(4) { // changed
		ids := g.ids()
		x := ids[r.IntN(len(ids))]
		switch r.IntN(3) {
		case 0:
			g.attrs[x]["size"] = n(fmt.Sprint(1000 + r.IntN(1000)))
		case 1:
			g.attrs[x]["extra"] = &types.AttributeValueMemberBOOL{Value: true}
		default:
			delete(g.attrs[x], "name")
		}
	}
	for range 2 { // the same value, another text: not a change
		ids := g.ids()
		x := ids[r.IntN(len(ids))]
		v, ok := g.attrs[x]["size"].(*types.AttributeValueMemberN)
		switch {
		case !ok || strings.Contains(v.Value, "e"):
		case strings.Contains(v.Value, "."):
			g.attrs[x]["size"] = n(v.Value + "00")
		default:
			g.attrs[x]["size"] = n("00" + v.Value + ".000")
		}
	}
	return g
}

// write writes the tree as a DynamoDB JSON snapshot, rows shuffled (children
// may come before their parents).
func (f *tree) write(t *testing.T, r *rand.Rand, path string) {
	t.Helper()
	ids := f.ids()
	r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	var b []byte
	for _, id := range ids {
		item := map[string]types.AttributeValue{"id": s(id)}
		if p := f.parent[id]; p != "" {
			item["parent_id"] = s(p)
		}
		for k, v := range f.attrs[id] {
			item[k] = v
		}
		b = ddbjson.AppendLine(b, item)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readSnapshot(t *testing.T, path string, l layouts.Layout, closureCopy []string) *importer.Input {
	t.Helper()
	in, err := importer.ReadInput(context.Background(), importer.InputOptions{Path: path, Source: records.SourceOptions{Format: "ddbjson"}, ClosureCopy: closureCopy})
	if err != nil {
		t.Fatal(err)
	}
	if p := in.CheckLayout(l); len(p) > 0 {
		t.Fatalf("snapshot problems: %v", p[0])
	}
	return in
}

// canon is the test's own canonical text of a value, independent of the
// package's digests (itemdigest.Digester): numbers by value through math/big, sets sorted.
func canon(v types.AttributeValue) any {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return "S:" + v.Value
	case *types.AttributeValueMemberN:
		r, ok := new(big.Rat).SetString(v.Value)
		if !ok {
			return "N?" + v.Value
		}
		return "N:" + r.RatString()
	case *types.AttributeValueMemberB:
		return "B:" + base64.StdEncoding.EncodeToString(v.Value)
	case *types.AttributeValueMemberBOOL:
		return v.Value
	case *types.AttributeValueMemberNULL:
		return nil
	case *types.AttributeValueMemberSS:
		out := slices.Clone(v.Value)
		sort.Strings(out)
		return map[string]any{"SS": out}
	case *types.AttributeValueMemberNS:
		var out []string
		for _, e := range v.Value {
			out = append(out, canon(n(e)).(string))
		}
		sort.Strings(out)
		return map[string]any{"NS": out}
	case *types.AttributeValueMemberL:
		var out []any
		for _, e := range v.Value {
			out = append(out, canon(e))
		}
		return map[string]any{"L": out}
	case *types.AttributeValueMemberM:
		return map[string]any{"M": canonItem(v.Value)}
	}
	return fmt.Sprintf("?%T", v)
}

func canonItem(item map[string]types.AttributeValue) map[string]any {
	out := map[string]any{}
	for k, v := range item {
		out[k] = canon(v)
	}
	return out
}

func canonText(item map[string]types.AttributeValue) string {
	b, err := json.Marshal(canonItem(item))
	if err != nil {
		panic(err)
	}
	return string(b)
}

// tableItems is every item of the table, by key, as canonical text.
func tableItems(t *testing.T, client *dynamodb.Client, table string, spec layouts.TableSpec) map[string]string {
	t.Helper()
	out := map[string]string{}
	var mu = make(chan struct{}, 1)
	_, err := exporter.ScanItems(context.Background(), client, table, exporter.ScanOptions{ConsistentRead: true}, func(items []layouts.Item) error {
		mu <- struct{}{}
		defer func() { <-mu }()
		for _, it := range items {
			out[itemdigest.KeyOf(spec, it)] = canonText(it)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// wantItems is every item the layout writes for the snapshot, by key.
func wantItems(t *testing.T, in *importer.Input, l layouts.Layout) map[string]string {
	t.Helper()
	out := map[string]string{}
	_, err := in.Emit(context.Background(), importer.EmitOptions{Layout: l}, func(_ int64, it layouts.Item) error {
		k := itemdigest.KeyOf(l.Table(), it)
		if _, dup := out[k]; dup {
			t.Fatalf("the layout wrote key %q twice", k)
		}
		out[k] = canonText(it)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// itemDiff is the smallest set of writes from one set of items to another:
// the keys to put (absent or different) and the keys to delete.
func itemDiff(before, after map[string]string) (puts, dels []string) {
	for k, v := range after {
		if b, ok := before[k]; !ok || b != v {
			puts = append(puts, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			dels = append(dels, k)
		}
	}
	slices.Sort(puts)
	slices.Sort(dels)
	return puts, dels
}

func opKeys(spec layouts.TableSpec, ops []Op) (puts, dels []string) {
	for _, op := range ops {
		if op.Kind == Put {
			puts = append(puts, itemdigest.KeyOf(spec, op.Item))
		} else {
			dels = append(dels, itemdigest.KeyOf(spec, op.Item))
		}
	}
	slices.Sort(puts)
	slices.Sort(dels)
	return puts, dels
}

// writeOps writes operations with treeport's writer, in order, and returns
// the items it wrote.
func writeOps(t *testing.T, client *dynamodb.Client, table string, spec layouts.TableSpec, ops []Op) int64 {
	t.Helper()
	ctx := context.Background()
	w := ddbwrite.NewDDBWriter(client, table, spec, ddbwrite.WriterOptions{Concurrency: 4})
	for i, op := range ops {
		var err error
		if op.Kind == Put {
			err = w.Write(ctx, int64(i), op.Item)
		} else {
			err = w.Delete(ctx, int64(i), op.Item)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	st, err := w.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st.Items
}

func plan(t *testing.T, client *dynamodb.Client, table string, l layouts.Layout, in *importer.Input, shard ddbwrite.Shard) (*Summary, []Op) {
	t.Helper()
	ctx := context.Background()
	tb, err := ReadTable(ctx, ReadTableOptions{Client: client, Table: table, Layout: l, Shard: shard, Scan: exporter.ScanOptions{ConsistentRead: true}})
	if err != nil {
		t.Fatal(err)
	}
	var ops []Op
	sum, err := Plan(ctx, Options{Input: in, Layout: l, Table: tb, Shard: shard}, func(op Op) error {
		ops = append(ops, op)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sum, ops
}

type layoutCase struct {
	name        string
	opts        layouts.Options
	closureCopy []string
}

func layoutCases() []layoutCase {
	cases := []layoutCase{}
	for _, name := range layouts.Names() {
		cases = append(cases, layoutCase{name: name})
	}
	return append(cases,
		layoutCase{name: layouts.ClosureName, opts: layouts.Options{ClosureCopy: []string{"size"}}, closureCopy: []string{"size"}},
		layoutCase{name: layouts.PrefixName, opts: layouts.Options{Delimiter: "/", Attr: map[string]string{"Key": "PK", "Child": "SK"}}},
		layoutCase{name: layouts.ShardedName, opts: layouts.Options{Shards: 2, Attr: map[string]string{"ByPath": "GSI2"}}},
	)
}

func (c layoutCase) String() string {
	if c.opts.Attr == nil && c.opts.Delimiter == "" && c.opts.ClosureCopy == nil && c.opts.Shards == 0 {
		return c.name
	}
	return c.name + "-options"
}

// TestRefreshSequences applies a random sequence of snapshots to a table of
// every layout. After each apply the table holds exactly the items the
// layout writes for the snapshot, the writes were exactly the smallest set
// (computed here independently), the records export back equal to the
// snapshot, and a second plan has nothing to do.
func TestRefreshSequences(t *testing.T) {
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	for ci, c := range layoutCases() {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			l, err := layouts.New(c.name, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			spec := l.Table()
			table := ddblocal.NewTable(t, client, spec)
			r := rand.New(rand.NewPCG(uint64(ci), 7))
			dir := t.TempDir()
			var prev *tree
			f := randomTree(r, 40)
			for step := range 6 {
				path := filepath.Join(dir, fmt.Sprintf("snap%d.json", step))
				f.write(t, r, path)
				in := readSnapshot(t, path, l, c.closureCopy)
				before := tableItems(t, client, table, spec)
				want := wantItems(t, in, l)
				wantPuts, wantDels := itemDiff(before, want)

				sum, ops := plan(t, client, table, l, in, ddbwrite.Shard{})
				puts, dels := opKeys(spec, ops)
				if !slices.Equal(puts, wantPuts) || !slices.Equal(dels, wantDels) {
					t.Fatalf("step %d: plan puts %d, deletes %d; the smallest set is %d puts, %d deletes\nputs %q\nwant %q\ndels %q\nwant %q",
						step, len(puts), len(dels), len(wantPuts), len(wantDels), puts, wantPuts, dels, wantDels)
				}
				if sum.Total.Puts != int64(len(puts)) || sum.Total.Deletes != int64(len(dels)) {
					t.Fatalf("step %d: summary counts %d puts, %d deletes; the plan has %d, %d", step, sum.Total.Puts, sum.Total.Deletes, len(puts), len(dels))
				}
				checkNodeCounts(t, step, sum, prev, f)

				if written := writeOps(t, client, table, spec, ops); written != int64(len(ops)) {
					t.Fatalf("step %d: the writer wrote %d items for a plan of %d", step, written, len(ops))
				}
				after := tableItems(t, client, table, spec)
				if p, d := itemDiff(after, want); len(p)+len(d) > 0 {
					t.Fatalf("step %d: after apply the table differs from the snapshot's items: %d to put, %d to delete", step, len(p), len(d))
				}
				checkExport(t, client, table, l, f)
				if again, ops := plan(t, client, table, l, in, ddbwrite.Shard{}); again.Changes() != 0 || len(ops) != 0 {
					t.Fatalf("step %d: a second plan has %d changes", step, again.Changes())
				}
				prev, f = f, mutate(r, f)
			}
		})
	}
}

// checkNodeCounts checks the summary's node counts against the two trees.
func checkNodeCounts(t *testing.T, step int, sum *Summary, prev, cur *tree) {
	t.Helper()
	if prev == nil {
		prev = &tree{parent: map[string]string{}}
	}
	var added, removed, moved int64
	for id, p := range cur.parent {
		q, ok := prev.parent[id]
		switch {
		case !ok:
			added++
		case q != p:
			moved++
		}
	}
	for id := range prev.parent {
		if _, ok := cur.parent[id]; !ok {
			removed++
		}
	}
	if sum.ByReason[ReasonNew].Nodes != added || sum.ByReason[ReasonRemoved].Nodes != removed || sum.MovedSubtrees != moved {
		t.Errorf("step %d: summary says %d new, %d removed, %d moved subtrees; the trees say %d, %d, %d",
			step, sum.ByReason[ReasonNew].Nodes, sum.ByReason[ReasonRemoved].Nodes, sum.MovedSubtrees, added, removed, moved)
	}
	// Every node whose path or attributes differ, and every removed one.
	pathOf := func(f *tree, id string) string {
		path := id
		for p := f.parent[id]; p != ""; p = f.parent[p] {
			path = p + "/" + path
		}
		return path
	}
	touched := removed
	for id := range cur.parent {
		if _, ok := prev.parent[id]; !ok || pathOf(prev, id) != pathOf(cur, id) || canonText(prev.attrs[id]) != canonText(cur.attrs[id]) {
			touched++
		}
	}
	if sum.Total.Nodes != touched {
		t.Errorf("step %d: summary says %d nodes changed in all; the trees say %d", step, sum.Total.Nodes, touched)
	}
	if sum.TableNodes != int64(len(prev.parent)) || sum.SnapshotNodes != int64(len(cur.parent)) {
		t.Errorf("step %d: summary says %d table nodes, %d snapshot nodes; want %d, %d", step, sum.TableNodes, sum.SnapshotNodes, len(prev.parent), len(cur.parent))
	}
}

// checkExport reads the table's records back and compares them with the
// tree.
func checkExport(t *testing.T, client *dynamodb.Client, table string, l layouts.Layout, f *tree) {
	t.Helper()
	recs, _, err := exporter.Scan(context.Background(), client, table, l, exporter.ScanOptions{ConsistentRead: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(f.parent) {
		t.Fatalf("export has %d records, the snapshot %d nodes", len(recs), len(f.parent))
	}
	for _, rec := range recs {
		p, ok := f.parent[rec.ID]
		if !ok || p != rec.Parent {
			t.Fatalf("export has %q under %q; the snapshot has it under %q (present: %v)", rec.ID, rec.Parent, p, ok)
		}
		if got, want := canonText(rec.Attrs), canonText(f.attrs[rec.ID]); got != want {
			t.Fatalf("export of %q: attributes %s, want %s", rec.ID, got, want)
		}
	}
}

// TestShardedPlansPartitionTheWrites plans one change with N shards: each
// shard's operations are its own partition keys', and together they are the
// unsharded plan, each operation once.
func TestShardedPlansPartitionTheWrites(t *testing.T) {
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, _ := layouts.New(name, layouts.Options{})
			spec := l.Table()
			table := ddblocal.NewTable(t, client, spec)
			r := rand.New(rand.NewPCG(3, 3))
			dir := t.TempDir()
			f := randomTree(r, 50)
			f.write(t, r, filepath.Join(dir, "a.json"))
			in := readSnapshot(t, filepath.Join(dir, "a.json"), l, nil)
			_, ops := plan(t, client, table, l, in, ddbwrite.Shard{})
			writeOps(t, client, table, spec, ops)
			g := mutate(r, mutate(r, f))
			g.write(t, r, filepath.Join(dir, "b.json"))
			in = readSnapshot(t, filepath.Join(dir, "b.json"), l, nil)
			whole, wholeOps := plan(t, client, table, l, in, ddbwrite.Shard{})
			if whole.Changes() == 0 {
				t.Fatal("the change plans nothing")
			}
			wantPuts, wantDels := opKeys(spec, wholeOps)
			for of := 1; of <= 4; of++ {
				var puts, dels []string
				for k := range of {
					sh := ddbwrite.Shard{K: k, Of: of}
					_, ops := plan(t, client, table, l, in, sh)
					for _, op := range ops {
						if !sh.OwnsValue(op.Item[spec.PK.Name]) {
							t.Fatalf("shard %s plans %v, another shard's key", sh, op.Item)
						}
					}
					p, d := opKeys(spec, ops)
					puts, dels = append(puts, p...), append(dels, d...)
				}
				slices.Sort(puts)
				slices.Sort(dels)
				if !slices.Equal(puts, wantPuts) || !slices.Equal(dels, wantDels) {
					t.Fatalf("%d shards plan %d puts and %d deletes together; the whole plan has %d and %d",
						of, len(puts), len(dels), len(wantPuts), len(wantDels))
				}
			}
		})
	}
}

// applyEdit carries an edit out on the model, as the editor must.
func (f *tree) applyEdit(e Edit) {
	switch e.Op {
	case EditMove:
		f.parent[e.ID] = e.Parent
	case EditDelete:
		for _, c := range f.children(e.ID) {
			f.parent[c] = f.parent[e.ID]
		}
		delete(f.parent, e.ID)
		delete(f.attrs, e.ID)
	case EditSet:
		for _, k := range e.Remove {
			delete(f.attrs[e.ID], k)
		}
		for k, v := range e.Attrs {
			f.attrs[e.ID][k] = v
		}
	}
}

// randomEdit is a valid edit of the model.
func randomEdit(r *rand.Rand, f *tree) Edit {
	for {
		ids := f.ids()
		x := ids[r.IntN(len(ids))]
		switch r.IntN(5) {
		case 0, 1:
			p := ids[r.IntN(len(ids))]
			if r.IntN(6) == 0 {
				p = ""
			}
			if p != "" && f.inSubtree(p, x) {
				continue
			}
			return Edit{Op: EditMove, ID: x, Parent: p}
		case 2:
			if f.parent[x] == "" && len(f.children(x)) > 0 {
				continue
			}
			return Edit{Op: EditDelete, ID: x}
		default:
			e := Edit{Op: EditSet, ID: x, Attrs: transform.Attrs{"size": n(fmt.Sprint(r.IntN(99))), "note": s("edited")}}
			if r.IntN(2) == 0 {
				e.Remove = []string{"name"}
			}
			return e
		}
	}
}

// TestEditsMatchTheModel runs random edit sequences on a table of every
// layout: afterwards the table holds exactly the items of the edited
// model, and the editor wrote exactly the smallest set of writes between
// the table before and after.
func TestEditsMatchTheModel(t *testing.T) {
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	for ci, c := range layoutCases() {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			l, err := layouts.New(c.name, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			spec := l.Table()
			table := ddblocal.NewTable(t, client, spec)
			r := rand.New(rand.NewPCG(uint64(ci), 11))
			dir := t.TempDir()
			f := randomTree(r, 30)
			f.write(t, r, filepath.Join(dir, "start.json"))
			_, ops := plan(t, client, table, l, readSnapshot(t, filepath.Join(dir, "start.json"), l, c.closureCopy), ddbwrite.Shard{})
			writeOps(t, client, table, spec, ops)
			for round := range 5 {
				var edits []Edit
				for range 1 + r.IntN(4) {
					e := randomEdit(r, f)
					edits = append(edits, e)
					f.applyEdit(e)
				}
				before := tableItems(t, client, table, spec)
				path := filepath.Join(dir, fmt.Sprintf("after%d.json", round))
				f.write(t, r, path)
				want := wantItems(t, readSnapshot(t, path, l, c.closureCopy), l)
				wantPuts, wantDels := itemDiff(before, want)

				ed, err := NewEditor(client, table, l)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := ed.Apply(context.Background(), edits); err != nil {
					t.Fatalf("round %d: %v (edits %+v)", round, err, edits)
				}
				ops, err := ed.Ops()
				if err != nil {
					t.Fatal(err)
				}
				puts, dels := opKeys(spec, ops)
				if !slices.Equal(puts, wantPuts) || !slices.Equal(dels, wantDels) {
					t.Fatalf("round %d: edits %+v\nwrite %d puts, %d deletes; the smallest set is %d puts, %d deletes\nputs %q\nwant %q\ndels %q\nwant %q",
						round, edits, len(puts), len(dels), len(wantPuts), len(wantDels), puts, wantPuts, dels, wantDels)
				}
				writeOps(t, client, table, spec, ops)
				if p, d := itemDiff(tableItems(t, client, table, spec), want); len(p)+len(d) > 0 {
					t.Fatalf("round %d: after the edits the table differs from the model: %d to put, %d to delete", round, len(p), len(d))
				}
			}
		})
	}
}

// TestEditsRefused: an edit that cannot be carried out fails with ErrEdit
// saying where and why, before anything is planned.
func TestEditsRefused(t *testing.T) {
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	l, _ := layouts.New(layouts.PathName, layouts.Options{})
	table := ddblocal.NewTable(t, client, l.Table())
	f := &tree{parent: map[string]string{"A": "", "B": "A", "C": "B", "R": ""}, attrs: map[string]transform.Attrs{"A": {}, "B": {}, "C": {}, "R": {}}}
	dir := t.TempDir()
	f.write(t, rand.New(rand.NewPCG(1, 1)), filepath.Join(dir, "t.json"))
	_, ops := plan(t, client, table, l, readSnapshot(t, filepath.Join(dir, "t.json"), l, nil), ddbwrite.Shard{})
	writeOps(t, client, table, l.Table(), ops)
	for _, c := range []struct {
		edits []Edit
		want  string
	}{
		{[]Edit{{Op: EditMove, ID: "A", Parent: "C", Line: 1}}, `"C" is in the subtree of "A"`},
		{[]Edit{{Op: EditMove, ID: "B", Parent: "B", Line: 1}}, "its own parent"},
		{[]Edit{{Op: EditDelete, ID: "A", Line: 1}}, "a root with 1 children"},
		{[]Edit{{Op: EditMove, ID: "Z", Parent: "A", Line: 1}}, `node "Z" is not in table`},
		{[]Edit{{Op: EditMove, ID: "B", Parent: "Z", Line: 1}}, `node "Z" is not in table`},
		{[]Edit{{Op: EditDelete, ID: "C", Line: 1}, {Op: EditSet, ID: "C", Attrs: transform.Attrs{"a": s("x")}, Line: 2}}, `edit 2: set "C": node "C" was deleted`},
		{[]Edit{{Op: EditMove, ID: "B", Parent: "R", Line: 1}, {Op: EditMove, ID: "R", Parent: "C", Line: 2}}, `edit 2: move "R": "C" is in the subtree of "R"`},
		{[]Edit{{Op: EditSet, ID: "A", Attrs: transform.Attrs{"Path": s("x")}, Line: 1}}, "Path"},
	} {
		ed, _ := NewEditor(client, table, l)
		_, err := ed.Apply(context.Background(), c.edits)
		if !errors.Is(err, ErrEdit) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want ErrEdit saying %q", c.edits, err, c.want)
		}
	}
	// A root without children can go.
	ed, _ := NewEditor(client, table, l)
	if _, err := ed.Apply(context.Background(), []Edit{{Op: EditDelete, ID: "R"}}); err != nil {
		t.Errorf("deleting a childless root: %v", err)
	}
}
