package refresh

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
)

// snapshotOf writes f as a DynamoDB JSON snapshot and returns the input
// options that read it.
func snapshotOf(t *testing.T, r *rand.Rand, f *tree, closureCopy []string) importer.InputOptions {
	t.Helper()
	path := filepath.Join(t.TempDir(), "snapshot.json")
	f.write(t, r, path)
	return importer.InputOptions{Path: path, Source: records.SourceOptions{Format: "ddbjson"}, ClosureCopy: closureCopy}
}

// wantOf is every item the layout wants for the snapshot, by key.
func wantOf(t *testing.T, in importer.InputOptions, l layouts.Layout) map[string]string {
	t.Helper()
	return wantItems(t, readSnapshot(t, in.Path, l, in.ClosureCopy), l)
}

func newLayout(t *testing.T, c layoutCase) layouts.Layout {
	t.Helper()
	l, err := layouts.New(c.name, c.opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Apply of a snapshot, then of a changed one, leaves the table holding
// exactly the layout's items for the last snapshot; the writes are the
// plan's, the checkpoint ends done with its plan removed, and a third apply
// has nothing to write.
func TestApplyEveryLayout(t *testing.T) {
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	for k, c := range layoutCases() {
		t.Run(c.String(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(k), 7))
			l := newLayout(t, c)
			table := ddblocal.NewTable(t, client, l.Table())
			dir := t.TempDir()
			opts := ApplyOptions{
				Target:         Target{Client: client, Table: table, Layout: l, Scan: exporter.ScanOptions{Segments: 2}},
				Settings:       map[string]any{"layout": c.name},
				MaxDeleteRatio: 1,
				Checkpoint:     filepath.Join(dir, "ck.json"),
				Report:         filepath.Join(dir, "report.json"),
			}
			f := randomTree(r, 60)
			for step, snap := range []*tree{f, mutate(r, f)} {
				opts.Input = snapshotOf(t, r, snap, c.closureCopy)
				res, err := Apply(context.Background(), opts)
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				if step == 0 && res.Summary.ByReason[ReasonNew].Nodes != 60 {
					t.Errorf("step 0: %d new nodes, want 60", res.Summary.ByReason[ReasonNew].Nodes)
				}
				if res.Run == nil || res.Run.Stats.Items+res.Run.Stats.DeadLettered != res.Summary.Changes() || !res.Run.Done {
					t.Fatalf("step %d: run %+v for a plan of %d changes", step, res.Run, res.Summary.Changes())
				}
				// The plan's WCU is what DynamoDB bills for its writes: a
				// put over an item at the larger size, an index key change
				// as two index writes.
				if got, want := res.Run.Stats.ConsumedWCU, float64(res.Summary.Total.WCU); got != want {
					t.Errorf("step %d: the plan said %v WCU, DynamoDB Local consumed %v", step, want, got)
				}
				if got, want := tableItems(t, client, table, l.Table()), wantOf(t, opts.Input, l); !maps.Equal(got, want) {
					t.Errorf("step %d: the table holds %d items, want the snapshot's %d", step, len(got), len(want))
				}
				ck, err := ddbwrite.LoadCheckpoint(opts.Checkpoint)
				if err != nil || !ck.Done || ck.Watermark != res.Summary.Changes() {
					t.Errorf("step %d: checkpoint %+v (%v), want done at %d", step, ck, err, res.Summary.Changes())
				}
				if _, err := os.Stat(opts.Checkpoint + ".plan.json"); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("step %d: the plan beside a finished checkpoint is still there (%v)", step, err)
				}
				if _, err := os.Stat(opts.Report); err != nil {
					t.Errorf("step %d: no report: %v", step, err)
				}
			}
			res, err := Apply(context.Background(), opts)
			if err != nil || res.Summary.Changes() != 0 || res.Run != nil {
				t.Errorf("apply of the same snapshot: %+v, %v; want no changes and no writes", res, err)
			}
		})
	}
}

