package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/importer/importfiles"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/ddbtable"
	"github.com/treeport/treeport/internal/s3io"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
)

const (
	catRead   = "Reading"
	catOutput = "Output"
)

// progressEvery is how often a long export says how far it got.
const progressEvery = 5 * time.Second

// readFlags are the flags of the commands that read a table; withRoot says
// the command has --root (export), which reads with queries instead of a
// Scan.
func readFlags(withRoot bool) []cli.Flag {
	segments := "parallel Scan segments"
	if withRoot {
		segments += " (with --root: queries in flight)"
	}
	return []cli.Flag{
		&cli.StringFlag{Name: "table", Usage: "the DynamoDB `TABLE` to read", Category: catRead},
		&cli.IntFlag{Name: "segments", Value: exporter.DefaultSegments, Usage: segments, Category: catRead},
		&cli.Float64Flag{Name: "max-rcu", Usage: "cap the read rate at this many RCU per second, shared by every segment (default: no cap; throttled requests are retried with backoff either way)", Category: catRead},
		&cli.BoolFlag{Name: "consistent-read", Usage: "strongly consistent reads of the table (twice the RCU; indexes are always eventually consistent)", Category: catRead},
	}
}

// readAWSOptions are the AWS options of a command that reads.
func readAWSOptions(c *cli.Context, conns int) ddb.AWSOptions {
	return ddb.AWSOptions{
		EndpointURL: c.String("endpoint-url"),
		Region:      c.String("region"),
		Profile:     c.String("profile"),
		MaxConns:    max(64, 2*conns),
	}
}

func exportCommand() *cli.Command {
	flags := append([]cli.Flag{}, readFlags(true)...)
	flags = append(flags,
		&cli.StringFlag{Name: "in", Usage: "rebuild from a DynamoDB export instead of a table: a DynamoDB JSON `PATH` (one {\"Item\":…} a line, gzip too), an ExportTableToPointInTime directory, or one in S3 (s3://BUCKET/PREFIX/AWSDynamoDB/EXPORT_ID/); reads no table, spends no read capacity", Category: catRead},
		&cli.StringFlag{Name: "root", Usage: "export only the subtree of the node `ID` (it included), read with the layout's own descendants query instead of a Scan (a Scan out of core when the query reads more than --memory)", Category: catRead},
		&cli.StringFlag{Name: "path", Usage: "prefix layout: the ids from the root to --root joined by the delimiter (e.g. CM1¦CM2¦CM4), so that --root need not be found with a Scan", Category: catRead},
		&cli.StringFlag{Name: "out", Usage: "output `FILE` (- for standard output); its name gives the format and, ending in .gz or .zst, the compression", Category: catOutput},
		&cli.StringFlag{Name: "format", Usage: "output format: " + strings.Join(records.Formats, ", ") + " (default: from the --out name)", Category: catOutput},
		&cli.StringFlag{Name: "id-field", Value: records.DefaultIDField, Usage: "the name of the id field in the output", Category: catOutput},
		&cli.StringFlag{Name: "parent-field", Value: records.DefaultParentField, Usage: "the name of the parent field in the output", Category: catOutput},
		&cli.StringFlag{Name: "csv-delimiter", Value: ",", Usage: "CSV field delimiter (one character; \\t for tab)", Category: catOutput},
	)
	flags = append(flags, layoutFlags(false)...)
	flags = append(flags, memoryFlags()...)
	flags = append(flags, awsFlags()...)
	flags = append(flags, s3EndpointFlag())
	return &cli.Command{
		Name:      "export",
		Usage:     "write the trees of a table (or of a DynamoDB export) to a CSV, JSON, JSON Lines, Parquet or DynamoDB JSON file",
		UsageText: "treeport export --table T --layout L --out FILE [--format csv|json|jsonl|parquet|ddbjson] [--root ID]\n   treeport export --in EXPORT_DIR --layout L --out FILE",
		Description: "A parallel Scan reads the table (--segments, --max-rcu); each item is turned back into its node\n" +
			"by the layout, and the layout's attributes are dropped. The records are written with their types\n" +
			"(exact numbers, binary, maps, lists, NULL, BOOL; typed Parquet columns) in a fixed order, so that\n" +
			"two exports of the same data are the same bytes: the trees by root id, each tree in pre-order\n" +
			"(a node, then its children's subtrees), siblings by id. Records that do not fit in --memory are\n" +
			"sorted out of core, in passes over files in --tmp-dir, to the same bytes.\n" +
			"A summary (nodes, items read, RCU consumed) goes to standard error.",
		Flags:  flags,
		Action: runExport,
	}
}

