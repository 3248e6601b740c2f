package commands

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/pricing"
	"github.com/treeport/treeport/internal/statefile"
	"github.com/treeport/treeport/layoutbench"
	"github.com/treeport/treeport/layouts"
)

func benchCommand() *cli.Command {
	flags := inputFlags()
	flags = append(flags,
		&cli.StringFlag{Name: "layouts", Value: strings.Join(layouts.Names(), ","), Usage: "the layouts to compare, comma separated (or all)", Category: catLayout},
	)
	for _, f := range layoutFlags(false) {
		switch f.Names()[0] {
		case "layout":
		case "model":
			flags = append(flags, &cli.StringFlag{Name: "model", Usage: "a table model `FILE` (docs/MODELS.md) to bench instead of --layouts: a table treeport did not design", Category: catLayout})
		default:
			flags = append(flags, f)
		}
	}
	flags = append(flags, validationFlags()...)
	flags = append(flags,
		&cli.IntFlag{Name: "sample", Value: layoutbench.DefaultSample, Usage: "how many nodes to query, move and delete (stratified by depth)", Category: catBench},
		&cli.Int64Flag{Name: "seed", Value: 1, Usage: "seed of the sample", Category: catBench},
		&cli.StringFlag{Name: "read-mix", Value: layoutbench.DefaultMix, Usage: "the reads to weigh, kind=weight: get, children, descendants, descendants_depth2, ancestors", Category: catBench},
		&cli.Float64Flag{Name: "reads-per-month", Value: layoutbench.DefaultWorkload.ReadsPerMonth, Usage: "reads of the mix a month: the ranking prices the whole workload",
			DefaultText: strconv.FormatFloat(layoutbench.DefaultWorkload.ReadsPerMonth, 'f', -1, 64), Category: catBench},
		&cli.Float64Flag{Name: "writes-per-month", Usage: "updates of one node's attributes a month", Category: catBench},
		&cli.Float64Flag{Name: "moves-per-month", Usage: "subtree moves a month", Category: catBench},
		&cli.Float64Flag{Name: "deletes-per-month", Usage: "deletes of one node a month", Category: catBench},
		&cli.Float64Flag{Name: "months", Value: layoutbench.DefaultWorkload.Months, Usage: "how long the table lives: storage is paid for each month", Category: catBench},
		&cli.StringFlag{Name: "workload", Usage: "read the workload from `FILE` (JSON: reads_per_month, writes_per_month, moves_per_month, deletes_per_month, months, read_mix); flags given override it", Category: catBench},
		&cli.StringSliceFlag{Name: "out", Usage: "write the report to `FILE`: .md, .json or .html (repeatable); the terminal table is always printed", Category: catBench},
		&cli.BoolFlag{Name: "offline", Usage: "compute from the file alone (no server): reads are estimated, latency is left out", Category: catBench},
		&cli.Int64Flag{Name: "scale", Usage: "project the costs to this many `NODES`", DefaultText: "the input's node count", Category: catBench},
		&cli.BoolFlag{Name: "keep-tables", Usage: "online: leave the tables in place instead of deleting them", Category: catBench},
		&cli.StringFlag{Name: "table-prefix", Value: "treeport-bench", Usage: "online: the tables are named PREFIX-LAYOUT-RANDOM", Category: catBench},
		&cli.IntFlag{Name: "concurrency", Value: 8, Usage: "online: BatchWriteItem calls in flight while loading", Category: catBench},
	)
	flags = append(flags, awsFlags()...)
	return &cli.Command{
		Name:  "bench",
		Usage: "compare the layouts on your data: storage, load, partitions, queries, rewrites, cost; ranked by the total cost of your workload",
		UsageText: "treeport bench --in PATH [--layouts path,sharded-path,closure,prefix,adjacency] [--sample N] [--read-mix get=10,children=40,descendants=30,ancestors=20]\n" +
			"               [--reads-per-month N] [--writes-per-month N] [--moves-per-month N] [--deletes-per-month N] [--months N | --workload FILE]\n" +
			"               [--out report.md --out report.json --out report.html] (--endpoint-url URL | --offline) [--scale NODES]",
		Description: "Online (--endpoint-url, e.g. DynamoDB Local), each layout is loaded into a fresh table with\n" +
			"treeport's writer, a depth-stratified sample of nodes is queried, and the tables are deleted\n" +
			"(also on Ctrl-C). Offline, everything that needs no server comes from the file alone.",
		Flags:  flags,
		Action: runBench,
	}
}

