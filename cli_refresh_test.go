package main

// End-to-end tests of plan, apply, migrate and edit (issues 6 and 7) against
// DynamoDB Local: what the commands print, how they exit, and what the table
// holds afterwards, read back with Scan.

import (
	"compress/gzip"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/ddbwrite"
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

// ---- plan and apply --------------------------------------------------------

// TestPlanAndApplyEveryLayout plans a refresh of the cars table with every
// kind of change and checks the counts against the layouts' formulas, the
// exit codes, the plan file against what apply writes, and the table after
// apply against import of the snapshot; a second apply writes nothing.
func TestPlanAndApplyEveryLayout(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	typesFlag := fixtureTypes(t, "cars")
	base, snap := carsSnapshot(t)
	snapPath := snap.write(t, filepath.Join(t.TempDir(), "snapshot.csv"))
	oldM, newM := base.model(), snap.model()

	// The hand formulas of the moves, by layout: {puts, deletes}. A
	// subtree of S nodes moved from depth Do to Dn costs S puts in the path
	// layouts; 2S puts and 2S deletes in prefix (object and listing rows
	// under new keys); in closure, the subtree root rewrites its Dn+1 rows
	// (their ParentId), every other node its Dn rows above the subtree, and
	// each node loses Do-Dn rows. The closure formula holds for a move that
	// changes the ancestor at every distance above the subtree. In
	// adjacency only the subtree root's item changes (its ParentId): one
	// put, whatever S.
	moves := []string{"CM17", "CM31"}
	handMoved := map[string][2]int64{}
	var movedNodes int64
	for _, id := range moves {
		S := int64(len(newM.subtree(id)))
		Do, Dn := int64(oldM.depth(id)), int64(newM.depth(id))
		op, np := oldM.path(id), newM.path(id)
		for j := 1; j <= int(min(Do, Dn)); j++ {
			if op[int(Do)-j] == np[int(Dn)-j] {
				t.Fatalf("the move of %s keeps the ancestor at distance %d", id, j)
			}
		}
		t.Logf("move of %s: S=%d, depth %d → %d", id, S, Do, Dn)
		movedNodes += S
		for name, c := range map[string][2]int64{
			layouts.PathName: {S, 0}, layouts.ShardedName: {S, 0},
			layouts.PrefixName:    {2 * S, 2 * S},
			layouts.ClosureName:   {S*Dn + 1, S * (Do - Dn)},
			layouts.AdjacencyName: {1, 0},
		} {
			h := handMoved[name]
			handMoved[name] = [2]int64{h[0] + c[0], h[1] + c[1]}
		}
	}
	if movedNodes != 8 {
		t.Fatalf("fixture changed: %d moved nodes", movedNodes)
	}
	var sumNewDepth1 int64 // closure rows of the new nodes
	for _, id := range []string{"CM49", "CM50"} {
		sumNewDepth1 += int64(newM.depth(id) + 1)
	}

	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, err := layouts.New(name, layouts.Options{})
			if err != nil {
				t.Fatal(err)
			}
			spec := l.Table()
			table := loadTable(t, env, client, "fixtures/cars.csv", typesFlag, l)
			before := tableState(t, client, table, spec)
			sameState(t, "after import", before, wantState(t, "fixtures/cars.csv", typesFlag, l))
			common := []string{"--in", snapPath, "--types", typesFlag, "--layout", name, "--table", table}

			stdout, stderr, code := run(t, env, append([]string{"plan", "--json"}, common...)...)
			if code != 0 {
				t.Fatalf("plan --json: exit %d:\n%s", code, stderr)
			}
			s := parseSummary(t, stdout)
			want := modelPlan(name, oldM, newM)
			for _, r := range []string{"new", "removed", "moved", "changed"} {
				g, w := s.ByReason[r], want[r]
				if g.Nodes != w.Nodes || g.Puts != w.Puts || g.Deletes != w.Deletes {
					t.Errorf("%s: %d nodes, %d puts, %d deletes; want %d, %d, %d", r, g.Nodes, g.Puts, g.Deletes, w.Nodes, w.Puts, w.Deletes)
				}
			}
			if g := s.ByReason["repair"]; g.Puts+g.Deletes != 0 {
				t.Errorf("repairs on a table import wrote: %+v", g)
			}
			// Hand checks, by the formulas of issue 6.
			moved, added := s.ByReason["moved"], s.ByReason["new"]
			wantMoved := handMoved[name]
			wantNew := map[string][2]int64{layouts.PathName: {2, 0}, layouts.ShardedName: {2, 0},
				layouts.PrefixName: {4, 0}, layouts.ClosureName: {sumNewDepth1, 0}, layouts.AdjacencyName: {2, 0}}[name]
			if [2]int64{moved.Puts, moved.Deletes} != wantMoved || [2]int64{added.Puts, added.Deletes} != wantNew {
				t.Errorf("moved %d puts %d deletes, want %v; new %d puts %d deletes, want %v", moved.Puts, moved.Deletes, wantMoved, added.Puts, added.Deletes, wantNew)
			}
			if s.TableNodes != 48 || s.SnapshotNodes != 49 || s.MovedSubtrees != int64(len(moves)) || s.ChangedNodes != 1 || s.Unchanged != 49-2-movedNodes-1 ||
				s.ByReason["moved"].Nodes != movedNodes {
				t.Errorf("summary: %+v", s)
			}
			if s.TableItems != int64(len(before)) || s.SnapshotItems != int64(len(expectedItems(t, snapPath, typesFlag, l))) {
				t.Errorf("summary items: table %d (has %d), snapshot %d", s.TableItems, len(before), s.SnapshotItems)
			}
			var sum count
			for _, c := range s.ByReason {
				sum.Puts, sum.Deletes, sum.WCU = sum.Puts+c.Puts, sum.Deletes+c.Deletes, sum.WCU+c.WCU
			}
			if sum.Puts != s.Total.Puts || sum.Deletes != s.Total.Deletes || sum.WCU != s.Total.WCU || s.Total.WCU < s.changes() {
				t.Errorf("total %+v, sum of reasons %+v", s.Total, sum)
			}

			// The human summary and --detailed-exitcode.
			stdout, stderr, code = run(t, env, append([]string{"plan", "--detailed-exitcode"}, common...)...)
			if code != 1 {
				t.Errorf("plan --detailed-exitcode with changes: exit %d, want 1:\n%s", code, stderr)
			}
			if !strings.Contains(stdout, fmt.Sprintf("moved (%d subtrees)", len(moves))) || strings.Contains(stdout, "No changes") || strings.Contains(stdout, "WARNING") {
				t.Errorf("plan summary:\n%s", stdout)
			}

			// The item-level plan.
			out := filepath.Join(t.TempDir(), "plan.json")
			if _, stderr, code := run(t, env, append([]string{"plan", "--out", out}, common...)...); code != 0 {
				t.Fatalf("plan --out: exit %d:\n%s", code, stderr)
			}
			pf, planPuts, planDels := readPlanFile(t, out, spec)
			if pf.Version != 1 || pf.Table != table || pf.Layout != name || int64(len(pf.Operations)) != s.changes() ||
				int64(len(planPuts)) != s.Total.Puts || int64(len(planDels)) != s.Total.Deletes {
				t.Errorf("plan file: version %d, table %q, layout %q, %d operations (%d puts, %d deletes); summary %+v",
					pf.Version, pf.Table, pf.Layout, len(pf.Operations), len(planPuts), len(planDels), s.Total)
			}
			var opsWCU int64
			lastPut := -1
			for i, op := range pf.Operations {
				opsWCU += op.WCU
				if op.Op == "put" {
					lastPut = i
				} else if lastPut > i {
					t.Errorf("a delete comes before a put")
				}
			}
			if lastPut != int(s.Total.Puts)-1 {
				t.Errorf("puts are not all before the deletes")
			}
			if opsWCU != s.Total.WCU || pf.Summary.Total != s.Total {
				t.Errorf("plan file: operations cost %d WCU, summary %+v, plan --json %+v", opsWCU, pf.Summary.Total, s.Total)
			}
			sameState(t, "after plan (plan must write nothing)", tableState(t, client, table, spec), before)

			// Apply, through a proxy that counts the items written.
			proxy := newProxy(t, endpoint)
			report := filepath.Join(t.TempDir(), "report.json")
			stdout, stderr, code = run(t, awsEnv(proxy.URL()), append([]string{"apply", "--report", report, "--no-progress"}, common...)...)
			if code != 0 {
				t.Fatalf("apply: exit %d:\n%s\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stdout, fmt.Sprintf("applied %d operations", s.changes())) {
				t.Errorf("apply did not say it applied %d operations:\n%s", s.changes(), stdout)
			}
			if c := proxy.Counts(); c.AcceptedItems != s.changes() {
				t.Errorf("apply wrote %d items, the plan has %d operations", c.AcceptedItems, s.changes())
			}
			after := tableState(t, client, table, spec)
			sameState(t, "after apply (import of the snapshot)", after, wantState(t, snapPath, typesFlag, l))
			gotPuts, gotDels := diffStates(before, after)
			sameState(t, "items apply changed vs the plan file's puts", gotPuts, planPuts)
			if !maps.Equal(gotDels, planDels) {
				t.Errorf("apply deleted %d keys, the plan file deletes %d", len(gotDels), len(planDels))
			}
			rep := readReport(t, report)
			if rep.Writer.Items != s.changes() || rep.Plan.Total != s.Total || rep.Plan.MovedSubtrees != int64(len(moves)) || rep.Skipped != 0 {
				t.Errorf("report: writer %d items, plan %+v, skipped %d; plan said %+v", rep.Writer.Items, rep.Plan.Total, rep.Skipped, s.Total)
			}

			// A second apply writes nothing.
			proxy2 := newProxy(t, endpoint)
			stdout, stderr, code = run(t, awsEnv(proxy2.URL()), append([]string{"apply", "--no-progress"}, common...)...)
			if code != 0 || !strings.Contains(stdout, "No changes") {
				t.Errorf("second apply: exit %d:\n%s\n%s", code, stdout, stderr)
			}
			if c := proxy2.Counts(); c.AcceptedItems != 0 || c.Requests == 0 {
				t.Errorf("second apply: %d items written (%d requests)", c.AcceptedItems, c.Requests)
			}
			sameState(t, "after the second apply", tableState(t, client, table, spec), after)
			if _, stderr, code := run(t, env, append([]string{"plan", "--detailed-exitcode"}, common...)...); code != 0 {
				t.Errorf("plan --detailed-exitcode without changes: exit %d, want 0:\n%s", code, stderr)
			}
		})
	}
}

