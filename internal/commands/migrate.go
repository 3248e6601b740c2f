package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/statefile"
	"github.com/treeport/treeport/internal/streams"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/models"
	"github.com/treeport/treeport/refresh"
)

func sideLayoutFlags(side, what string) []cli.Flag {
	cat := catLayout
	return []cli.Flag{
		&cli.StringFlag{Name: side + "-layout", Usage: "layout of the " + what + " table: path, sharded-path, closure, prefix or adjacency", Category: cat},
		&cli.StringFlag{Name: side + "-model", Usage: "a table model `FILE` describing the " + what + " table (docs/MODELS.md); instead of --" + side + "-layout", Category: cat},
		&cli.StringSliceFlag{Name: side + "-attr", Usage: "a layout attribute, key or index renamed in the " + what + " table: OLD=NEW (repeatable)", Category: cat},
		&cli.StringFlag{Name: side + "-delimiter", Usage: "path delimiter of the " + what + " table (default | for path layouts, ¦ for prefix)", Category: cat},
		&cli.IntFlag{Name: side + "-shards", Value: 4, Usage: "sharded-path: GraphId shards per tree in the " + what + " table", Category: cat},
		&cli.StringFlag{Name: side + "-closure-copy", Value: "all", Usage: "closure (or a closure model): what the ancestor rows of the " + what + " table copy: all, none or a,b,c", Category: cat},
		&cli.BoolFlag{Name: side + "-path-ids", Usage: "the ids of the " + what + " table are path ids (see --path-ids of import); --path-ids sets both sides", Category: cat},
		&cli.BoolFlag{Name: side + "-implicit-inner", Usage: "the " + what + " table gives an inner node without attributes no item (see --implicit-inner of import); --implicit-inner sets both sides", Category: cat},
	}
}

func migrateCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "from-table", Usage: "the source `TABLE`; it is only read", Category: catRead},
		&cli.StringFlag{Name: "to-table", Usage: "the destination `TABLE`", Category: catWrite},
		&cli.BoolFlag{Name: "create-table", Usage: "create the destination table for its layout (on-demand) when it does not exist", Category: catWrite},
		&cli.StringFlag{Name: "snapshot", Usage: "keep the snapshot of the source table (DynamoDB JSON, in the rebuilt trees' order) in `FILE` (default: a temporary file, removed at the end)", Category: catWrite},
		&cli.IntFlag{Name: "segments", Value: exporter.DefaultSegments, Usage: "parallel Scan segments for reading the tables", Category: catRead},
		&cli.Float64Flag{Name: "max-rcu", Usage: "cap the read rate at this many RCU per second (default: no cap)", Category: catRead},
		&cli.BoolFlag{Name: "consistent-read", Usage: "strongly consistent reads of the source table", Category: catRead},
		&cli.StringFlag{Name: "shard", Usage: "write only shard `k/N` of the destination's items (0 <= k < N), for N copies run side by side; the shard goes into the names of --checkpoint, --dead-letter and --report; k may be $NAME, an environment variable that holds it ($AWS_BATCH_JOB_ARRAY_INDEX/8)", Category: catWrite},
		&cli.Float64Flag{Name: "max-delete-ratio", Value: defaultMaxDeleteRatio, Usage: "refuse to delete more than this part of the destination's nodes, or of the items it holds (nodes it holds that the source does not)", Category: catWrite},
		&cli.BoolFlag{Name: "allow-mass-delete", Usage: "delete whatever the destination holds beyond the source, however much", Category: catWrite},
		shardWaitFlag(),
		&cli.BoolFlag{Name: "ignore-unparsable", Usage: "leave alone the destination's items that do not read as nodes of its layout or model and go on (migrate refuses them otherwise); they are never changed or deleted either way", Category: catWrite},
		&cli.StringFlag{Name: "report", Usage: "write a JSON summary of the run to `FILE`", Category: catWrite},
		&cli.BoolFlag{Name: "follow", Usage: "after the copy, apply the source's DynamoDB Stream to the destination until Ctrl-C (the stream position is saved in --checkpoint) or until --follow-idle", Category: catFollow},
		&cli.DurationFlag{Name: "follow-idle", Usage: "with --follow: stop once no stream record arrived for `D` (e.g. 30s), then verify the destination (default: follow until Ctrl-C/SIGTERM)", Category: catFollow},
		&cli.BoolFlag{Name: "enable-stream", Usage: "with --follow: enable a NEW_AND_OLD_IMAGES stream on the source when it has none", Category: catFollow},
	}
	flags = append(flags, sideLayoutFlags("from", "source")...)
	flags = append(flags, sideLayoutFlags("to", "destination")...)
	flags = append(flags,
		&cli.BoolFlag{Name: "path-ids", Usage: "both tables' ids are path ids: --from-path-ids and --to-path-ids", Category: catLayout},
		&cli.BoolFlag{Name: "implicit-inner", Usage: "both tables give an inner node without attributes no item: --from-implicit-inner and --to-implicit-inner", Category: catLayout})
	flags = append(flags, modelParamFlag())
	for _, f := range writerFlags() {
		if n := f.Names()[0]; n != "wcu" && n != "rcu" {
			flags = append(flags, f)
		}
	}
	flags = append(flags, memoryFlags()...)
	flags = append(flags, awsFlags()...)
	return &cli.Command{
		Name:  "migrate",
		Usage: "copy a table into another layout, resumable, and verify the copy item by item",
		UsageText: "treeport migrate --from-table A --from-layout L1 --to-table B --to-layout L2 [--create-table] [--checkpoint FILE]\n" +
			"   treeport migrate ... --follow [--follow-idle D] [--enable-stream] --checkpoint FILE",
		Description: "Reads A with a parallel Scan and rebuilds its trees (never writing to A), takes them as a\n" +
			"snapshot, plans the items of B's layout against what B holds (nothing, for a new table), and\n" +
			"writes them with treeport's writer. With --checkpoint a rerun after a crash or Ctrl-C goes on\n" +
			"where the acknowledged writes stopped (A is read again; if it changed, the checkpoint is\n" +
			"refused). At the end B is read again (consistent reads) and compared with what A's trees\n" +
			"want, item by item: exit 0 when B is exact, 1 when it is not.\n\n" +
			"With --follow, A stays live: the position of A's stream is taken before the copy, and after it\n" +
			"every change made to A is applied to B (a move in A rewrites the items of B's layout that the\n" +
			"move changes). Ctrl-C finishes the records in hand, saves the stream position in --checkpoint and\n" +
			"exits 130; a rerun goes on from it. With --follow-idle D the run ends once A was quiet for D and\n" +
			"verifies B against A (exit 0 when exact, 1 otherwise). See docs/LIVE_MIGRATION.md.",
		Flags:  flags,
		Action: runMigrate,
	}
}

