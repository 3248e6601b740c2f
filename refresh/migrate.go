package refresh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/ddbtable"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

// The field names of the snapshot migrate takes of its source: names no
// DynamoDB attribute of a sane table has, so that none collides with them
// (the exporter refuses a record that has an attribute of the same name).
const (
	migrateIDField     = "treeport:id"
	migrateParentField = "treeport:parent"
)

// MigrateOptions configure Migrate. Target is the destination; Apply's
// options say how it is written. Of Input, only ClosureCopy is read (what
// the destination's closure rows copy): Migrate makes the snapshot.
type MigrateOptions struct {
	ApplyOptions
	// From is the source table and FromLayout its layout; the source is
	// only read (with Target's Client and Scan).
	From       string
	FromLayout layouts.Layout
	// Snapshot keeps the snapshot of the source (DynamoDB JSON, in the
	// rebuilt trees' order) in this file ("": a temporary file, removed at
	// the end).
	Snapshot string
	// Follow, when set, follows the source's stream after the copy; then
	// Checkpoint holds the stream's position, not the copy's progress.
	Follow *FollowOptions
}

// MigrateResult is what Migrate did.
type MigrateResult struct {
	// Source is what reading the source took.
	Source exporter.ExportStats
	// Apply is the copy: the plan against the destination and the writes.
	Apply *ApplyResult
	// Verify is the plan of the destination, read again with consistent
	// reads, against the source's trees: no changes when the copy is exact.
	Verify *Summary
	// Follow is what following the stream did (nil without Follow).
	Follow *FollowResult
	Took   time.Duration
}

// Exact says the destination holds exactly the items the source's trees
// want in its layout.
func (r *MigrateResult) Exact() bool { return r.Verify != nil && r.Verify.Changes() == 0 }