// TestApplyNoChangesWritesReport: an apply that finds nothing to do still
// writes its --report (a CI job reads it every night), and does not leave the
// report of an earlier run in place.
func TestApplyNoChangesWritesReport(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	typesFlag := fixtureTypes(t, "cars")
	l, _ := layouts.New("path", layouts.Options{})
	table := loadTable(t, env, client, "fixtures/cars.csv", typesFlag, l)
	report := filepath.Join(t.TempDir(), "report.json")
	stale := `{"plan":{"total":{"puts":999}},"writer":{"items":999}}`
	if err := os.WriteFile(report, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := run(t, env, "apply", "--in", "fixtures/cars.csv", "--types", typesFlag, "--layout", "path", "--table", table, "--report", report, "--no-progress")
	if code != 0 || !strings.Contains(stdout, "No changes") {
		t.Fatalf("apply: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("no report after an apply without changes: %v", err)
	}
	if string(b) == stale {
		t.Fatalf("apply without changes left the previous run's report in %s: %s", report, b)
	}
	rep := readReport(t, report)
	if rep.Writer.Items != 0 || rep.Plan.changes() != 0 || rep.Plan.TableNodes != 48 {
		t.Errorf("report of an apply without changes: %s", b)
	}
}

// TestApplyRefusesInvalidSnapshot: a snapshot with problems exits 2, names
// where the problem is, and writes nothing.
func TestApplyRefusesInvalidSnapshot(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	l, _ := layouts.New("path", layouts.Options{})
	table := loadTable(t, awsEnv(endpoint), client, "fixtures/cars.csv", fixtureTypes(t, "cars"), l)
	before := rawLines(t, client, table)
	proxy := newProxy(t, endpoint)
	env := awsEnv(proxy.URL())
	for _, tt := range []struct{ file, where string }{
		{"cycle.csv", "cycle.csv:3"},
		{"missing-parent.csv", "missing-parent.csv:3"},
		{"duplicate-id.csv", "duplicate-id.csv:5"},
		{"ragged.csv", "ragged.csv:3"},
		{"delimiter-in-id.csv", "delimiter-in-id.csv:3"},
	} {
		in := filepath.Join("fixtures", "bad", tt.file)
		for _, args := range [][]string{{"plan"}, {"apply", "--allow-mass-delete", "--no-progress"}} {
			_, stderr, code := run(t, env, append(args, "--in", in, "--layout", "path", "--table", table)...)
			if code != 2 || !strings.Contains(stderr, tt.where) {
				t.Errorf("%s %s: exit %d, want 2 naming %s:\n%s", args[0], tt.file, code, tt.where, stderr)
			}
		}
	}
	if c := proxy.Counts(); c.AcceptedItems != 0 {
		t.Errorf("%d items written for invalid snapshots", c.AcceptedItems)
	}
	if !slices.Equal(rawLines(t, client, table), before) {
		t.Error("the table changed")
	}
}

// TestApplyMassDeleteGuard: a snapshot cut to half its rows must not wipe
// half the table unless the user says so.
func TestApplyMassDeleteGuard(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	typesFlag := fixtureTypes(t, "cars")
	full := readCSVFile(t, "fixtures/cars.csv")
	cut := full.truncate(len(full.rows) / 2)
	if len(cut.rows) != len(full.rows)/2 {
		t.Fatalf("the first half of cars.csv is not a forest: %d rows left", len(cut.rows))
	}
	cutPath := cut.write(t, filepath.Join(t.TempDir(), "truncated.csv"))
	removed := len(full.rows) - len(cut.rows)
	// cars.csv gzipped and cut at 97% of its bytes, an empty file, and the
	// header alone.
	tmp := t.TempDir()
	var gz strings.Builder
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(readFile(t, "fixtures/cars.csv")))
	zw.Close()
	gzCut := filepath.Join(tmp, "cut.csv.gz")
	emptyJSONL := filepath.Join(tmp, "empty.jsonl")
	headerOnly := filepath.Join(tmp, "header.csv")
	for path, data := range map[string]string{gzCut: gz.String()[:gz.Len()*97/100], emptyJSONL: "", headerOnly: strings.Join(full.header, ",") + "\n"} {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{layouts.PathName, layouts.ClosureName} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, _ := layouts.New(name, layouts.Options{})
			spec := l.Table()
			env := awsEnv(endpoint)
			table := loadTable(t, env, client, "fixtures/cars.csv", typesFlag, l)
			before := rawLines(t, client, table)
			args := func(in string, extra ...string) []string {
				return append([]string{"apply", "--in", in, "--types", typesFlag, "--layout", name, "--table", table, "--no-progress"}, extra...)
			}

			stdout, stderr, code := run(t, env, "plan", "--in", cutPath, "--types", typesFlag, "--layout", name, "--table", table)
			if code != 0 || !strings.Contains(stdout, "WARNING") || !strings.Contains(stdout, "--allow-mass-delete") ||
				!strings.Contains(stdout, fmt.Sprintf("removes %d of the table's %d nodes", removed, len(full.rows))) {
				t.Errorf("plan of a truncated snapshot: exit %d, no clear warning:\n%s\n%s", code, stdout, stderr)
			}

			ck := filepath.Join(t.TempDir(), "ck.json")
			proxy := newProxy(t, endpoint)
			for _, extra := range [][]string{nil, {"--max-delete-ratio", "0.4"}, {"--checkpoint", ck}} {
				stdout, stderr, code := run(t, awsEnv(proxy.URL()), args(cutPath, extra...)...)
				if code != 2 || !strings.Contains(stderr, "--max-delete-ratio") || !strings.Contains(stderr, "--allow-mass-delete") ||
					!strings.Contains(stderr, "nothing was written") {
					t.Errorf("apply %v of a truncated snapshot: exit %d, want 2 naming the flags:\n%s\n%s", extra, code, stdout, stderr)
				}
			}
			if c := proxy.Counts(); c.AcceptedItems != 0 {
				t.Errorf("refused applies wrote %d items", c.AcceptedItems)
			}
			if !slices.Equal(rawLines(t, client, table), before) {
				t.Fatal("a refused apply changed the table")
			}
			for _, f := range []string{ck, ck + ".plan.json"} {
				if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a refused apply left %s behind (%v)", f, err)
				}
			}

			// Snapshots cut short in ways the guard alone would not see (a
			// gzip file missing its last 3%) or empty ones.
			for _, bad := range []string{gzCut, emptyJSONL, headerOnly} {
				a := args(bad)
				if bad == emptyJSONL {
					a = []string{"apply", "--in", bad, "--layout", name, "--table", table, "--no-progress"}
				}
				stdout, stderr, code := run(t, awsEnv(proxy.URL()), a...)
				if code != 2 {
					t.Errorf("apply of %s: exit %d, want 2:\n%s\n%s", filepath.Base(bad), code, stdout, stderr)
				}
			}
			if c := proxy.Counts(); c.AcceptedItems != 0 {
				t.Errorf("refused applies wrote %d items", c.AcceptedItems)
			}
			if !slices.Equal(rawLines(t, client, table), before) {
				t.Fatal("a refused apply changed the table")
			}

			if stdout, stderr, code := run(t, env, args(cutPath, "--max-delete-ratio", "0.9")...); code != 0 {
				t.Fatalf("apply --max-delete-ratio 0.9: exit %d:\n%s\n%s", code, stdout, stderr)
			}
			sameState(t, "after --max-delete-ratio 0.9", tableState(t, client, table, spec), wantState(t, cutPath, typesFlag, l))
			// The full snapshot puts the removed half back; then the
			// truncated one goes through with --allow-mass-delete.
			if stdout, stderr, code := run(t, env, args("fixtures/cars.csv")...); code != 0 {
				t.Fatalf("apply of the full snapshot: exit %d:\n%s\n%s", code, stdout, stderr)
			}
			sameState(t, "after the full snapshot", tableState(t, client, table, spec), wantState(t, "fixtures/cars.csv", typesFlag, l))
			if stdout, stderr, code := run(t, env, args(cutPath, "--allow-mass-delete")...); code != 0 {
				t.Fatalf("apply --allow-mass-delete: exit %d:\n%s\n%s", code, stdout, stderr)
			}
			sameState(t, "after --allow-mass-delete", tableState(t, client, table, spec), wantState(t, cutPath, typesFlag, l))
		})
	}
}

// TestApplyBadInputExits2: an empty CSV file, and --types given for a
// format that has its own, are mistakes in the input or the command line
// (exit 2, as SPEC's exit codes say), not service errors (3); nothing is
// written.
func TestApplyBadInputExits2(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	l, _ := layouts.New("path", layouts.Options{})
	table := loadTable(t, awsEnv(endpoint), client, "fixtures/cars.csv", fixtureTypes(t, "cars"), l)
	before := rawLines(t, client, table)
	empty := filepath.Join(t.TempDir(), "snapshot.csv")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"plan"}, {"apply", "--no-progress"}} {
		_, stderr, code := run(t, awsEnv(endpoint), append(cmd, "--in", empty, "--layout", "path", "--table", table)...)
		if code != 2 || !strings.Contains(stderr, empty) {
			t.Errorf("%s of an empty CSV snapshot: exit %d, want 2 naming the file:\n%s", cmd[0], code, stderr)
		}
		_, stderr, code = run(t, awsEnv(endpoint), append(cmd, "--in", "fixtures/cars.json", "--types", "qty:N", "--layout", "path", "--table", table)...)
		if code != 2 || !strings.Contains(stderr, "--types") {
			t.Errorf("%s of a JSON snapshot with --types: exit %d, want 2:\n%s", cmd[0], code, stderr)
		}
	}
	if !slices.Equal(rawLines(t, client, table), before) {
		t.Error("the table changed")
	}
}