func runExport(c *cli.Context) error {
	if c.NArg() > 0 {
		return noArgs(c)
	}
	table, in, out := c.String("table"), c.String("in"), c.String("out")
	switch {
	case out == "":
		return usagef("--out FILE is required (- for standard output)")
	case table == "" && in == "":
		return usagef("give --table T to export a table, or --in PATH to rebuild a DynamoDB export")
	case table != "" && in != "":
		return usagef("--table and --in go separately: export a table or a DynamoDB export")
	case in != "" && (c.IsSet("root") || c.IsSet("path")):
		return usagef("--root exports a subtree of a table, through its queries; it does not apply to --in")
	}
	ls, _, err := newLayouts(c, false)
	if err != nil {
		return err
	}
	l := ls[0]
	format := c.String("format")
	if format == "" {
		format = records.FormatFromPath(out)
		if format == "" {
			return usagef("cannot tell the format from --out %q; pass --format (%s)", out, strings.Join(records.Formats, ", "))
		}
	}
	if err := records.CheckCompression(out, format); err != nil {
		return usagef("--out %v", err)
	}
	delim, err := csvDelimiter(c.String("csv-delimiter"))
	if err != nil {
		return err
	}
	root := c.String("root")
	rootPath, err := parsePath(c, l, root)
	if err != nil {
		return err
	}
	segments := c.Int("segments")
	if segments < 1 || segments > exporter.MaxSegments {
		return usagef("--segments %d: give 1 to %d", segments, exporter.MaxSegments)
	}
	ooc, err := exportOutOfCore(c)
	if err != nil {
		return err
	}
	prog := newProgress(c)
	defer prog.finish()
	ooc.OnPhase = prog.phase
	opts := exporter.ExportOptions{
		OutOfCore: ooc,
		Layout:    l, Table: table, In: in, Root: root, RootPath: rootPath,
		Scan: exporter.ScanOptions{
			Segments: segments, MaxRCU: c.Float64("max-rcu"), ConsistentRead: c.Bool("consistent-read"),
		},
		Out: out, Stdout: c.App.Writer,
		Writer: records.WriterOptions{
			Format: format, IDField: c.String("id-field"), ParentField: c.String("parent-field"), CSVDelimiter: delim,
		},
	}
	if table != "" {
		client, err := ddb.NewClient(c.Context, readAWSOptions(c, segments))
		if err != nil {
			return err
		}
		opts.Client = client
		// A table of another layout (or model) is refused before a read.
		if err := checkReadTable(c.Context, client, table, l); err != nil {
			return err
		}
		// A long Scan says how far it got every few seconds.
		last := time.Now()
		opts.Scan.OnPage = func(st exporter.Stats) {
			if time.Since(last) >= progressEvery {
				last = time.Now()
				fmt.Fprintf(c.App.ErrWriter, "scanning %s: %s so far\n", table, st)
			}
		}
	}
	if s3io.IsURL(in) {
		dir, cleanup, err := downloadExport(c, in)
		if err != nil {
			return err
		}
		defer cleanup()
		opts.In = dir
	}
	st, err := exporter.Export(c.Context, opts)
	if err != nil {
		return err
	}
	opts.In = in
	printExportSummary(c.App.ErrWriter, opts, st)
	return nil
}

// exportOutOfCore reads --memory and --tmp-dir for export.
func exportOutOfCore(c *cli.Context) (*exporter.ExportOutOfCore, error) {
	mem, err := memoryBudget(c)
	if err != nil {
		return nil, err
	}
	return &exporter.ExportOutOfCore{Memory: mem, TmpDir: c.String("tmp-dir"), Force: c.Bool("force-out-of-core"),
		Warn: warner(c), OnStart: func() { debug.SetMemoryLimit(softLimit(mem)) }}, nil
}

func printExportSummary(w io.Writer, opts exporter.ExportOptions, st exporter.ExportStats) {
	from := fmt.Sprintf("table %s", opts.Table)
	if opts.In != "" {
		from = "DynamoDB export " + opts.In
	}
	what := units.Count(int64(st.Nodes), "node")
	if opts.Root != "" {
		what += fmt.Sprintf(" of the subtree of %q", opts.Root)
	}
	dest := opts.Out
	if dest == "-" {
		dest = "standard output"
	}
	fmt.Fprintf(w, "exported %s from %s (layout %s) to %s (%s) in %s: ",
		what, from, opts.Layout.Name(), dest, st.Format, st.Took.Round(time.Millisecond))
	if opts.In != "" {
		fmt.Fprintf(w, "%s read\n", units.Count(st.Read.Items, "item"))
	} else {
		fmt.Fprintf(w, "%s\n", st.Read)
	}
	if st.OutOfCore {
		fmt.Fprintf(w, "sorted out of core: the records do not fit --memory (sorted runs in --tmp-dir, removed)\n")
	}
	if st.SubtreeScanned {
		fmt.Fprintf(w, "the subtree's query went over --memory: the whole table was scanned, out of core, and the subtree kept (the reads above count both)\n")
	}
	switch {
	case st.TypesFile != "" && st.Types == "":
		fmt.Fprintf(w, "column types written to %s: every column is a string, which is how import and verify read it\n", st.TypesFile)
	case st.TypesFile != "":
		fmt.Fprintf(w, "column types written to %s; import and verify read them from there (--types %q)\n", st.TypesFile, st.Types)
	case st.Types != "":
		fmt.Fprintf(w, "to read this CSV back with its types, give --types %q\n", st.Types)
	}
	f := st.Forest
	if f.Duplicates > 0 {
		fmt.Fprintf(w, "warning: %d nodes share an id with another (%s); the file will not import as it is\n", f.Duplicates, strings.Join(f.DuplicateIDs, ", "))
	}
	// A subtree's root has its parent outside the file, as it should.
	if orphans := f.Orphans; orphans > 0 && (opts.Root == "" || orphans > 1) {
		src := "table"
		if opts.In != "" {
			src = "export"
		}
		fmt.Fprintf(w, "warning: %d nodes have a parent that is not in the %s (%s); the file will not import as it is\n", orphans, src, strings.Join(f.OrphanIDs, ", "))
	}
	if f.InCycles > 0 {
		fmt.Fprintf(w, "warning: %d nodes are in a cycle of parents, or below one (%s); they are written last\n", f.InCycles, strings.Join(f.CycleIDs, ", "))
	}
}

