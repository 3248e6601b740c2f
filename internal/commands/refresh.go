package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/pricing"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/refresh"
	"github.com/treeport/treeport/transform"
)

// defaultMaxDeleteRatio is the part of a table's nodes apply deletes without
// --allow-mass-delete.
const defaultMaxDeleteRatio = 0.10

func refreshFlags() []cli.Flag {
	flags := append(inputFlags(), layoutFlags(false)...)
	flags = append(flags, readFlags(false)...)
	flags = append(flags,
		&cli.IntFlag{Name: "max-errors", Value: 100, Usage: "how many problems of the snapshot to print", Category: catValid, Action: atLeastOne("max-errors")},
		&cli.StringFlag{Name: "shard", Usage: "plan (and write) only shard `k/N` of the items, by partition-key hash, for N copies run side by side; k may be $NAME, an environment variable that holds it ($AWS_BATCH_JOB_ARRAY_INDEX/8)", Category: catWrite},
		&cli.Float64Flag{Name: "max-delete-ratio", Value: defaultMaxDeleteRatio, Usage: "apply refuses a plan that removes more than this part of the table's nodes, or deletes more than this part of the items the table holds (a truncated snapshot must not wipe a table); plan warns", Category: catWrite},
		&cli.BoolFlag{Name: "ignore-unparsable", Usage: "leave alone the items that do not read as nodes of the layout or model (another entity's, or broken ones) and go on; plan, apply and migrate refuse them otherwise. They are never changed or deleted either way", Category: catWrite},
	)
	flags = append(flags, memoryFlags()...)
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
			"rows that link it to its ancestors; prefix: its object and listing rows; adjacency: the moved\n" +
			"node's ParentId) all come out as the smallest set of item writes. Nothing is written.",
		Flags:  flags,
		Action: runPlan,
	}
}

func applyCommand() *cli.Command {
	flags := refreshFlags()
	flags = append(flags,
		&cli.BoolFlag{Name: "allow-mass-delete", Usage: "apply a plan that removes more than --max-delete-ratio of the nodes", Category: catWrite},
		shardWaitFlag(),
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
			"BatchWriteItem DeleteRequests, none sent before every put is acknowledged (a put that\n" +
			"fails stops the run with no delete sent). A second apply of the same snapshot writes nothing.\n" +
			"An item that does not read as a node of the layout or model is never changed or deleted;\n" +
			"such items stop the run (exit 2) unless --ignore-unparsable leaves them alone.\n" +
			"With --checkpoint, the plan is kept beside the checkpoint (FILE.plan.json) and a rerun\n" +
			"after a crash or Ctrl-C goes on with it where the acknowledged writes stopped, without\n" +
			"reading the table again. A plan that removes more than --max-delete-ratio of the table's\n" +
			"nodes, or deletes more than that part of its items for removed nodes, is refused (exit 2,\n" +
			"nothing written) unless --allow-mass-delete is given.",
		Flags:  flags,
		Action: runApply,
	}
}

// refreshTarget reads the flags plan, apply and migrate share: the shard,
// the Scan's and the mass-delete guard's, and gives each copy of a sharded
// run its own file names.
func refreshTarget(c *cli.Context, files ...string) (t refresh.Target, ratio float64, err error) {
	ratio = c.Float64("max-delete-ratio")
	if ratio < 0 || ratio > 1 {
		return t, ratio, usagef("--max-delete-ratio %g: give a part of the nodes between 0 and 1 (0.1 is 10%%)", ratio)
	}
	shard, err := parseShard(c)
	if err != nil {
		return t, ratio, err
	}
	t.Shard = shard
	if shard.Of > 1 {
		for _, name := range files {
			if v := c.String(name); v != "" {
				if err := c.Set(name, shard.FileName(v)); err != nil {
					return t, ratio, err
				}
			}
		}
	}
	segments := c.Int("segments")
	if segments < 1 || segments > exporter.MaxSegments {
		return t, ratio, usagef("--segments %d: give 1 to %d", segments, exporter.MaxSegments)
	}
	t.Scan = exporter.ScanOptions{Segments: segments, MaxRCU: c.Float64("max-rcu"), ConsistentRead: c.Bool("consistent-read")}
	t.IgnoreUnparsable = c.Bool("ignore-unparsable")
	return t, ratio, nil
}