// TestApplyInterruptResumes interrupts a checkpointed apply with SIGINT: it
// exits 130 with its checkpoint and plan saved; another snapshot is refused
// while the checkpoint is unfinished; the rerun goes on and the table ends
// exact.
func TestApplyInterruptResumes(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	in := genInput(t, 3000)
	l, _ := layouts.New("path", layouts.Options{})
	want := wantState(t, in, "", l)
	table := ddblocal.NewTable(t, client, l.Table())
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck.json")
	args := []string{"apply", "--in", in, "--layout", "path", "--table", table, "--checkpoint", ck, "--no-progress"}

	// Slow: each item costs 3 WCU (the table and two indexes), so 9000 WCU
	// at 1500 a second take about 6 s.
	cmd := exec.Command(treeportBin, append(args, "--max-wcu", "1500", "--concurrency", "2")...)
	cmd.Env = append(os.Environ(), awsEnv(endpoint)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Interrupt once the checkpoint shows acknowledged writes.
	deadline := time.After(60 * time.Second)
wait:
	for {
		select {
		case err := <-done:
			t.Fatalf("apply ended before it could be interrupted (%v):\n%s", err, stderr.String())
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("no progress in the checkpoint after 60 s:\n%s", stderr.String())
		case <-time.After(50 * time.Millisecond):
			if c, err := ddbwrite.LoadCheckpoint(ck); err == nil && c.Watermark > 0 {
				break wait
			}
		}
	}
	cmd.Process.Signal(os.Interrupt)
	<-done
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d after SIGINT, want 130:\n%s", code, stderr.String())
	}
	saved, err := ddbwrite.LoadCheckpoint(ck)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Done || saved.Watermark <= 0 || saved.Watermark >= int64(len(want)) {
		t.Fatalf("checkpoint after SIGINT: %+v (plan of %d puts)", saved, len(want))
	}
	if _, err := os.Stat(ck + ".plan.json"); err != nil {
		t.Fatalf("no plan beside the checkpoint: %v", err)
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr does not say it was interrupted:\n%s", stderr.String())
	}
	partial := rawLines(t, client, table)
	if int64(len(partial)) < saved.Watermark || len(partial) >= len(want) {
		t.Fatalf("table has %d items, checkpoint says %d acknowledged of %d", len(partial), saved.Watermark, len(want))
	}

	// Another snapshot while the checkpoint is unfinished.
	other := filepath.Join(dir, "other.jsonl")
	if _, stderr, code := run(t, nil, "gen", "--nodes", "50", "--shape", "random", "--seed", "9", "--out", other); code != 0 {
		t.Fatal(stderr)
	}
	_, msg, code := run(t, awsEnv(endpoint), "apply", "--in", other, "--layout", "path", "--table", table, "--checkpoint", ck, "--no-progress")
	if code != 2 || !strings.Contains(msg, ck) || !strings.Contains(msg, "unfinished") {
		t.Errorf("apply of another snapshot over an unfinished checkpoint: exit %d, want 2:\n%s", code, msg)
	}
	if !slices.Equal(rawLines(t, client, table), partial) {
		t.Fatal("the refused apply changed the table")
	}

	report := filepath.Join(dir, "report.json")
	stdout, msg, code := run(t, awsEnv(endpoint), append(args, "--report", report)...)
	if code != 0 {
		t.Fatalf("resume: exit %d:\n%s\n%s", code, stdout, msg)
	}
	if !strings.Contains(msg, "resuming from checkpoint") {
		t.Errorf("the rerun did not say it resumed:\n%s", msg)
	}
	sameState(t, "after the resumed apply", tableState(t, client, table, l.Table()), want)
	rep := readReport(t, report)
	if rep.Skipped < saved.Watermark || rep.Skipped+rep.Writer.Items != int64(len(want)) {
		t.Errorf("resumed report: %d skipped + %d written, want %d in all, at least %d skipped", rep.Skipped, rep.Writer.Items, len(want), saved.Watermark)
	}
	if c, err := ddbwrite.LoadCheckpoint(ck); err != nil || !c.Done {
		t.Errorf("checkpoint after the resumed apply: %+v, %v", c, err)
	}
	if _, err := os.Stat(ck + ".plan.json"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("plan file left after the apply finished (%v)", err)
	}
	// A finished checkpoint plans afresh: nothing to do.
	stdout, msg, code = run(t, awsEnv(endpoint), args...)
	if code != 0 || !strings.Contains(stdout, "No changes") {
		t.Errorf("apply after the finished checkpoint: exit %d:\n%s\n%s", code, stdout, msg)
	}
}

// ---- migrate ------------------------------------------------------------

// migrateVariant is a destination layout with its options, as flags and as
// layouts.Options.
type migrateVariant struct {
	flags []string
	opts  layouts.Options
}

// sameLayoutVariants gives each layout, migrated into itself, other names or
// another delimiter, so that the copy is not the source's bytes.
var sameLayoutVariants = map[string]migrateVariant{
	layouts.PathName: {[]string{"--to-delimiter", "/", "--to-attr", "Path=Route"},
		layouts.Options{Delimiter: "/", Attr: map[string]string{"Path": "Route"}}},
	layouts.ShardedName: {[]string{"--to-shards", "3", "--to-attr", "GraphId=Graph"},
		layouts.Options{Shards: 3, Attr: map[string]string{"GraphId": "Graph"}}},
	layouts.ClosureName: {[]string{"--to-attr", "RelativeDepth=Level", "--to-attr", "ByAncestor=ByAnc"},
		layouts.Options{Attr: map[string]string{"RelativeDepth": "Level", "ByAncestor": "ByAnc"}}},
	layouts.PrefixName: {[]string{"--to-delimiter", "/"}, layouts.Options{Delimiter: "/"}},
	layouts.AdjacencyName: {[]string{"--to-attr", "Id=NodeId", "--to-attr", "ByParent=GSI1"},
		layouts.Options{Attr: map[string]string{"Id": "NodeId", "ByParent": "GSI1"}}},
}

// TestMigrateEveryLayoutPair migrates the typed cars table from every layout
// into every layout: each copy is verified, equals import of the same data
// into the destination layout, and the source is not touched.
func TestMigrateEveryLayoutPair(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: migrates between every pair of layouts (62 s under -race)")
	}
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	typesFlag := fixtureTypes(t, "cars")
	const in = "fixtures/cars.csv"
	// One imported table per layout: the sources, and what each
	// destination must equal.
	sources := map[string]string{}
	imported := map[string][]string{}
	for _, name := range layouts.Names() {
		l, _ := layouts.New(name, layouts.Options{})
		sources[name] = loadTable(t, env, client, in, typesFlag, l)
		imported[name] = canonical(t, scanTable(t, client, sources[name]))
		diffLines(t, imported[name], canonical(t, expectedItems(t, in, typesFlag, l)))
	}
	t.Run("pairs", func(t *testing.T) {
		for _, from := range layouts.Names() {
			t.Run(from, func(t *testing.T) {
				t.Parallel()
				src := sources[from]
				before := rawLines(t, client, src)
				for _, to := range layouts.Names() {
					dst := ddblocal.TableName(t)
					dropTableLater(t, client, dst)
					args := []string{"migrate", "--from-table", src, "--from-layout", from, "--to-table", dst, "--to-layout", to, "--create-table", "--no-progress"}
					want := imported[to]
					if from == to {
						v := sameLayoutVariants[to]
						args = append(args, v.flags...)
						l, err := layouts.New(to, v.opts)
						if err != nil {
							t.Fatal(err)
						}
						want = canonical(t, expectedItems(t, in, typesFlag, l))
					}
					stdout, stderr, code := run(t, env, args...)
					if code != 0 || !strings.Contains(stdout, "verified") {
						t.Errorf("%s → %s: exit %d:\n%s\n%s", from, to, code, stdout, stderr)
						continue
					}
					got := canonical(t, scanTable(t, client, dst))
					if !slices.Equal(got, want) {
						t.Errorf("%s → %s: the copy differs from import into %s:", from, to, to)
						diffLines(t, got, want)
					}
				}
				if !slices.Equal(rawLines(t, client, src), before) {
					t.Errorf("migrating from %s changed the source table", from)
				}
				// The source as its own destination is refused.
				_, stderr, code := run(t, env, "migrate", "--from-table", src, "--from-layout", from, "--to-table", src, "--to-layout", layouts.ClosureName, "--no-progress")
				if code != 2 || !strings.Contains(stderr, "--from-table and --to-table") {
					t.Errorf("migrate into its own source: exit %d, want 2:\n%s", code, stderr)
				}
				if !slices.Equal(rawLines(t, client, src), before) {
					t.Errorf("migrate into its own source changed it")
				}
			})
		}
	})
}

// ---- shards (issue 7) ---------------------------------------------------------

