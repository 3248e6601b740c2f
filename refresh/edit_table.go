package refresh

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddbtable"
	"github.com/treeport/treeport/internal/statefile"
	"github.com/treeport/treeport/layouts"
)

// EditTableOptions configure EditTable.
type EditTableOptions struct {
	Client *dynamodb.Client
	Table  string
	Layout layouts.Layout
	// Ops is the JSON Lines file of edits (see ReadEdits).
	Ops string
	// DryRun reads and plans, and writes nothing.
	DryRun bool
	// Out, when set, is the plan file of the edits' writes.
	Out string
	// WriteOptions are the write run's: the dead-letter file,
	// concurrency, rate and progress.
	ddbwrite.WriteOptions
	// ConsumedCapacity asks DynamoDB for the capacity the writes consume
	// (Run.Stats.ConsumedWCU).
	ConsumedCapacity bool
	// Log receives the notes of a run as it goes (what reading the table
	// cost); nil discards them.
	Log io.Writer
	// Started is when the job started; zero means now.
	Started time.Time
}

// EditTableResult is what EditTable did.
type EditTableResult struct {
	// Edits is how many edits the file held; Counts says what each did.
	Edits  int
	Counts []EditCount
	// Puts, Deletes and WCU are the writes the edits take.
	Puts, Deletes, WCU int64
	// Run is the write run (nil for a dry run or when nothing is to be
	// written).
	Run  *ddbwrite.RunResult
	Took time.Duration
}

// EditTable reads the edits, carries them out in memory against what they
// touch in the table (see Editor), and writes the items that changed. An
// edit that cannot be carried out fails the run (ErrEdit) before anything
// is written. The writes, once begun, are finished even when ctx is
// cancelled, so that the table is never left between two trees.
func EditTable(ctx context.Context, opts EditTableOptions) (*EditTableResult, error) {
	if opts.Started.IsZero() {
		opts.Started = time.Now()
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	l, table := opts.Layout, opts.Table
	edits, err := ReadEdits(opts.Ops)
	if err != nil {
		return nil, err
	}
	if err := ddbtable.CheckTable(ctx, opts.Client, table, l.Table()); err != nil {
		return nil, err
	}
	ed, err := NewEditor(opts.Client, table, l)
	if err != nil {
		return nil, err
	}
	counts, err := ed.Apply(ctx, edits)
	if err != nil {
		return nil, fmt.Errorf("%w; nothing was written", err)
	}
	ops, err := ed.Ops()
	if err != nil {
		return nil, fmt.Errorf("%w; nothing was written", err)
	}
	// The table's own indexes on the user's attributes: a "set" may give
	// one of their keys a value DynamoDB refuses.
	keys, err := importer.TableIndexKeys(ctx, opts.Client, table, l.Table())
	if err != nil {
		return nil, err
	}
	check := importer.NewIndexKeyCheck(keys, l, nil, opts.Ops, 100)
	res := &EditTableResult{Edits: len(edits), Counts: counts}
	for _, op := range ops {
		if op.Kind == Put && len(keys) > 0 {
			check.Add(op.Item)
		}
		if op.Kind == Put {
			res.Puts++
		} else {
			res.Deletes++
		}
		res.WCU += int64(op.WCU)
	}
	if err := check.Err(table); err != nil {
		return res, err
	}
	// The edits' writes reach keys they did not read (a moved node's new
	// rows): none of them may hold an item that is not the tree's.
	if err := checkTargets(ctx, opts.Client, table, l, ops); err != nil {
		return res, err
	}
	fmt.Fprintf(log, "read table %s: %s\n", table, ed.Read)
	if ed.Located > 0 {
		fmt.Fprintf(log, "note: %d nodes were found with a Scan of the whole table (the prefix layout's keys are paths)\n", ed.Located)
	}
	if opts.Out != "" {
		if err := writeOpsFile(opts.Out, PlanHeader{Table: table, Layout: l.Name(), Snapshot: opts.Ops}, ops); err != nil {
			return res, err
		}
	}
	if opts.DryRun || len(ops) == 0 {
		res.Took = time.Since(opts.Started)
		return res, nil
	}

	// The edits were read and checked whole; their writes are finished
	// even on Ctrl-C, so that the table is never left between two trees.
	res.Run, err = ddbwrite.Run(context.WithoutCancel(ctx), ddbwrite.RunOptions{
		WriteOptions: opts.WriteOptions,
		Client:       opts.Client, Table: table, Spec: l.Table(),
		ConsumedCapacity: opts.ConsumedCapacity, Total: int64(len(ops)),
	}, func(ctx context.Context, w *ddbwrite.DDBWriter, _ int64) error {
		return sendOps(ctx, w, ops)
	})
	res.Took = time.Since(opts.Started)
	return res, err
}

// writeOpsFile writes operations as a plan file.
func writeOpsFile(path string, h PlanHeader, ops []Op) error {
	f, err := statefile.CreateOutput(path)
	if err != nil {
		return err
	}
	defer f.Close()
	pw, err := NewPlanWriter(f, h)
	if err != nil {
		return err
	}
	s := &Summary{Table: h.Table, Layout: h.Layout, ByReason: map[Reason]*Count{}}
	for _, r := range Reasons {
		s.ByReason[r] = &Count{}
	}
	for _, op := range ops {
		if err := pw.Write(op); err != nil {
			return err
		}
		s.Add(op)
	}
	if err := pw.Close(s); err != nil {
		return err
	}
	return f.Close()
}
