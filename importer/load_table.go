package importer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/ddbtable"
	"github.com/treeport/treeport/internal/statefile"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// TableOptions configure LoadTable: an input's items written into a table
// with BatchWriteItem.
type TableOptions struct {
	Client *dynamodb.Client
	Table  string
	// Emit says which items: the layout's, of one shard, with the rejected
	// records going to Emit.Rejects. Emit.Skip is set from the checkpoint.
	Emit EmitOptions
	// CreateTable creates the table, with Billing; otherwise the table must
	// exist with the layout's keys and indexes.
	CreateTable bool
	Billing     ddbtable.Billing
	// Checkpoint is the checkpoint file ("": none). Settings identify the
	// flags that shape the items: with the input, they make the
	// checkpoint's fingerprint.
	Checkpoint string
	Settings   map[string]any
	// Fingerprint, when set, is the checkpoint's fingerprint instead of
	// the input's bytes and Settings hashed (the out-of-core migrate's:
	// its snapshot's records come in no fixed order).
	Fingerprint string
	// WriteOptions are the write run's: the dead-letter file,
	// concurrency, rate and progress.
	ddbwrite.WriteOptions
	// Report is the JSON summary written at the end ("": none).
	Report string
	// Log receives the notes of a run as it goes (resuming from a
	// checkpoint); nil discards them.
	Log io.Writer
	// Started is when the job started (the input's reading included), for
	// the durations; zero means now.
	Started time.Time
}

// TableResult is what LoadTable did.
type TableResult struct {
	// AlreadyDone says the checkpoint records a finished load: nothing was
	// written.
	AlreadyDone bool
	Emit        EmitStats
	// Run is the write run; nil when it did not start.
	Run  *ddbwrite.RunResult
	Took time.Duration
}

// LoadTable writes the items of in into opts.Table, resumably: it creates
// or checks the table, takes up a checkpoint of the same input and flags,
// and writes the items with the writer (see Run). Ctrl-C (ctx) stops the
// reading; what was handed to the writer is acknowledged and checkpointed,
// and LoadTable returns ErrInterrupted with its result.
func LoadTable(ctx context.Context, in *Input, opts TableOptions) (*TableResult, error) {
	if opts.Started.IsZero() {
		opts.Started = time.Now()
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	l, table, emit := opts.Emit.Layout, opts.Table, opts.Emit
	spec := l.Table()
	if err := prepareTable(ctx, opts.Client, table, spec, opts.CreateTable, opts.Billing); err != nil {
		return nil, err
	}
	if !opts.CreateTable {
		// The table's own indexes on the user's attributes: every item is
		// checked against their keys before the first write.
		keys, err := TableIndexKeys(ctx, opts.Client, table, spec)
		if err != nil {
			return nil, err
		}
		problems, err := CheckIndexKeys(ctx, in, emit, keys, 100)
		if err != nil {
			return nil, err
		}
		if len(problems) > 0 {
			return nil, &IndexKeyError{Table: table, Problems: problems}
		}
	}

	var ck *ddbwrite.Checkpoint
	if opts.Checkpoint != "" {
		fp := opts.Fingerprint
		var err error
		if fp == "" {
			if fp, err = Fingerprint(in.Opts.Path, opts.Settings); err != nil {
				return nil, err
			}
		}
		ck, err = ddbwrite.LoadCheckpoint(opts.Checkpoint)
		switch {
		case errors.Is(err, os.ErrNotExist):
			ck = &ddbwrite.Checkpoint{Fingerprint: fp, Table: table, Layout: l.Name()}
		case err != nil:
			return nil, fmt.Errorf("%w: %w", ddbwrite.ErrUsage, err)
		default:
			if err := ck.Match(fp); err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ddbwrite.ErrUsage, opts.Checkpoint, err)
			}
			if ck.Done {
				return &TableResult{AlreadyDone: true, Took: time.Since(opts.Started)}, nil
			}
			fmt.Fprintf(log, "resuming from checkpoint %s: %d items acknowledged\n", opts.Checkpoint, ck.Watermark)
			if n := ck.Held(); n > 0 {
				fmt.Fprintf(log, "%d of them were held for a hot key and not written yet: they are written first (%s)\n", n, ddbwrite.HeldPath(opts.Checkpoint))
			}
			if n := ck.RedoneAtMost(); n > 0 {
				fmt.Fprintf(log, "the interrupted run had sent up to item %d: at most %d items are written again\n", max(ck.Sent, ck.Watermark), n)
			}
		}
		emit.Skip = ck.Watermark
	}

	total := layoutItems(in, l)
	if emit.Shard.Of > 1 {
		// Partition keys hash evenly: a fair estimate of this shard's part.
		total /= int64(emit.Shard.Of)
	}
	res := &TableResult{}
	run, err := ddbwrite.Run(ctx, ddbwrite.RunOptions{
		WriteOptions: opts.WriteOptions,
		Client:       opts.Client, Table: table, Spec: spec,
		// DynamoDB's own count of consumed capacity is only needed for the report.
		ConsumedCapacity: opts.Report != "",
		Checkpoint:       ck, CheckpointPath: opts.Checkpoint,
		Resume: emit.Skip > 0, Total: total,
	}, func(ctx context.Context, w *ddbwrite.DDBWriter, _ int64) error {
		var err error
		res.Emit, err = in.Emit(ctx, emit, func(seq int64, item layouts.Item) error {
			return w.Write(ctx, seq, item)
		})
		if err == nil && res.Emit.Items < emit.Skip {
			return WatermarkPastEnd(opts.Checkpoint, emit.Skip, res.Emit.Items, "items")
		}
		return err
	})
	res.Run = run
	res.Took = time.Since(opts.Started)
	if run == nil {
		return nil, err
	}
	if opts.Report != "" {
		if rerr := writeReport(opts.Report, l, table, res.Emit, run, res.Took); rerr != nil {
			return res, rerr
		}
	}
	return res, err
}

