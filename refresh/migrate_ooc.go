package refresh

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

// migrateOutOfCore reports whether the source's forest is copied out of
// core: the budget of opts.Input.OutOfCore (one that does not refuse) is
// smaller than the source's items (DescribeTable's ItemCount, which
// DynamoDB updates about every six hours) would take in memory, or the
// passes are forced. An item is counted as a node: a closure or prefix
// source goes out of core sooner than it must, never later.
func migrateOutOfCore(ctx context.Context, opts MigrateOptions) (bool, error) {
	o := opts.Input.OutOfCore
	if o == nil || o.Refuse != "" {
		return false, nil
	}
	if o.Force {
		return true, nil
	}
	if o.Memory <= 0 {
		return false, nil
	}
	out, err := opts.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(opts.From)})
	if err != nil {
		return false, fmt.Errorf("source: %w", err)
	}
	return aws.ToInt64(out.Table.ItemCount)*importer.InMemoryNodeBytes > o.Memory, nil
}

// migrateOOC is Migrate for a source whose forest does not fit the
// budget. The source's nodes are spilled as they are scanned, in no
// order, to a DynamoDB JSON file in --tmp-dir (exporter.SpillNodes), and
// that file is imported into the destination by the out-of-core passes
// (importer.LoadTable), with the import's checkpoint.
//
// An empty destination (or one a run with the same checkpoint wrote)
// is not read as a plan would read it: its items are then only ever
// put, never deleted, and each put is of an item this copy owns: the one
// the same node's items of the in-memory migrate would be. The copy is
// verified by content (verifyContent): the destination's items (this
// shard's), read with consistent reads, against the items the layout
// wants, key by key and digest by digest. A destination that holds items is
// refreshed by a plan out of core (migrateOOCRefresh).
//
// With follow (migrate --follow's copy), each page of the source's items is
// handed to it as the spill reads it, and the copy is not verified: the
// follow verifies B at its end.
func migrateOOC(ctx context.Context, opts MigrateOptions, follow func([]layouts.Item) error) (*MigrateResult, error) {
	o := opts.Input.OutOfCore
	resume, refreshing := false, false
	if opts.Checkpoint != "" {
		ck, err := ddbwrite.LoadCheckpoint(opts.Checkpoint)
		if _, serr := os.Stat(opts.Checkpoint); serr == nil && (err != nil || !ck.Done) {
			// Unfinished (or unreadable: the load says why). A finished
			// one starts afresh, as apply does: a destination that holds
			// the copy is then refreshed, and the plan finds what changed.
			resume = true
			// An apply's checkpoint keeps its plan beside it: the run
			// it goes on from refreshed a destination that held items.
			_, err := os.Stat(opts.Checkpoint + ".plan.json")
			refreshing = err == nil
		}
	}
	if !resume {
		empty, err := destinationEmpty(ctx, opts)
		if err != nil {
			return nil, err
		}
		refreshing = !empty
	}
	need, items, err := migrateRoom(ctx, opts, refreshing)
	if err != nil {
		return nil, err
	}
	sd, err := o.SpillDir("migrate", "migrate out of core", need, "table "+opts.From)
	if err != nil {
		return nil, err
	}
	defer sd.Close()
	dir, tmp := sd.Path, filepath.Dir(sd.Path)
	snap := filepath.Join(dir, "source.ddb.json")
	res := &MigrateResult{}
	scan := opts.Scan
	if scan.Memory == 0 {
		scan.Memory = exporter.PagesMemory(o.Memory)
	}
	scan.OnPage = func(st exporter.Stats) {
		total := items // ItemCount: an estimate, none once passed
		if st.Items > total {
			total = -1
		}
		o.Phase("reading the source (items)", st.Items, total)
	}
	scan.OnItems = follow
	spill, err := exporter.SpillNodes(ctx, opts.Client, opts.From, opts.FromLayout, scan, snap,
		records.WriterOptions{Format: records.FormatDDBJSON, IDField: migrateIDField, ParentField: migrateParentField}, int(max(o.Memory/4, 1<<20)))
	res.Source = exporter.ExportStats{Nodes: spill.Nodes, Read: spill.Read, Format: records.FormatDDBJSON}
	if err != nil {
		return res, fmt.Errorf("reading %s: %w", opts.From, err)
	}
	fmt.Fprintf(opts.Log, "read %s (%s layout): %s, spilled to %s out of core; %s\n", opts.From, opts.FromLayout.Name(), units.Count(spill.Nodes, "node"), tmp, spill.Read)

	input := importer.InputOptions{Path: snap, ClosureCopy: opts.Input.ClosureCopy, MaxProblems: opts.Input.MaxProblems, OutOfCore: o,
		Source: records.SourceOptions{Format: "ddbjson", IDField: migrateIDField, ParentField: migrateParentField}}
	onProblems := func(problems []*transform.RowError, more int) {
		if opts.OnProblems != nil {
			out := make([]*transform.RowError, len(problems))
			for i, p := range problems {
				q := *p
				q.File, q.Line, q.Unit = "table "+opts.From, 0, ""
				out[i] = &q
			}
			opts.OnProblems(out, more)
		}
	}
	if refreshing {
		return migrateOOCRefresh(ctx, opts, input, onProblems, res, follow == nil)
	}
	in, err := importer.ReadInput(ctx, input)
	if err != nil {
		return res, err
	}
	defer in.Close()
	if problems := in.CheckLayout(opts.Layout); len(problems) > 0 {
		onProblems(problems, in.MoreProblems())
		return res, fmt.Errorf("%w: %s in table %s; nothing was written", importer.ErrInvalid, countOf(len(problems)+in.MoreProblems(), "problem"), opts.From)
	}
	fp, err := migrateFingerprint(opts.Settings, spill.Digest)
	if err != nil {
		return res, err
	}
	if opts.Checkpoint != "" && !resume {
		// Saved before the first write: a run killed before the writer's
		// first save finds it, and resumes (writes again) rather than
		// refusing a destination it wrote itself.
		ck := &ddbwrite.Checkpoint{Fingerprint: fp, Table: opts.Table, Layout: opts.Layout.Name()}
		if err := ck.Save(opts.Checkpoint); err != nil {
			return res, err
		}
	}
	lt, err := importer.LoadTable(ctx, in, importer.TableOptions{
		Client: opts.Client, Table: opts.Table, Emit: importer.EmitOptions{Layout: opts.Layout, Shard: opts.Shard},
		Checkpoint: opts.Checkpoint, Fingerprint: fp, WriteOptions: opts.WriteOptions, Log: opts.Log, Started: opts.Started,
	})
	res.Apply = oocApplyResult(opts, lt, resume)
	if err != nil {
		return res, err
	}
	if !lt.AlreadyDone && follow == nil {
		res.Verify, err = verifyContent(ctx, opts, in, dir, res.Apply.Summary)
		if err != nil {
			return res, fmt.Errorf("verifying %s: %w", opts.Table, err)
		}
	}
	res.Took = time.Since(opts.Started)
	return res, nil
}

