package refresh

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/spill"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
)

// changedPathTable applies a random forest of n nodes to a new table of
// the path layout, and returns its target and a snapshot of the forest
// changed (mutate).
func changedPathTable(t *testing.T, r *rand.Rand, n int) (Target, importer.InputOptions) {
	t.Helper()
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	l := newLayout(t, layoutCase{name: layouts.PathName})
	target := Target{Client: client, Table: ddblocal.NewTable(t, client, l.Table()), Layout: l}
	f := randomTree(r, n)
	if _, err := Apply(context.Background(), ApplyOptions{Target: target, Input: snapshotOf(t, r, f, nil)}); err != nil {
		t.Fatal(err)
	}
	return target, snapshotOf(t, r, mutate(r, f), nil)
}

// TestOutOfCoreRoomRefused: plan, apply and migrate out of core ask
// --tmp-dir for the room their passes need before the first one (the
// snapshot's passes and the plan's sorts, the table's size counted), and
// refuse a file system with less free (ErrUsage, the room needed named),
// with nothing read, written or left in --tmp-dir; with that room free
// the plan runs.
func TestOutOfCoreRoomRefused(t *testing.T) {
	target, snap := changedPathTable(t, rand.New(rand.NewPCG(3, 27)), 300)
	client, table, l := target.Client, target.Table, target.Layout
	before := tableItems(t, client, table, l.Table())
	out, err := client.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	need := planRoom(snap.Path, aws.ToInt64(out.Table.TableSizeBytes))
	if need <= importer.SpillBytes(snap.Path) {
		t.Fatalf("the room asked, %d, does not count the table's %d bytes", need, aws.ToInt64(out.Table.TableSizeBytes))
	}
	defer func(f func(string) (int64, bool)) { spill.FreeBytes = f }(spill.FreeBytes)
	spill.FreeBytes = func(string) (int64, bool) { return need - 1, true }
	tmp := t.TempDir()
	snap.OutOfCore = &importer.OutOfCore{Memory: 1 << 20, TmpDir: tmp, Force: true, Layout: l}
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ddbwrite.ErrUsage) || !strings.Contains(err.Error(), "need about") || !strings.Contains(err.Error(), "free") {
			t.Errorf("%s: %v, want a usage error with the room free and needed", what, err)
		}
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Errorf("%s: %s left in --tmp-dir", what, left[0].Name())
		}
	}
	_, err = PlanTable(context.Background(), PlanTableOptions{Target: target, Input: snap})
	refused("plan", err)
	if err != nil && !strings.Contains(err.Error(), units.SizeText(need)) {
		t.Errorf("plan: %v, want the room needed, %s", err, units.SizeText(need))
	}
	_, err = Apply(context.Background(), ApplyOptions{Target: target, Input: snap, MaxDeleteRatio: 1})
	refused("apply", err)
	if got := tableItems(t, client, table, l.Table()); !maps.Equal(got, before) {
		t.Error("a refused apply changed the table")
	}
	dest := ddblocal.NewTable(t, client, l.Table())
	mopts := MigrateOptions{ApplyOptions: ApplyOptions{Target: Target{Client: client, Table: dest, Layout: l}, Input: snap}, From: table, FromLayout: l}
	mneed, _, err := migrateRoom(context.Background(), mopts, false)
	if err != nil || mneed <= 8*aws.ToInt64(out.Table.TableSizeBytes) {
		t.Fatalf("migrate's room %d (%v) does not count the source's %d bytes", mneed, err, aws.ToInt64(out.Table.TableSizeBytes))
	}
	spill.FreeBytes = func(string) (int64, bool) { return mneed - 1, true }
	_, err = Migrate(context.Background(), mopts)
	refused("migrate", err)
	if got := tableItems(t, client, dest, l.Table()); len(got) != 0 {
		t.Errorf("a refused migrate wrote %d items", len(got))
	}
	// With the room free, the plan runs, and leaves nothing.
	spill.FreeBytes = func(string) (int64, bool) { return need, true }
	res, err := PlanTable(context.Background(), PlanTableOptions{Target: target, Input: snap})
	if err != nil || !res.OutOfCore || res.Summary.Changes() == 0 {
		t.Errorf("plan with the room free: %v; want a plan out of core with changes", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("%s left in --tmp-dir", left[0].Name())
	}
}

// TestPlanOutOfCorePhases: a plan out of core tells OnPhase (the
// progress a terminal draws and a log prints) of each of its passes
// after the snapshot's: the table's Scan, the emit, the joins by id and
// by key, the operations' order and the plan's writing, with done never
// past a known total.
func TestPlanOutOfCorePhases(t *testing.T) {
	target, snap := changedPathTable(t, rand.New(rand.NewPCG(5, 8)), 5000)
	client, table, l := target.Client, target.Table, target.Layout
	seen := map[string]int{}
	snap.OutOfCore = &importer.OutOfCore{Memory: 1 << 20, TmpDir: t.TempDir(), Force: true, Layout: l,
		OnPhase: func(phase string, done, total int64) {
			seen[phase]++
			if total >= 0 && done > total {
				t.Errorf("%s: %d of %d", phase, done, total)
			}
		}}
	if _, err := PlanTable(context.Background(), PlanTableOptions{Target: target, Input: snap, Out: filepath.Join(t.TempDir(), "plan.json")}); err != nil {
		t.Fatal(err)
	}
	for _, phase := range []string{"reading the table (items)", "emitting the snapshot's items (nodes)", "comparing the nodes (nodes)",
		"comparing the items (items)", "ordering the operations (operations)", "writing the plan (operations)", "sorting (bytes spilled)"} {
		if seen[phase] == 0 {
			t.Errorf("no %q: phases %v", phase, seen)
		}
	}
	// migrate out of core: its Scan of the source, then the import's
	// passes over the spilled nodes.
	clear(seen)
	dest := ddblocal.NewTable(t, client, l.Table())
	if _, err := Migrate(context.Background(), MigrateOptions{ApplyOptions: ApplyOptions{Target: Target{Client: client, Table: dest, Layout: l}, Input: snap},
		From: table, FromLayout: l}); err != nil {
		t.Fatal(err)
	}
	if seen["reading the source (items)"] == 0 || len(seen) < 2 {
		t.Errorf("migrate's phases: %v", seen)
	}
}