// snapshotFlags checks the command line of plan and apply: the table, the
// layout and the snapshot.
func snapshotFlags(c *cli.Context, p *progress, files ...string) (t refresh.Target, in importer.InputOptions, ratio float64, err error) {
	if c.NArg() > 0 {
		return t, in, 0, noArgs(c)
	}
	switch {
	case c.String("in") == "":
		return t, in, 0, usagef("--in is required: the snapshot to refresh the table from")
	case c.String("table") == "":
		return t, in, 0, usagef("--table is required")
	}
	ls, lopts, err := newLayouts(c, false)
	if err != nil {
		return t, in, 0, err
	}
	srcOpts, err := sourceOptions(c)
	if err != nil {
		return t, in, 0, err
	}
	in = importer.InputOptions{Path: c.String("in"), Source: srcOpts, ClosureCopy: lopts.ClosureCopy, MaxProblems: c.Int("max-errors")}
	if in.OutOfCore, err = refreshOutOfCore(c, ls[0], p); err != nil {
		return t, in, 0, err
	}
	if t, ratio, err = refreshTarget(c, files...); err != nil {
		return t, in, ratio, err
	}
	t.Layout, t.Table = ls[0], c.String("table")
	return t, in, ratio, nil
}

// problemPrinter prints a snapshot's problems, up to max, and the count of
// the others.
func problemPrinter(c *cli.Context, max int) func([]*transform.RowError, int) {
	return func(problems []*transform.RowError, more int) { printProblems(c.App.ErrWriter, problems, max, more) }
}

func runPlan(c *cli.Context) error {
	prog := newProgress(c)
	t, in, ratio, err := snapshotFlags(c, prog, "out")
	if err != nil {
		return err
	}
	if t.Client, err = ddb.NewClient(c.Context, readAWSOptions(c, c.Int("segments"))); err != nil {
		return err
	}
	res, err := refresh.PlanTable(c.Context, refresh.PlanTableOptions{
		Target: t, Input: in, Out: c.String("out"), OnProblems: problemPrinter(c, c.Int("max-errors")),
	})
	prog.finish()
	if err != nil {
		return err
	}
	s := res.Summary
	if c.Bool("json") {
		b, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(c.App.Writer, "%s\n", b)
	} else {
		printPlanSummary(c.App.Writer, s, ratio)
		if p := c.String("out"); p != "" {
			fmt.Fprintf(c.App.Writer, "item-level plan written to %s\n", p)
		}
	}
	fmt.Fprintf(c.App.ErrWriter, "read table %s: %s\n", t.Table, res.Read)
	if res.OutOfCore {
		fmt.Fprintln(c.App.ErrWriter, refresh.OutOfCoreNote)
	}
	untypedHint(c.App.ErrWriter, in, s, "apply would write them as strings")
	if c.Bool("detailed-exitcode") && s.Changes() > 0 {
		return errDifferences
	}
	return nil
}

// untypedHint says, when a snapshot read from CSV without --types changes
// nodes' attributes, that CSV holds every value as text: a table loaded
// with types then differs from it in every number and boolean, and what
// apply does about it (done).
func untypedHint(w io.Writer, in importer.InputOptions, s *refresh.Summary, done string) {
	format := in.Source.Format
	if format == "" {
		format = records.FormatFromPath(in.Path)
	}
	if in.Source.Types != nil || format != records.FormatCSV || s.ByReason[refresh.ReasonChanged].Nodes == 0 {
		return
	}
	fmt.Fprintf(w, "hint: %s is CSV read without --types, so every value is a string: a number or a boolean the table holds counts as a changed attribute (here in %s), and %s. "+
		"Give --types (export writes the one that reads its CSV back to %s, which plan and apply read by themselves)\n",
		in.Path, units.Count(int64(s.ByReason[refresh.ReasonChanged].Nodes), "node"), done, records.TypesPath(in.Path))
}

