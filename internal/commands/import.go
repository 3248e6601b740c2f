package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/urfave/cli/v2"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/importer/importfiles"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/ddbtable"
	"github.com/treeport/treeport/internal/pricing"
	"github.com/treeport/treeport/internal/s3io"
	"github.com/treeport/treeport/internal/statefile"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

func importCommand() *cli.Command {
	flags := append(inputFlags(), layoutFlags(true)...)
	flags = append(flags, validationFlags()...)
	flags = append(flags,
		&cli.StringFlag{Name: "table", Usage: "load into this DynamoDB `TABLE`; with --out, the table that create-table.json and import-table.json name (default treeport-LAYOUT)", Category: catWrite},
		&cli.BoolFlag{Name: "create-table", Usage: "create the table and its indexes for the layout (on-demand unless --wcu/--rcu)", Category: catWrite},
		&cli.StringFlag{Name: "out", Usage: "write DynamoDB import files (gzip DynamoDB JSON, manifest, CreateTable and ImportTable JSON) to `DIR` or to s3://BUCKET/PREFIX instead of a table", Category: catWrite},
		&cli.StringFlag{Name: "import-table", Usage: "with --out s3://BUCKET/PREFIX: start DynamoDB's import from S3 into the new table `T` (the layout's keys and indexes) and follow it to the end; it spends no write capacity", Category: catWrite},
		&cli.StringFlag{Name: "bulk-put", Usage: "with --out s3://BUCKET/PREFIX: start DynamoDB's bulk put (StartBulkPutItems) from the files into the existing table `T` (the layout's keys and indexes), capped at --max-wcu (at least 1024), and follow it to the end; a rerun follows the same bulk put", Category: catWrite},
		&cli.BoolFlag{Name: "dry-run", Usage: "validate and print what the load would write and cost; write nothing", Category: catWrite},
		&cli.BoolFlag{Name: "json", Usage: "with --dry-run, print the plan as JSON", Category: catWrite},
		&cli.IntFlag{Name: "items-per-file", Value: 1_000_000, Usage: "with --out, items per data file", Category: catWrite},
		&cli.StringFlag{Name: "shard", Usage: shardUsage, Category: catWrite},
		&cli.StringFlag{Name: "report", Usage: "write a JSON summary of the run to `FILE`", Category: catWrite},
		&cli.Int64Flag{Name: "max-items", Usage: fmt.Sprintf("refuse to start a load that would write more than `N` items (default: %d items a node of the input; the closure layout writes depth + 1 a node)", importer.MaxItemsPerNode), Category: catWrite},
		&cli.BoolFlag{Name: "yes", Usage: "start a load whatever its size (see --max-items)", Category: catWrite},
	)
	flags = append(flags, memoryFlags()...)
	flags = append(flags, writerFlags()...)
	flags = append(flags, awsFlags()...)
	flags = append(flags, s3EndpointFlag())
	return &cli.Command{
		Name:      "import",
		Usage:     "load an adjacency list into a DynamoDB table, or into DynamoDB import files",
		UsageText: "treeport import --in PATH --layout L (--table T [--create-table] | --out DIR) [--dry-run]",
		Flags:     flags,
		Action:    runImport,
	}
}

