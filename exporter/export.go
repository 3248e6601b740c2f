package exporter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/treeport/treeport/internal/statefile"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/records/ddbitems"
	"github.com/treeport/treeport/records/infile"
	"github.com/treeport/treeport/transform"
)

// ExportOptions say what to export and where. The source is a table
// (Client and Table) or a DynamoDB export (In); the destination is Out.
type ExportOptions struct {
	Layout layouts.Layout

	// Client and Table: export a table with a parallel Scan (see Scan), or
	// with Root set, one subtree through the layout's own queries.
	Client QueryAPI
	Table  string
	// Root, when set, exports only the subtree of this node (it included):
	// a descendants query with MinDepth 0, no Scan, unless OutOfCore is
	// set and the query reads more than its budget: then the whole table
	// is scanned out of core and the subtree kept (see orderSubtreeOOC).
	// RootPath is its path for the prefix layout (see QueryOptions.Path).
	Root     string
	RootPath []string

	// In is a DynamoDB export instead of a table: a DynamoDB JSON file (one
	// {"Item":{...}} a line, gzip or zstd too) or an ExportTableToPointInTime
	// directory. Its items are rebuilt with the layout as a Scan's are.
	In string

	// Scan sets the Scan's segments, rate cap and consistency; with Root,
	// Segments is the number of requests in flight and MaxRCU paces only
	// the Scan of a subtree over the budget.
	Scan ScanOptions

	// Out is the file to write; "-" writes to Stdout. A file is written
	// under a temporary name in the same directory and renamed when it is
	// complete, so a failed export leaves no partial file behind.
	Out    string
	Stdout io.Writer
	// Writer sets the format (from Out's name when empty), the id and
	// parent field names and the CSV delimiter. Its Columns are inferred
	// from the records when nil.
	Writer records.WriterOptions

	// OutOfCore, when set, is the memory budget: a table (or export, or
	// subtree) whose records do not fit is exported out of core, to the
	// same bytes (see ExportOutOfCore).
	OutOfCore *ExportOutOfCore
}

// ExportStats say what an export did.
type ExportStats struct {
	Nodes int64 // records written
	// Read is what reading the table cost; for an export directory, Items
	// counts the items read from its files.
	Read   Stats
	Forest ForestCheck // what keeps the records from being a forest
	Format string
	Took   time.Duration
	// Types is the --types that reads a CSV export back with its types
	// (records.TypesFlag; "" when every column is a string), and
	// TypesFile the sidecar file it was written to, beside Out
	// (records.TypesPath; "" for standard output or another format).
	Types, TypesFile string
	// OutOfCore says the records were sorted out of core (ExportOutOfCore).
	OutOfCore bool
	// SubtreeScanned says a subtree's query (Root) went over the budget
	// and the whole table was scanned for it (Read counts both).
	SubtreeScanned bool
}

