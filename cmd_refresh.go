package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/urfave/cli/v2"
	"golang.org/x/sync/errgroup"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/importer"
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
		&cli.IntFlag{Name: "max-errors", Value: 100, Usage: "how many problems of the snapshot to print", Category: catValid},
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

// refreshRun is a snapshot and a table, read and checked, ready to plan.
type refreshRun struct {
	in     *importer.Input
	l      layouts.Layout
	table  *refresh.Table
	client *dynamodb.Client
	shard  importer.Shard
	ratio  float64
}

// refreshArgs checks the command line common to plan and apply, and gives
// each copy of a sharded run its own file names.
func refreshArgs(c *cli.Context, files ...string) (layouts.Layout, importer.Shard, error) {
	if c.NArg() > 0 {
		return nil, importer.Shard{}, usagef("unexpected arguments %q", c.Args().Slice())
	}
	switch {
	case c.String("in") == "":
		return nil, importer.Shard{}, usagef("--in is required: the snapshot to refresh the table from")
	case c.String("table") == "":
		return nil, importer.Shard{}, usagef("--table is required")
	}
	if r := c.Float64("max-delete-ratio"); r < 0 || r > 1 {
		return nil, importer.Shard{}, usagef("--max-delete-ratio %g: give a part of the nodes between 0 and 1 (0.1 is 10%%)", r)
	}
	ls, _, err := newLayouts(c, false)
	if err != nil {
		return nil, importer.Shard{}, err
	}
	shard, err := importer.ParseShard(c.String("shard"))
	if err != nil {
		return nil, importer.Shard{}, usagef("%v", err)
	}
	if shard.Of > 1 {
		for _, name := range files {
			if v := c.String(name); v != "" {
				if err := c.Set(name, shard.FileName(v)); err != nil {
					return nil, shard, err
				}
			}
		}
	}
	return ls[0], shard, nil
}