const catBench = "Bench"

func runBench(c *cli.Context) error {
	if c.NArg() > 0 {
		return noArgs(c)
	}
	inPath := c.String("in")
	if inPath == "" {
		return usagef("--in is required")
	}
	offline := c.Bool("offline")
	endpoint := c.String("endpoint-url")
	if !offline && endpoint == "" {
		return usagef("give --endpoint-url (DynamoDB Local, e.g. http://localhost:8000, or a real endpoint: bench creates and deletes tables there) or --offline")
	}
	if err := checkBenchFlags(c); err != nil {
		return err
	}
	work, mix, err := benchWorkload(c)
	if err != nil {
		return err
	}
	outs := c.StringSlice("out")
	writers := make([]func(io.Writer, *layoutbench.Report) error, len(outs))
	for i, o := range outs {
		if writers[i], err = layoutbench.Writer(o); err != nil {
			return usagef("--out: %v", err)
		}
	}
	lopts, err := layoutOptions(c)
	if err != nil {
		return err
	}
	ls, err := benchLayouts(c, &lopts)
	if err != nil {
		return err
	}
	onInvalid := c.String("on-invalid")
	if onInvalid != "fail" && onInvalid != "skip" {
		return usagef("--on-invalid %q: want fail or skip", onInvalid)
	}
	srcOpts, err := sourceOptions(c)
	if err != nil {
		return err
	}
	stderr := c.App.ErrWriter
	if stderr == nil {
		stderr = os.Stderr
	}

	debug.SetGCPercent(50) // the skeleton lives for the whole run; see runImport
	started := time.Now()
	// Problems past the ones printed are only counted: the rejects file is
	// written as the input is read again (checkBenchInput).
	in, err := importer.ReadInput(c.Context, importer.InputOptions{Path: inPath, Source: srcOpts, ClosureCopy: lopts.ClosureCopy, MaxProblems: c.Int("max-errors")})
	if err != nil {
		return err
	}
	if err := checkBenchInput(c, in, ls, onInvalid, stderr); err != nil {
		return err
	}

	opts := layoutbench.Options{
		Layouts: ls, Sample: c.Int("sample"), Seed: uint64(c.Int64("seed")), Mix: mix, Workload: work, Scale: c.Int64("scale"),
		Prices: pricing.Default, TablePrefix: c.String("table-prefix"), KeepTables: c.Bool("keep-tables"),
		Concurrency: c.Int("concurrency"),
		Log: func(format string, args ...any) {
			fmt.Fprintf(stderr, "bench: %5.1fs  %s\n", time.Since(started).Seconds(), fmt.Sprintf(format, args...))
		},
	}
	if !offline {
		client, err := ddb.NewClient(c.Context, awsOptions(c))
		if err != nil {
			return err
		}
		opts.Client, opts.Endpoint = client, endpoint
	}
	return runBenchReport(c, in, opts, outs, writers, stderr)
}

// checkBenchFlags refuses a --sample, --seed or --scale out of range.
func checkBenchFlags(c *cli.Context) error {
	if c.Int("sample") <= 0 {
		return usagef("--sample %d: want 1 or more", c.Int("sample"))
	}
	if c.Int64("seed") < 0 {
		return usagef("--seed %d: want 0 or more", c.Int64("seed"))
	}
	if c.Int64("scale") < 0 {
		return usagef("--scale %d: want a node count", c.Int64("scale"))
	}
	return nil
}

// runBenchReport runs the bench and writes its report: as text on
// standard output, and to each --out.
func runBenchReport(c *cli.Context, in *importer.Input, opts layoutbench.Options, outs []string, writers []func(io.Writer, *layoutbench.Report) error, stderr io.Writer) error {
	rep, err := layoutbench.Run(c.Context, in, opts)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			if c.Bool("keep-tables") {
				return fmt.Errorf("%w: bench stopped; its tables were kept (--keep-tables)", errInterrupted)
			}
			return fmt.Errorf("%w: bench stopped; its tables were deleted", errInterrupted)
		}
		return err
	}
	if err := layoutbench.WriteText(c.App.Writer, rep); err != nil {
		return err
	}
	for i, o := range outs {
		if err := writeFileWith(o, func(w io.Writer) error { return writers[i](w, rep) }); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "bench: wrote %s\n", o)
	}
	return nil
}