func runImport(c *cli.Context) error {
	if c.NArg() > 0 {
		return noArgs(c)
	}
	inPath := c.String("in")
	if inPath == "" {
		return usagef("--in is required")
	}
	dryRun := c.Bool("dry-run")
	table, out := c.String("table"), c.String("out")
	if err := checkImportFlags(c, dryRun, table, out); err != nil {
		return err
	}
	bulkWCU, err := bulkPutWCU(c)
	if err != nil {
		return err
	}
	ls, lopts, err := newLayouts(c, dryRun)
	if err != nil {
		return err
	}
	srcOpts, err := sourceOptions(c)
	if err != nil {
		return err
	}
	onInvalid, err := importOnInvalid(c, dryRun)
	if err != nil {
		return err
	}
	shard, err := parseShard(c)
	if err != nil {
		return err
	}
	if err := shardFileNames(c, shard); err != nil {
		return err
	}
	s3out, done, err := checkOutput(c, out, dryRun, ls, shard, bulkWCU)
	if done || err != nil {
		return err
	}

	// The skeleton is large and lives for the whole run: collecting at 50%
	// growth instead of 100% keeps the peak near 1.3 GB for ten million
	// nodes instead of 1.7 GB, at no visible cost in CPU.
	debug.SetGCPercent(50)
	started := time.Now()
	// Problems past the ones printed are only counted: the rejects file
	// takes its reasons from a second read, not from them.
	reading := newProgress(c)
	ooc, err := outOfCoreOptions(c, ls, dryRun, reading)
	if err != nil {
		return err
	}
	var client *dynamodb.Client
	if table != "" && out == "" && !dryRun {
		// The AWS setup and the table are checked before the input is
		// read: a pass over a large input must not end in "no region".
		// The flags come first: a usage error is told as one.
		if c.Bool("create-table") {
			if _, err := billing(c); err != nil {
				return err
			}
		}
		if client, err = ddb.NewClient(context.WithoutCancel(c.Context), awsOptions(c)); err != nil {
			return err
		}
		if err := importer.CheckTableFirst(c.Context, client, table, ls[0], c.Bool("create-table")); err != nil {
			return err
		}
	}
	inOpts := importer.InputOptions{
		Path: inPath, Source: srcOpts, ClosureCopy: lopts.ClosureCopy, MaxProblems: c.Int("max-errors"),
		OnProgress: func(records int) { reading.step("reading "+inPath+" (records)", int64(records), -1) },
		OutOfCore:  ooc,
	}
	in, err := importer.ReadInput(c.Context, inOpts)
	reading.finish()
	if err != nil {
		return err
	}
	defer in.Close()
	stderr := c.App.ErrWriter
	if stderr == nil {
		stderr = os.Stderr
	}
	warnClosureCopy(stderr, in, ls, lopts.ClosureCopy, inPath)
	maxErrors := c.Int("max-errors")

	if dryRun {
		// Out of core, the plan's own passes tell reading how far they are.
		defer reading.finish()
		return dryRunPlans(c, in, inOpts, ls, onInvalid, maxErrors, stderr)
	}

	l := ls[0]
	if err := checkImportInput(c, in, l, inPath, onInvalid, maxErrors, stderr); err != nil {
		return err
	}
	var rejects io.Writer
	if path := c.String("rejects"); path != "" {
		f, err := statefile.CreateOutput(path)
		if err != nil {
			return err
		}
		defer f.Close()
		rejects = f
	}
	emitOpts := importer.EmitOptions{Layout: l, Shard: shard, Rejects: rejects}
	if out != "" {
		return importToFiles(c, in, emitOpts, started, s3out)
	}
	return importToTable(c, client, in, emitOpts, started)
}

// importOnInvalid reads --on-invalid; skip needs --rejects, so that
// nothing is left out without a trace.
func importOnInvalid(c *cli.Context, dryRun bool) (string, error) {
	onInvalid := c.String("on-invalid")
	switch onInvalid {
	case "fail":
	case "skip":
		if c.String("rejects") == "" && !dryRun {
			return "", usagef("--on-invalid=skip needs --rejects FILE, so that nothing is left out without a trace")
		}
	default:
		return "", usagef("--on-invalid %q: want fail or skip", onInvalid)
	}
	return onInvalid, nil
}

// warnClosureCopy warns of a --closure-copy attribute that no record has.
func warnClosureCopy(stderr io.Writer, in *importer.Input, ls []layouts.Layout, names []string, inPath string) {
	for _, name := range names {
		if !in.HasAttr(name) && slices.ContainsFunc(ls, func(l layouts.Layout) bool { return layouts.ClosureCopy(l) != nil }) {
			fmt.Fprintf(stderr, "treeport: warning: --closure-copy names %q, which no record of %s has (a typo?)\n", name, inPath)
		}
	}
}