// migrateRoom is about the most migrate out of core holds in --tmp-dir
// at once: the source's nodes spilled as DynamoDB JSON (twice the
// source's size, DescribeTable's TableSizeBytes), the import's passes
// over that file (importer.SpillBytes: five times it), and into a
// destination that holds items, the plan's sorts (planRoom).
// It returns the source's ItemCount too.
func migrateRoom(ctx context.Context, opts MigrateOptions, refreshing bool) (need, items int64, _ error) {
	size := func(table string) (int64, int64, error) {
		out, err := opts.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			return 0, 0, err
		}
		return aws.ToInt64(out.Table.TableSizeBytes), aws.ToInt64(out.Table.ItemCount), nil
	}
	from, items, err := size(opts.From)
	if err != nil {
		return 0, 0, fmt.Errorf("source: %w", err)
	}
	need = 2*from + 5*(2*from) + 1<<20
	if refreshing {
		to, _, err := size(opts.Table)
		if err != nil {
			return 0, 0, fmt.Errorf("destination: %w", err)
		}
		need += to + 2*max(to, 2*from)
	}
	return need, items, nil
}

// migrateFingerprint ties a checkpoint to the flags and to the source's
// records, whatever the order its Scan gave them in.
func migrateFingerprint(settings map[string]any, digest string) (string, error) {
	b, err := json.Marshal(settings)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(b)
	h.Write([]byte("\x00out-of-core migrate\x00" + digest))
	return hex.EncodeToString(h.Sum(nil)), nil
}

// destinationEmpty says whether the destination holds no item: an
// out-of-core migrate then only puts, through the out-of-core import;
// into one that holds items it plans out of core, as apply does
// (migrateOOCRefresh).
func destinationEmpty(ctx context.Context, opts MigrateOptions) (bool, error) {
	out, err := opts.Client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(opts.Table), Limit: aws.Int32(1), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return false, fmt.Errorf("destination: %w", err)
	}
	return len(out.Items) == 0 && out.LastEvaluatedKey == nil, nil
}

// migrateOOCRefresh is migrateOOC into a destination that holds items:
// the spilled source is the snapshot of an apply planned out of core
// (the destination read into external sorts, never a map of it), with
// apply's guard, checkpoint and safety (SPEC §9: an item that does not
// read as a node is never put over or deleted), then verified as the
// in-memory migrate verifies: the destination read again, with
// consistent reads, and planned against the source out of core.
func migrateOOCRefresh(ctx context.Context, opts MigrateOptions, input importer.InputOptions, onProblems func([]*transform.RowError, int), res *MigrateResult, verify bool) (*MigrateResult, error) {
	o := *input.OutOfCore
	o.Force = true
	input.OutOfCore = &o
	j := &job{Target: opts.Target, input: input, onProblems: onProblems, from: "table " + opts.From}
	defer j.closeOOC()
	var err error
	res.Apply, err = apply(ctx, j, opts.ApplyOptions)
	if err != nil || !verify {
		res.Took = time.Since(opts.Started)
		return res, err
	}
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

// oocApplyResult is what the out-of-core copy did, as a plan of puts of
// new nodes into an empty table.
func oocApplyResult(opts MigrateOptions, lt *importer.TableResult, resumed bool) *ApplyResult {
	if lt == nil {
		return nil
	}
	s := &Summary{Table: opts.Table, Layout: opts.Layout.Name(), Shard: opts.Shard.String(), ByReason: map[Reason]*Count{}}
	for _, r := range Reasons {
		s.ByReason[r] = &Count{}
	}
	nodes := lt.Emit.Nodes
	s.SnapshotNodes, s.SnapshotItems = nodes, lt.Emit.Items
	s.ByReason[ReasonNew].Nodes, s.ByReason[ReasonNew].Puts = nodes, lt.Emit.Items
	if lt.Run != nil {
		s.ByReason[ReasonNew].WCU = lt.Run.Stats.ComputedWCU
	}
	s.Total = *s.ByReason[ReasonNew]
	return &ApplyResult{Summary: s, Resumed: resumed, Run: lt.Run, Took: lt.Took}
}