// TestShardedApplyWritesEachItemOnce runs apply as 4 shards one after the
// other, on a fresh table and then with the refreshed snapshot: the shards'
// plans are disjoint and cover the unsharded plan, their writes add up to
// it, and the table ends as the unsharded apply leaves it.
func TestShardedApplyWritesEachItemOnce(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	typesFlag := fixtureTypes(t, "cars")
	_, snap := carsSnapshot(t)
	snapPath := snap.write(t, filepath.Join(t.TempDir(), "snapshot.csv"))
	const in, N = "fixtures/cars.csv", 4
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, _ := layouts.New(name, layouts.Options{})
			spec := l.Table()
			table := ddblocal.NewTable(t, client, spec)
			dir := t.TempDir()
			common := func(snapshot string) []string {
				return []string{"--in", snapshot, "--types", typesFlag, "--layout", name, "--table", table}
			}
			for round, snapshot := range []string{in, snapPath} {
				before := tableState(t, client, table, spec)
				stdout, stderr, code := run(t, env, append([]string{"plan", "--json"}, common(snapshot)...)...)
				if code != 0 {
					t.Fatalf("plan: exit %d: %s", code, stderr)
				}
				whole := parseSummary(t, stdout)
				if whole.changes() == 0 {
					t.Fatalf("round %d: nothing to plan", round)
				}
				// The shards' plans split the whole plan's keys.
				out := filepath.Join(dir, fmt.Sprintf("plan%d.json", round))
				if _, stderr, code := run(t, env, append([]string{"plan", "--out", out}, common(snapshot)...)...); code != 0 {
					t.Fatalf("plan --out: exit %d: %s", code, stderr)
				}
				_, wholePuts, wholeDels := readPlanFile(t, out, spec)
				unionPuts, unionDels := map[string]string{}, map[string]bool{}
				for k := range N {
					shard := fmt.Sprintf("%d/%d", k, N)
					if _, stderr, code := run(t, env, append([]string{"plan", "--shard", shard, "--out", out}, common(snapshot)...)...); code != 0 {
						t.Fatalf("plan --shard %s: exit %d: %s", shard, code, stderr)
					}
					pf, puts, dels := readPlanFile(t, ddbwrite.Shard{K: k, Of: N}.FileName(out), spec)
					if pf.Shard != shard || pf.Summary.Shard != shard {
						t.Errorf("plan of shard %s says shard %q/%q", shard, pf.Shard, pf.Summary.Shard)
					}
					for key, v := range puts {
						if _, dup := unionPuts[key]; dup {
							t.Errorf("round %d: %q is put by two shards", round, key)
						}
						unionPuts[key] = v
					}
					for key := range dels {
						if unionDels[key] {
							t.Errorf("round %d: %q is deleted by two shards", round, key)
						}
						unionDels[key] = true
					}
				}
				sameState(t, "union of the shards' puts", unionPuts, wholePuts)
				if !maps.Equal(unionDels, wholeDels) {
					t.Errorf("round %d: the shards delete %d keys, the whole plan %d", round, len(unionDels), len(wholeDels))
				}

				// Apply the shards side by side, as their copies run: a
				// copy's deletes of moved nodes wait for the new items
				// other copies put (a prefix move changes a node's keys).
				var written, planned int64
				type result struct {
					stdout, stderr string
					code           int
				}
				results := make([]result, N)
				var wg sync.WaitGroup
				report := filepath.Join(dir, fmt.Sprintf("report%d.json", round))
				for k := range N {
					wg.Add(1)
					go func() {
						defer wg.Done()
						shard := ddbwrite.Shard{K: k, Of: N}
						stdout, stderr, code := run(t, env, append([]string{"apply", "--shard", shard.String(), "--report", report, "--no-progress"}, common(snapshot)...)...)
						results[k] = result{stdout, stderr, code}
					}()
				}
				wg.Wait()
				for k := range N {
					shard := ddbwrite.Shard{K: k, Of: N}
					stdout, stderr, code := results[k].stdout, results[k].stderr, results[k].code
					if code != 0 {
						t.Fatalf("apply --shard %s: exit %d:\n%s\n%s", shard, code, stdout, stderr)
					}
					if _, err := os.Stat(shard.FileName(report)); errors.Is(err, os.ErrNotExist) && strings.Contains(stdout, "No changes") {
						continue // nothing for this shard (and no report: see TestApplyNoChangesWritesReport)
					}
					rep := readReport(t, shard.FileName(report))
					written += rep.Writer.Items
					planned += rep.Plan.changes()
					if rep.Plan.Shard != shard.String() || rep.Writer.Items != rep.Plan.changes() {
						t.Errorf("report of shard %s: shard %q, %d written, %d planned", shard, rep.Plan.Shard, rep.Writer.Items, rep.Plan.changes())
					}
				}
				if written != whole.changes() || planned != whole.changes() {
					t.Errorf("round %d: the shards planned %d and wrote %d items; the unsharded plan has %d", round, planned, written, whole.changes())
				}
				after := tableState(t, client, table, spec)
				sameState(t, fmt.Sprintf("round %d: after the shards", round), after, wantState(t, snapshot, typesFlag, l))
				gotPuts, gotDels := diffStates(before, after)
				sameState(t, "what the shards changed vs the unsharded plan", gotPuts, wholePuts)
				if !maps.Equal(gotDels, wholeDels) {
					t.Errorf("round %d: the shards deleted %d keys, the unsharded plan %d", round, len(gotDels), len(wholeDels))
				}
			}
		})
	}
}

// TestShardedMigrate migrates in 3 shards: each verifies its shard, and the
// destination ends equal to an unsharded migration's.
func TestShardedMigrate(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	typesFlag := fixtureTypes(t, "cars")
	closure, _ := layouts.New(layouts.ClosureName, layouts.Options{})
	src := loadTable(t, env, client, "fixtures/cars.csv", typesFlag, closure)
	before := rawLines(t, client, src)
	migrate := func(dst string, extra ...string) (string, string, int) {
		return run(t, env, append([]string{"migrate", "--from-table", src, "--from-layout", "closure", "--to-table", dst,
			"--to-layout", "prefix", "--create-table", "--no-progress"}, extra...)...)
	}
	whole := ddblocal.TableName(t)
	dropTableLater(t, client, whole)
	if stdout, stderr, code := migrate(whole); code != 0 || !strings.Contains(stdout, "verified") {
		t.Fatalf("unsharded migrate: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	want := canonical(t, scanTable(t, client, whole))

	const N = 3
	sharded := ddblocal.TableName(t)
	dropTableLater(t, client, sharded)
	report := filepath.Join(t.TempDir(), "report.json")
	var written int64
	for k := range N {
		shard := ddbwrite.Shard{K: k, Of: N}
		stdout, stderr, code := migrate(sharded, "--shard", shard.String(), "--report", report)
		if code != 0 || !strings.Contains(stdout, "verified") || !strings.Contains(stdout, "(shard "+shard.String()+")") {
			t.Fatalf("migrate --shard %s: exit %d:\n%s\n%s", shard, code, stdout, stderr)
		}
		rep := readReport(t, shard.FileName(report))
		written += rep.Writer.Items
		n := int64(len(scanTable(t, client, sharded)))
		if rep.Writer.Items <= 0 || (k < N-1 && n >= int64(len(want))) || n != written {
			t.Errorf("after shard %s: %d items written by it, %d in all, the table holds %d of %d", shard, rep.Writer.Items, written, n, len(want))
		}
	}
	if written != int64(len(want)) {
		t.Errorf("the shards wrote %d items, the unsharded migrate %d", written, len(want))
	}
	diffLines(t, canonical(t, scanTable(t, client, sharded)), want)
	if !slices.Equal(rawLines(t, client, src), before) {
		t.Error("the source table changed")
	}
}

// ---- edit ---------------------------------------------------------------

// editTree is issue 6's tree A{B{D{G{I}},E},C{F{H}}}.
const editTree = "id,parent_id,name\n" +
	"A,,alpha\nB,A,beta\nC,A,gamma\nD,B,delta\nE,B,epsilon\nF,C,phi\nG,D,gee\nH,F,eta\nI,G,iota\n"

// TestEditMovesEveryLayout carries out issue 6's three moves as three edit
// runs in every layout, checks the descendants queries after each, and that
// the table then equals import of the edited tree with exactly the item
// writes that takes; refused edits, --dry-run and a bad ops line write
// nothing.
func TestEditMovesEveryLayout(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	tree := parseCSV(t, editTree)
	steps := []struct {
		name  string
		ops   string
		apply func(m treeModel)
		// issue 6's answers: id → descendants --min-depth 0.
		want map[string]string
	}{
		{"move D under E", `{"op":"move","id":"D","parent":"E"}`,
			func(m treeModel) { m.parent["D"] = "E" },
			map[string]string{"A": "A0 B1 C1 E2 F2 D3 H3 G4 I5", "B": "B0 E1 D2 G3 I4"}},
		{"move I under A", `{"op":"move","id":"I","parent":"A"}`,
			func(m treeModel) { m.parent["I"] = "A" },
			map[string]string{"A": "A0 B1 C1 I1 E2 F2 D3 H3 G4", "D": "D0 G1"}},
		{"move I under C", `{"op":"move","id":"I","parent":"C"}`,
			func(m treeModel) { m.parent["I"] = "C" },
			map[string]string{"C": "C0 F1 I1 H2"}},
		{"set G, delete F", `{"op":"set","id":"G","attributes":{"name":"GEE"}}` + "\n" + `{"op":"delete","id":"F"}`,
			func(m treeModel) {
				m.attrs["G"] = "GEE"
				m.parent["H"] = "C"
				delete(m.parent, "F")
				delete(m.attrs, "F")
			},
			map[string]string{"C": "C0 H1 I1"}},
		// Several edits in one file, each on the tree the previous ones
		// left: B may go under G once G has left B's subtree.
		{"G out of B, B under G, set D, delete E", `{"op":"move","id":"G","parent":"C"}` + "\n" +
			`{"op":"move","id":"B","parent":"G"}` + "\n" +
			`{"op":"set","id":"D","attributes":{"name":"DEE"}}` + "\n" +
			`{"op":"delete","id":"E"}`,
			func(m treeModel) {
				m.parent["G"] = "C"
				m.parent["B"] = "G"
				m.attrs["D"] = "DEE"
				m.parent["D"] = "B"
				delete(m.parent, "E")
				delete(m.attrs, "E")
			},
			map[string]string{"A": "A0 C1 G2 H2 I2 B3 D4"}},
		// A subtree made a tree of its own: TreeId, GraphId and the prefix
		// keys of all of it change.
		{"B to the top", `{"op":"move","id":"B","parent":null}`,
			func(m treeModel) { m.parent["B"] = "" },
			map[string]string{"B": "B0 D1", "A": "A0 C1 G2 H2 I2"}},
		// A move and its undoing in one file write nothing.
		{"H away and back", `{"op":"move","id":"H","parent":"A"}` + "\n" + `{"op":"move","id":"H","parent":"C"}`,
			func(treeModel) {}, nil},
		// Two trees become one.
		{"B under I", `{"op":"move","id":"B","parent":"I"}`,
			func(m treeModel) { m.parent["B"] = "I" },
			map[string]string{"A": "A0 C1 G2 H2 I2 B3 D4"}},
	}
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, _ := layouts.New(name, layouts.Options{})
			spec := l.Table()
			dir := t.TempDir()
			table := loadTable(t, env, client, tree.write(t, filepath.Join(dir, "tree.csv")), "", l)
			m := tree.model()
			query := func(id string) string {
				t.Helper()
				stdout, stderr, code := run(t, env, "query", "descendants", "--table", table, "--layout", name, "--id", id, "--min-depth", "0")
				if code != 0 {
					t.Fatalf("query descendants %s: exit %d: %s", id, code, stderr)
				}
				var got []string
				for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
					var r struct {
						ID    string `json:"id"`
						Depth int    `json:"relative_depth"`
					}
					if err := json.Unmarshal([]byte(line), &r); err != nil {
						t.Fatalf("query output %q: %v", line, err)
					}
					got = append(got, fmt.Sprintf("%s%d", r.ID, r.Depth))
				}
				return strings.Join(got, " ")
			}
			edit := func(ops string, extra ...string) (string, string, int, string) {
				t.Helper()
				path := filepath.Join(dir, fmt.Sprintf("ops-%d.jsonl", time.Now().UnixNano()))
				if err := os.WriteFile(path, []byte(ops+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				stdout, stderr, code := run(t, env, append([]string{"edit", "--ops", path, "--table", table, "--layout", name, "--no-progress"}, extra...)...)
				return stdout, stderr, code, path
			}

			for i, st := range steps {
				before := tableState(t, client, table, spec)
				next := m.clone()
				st.apply(next)
				// The tree after the step, as a CSV for import's items.
				var csvText strings.Builder
				csvText.WriteString("id,parent_id,name\n")
				ids := slices.Sorted(maps.Keys(next.parent))
				for _, id := range ids {
					fmt.Fprintf(&csvText, "%s,%s,%s\n", id, next.parent[id], next.attrs[id])
				}
				wantPath := parseCSV(t, csvText.String()).write(t, filepath.Join(dir, fmt.Sprintf("step%d.csv", i)))
				want := wantState(t, wantPath, "", l)

				// --dry-run first: it writes nothing.
				stdout, stderr, code, _ := edit(st.ops, "--dry-run")
				if code != 0 || !strings.Contains(stdout, "puts and") {
					t.Fatalf("%s --dry-run: exit %d:\n%s\n%s", st.name, code, stdout, stderr)
				}
				sameState(t, st.name+" --dry-run", tableState(t, client, table, spec), before)

				stdout, stderr, code, _ = edit(st.ops)
				if code != 0 {
					t.Fatalf("%s: exit %d:\n%s\n%s", st.name, code, stdout, stderr)
				}
				m = next
				after := tableState(t, client, table, spec)
				sameState(t, st.name+": the table vs import of the edited tree", after, want)
				// The fewest writes: exactly the items that differ.
				puts, dels := diffStates(before, after)
				if w := fmt.Sprintf("%d puts and %d deletes", len(puts), len(dels)); !strings.Contains(stdout, w) {
					t.Errorf("%s: want %q in:\n%s", st.name, w, stdout)
				}
				for _, id := range []string{"A", "B", "D", "C", "G"} {
					if _, ok := m.parent[id]; !ok {
						continue
					}
					got := query(id)
					if w, ok := st.want[id]; ok && got != w {
						t.Errorf("%s: descendants of %s = %q, issue 6 says %q", st.name, id, got, w)
					}
					if w := m.descendants(id); got != w {
						t.Errorf("%s: descendants of %s = %q, want %q", st.name, id, got, w)
					}
				}
			}

			// Refused edits write nothing, even the good edits before them.
			before := rawLines(t, client, table)
			for _, tt := range []struct{ what, ops, msg string }{
				{"move under its own descendant", `{"op":"move","id":"A","parent":"G"}`, "descendant"},
				{"good move, then a move under its own descendant", `{"op":"move","id":"H","parent":"I"}` + "\n" + `{"op":"move","id":"C","parent":"H"}`, "descendant"},
				{"move under itself", `{"op":"move","id":"D","parent":"D"}`, "own parent"},
				{"delete a root with children", `{"op":"delete","id":"A"}`, "root"},
				{"move a node that is not there", `{"op":"move","id":"Z","parent":"A"}`, `"Z"`},
				{"edit a node deleted by an earlier edit", `{"op":"delete","id":"D"}` + "\n" + `{"op":"set","id":"D","attributes":{"name":"x"}}`, "deleted"},
			} {
				stdout, stderr, code, path := edit(tt.ops)
				if code != 2 || !strings.Contains(stderr, tt.msg) || !strings.Contains(stderr, path+":") || !strings.Contains(stderr, "nothing was written") {
					t.Errorf("%s: exit %d, want 2 with %q and the file:line:\n%s\n%s", tt.what, code, tt.msg, stdout, stderr)
				}
			}
			_, stderr, code, path := edit(`{"op":"move","id":"H","parent":"A"}` + "\n" + `{"op":"move","id":"H"` + "\n")
			if code != 2 || !strings.Contains(stderr, path+":2") {
				t.Errorf("bad ops line: exit %d, want 2 naming %s:2:\n%s", code, path, stderr)
			}
			if !slices.Equal(rawLines(t, client, table), before) {
				t.Error("a refused edit changed the table")
			}
		})
	}
}