// WatermarkPastEnd is the error of a checkpoint at path whose watermark
// says more of what (items, operations) were written than the run has:
// taken as "all written", it would end the run with nothing written.
func WatermarkPastEnd(path string, watermark, have int64, what string) error {
	return fmt.Errorf("%w: checkpoint %s says %d %s were written, but this run has only %d: it is not this run's, or it was edited; nothing more was written. Delete it, and the files beside it (%s.*), to start over",
		ddbwrite.ErrUsage, path, watermark, what, have, filepath.Base(path))
}

// prepareTable creates the table or checks that the existing one has the
// layout's keys and indexes, before anything is written.
// CheckTableFirst is what can be known of a load's table before its input
// is read, so that a mistake in --table, --region or the layout is told
// at once, not after a pass over a billion records: a table that is not
// there without create (ddb.ErrTableNotFound, with the hint to create it),
// or one whose keys are not the layout's. Nothing is created here: a table
// to create is made once the input is read and found valid.
func CheckTableFirst(ctx context.Context, client *dynamodb.Client, table string, l layouts.Layout, create bool) error {
	err := ddbtable.CheckTable(ctx, client, table, l.Table())
	switch {
	case create && errors.Is(err, ddb.ErrTableNotFound):
		return nil
	case errors.Is(err, ddb.ErrTableNotFound):
		return fmt.Errorf("%w; to create it, add --create-table, or create it from the JSON `treeport schema` prints", err)
	}
	return err
}

func prepareTable(ctx context.Context, client *dynamodb.Client, table string, spec layouts.TableSpec, create bool, b ddbtable.Billing) error {
	if create {
		// An existing table is checked instead of created.
		return ddbtable.CreateTable(ctx, client, table, spec, b)
	}
	err := ddbtable.CheckTable(ctx, client, table, spec)
	if errors.Is(err, ddb.ErrTableNotFound) {
		return fmt.Errorf("%w; to create it, add --create-table, or create it from the JSON `treeport schema` prints", err)
	}
	return err
}

// layoutItems is how many items the load writes, for the progress bar's ETA.
func layoutItems(in *Input, l layouts.Layout) int64 {
	if in.ooc != nil {
		return in.ooc.Measure().Items
	}
	m := layouts.NewMeasure(l)
	var s transform.Stats
	f := in.Forest
	for _, i := range f.Order() {
		if !f.Rejected(int(i)) {
			f.Stats(int(i), &s)
			l.Measure(&s, m)
		}
	}
	return m.Items
}

// report is the --report file of a load into a table.
type report struct {
	Layout  string `json:"layout"`
	Table   string `json:"table"`
	Nodes   int64  `json:"nodes"`
	Skipped int64  `json:"items_skipped_from_checkpoint"`
	// Redone bounds the items written again that the run resumed from
	// may have written already (RunResult.RedoneAtMost).
	Redone int64          `json:"items_redone_at_most"`
	Reject int64          `json:"rejected_records"`
	Writer ddbwrite.Stats `json:"writer"`
	Total  float64        `json:"duration_seconds"`
}

func writeReport(path string, l layouts.Layout, table string, est EmitStats, run *ddbwrite.RunResult, d time.Duration) error {
	b, err := json.MarshalIndent(report{Layout: l.Name(), Table: table, Nodes: est.Nodes, Skipped: est.Skipped,
		Redone: run.RedoneAtMost, Reject: est.Rejected, Writer: run.Stats, Total: d.Seconds()}, "", "  ")
	if err != nil {
		return err
	}
	return statefile.WriteOutput(path, append(b, '\n')) // an output: the umask says who reads it
}
