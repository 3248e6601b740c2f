package main

// End-to-end tests of plan (issue 6) against DynamoDB Local: what it prints,
// how it exits, and what apply then makes of the table.

import (
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

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
			if !strings.Contains(stdout, fmt.Sprintf("moved (%d subtrees)", len(moves))) || strings.Contains(stdout, "No changes") {
				t.Errorf("plan summary:\n%s", stdout)
			}
			// The mass-delete guard counts every delete, a move's too: it
			// warns where the moves delete over a tenth of the items (the
			// prefix layout's keys hold the path), and nowhere else.
			warn := 10*s.Total.Deletes > s.TableItems
			if strings.Contains(stdout, "WARNING") != warn || warn && !strings.Contains(stdout, fmt.Sprintf("(deletes %d of its %d items)", s.Total.Deletes, s.TableItems)) {
				t.Errorf("plan summary (a warning wanted: %v):\n%s", warn, stdout)
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
			// The snapshot moves subtrees, meant: on a 48-node fixture the
			// moves' deletes are past --max-delete-ratio, which counts every
			// delete.
			stdout, stderr, code = run(t, awsEnv(proxy.URL()), append([]string{"apply", "--allow-mass-delete", "--report", report, "--no-progress"}, common...)...)
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
			putItems(t, client, table, row)
			deleteItem(t, client, table, layouts.Item{"Id": s("CM40"), "RelativeDepth": n("2")})
			stray := maps.Clone(items["CM40\x002"])
			stray["RelativeDepth"] = n("7")
			putItems(t, client, table, stray)
		}},
		{layout: layouts.PathName, puts: 1, dels: 0, tamper: func(t *testing.T, table string, items map[string]layouts.Item) {
			row := maps.Clone(items["CM40"])
			row["TreeId"] = s("CM9")
			putItems(t, client, table, row)
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
