package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime/debug"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/urfave/cli/v2"
	"golang.org/x/sync/errgroup"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/pricing"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/refresh"
)

// defaultMaxDeleteRatio is the part of a table's nodes apply deletes without
// --allow-mass-delete.
const defaultMaxDeleteRatio = 0.10

func refreshFlags() []cli.Flag {
	flags := append(inputFlags(), layoutFlags(false)...)
	flags = append(flags, readFlags()...)
	flags = append(flags,
		&cli.IntFlag{Name: "max-errors", Value: 100, Usage: "how many problems of the snapshot to print", Category: catValid, Action: atLeastOne("max-errors")},
		&cli.StringFlag{Name: "shard", Usage: "plan (and write) only shard `k/N` of the items, by partition-key hash, for N copies run side by side", Category: catWrite},
		&cli.Float64Flag{Name: "max-delete-ratio", Value: defaultMaxDeleteRatio, Usage: "apply refuses a plan that removes more than this part of the table's nodes (a truncated snapshot must not wipe a table); plan warns", Category: catWrite},
	)
	return append(flags, awsFlags()...)
}

func planCommand() *cli.Command {
	flags := append(refreshFlags(),
		&cli.StringFlag{Name: "out", Usage: "write the item-level plan (every put and delete, DynamoDB JSON) to `FILE`", Category: catOutput},
		&cli.BoolFlag{Name: "detailed-exitcode", Usage: "exit 1 when the plan has changes, 0 when the table already equals the snapshot", Category: catOutput},
		&cli.BoolFlag{Name: "json", Usage: "print the summary as JSON", Category: catOutput},
	)
	return &cli.Command{
		Name:      "plan",
		Usage:     "show what a refresh from a snapshot would change in a table: the fewest puts and deletes",
		UsageText: "treeport plan --in SNAPSHOT --table T --layout L [--out plan.json] [--detailed-exitcode]",
		Description: "Reads the snapshot (validated as import validates it) and the table (one parallel Scan, at the\n" +
			"same time), builds every item the layout wants for the snapshot and compares it with the table's\n" +
			"item under the same key, by value. A put is planned only for an item the table lacks or holds\n" +
			"otherwise, a delete only for a key the snapshot does not want: new nodes, removed nodes, changed\n" +
			"attributes and moved subtrees (path: the subtree's Path, Depth and TreeId/GraphId; closure: the\n" +
			"rows that link it to its ancestors; prefix: its object and listing rows) all come out as the\n" +
			"smallest set of item writes. Nothing is written.",
		Flags:  flags,
		Action: runPlan,
	}
}

func applyCommand() *cli.Command {
	flags := refreshFlags()
	flags = append(flags,
		&cli.BoolFlag{Name: "allow-mass-delete", Usage: "apply a plan that removes more than --max-delete-ratio of the nodes", Category: catWrite},
		&cli.BoolFlag{Name: "create-table", Usage: "create the table (on-demand) when it does not exist", Category: catWrite},
		&cli.StringFlag{Name: "report", Usage: "write a JSON summary of the run (the plan's counts and the writer's) to `FILE`", Category: catWrite},
	)
	for _, f := range writerFlags() {
		if n := f.Names()[0]; n != "wcu" && n != "rcu" {
			flags = append(flags, f)
		}
	}
	return &cli.Command{
		Name:      "apply",
		Usage:     "refresh a table from a snapshot with the fewest writes (plan, then write it)",
		UsageText: "treeport apply --in SNAPSHOT --table T --layout L [--checkpoint FILE] [--max-delete-ratio 0.1 | --allow-mass-delete]",
		Description: "Plans as `treeport plan` does, then writes the plan with treeport's writer (rate limiting,\n" +
			"backoff on throttling, retries, dead letters): the puts first, then the deletes as\n" +
			"BatchWriteItem DeleteRequests. A second apply of the same snapshot writes nothing.\n" +
			"With --checkpoint, the plan is kept beside the checkpoint (FILE.plan.json) and a rerun\n" +
			"after a crash or Ctrl-C goes on with it where the acknowledged writes stopped, without\n" +
			"reading the table again. A plan that removes more than --max-delete-ratio of the table's\n" +
			"nodes is refused (exit 2, nothing written) unless --allow-mass-delete is given.",
		Flags:  flags,
		Action: runApply,
	}
}

