package refresh

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"runtime/debug"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/ddbtable"
	"github.com/treeport/treeport/internal/itemdigest"
	"github.com/treeport/treeport/internal/spill"
	"github.com/treeport/treeport/internal/statefile"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// Target is the table a refresh reads and writes, and how it is read.
type Target struct {
	Client *dynamodb.Client
	Table  string
	Layout layouts.Layout
	// Shard, when Of > 1, plans (and writes) only the items whose partition
	// key hashes to it.
	Shard ddbwrite.Shard
	Scan  exporter.ScanOptions
	// IgnoreUnparsable leaves alone the items that carry a table model's
	// type field but do not read back (ReadTableOptions).
	IgnoreUnparsable bool
}

// job is a refresh of one table from one snapshot: what PlanTable, Apply and
// Migrate share.
type job struct {
	Target
	input importer.InputOptions
	// onProblems is told a snapshot's problems before the job fails: those
	// kept (InputOptions.MaxProblems) and how many more there were.
	onProblems func(problems []*transform.RowError, more int)
	// from names the snapshot in messages ("" : its path).
	from string

	// Read by read: the snapshot, checked, and the table, with the keys
	// of the table's own indexes on the user's attributes.
	in   *importer.Input
	t    *Table
	keys []importer.IndexKey
	// ooc, when the job is planned out of core (planOutOfCore), holds
	// the table's sorts between read and plan; closeOOC removes them.
	ooc *oocJob
}

// read reads the snapshot and the table at the same time, and checks the
// snapshot against the layout. A snapshot with problems stops the scan and
// gives importer.ErrInvalid, after onProblems was told them.
func (j *job) read(ctx context.Context) error {
	if err := ddbtable.CheckTable(ctx, j.Client, j.Table, j.Layout.Table()); err != nil {
		return err
	}
	if ooc, err := j.planOutOfCore(ctx); err != nil {
		return err
	} else if ooc {
		return j.readOOC(ctx)
	}
	// The skeleton is large and lives for the whole run: collecting at 50%
	// growth instead of 100% keeps the peak lower, at no visible cost in CPU.
	debug.SetGCPercent(50)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		in, err := importer.ReadInput(gctx, j.input)
		if err != nil {
			return err
		}
		if problems := in.CheckLayout(j.Layout); len(problems) > 0 {
			if j.onProblems != nil {
				j.onProblems(problems, in.MoreProblems())
			}
			return fmt.Errorf("%w: %s in %s; nothing was planned or written (a refresh needs a valid snapshot: skipping a node would delete it)",
				importer.ErrInvalid, countOf(len(problems)+in.MoreProblems(), "problem"), cmp.Or(j.from, j.input.Path))
		}
		j.in = in
		return nil
	})
	g.Go(func() error {
		t, err := ReadTable(gctx, ReadTableOptions{Client: j.Client, Table: j.Table, Layout: j.Layout, Shard: j.Shard, Scan: j.Scan,
			IgnoreUnparsable: j.IgnoreUnparsable})
		j.t = t
		return err
	})
	g.Go(func() (err error) {
		j.keys, err = importer.TableIndexKeys(gctx, j.Client, j.Table, j.Layout.Table())
		return err
	})
	return g.Wait()
}

func (j *job) header() PlanHeader {
	return PlanHeader{Table: j.Table, Layout: j.Layout.Name(), Snapshot: j.input.Path, Shard: j.Shard.String()}
}

// plan plans, passing each operation to fn. A put whose value for the key
// of one of the table's own indexes DynamoDB would refuse fails the plan
// (an *importer.IndexKeyError, after the whole plan was checked): the
// writer is never the first to find it.
func (j *job) plan(ctx context.Context, fn func(Op) error) (*Summary, error) {
	check := importer.NewIndexKeyCheck(j.keys, j.Layout, j.in.Forest, "", 100)
	withCheck := func(op Op) error {
		if op.Kind == Put && len(j.keys) > 0 {
			check.Add(op.Item)
		}
		return fn(op)
	}
	var s *Summary
	var err error
	if j.ooc != nil {
		s, err = j.planOOC(ctx, withCheck)
	} else {
		s, err = Plan(ctx, Options{Input: j.in, Layout: j.Layout, Table: j.t, Shard: j.Shard}, withCheck)
	}
	if err != nil {
		return nil, err
	}
	if err := check.Err(j.Table); err != nil {
		return nil, err
	}
	return s, nil
}