// Export reads the records of a table (or of a DynamoDB export), sorts them
// with SortRecords and writes them in opts.Writer.Format with their types:
// exact numbers, binary, maps and lists, NULL and BOOL as far as the format
// can hold them (see records.NewWriter). Every record is held in memory to be
// sorted, unless opts.OutOfCore finds they do not fit (see exportOOC: the
// same bytes, in passes over files); for json, jsonl and ddbjson a table's
// records are held encoded,
// each encoded as soon as its page is read, so that only copying them out
// in order is left once the scan ends. Records that are not a forest (a
// parent missing from the table, an id twice) are written all the same, and
// counted in ExportStats.Forest.
func Export(ctx context.Context, opts ExportOptions) (ExportStats, error) {
	started := time.Now()
	st := ExportStats{}
	if opts.Layout == nil {
		return st, errors.New("exporter: no layout")
	}
	wopts := opts.Writer
	if wopts.Format == "" {
		wopts.Format = records.FormatFromPath(opts.Out)
	}
	if wopts.Format == "" {
		return st, fmt.Errorf("exporter: cannot tell the output format from %q; pass --format (csv, json, jsonl, parquet or ddbjson)", opts.Out)
	}
	st.Format = wopts.Format
	if opts.Out == "" {
		return st, errors.New("exporter: no output file")
	}

	// A format the options do not suit fails now, not after the scan.
	if _, err := records.NewWriter(io.Discard, wopts); err != nil {
		return st, err
	}

	var held *heldNodes
	var err error
	switch {
	case opts.In != "" && opts.Table != "":
		return st, errors.New("exporter: export a table or a DynamoDB export, not both")
	case opts.In != "":
		if opts.Root != "" {
			return st, errors.New("exporter: a subtree (--root) is exported from a table, not from a DynamoDB export")
		}
		if ooc, need := opts.OutOfCore.inOutOfCore(opts.In); ooc {
			return exportOOC(ctx, opts, wopts, st, need, opts.In)
		}
		var recs []*transform.Record
		recs, st.Read.Items, err = readExport(ctx, opts.In, opts.Layout)
		held = holdRecords(recs)
	case opts.Table == "":
		return st, errors.New("exporter: no table and no DynamoDB export to read")
	case opts.Root != "" || len(opts.RootPath) > 0:
		var recs []*transform.Record
		recs, st.Read, err = subtree(ctx, opts)
		if errors.Is(err, errOverBudget) {
			// Over the budget: the whole table's passes, which keep
			// the subtree (exportOOC).
			_, need := opts.OutOfCore.tableOutOfCore(ctx, opts.Client, opts.Table)
			st.SubtreeScanned = true
			return exportOOC(ctx, opts, wopts, st, need, fmt.Sprintf("the subtree of %q (the whole table %s is read)", rootID(opts), opts.Table))
		}
		held = holdRecords(recs)
	default:
		if ooc, need := opts.OutOfCore.tableOutOfCore(ctx, opts.Client, opts.Table); ooc {
			return exportOOC(ctx, opts, wopts, st, need, "table "+opts.Table)
		}
		held, st.Read, err = scanNodes(ctx, opts.Client, opts.Table, opts.Layout, opts.Scan, records.EncoderFor(wopts))
	}
	if err != nil {
		return st, err
	}
	order, forest := forestOrder(held.ids, held.parents)
	st.Forest = forest
	var written records.Writer
	if err := writeExportFile(opts.Out, opts.Stdout, wopts, func(rw records.Writer) error {
		written = rw
		if held.encs != nil {
			ew, ok := rw.(records.EncodedWriter)
			if !ok {
				return fmt.Errorf("exporter: the %s writer takes no encoded records", wopts.Format)
			}
			for _, i := range order {
				if err := ew.WriteEncoded(held.encs[i]); err != nil {
					return err
				}
			}
			return nil
		}
		for _, i := range order {
			if err := rw.Write(held.recs[i]); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return st, err
	}
	st.Nodes = int64(len(order))
	if err := writeTypesFile(&st, opts.Out, written); err != nil {
		return st, err
	}
	st.Took = time.Since(started)
	return st, nil
}

// writeTypesFile writes the types sidecar of a CSV export (written, the
// writer) beside out, and says so in st.
func writeTypesFile(st *ExportStats, out string, written records.Writer) error {
	if cw, ok := written.(records.ColumnsWriter); ok {
		// CSV holds every value as text: the sidecar says how to read
		// the columns back (written even when empty, so that no stale
		// one from an earlier export is read beside the new file).
		st.Types = records.TypesFlag(cw.Columns())
		if out != "-" {
			st.TypesFile = records.TypesPath(out)
			if err := statefile.WriteOutput(st.TypesFile, []byte(st.Types+"\n")); err != nil {
				return fmt.Errorf("writing the column types of %s: %w", out, err)
			}
		}
	}
	return nil
}

// holdRecords holds recs to be sorted and written.
func holdRecords(recs []*transform.Record) *heldNodes {
	ids, parents := idsAndParents(recs)
	return &heldNodes{ids: ids, parents: parents, recs: recs}
}

// subtree reads the subtree of opts.Root with a descendants query, in no
// particular order. With opts.OutOfCore, the query stops with
// errOverBudget as soon as what it read would be over the budget (at its
// first item when forced): the records it holds never are.
func subtree(ctx context.Context, opts ExportOptions) ([]*transform.Record, Stats, error) {
	var held *heldBudget
	if o := opts.OutOfCore; o != nil {
		held = newHeldBudget(o.Memory)
		if o.Force {
			held = newHeldBudget(-1)
		}
	}
	res, st, err := query(ctx, opts.Client, opts.Table, opts.Layout, QueryOptions{
		Kind: Descendants, ID: opts.Root, Path: opts.RootPath,
		MinDepth: 0, MaxDepth: NoMaxDepth,
		ConsistentRead: opts.Scan.ConsistentRead,
		Concurrency:    opts.Scan.Segments,
		MaxRetries:     opts.Scan.MaxRetries,
	}, held)
	if err != nil {
		return nil, st, err
	}
	recs := make([]*transform.Record, len(res))
	for i, r := range res {
		rec := &transform.Record{ID: r.ID, Parent: r.Parent, Attrs: r.Attrs}
		recs[i] = rec
	}
	return recs, st, nil
}

// rootID is the id of the subtree's root: Root, or the last id of
// RootPath.
func rootID(opts ExportOptions) string {
	if opts.Root == "" && len(opts.RootPath) > 0 {
		return opts.RootPath[len(opts.RootPath)-1]
	}
	return opts.Root
}

// ReadExport rebuilds the records of a DynamoDB export written from a table
// of layout l: a DynamoDB JSON file or an ExportTableToPointInTime
// directory (see ddbitems.Open). Items that are not nodes are
// passed over. It returns the records in the order of SortRecords and the
// number of items read. A line that cannot be read, or an item that does not
// fit the layout, is an error naming its file and line.
func ReadExport(ctx context.Context, path string, l layouts.Layout) ([]*transform.Record, int64, error) {
	recs, items, err := readExport(ctx, path, l)
	if err != nil {
		return nil, items, err
	}
	return SortRecords(recs), items, nil
}

// readExport is ReadExport without the sort.
func readExport(ctx context.Context, path string, l layouts.Layout) ([]*transform.Record, int64, error) {
	src, err := ddbitems.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer src.Close()
	var recs []*transform.Record
	var items int64
	spec := l.Table()
	for {
		item, file, line, err := src.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, items, err
		}
		items++
		if _, over := infile.CheckLimits(item, file, line, "", ""); over != nil {
			return nil, items, over
		}
		rec, ok, err := l.Node(item)
		if err != nil {
			return nil, items, itemError(fmt.Sprintf("%s:%d", file, line), spec, item, l, err)
		}
		if ok {
			rec.File, rec.Line = file, line
			recs = append(recs, &rec)
		}
	}
	if layouts.ReadsImplicit(l) {
		ids := make([]string, len(recs))
		parents := make([]string, len(recs))
		for i, r := range recs {
			ids[i], parents[i] = r.ID, r.Parent
		}
		recs = append(recs, layouts.Implied(l, ids, parents)...)
	}
	return recs, items, nil
}

// writeExportFile writes to out ("-": stdout) the records write gives the
// records.Writer, through a temporary file that is renamed once complete.
func writeExportFile(out string, stdout io.Writer, wopts records.WriterOptions, write func(records.Writer) error) error {
	return writeExportFileWith(out, stdout, wopts, records.NewWriter, write)
}

// writeExportFileWith is writeExportFile with the writer newWriter makes.
func writeExportFileWith(out string, stdout io.Writer, wopts records.WriterOptions, newWriter func(io.Writer, records.WriterOptions) (records.Writer, error), write func(records.Writer) error) error {
	if out == "-" {
		if stdout == nil {
			stdout = os.Stdout
		}
		return writeRecordsTo(stdout, wopts, newWriter, write)
	}
	// The export gets the mode a plain create would give it (the umask's),
	// or keeps that of the file it replaces.
	tmp, err := statefile.CreateTempFor(out)
	if err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	// The name says the compression too: t.csv.gz is a gzip file, as the
	// readers take it (by its magic bytes) and as its name promises.
	zw, err := records.Compress(tmp, out)
	if err != nil {
		return fmt.Errorf("exporter: %w", err)
	}
	if err := writeRecordsTo(zw, wopts, newWriter, write); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("exporter: writing %s: %w", out, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("exporter: writing %s: %w", out, err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return fmt.Errorf("exporter: %w", err)
	}
	done = true
	return nil
}

func writeRecordsTo(w io.Writer, wopts records.WriterOptions, newWriter func(io.Writer, records.WriterOptions) (records.Writer, error), write func(records.Writer) error) error {
	rw, err := newWriter(w, wopts)
	if err != nil {
		return err
	}
	if err := write(rw); err != nil {
		return err
	}
	return rw.Close()
}