// sideLayout makes the layout of one side of a migration.
func sideLayout(c *cli.Context, side string) (layouts.Layout, layouts.Options, error) {
	name := c.String(side + "-layout")
	if file := c.String(side + "-model"); file != "" {
		l, err := loadModel(c, file, side+"-", name)
		if err != nil {
			return nil, layouts.Options{}, err
		}
		return l, layouts.Options{ClosureCopy: layouts.ClosureCopy(l)}, nil
	}
	if name == "" {
		return nil, layouts.Options{}, usagef("--%s-layout is required: one of %s", side, strings.Join(layouts.Names(), ", "))
	}
	renames, err := layouts.ParseAttrRenames(c.StringSlice(side + "-attr"))
	if err != nil {
		return nil, layouts.Options{}, usagef("--%s-attr: %v", side, err)
	}
	o := layouts.Options{Attr: renames, Delimiter: c.String(side + "-delimiter"), Shards: c.Int(side + "-shards"),
		ClosureCopy:   closureCopy(c.String(side + "-closure-copy")),
		PathIDs:       c.Bool(side+"-path-ids") || c.Bool("path-ids"),
		ImplicitInner: c.Bool(side+"-implicit-inner") || c.Bool("implicit-inner")}
	l, err := layouts.New(name, o)
	if err != nil {
		return nil, o, usagef("--%s-layout: %v", side, err)
	}
	return l, o, nil
}