// A plan that removes more of the table than MaxDeleteRatio is refused
// with its summary, before anything is written; AllowMassDelete lets it
// through.
func TestApplyMassDeleteGuard(t *testing.T) {
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	r := rand.New(rand.NewPCG(3, 3))
	l := newLayout(t, layoutCase{name: layouts.PathName})
	table := ddblocal.NewTable(t, client, l.Table())
	opts := ApplyOptions{Target: Target{Client: client, Table: table, Layout: l}, MaxDeleteRatio: 0.1}
	opts.Input = snapshotOf(t, r, randomTree(r, 40), nil)
	if _, err := Apply(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	before := tableItems(t, client, table, l.Table())

	opts.Input = snapshotOf(t, r, randomTree(r, 5), nil) // other ids: all 40 go
	res, err := Apply(context.Background(), opts)
	if !errors.Is(err, ddbwrite.ErrUsage) || res == nil || res.Summary.ByReason[ReasonRemoved].Nodes != 40 || res.Run != nil {
		t.Fatalf("mass delete: %+v, %v; want ErrUsage with the plan's summary and no run", res, err)
	}
	if after := tableItems(t, client, table, l.Table()); !maps.Equal(before, after) {
		t.Error("a refused plan changed the table")
	}
	opts.AllowMassDelete = true
	if _, err := Apply(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if got, want := tableItems(t, client, table, l.Table()), wantOf(t, opts.Input, l); !maps.Equal(got, want) {
		t.Errorf("after the allowed mass delete the table holds %d items, want %d", len(got), len(want))
	}
}

// An apply cut short keeps its checkpoint and its plan; the same apply
// again goes on with that plan where the acknowledged writes stopped,
// without planning again, and the table ends equal to the snapshot.
func TestApplyInterruptResumesPlan(t *testing.T) {
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	r := rand.New(rand.NewPCG(5, 5))
	l := newLayout(t, layoutCase{name: layouts.PathName})
	table := ddblocal.NewTable(t, client, l.Table())
	ck := filepath.Join(t.TempDir(), "ck.json")
	opts := ApplyOptions{
		Target: Target{Client: client, Table: table, Layout: l}, MaxDeleteRatio: 0.1,
		Checkpoint: ck, Settings: map[string]any{"layout": "path"},
		// 3 WCU a node: 1,200 WCU at 300 a second.
		WriteOptions: ddbwrite.WriteOptions{MaxWCU: 300, Concurrency: 1},
	}
	opts.Input = snapshotOf(t, r, randomTree(r, 400), nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(800*time.Millisecond, cancel)
	res, err := Apply(ctx, opts)
	if !errors.Is(err, ddbwrite.ErrInterrupted) {
		t.Fatalf("interrupted apply: %v", err)
	}
	w := res.Run.Watermark
	if w <= 0 || w >= 400 || res.Run.Done {
		t.Fatalf("interrupted apply: run %+v; want a watermark strictly between 0 and 400", res.Run)
	}
	if _, err := os.Stat(ck + ".plan.json"); err != nil {
		t.Fatalf("no plan beside the unfinished checkpoint: %v", err)
	}
	opts.MaxWCU = 0
	res, err = Apply(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed || res.Run.Skipped != w || res.Run.Stats.Items != 400-w {
		t.Errorf("resumed apply: resumed %v, skipped %d, wrote %d; want the plan taken up at %d", res.Resumed, res.Run.Skipped, res.Run.Stats.Items, w)
	}
	if got, want := tableItems(t, client, table, l.Table()), wantOf(t, opts.Input, l); !maps.Equal(got, want) {
		t.Errorf("the table holds %d items, want %d", len(got), len(want))
	}
	// Another snapshot while a checkpoint is unfinished is refused: here
	// the checkpoint is done, so a fresh plan is made instead.
	opts.Input = snapshotOf(t, r, randomTree(r, 3), nil)
	opts.AllowMassDelete = true
	if res, err := Apply(context.Background(), opts); err != nil || res.Resumed {
		t.Errorf("apply after a finished checkpoint: %+v, %v; want a fresh plan", res, err)
	}
}

// Migrate copies a table into every other layout, exactly, and never
// writes to its source.
func TestMigrateEveryLayout(t *testing.T) {
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	r := rand.New(rand.NewPCG(11, 11))
	from := newLayout(t, layoutCase{name: layouts.PathName})
	source := ddblocal.NewTable(t, client, from.Table())
	f := randomTree(r, 50)
	snap := snapshotOf(t, r, f, nil)
	if _, err := Apply(context.Background(), ApplyOptions{Target: Target{Client: client, Table: source, Layout: from}, Input: snap}); err != nil {
		t.Fatal(err)
	}
	sourceItems := tableItems(t, client, source, from.Table())
	for _, c := range layoutCases() {
		t.Run(c.String(), func(t *testing.T) {
			to := newLayout(t, c)
			dest := ddblocal.TableName(t)
			t.Cleanup(func() { dropTable(t, client, dest) })
			opts := MigrateOptions{
				ApplyOptions: ApplyOptions{
					Target:      Target{Client: client, Table: dest, Layout: to},
					Settings:    map[string]any{"command": "migrate", "to-layout": c.String()},
					CreateTable: true, Checkpoint: filepath.Join(t.TempDir(), "ck.json"),
				},
				From: source, FromLayout: from,
			}
			opts.Input.ClosureCopy = c.closureCopy
			res, err := Migrate(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Exact() || res.Source.Nodes != 50 || res.Verify.SnapshotNodes != 50 || res.Apply.Summary.ByReason[ReasonNew].Nodes != 50 {
				t.Errorf("migrate: exact %v, source %d nodes, verified %d nodes, %d new", res.Exact(), res.Source.Nodes, res.Verify.SnapshotNodes, res.Apply.Summary.ByReason[ReasonNew].Nodes)
			}
			if got, want := tableItems(t, client, dest, to.Table()), wantOf(t, snapshotOf(t, r, f, c.closureCopy), to); !maps.Equal(got, want) {
				t.Errorf("the destination holds %d items, want %d", len(got), len(want))
			}
			// Again: nothing to write, still exact.
			res, err = Migrate(context.Background(), opts)
			if err != nil || !res.Exact() || res.Apply.Run != nil {
				t.Errorf("second migrate: %+v, %v; want exact with nothing written", res, err)
			}
		})
	}
	if got := tableItems(t, client, source, from.Table()); !maps.Equal(got, sourceItems) {
		t.Error("migrate changed its source")
	}
	_, err := Migrate(context.Background(), MigrateOptions{ApplyOptions: ApplyOptions{Target: Target{Client: client, Table: source, Layout: from}}, From: source, FromLayout: from})
	if !errors.Is(err, ddbwrite.ErrUsage) {
		t.Errorf("migrate into its source: %v, want ErrUsage", err)
	}
}

func dropTable(t *testing.T, client *dynamodb.Client, table string) {
	t.Helper()
	if _, err := client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &table}); err != nil {
		t.Errorf("delete table %s: %v", table, err)
	}
}

// EditTable moves a subtree with the writes its layout needs: after it the
// table is what an apply of the moved snapshot makes, and a dry run writes
// nothing. A refused edit writes nothing either.
func TestEditTableEveryLayout(t *testing.T) {
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	for k, c := range layoutCases() {
		t.Run(c.String(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(k), 13))
			l := newLayout(t, c)
			table := ddblocal.NewTable(t, client, l.Table())
			f := randomTree(r, 40)
			target := Target{Client: client, Table: table, Layout: l}
			if _, err := Apply(context.Background(), ApplyOptions{Target: target, Input: snapshotOf(t, r, f, c.closureCopy)}); err != nil {
				t.Fatal(err)
			}
			// Move a node that has a parent to the root level.
			var id string
			for _, x := range f.ids() {
				if f.parent[x] != "" {
					id = x
					break
				}
			}
			ops := filepath.Join(t.TempDir(), "ops.jsonl")
			if err := os.WriteFile(ops, fmt.Appendf(nil, `{"op":"move","id":%q,"parent":null}`+"\n", id), 0o644); err != nil {
				t.Fatal(err)
			}
			before := tableItems(t, client, table, l.Table())
			opts := EditTableOptions{Client: client, Table: table, Layout: l, Ops: ops, DryRun: true, Out: filepath.Join(t.TempDir(), "plan.json")}
			res, err := EditTable(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Edits != 1 || res.Counts[0].Nodes != len(f.subtree(id)) || res.Puts == 0 || res.Run != nil {
				t.Errorf("dry run: %+v; want 1 edit of %d nodes, puts planned, nothing written", res, len(f.subtree(id)))
			}
			if after := tableItems(t, client, table, l.Table()); !maps.Equal(before, after) {
				t.Error("a dry run changed the table")
			}
			if _, err := os.Stat(opts.Out); err != nil {
				t.Errorf("no plan file: %v", err)
			}
			opts.DryRun, opts.Out = false, ""
			res, err = EditTable(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Run == nil || res.Run.Stats.Items != res.Puts+res.Deletes {
				t.Errorf("edit: run %+v, want %d puts and %d deletes written", res.Run, res.Puts, res.Deletes)
			}
			moved := f.clone()
			moved.parent[id] = ""
			p, err := PlanTable(context.Background(), PlanTableOptions{Target: target, Input: snapshotOf(t, r, moved, c.closureCopy)})
			if err != nil {
				t.Fatal(err)
			}
			if p.Summary.Changes() != 0 {
				t.Errorf("after the edit a plan of the moved snapshot still has %d changes", p.Summary.Changes())
			}

			// A move under the node's own subtree is refused; nothing is written.
			before = tableItems(t, client, table, l.Table())
			child := ""
			for _, x := range f.ids() {
				if x != id && f.parent[x] != "" && len(f.children(x)) == 0 {
					child = x
				}
			}
			bad := fmt.Appendf(nil, `{"op":"move","id":%q,"parent":%q}`+"\n", f.parent[child], child)
			if err := os.WriteFile(ops, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := EditTable(context.Background(), opts); !errors.Is(err, ErrEdit) {
				t.Errorf("a move under its own subtree: %v, want ErrEdit", err)
			}
			if after := tableItems(t, client, table, l.Table()); !maps.Equal(before, after) {
				t.Error("a refused edit changed the table")
			}
		})
	}
}