// checkReadTable is ddbtable.CheckTable for the commands that only read a
// table (export, query, verify): a table of another layout or model is
// refused before the first read. A table that does not exist is left to
// that read to report, as a service failure naming --table (exit 3), as
// these commands always have.
func checkReadTable(ctx context.Context, client ddb.DescribeAPI, table string, l layouts.Layout) error {
	if err := ddbtable.CheckTable(ctx, client, table, l.Table()); !errors.Is(err, ddb.ErrTableNotFound) {
		return err
	}
	return nil
}

// csvDelimiter parses --csv-delimiter.
func csvDelimiter(d string) (rune, error) {
	switch d {
	case `\t`, "tab":
		return '\t', nil
	}
	r := []rune(d)
	if len(r) != 1 {
		return 0, usagef("--csv-delimiter %q: want one character", d)
	}
	return r[0], nil
}

// parsePath parses --path: ids joined by the layout's delimiter, with or
// without a leading one. It applies to the prefix layout only; its last id
// must be id, when id is given.
func parsePath(c *cli.Context, l layouts.Layout, id string) ([]string, error) {
	p := c.String("path")
	if p == "" {
		return nil, nil
	}
	if layouts.PathIDs(l) {
		return nil, usagef("--path does not go with --path-ids: the id is the node's path; give it with --id")
	}
	if !l.PathKeyed() {
		return nil, usagef("--path is for the prefix layout, whose keys are paths; the %s layout finds a node by its id", l.Name())
	}
	delim := l.Delimiter()
	ids := strings.Split(strings.TrimPrefix(p, delim), delim)
	for _, s := range ids {
		if s == "" {
			return nil, usagef("--path %q has an empty id; join the ids from the root to the node with %q, e.g. CM1%sCM2", p, delim, delim)
		}
	}
	if id != "" && ids[len(ids)-1] != id {
		return nil, usagef("--path %q does not end with %q", p, id)
	}
	return ids, nil
}

// downloadExport fetches the ExportTableToPointInTime export at the S3 URL
// in into a temporary directory, which cleanup removes.
func downloadExport(c *cli.Context, in string) (dir string, cleanup func(), err error) {
	loc, err := s3io.ParseURL(in)
	if err != nil {
		return "", nil, usagef("--in: %v", err)
	}
	client, err := importfiles.NewS3Client(c.Context, s3Options(c))
	if err != nil {
		return "", nil, err
	}
	// In --tmp-dir, beside the out-of-core passes whose room is checked
	// there: a user who points it at a large volume has a small system
	// temporary directory.
	tmp, err := os.MkdirTemp(c.String("tmp-dir"), "treeport-download-*")
	if err != nil {
		return "", nil, fmt.Errorf("%w: --tmp-dir: %v (the export's files are downloaded there: give a directory it can write)", errUsage, err)
	}
	cleanup = func() { os.RemoveAll(tmp) }
	last := time.Now()
	st, err := exporter.DownloadExport(c.Context, client, loc, tmp, exporter.DownloadOptions{
		OnFile: func(st exporter.DownloadStats) {
			if time.Since(last) >= progressEvery {
				last = time.Now()
				fmt.Fprintf(c.App.ErrWriter, "downloading %s: %d files, %s so far\n", loc, st.Files, units.SizeText(st.Bytes))
			}
		},
	})
	if err != nil {
		cleanup()
		if errors.Is(err, exporter.ErrNotAnExport) {
			return "", nil, fmt.Errorf("%w: --in: %w", errUsage, err)
		}
		return "", nil, err
	}
	fmt.Fprintf(c.App.ErrWriter, "downloaded %d files (%s) of %s in %s\n", st.Files, units.SizeText(st.Bytes), loc, st.Took.Round(time.Millisecond))
	return tmp, cleanup, nil
}