func runMigrate(c *cli.Context) error {
	started := time.Now()
	if c.NArg() > 0 {
		return noArgs(c)
	}
	from, to := c.String("from-table"), c.String("to-table")
	switch {
	case from == "" || to == "":
		return usagef("--from-table and --to-table are required")
	case from == to:
		return usagef("--from-table and --to-table are both %q: migrate never writes to its source; copy into a new table", from)
	}
	l1, o1, err := sideLayout(c, "from")
	if err != nil {
		return err
	}
	l2, o2, err := sideLayout(c, "to")
	if err != nil {
		return err
	}
	if err := checkModelParams(c, l1, l2); err != nil {
		return err
	}
	if d1, d2 := l1.Delimiter(), l2.Delimiter(); layouts.PathIDs(l1) && layouts.PathIDs(l2) && d1 != d2 {
		return usagef("both tables have path ids, but the source joins names with %q and the destination with %q: migrate copies ids as they are, so give the destination the same delimiter (--to-delimiter %s)", d1, d2, d1)
	}
	settings := map[string]any{
		"command": "migrate", "from-table": from, "from-layout": l1.Name(), "from-options": o1,
		"to-table": to, "to-layout": l2.Name(), "to-options": o2, "shard": c.String("shard"),
	}
	if p := c.StringSlice("model-param"); len(p) > 0 {
		settings["model-param"] = slices.Sorted(slices.Values(p))
	}
	for side, l := range map[string]layouts.Layout{"from-model": l1, "to-model": l2} {
		if d := models.Digest(l); d != "" {
			settings[side] = d // the model file, changed under the same name
		}
	}
	t, ratio, err := refreshTarget(c, "checkpoint", "dead-letter", "report")
	if err != nil {
		return err
	}
	t.Table, t.Layout = to, l2
	bill, err := newTableBilling(c)
	if err != nil {
		return err
	}
	if t.Client, err = ddb.NewClient(context.WithoutCancel(c.Context), awsOptions(c)); err != nil {
		return err
	}
	opts := refresh.MigrateOptions{
		ApplyOptions: applyOptions(c, t, ratio, settings, started),
		From:         from, FromLayout: l1, Snapshot: c.String("snapshot"),
	}
	opts.Input.ClosureCopy = o2.ClosureCopy
	opts.Input.MaxProblems = 100 // as many as are printed
	opts.CreateTable, opts.Billing = c.Bool("create-table"), bill
	opts.OnProblems = problemPrinter(c, 100)
	if c.Bool("follow") {
		// A source whose forest does not fit --memory is copied out of
		// core, and the follower's state spills to --tmp-dir.
		prog := newProgress(c)
		defer prog.finish()
		if opts.Input.OutOfCore, err = outOfCoreOptions(c, []layouts.Layout{l2}, false, prog); err != nil {
			return err
		}
		return runMigrateFollow(c, opts, started)
	}
	if c.IsSet("follow-idle") || c.Bool("enable-stream") {
		return usagef("--follow-idle and --enable-stream go with --follow")
	}
	prog := newProgress(c)
	// A source whose forest does not fit --memory is spilled and copied
	// out of core (refresh.Migrate).
	if opts.Input.OutOfCore, err = outOfCoreOptions(c, []layouts.Layout{l2}, false, prog); err != nil {
		return err
	}
	opts.OnProgress = prog.update
	res, err := refresh.Migrate(c.Context, opts)
	prog.finish()
	if res == nil {
		return err
	}
	if err := applyResult(c, opts.ApplyOptions, res.Apply, err); err != nil || res.Verify == nil {
		return err
	}
	s := res.Verify
	where := to
	if t.Shard.Of > 1 {
		where += " (shard " + t.Shard.String() + ")"
	}
	if !res.Exact() {
		printPlanSummary(c.App.ErrWriter, s, ratio)
		return fmt.Errorf("%w: %s does not match %s: %d items missing or different and %d extra (run the same migrate again to write them)",
			errDifferences, where, from, s.Total.Puts, s.Total.Deletes)
	}
	fmt.Fprintf(c.App.Writer, "verified: %s holds exactly the %s of the %s layout for the %s of %s (%s layout), in %s\n",
		where, units.Count(int64(s.SnapshotItems), "item"), l2.Name(), units.Count(int64(s.SnapshotNodes), "node"), from, l1.Name(), time.Since(started).Round(time.Millisecond))
	return nil
}