// readRefresh reads the snapshot and the table at the same time, and checks
// the snapshot against the layout. A snapshot with problems stops the scan
// and gives importer.ErrInvalid, with the problems printed.
func readRefresh(c *cli.Context, client *dynamodb.Client, l layouts.Layout, shard importer.Shard) (*refreshRun, error) {
	srcOpts, err := sourceOptions(c)
	if err != nil {
		return nil, err
	}
	segments := c.Int("segments")
	if segments < 1 || segments > exporter.MaxSegments {
		return nil, usagef("--segments %d: give 1 to %d", segments, exporter.MaxSegments)
	}
	_, lopts, err := newLayouts(c, false)
	if err != nil {
		return nil, err
	}
	table := c.String("table")
	if err := importer.CheckTable(c.Context, client, table, l.Table()); err != nil {
		return nil, err
	}
	debug.SetGCPercent(50) // see runImport
	r := &refreshRun{l: l, client: client, shard: shard, ratio: c.Float64("max-delete-ratio")}
	g, ctx := errgroup.WithContext(c.Context)
	g.Go(func() error {
		in, err := importer.ReadInput(ctx, importer.InputOptions{Path: c.String("in"), Source: srcOpts, ClosureCopy: lopts.ClosureCopy})
		if err != nil {
			return err
		}
		if problems := in.CheckLayout(l); len(problems) > 0 {
			printProblems(c.App.ErrWriter, problems, c.Int("max-errors"))
			return fmt.Errorf("%w: %d problems in %s; nothing was planned or written (a refresh needs a valid snapshot: skipping a node would delete it)",
				importer.ErrInvalid, len(problems), c.String("in"))
		}
		r.in = in
		return nil
	})
	g.Go(func() error {
		t, err := refresh.ReadTable(ctx, refresh.ReadTableOptions{
			Client: client, Table: table, Layout: l, Shard: shard,
			Scan: exporter.ScanOptions{Segments: segments, MaxRCU: c.Float64("max-rcu"), ConsistentRead: c.Bool("consistent-read")},
		})
		r.table = t
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return r, nil
}

func runPlan(c *cli.Context) error {
	l, shard, err := refreshArgs(c, "out")
	if err != nil {
		return err
	}
	client, err := importer.NewClient(c.Context, readAWSOptions(c, c.Int("segments")))
	if err != nil {
		return err
	}
	r, err := readRefresh(c, client, l, shard)
	if err != nil {
		return err
	}
	var pw *refresh.PlanWriter
	var out *os.File
	if p := c.String("out"); p != "" {
		if out, err = os.Create(p); err != nil {
			return err
		}
		defer out.Close()
		if pw, err = refresh.NewPlanWriter(out, r.header(c)); err != nil {
			return err
		}
	}
	s, err := refresh.Plan(c.Context, refresh.Options{Input: r.in, Layout: l, Table: r.table, Shard: shard}, func(op refresh.Op) error {
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
		printPlanSummary(c.App.Writer, s, r.ratio)
		if p := c.String("out"); p != "" {
			fmt.Fprintf(c.App.Writer, "item-level plan written to %s\n", p)
		}
	}
	fmt.Fprintf(c.App.ErrWriter, "read table %s: %s\n", r.table.Name, r.table.Read)
	if c.Bool("detailed-exitcode") && s.Changes() > 0 {
		return errDifferences
	}
	return nil
}

func (r *refreshRun) header(c *cli.Context) refresh.PlanHeader {
	return refresh.PlanHeader{Table: c.String("table"), Layout: r.l.Name(), Snapshot: c.String("in"), Shard: r.shard.String()}
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
	fmt.Fprintf(tw, "total\t\t%d\t%d\t%d\t\n", s.Total.Puts, s.Total.Deletes, s.Total.WCU)
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

// loadApplyCheckpoint decides what a --checkpoint means for this run: a
// finished or absent one starts a new plan; an unfinished one for the same
// snapshot, flags and table goes on with its plan; an unfinished one for
// anything else is refused.
func loadApplyCheckpoint(c *cli.Context, l layouts.Layout) (*applyCheckpoint, error) {
	path := c.String("checkpoint")
	if path == "" {
		return nil, nil
	}
	set := settings(c, l)
	set["command"] = "apply"
	fp, err := importer.Fingerprint(c.String("in"), set)
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
			return nil, fmt.Errorf("%w: %s belongs to an unfinished apply of another snapshot, other flags or another table: finish that one, or delete the checkpoint (and %s) to start over: %v",
				errUsage, path, a.planPath, err)
		}
		if _, err := os.Stat(a.planPath); err != nil {
			return nil, fmt.Errorf("%w: checkpoint %s has no plan beside it (%v); delete the checkpoint to plan again", errUsage, path, err)
		}
		a.ck, a.resume = ck, true
		return a, nil
	}
	a.ck = &importer.Checkpoint{Fingerprint: fp, Table: c.String("table"), Layout: l.Name()}
	return a, nil
}

func runApply(c *cli.Context) error {
	started := time.Now()
	l, shard, err := refreshArgs(c, "checkpoint", "dead-letter", "report")
	if err != nil {
		return err
	}
	ck, err := loadApplyCheckpoint(c, l)
	if err != nil {
		return err
	}
	client, err := importer.NewClient(context.WithoutCancel(c.Context), awsOptions(c))
	if err != nil {
		return err
	}
	table := c.String("table")

	// The plan goes to a file first: the whole of it is known (and checked
	// against --max-delete-ratio) before the first write, and a checkpoint
	// can go on with it.
	var planPath string
	var summary *refresh.Summary
	if ck != nil && ck.resume {
		planPath = ck.planPath
		f, err := os.Open(planPath)
		if err != nil {
			return err
		}
		_, summary, err = refresh.ReadPlan(f, func(refresh.Op) error { return nil })
		f.Close()
		if err != nil {
			return fmt.Errorf("%w: %s: %v (delete the checkpoint to plan again)", errUsage, planPath, err)
		}
		fmt.Fprintf(c.App.ErrWriter, "resuming from checkpoint %s: %d of %d operations acknowledged\n",
			ck.path, ck.ck.Watermark, summary.Changes())
	} else {
		if c.Bool("create-table") {
			if err := importer.CreateTable(c.Context, client, table, l.Table(), importer.Billing{}); err != nil {
				return err
			}
		}
		r, err := readRefresh(c, client, l, shard)
		if err != nil {
			if errors.Is(err, importer.ErrTableNotFound) {
				return fmt.Errorf("%w (add --create-table to create it)", err)
			}
			return err
		}
		if ck != nil {
			planPath = ck.planPath
		} else {
			tmp, err := os.CreateTemp("", "treeport-apply-*.plan.json")
			if err != nil {
				return err
			}
			tmp.Close()
			planPath = tmp.Name()
			defer os.Remove(planPath)
		}
		if summary, err = writePlan(c, r, planPath); err != nil {
			return err
		}
		fmt.Fprintf(c.App.ErrWriter, "read table %s: %s\n", table, r.table.Read)
	}
	printPlanSummary(c.App.Writer, summary, c.Float64("max-delete-ratio"))
	if summary.DeleteRatio() > c.Float64("max-delete-ratio") && !c.Bool("allow-mass-delete") {
		if ck != nil && !ck.resume {
			os.Remove(planPath)
		}
		return fmt.Errorf("%w: refusing to remove %d of the table's %d nodes (%.1f%% > --max-delete-ratio %g); nothing was written. A truncated snapshot? Check it, or pass --allow-mass-delete if the removal is meant",
			errUsage, summary.ByReason[refresh.ReasonRemoved].Nodes, summary.TableNodes, 100*summary.DeleteRatio(), c.Float64("max-delete-ratio"))
	}
	if summary.Changes() == 0 {
		if ck != nil {
			ck.ck.Done = true
			if err := ck.ck.Save(ck.path); err != nil {
				return err
			}
			os.Remove(planPath)
		}
		return nil
	}
	return executePlan(c, client, l, planPath, summary, ck, started)
}

// writePlan plans into a plan file.
func writePlan(c *cli.Context, r *refreshRun, path string) (*refresh.Summary, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pw, err := refresh.NewPlanWriter(f, r.header(c))
	if err != nil {
		return nil, err
	}
	s, err := refresh.Plan(c.Context, refresh.Options{Input: r.in, Layout: r.l, Table: r.table, Shard: r.shard}, pw.Write)
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

// executePlan writes a plan file's operations with the writer, from the
// checkpoint's watermark on.
func executePlan(c *cli.Context, client *dynamodb.Client, l layouts.Layout, planPath string, summary *refresh.Summary, ck *applyCheckpoint, started time.Time) error {
	readCtx := c.Context
	writeCtx := context.WithoutCancel(c.Context)
	table := c.String("table")
	var skip int64
	if ck != nil {
		skip = ck.ck.Watermark
	}
	var deadLetter *os.File
	if p := c.String("dead-letter"); p != "" {
		var err error
		if deadLetter, err = os.Create(p); err != nil {
			return err
		}
		defer deadLetter.Close()
	}
	prog := newProgress(c, summary.Changes(), skip)
	var ckMu sync.Mutex
	var lastSave time.Time
	save := func(w int64, force bool) error {
		if ck == nil {
			return nil
		}
		ckMu.Lock()
		defer ckMu.Unlock()
		if w > ck.ck.Watermark {
			ck.ck.Watermark = w
		}
		if !force && time.Since(lastSave) < checkpointInterval {
			return nil
		}
		lastSave = time.Now()
		return ck.ck.Save(ck.path)
	}
	if err := save(skip, true); err != nil {
		return err
	}
	opts := importer.WriterOptions{
		Concurrency:      c.Int("concurrency"),
		MaxWCU:           c.Float64("max-wcu"),
		StartSeq:         skip,
		ConsumedCapacity: c.String("report") != "",
		OnAck:            func(w int64) error { return save(w, false) },
		OnProgress:       prog.update,
	}
	if deadLetter != nil {
		opts.DeadLetter = deadLetter
	}
	w := importer.NewDDBWriter(client, table, l.Table(), opts)
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
	if ck != nil {
		ckMu.Lock()
		if stats.Watermark > ck.ck.Watermark {
			ck.ck.Watermark = stats.Watermark
		}
		ck.ck.Done = readErr == nil && closeErr == nil
		err := ck.ck.Save(ck.path)
		ckMu.Unlock()
		if err != nil {
			return err
		}
		if ck.ck.Done {
			os.Remove(planPath)
		}
	}
	if p := c.String("report"); p != "" {
		b, err := json.MarshalIndent(struct {
			Plan    *refresh.Summary `json:"plan"`
			Skipped int64            `json:"operations_skipped_from_checkpoint"`
			Writer  importer.Stats   `json:"writer"`
			Total   float64          `json:"duration_seconds"`
		}{summary, skip, stats, time.Since(started).Seconds()}, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
			return err
		}
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
		stats.Items, table, time.Since(started).Round(time.Millisecond), wcuText(stats), stats.Throttles, stats.Retries)
	if skip > 0 {
		fmt.Fprintf(c.App.Writer, "%d operations were acknowledged by an earlier run and skipped\n", skip)
	}
	if stats.DeadLettered > 0 {
		fmt.Fprintf(c.App.ErrWriter, "%d items rejected by DynamoDB were set aside in %s\n", stats.DeadLettered, c.String("dead-letter"))
		return errDifferences
	}
	return nil
}