// TestPlanRepairsHandEditedTable: items changed, deleted or added by hand
// (the node's attributes untouched) are planned as repairs and apply puts
// the table right.
func TestPlanRepairsHandEditedTable(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	typesFlag := fixtureTypes(t, "cars")
	const in = "fixtures/cars.csv"
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	for _, tt := range []struct {
		layout     string
		puts, dels int64
		tamper     func(t *testing.T, table string, items map[string]layouts.Item)
	}{
		{layout: layouts.ClosureName, puts: 2, dels: 1, tamper: func(t *testing.T, table string, items map[string]layouts.Item) {
			// CM40's copy under its parent altered, its copy under the
			// root gone, and a row no node wants.
			row := maps.Clone(items["CM40\x001"])
			row["name"] = s("tampered")
			putItem(t, client, table, row)
			deleteItem(t, client, table, layouts.Item{"Id": s("CM40"), "RelativeDepth": n("2")})
			stray := maps.Clone(items["CM40\x002"])
			stray["RelativeDepth"] = n("7")
			putItem(t, client, table, stray)
		}},
		{layout: layouts.PathName, puts: 1, dels: 0, tamper: func(t *testing.T, table string, items map[string]layouts.Item) {
			row := maps.Clone(items["CM40"])
			row["TreeId"] = s("CM9")
			putItem(t, client, table, row)
		}},
	} {
		t.Run(tt.layout, func(t *testing.T) {
			t.Parallel()
			l, _ := layouts.New(tt.layout, layouts.Options{})
			table := loadTable(t, env, client, in, typesFlag, l)
			items := map[string]layouts.Item{}
			for _, it := range scanTable(t, client, table) {
				items[keyText(l.Table(), it)] = it
			}
			tt.tamper(t, table, items)
			common := []string{"--in", in, "--types", typesFlag, "--layout", tt.layout, "--table", table}
			stdout, stderr, code := run(t, env, append([]string{"plan", "--json", "--detailed-exitcode"}, common...)...)
			if code != 1 {
				t.Fatalf("plan of a hand-edited table: exit %d, want 1:\n%s\n%s", code, stdout, stderr)
			}
			sum := parseSummary(t, stdout)
			if r := sum.ByReason["repair"]; r.Puts != tt.puts || r.Deletes != tt.dels || sum.changes() != tt.puts+tt.dels || sum.Unchanged != 48 {
				t.Errorf("repairs: %+v, total %+v, unchanged %d; want %d puts, %d deletes", r, sum.Total, sum.Unchanged, tt.puts, tt.dels)
			}
			if _, stderr, code := run(t, env, append([]string{"apply", "--no-progress"}, common...)...); code != 0 {
				t.Fatalf("apply: exit %d: %s", code, stderr)
			}
			sameState(t, "after the repair", tableState(t, client, table, l.Table()), wantState(t, in, typesFlag, l))
		})
	}
}

func putItem(t *testing.T, client *dynamodb.Client, table string, item layouts.Item) {
	t.Helper()
	if _, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatal(err)
	}
}

func deleteItem(t *testing.T, client *dynamodb.Client, table string, key layouts.Item) {
	t.Helper()
	if _, err := client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key}); err != nil {
		t.Fatal(err)
	}
}

// TestApplyTableChecks: a missing table is refused (apply says how to
// create it), --create-table creates and fills it, and a table of another
// layout is refused before anything is written.
func TestApplyTableChecks(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	typesFlag := fixtureTypes(t, "cars")
	const in = "fixtures/cars.csv"
	table := ddblocal.TableName(t)
	dropTableLater(t, client, table)
	common := []string{"--in", in, "--types", typesFlag, "--layout", "prefix", "--table", table}
	if _, stderr, code := run(t, env, append([]string{"plan"}, common...)...); code != 2 {
		t.Errorf("plan of a missing table: exit %d, want 2: %s", code, stderr)
	}
	if _, stderr, code := run(t, env, append([]string{"apply", "--no-progress"}, common...)...); code != 2 || !strings.Contains(stderr, "--create-table") {
		t.Errorf("apply to a missing table: exit %d, want 2 naming --create-table: %s", code, stderr)
	}
	if _, stderr, code := run(t, env, append([]string{"apply", "--create-table", "--no-progress"}, common...)...); code != 0 {
		t.Fatalf("apply --create-table: exit %d: %s", code, stderr)
	}
	prefix, _ := layouts.New("prefix", layouts.Options{})
	sameState(t, "after apply --create-table", tableState(t, client, table, prefix.Table()), wantState(t, in, typesFlag, prefix))
	before := rawLines(t, client, table)
	_, stderr, code := run(t, env, "apply", "--in", in, "--types", typesFlag, "--layout", "closure", "--table", table, "--no-progress")
	if code != 2 || !strings.Contains(stderr, "does not match") {
		t.Errorf("apply with the wrong layout: exit %d, want 2: %s", code, stderr)
	}
	if !slices.Equal(rawLines(t, client, table), before) {
		t.Error("apply with the wrong layout changed the table")
	}
}