// checkImportFlags refuses the flags that do not go together, before
// anything is read.
func checkImportFlags(c *cli.Context, dryRun bool, table, out string) error {
	switch {
	case dryRun:
	case table == "" && out == "":
		return usagef("give --table T to load a table, --out DIR to write import files, or --dry-run")
	case out != "" && c.Bool("create-table"):
		return usagef("--create-table goes with --table alone: with --out, nothing is loaded, and --table only names the table in create-table.json and import-table.json")
	case c.String("import-table") != "" && !s3io.IsURL(out):
		return usagef("--import-table starts DynamoDB's import from S3: give --out s3://BUCKET/PREFIX too")
	case c.String("bulk-put") != "" && !s3io.IsURL(out):
		return usagef("--bulk-put starts DynamoDB's bulk put from S3: give --out s3://BUCKET/PREFIX too")
	case c.String("bulk-put") != "" && c.String("import-table") != "":
		return usagef("--bulk-put loads an existing table, --import-table creates a new one: give one of them")
	}
	if set := capacitySet(c); len(set) > 0 && !dryRun {
		switch {
		case c.String("bulk-put") != "":
			return usagef("%s shape a new table; --bulk-put loads an existing one (change its capacity with UpdateTable)", strings.Join(set, ", "))
		case c.String("import-table") != "" && (c.IsSet("warm-wcu") || c.IsSet("warm-rcu")):
			return usagef("ImportTable creates its table without a warm throughput (its TableCreationParameters have none): leave out --warm-wcu/--warm-rcu, and warm the table after the import with UpdateTable")
		case out == "" && !c.Bool("create-table"):
			return usagef("%s shape a new table: give --create-table too (or --out, for create-table.json)", strings.Join(set, ", "))
		}
	}
	return nil
}