// countOf says "1 thing" or "N things", thousands separated.
func countOf(n int, thing string) string { return units.Count(int64(n), thing) }

// PlanTableOptions configure PlanTable.
type PlanTableOptions struct {
	Target
	// Input is the snapshot.
	Input importer.InputOptions
	// Out, when set, is the plan file to write (every put and delete).
	Out string
	// OnProblems is told the snapshot's problems, when it has any, before
	// PlanTable fails with importer.ErrInvalid: those kept
	// (Input.MaxProblems) and how many more there were.
	OnProblems func(problems []*transform.RowError, more int)
}

// PlanTableResult is a plan of a table's refresh.
type PlanTableResult struct {
	Summary *Summary
	// Read is what reading the table cost.
	Read exporter.Stats
	// OutOfCore says the plan was made out of core: the snapshot or the
	// table did not fit Input.OutOfCore's budget (or it was forced).
	OutOfCore bool
}

// PlanTable reads a snapshot and a table and plans the fewest writes that
// make the table equal to the snapshot. Nothing is written to the table.
func PlanTable(ctx context.Context, opts PlanTableOptions) (*PlanTableResult, error) {
	j := &job{Target: opts.Target, input: opts.Input, onProblems: opts.OnProblems}
	defer j.closeOOC()
	if err := j.read(ctx); err != nil {
		return nil, err
	}
	var pw *PlanWriter
	var out *os.File
	if opts.Out != "" {
		var err error
		if out, err = statefile.CreateOutput(opts.Out); err != nil {
			return nil, err
		}
		defer out.Close()
		if pw, err = NewPlanWriter(out, j.header()); err != nil {
			return nil, err
		}
	}
	s, err := j.plan(ctx, func(op Op) error {
		if pw != nil {
			return pw.Write(op)
		}
		return nil
	})
	if err != nil {
		if out != nil {
			os.Remove(opts.Out) // not a plan
		}
		return nil, err
	}
	if pw != nil {
		if err := pw.Close(s); err != nil {
			return nil, err
		}
		if err := out.Close(); err != nil {
			return nil, err
		}
	}
	return &PlanTableResult{Summary: s, Read: j.t.Read, OutOfCore: j.ooc != nil}, nil
}

// ApplyOptions configure Apply.
type ApplyOptions struct {
	Target
	// Input is the snapshot.
	Input importer.InputOptions
	// Settings identify the flags that shape the items; with the snapshot
	// and the table they make the checkpoint's fingerprint.
	Settings map[string]any
	// MaxDeleteRatio is the part of the table's nodes a plan may remove;
	// AllowMassDelete lifts the limit.
	MaxDeleteRatio  float64
	AllowMassDelete bool
	// ShardWait is how long, under --shard k/N, the deletes of moved
	// nodes wait for the new items other copies put (Op.After);
	// 0 is DefaultShardWait.
	ShardWait time.Duration
	// CreateTable creates the table when it does not exist, with Billing's
	// capacity (on-demand by default).
	CreateTable bool
	Billing     ddbtable.Billing
	// Checkpoint is the checkpoint file ("": none); the plan is kept beside
	// it, in Checkpoint + ".plan.json". Report is the JSON summary written
	// at the end.
	Checkpoint, Report string
	// WriteOptions are the write run's: the dead-letter file,
	// concurrency, rate and progress.
	ddbwrite.WriteOptions
	OnProblems func(problems []*transform.RowError, more int)
	// Log receives the notes of a run as it goes (resuming, the table
	// read); nil discards them.
	Log io.Writer
	// Started is when the job started; zero means now.
	Started time.Time
}