// TestMigrateRefusesToWipeDestination: a destination holding other nodes
// would lose them all; migrate refuses unless told, like apply.
func TestMigrateRefusesToWipeDestination(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	closure, _ := layouts.New(layouts.ClosureName, layouts.Options{})
	prefix, _ := layouts.New(layouts.PrefixName, layouts.Options{})
	src := loadTable(t, env, client, "fixtures/cars.csv", fixtureTypes(t, "cars"), closure)
	dst := loadTable(t, env, client, "fixtures/folders.csv", fixtureTypes(t, "folders"), prefix)
	before := rawLines(t, client, dst)
	args := []string{"migrate", "--from-table", src, "--from-layout", "closure", "--to-table", dst, "--to-layout", "prefix", "--no-progress"}
	stdout, stderr, code := run(t, env, args...)
	if code != 2 || !strings.Contains(stderr, "--allow-mass-delete") || strings.Contains(stdout, "verified") {
		t.Errorf("migrate over another tree: exit %d, want 2 naming --allow-mass-delete:\n%s\n%s", code, stdout, stderr)
	}
	if !slices.Equal(rawLines(t, client, dst), before) {
		t.Fatal("the refused migrate changed the destination")
	}
	stdout, stderr, code = run(t, env, append(args, "--allow-mass-delete")...)
	if code != 0 || !strings.Contains(stdout, "verified") {
		t.Fatalf("migrate --allow-mass-delete: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	sameState(t, "destination", tableState(t, client, dst, prefix.Table()), wantState(t, "fixtures/cars.csv", fixtureTypes(t, "cars"), prefix))
}

// TestMigrateInterruptResumes interrupts a checkpointed migrate: the rerun
// resumes, verifies, and the copy is exact; other destination options are
// refused while the checkpoint is unfinished.
func TestMigrateInterruptResumes(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	in := genInput(t, 600)
	path, _ := layouts.New(layouts.PathName, layouts.Options{})
	prefix, _ := layouts.New(layouts.PrefixName, layouts.Options{})
	src := loadTable(t, env, client, in, "", path)
	srcBefore := rawLines(t, client, src)
	dst := ddblocal.TableName(t)
	dropTableLater(t, client, dst)
	ck := filepath.Join(t.TempDir(), "ck.json")
	args := []string{"migrate", "--from-table", src, "--from-layout", "path", "--to-table", dst, "--to-layout", "prefix",
		"--create-table", "--checkpoint", ck, "--no-progress"}
	// 1200 items of 1 WCU at 150 a second: about 8 s.
	cmd := exec.Command(treeportBin, append(args, "--max-wcu", "150", "--concurrency", "1")...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(60 * time.Second)
wait:
	for {
		select {
		case err := <-done:
			t.Fatalf("migrate ended before it could be interrupted (%v):\n%s", err, stderr.String())
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("no progress in the checkpoint after 60 s:\n%s", stderr.String())
		case <-time.After(50 * time.Millisecond):
			if c, err := ddbwrite.LoadCheckpoint(ck); err == nil && c.Watermark > 0 {
				break wait
			}
		}
	}
	cmd.Process.Signal(os.Interrupt)
	<-done
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d after SIGINT, want 130:\n%s", code, stderr.String())
	}
	if _, err := os.Stat(ck + ".plan.json"); err != nil {
		t.Fatalf("no plan beside the checkpoint: %v", err)
	}
	partial := rawLines(t, client, dst)
	if len(partial) == 0 || len(partial) >= 1200 {
		t.Fatalf("destination holds %d of 1200 items after the interrupt", len(partial))
	}
	_, msg, code := run(t, env, append(slices.Clone(args), "--to-delimiter", "/")...)
	if code != 2 || !strings.Contains(msg, "unfinished") {
		t.Errorf("migrate with other destination options over an unfinished checkpoint: exit %d, want 2:\n%s", code, msg)
	}
	if !slices.Equal(rawLines(t, client, dst), partial) {
		t.Fatal("the refused migrate changed the destination")
	}
	stdout, msg, code := run(t, env, args...)
	if code != 0 || !strings.Contains(stdout, "verified") || !strings.Contains(msg, "resuming from checkpoint") {
		t.Fatalf("resumed migrate: exit %d:\n%s\n%s", code, stdout, msg)
	}
	sameState(t, "destination", tableState(t, client, dst, prefix.Table()), wantState(t, in, "", prefix))
	if !slices.Equal(rawLines(t, client, src), srcBefore) {
		t.Error("the source table changed")
	}
}

// TestApplyEditMigrateWithLayoutOptions runs apply, edit and migrate on
// tables written with renamed attributes, other delimiters, other shard
// counts and a closure that copies only some attributes.
func TestApplyEditMigrateWithLayoutOptions(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	typesFlag := fixtureTypes(t, "cars")
	_, snap := carsSnapshot(t)
	dir := t.TempDir()
	snapPath := snap.write(t, filepath.Join(dir, "snapshot.csv"))
	// The edit below moves CM17 back under CM15.
	edited := snap.clone()
	edited.set(t, "CM17", "parent_id", "CM15")
	editedPath := edited.write(t, filepath.Join(dir, "edited.csv"))
	closure, _ := layouts.New(layouts.ClosureName, layouts.Options{})
	for _, tt := range []struct {
		layout string
		flags  []string // pairs: flag, value
		opts   layouts.Options
	}{
		{layouts.PathName, []string{"--attr", "Id=NodeId", "--attr", "ParentId=Up", "--attr", "ByPath=GSI2", "--delimiter", "/"},
			layouts.Options{Attr: map[string]string{"Id": "NodeId", "ParentId": "Up", "ByPath": "GSI2"}, Delimiter: "/"}},
		{layouts.ShardedName, []string{"--shards", "3", "--attr", "GraphId=Graph", "--attr", "Depth=Level"},
			layouts.Options{Shards: 3, Attr: map[string]string{"GraphId": "Graph", "Depth": "Level"}}},
		{layouts.ClosureName, []string{"--attr", "Id=NodeId", "--attr", "RelativeDepth=Rd", "--attr", "ByAncestor=ByAnc", "--closure-copy", "name,part_no"},
			layouts.Options{Attr: map[string]string{"Id": "NodeId", "RelativeDepth": "Rd", "ByAncestor": "ByAnc"}, ClosureCopy: []string{"name", "part_no"}}},
		{layouts.PrefixName, []string{"--attr", "Key=PK", "--attr", "Child=SK", "--delimiter", "/"},
			layouts.Options{Attr: map[string]string{"Key": "PK", "Child": "SK"}, Delimiter: "/"}},
	} {
		t.Run(tt.layout, func(t *testing.T) {
			t.Parallel()
			l, err := layouts.New(tt.layout, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			spec := l.Table()
			table := loadTable(t, env, client, "fixtures/cars.csv", typesFlag, l, tt.flags...)
			sameState(t, "import", tableState(t, client, table, spec), wantState(t, "fixtures/cars.csv", typesFlag, l))
			common := append([]string{"--in", snapPath, "--types", typesFlag, "--layout", tt.layout, "--table", table}, tt.flags...)
			if stdout, stderr, code := run(t, env, append([]string{"apply", "--no-progress"}, common...)...); code != 0 {
				t.Fatalf("apply: exit %d:\n%s\n%s", code, stdout, stderr)
			}
			sameState(t, "after apply", tableState(t, client, table, spec), wantState(t, snapPath, typesFlag, l))
			if stdout, stderr, code := run(t, env, append([]string{"plan", "--detailed-exitcode"}, common...)...); code != 0 {
				t.Errorf("plan after apply: exit %d, want 0 (no changes):\n%s\n%s", code, stdout, stderr)
			}

			// edit: the dry run's plan file is what the edit then writes.
			ops := filepath.Join(t.TempDir(), "ops.jsonl")
			if err := os.WriteFile(ops, []byte(`{"op":"move","id":"CM17","parent":"CM15"}`+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			editArgs := append([]string{"edit", "--ops", ops, "--table", table, "--layout", tt.layout, "--no-progress"}, tt.flags...)
			out := filepath.Join(t.TempDir(), "edit-plan.json")
			before := tableState(t, client, table, spec)
			if stdout, stderr, code := run(t, env, append(editArgs, "--dry-run", "--out", out)...); code != 0 {
				t.Fatalf("edit --dry-run: exit %d:\n%s\n%s", code, stdout, stderr)
			}
			_, planPuts, planDels := readPlanFile(t, out, spec)
			if stdout, stderr, code := run(t, env, editArgs...); code != 0 {
				t.Fatalf("edit: exit %d:\n%s\n%s", code, stdout, stderr)
			}
			after := tableState(t, client, table, spec)
			sameState(t, "after edit", after, wantState(t, editedPath, typesFlag, l))
			puts, dels := diffStates(before, after)
			sameState(t, "edit's writes vs its plan file", puts, planPuts)
			if !maps.Equal(dels, planDels) {
				t.Errorf("edit deleted %d keys, its plan file %d", len(dels), len(planDels))
			}

			// migrate out of the table, with its options given as --from-*.
			var from []string
			for i := 0; i < len(tt.flags); i += 2 {
				from = append(from, "--from-"+strings.TrimPrefix(tt.flags[i], "--"), tt.flags[i+1])
			}
			dst := ddblocal.TableName(t)
			dropTableLater(t, client, dst)
			stdout, stderr, code := run(t, env, append([]string{"migrate", "--from-table", table, "--from-layout", tt.layout,
				"--to-table", dst, "--to-layout", "closure", "--create-table", "--no-progress"}, from...)...)
			if code != 0 || !strings.Contains(stdout, "verified") {
				t.Fatalf("migrate: exit %d:\n%s\n%s", code, stdout, stderr)
			}
			sameState(t, "migrated", tableState(t, client, dst, closure.Table()), wantState(t, editedPath, typesFlag, closure))
		})
	}
}

// TestApplyTypedValuesAreStable applies a DynamoDB JSON snapshot with every
// attribute type, numbers in non-canonical text and sets in any order: the
// table equals import of it, and a plan after the apply finds nothing to do
// (DynamoDB's normalized numbers and set order are not changes).
func TestApplyTypedValuesAreStable(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	snap := filepath.Join(t.TempDir(), "typed.ddbjson")
	lines := []string{
		`{"Item":{"id":{"S":"R"},"n":{"N":"1.50"},"big":{"N":"12345678901234567890.000"},"neg":{"N":"-0.0100"},"e":{"N":"1E+2"},"b":{"B":"AAEC"},"t":{"BOOL":true},"z":{"NULL":true}}}`,
		`{"Item":{"id":{"S":"K1"},"parent_id":{"S":"R"},"ss":{"SS":["b","a","c"]},"ns":{"NS":["3","1.50","-2","1E+1"]},"bs":{"BS":["Ag==","AQ=="]}}}`,
		`{"Item":{"id":{"S":"K2"},"parent_id":{"S":"K1"},"l":{"L":[{"N":"2.0"},{"S":"x"},{"M":{"q":{"N":"0.10"},"r":{"SS":["y","x"]}}}]},"m":{"M":{"a":{"N":"007"},"b":{"BOOL":false}}}}}`,
	}
	if err := os.WriteFile(snap, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, _ := layouts.New(name, layouts.Options{})
			table := ddblocal.NewTable(t, client, l.Table())
			common := []string{"--in", snap, "--format", "ddbjson", "--layout", name, "--table", table}
			if stdout, stderr, code := run(t, env, append([]string{"apply", "--no-progress"}, common...)...); code != 0 {
				t.Fatalf("apply: exit %d:\n%s\n%s", code, stdout, stderr)
			}
			got := canonical(t, sortSets(scanTable(t, client, table)))
			want := canonical(t, sortSets(expectedItems(t, snap, "", l)))
			if !slices.Equal(got, want) {
				diffLines(t, got, want)
			}
			stdout, stderr, code := run(t, env, append([]string{"plan", "--json", "--detailed-exitcode"}, common...)...)
			if code != 0 {
				t.Errorf("plan after apply: exit %d, want 0:\n%s\n%s", code, stdout, stderr)
			}
		})
	}
}

// sortSets gives items' sets one order, with their numbers normalized:
// DynamoDB keeps a set's elements in an order of its own.
func sortSets(items []layouts.Item) []layouts.Item {
	out := make([]layouts.Item, len(items))
	for i, it := range items {
		out[i] = sortSetsMap(it)
	}
	return out
}

func sortSetsMap(m map[string]types.AttributeValue) map[string]types.AttributeValue {
	n := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		n[k] = sortSetsValue(v)
	}
	return n
}

func sortSetsValue(v types.AttributeValue) types.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberSS:
		return &types.AttributeValueMemberSS{Value: slices.Sorted(slices.Values(v.Value))}
	case *types.AttributeValueMemberNS:
		var ns []string
		for _, e := range v.Value {
			ns = append(ns, normalizeValue(&types.AttributeValueMemberN{Value: e}).(*types.AttributeValueMemberN).Value)
		}
		return &types.AttributeValueMemberNS{Value: slices.Sorted(slices.Values(ns))}
	case *types.AttributeValueMemberBS:
		bs := slices.Clone(v.Value)
		slices.SortFunc(bs, func(a, b []byte) int { return strings.Compare(string(a), string(b)) })
		return &types.AttributeValueMemberBS{Value: bs}
	case *types.AttributeValueMemberL:
		l := make([]types.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = sortSetsValue(e)
		}
		return &types.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberM:
		return &types.AttributeValueMemberM{Value: sortSetsMap(v.Value)}
	}
	return v
}