// refreshJob is a refresh of one table from one snapshot: what plan, apply
// and migrate share, taken from their flags.
type refreshJob struct {
	c        *cli.Context
	client   *dynamodb.Client
	l        layouts.Layout
	table    string
	snapshot string
	input    importer.InputOptions
	shard    importer.Shard
	scan     exporter.ScanOptions
	// ratio is --max-delete-ratio; maxErrors is --max-errors.
	ratio     float64
	maxErrors int
	// settings identify the flags for a checkpoint's fingerprint.
	settings map[string]any

	// Read by read: the snapshot, checked, and the table.
	in *importer.Input
	t  *refresh.Table
}

// refreshJobFromFlags checks the command line of plan and apply, and gives
// each copy of a sharded run its own file names.
func refreshJobFromFlags(c *cli.Context, files ...string) (*refreshJob, error) {
	if c.NArg() > 0 {
		return nil, usagef("unexpected arguments %q", c.Args().Slice())
	}
	switch {
	case c.String("in") == "":
		return nil, usagef("--in is required: the snapshot to refresh the table from")
	case c.String("table") == "":
		return nil, usagef("--table is required")
	}
	ls, lopts, err := newLayouts(c, false)
	if err != nil {
		return nil, err
	}
	srcOpts, err := sourceOptions(c)
	if err != nil {
		return nil, err
	}
	j := &refreshJob{
		c: c, l: ls[0], table: c.String("table"), snapshot: c.String("in"),
		input:     importer.InputOptions{Path: c.String("in"), Source: srcOpts, ClosureCopy: lopts.ClosureCopy},
		maxErrors: c.Int("max-errors"),
		settings:  settings(c, ls[0]),
	}
	if err := j.commonFlags(c, files...); err != nil {
		return nil, err
	}
	return j, nil
}

// commonFlags reads the flags plan, apply and migrate share: the shard, the
// Scan's and the mass-delete guard's.
func (j *refreshJob) commonFlags(c *cli.Context, files ...string) error {
	j.ratio = c.Float64("max-delete-ratio")
	if j.ratio < 0 || j.ratio > 1 {
		return usagef("--max-delete-ratio %g: give a part of the nodes between 0 and 1 (0.1 is 10%%)", j.ratio)
	}
	shard, err := importer.ParseShard(c.String("shard"))
	if err != nil {
		return usagef("%v", err)
	}
	j.shard = shard
	if shard.Of > 1 {
		for _, name := range files {
			if v := c.String(name); v != "" {
				if err := c.Set(name, shard.FileName(v)); err != nil {
					return err
				}
			}
		}
	}
	segments := c.Int("segments")
	if segments < 1 || segments > exporter.MaxSegments {
		return usagef("--segments %d: give 1 to %d", segments, exporter.MaxSegments)
	}
	j.scan = exporter.ScanOptions{Segments: segments, MaxRCU: c.Float64("max-rcu"), ConsistentRead: c.Bool("consistent-read")}
	return nil
}

// read reads the snapshot and the table at the same time, and checks the
// snapshot against the layout. A snapshot with problems stops the scan and
// gives importer.ErrInvalid, with the problems printed.
func (j *refreshJob) read(ctx context.Context) error {
	if err := importer.CheckTable(ctx, j.client, j.table, j.l.Table()); err != nil {
		return err
	}
	debug.SetGCPercent(50) // see runImport
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		in, err := importer.ReadInput(gctx, j.input)
		if err != nil {
			return err
		}
		if problems := in.CheckLayout(j.l); len(problems) > 0 {
			printProblems(j.c.App.ErrWriter, problems, j.maxErrors)
			return fmt.Errorf("%w: %s in %s; nothing was planned or written (a refresh needs a valid snapshot: skipping a node would delete it)",
				importer.ErrInvalid, countProblems(len(problems)), j.snapshot)
		}
		j.in = in
		return nil
	})
	g.Go(func() error {
		t, err := refresh.ReadTable(gctx, refresh.ReadTableOptions{Client: j.client, Table: j.table, Layout: j.l, Shard: j.shard, Scan: j.scan})
		j.t = t
		return err
	})
	return g.Wait()
}

func (j *refreshJob) header() refresh.PlanHeader {
	return refresh.PlanHeader{Table: j.table, Layout: j.l.Name(), Snapshot: j.snapshot, Shard: j.shard.String()}
}

// plan plans, passing each operation to fn.
func (j *refreshJob) plan(ctx context.Context, fn func(refresh.Op) error) (*refresh.Summary, error) {
	return refresh.Plan(ctx, refresh.Options{Input: j.in, Layout: j.l, Table: j.t, Shard: j.shard}, fn)
}