// ApplyResult is what Apply did.
type ApplyResult struct {
	// Summary is the plan (nil when Apply failed before it had one).
	Summary *Summary
	// Resumed says the plan was an unfinished checkpoint's.
	Resumed bool
	// Run is the write run (nil when nothing was to be written).
	Run  *ddbwrite.RunResult
	Took time.Duration
}

// Apply plans a refresh of the table (or takes up the plan of an unfinished
// checkpoint) and writes it with the writer: the puts first, then the
// deletes. A plan that removes more than MaxDeleteRatio of the table's nodes
// is refused (ddbwrite.ErrUsage) before anything is written. The result
// comes with the error whenever the plan is known.
func Apply(ctx context.Context, opts ApplyOptions) (*ApplyResult, error) {
	if opts.CreateTable {
		if err := ddbtable.CreateTable(ctx, opts.Client, opts.Table, opts.Layout.Table(), opts.Billing); err != nil {
			return nil, err
		}
	}
	j := &job{Target: opts.Target, input: opts.Input, onProblems: opts.OnProblems}
	defer j.closeOOC()
	return apply(ctx, j, opts)
}

// applyCheckpoint is a checkpoint of apply: the writer's watermark over the
// operations of the plan kept beside it.
type applyCheckpoint struct {
	path, planPath string
	ck             *ddbwrite.Checkpoint
	resume         bool
}

// loadCheckpoint decides what a checkpoint means for this run: a finished
// or absent one starts a new plan; an unfinished one for the same snapshot,
// flags and table goes on with its plan; an unfinished one for anything else
// is refused.
func loadCheckpoint(j *job, path string, settings map[string]any) (*applyCheckpoint, error) {
	if path == "" {
		return nil, nil
	}
	set := maps.Clone(settings)
	if set == nil {
		set = map[string]any{}
	}
	set["command"] = "apply"
	set["table"] = j.Table
	fp, err := importer.Fingerprint(j.input.Path, set)
	if err != nil {
		return nil, err
	}
	a := &applyCheckpoint{path: path, planPath: path + ".plan.json"}
	ck, err := ddbwrite.LoadCheckpoint(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ddbwrite.ErrUsage, err)
	case ck.Done:
		// A finished apply: plan afresh (the table may have changed since).
	default:
		if err := ck.Match(fp); err != nil {
			return nil, fmt.Errorf("%w: %s belongs to an unfinished run of another snapshot, other flags or another table: finish that one, or delete the checkpoint (and %s) to start over: %v",
				ddbwrite.ErrUsage, path, a.planPath, err)
		}
		if _, err := os.Lstat(a.planPath); err != nil {
			return nil, fmt.Errorf("%w: checkpoint %s has no plan beside it (%v); delete the checkpoint to plan again", ddbwrite.ErrUsage, path, err)
		}
		a.ck, a.resume = ck, true
		return a, nil
	}
	a.ck = &ddbwrite.Checkpoint{Fingerprint: fp, Table: j.Table, Layout: j.Layout.Name()}
	return a, nil
}

