package main

// The shared helpers of the end-to-end tests of plan, apply, migrate and
// edit (issues 6 and 7): inputs and their tree models, table states, plan
// files and reports, the cars snapshot.

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
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
	"github.com/treeport/treeport/internal/testserver/faultproxy"
	"github.com/treeport/treeport/layouts"
)

// ---- inputs -------------------------------------------------------------

// fixtureTypes is the --types line of fixtures/NAME.types.
func fixtureTypes(t *testing.T, name string) string {
	t.Helper()
	return strings.TrimSpace(readFile(t, filepath.Join("fixtures", name+".types")))
}

// csvFile is a CSV input whose first two columns are id and parent_id, held
// as rows so that a test can make snapshots from it.
type csvFile struct {
	header []string
	rows   [][]string
}

func readCSVFile(t *testing.T, path string) *csvFile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(recs) < 2 || len(recs[0]) < 2 || recs[0][0] != "id" || recs[0][1] != "parent_id" {
		t.Fatalf("%s: want a header id,parent_id,... and rows", path)
	}
	return &csvFile{header: recs[0], rows: recs[1:]}
}

func parseCSV(t *testing.T, text string) *csvFile {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return &csvFile{header: recs[0], rows: recs[1:]}
}

func (c *csvFile) clone() *csvFile {
	d := &csvFile{header: slices.Clone(c.header)}
	for _, r := range c.rows {
		d.rows = append(d.rows, slices.Clone(r))
	}
	return d
}