// benchWorkload reads the workload bench prices (--workload, then the
// flags that override it) and the read mix.
func benchWorkload(c *cli.Context) (layoutbench.Workload, []layoutbench.MixEntry, error) {
	work := layoutbench.DefaultWorkload
	mixText := c.String("read-mix")
	if p := c.String("workload"); p != "" {
		wf, err := layoutbench.ReadWorkload(p, work)
		if err != nil {
			return work, nil, usagef("--workload: %v", err)
		}
		work = wf.Workload
		if wf.ReadMix != "" && !c.IsSet("read-mix") {
			mixText = wf.ReadMix
		}
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{"reads-per-month", &work.ReadsPerMonth}, {"writes-per-month", &work.WritesPerMonth}, {"moves-per-month", &work.MovesPerMonth},
		{"deletes-per-month", &work.DeletesPerMonth}, {"months", &work.Months}} {
		if c.IsSet(f.name) || c.String("workload") == "" {
			*f.v = c.Float64(f.name)
		}
	}
	if err := work.Check(); err != nil {
		return work, nil, usagef("--%v", err)
	}
	mix, err := layoutbench.ParseMix(mixText)
	if err != nil {
		return work, nil, usagef("--read-mix: %v", err)
	}
	return work, mix, nil
}

// benchLayouts builds the layouts --layouts names and the --model's, in
// that order; a model's closure_copy goes to lopts.
func benchLayouts(c *cli.Context, lopts *layouts.Options) ([]layouts.Layout, error) {
	var ls []layouts.Layout
	seen := map[string]bool{}
	for _, name := range strings.Split(c.String("layouts"), ",") {
		name = strings.TrimSpace(name)
		names := []string{name}
		if name == "all" {
			names = layouts.Names()
		}
		for _, n := range names {
			if n == "" || seen[n] {
				continue
			}
			l, err := layouts.New(n, *lopts)
			if err != nil {
				return nil, usagef("--layouts: %v", err)
			}
			seen[n] = true
			ls = append(ls, l)
		}
	}
	if file := c.String("model"); file != "" {
		l, err := loadModel(c, file, "", "")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		if cc := layouts.ClosureCopy(l); cc != nil && !c.IsSet("closure-copy") {
			// The model's closure_copy: what the input's copied bytes
			// are counted for.
			lopts.ClosureCopy = cc
		}
	}
	if len(ls) == 0 {
		return nil, usagef("--layouts: name at least one of %s", strings.Join(layouts.Names(), ", "))
	}
	if err := checkModelParams(c, ls...); err != nil {
		return nil, err
	}
	return ls, nil
}

// checkBenchInput prints every layout's problems with the input, before
// anything is created, and writes each layout's rejected records to
// --rejects, reading the input again for each (importer.WriteRejects).
func checkBenchInput(c *cli.Context, in *importer.Input, ls []layouts.Layout, onInvalid string, stderr io.Writer) error {
	invalid := 0
	var rejects *bufio.Writer
	if p := c.String("rejects"); p != "" && onInvalid == "skip" {
		f, err := statefile.CreateOutput(p)
		if err != nil {
			return err
		}
		defer f.Close()
		rejects = bufio.NewWriter(f)
		defer rejects.Flush()
	}
	for _, l := range ls {
		in.Forest.Reset()
		problems := in.CheckLayout(l)
		if len(problems) == 0 {
			continue
		}
		invalid++
		if len(ls) > 1 {
			fmt.Fprintf(stderr, "%s:\n", l.Name())
		}
		printProblems(stderr, problems, c.Int("max-errors"), in.MoreProblems())
		if rejects != nil {
			if _, err := in.WriteRejects(c.Context, l, rejects); err != nil {
				return fmt.Errorf("writing %s: %w", c.String("rejects"), err)
			}
		}
	}
	if invalid > 0 && onInvalid == "fail" {
		return fmt.Errorf("%w: the input has problems (above) for %d of the layouts; nothing was created (fix them, or use --on-invalid=skip to bench the valid trees)",
			importer.ErrInvalid, invalid)
	}
	return nil
}

// writeFileWith writes a file through a buffered writer and reports the
// first error, the close's included.
func writeFileWith(path string, write func(io.Writer) error) error {
	f, err := statefile.CreateOutput(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if err := write(w); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