// apply plans (or takes up the plan of an unfinished checkpoint) and writes
// the plan.
func apply(ctx context.Context, j *job, opts ApplyOptions) (*ApplyResult, error) {
	if opts.Started.IsZero() {
		opts.Started = time.Now()
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	ck, err := loadCheckpoint(j, opts.Checkpoint, opts.Settings)
	if err != nil {
		return nil, err
	}
	// The plan goes to a file first: the whole of it is known (and checked
	// against MaxDeleteRatio) before the first write, and a checkpoint can
	// go on with it.
	res := &ApplyResult{}
	var planPath string
	if ck != nil && ck.resume {
		// The plan is not read from the table again: the table is
		// still checked against the layout before the first write.
		if err := ddbtable.CheckTable(ctx, j.Client, j.Table, j.Layout.Table()); err != nil {
			return nil, err
		}
		res.Resumed = true
		planPath = ck.planPath
		if res.Summary, err = resumePlan(ck, j.input.OutOfCore); err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "resuming from checkpoint %s: %d of %d operations acknowledged\n",
			ck.path, ck.ck.Watermark, res.Summary.Changes())
		// The table was not read again, and may have changed since the
		// plan: what the remaining writes would change must still be
		// the tree's.
		if err := checkPlanTargets(ctx, j, planPath, ck.ck.Watermark); err != nil {
			return res, err
		}
	} else {
		if err := j.read(ctx); err != nil {
			if errors.Is(err, ddb.ErrTableNotFound) {
				return nil, fmt.Errorf("%w; to create it, add --create-table, or create it from the JSON `treeport schema` prints", err)
			}
			return nil, err
		}
		if ck != nil {
			planPath = ck.planPath
		} else {
			// In --tmp-dir when there is one: a plan holds every write.
			tmp, err := os.CreateTemp(opts.Input.OutOfCore.Dir(), "treeport-apply-*.plan.json")
			if err != nil {
				return nil, err
			}
			tmp.Close()
			planPath = tmp.Name()
			defer os.Remove(planPath)
		}
		h := j.header()
		if ck != nil {
			h.Run = ck.ck.Fingerprint
		}
		if res.Summary, err = writePlan(ctx, j, planPath, h); err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "read table %s: %s\n", j.Table, j.t.Read)
		if j.ooc != nil {
			fmt.Fprintln(log, OutOfCoreNote)
		}
	}
	summary := res.Summary
	if summary.DeleteRatio() > opts.MaxDeleteRatio && !opts.AllowMassDelete {
		if ck != nil && !ck.resume {
			os.Remove(planPath)
		}
		return res, massDelete(summary, opts.MaxDeleteRatio)
	}
	if summary.Changes() == 0 {
		res.Took = time.Since(opts.Started)
		if err := writeApplyReport(opts.Report, summary, 0, ddbwrite.Stats{}, res.Took); err != nil {
			return res, err
		}
		if ck != nil {
			ck.ck.Done = true
			if err := ck.ck.Save(ck.path); err != nil {
				return res, err
			}
			os.Remove(planPath)
		}
		return res, nil
	}
	return res, execute(ctx, j, opts, planPath, ck, res)
}

// massDelete is the error of a plan that removes more than ratio of the
// table's nodes.
func massDelete(s *Summary, ratio float64) error {
	return fmt.Errorf("%w: refusing a plan that %s (%.1f%% > --max-delete-ratio %g); nothing was written. A truncated snapshot? Check it, or pass --allow-mass-delete if the removal is meant",
		ddbwrite.ErrUsage, s.DeleteText(), 100*s.DeleteRatio(), ratio)
}