// Migrate copies a table into another layout: it reads the source with a
// parallel Scan and rebuilds its trees into a snapshot file, applies that
// snapshot to the destination (see Apply: resumable with a checkpoint; a
// source that changed since is refused), then reads the destination again
// with consistent reads and compares it with what the source's trees want,
// item by item (MigrateResult.Exact).
//
// With Follow, the source's stream position is taken before the copy, and
// after it the stream is applied to the destination (see follow) until ctx
// ends (ErrInterrupted, the position saved in the checkpoint) or the
// stream stays idle for Follow.Idle; the destination is then verified
// against the source read again, with consistent reads.
//
// Migrate is a refresh whose snapshot is the source table: it is apply's
// plan, writes, checkpoint and guard, with a read of the source before and
// a verification after, so it lives beside Apply.
func Migrate(ctx context.Context, opts MigrateOptions) (*MigrateResult, error) {
	if opts.Started.IsZero() {
		opts.Started = time.Now()
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.From == opts.Table {
		return nil, fmt.Errorf("%w: --from-table and --to-table are both %q: migrate never writes to its source; copy into a new table", ddbwrite.ErrUsage, opts.From)
	}
	if err := ddbtable.CheckTable(ctx, opts.Client, opts.From, opts.FromLayout.Table()); err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	// The destination too, before the source is read: a destination of
	// another layout would be found only after the whole copy was read.
	// One that does not exist yet is --create-table's to make.
	if err := ddbtable.CheckTable(ctx, opts.Client, opts.Table, opts.Layout.Table()); err != nil {
		if !errors.Is(err, ddb.ErrTableNotFound) || !opts.CreateTable {
			return nil, fmt.Errorf("destination: %w", err)
		}
	}
	if opts.Follow != nil {
		return migrateFollow(ctx, opts)
	}
	ooc, err := migrateOutOfCore(ctx, opts)
	if err != nil {
		return nil, err
	}
	if opts.CreateTable {
		if err := ddbtable.CreateTable(ctx, opts.Client, opts.Table, opts.Layout.Table(), opts.Billing); err != nil {
			return nil, err
		}
	}
	if ooc {
		return migrateOOC(ctx, opts, nil)
	}
	if o := opts.Input.OutOfCore; o != nil && o.Refuse == "" {
		// The copy in memory plans against the destination in memory: a
		// source larger than its ItemCount said is refused, not read out
		// of core under a plan that cannot take it.
		c := *o
		c.Refuse = fmt.Sprintf("migrate copied %s in memory, as its ItemCount (which DynamoDB updates about every six hours) fits --memory %s, but its forest does not: run it again once ItemCount is current, or give a larger --memory",
			opts.From, units.SizeText(o.Memory))
		opts.Input.OutOfCore = &c
	}
	res := &MigrateResult{}
	j, cleanup, err := migrateCopy(ctx, opts, res)
	defer cleanup()
	if err != nil {
		return res, err
	}

	// Verify: the destination read again, with consistent reads, against
	// what the source's trees want in its layout, item by item.
	j.Scan.ConsistentRead = true
	if err := j.read(ctx); err != nil {
		return res, fmt.Errorf("verifying %s: %w", opts.Table, err)
	}
	if res.Verify, err = j.plan(ctx, func(Op) error { return nil }); err != nil {
		return res, fmt.Errorf("verifying %s: %w", opts.Table, err)
	}
	res.Took = time.Since(opts.Started)
	return res, nil
}

// exportBudget is the budget of a migrate's read of a table into a
// snapshot file (nil: none): the export in memory holds every record
// (some hundreds of bytes each), more than the forest the snapshot makes,
// so a source whose forest fits --memory may still be exported out of
// core.
func exportBudget(o *importer.OutOfCore) *exporter.ExportOutOfCore {
	if o == nil || o.Memory <= 0 {
		return nil
	}
	return &exporter.ExportOutOfCore{Memory: o.Memory, TmpDir: o.TmpDir, Warn: o.Warn}
}

// migrateCopy reads the source into a snapshot and applies it to the
// destination. The job it returns holds the snapshot, read; cleanup
// removes a temporary snapshot (call it even on error).
func migrateCopy(ctx context.Context, opts MigrateOptions, res *MigrateResult) (*job, func(), error) {
	cleanup := func() {}
	// The source, rebuilt into trees, as a snapshot file: the same bytes for
	// the same table, so that a checkpoint knows whether it changed.
	snap := opts.Snapshot
	if snap == "" {
		// In --tmp-dir when there is one, as the passes out of core.
		dir, err := os.MkdirTemp(opts.Input.OutOfCore.Dir(), "treeport-migrate-")
		if err != nil {
			return nil, cleanup, err
		}
		cleanup = func() { os.RemoveAll(dir) }
		snap = filepath.Join(dir, "snapshot.ddb.json")
	}
	var err error
	res.Source, err = exporter.Export(ctx, exporter.ExportOptions{
		Layout: opts.FromLayout, Client: opts.Client, Table: opts.From, Scan: opts.Scan, Out: snap,
		Writer:    records.WriterOptions{Format: records.FormatDDBJSON, IDField: migrateIDField, ParentField: migrateParentField},
		OutOfCore: exportBudget(opts.Input.OutOfCore),
	})
	if err != nil {
		return nil, cleanup, fmt.Errorf("reading %s: %w", opts.From, err)
	}
	fmt.Fprintf(opts.Log, "read %s (%s layout): %s; %s\n", opts.From, opts.FromLayout.Name(), units.Count(res.Source.Nodes, "node"), res.Source.Read)
	opts.Input = importer.InputOptions{Path: snap, ClosureCopy: opts.Input.ClosureCopy, MaxProblems: opts.Input.MaxProblems, OutOfCore: opts.Input.OutOfCore,
		Source: records.SourceOptions{Format: "ddbjson", IDField: migrateIDField, ParentField: migrateParentField},
		// The snapshot's nodes, counted as they were written: a guess
		// from the file's size (a record of DynamoDB JSON with its
		// attributes is hundreds of bytes, not the 40 it assumes) refused
		// a source whose ItemCount fitted the budget.
		SizeHint: int(min(res.Source.Nodes, math.MaxInt32))}
	j := &job{Target: opts.Target, input: opts.Input, onProblems: opts.OnProblems}
	if opts.Snapshot == "" {
		// The snapshot is a temporary file, gone at the end: a node the
		// destination cannot hold is named by the source table and its id.
		j.from = "table " + opts.From
		j.onProblems = func(problems []*transform.RowError, more int) {
			if opts.OnProblems == nil {
				return
			}
			out := make([]*transform.RowError, len(problems))
			for i, p := range problems {
				q := *p
				q.File, q.Line, q.Unit = j.from, 0, ""
				out[i] = &q
			}
			opts.OnProblems(out, more)
		}
	}
	res.Apply, err = apply(ctx, j, opts.ApplyOptions)
	return j, cleanup, err
}