// runAll runs several treeport commands at the same time, as N copies of a
// sharded job run side by side, and returns their stdout, stderr and exit
// codes.
func runAll(t *testing.T, env []string, argss [][]string) (stdouts, stderrs []string, codes []int) {
	t.Helper()
	cmds := make([]*exec.Cmd, len(argss))
	outs := make([]*strings.Builder, len(argss))
	errs := make([]*strings.Builder, len(argss))
	for i, args := range argss {
		cmd := exec.Command(treeportBin, args...)
		cmd.Env = append(os.Environ(), env...)
		outs[i], errs[i] = &strings.Builder{}, &strings.Builder{}
		cmd.Stdout, cmd.Stderr = outs[i], errs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	for i, cmd := range cmds {
		err := cmd.Wait()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		stdouts, stderrs, codes = append(stdouts, outs[i].String()), append(stderrs, errs[i].String()), append(codes, cmd.ProcessState.ExitCode())
	}
	return stdouts, stderrs, codes
}

// TestShardsSideBySide runs the copies of sharded apply and migrate at the
// same time, as issue 7 means them to run (an Indexed Job, a matrix), all
// given the same file names: the tables end exact.
func TestShardsSideBySide(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	typesFlag := fixtureTypes(t, "cars")
	_, snap := carsSnapshot(t)
	dir := t.TempDir()
	snapPath := snap.write(t, filepath.Join(dir, "snapshot.csv"))
	const N = 3
	prefix, _ := layouts.New(layouts.PrefixName, layouts.Options{})
	closure, _ := layouts.New(layouts.ClosureName, layouts.Options{})

	table := loadTable(t, env, client, "fixtures/cars.csv", typesFlag, prefix)
	var argss [][]string
	for k := range N {
		argss = append(argss, []string{"apply", "--in", snapPath, "--types", typesFlag, "--layout", "prefix", "--table", table,
			"--shard", fmt.Sprintf("%d/%d", k, N), "--checkpoint", filepath.Join(dir, "apply-ck.json"), "--no-progress"})
	}
	stdouts, stderrs, codes := runAll(t, env, argss)
	for k := range N {
		if codes[k] != 0 {
			t.Errorf("apply --shard %d/%d: exit %d:\n%s\n%s", k, N, codes[k], stdouts[k], stderrs[k])
		}
	}
	sameState(t, "after the apply shards", tableState(t, client, table, prefix.Table()), wantState(t, snapPath, typesFlag, prefix))

	// migrate, each copy keeping its snapshot of the source in the same
	// --snapshot file name.
	dst := ddblocal.TableName(t)
	dropTableLater(t, client, dst)
	if _, err := client.CreateTable(context.Background(), ddblocal.CreateTableInput(dst, closure.Table())); err != nil {
		t.Fatal(err)
	}
	argss = nil
	for k := range N {
		argss = append(argss, []string{"migrate", "--from-table", table, "--from-layout", "prefix", "--to-table", dst, "--to-layout", "closure",
			"--shard", fmt.Sprintf("%d/%d", k, N), "--snapshot", filepath.Join(dir, "source.ddbjson"),
			"--checkpoint", filepath.Join(dir, "migrate-ck.json"), "--no-progress"})
	}
	stdouts, stderrs, codes = runAll(t, env, argss)
	for k := range N {
		if codes[k] != 0 || !strings.Contains(stdouts[k], "verified") {
			t.Errorf("migrate --shard %d/%d: exit %d:\n%s\n%s", k, N, codes[k], stdouts[k], stderrs[k])
		}
	}
	sameState(t, "after the migrate shards", tableState(t, client, dst, closure.Table()), wantState(t, snapPath, typesFlag, closure))
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

// TestApplyRandomSnapshotSequence applies a sequence of random snapshots in
// every layout: after each apply the table equals import of the snapshot,
// the items written are the plan's, and a second plan finds nothing to do.
func TestApplyRandomSnapshotSequence(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	dir := t.TempDir()
	first := filepath.Join(dir, "round0.csv")
	if _, stderr, code := run(t, nil, "gen", "--nodes", "200", "--shape", "random", "--seed", "11", "--out", first); code != 0 {
		t.Fatal(stderr)
	}
	// The same snapshots for every layout.
	snaps := []string{first}
	c := readCSVFile(t, first)
	rng := rand.New(rand.NewPCG(11, 6))
	for round := 1; round <= 3; round++ {
		c = mutate(c, rng, round, 6)
		snaps = append(snaps, c.write(t, filepath.Join(dir, fmt.Sprintf("round%d.csv", round))))
	}
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, _ := layouts.New(name, layouts.Options{})
			spec := l.Table()
			table := ddblocal.NewTable(t, client, spec)
			proxy := newProxy(t, endpoint)
			env := awsEnv(proxy.URL())
			tmp := t.TempDir()
			var accepted int64
			for round, snap := range snaps {
				common := []string{"--in", snap, "--layout", name, "--table", table}
				before := tableState(t, client, table, spec)
				out := filepath.Join(tmp, fmt.Sprintf("plan%d.json", round))
				if _, stderr, code := run(t, env, append([]string{"plan", "--out", out}, common...)...); code != 0 {
					t.Fatalf("round %d: plan: exit %d: %s", round, code, stderr)
				}
				pf, planPuts, planDels := readPlanFile(t, out, spec)
				if _, stderr, code := run(t, env, append([]string{"apply", "--no-progress"}, common...)...); code != 0 {
					t.Fatalf("round %d: apply: exit %d: %s", round, code, stderr)
				}
				c := proxy.Counts()
				if c.AcceptedItems-accepted != pf.Summary.changes() {
					t.Errorf("round %d: apply wrote %d items, the plan has %d operations", round, c.AcceptedItems-accepted, pf.Summary.changes())
				}
				accepted = c.AcceptedItems
				after := tableState(t, client, table, spec)
				sameState(t, fmt.Sprintf("round %d: table vs import of the snapshot", round), after, wantState(t, snap, "", l))
				puts, dels := diffStates(before, after)
				sameState(t, fmt.Sprintf("round %d: changed items vs the plan's puts", round), puts, planPuts)
				if !maps.Equal(dels, planDels) {
					t.Errorf("round %d: %d keys deleted, the plan deletes %d", round, len(dels), len(planDels))
				}
				if round > 0 && pf.Summary.MovedSubtrees == 0 {
					t.Errorf("round %d: no moves planned: the snapshot sequence tests less than it should", round)
				}
				if stdout, stderr, code := run(t, env, append([]string{"plan", "--detailed-exitcode"}, common...)...); code != 0 {
					t.Errorf("round %d: plan after apply: exit %d, want 0:\n%s\n%s", round, code, stdout, stderr)
				}
				if c := proxy.Counts(); c.AcceptedItems != accepted {
					t.Errorf("round %d: plan wrote %d items", round, c.AcceptedItems-accepted)
				}
			}
		})
	}
}