// resumePlan reads the plan kept beside an unfinished checkpoint: it must
// be the file treeport wrote for the checkpoint's run (see VerifyPlanFile),
// and its operations must add up to its summary, since the mass-delete
// guard is taken from them, not from what the summary says: the summary
// returned counts, as removed nodes, at least the nodes the operations
// delete as removed. The checkpoint's watermark must not be past the
// plan's operations. Every refusal is an ddbwrite.ErrUsage; nothing was
// written. The removed nodes' ids are counted in o's budget, spilled to
// its TmpDir (o nil: in memory).
func resumePlan(ck *applyCheckpoint, o *importer.OutOfCore) (*Summary, error) {
	refuse := func(err error) error {
		return fmt.Errorf("%w: %w", ddbwrite.ErrUsage, err)
	}
	f, err := statefile.Open(ck.planPath, os.O_RDONLY)
	if err != nil {
		return nil, refuse(err)
	}
	defer f.Close()
	if err := VerifyPlanFile(f, ck.ck.Fingerprint); err != nil {
		return nil, refuse(err)
	}
	counted := map[Reason]*Count{}
	for _, r := range Reasons {
		counted[r] = &Count{}
	}
	var ops int64
	removed := spill.NewDistinct("", math.MaxInt32) // no budget: in memory
	if o != nil {
		dir, err := o.SpillDir("resume", "resuming apply", 0, ck.planPath)
		if err != nil {
			return nil, err
		}
		defer dir.Close()
		removed = spill.NewDistinct(dir.Path, int(max(o.Memory/4, 1<<20)))
	}
	defer removed.Close()
	_, summary, err := ReadPlan(f, func(op Op) error {
		ops++
		c, ok := counted[op.Reason]
		if !ok {
			return fmt.Errorf("operation %d: unknown reason %q", ops, op.Reason)
		}
		if op.Kind == Put {
			c.Puts++
		} else {
			c.Deletes++
			if op.Reason == ReasonRemoved {
				if err := removed.Add(op.ID); err != nil {
					return err
				}
			}
		}
		c.WCU += int64(op.WCU)
		return nil
	})
	if err != nil {
		return nil, refuse(fmt.Errorf("%s: %v (delete the checkpoint to plan again)", ck.planPath, err))
	}
	for _, r := range Reasons {
		got, said := counted[r], summary.ByReason[r]
		if said == nil || got.Puts != said.Puts || got.Deletes != said.Deletes || got.WCU != said.WCU {
			return nil, refuse(&statefile.Error{Path: ck.planPath,
				Why: fmt.Sprintf("its %s operations (%s, %s) are not what its summary says: it was edited", r, units.Count(int64(got.Puts), "put"), units.Count(int64(got.Deletes), "delete")),
				Do:  "delete the checkpoint and the files beside it (CHECKPOINT.*) to plan again"})
		}
	}
	if ops != summary.Changes() {
		return nil, refuse(&statefile.Error{Path: ck.planPath, Why: fmt.Sprintf("it holds %d operations, its summary says %d", ops, summary.Changes()),
			Do: "delete the checkpoint and the files beside it (CHECKPOINT.*) to plan again"})
	}
	// Under --shard the summary counts the whole table's removed nodes,
	// and the operations this shard's: the guard takes the larger.
	r := summary.ByReason[ReasonRemoved]
	n, err := removed.Count()
	if err != nil {
		return nil, err
	}
	r.Nodes = max(r.Nodes, n)
	if ck.ck.Watermark > ops {
		return nil, importer.WatermarkPastEnd(ck.path, ck.ck.Watermark, ops, "operations of its plan")
	}
	return summary, nil
}

// writeApplyReport writes the report: the plan's counts and what the writer
// did (nothing, for a plan without changes: a report is written all the
// same, so that a job never reads an earlier run's as its own).
func writeApplyReport(path string, summary *Summary, skip int64, stats ddbwrite.Stats, took time.Duration) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(struct {
		Plan    *Summary       `json:"plan"`
		Skipped int64          `json:"operations_skipped_from_checkpoint"`
		Writer  ddbwrite.Stats `json:"writer"`
		Total   float64        `json:"duration_seconds"`
	}{summary, skip, stats, took.Seconds()}, "", "  ")
	if err != nil {
		return err
	}
	return statefile.WriteOutput(path, append(b, '\n')) // an output: the umask says who reads it
}

// writePlan plans into a plan file.
func writePlan(ctx context.Context, j *job, path string, h PlanHeader) (*Summary, error) {
	// The plan holds items: private, as the checkpoint is, and made anew,
	// never through a link or over a file treeport did not write.
	f, err := statefile.Create(path, 0o600, func(head []byte) bool {
		return bytes.HasPrefix(head, []byte(`{"version":`))
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ddbwrite.ErrUsage, err)
	}
	s, err := writePlanTo(ctx, j, f, h)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path) // this run's, and not a plan
		return nil, err
	}
	return s, nil
}

// writePlanTo plans into f, and syncs it.
func writePlanTo(ctx context.Context, j *job, f *os.File, h PlanHeader) (*Summary, error) {
	pw, err := NewPlanWriter(f, h)
	if err != nil {
		return nil, err
	}
	s, err := j.plan(ctx, pw.Write)
	if err != nil {
		return nil, err
	}
	if err := pw.Close(s); err != nil {
		return nil, err
	}
	return s, f.Sync()
}