func (c *csvFile) write(t *testing.T, path string) string {
	t.Helper()
	var b strings.Builder
	w := csv.NewWriter(&b)
	w.Write(c.header)
	w.WriteAll(c.rows)
	if err := w.Error(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func (c *csvFile) row(t *testing.T, id string) []string {
	t.Helper()
	for _, r := range c.rows {
		if r[0] == id {
			return r
		}
	}
	t.Fatalf("no row %q", id)
	return nil
}

func (c *csvFile) set(t *testing.T, id, column, value string) {
	t.Helper()
	i := slices.Index(c.header, column)
	if i < 0 {
		t.Fatalf("no column %q", column)
	}
	r := c.row(t, id)
	if r[i] == value {
		t.Fatalf("%s.%s is %q already: the change changes nothing", id, column, value)
	}
	r[i] = value
}

func (c *csvFile) remove(t *testing.T, id string) {
	t.Helper()
	n := len(c.rows)
	c.rows = slices.DeleteFunc(c.rows, func(r []string) bool { return r[0] == id })
	if len(c.rows) != n-1 {
		t.Fatalf("no row %q", id)
	}
}

// add appends a row given by column name; missing columns are empty.
func (c *csvFile) add(t *testing.T, fields map[string]string) {
	t.Helper()
	r := make([]string, len(c.header))
	for k, v := range fields {
		i := slices.Index(c.header, k)
		if i < 0 {
			t.Fatalf("no column %q", k)
		}
		r[i] = v
	}
	c.rows = append(c.rows, r)
}

// truncate keeps the first n rows, then drops every row whose parent is not
// kept, so that what is left is a valid forest.
func (c *csvFile) truncate(n int) *csvFile {
	d := c.clone()
	d.rows = d.rows[:n]
	for {
		kept := map[string]bool{}
		for _, r := range d.rows {
			kept[r[0]] = true
		}
		before := len(d.rows)
		d.rows = slices.DeleteFunc(d.rows, func(r []string) bool { return r[1] != "" && !kept[r[1]] })
		if len(d.rows) == before {
			return d
		}
	}
}

// treeModel is a forest as parent links and attribute text, from which the
// tests derive what a layout holds, independently of the layouts package.
type treeModel struct {
	parent map[string]string
	attrs  map[string]string
}

func (c *csvFile) model() treeModel {
	m := treeModel{parent: map[string]string{}, attrs: map[string]string{}}
	for _, r := range c.rows {
		m.parent[r[0]] = r[1]
		m.attrs[r[0]] = strings.Join(r[2:], "\x1f")
	}
	return m
}

func (m treeModel) clone() treeModel {
	return treeModel{parent: maps.Clone(m.parent), attrs: maps.Clone(m.attrs)}
}

// path is the ids from the node's root to the node.
func (m treeModel) path(id string) []string {
	var rev []string
	for p := id; p != ""; p = m.parent[p] {
		rev = append(rev, p)
		if len(rev) > len(m.parent) {
			panic("cycle at " + id)
		}
	}
	slices.Reverse(rev)
	return rev
}

func (m treeModel) depth(id string) int { return len(m.path(id)) - 1 }

// subtree is the node and its descendants.
func (m treeModel) subtree(id string) []string {
	var out []string
	for c := range m.parent {
		if slices.Contains(m.path(c), id) {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// descendants is what `query descendants --min-depth 0` prints, as "A0 B1
// C1 ...": sorted by relative depth, then id.
func (m treeModel) descendants(id string) string {
	type nd struct {
		id string
		d  int
	}
	var out []nd
	for _, c := range m.subtree(id) {
		out = append(out, nd{c, m.depth(c) - m.depth(id)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].d != out[j].d {
			return out[i].d < out[j].d
		}
		return out[i].id < out[j].id
	})
	var s []string
	for _, x := range out {
		s = append(s, fmt.Sprintf("%s%d", x.id, x.d))
	}
	return strings.Join(s, " ")
}

// modelItems are the items a layout (default options) holds for one node,
// key → value, written from the SPEC's description of the layouts.
func modelItems(layout string, m treeModel, id string) map[string]string {
	p := m.path(id)
	d := len(p) - 1
	par, a := m.parent[id], m.attrs[id]
	out := map[string]string{}
	switch layout {
	case layouts.PathName, layouts.ShardedName:
		out[id] = strings.Join(p, "|") + "\x00" + par + "\x00" + a
	case layouts.ClosureName:
		for r := 0; r <= d; r++ {
			out[id+"\x00"+strconv.Itoa(r)] = p[d-r] + "\x00" + par + "\x00" + a
		}
	case layouts.PrefixName:
		listing := "¦"
		if d > 0 {
			listing = "¦" + strings.Join(p[:d], "¦") + "¦"
		}
		out[listing+id+"\x00¦"] = a
		out[listing+"\x00"+id] = ""
	case layouts.AdjacencyName:
		out[id] = par + "\x00" + a
	default:
		panic(layout)
	}
	return out
}

type count struct {
	Nodes   int64 `json:"nodes"`
	Puts    int64 `json:"puts"`
	Deletes int64 `json:"deletes"`
	WCU     int64 `json:"wcu"`
}

// modelPlan is the smallest item diff from old to new in a layout, by the
// reason of the node each item belongs to.
func modelPlan(layout string, old, new treeModel) map[string]count {
	out := map[string]count{}
	ids := map[string]bool{}
	for id := range old.parent {
		ids[id] = true
	}
	for id := range new.parent {
		ids[id] = true
	}
	for id := range ids {
		_, inOld := old.parent[id]
		_, inNew := new.parent[id]
		var reason string
		var before, after map[string]string
		switch {
		case !inOld:
			reason, after = "new", modelItems(layout, new, id)
		case !inNew:
			reason, before = "removed", modelItems(layout, old, id)
		default:
			before, after = modelItems(layout, old, id), modelItems(layout, new, id)
			switch {
			case !slices.Equal(old.path(id), new.path(id)):
				reason = "moved"
			case old.attrs[id] != new.attrs[id]:
				reason = "changed"
			default:
				reason = "unchanged"
			}
		}
		c := out[reason]
		c.Nodes++
		for k, v := range after {
			if w, ok := before[k]; !ok || w != v {
				c.Puts++
			}
		}
		for k := range before {
			if _, ok := after[k]; !ok {
				c.Deletes++
			}
		}
		out[reason] = c
	}
	return out
}

// ---- tables ------------------------------------------------------------

// keyText is an item's primary key as text: "pk" or "pk\x00sk".
func keyText(spec layouts.TableSpec, item layouts.Item) string {
	text := func(v types.AttributeValue) string {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			return v.Value
		case *types.AttributeValueMemberN:
			return v.Value
		}
		return fmt.Sprintf("%#v", v)
	}
	k := text(item[spec.PK.Name])
	if spec.SK != nil {
		k += "\x00" + text(item[spec.SK.Name])
	}
	return k
}

// tableState is a table's items by key, each as canonical DynamoDB JSON.
func tableState(t *testing.T, client *dynamodb.Client, table string, spec layouts.TableSpec) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, it := range scanTable(t, client, table) {
		out[keyText(spec, it)] = string(ddbjson.AppendItem(nil, normalizeItem(it)))
	}
	return out
}

// rawLines is a table's items as DynamoDB returns them, not normalized, one
// line each, sorted: for checking that a table was not touched at all.
func rawLines(t *testing.T, client *dynamodb.Client, table string) []string {
	t.Helper()
	var out []string
	for _, it := range scanTable(t, client, table) {
		out = append(out, string(ddbjson.AppendItem(nil, it)))
	}
	sort.Strings(out)
	return out
}

// sameState fails the test when two table states differ, naming a few keys.
func sameState(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if maps.Equal(got, want) {
		return
	}
	shown := 0
	for k, w := range want {
		if g, ok := got[k]; (!ok || g != w) && shown < 3 {
			t.Errorf("%s: key %q: got %q, want %q", what, k, g, w)
			shown++
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok && shown < 6 {
			t.Errorf("%s: unexpected key %q: %s", what, k, g)
			shown++
		}
	}
	t.Errorf("%s: %d items, want %d", what, len(got), len(want))
}

// wantState is what import of the input writes in the layout, by key.
func wantState(t *testing.T, in, types string, l layouts.Layout) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, it := range expectedItems(t, in, types, l) {
		out[keyText(l.Table(), it)] = string(ddbjson.AppendItem(nil, normalizeItem(it)))
	}
	return out
}

// loadTable makes a fresh table for the layout and imports the input into
// it with the CLI; layoutFlags are the flags that give l its options.
func loadTable(t *testing.T, env []string, client *dynamodb.Client, in, types string, l layouts.Layout, layoutFlags ...string) string {
	t.Helper()
	table := ddblocal.NewTable(t, client, l.Table())
	args := append([]string{"import", "--in", in, "--layout", l.Name(), "--table", table, "--no-progress"}, layoutFlags...)
	if types != "" {
		args = append(args, "--types", types)
	}
	if _, stderr, code := run(t, env, args...); code != 0 {
		t.Fatalf("import %s into %s: exit %d:\n%s", in, table, code, stderr)
	}
	return table
}

// dropTableLater deletes a table a command created when the test ends.
func dropTableLater(t *testing.T, client *dynamodb.Client, table string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
}

// newProxy is a fault-free faultproxy, for counting the items a command
// writes.
func newProxy(t *testing.T, endpoint string) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(faultproxy.Config{Target: endpoint, Lifetime: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// ---- plan files and reports -----------------------------------------------

type planSummary struct {
	Table           string           `json:"table"`
	Layout          string           `json:"layout"`
	Shard           string           `json:"shard"`
	TableNodes      int64            `json:"table_nodes"`
	SnapshotNodes   int64            `json:"snapshot_nodes"`
	TableItems      int64            `json:"table_items"`
	TableOtherItems int64            `json:"table_other_items"`
	SnapshotItems   int64            `json:"snapshot_items"`
	MovedSubtrees   int64            `json:"moved_subtrees"`
	ChangedNodes    int64            `json:"changed_nodes"`
	Unchanged       int64            `json:"unchanged_nodes"`
	ByReason        map[string]count `json:"by_reason"`
	Total           count            `json:"total"`
}

func (s planSummary) changes() int64 { return s.Total.Puts + s.Total.Deletes }

func parseSummary(t *testing.T, stdout string) planSummary {
	t.Helper()
	var s planSummary
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("plan --json: %v:\n%s", err, stdout)
	}
	return s
}

type planOp struct {
	Op     string          `json:"op"`
	Reason string          `json:"reason"`
	ID     string          `json:"id"`
	WCU    int64           `json:"wcu"`
	Item   json.RawMessage `json:"item"`
	Key    json.RawMessage `json:"key"`
	// After: a moved node's new items that other copies put (--shard).
	After []json.RawMessage `json:"after"`
}

type planFile struct {
	Version    int         `json:"version"`
	Table      string      `json:"table"`
	Layout     string      `json:"layout"`
	Snapshot   string      `json:"snapshot"`
	Shard      string      `json:"shard"`
	Operations []planOp    `json:"operations"`
	Summary    planSummary `json:"summary"`
}

// readPlanFile reads a plan file as plain JSON (it must be valid JSON as a
// whole) and returns it with its puts (key → canonical item) and deletes
// (keys).
func readPlanFile(t *testing.T, path string, spec layouts.TableSpec) (planFile, map[string]string, map[string]bool) {
	t.Helper()
	var p planFile
	if err := json.Unmarshal([]byte(readFile(t, path)), &p); err != nil {
		t.Fatalf("%s is not valid JSON: %v", path, err)
	}
	puts, dels := map[string]string{}, map[string]bool{}
	for i, op := range p.Operations {
		raw := op.Item
		if op.Op == "delete" {
			raw = op.Key
		}
		item, err := ddbjson.DecodeItem(raw)
		if err != nil {
			t.Fatalf("%s: operation %d: %v", path, i, err)
		}
		k := keyText(spec, item)
		if _, dup := puts[k]; dup || dels[k] {
			t.Errorf("%s: key %q has two operations", path, k)
		}
		switch op.Op {
		case "put":
			puts[k] = string(ddbjson.AppendItem(nil, normalizeItem(item)))
		case "delete":
			if len(item) != 1+btoi(spec.SK != nil) {
				t.Errorf("%s: delete %d holds %d attributes, want only the key", path, i, len(item))
			}
			dels[k] = true
		default:
			t.Errorf("%s: operation %d is %q", path, i, op.Op)
		}
	}
	return p, puts, dels
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

type applyReport struct {
	Plan    planSummary `json:"plan"`
	Skipped int64       `json:"operations_skipped_from_checkpoint"`
	Writer  struct {
		Items int64 `json:"items"`
	} `json:"writer"`
}

func readReport(t *testing.T, path string) applyReport {
	t.Helper()
	var r applyReport
	if err := json.Unmarshal([]byte(readFile(t, path)), &r); err != nil {
		t.Fatalf("report %s: %v", path, err)
	}
	return r
}

// diffStates is what turned before into after: keys put (new or changed
// value) and keys deleted.
func diffStates(before, after map[string]string) (map[string]string, map[string]bool) {
	puts, dels := map[string]string{}, map[string]bool{}
	for k, v := range after {
		if w, ok := before[k]; !ok || w != v {
			puts[k] = v
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			dels[k] = true
		}
	}
	return puts, dels
}

// ---- the cars snapshot ---------------------------------------------------

// ddbLocal is DynamoDB Local's endpoint, a client of it and the
// environment a treeport process needs to reach it.
func ddbLocal(t *testing.T) (string, *dynamodb.Client, []string) {
	t.Helper()
	endpoint := ddblocal.Endpoint(t)
	return endpoint, ddblocal.Client(t, endpoint), awsEnv(endpoint)
}

// carsSnapshotFiles writes carsSnapshot's two forests to CSV files, and
// gives them with the --types that reads them.
func carsSnapshotFiles(t *testing.T) (typesFlag, baseFile, snapFile string) {
	t.Helper()
	base, snap := carsSnapshot(t)
	dir := t.TempDir()
	return fixtureTypes(t, "cars"), base.write(t, filepath.Join(dir, "base.csv")), snap.write(t, filepath.Join(dir, "snap.csv"))
}

// carsSnapshot is fixtures/cars.csv refreshed: two new nodes (CM49 under
// CM20, CM50 under CM49), a removed leaf (CM47), two moved subtrees (Clutch,
// CM17 with CM18, from Transmission to Chassis; Body, CM31 and its 5
// descendants, made a root of its own) and a changed attribute (CM40's
// weight).
func carsSnapshot(t *testing.T) (base, snap *csvFile) {
	t.Helper()
	base = readCSVFile(t, "fixtures/cars.csv")
	snap = base.clone()
	snap.remove(t, "CM47")
	snap.set(t, "CM17", "parent_id", "CM20")
	snap.set(t, "CM31", "parent_id", "")
	snap.set(t, "CM40", "weight_kg", "0.95")
	snap.add(t, map[string]string{"id": "CM49", "parent_id": "CM20", "name": "Spare wheel", "part_no": "T26-240", "qty": "1", "weight_kg": "19.5"})
	snap.add(t, map[string]string{"id": "CM50", "parent_id": "CM49", "name": "Spare wheel bolt", "part_no": "T26-241", "qty": "5",
		"materials": `["steel"]`, "supplier": `{"country":"US","name":"Bolt & Nut Co"}`, "weight_kg": "0.065"})
	return base, snap
}

// putItems writes items into table with PutItem, one by one, as a user
// or an application would: tables built by hand.
func putItems(t *testing.T, client *dynamodb.Client, table string, items ...layouts.Item) {
	t.Helper()
	for _, it := range items {
		if _, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatalf("put %s: %v", ddbjson.AppendItem(nil, it), err)
		}
	}
}

func deleteItem(t *testing.T, client *dynamodb.Client, table string, key layouts.Item) {
	t.Helper()
	if _, err := client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key}); err != nil {
		t.Fatal(err)
	}
}

// mutate changes a forest at random as a nightly snapshot would: attribute
// changes, moved subtrees (now and then to the top), removed nodes (their
// children moved up) and new nodes. It removes at most maxRemove nodes.
func mutate(c *csvFile, rng *rand.Rand, round, maxRemove int) *csvFile {
	d := c.clone()
	m := d.model()
	ids := func() []string { return slices.Sorted(maps.Keys(m.parent)) }
	byID := func(id string) []string {
		for _, r := range d.rows {
			if r[0] == id {
				return r
			}
		}
		panic(id)
	}
	for range 8 { // attributes
		all := ids()
		r := byID(all[rng.IntN(len(all))])
		r[len(r)-1] += "1"
	}
	for i := range 6 { // moves
		all := ids()
		id := all[rng.IntN(len(all))]
		parent := ""
		if i > 0 {
			parent = all[rng.IntN(len(all))]
		}
		if parent != "" && slices.Contains(m.path(parent), id) {
			continue // under its own subtree
		}
		m.parent[id] = parent
		byID(id)[1] = parent
	}
	for range maxRemove { // removals
		all := ids()
		id := all[rng.IntN(len(all))]
		up := m.parent[id]
		for _, r := range d.rows {
			if r[1] == id {
				r[1] = up
				m.parent[r[0]] = up
			}
		}
		delete(m.parent, id)
		d.rows = slices.DeleteFunc(d.rows, func(r []string) bool { return r[0] == id })
	}
	for i := range 10 { // new nodes
		all := ids()
		r := slices.Clone(d.rows[0])
		r[0] = fmt.Sprintf("R%dN%d", round, i)
		r[1] = all[rng.IntN(len(all))]
		m.parent[r[0]] = r[1]
		d.rows = append(d.rows, r)
	}
	return d
}