// runMigrateFollow is migrate --follow: the copy, then the stream, then
// the figures a team needs to switch reads to B.
func runMigrateFollow(c *cli.Context, opts refresh.MigrateOptions, started time.Time) error {
	idle := c.Duration("follow-idle")
	if idle < 0 {
		return usagef("--follow-idle %s: give a duration above 0 (e.g. 30s)", idle)
	}
	if opts.Checkpoint == "" && idle == 0 {
		return usagef("--follow without --follow-idle runs until Ctrl-C and saves the stream position on the way out: give --checkpoint FILE")
	}
	sc, err := streams.NewClient(context.WithoutCancel(c.Context), awsOptions(c))
	if err != nil {
		return err
	}
	opts.Follow = &refresh.FollowOptions{Streams: sc, EnableStream: c.Bool("enable-stream"), Idle: idle}
	res, err := refresh.Migrate(c.Context, opts)
	if res == nil || res.Follow == nil {
		return err
	}
	fr := res.Follow
	verdict := "not verified (interrupted)"
	switch {
	case res.Verify != nil && res.Exact():
		verdict = "exact"
	case fr.SourceInvalid:
		verdict = "not exact (" + opts.From + " is not a valid tree)"
	case res.Verify != nil:
		verdict = fmt.Sprintf("%d items missing or different and %d extra", res.Verify.Total.Puts, res.Verify.Total.Deletes)
	case err != nil && !errors.Is(err, errInterrupted):
		verdict = "not verified (" + userMessage(err) + ")"
	}
	line := fmt.Sprintf("cutover-check: %s applied (%.1f/s over %s; %s, %s in %s), lag at end %s, %s held, verify: %s",
		units.Count(fr.Records, "stream record"), fr.RecordsPerSecond, fr.Following.Round(time.Second), units.Count(fr.Puts, "put"), units.Count(fr.Deletes, "delete"),
		opts.Table, fr.Lag.Round(time.Millisecond), units.Count(int64(fr.Held), "node"), verdict)
	if fr.DeadLettered > 0 {
		line += fmt.Sprintf(", %s refused by DynamoDB (dead letters in %s)", units.Count(fr.DeadLettered, "item"), opts.DeadLetter)
	}
	if err := writeFollowReport(opts.Report, res); err != nil {
		return err
	}
	if errors.Is(err, errInterrupted) || errors.Is(err, context.Canceled) {
		fmt.Fprintln(c.App.ErrWriter, line)
		where := "no --checkpoint: a rerun copies again"
		switch {
		case opts.Checkpoint != "" && !fr.Saved:
			where = "stopped during the copy, before following: a rerun copies again (writing only what " + opts.Table + " lacks)"
		case opts.Checkpoint != "":
			where = "stream position saved to " + opts.Checkpoint + " (rerun the same command to go on)"
		}
		fmt.Fprintf(c.App.ErrWriter, "interrupted: %s\n", where)
		return err
	}
	if err != nil {
		fmt.Fprintln(c.App.ErrWriter, line)
		return err
	}
	fmt.Fprintln(c.App.Writer, line)
	if fr.DeadLettered > 0 {
		return fmt.Errorf("%w: %d items were refused by DynamoDB and written to %s", errDifferences, fr.DeadLettered, opts.DeadLetter)
	}
	if fr.SourceInvalid {
		fmt.Fprintf(c.App.ErrWriter, "%s does not match %s: %s is not a valid tree now (the problems above), and %s keeps its last valid state (%s held); once %s is a valid tree again, run the same command again to follow and verify\n",
			opts.Table, opts.From, opts.From, opts.Table, countOf(fr.Held, "node"), opts.From)
		return fmt.Errorf("%w: %s is not a valid tree", errDifferences, opts.From)
	}
	if !res.Exact() {
		printPlanSummary(c.App.ErrWriter, res.Verify, opts.MaxDeleteRatio)
		return fmt.Errorf("%w: %s does not match %s after the follow", errDifferences, opts.Table, opts.From)
	}
	fmt.Fprintf(c.App.Writer, "verified: %s holds exactly the %s of the %s layout for the %s of %s, in %s\n",
		opts.Table, units.Count(int64(res.Verify.SnapshotItems), "item"), opts.Layout.Name(), units.Count(int64(res.Verify.SnapshotNodes), "node"), opts.From, time.Since(started).Round(time.Millisecond))
	return nil
}

// writeFollowReport writes --report for migrate --follow.
func writeFollowReport(path string, res *refresh.MigrateResult) error {
	if path == "" {
		return nil
	}
	rep := struct {
		Follow   *refresh.FollowResult `json:"follow"`
		Verify   *refresh.Summary      `json:"verify,omitempty"`
		Exact    bool                  `json:"exact"`
		Duration float64               `json:"duration_seconds"`
	}{res.Follow, res.Verify, res.Exact(), res.Took.Seconds()}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return statefile.WriteOutput(path, append(b, '\n')) // an output: the umask says who reads it
}

// catFollow is the help category of migrate's --follow flags.
const catFollow = "Following a live source"