// ErrPutsFailed ends a write run whose deletes were not sent because a put
// before them failed: the table holds every node it held, and what was
// put. It matches ddbwrite.ErrBarrierRefused when DynamoDB refused a put.
var ErrPutsFailed = errors.New("a put of the plan failed")

// settle waits until every put handed to the writer is acknowledged (the
// barrier between a plan's puts and its deletes), and says so when one
// failed.
func settle(ctx context.Context, w *ddbwrite.DDBWriter) error {
	err := w.Settle(ctx)
	switch {
	case err == nil, ctx.Err() != nil:
		return err
	case errors.Is(err, ddbwrite.ErrBarrierRefused):
		return fmt.Errorf("%w: no delete was sent, and the table still holds every node it held: %w; fix those items (or the table) and rerun the same command, which goes on from its checkpoint and puts them again", ErrPutsFailed, err)
	}
	return fmt.Errorf("%w: no delete was sent, and the table still holds every node it held: %w; rerun the same command (with --checkpoint it goes on where the acknowledged puts stopped)", ErrPutsFailed, err)
}

// sendOps hands ops, puts before deletes, to the writer, numbered from 0,
// and sends no delete before every put is acknowledged (settle).
func sendOps(ctx context.Context, w *ddbwrite.DDBWriter, ops []Op) error {
	_, err := ddbwrite.WriteOps(ctx, w, 0, func(yield func(bool, layouts.Item) error) error {
		for _, op := range ops {
			if err := yield(op.Kind == Delete, op.Item); err != nil {
				return err
			}
		}
		return nil
	}, func(ctx context.Context, _ int64) error { return settle(ctx, w) })
	return err
}

// execute writes a plan file's operations with the writer, from the
// checkpoint's watermark on.
func execute(ctx context.Context, j *job, opts ApplyOptions, planPath string, ck *applyCheckpoint, res *ApplyResult) error {
	ro := ddbwrite.RunOptions{
		WriteOptions: opts.WriteOptions,
		Client:       j.Client, Table: j.Table, Spec: j.Layout.Table(),
		ConsumedCapacity: opts.Report != "", Resume: ck != nil && ck.resume,
		Total: res.Summary.Changes(),
	}
	if ck != nil {
		// Saved before the first write, so that a rerun after a crash
		// finds the plan's checkpoint.
		if err := ck.ck.Save(ck.path); err != nil {
			return err
		}
		ro.Checkpoint, ro.CheckpointPath = ck.ck, ck.path
	}
	f, err := statefile.Open(planPath, os.O_RDONLY)
	if err != nil {
		return fmt.Errorf("%w: %w", ddbwrite.ErrUsage, err)
	}
	defer f.Close()
	run, err := ddbwrite.Run(ctx, ro, func(ctx context.Context, w *ddbwrite.DDBWriter, skip int64) error {
		seq, err := ddbwrite.WriteOps(ctx, w, skip, func(yield func(bool, layouts.Item) error) error {
			_, _, err := ReadPlan(f, func(op Op) error { return yield(op.Kind == Delete, op.Item) })
			return err
		}, func(ctx context.Context, s int64) error {
			// Puts before deletes, for real: no delete is sent before
			// every put is acknowledged, this copy's and, under --shard,
			// the other copies' that it waits for.
			if err := settle(ctx, w); err != nil {
				return err
			}
			return waitForOtherShards(ctx, j, planPath, s, opts.ShardWait)
		})
		if err == nil && seq < skip {
			return importer.WatermarkPastEnd(ck.path, skip, seq, "operations of its plan")
		}
		return err
	})
	res.Run = run
	res.Took = time.Since(opts.Started)
	if run == nil {
		return err
	}
	if ck != nil && ck.ck.Done {
		os.Remove(planPath)
	}
	if rerr := writeApplyReport(opts.Report, res.Summary, run.Skipped, run.Stats, res.Took); rerr != nil {
		return rerr
	}
	return err
}

