package commands

import (
	"fmt"
	"runtime/debug"

	"github.com/urfave/cli/v2"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/records"
)

func verifyCommand() *cli.Command {
	flags := append(inputFlags(), readFlags(false)...)
	flags = append(flags,
		&cli.IntFlag{Name: "max-examples", Value: exporter.DefaultMaxExamples, Usage: "how many examples of each kind of difference to print", Category: catOutput},
	)
	flags = append(flags, layoutFlags(false)...)
	flags = append(flags, memoryFlags()...)
	flags = append(flags, awsFlags()...)
	return &cli.Command{
		Name:      "verify",
		Usage:     "compare an input file with a table: missing, extra and moved nodes, changed attributes",
		UsageText: "treeport verify --in PATH --table T --layout L",
		Description: "Reads the file as import does (the same --format, --id-field, --types …) and the table with a\n" +
			"parallel Scan, then compares them node by node: nodes missing from the table, extra nodes in it,\n" +
			"moved nodes (another parent) and changed attributes, typed: a value of another DynamoDB type\n" +
			"differs, numbers compare by value (DynamoDB stores 1.50 as 1.5) and sets in any order.\n" +
			"It prints the counts and the first examples of each. Exit 0: identical; 1: differences.\n" +
			"A file and a table that do not fit in --memory are compared out of core: each sorted by id in\n" +
			"--tmp-dir, then merged once, with the same result (docs/SCALING.md).",
		Flags:  flags,
		Action: runVerify,
	}
}

func runVerify(c *cli.Context) error {
	if c.NArg() > 0 {
		return noArgs(c)
	}
	in, table := c.String("in"), c.String("table")
	switch {
	case in == "":
		return usagef("--in is required: the file to compare")
	case table == "":
		return usagef("--table is required: the table to compare with")
	}
	ls, _, err := newLayouts(c, false)
	if err != nil {
		return err
	}
	srcOpts, err := sourceOptions(c)
	if err != nil {
		return err
	}
	segments := c.Int("segments")
	if segments < 1 || segments > exporter.MaxSegments {
		return usagef("--segments %d: give 1 to %d", segments, exporter.MaxSegments)
	}
	client, err := ddb.NewClient(c.Context, readAWSOptions(c, segments))
	if err != nil {
		return err
	}
	// A table of another layout (or model) is refused before a read.
	if err := checkReadTable(c.Context, client, table, ls[0]); err != nil {
		return err
	}
	ooc, err := verifyOutOfCore(c, in, srcOpts)
	if err != nil {
		return err
	}
	src, err := records.OpenSource(in, srcOpts)
	if err != nil {
		return err
	}
	defer src.Close()
	p := newProgress(c)
	defer p.finish()
	ooc.OnPhase = p.phase
	d, err := exporter.Verify(c.Context, exporter.VerifyOptions{
		Layout: ls[0], Client: client, Table: table,
		Scan: exporter.ScanOptions{Segments: segments, MaxRCU: c.Float64("max-rcu"), ConsistentRead: c.Bool("consistent-read")},
		In:   in, Records: src, Unit: placeUnit(in, srcOpts.Format),
		MaxExamples: c.Int("max-examples"), OutOfCore: ooc,
	})
	if err != nil {
		return err
	}
	if err := d.WriteReport(c.App.Writer); err != nil {
		return err
	}
	fmt.Fprintf(c.App.ErrWriter, "read table %s: %s\n", table, d.Read)
	if d.Changed.Count > 0 && srcOpts.Types == nil && (srcOpts.Format == records.FormatCSV || srcOpts.Format == "" && records.FormatFromPath(in) == records.FormatCSV) {
		fmt.Fprintf(c.App.ErrWriter, "hint: %s is CSV read without --types, so every value is a string and a number or a boolean in the table differs from it; "+
			"give --types (export writes the one that reads its CSV back to %s, which verify reads by itself)\n", in, records.TypesPath(in))
	}
	// An item of a model's table that does not read back is a difference
	// too: the table does not hold exactly the file.
	if d.Differences() > 0 || d.Read.Unparsable > 0 {
		return errDifferences
	}
	return nil
}

// placeUnit is what a place in the input at path, of format ("": by its
// name), is counted in: "row" for Parquet, "" (lines) for the others.
func placeUnit(path, format string) string {
	if format == "" {
		format = records.DetectFormat(path)
	}
	if format == records.FormatParquet {
		return "row"
	}
	return ""
}

// verifyOutOfCore reads --memory and --tmp-dir for verify: a file and a
// table whose records do not fit the budget together are compared out of
// core. The file's size is guessed as import guesses it.
func verifyOutOfCore(c *cli.Context, in string, src records.SourceOptions) (*exporter.VerifyOutOfCore, error) {
	mem, err := memoryBudget(c)
	if err != nil {
		return nil, err
	}
	return &exporter.VerifyOutOfCore{Memory: mem, TmpDir: c.String("tmp-dir"), Force: c.Bool("force-out-of-core"),
		FileRecords: importer.EstimateNodes(importer.InputOptions{Path: in, Source: src}),
		Warn:        warner(c),
		OnStart:     func() { debug.SetMemoryLimit(softLimit(mem)) }}, nil
}