// printPlanSummary prints a plan's counts as a table.
func printPlanSummary(w io.Writer, s *refresh.Summary, ratio float64) {
	where := s.Table
	if s.Shard != "" {
		where += " (shard " + s.Shard + ")"
	}
	other := ""
	if s.TableOtherItems > 0 {
		other = fmt.Sprintf(" and %s (left alone)", units.Count(int64(s.TableOtherItems), "other item"))
	}
	if s.TableUnreadable > 0 {
		other += fmt.Sprintf(" and %s that do not read as nodes (left alone)", units.Count(int64(s.TableUnreadable), "item"))
	}
	fmt.Fprintf(w, "plan for table %s, %s layout: table %s in %s%s; snapshot %s, %s\n",
		where, s.Layout, units.Count(int64(s.TableNodes), "node"), units.Count(int64(s.TableItems), "item"), other, units.Count(int64(s.SnapshotNodes), "node"), units.Count(int64(s.SnapshotItems), "item"))
	if s.TableUnreadable > 0 {
		fmt.Fprintf(w, "WARNING: %d items of the table do not read as nodes of %s; they are never changed or deleted (--ignore-unparsable): %s\n",
			s.TableUnreadable, s.Layout, strings.Join(s.UnreadableKeys, ", "))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tnodes\tputs\tdeletes\tWCU\t")
	for _, reason := range refresh.Reasons {
		n := s.ByReason[reason]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", reasonLabel(reason, s), units.Thousands(int64(n.Nodes)), units.Thousands(int64(n.Puts)), units.Thousands(int64(n.Deletes)), units.Thousands(int64(n.WCU)))
	}
	fmt.Fprintf(tw, "total\t%s\t%s\t%s\t%s\t\n", units.Thousands(int64(s.Total.Nodes)), units.Thousands(int64(s.Total.Puts)), units.Thousands(int64(s.Total.Deletes)), units.Thousands(int64(s.Total.WCU)))
	tw.Flush()
	p := pricing.Default
	fmt.Fprintf(w, "%s unchanged. Writing the plan costs %s WCU: %s on demand (%s prices of %s).\n",
		units.Count(int64(s.Unchanged), "node"), units.Thousands(int64(s.Total.WCU)), money(p.OnDemandWrites(s.Total.WCU)), p.Region, p.AsOf)
	if s.Changes() == 0 {
		fmt.Fprintln(w, "No changes: the table equals the snapshot.")
	}
	if s.DeleteRatio() > ratio {
		fmt.Fprintf(w, "WARNING: the plan %s (%.1f%%), more than --max-delete-ratio %g: apply will refuse it without --allow-mass-delete. Is the snapshot complete?\n",
			s.DeleteText(), 100*s.DeleteRatio(), ratio)
	}
}

func reasonLabel(r refresh.Reason, s *refresh.Summary) string {
	switch r {
	case refresh.ReasonNew:
		return "new nodes"
	case refresh.ReasonRemoved:
		return "removed nodes"
	case refresh.ReasonMoved:
		return "moved (" + units.Count(int64(s.MovedSubtrees), "subtree") + ")"
	case refresh.ReasonChanged:
		return "changed attributes"
	case refresh.ReasonRepair:
		return "repairs"
	}
	return string(r)
}

func runApply(c *cli.Context) error {
	started := time.Now()
	prog := newProgress(c)
	t, in, ratio, err := snapshotFlags(c, prog, "checkpoint", "dead-letter", "report")
	if err != nil {
		return err
	}
	bill, err := newTableBilling(c)
	if err != nil {
		return err
	}
	if t.Client, err = ddb.NewClient(context.WithoutCancel(c.Context), awsOptions(c)); err != nil {
		return err
	}
	opts := applyOptions(c, t, ratio, settings(c, t.Layout), started)
	opts.Input, opts.CreateTable, opts.Billing = in, c.Bool("create-table"), bill
	opts.OnProblems = problemPrinter(c, c.Int("max-errors"))
	opts.OnProgress = prog.update
	res, err := refresh.Apply(c.Context, opts)
	prog.finish()
	return applyResult(c, opts, res, err)
}

// applyOptions are the options apply and migrate share.
func applyOptions(c *cli.Context, t refresh.Target, ratio float64, settings map[string]any, started time.Time) refresh.ApplyOptions {
	return refresh.ApplyOptions{
		Target: t, Settings: settings,
		MaxDeleteRatio: ratio, AllowMassDelete: c.Bool("allow-mass-delete"), ShardWait: c.Duration("shard-wait"),
		Checkpoint: c.String("checkpoint"), Report: c.String("report"),
		WriteOptions: writeOptions(c),
		Log:          c.App.ErrWriter, Started: started,
	}
}

// appliedWCU says what the writes of an apply cost, in the plan's terms.
// The plan knows the items the table held, so its WCU is what DynamoDB
// bills: a put is charged the larger of the old and new item, a put that
// changes an index key twice on that index (the old entry is deleted), and
// a delete on every index the old item was in (DynamoDB Local's
// ConsumedCapacity agrees to the unit). The writer paces itself by the
// new items alone and counts less, so its count is not the cost: what
// DynamoDB reported is shown when it was asked for (--report), else the
// plan's figure, and the writer's only when a resumed run skipped part of
// the plan.
func appliedWCU(st ddbwrite.Stats, s *refresh.Summary, skipped int64) string {
	switch {
	case st.ConsumedWCU > 0 && int64(math.Round(st.ConsumedWCU)) != s.Total.WCU && skipped == 0:
		return fmt.Sprintf("%s WCU consumed (the plan counted %s)", units.Thousands(int64(math.Round(st.ConsumedWCU))), units.Thousands(s.Total.WCU))
	case st.ConsumedWCU > 0:
		return units.Thousands(int64(math.Round(st.ConsumedWCU))) + " WCU consumed"
	case skipped == 0:
		return units.Thousands(s.Total.WCU) + " WCU, as planned"
	}
	return fmt.Sprintf("%s WCU by the writer's count of the new items (it does not see the old index entries a put replaces; the plan counted %s for the whole of it)", units.Thousands(st.ComputedWCU), units.Thousands(s.Total.WCU))
}

// applyResult prints what an apply did: the plan, then the writes.
func applyResult(c *cli.Context, opts refresh.ApplyOptions, res *refresh.ApplyResult, err error) error {
	if res == nil {
		return err
	}
	printPlanSummary(c.App.Writer, res.Summary, opts.MaxDeleteRatio)
	run := res.Run
	if run == nil {
		return err
	}
	if errors.Is(err, ddbwrite.ErrInterrupted) {
		if opts.Checkpoint != "" {
			held := ""
			if n := run.Stats.Held; n > 0 {
				held = fmt.Sprintf(" (%d of them held for a hot key in %s.held: the run that resumes writes them first)", n, opts.Checkpoint)
			}
			fmt.Fprintf(c.App.ErrWriter, "interrupted: %d of %d operations acknowledged%s, checkpoint saved to %s (rerun the same command to go on)\n",
				run.Watermark, res.Summary.Changes(), held, opts.Checkpoint)
		} else {
			fmt.Fprintf(c.App.ErrWriter, "interrupted after %d operations (no --checkpoint: a rerun plans again and writes what is left)\n", run.Stats.Items)
		}
		return err
	}
	if err != nil {
		return err
	}
	untypedHint(c.App.ErrWriter, opts.Input, res.Summary, "apply wrote them as strings; the same apply with --types writes them back")
	stats := run.Stats
	fmt.Fprintf(c.App.Writer, "applied %d operations to %s in %s: %s, %d throttles, %d retries\n",
		stats.Items, opts.Table, res.Took.Round(time.Millisecond), appliedWCU(stats, res.Summary, run.Skipped), stats.Throttles, stats.Retries)
	if run.Skipped > 0 {
		fmt.Fprintf(c.App.Writer, "%d operations were acknowledged by an earlier run and skipped\n", run.Skipped)
	}
	if stats.Replayed > 0 {
		fmt.Fprintf(c.App.Writer, "%d operations held for a hot key by an earlier run were applied by this one (they are in the count above)\n", stats.Replayed)
	}
	return deadLetterResult(c, run)
}

// shardWaitFlag is --shard-wait: how long a copy (--shard k/N) waits for
// the other copies' puts that its deletes of moved nodes depend on.
func shardWaitFlag() cli.Flag {
	return &cli.DurationFlag{Name: "shard-wait", Value: refresh.DefaultShardWait,
		Usage: "with --shard: how long to wait, before the deletes of moved nodes, for their new items that other copies put (a prefix move changes a node's keys); after it, no such delete is sent and the run exits 3, to be rerun from its checkpoint", Category: catWrite}
}