// checkPlanTargets reads the items under the keys of a plan file's
// operations from skip on, and refuses (checkTargets) when one is not the
// tree's: another entity's, or one that does not read.
func checkPlanTargets(ctx context.Context, j *job, planPath string, skip int64) error {
	f, err := os.Open(planPath)
	if err != nil {
		return err
	}
	defer f.Close()
	const chunk = 1000
	var ops []Op
	var seq int64
	_, _, err = ReadPlan(f, func(op Op) error {
		s := seq
		seq++
		if s < skip {
			return nil
		}
		if ops = append(ops, op); len(ops) == chunk {
			err := checkTargets(ctx, j.Client, j.Table, j.Layout, ops)
			ops = ops[:0]
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return checkTargets(ctx, j.Client, j.Table, j.Layout, ops)
}

// DefaultShardWait is how long a copy waits for the other copies' puts
// its deletes depend on, when ApplyOptions.ShardWait is 0.
const DefaultShardWait = 2 * time.Minute

// waitForOtherShards waits until the table holds every item that the plan
// file's deletes from seq from on wait for (Op.After: a moved node's new
// items, which other copies put), as the plan wants them. After wait, it
// fails (ErrPutsFailed): no such delete is sent, and the table still holds
// every node it held.
func waitForOtherShards(ctx context.Context, j *job, planPath string, from int64, wait time.Duration) error {
	f, err := os.Open(planPath)
	if err != nil {
		return err
	}
	defer f.Close()
	want := map[string]string{} // key → the item, as DynamoDB JSON
	var keys []map[string]types.AttributeValue
	spec := j.Layout.Table()
	var seq int64
	if _, _, err := ReadPlan(f, func(op Op) error {
		s := seq
		seq++
		if s < from {
			return nil
		}
		for _, it := range op.After {
			k := itemdigest.KeyOf(spec, it)
			if _, ok := want[k]; !ok {
				key := map[string]types.AttributeValue{spec.PK.Name: it[spec.PK.Name]}
				if spec.SK != nil {
					key[spec.SK.Name] = it[spec.SK.Name]
				}
				keys = append(keys, key)
			}
			want[k] = string(ddbjson.AppendItem(nil, it))
		}
		return nil
	}); err != nil {
		return err
	}
	if len(keys) == 0 {
		return nil
	}
	if wait <= 0 {
		wait = DefaultShardWait
	}
	deadline := time.Now().Add(wait)
	for pause := 200 * time.Millisecond; ; pause = min(2*pause, 5*time.Second) {
		var missing []map[string]types.AttributeValue
		for start := 0; start < len(keys); start += exporter.MaxBatchGetKeys {
			batch := keys[start:min(start+exporter.MaxBatchGetKeys, len(keys))]
			found := map[string]bool{}
			pending := batch
			for len(pending) > 0 {
				out, err := j.Client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
					j.Table: {Keys: pending, ConsistentRead: aws.Bool(true)},
				}})
				if err != nil {
					return fmt.Errorf("table %s: reading the items other copies put: %w", j.Table, err)
				}
				for _, it := range out.Responses[j.Table] {
					k := itemdigest.KeyOf(spec, it)
					found[k] = string(ddbjson.AppendItem(nil, it)) == want[k]
				}
				pending = out.UnprocessedKeys[j.Table].Keys
			}
			for _, key := range batch {
				if !found[itemdigest.KeyOf(spec, key)] {
					missing = append(missing, key)
				}
			}
		}
		if len(missing) == 0 {
			return nil
		}
		keys = missing
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: no delete was sent, and the table still holds every node it held: %d items of moved nodes that other copies (--shard) put are not in %s as the plan wants them after %s, such as %s; run every copy, then rerun this one, which goes on from its checkpoint",
				ErrPutsFailed, len(missing), j.Table, wait, ddb.KeyString(missing[0], spec.KeyNames()...))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
	}
}