func runPlan(c *cli.Context) error {
	j, err := refreshJobFromFlags(c, "out")
	if err != nil {
		return err
	}
	if j.client, err = ddb.NewClient(c.Context, readAWSOptions(c, c.Int("segments"))); err != nil {
		return err
	}
	if err := j.read(c.Context); err != nil {
		return err
	}
	var pw *refresh.PlanWriter
	var out *os.File
	if p := c.String("out"); p != "" {
		if out, err = os.Create(p); err != nil {
			return err
		}
		defer out.Close()
		if pw, err = refresh.NewPlanWriter(out, j.header()); err != nil {
			return err
		}
	}
	s, err := j.plan(c.Context, func(op refresh.Op) error {
		if pw != nil {
			return pw.Write(op)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if pw != nil {
		if err := pw.Close(s); err != nil {
			return err
		}
		if err := out.Close(); err != nil {
			return err
		}
	}
	if c.Bool("json") {
		b, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(c.App.Writer, "%s\n", b)
	} else {
		printPlanSummary(c.App.Writer, s, j.ratio)
		if p := c.String("out"); p != "" {
			fmt.Fprintf(c.App.Writer, "item-level plan written to %s\n", p)
		}
	}
	fmt.Fprintf(c.App.ErrWriter, "read table %s: %s\n", j.table, j.t.Read)
	if c.Bool("detailed-exitcode") && s.Changes() > 0 {
		return errDifferences
	}
	return nil
}

// printPlanSummary prints a plan's counts as a table.
func printPlanSummary(w io.Writer, s *refresh.Summary, ratio float64) {
	where := s.Table
	if s.Shard != "" {
		where += " (shard " + s.Shard + ")"
	}
	fmt.Fprintf(w, "plan for table %s, %s layout: table %d nodes in %d items; snapshot %d nodes, %d items\n",
		where, s.Layout, s.TableNodes, s.TableItems, s.SnapshotNodes, s.SnapshotItems)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tnodes\tputs\tdeletes\tWCU\t")
	for _, reason := range refresh.Reasons {
		n := s.ByReason[reason]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", reasonLabel(reason, s), n.Nodes, n.Puts, n.Deletes, n.WCU)
	}
	fmt.Fprintf(tw, "total\t%d\t%d\t%d\t%d\t\n", s.Total.Nodes, s.Total.Puts, s.Total.Deletes, s.Total.WCU)
	tw.Flush()
	p := pricing.Default
	fmt.Fprintf(w, "%d nodes unchanged. Writing the plan costs %d WCU: %s on demand (%s prices of %s).\n",
		s.Unchanged, s.Total.WCU, money(p.OnDemandWrites(s.Total.WCU)), p.Region, p.AsOf)
	if s.Changes() == 0 {
		fmt.Fprintln(w, "No changes: the table equals the snapshot.")
	}
	if s.DeleteRatio() > ratio {
		fmt.Fprintf(w, "WARNING: the plan removes %d of the table's %d nodes (%.1f%%), more than --max-delete-ratio %g: apply will refuse it without --allow-mass-delete. Is the snapshot complete?\n",
			s.ByReason[refresh.ReasonRemoved].Nodes, s.TableNodes, 100*s.DeleteRatio(), ratio)
	}
}

func reasonLabel(r refresh.Reason, s *refresh.Summary) string {
	switch r {
	case refresh.ReasonNew:
		return "new nodes"
	case refresh.ReasonRemoved:
		return "removed nodes"
	case refresh.ReasonMoved:
		return fmt.Sprintf("moved (%d subtrees)", s.MovedSubtrees)
	case refresh.ReasonChanged:
		return "changed attributes"
	case refresh.ReasonRepair:
		return "repairs"
	}
	return string(r)
}

// applyCheckpoint is a checkpoint of apply: the writer's watermark over the
// operations of the plan kept beside it.
type applyCheckpoint struct {
	path, planPath string
	ck             *importer.Checkpoint
	resume         bool
}

// loadCheckpoint decides what a --checkpoint means for this run: a finished
// or absent one starts a new plan; an unfinished one for the same snapshot,
// flags and table goes on with its plan; an unfinished one for anything else
// is refused.
func (j *refreshJob) loadCheckpoint(path string) (*applyCheckpoint, error) {
	if path == "" {
		return nil, nil
	}
	set := maps.Clone(j.settings)
	set["command"] = "apply"
	set["table"] = j.table
	fp, err := importer.Fingerprint(j.snapshot, set)
	if err != nil {
		return nil, err
	}
	a := &applyCheckpoint{path: path, planPath: path + ".plan.json"}
	ck, err := importer.LoadCheckpoint(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	case ck.Done:
		// A finished apply: plan afresh (the table may have changed since).
	default:
		if err := ck.Match(fp); err != nil {
			return nil, fmt.Errorf("%w: %s belongs to an unfinished run of another snapshot, other flags or another table: finish that one, or delete the checkpoint (and %s) to start over: %v",
				errUsage, path, a.planPath, err)
		}
		if _, err := os.Stat(a.planPath); err != nil {
			return nil, fmt.Errorf("%w: checkpoint %s has no plan beside it (%v); delete the checkpoint to plan again", errUsage, path, err)
		}
		a.ck, a.resume = ck, true
		return a, nil
	}
	a.ck = &importer.Checkpoint{Fingerprint: fp, Table: j.table, Layout: j.l.Name()}
	return a, nil
}

func runApply(c *cli.Context) error {
	started := time.Now()
	j, err := refreshJobFromFlags(c, "checkpoint", "dead-letter", "report")
	if err != nil {
		return err
	}
	if j.client, err = ddb.NewClient(context.WithoutCancel(c.Context), awsOptions(c)); err != nil {
		return err
	}
	if c.Bool("create-table") {
		if err := importer.CreateTable(c.Context, j.client, j.table, j.l.Table(), importer.Billing{}); err != nil {
			return err
		}
	}
	_, err = j.apply(started)
	return err
}

// apply plans (or takes up the plan of an unfinished checkpoint) and writes
// the plan. It returns the plan's summary.
func (j *refreshJob) apply(started time.Time) (*refresh.Summary, error) {
	c := j.c
	ck, err := j.loadCheckpoint(c.String("checkpoint"))
	if err != nil {
		return nil, err
	}
	// The plan goes to a file first: the whole of it is known (and checked
	// against --max-delete-ratio) before the first write, and a checkpoint
	// can go on with it.
	var planPath string
	var summary *refresh.Summary
	if ck != nil && ck.resume {
		planPath = ck.planPath
		f, err := os.Open(planPath)
		if err != nil {
			return nil, err
		}
		_, summary, err = refresh.ReadPlan(f, func(refresh.Op) error { return nil })
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v (delete the checkpoint to plan again)", errUsage, planPath, err)
		}
		fmt.Fprintf(c.App.ErrWriter, "resuming from checkpoint %s: %d of %d operations acknowledged\n",
			ck.path, ck.ck.Watermark, summary.Changes())
	} else {
		if err := j.read(c.Context); err != nil {
			if errors.Is(err, importer.ErrTableNotFound) {
				return nil, fmt.Errorf("%w (add --create-table to create it)", err)
			}
			return nil, err
		}
		if ck != nil {
			planPath = ck.planPath
		} else {
			tmp, err := os.CreateTemp("", "treeport-apply-*.plan.json")
			if err != nil {
				return nil, err
			}
			tmp.Close()
			planPath = tmp.Name()
			defer os.Remove(planPath)
		}
		if summary, err = j.writePlan(planPath); err != nil {
			return nil, err
		}
		fmt.Fprintf(c.App.ErrWriter, "read table %s: %s\n", j.table, j.t.Read)
	}
	printPlanSummary(c.App.Writer, summary, j.ratio)
	if summary.DeleteRatio() > j.ratio && !c.Bool("allow-mass-delete") {
		if ck != nil && !ck.resume {
			os.Remove(planPath)
		}
		return summary, fmt.Errorf("%w: refusing to remove %d of the table's %d nodes (%.1f%% > --max-delete-ratio %g); nothing was written. A truncated snapshot? Check it, or pass --allow-mass-delete if the removal is meant",
			errUsage, summary.ByReason[refresh.ReasonRemoved].Nodes, summary.TableNodes, 100*summary.DeleteRatio(), j.ratio)
	}
	if summary.Changes() == 0 {
		if err := writeApplyReport(c.String("report"), summary, 0, importer.Stats{}, started); err != nil {
			return summary, err
		}
		if ck != nil {
			ck.ck.Done = true
			if err := ck.ck.Save(ck.path); err != nil {
				return summary, err
			}
			os.Remove(planPath)
		}
		return summary, nil
	}
	return summary, j.execute(planPath, summary, ck, started)
}

// writeApplyReport writes --report: the plan's counts and what the writer
// did (nothing, for a plan without changes: a report is written all the
// same, so that a job never reads an earlier run's as its own).
func writeApplyReport(path string, summary *refresh.Summary, skip int64, stats importer.Stats, started time.Time) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(struct {
		Plan    *refresh.Summary `json:"plan"`
		Skipped int64            `json:"operations_skipped_from_checkpoint"`
		Writer  importer.Stats   `json:"writer"`
		Total   float64          `json:"duration_seconds"`
	}{summary, skip, stats, time.Since(started).Seconds()}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// writePlan plans into a plan file.
func (j *refreshJob) writePlan(path string) (*refresh.Summary, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pw, err := refresh.NewPlanWriter(f, j.header())
	if err != nil {
		return nil, err
	}
	s, err := j.plan(j.c.Context, pw.Write)
	if err != nil {
		return nil, err
	}
	if err := pw.Close(s); err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	return s, f.Close()
}

// execute writes a plan file's operations with the writer, from the
// checkpoint's watermark on.
func (j *refreshJob) execute(planPath string, summary *refresh.Summary, ck *applyCheckpoint, started time.Time) error {
	c := j.c
	readCtx := c.Context
	writeCtx := context.WithoutCancel(c.Context)
	var skip int64
	if ck != nil {
		skip = ck.ck.Watermark
	}
	deadLetter, priorDead, err := openDeadLetter(c.String("dead-letter"), ck != nil && ck.resume)
	if err != nil {
		return err
	}
	if deadLetter != nil {
		defer deadLetter.Close()
	}
	prog := newProgress(c, summary.Changes(), skip)
	saver := &checkpointSaver{}
	if ck != nil {
		saver.ck, saver.path = ck.ck, ck.path
	}
	if err := saver.save(skip, true); err != nil {
		return err
	}
	opts := importer.WriterOptions{
		Concurrency:      c.Int("concurrency"),
		MaxWCU:           c.Float64("max-wcu"),
		StartSeq:         skip,
		ConsumedCapacity: c.String("report") != "",
		OnAck:            saver.ack,
		OnProgress:       prog.update,
	}
	if deadLetter != nil {
		opts.DeadLetter = deadLetter
	}
	w := importer.NewDDBWriter(j.client, j.table, j.l.Table(), opts)
	f, err := os.Open(planPath)
	if err != nil {
		return err
	}
	defer f.Close()
	var seq int64
	_, _, readErr := refresh.ReadPlan(f, func(op refresh.Op) error {
		s := seq
		seq++
		if s < skip {
			return nil
		}
		if err := readCtx.Err(); err != nil {
			return err
		}
		if op.Kind == refresh.Delete {
			return w.Delete(readCtx, s, op.Item)
		}
		return w.Write(readCtx, s, op.Item)
	})
	stats, closeErr := w.Close(writeCtx)
	prog.finish()
	interrupted := errors.Is(readErr, context.Canceled) || errors.Is(closeErr, context.Canceled)
	if err := saver.finish(stats.Watermark, readErr == nil && closeErr == nil); err != nil {
		return err
	}
	if ck != nil && ck.ck.Done {
		os.Remove(planPath)
	}
	if err := writeApplyReport(c.String("report"), summary, skip, stats, started); err != nil {
		return err
	}
	if interrupted {
		if ck != nil {
			fmt.Fprintf(c.App.ErrWriter, "interrupted: %d of %d operations acknowledged, checkpoint saved to %s (rerun the same command to go on)\n",
				ck.ck.Watermark, summary.Changes(), ck.path)
		} else {
			fmt.Fprintf(c.App.ErrWriter, "interrupted after %d operations (no --checkpoint: a rerun plans again and writes what is left)\n", stats.Items)
		}
		return errInterrupted
	}
	if readErr != nil {
		return readErr
	}
	if closeErr != nil {
		return closeErr
	}
	fmt.Fprintf(c.App.Writer, "applied %d operations to %s in %s: %s, %d throttles, %d retries\n",
		stats.Items, j.table, time.Since(started).Round(time.Millisecond), wcuText(stats), stats.Throttles, stats.Retries)
	if skip > 0 {
		fmt.Fprintf(c.App.Writer, "%d operations were acknowledged by an earlier run and skipped\n", skip)
	}
	return deadLetterResult(c, stats.DeadLettered, priorDead)
}