// TestEditRandomSequences carries out random files of edits (moves, deletes
// and sets, each on the tree the edits before it left) in every layout: after
// each file the table equals import of the edited forest, written with
// exactly the item writes that takes.
func TestEditRandomSequences(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	first := filepath.Join(dir, "start.csv")
	if _, stderr, code := run(t, nil, "gen", "--nodes", "60", "--shape", "random", "--seed", "5", "--out", first); code != 0 {
		t.Fatal(stderr)
	}
	start := readCSVFile(t, first)
	nameCol := slices.Index(start.header, "name")
	// The edit files, and the forest after each, the same for every layout.
	rng := rand.New(rand.NewPCG(5, 5))
	type step struct{ ops, forest string }
	var steps []step
	c := start.clone()
	for f := range 5 {
		var ops []string
		for range 8 {
			m := c.model()
			all := slices.Sorted(maps.Keys(m.parent))
			id := all[rng.IntN(len(all))]
			row := func(id string) []string {
				for _, r := range c.rows {
					if r[0] == id {
						return r
					}
				}
				panic(id)
			}
			switch rng.IntN(4) {
			case 0, 1: // move, now and then to the top
				parent := all[rng.IntN(len(all))]
				if rng.IntN(5) == 0 {
					parent = ""
				}
				if parent != "" && slices.Contains(m.path(parent), id) {
					continue
				}
				p, _ := json.Marshal(parent)
				if parent == "" {
					p = []byte("null")
				}
				ops = append(ops, fmt.Sprintf(`{"op":"move","id":%q,"parent":%s}`, id, p))
				row(id)[1] = parent
			case 2: // delete, children up
				up := m.parent[id]
				hasKids := false
				for _, r := range c.rows {
					hasKids = hasKids || r[1] == id
				}
				if (up == "" && hasKids) || len(all) < 20 {
					continue
				}
				ops = append(ops, fmt.Sprintf(`{"op":"delete","id":%q}`, id))
				for _, r := range c.rows {
					if r[1] == id {
						r[1] = up
					}
				}
				c.rows = slices.DeleteFunc(c.rows, func(r []string) bool { return r[0] == id })
			case 3: // set
				v := fmt.Sprintf("edited %d", rng.IntN(1000))
				ops = append(ops, fmt.Sprintf(`{"op":"set","id":%q,"attributes":{"name":%q}}`, id, v))
				row(id)[nameCol] = v
			}
		}
		steps = append(steps, step{strings.Join(ops, "\n") + "\n", c.write(t, filepath.Join(dir, fmt.Sprintf("after%d.csv", f)))})
	}
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, _ := layouts.New(name, layouts.Options{})
			spec := l.Table()
			table := loadTable(t, env, client, first, "", l)
			tmp := t.TempDir()
			for i, st := range steps {
				opsPath := filepath.Join(tmp, fmt.Sprintf("ops%d.jsonl", i))
				if err := os.WriteFile(opsPath, []byte(st.ops), 0o644); err != nil {
					t.Fatal(err)
				}
				before := tableState(t, client, table, spec)
				stdout, stderr, code := run(t, env, "edit", "--ops", opsPath, "--table", table, "--layout", name, "--no-progress")
				if code != 0 {
					t.Fatalf("edit file %d: exit %d:\n%s\n%s\nops:\n%s", i, code, stdout, stderr, st.ops)
				}
				after := tableState(t, client, table, spec)
				sameState(t, fmt.Sprintf("after edit file %d", i), after, wantState(t, st.forest, "", l))
				puts, dels := diffStates(before, after)
				if w := fmt.Sprintf("%d puts and %d deletes", len(puts), len(dels)); !strings.Contains(stdout, w) {
					t.Errorf("edit file %d: the writes were not the fewest: want %q in:\n%s", i, w, stdout)
				}
				if t.Failed() {
					t.Fatalf("ops of file %d:\n%s", i, st.ops)
				}
			}
		})
	}
}

// countLines is the number of non-empty lines of a file (0 when it is
// missing).
func countLines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) != "" {
			n++
		}
	}
	return n
}

// TestApplyResumeKeepsDeadLetters: items DynamoDB rejected before an
// interrupt are below the checkpoint's watermark, so the resumed run skips
// them; the dead-letter file must still hold them when the apply ends, and
// the apply must say items were set aside (exit 1).
func TestApplyResumeKeepsDeadLetters(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	dir := t.TempDir()
	gen := filepath.Join(dir, "gen.jsonl")
	if _, stderr, code := run(t, nil, "gen", "--nodes", "3000", "--shape", "random", "--seed", "3", "--out", gen); code != 0 {
		t.Fatal(stderr)
	}
	// Every 60th node carries "bad"; between treeport and DynamoDB Local a
	// proxy refuses a batch holding such an item as DynamoDB refuses an
	// item it cannot take (a ValidationException). Validation cannot know
	// of it: only the writer meets it, and sets the item aside.
	lines := strings.Split(strings.TrimSpace(readFile(t, gen)), "\n")
	bad := 0
	for i := range lines {
		if i%60 == 59 {
			lines[i] = strings.TrimSuffix(lines[i], "}") + `,"bad":"x"}`
			bad++
		}
	}
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, _ := layouts.New("path", layouts.Options{})
	table := ddblocal.NewTable(t, client, l.Table())
	proxy, err := faultproxy.New(faultproxy.Config{Target: endpoint, Reject: "bad", Lifetime: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	endpoint = proxy.URL()
	ck, dl := filepath.Join(dir, "ck.json"), filepath.Join(dir, "dead.jsonl")
	args := []string{"apply", "--in", in, "--layout", "path", "--table", table, "--checkpoint", ck, "--dead-letter", dl, "--no-progress"}

	cmd := exec.Command(treeportBin, append(args, "--max-wcu", "1500", "--concurrency", "2")...)
	cmd.Env = append(os.Environ(), awsEnv(endpoint)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(60 * time.Second)
wait:
	for {
		select {
		case err := <-done:
			t.Fatalf("apply ended before it could be interrupted (%v):\n%s", err, stderr.String())
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("no dead letters after 60 s:\n%s", stderr.String())
		case <-time.After(50 * time.Millisecond):
			if c, err := ddbwrite.LoadCheckpoint(ck); err == nil && c.Watermark > 0 && countLines(dl) >= 2 {
				break wait
			}
		}
	}
	cmd.Process.Signal(os.Interrupt)
	<-done
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d after SIGINT, want 130:\n%s", code, stderr.String())
	}
	first := countLines(dl)
	if first == 0 || first >= bad {
		t.Fatalf("%d of %d rejected items dead-lettered before the interrupt: the test proves nothing", first, bad)
	}
	stdout, msg, code := run(t, awsEnv(endpoint), args...)
	if !strings.Contains(msg, "resuming from checkpoint") {
		t.Fatalf("the rerun did not resume: exit %d:\n%s\n%s", code, stdout, msg)
	}
	if n := int64(len(scanTable(t, client, table))); n != int64(len(lines)-bad) {
		t.Errorf("table holds %d items, want %d", n, len(lines)-bad)
	}
	if got := countLines(dl); got != bad {
		t.Errorf("after the resumed apply the dead-letter file holds %d items, want all %d rejected ones (%d were set aside before the interrupt)", got, bad, first)
	}
	if code != 1 {
		t.Errorf("resumed apply with rejected items: exit %d, want 1:\n%s\n%s", code, stdout, msg)
	}
}

// TestApplyWCUIsThePlans: plan says what writing the plan costs, apply says
// what the writes cost, and the two agree. The plan's figure is the one
// DynamoDB bills (the larger of the old and new item, twice on an index
// whose key changes, deletes on every index the old item was in): it is
// held to DynamoDB Local's ConsumedCapacity for a move, an attribute
// change, a new and a removed node in every layout.
func TestApplyWCUIsThePlans(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	env := awsEnv(endpoint)
	client := ddblocal.Client(t, endpoint)
	dir := t.TempDir()
	base := filepath.Join(dir, "base.csv")
	if _, stderr, code := run(t, nil, "gen", "--nodes", "40", "--shape", "balanced", "--fanout", "3", "--seed", "5", "--out", base); code != 0 {
		t.Fatalf("gen: %s", stderr)
	}
	snap := readCSVFile(t, base).clone()
	snap.row(t, "N3")[1] = "N2" // N3 moves, with its subtree, under N2
	snap.set(t, "N5", "name", "Renamed")
	snap.remove(t, "N40")
	snap.add(t, map[string]string{"id": "NEW", "parent_id": "N1", "name": "New"})
	in := snap.write(t, filepath.Join(dir, "snap.csv"))
	planWCU := regexp.MustCompile(`Writing the plan costs (\d+) WCU`)
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			l, err := layouts.New(name, layouts.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, report := range []bool{false, true} {
				table := loadTable(t, env, client, base, "", l)
				common := []string{"--in", in, "--layout", name, "--table", table}
				stdout, stderr, code := run(t, env, append([]string{"plan"}, common...)...)
				m := planWCU.FindStringSubmatch(stdout)
				if code != 0 || m == nil {
					t.Fatalf("plan: exit %d\n%s%s", code, stdout, stderr)
				}
				args := append([]string{"apply", "--no-progress"}, common...)
				rep := filepath.Join(dir, name+"-report.json")
				if report {
					args = append(args, "--report", rep)
				}
				stdout, stderr, code = run(t, env, args...)
				if code != 0 {
					t.Fatalf("apply: exit %d\n%s%s", code, stdout, stderr)
				}
				if !report {
					if want := ": " + m[1] + " WCU, as planned,"; !strings.Contains(stdout, want) {
						t.Errorf("plan costs %s WCU; apply does not say %q:\n%s", m[1], want, stdout)
					}
					continue
				}
				var r struct {
					Writer struct {
						ConsumedWCU float64 `json:"consumed_wcu"`
					} `json:"writer"`
				}
				if err := json.Unmarshal([]byte(readFile(t, rep)), &r); err != nil {
					t.Fatal(err)
				}
				if got := strconv.FormatFloat(r.Writer.ConsumedWCU, 'f', -1, 64); got != m[1] {
					t.Errorf("DynamoDB Local consumed %s WCU; the plan said %s", got, m[1])
				}
				if want := m[1] + " WCU consumed,"; !strings.Contains(stdout, want) {
					t.Errorf("apply does not say %q:\n%s", want, stdout)
				}
			}
		})
	}
}