// shardFileNames gives each of N copies given the same command line its
// own files.
func shardFileNames(c *cli.Context, shard ddbwrite.Shard) error {
	if shard.Of > 1 {
		for _, name := range []string{"checkpoint", "dead-letter", "rejects", "report"} {
			if v := c.String(name); v != "" {
				if err := c.Set(name, shard.FileName(v)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkOutput fails a bad --out now, before a large input is read, and
// opens an S3 one; done when a rerun of a bulk put has followed the first
// run's, and there is nothing left to do.
func checkOutput(c *cli.Context, out string, dryRun bool, ls []layouts.Layout, shard ddbwrite.Shard, bulkWCU int64) (s3out *importer.S3Output, done bool, err error) {
	if out != "" && !dryRun {
		// A bad --out fails now, before a large input is read.
		if s3io.IsURL(out) {
			if c.String("bulk-put") != "" {
				// So does a table bulk put cannot load; and a rerun finds
				// the files of the first run and follows its bulk put.
				if done, err := checkBulkPut(c, ls[0], shard, bulkWCU); done || err != nil {
					return nil, done, err
				}
			}
			if s3out, err = openS3Output(c, out, shard); err != nil {
				return nil, false, err
			}
		} else if err := importfiles.CheckOutputDir(out); err != nil {
			return nil, false, err
		}
	}
	return s3out, false, nil
}

// checkImportInput prints the input's problems with the layout, and the
// size of a load much larger than the input.
func checkImportInput(c *cli.Context, in *importer.Input, l layouts.Layout, inPath, onInvalid string, maxErrors int, stderr io.Writer) error {
	problems := in.CheckLayout(l)
	if len(problems) > 0 {
		printProblems(stderr, problems, maxErrors, in.MoreProblems())
		if onInvalid == "fail" {
			return fmt.Errorf("%w: %s in %s; nothing was written (fix them, or use --on-invalid=skip --rejects FILE to load the valid trees)",
				importer.ErrInvalid, countProblems(len(problems)+in.MoreProblems()), inPath)
		}
		fmt.Fprintf(stderr, "treeport: %s rejected (their subtrees with them); see %s\n", countOf(in.RejectedCount(), "node"), c.String("rejects"))
	}
	// A load of many more items than the input has nodes (closure on a
	// deep input) says its size first, and past the limit waits for
	// --max-items or --yes.
	size, err := importer.CheckSize(c.Context, in, l, importer.SizeLimit{MaxItems: c.Int64("max-items"), Yes: c.Bool("yes")})
	if size != nil {
		fmt.Fprintf(stderr, "treeport: plan: %s\n", size)
	}
	return err
}

// dryRunPlans prints what a load would do for each layout. An input read
// out of core was checked against the first layout alone (its passes
// check one layout as they place the nodes): each other layout reads it
// again, out of core, in passes of its own, one layout at a time, so that
// the peak stays under --memory whatever the number of layouts.
func dryRunPlans(c *cli.Context, in *importer.Input, inOpts importer.InputOptions, ls []layouts.Layout, onInvalid string, maxErrors int, stderr io.Writer) error {
	var plans []*importer.Plan
	invalid := 0
	prog := newProgress(c)
	defer prog.finish()
	for k, l := range ls {
		stage := func(what string, done, total int64) {
			prog.step(fmt.Sprintf("dry run: %s (%d/%d): %s", l.Name(), k+1, len(ls), what), done, total)
		}
		plan, problems, more, err := planLayout(c, in, inOpts, k > 0, l, stage)
		if err != nil {
			return err
		}
		if k == 0 && in.OutOfCore() && len(ls) > 1 {
			// Its sorts' buffers are the first layout's: the next
			// layout's passes take the whole budget.
			in.Close()
		}
		plan.Project(l, c.Float64("max-wcu"))
		if len(problems) > 0 {
			if len(ls) > 1 {
				fmt.Fprintf(stderr, "%s:\n", l.Name())
			}
			printProblems(stderr, problems, maxErrors, more)
			invalid++
		}
		plans = append(plans, plan)
	}
	w := c.App.Writer
	if c.Bool("json") {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"input": in.Opts.Path, "records": in.Records, "plans": plans}); err != nil {
			return err
		}
	} else {
		printPlans(w, in, plans)
	}
	if invalid > 0 && onInvalid == "fail" {
		return fmt.Errorf("%w: the input has problems (above); a load with --on-invalid=fail would write nothing", importer.ErrInvalid)
	}
	return nil
}

// planLayout is one layout's plan of dryRunPlans, with its problems and
// the count of those not kept. When again is set and in was read out of
// core, the input is read again, out of core, checked against l, and its
// temporary files are removed once l is planned.
func planLayout(c *cli.Context, in *importer.Input, inOpts importer.InputOptions, again bool, l layouts.Layout, stage importer.PlanProgress) (*importer.Plan, []*transform.RowError, int, error) {
	if again && in.OutOfCore() {
		o := *inOpts.OutOfCore
		// The first read chose the passes: every layout is planned the
		// same way, whatever the input's size.
		o.Layout, o.Force = l, true
		o.OnPhase = func(phase string, done, total int64) { stage("out of core: "+phase, done, total) }
		inOpts.OutOfCore, inOpts.OnProgress = &o, func(records int) { stage("reading "+inOpts.Path+" (records)", int64(records), -1) }
		lin, err := importer.ReadInput(c.Context, inOpts)
		if err != nil {
			return nil, nil, 0, err
		}
		defer lin.Close()
		in = lin
	}
	plan, problems, err := importer.PlanLayout(c.Context, in, l, pricing.Default, stage)
	return plan, problems, in.MoreProblems(), err
}

func printPlans(w io.Writer, in *importer.Input, plans []*importer.Plan) {
	fmt.Fprintf(w, "dry run: %s, %s, %s; nothing was written\n\n", in.Opts.Path, countOf(in.Records, "record"), countOf(in.Roots(), "tree"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "layout\tnodes\titems\tbytes\tlargest item\tWCU to load\ton-demand $\tImportTable $\tstorage $/month\trejected\t")
	for _, p := range plans {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", p.Layout, units.Thousands(p.Nodes), units.Thousands(p.Items),
			units.SizeText(p.Bytes), units.SizeText(int64(p.MaxItemBytes)), units.Thousands(p.WCU), money(p.Cost.OnDemandWrites), money(p.Cost.ImportTable), money(p.Cost.StorageMonth), units.Thousands(int64(p.Rejected)))
	}
	tw.Flush()
	for _, p := range plans {
		fmt.Fprintf(w, "\n%s: longest keys (limit: partition %d, sort %d bytes)\n", p.Layout, transform.MaxPartitionKeyBytes, transform.MaxSortKeyBytes)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, k := range p.Keys {
			where := "table"
			if k.Index != "" {
				where = "index " + k.Index
			}
			flag := ""
			if k.Longest > k.Limit {
				flag = "  OVER THE LIMIT"
			}
			fmt.Fprintf(tw, "  %s\t%s key %s\t%d / %d bytes%s\n", where, k.Role, k.Attr, k.Longest, k.Limit, flag)
		}
		for _, col := range p.Collections {
			where := "table"
			if col.Index != "" {
				where = "index " + col.Index
			}
			fmt.Fprintf(tw, "  %s\tlargest item collection (%s)\t%s\n", where, col.Attr, units.Count(col.Items, "item"))
		}
		tw.Flush()
	}
	printLoadTimes(w, plans)
	if len(plans) > 0 {
		c := plans[0].Cost
		fmt.Fprintf(w, "\nprices: %s list prices as of %s: on-demand writes $%.3f per million WRU, ImportTable $%.2f per GB of uncompressed source\n",
			c.Region, c.PricesAsOf, c.WritePerMillion, c.ImportPerGB)
	}
}

// printLoadTimes is the dry run's projection of each layout's load time on
// DynamoDB, from its hottest partition key values.
func printLoadTimes(w io.Writer, plans []*importer.Plan) {
	if len(plans) == 0 {
		return
	}
	capped := ""
	if m := plans[0].LoadTime.MaxWCU; m > 0 {
		capped = fmt.Sprintf(", --max-wcu %g", m)
	}
	fmt.Fprintf(w, "\nprojected load time through BatchWriteItem (DynamoDB writes at most %s WCU/s to one partition key value%s):\n", units.Thousands(layouts.PartitionWCU), capped)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  layout\thottest partition key\titems\tit alone takes\tat least\tnew table at "+units.Thousands(ddbtable.DefaultWarmWCU)+" WCU/s\tbound by")
	bound := map[string]string{"partition": "hot key", "max_wcu": "--max-wcu", "warm_throughput": "warm throughput"}
	for _, p := range plans {
		t := p.LoadTime
		var hot importer.HotKey
		for _, h := range t.HotKeys {
			if h.Seconds >= hot.Seconds {
				hot = h
			}
		}
		fmt.Fprintf(tw, "  %s\t%s %s %s\t%s\t%s\t%s\t%s\t%s\n", p.Layout, hot.Where(), hot.Attr, hot.Value, units.Thousands(hot.Items),
			units.DurationText(hot.Seconds), units.DurationText(t.MinSeconds), units.DurationText(t.WarmSeconds), bound[t.BoundBy])
	}
	tw.Flush()
	for _, p := range plans {
		t := p.LoadTime
		if t.Advice != "" {
			fmt.Fprintf(w, "  %s: %s\n", p.Layout, t.Advice)
		}
		if t.SuggestedWarmWCU > 0 {
			fmt.Fprintf(w, "  %s: a new on-demand table writes %s WCU/s at once and scales from there; create it with --create-table --warm-wcu %d to start at the %s WCU/s this load plans for\n",
				p.Layout, units.Thousands(ddbtable.DefaultWarmWCU), t.SuggestedWarmWCU, units.Thousands(t.SuggestedWarmWCU))
		}
	}
}

// money prints dollars with two decimals, or six significant places below a
// cent, so that small fixtures do not all print as 0.00.
func money(usd float64) string {
	if usd < 0.01 && usd > 0 {
		return fmt.Sprintf("%.6f", usd)
	}
	return fmt.Sprintf("%.2f", usd)
}
