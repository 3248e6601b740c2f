package refresh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/ddbtable"
	"github.com/treeport/treeport/internal/itemdigest"
	"github.com/treeport/treeport/internal/spill"
	"github.com/treeport/treeport/internal/streams"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/refresh/followstate"
	"github.com/treeport/treeport/transform"
)

// streamRetention is how long DynamoDB keeps a stream's records.
const streamRetention = 24 * time.Hour

// FollowOptions make Migrate follow its source's stream after the copy.
type FollowOptions struct {
	// Streams reads the source's stream.
	Streams streams.Client
	// EnableStream enables a stream on the source when it has none.
	EnableStream bool
	// Idle ends the follow once no record arrived for this long, and B is
	// verified then; 0 follows until ctx ends (ErrInterrupted).
	Idle time.Duration
	// Poll is the pause between two reads of the stream that found nothing
	// (1 s).
	Poll time.Duration
	// SaveEvery is how often the stream position is saved in the
	// checkpoint while records come (2 s); it is saved at the end too.
	SaveEvery time.Duration
	// LogEvery is how often a progress line goes to the log (5 s).
	LogEvery time.Duration
	// writing, when set (tests), says a writer of A is not done: the idle
	// time counts from the last poll that began while it still wrote, as
	// from a record, so that a slow writer on a loaded machine does not end
	// the follow between two of its changes.
	writing func() bool
}

// FollowResult is what following the stream did.
type FollowResult struct {
	// Resumed says the stream was taken up at a checkpoint's position.
	Resumed bool `json:"resumed"`
	// Records is the number of stream records applied; Rounds the number
	// of write runs they took; Puts and Deletes the items written.
	Records int64 `json:"records"`
	Rounds  int64 `json:"rounds"`
	Puts    int64 `json:"puts"`
	Deletes int64 `json:"deletes"`
	// Following is how long the stream was followed, after the copy;
	// RecordsPerSecond the records applied over it.
	Following        time.Duration `json:"following_ns"`
	RecordsPerSecond float64       `json:"records_per_second"`
	// Lag is how old the newest record applied was when B had it: how far
	// B was behind A at the end (0 when no record was applied).
	Lag time.Duration `json:"lag_ns"`
	// Held is the number of nodes whose change was held back at the end,
	// because A was not a valid tree there (see Invalid).
	Held int `json:"held_nodes"`
	// Invalid counts the invalid states of A that were reported.
	Invalid int64 `json:"invalid_reported"`
	// Backfills counts the copies of A: 1, or more when the stream's
	// position was lost (retention) and A was copied again.
	Backfills int `json:"backfills"`
	// DeadLettered is the items DynamoDB refused during the follow.
	DeadLettered int64 `json:"dead_lettered"`
	// Interrupted: ctx ended the follow (no verification).
	Interrupted bool `json:"interrupted"`
	// SourceInvalid: the verification found A not a valid tree (its
	// problems went to OnProblems), so B, which keeps the last valid state,
	// is not exact; MigrateResult.Verify is nil.
	SourceInvalid bool `json:"source_invalid"`
	// Saved says the stream position was saved in the checkpoint: the
	// follow had begun (a run stopped during the copy saves none).
	Saved bool `json:"position_saved"`
}

// The follow's checkpoint is followstate's (followstate.Checkpoint).
type followCheckpoint = followstate.Checkpoint

const followKind = followstate.CheckpointKind

var (
	settingsDigest       = followstate.SettingsDigest
	loadFollowCheckpoint = followstate.LoadCheckpoint
)

// held is a node whose change waits for A to be a valid tree again:
// cause is the node where A is not a valid tree (the node itself, or an
// ancestor), reason what is wrong there.
type held struct {
	cause, reason string
	// unfit: A is a valid tree, but B's layout cannot hold the cause's
	// items after the change (a key or an item over DynamoDB's limits).
	unfit bool
}

// follower applies a stream of A's records to B.
type follower struct {
	opts MigrateOptions
	fo   FollowOptions
	log  io.Writer
	// m is A's forest and applied B's nodes, in stores (see followstate),
	// which closeState removes with dir.
	m       *followstate.Mirror
	applied *followstate.Applied
	stores  []followstate.Store
	dir     *spill.Dir
	held    map[string]held
	res     *FollowResult
	rounds  int
	newest  time.Time
	lagAt   time.Duration
	// lim is the rate limiter of every round's writes: one rate, capped at
	// MaxWCU, for the whole follow, as for one import.
	lim *ddb.WriteLimiter
}

// where names a record, for reports: its sequence number, shard and keys.
func where(rec *streams.Record, spec layouts.TableSpec) string {
	if rec == nil {
		return "the copy"
	}
	return fmt.Sprintf("record %s (shard %s, %s, key %s)", rec.Seq, rec.Shard, rec.Event, ddb.KeyString(rec.Keys, spec.KeyNames()...))
}

// round applies one batch of records: to the mirror first, then the
// smallest set of B writes that takes every changed node (and the
// subtrees whose paths change with it) from B's state to A's, with the
// write engine (ddbwrite). Nodes that A leaves outside a valid tree keep their
// state in B and are held until A is valid again.
func (f *follower) round(ctx context.Context, recs []streams.Record) error {
	f.applied.NewRound()
	affected := f.affected(f.take(recs))
	changes, afterPaths, newHeld := f.changes(affected)
	if err := f.stateErr(); err != nil {
		return err
	}
	// A node whose items B's layout cannot hold after its change is held,
	// with the nodes of the round below it; the others go on.
	ops, changes, afterPaths, err := f.holdUnfit(ctx, changes, afterPaths, newHeld)
	if err != nil {
		return err
	}
	f.report(newHeld)
	f.m.Prune()
	// The paths B holds of the held nodes: their ancestors' changes do
	// not move them (see Applied.Pin).
	heldPaths := map[string]*followstate.Path{}
	for id := range newHeld {
		if p := f.applied.Path(id); p != nil {
			heldPaths[id] = p
		}
	}
	if err := f.stateErr(); err != nil {
		return err
	}
	f.held = newHeld
	if len(recs) > 0 {
		// Measured once the round's writes are acknowledged.
		defer func() { f.lagAt = max(time.Since(f.newest), 0) }()
	}
	if len(changes) == 0 {
		return nil
	}
	if len(ops) > 0 {
		if err := f.write(ctx, ops); err != nil {
			return err
		}
	}
	f.applyChanges(changes, afterPaths, heldPaths)
	return f.stateErr()
}

// applyChanges takes the round's changes, written, into B's nodes; B
// keeps the paths it had of the held nodes (heldPaths).
func (f *follower) applyChanges(changes []nodeChange, afterPaths []*followstate.Path, heldPaths map[string]*followstate.Path) {
	for _, c := range changes {
		if c.After.Path == nil {
			f.applied.Delete(c.ID)
			continue
		}
		f.applied.Put(c.ID, c.After.Parent, c.After.Attrs, f.m.Digest(c.After.Attrs), c.After.Inner)
	}
	f.applied.NewRound()
	for k, c := range changes {
		f.applied.Pin(c.ID, afterPaths[k])
	}
	for id, p := range heldPaths {
		f.applied.Pin(id, p)
	}
}

// take takes a round's records into A's model, and returns the nodes they
// touch, with the ones held before (dirty).
func (f *follower) take(recs []streams.Record) map[string]bool {
	dirty := map[string]bool{}
	for id := range f.held {
		dirty[id] = true
	}
	for k := range recs {
		rec := &recs[k]
		// The claim keeps where it came from, for reports, not the images.
		ref := &streams.Record{Shard: rec.Shard, Seq: rec.Seq, Event: rec.Event, Keys: rec.Keys, Created: rec.Created}
		ids, err := f.m.Item(itemdigest.KeyOf(f.m.Spec(), rec.Keys), rec.NewImage, ref)
		if err != nil && len(ids) == 0 {
			// A new item (a node's is held and reported as such).
			f.res.Invalid++
			fmt.Fprintf(f.log, "follow: %s: the item does not fit the %s layout (%v); it is not a node of A\n", where(rec, f.m.Spec()), f.m.Layout().Name(), err)
		}
		for _, id := range ids {
			dirty[id] = true
		}
		if rec.Created.After(f.newest) {
			f.newest = rec.Created
		}
	}
	f.res.Records += int64(len(recs))
	return dirty
}

// affected is what changed (dirty), and the subtrees a changed place drags
// along.
func (f *follower) affected(dirty map[string]bool) map[string]bool {
	affected := map[string]bool{}
	var queue []string
	for id := range dirty {
		affected[id] = true
		c, present, conflict := f.m.Target(id)
		a := f.applied.Get(id)
		if conflict || present != (a != nil) || (a != nil && c.Parent != a.Parent) {
			queue = append(queue, id)
		}
	}
	expanded := map[string]bool{}
	for _, id := range queue {
		expanded[id] = true
	}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		for _, c := range f.m.Children(id) {
			affected[c] = true
			if !expanded[c] {
				expanded[c] = true
				queue = append(queue, c)
			}
		}
	}
	return affected
}

// The states of a node in placement.check.
const (
	unknown = iota
	visiting
	valid
	invalid
)

// placement says which of a round's affected nodes A leaves in a valid
// tree, and their paths there. A node outside one is held, with the node
// that causes it (itself, or the ancestor where the trouble is) and why.
type placement struct {
	f        *follower
	affected map[string]bool
	state    map[string]int
	paths    map[string]*followstate.Path
	causes   map[string]held
}

func (f *follower) placement(affected map[string]bool) *placement {
	return &placement{f: f, affected: affected, state: map[string]int{}, paths: map[string]*followstate.Path{}, causes: map[string]held{}}
}

func (p *placement) fail(id, cause, reason string) bool {
	p.state[id], p.causes[id] = invalid, held{cause: cause, reason: reason}
	return false
}

// check says whether A leaves node id in a valid tree.
func (p *placement) check(id string) bool {
	f, state, paths, causes, affected := p.f, p.state, p.paths, p.causes, p.affected
	switch state[id] {
	case valid:
		return true
	case invalid:
		return false
	case visiting:
		return p.fail(id, id, fmt.Sprintf("node %q is its own ancestor (a cycle, as two racing moves make)", id))
	}
	if !affected[id] {
		path := f.applied.Path(id)
		if path == nil {
			return p.fail(id, id, fmt.Sprintf("node %q does not exist", id))
		}
		state[id], paths[id] = valid, path
		return true
	}
	c, present, conflict := f.m.Target(id)
	switch {
	case conflict && c.Bad != nil:
		return p.fail(id, id, fmt.Sprintf("the item of node %q does not fit the %s layout (%v)", id, f.m.Layout().Name(), c.Bad))
	case conflict:
		return p.fail(id, id, fmt.Sprintf("the items of node %q disagree on its parent or attributes", id))
	case !present:
		return p.fail(id, id, fmt.Sprintf("node %q does not exist", id))
	case c.Parent == "":
		state[id], paths[id] = valid, (*followstate.Path)(nil).Child(id)
		return true
	}
	state[id] = visiting
	if !p.check(c.Parent) {
		if state[id] == invalid { // the cycle came back to it
			return false
		}
		parent := c.Parent
		if _, there, _ := f.m.Target(parent); affected[parent] && !there || !affected[parent] && f.applied.Get(parent) == nil {
			return p.fail(id, id, fmt.Sprintf("the parent of node %q, %q, does not exist", id, parent))
		}
		return p.fail(id, causes[c.Parent].cause, causes[c.Parent].reason)
	}
	if state[id] == invalid {
		return false
	}
	state[id], paths[id] = valid, paths[c.Parent].Child(id)
	return true
}

// changes are the changes of the affected nodes that A leaves in a valid
// tree, by id, with their paths after the change; the others are held
// (newHeld).
func (f *follower) changes(affected map[string]bool) (changes []nodeChange, afterPaths []*followstate.Path, newHeld map[string]held) {
	pl := f.placement(affected)
	ids := make([]string, 0, len(affected))
	for id := range affected {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	newHeld = map[string]held{}
	for _, id := range ids {
		a := f.applied.Get(id)
		c, present, _ := f.m.Target(id)
		var after nodeSide
		var path *followstate.Path // after's
		if !present {
			if kids := f.m.Children(id); len(kids) > 0 {
				newHeld[id] = held{cause: id, reason: fmt.Sprintf("node %q was removed while %s still name it as their parent", id, strings.Join(quoteAll(kids, 5), ", "))}
				continue
			}
		} else if !pl.check(id) {
			newHeld[id] = pl.causes[id]
			continue
		} else {
			after, path = nodeSide{Parent: c.Parent, Inner: f.m.HasChildren(id)}, pl.paths[id]
		}
		var before nodeSide
		if a != nil {
			aPath := f.applied.Path(id)
			if path != nil && a.Parent == after.Parent && a.Digest == c.Digest && aPath.Equal(path) && (a.Inner == after.Inner || !layouts.ImplicitInner(f.opts.Layout)) {
				continue
			}
			before = nodeSide{Parent: a.Parent, Attrs: f.applied.Attrs(a), Path: aPath.IDs(), Inner: a.Inner}
		} else if path == nil {
			continue
		}
		if path != nil {
			after.Attrs = f.m.Attrs(c)
		}
		after.Path = path.IDs()
		changes = append(changes, nodeChange{ID: id, Before: before, After: after})
		afterPaths = append(afterPaths, path)
	}
	return changes, afterPaths, newHeld
}

// holdUnfit returns the operations of changes: a node whose items B's
// layout cannot hold after its change is held (in newHeld), with the
// nodes of the round below it, and the changes and their paths that go on
// are returned with the operations.
func (f *follower) holdUnfit(ctx context.Context, changes []nodeChange, afterPaths []*followstate.Path, newHeld map[string]held) ([]Op, []nodeChange, []*followstate.Path, error) {
	var ops []Op
	for len(changes) > 0 {
		var err error
		ops, err = diffItems(f.opts.Layout, changes)
		var ne *nodeItemError
		if !errors.As(err, &ne) || ne.Before {
			// (A node whose items as B holds them cannot be built is no
			// change to hold back: it stops the follow.)
			if err != nil {
				return nil, nil, nil, err
			}
			// B's items under the keys the writes reach: one that is
			// not B's tree's (another entity's, or one that does not
			// read) is never written over or deleted; its node is held.
			op, item, why, err := badTarget(ctx, f.opts.Client, f.opts.Table, f.opts.Layout, ops)
			if err != nil {
				return nil, nil, nil, err
			}
			if op == nil {
				break
			}
			ne = &nodeItemError{ID: op.ID, Err: fmt.Errorf("%s's item %s %v, which treeport never changes or deletes", f.opts.Table, ddb.KeyString(item, f.opts.Layout.Table().KeyNames()...), why)}
		}
		h := held{cause: ne.ID, reason: fmt.Sprintf("%s cannot hold node %q after the change (%v)", f.opts.Table, ne.ID, ne.Err), unfit: true}
		kept, keptPaths := changes[:0], afterPaths[:0]
		for k, c := range changes {
			if c.ID == ne.ID || slices.Contains(c.After.Path, ne.ID) {
				newHeld[c.ID] = h
				continue
			}
			kept, keptPaths = append(kept, c), append(keptPaths, afterPaths[k])
		}
		if len(kept) == len(changes) {
			return nil, nil, nil, fmt.Errorf("refresh: node %q: %v", ne.ID, ne.Err)
		}
		changes, afterPaths = kept, keptPaths
	}
	return ops, changes, afterPaths, nil
}

// report tells the log of every new reason to hold nodes, once per cause,
// with the newest record that made the cause's state.
func (f *follower) report(newHeld map[string]held) {
	type group struct {
		h     held
		nodes int
	}
	groups := map[held]*group{}
	var order []held
	for id, h := range newHeld {
		if old, ok := f.held[id]; ok && old == h {
			continue
		}
		g := groups[h]
		if g == nil {
			g = &group{h: h}
			groups[h] = g
			order = append(order, h)
		}
		g.nodes++
	}
	slices.SortFunc(order, func(a, b held) int { return strings.Compare(a.cause+a.reason, b.cause+b.reason) })
	for _, h := range order {
		f.res.Invalid++
		// The newest record among the cause's items, the removal of the
		// cause, and the removal of a parent they name.
		var rec *streams.Record
		newer := func(r *streams.Record) {
			if r != nil && (rec == nil || seqLess(rec.Seq, r.Seq)) {
				rec = r
			}
		}
		newer(f.m.Gone(h.cause))
		for _, c := range f.m.Claims(h.cause) {
			newer(f.m.Record(c))
			newer(f.m.Gone(c.Parent))
		}
		if h.unfit {
			fmt.Fprintf(f.log, "follow: B cannot hold A's state at %s: %s; %s keeps the last state of node %q and its subtree until A changes there (%s held)\n",
				where(rec, f.m.Spec()), h.reason, f.opts.Table, h.cause, countOf(groups[h].nodes, "node"))
			continue
		}
		fmt.Fprintf(f.log, "follow: A is not a valid tree at %s: %s; %s keeps the last valid state of node %q and its subtree until A is valid again (%s held)\n",
			where(rec, f.m.Spec()), h.reason, f.opts.Table, h.cause, countOf(groups[h].nodes, "node"))
	}
}

// seqLess orders two sequence numbers of a stream (decimal strings).
func seqLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

func quoteAll(ids []string, max int) []string {
	out := make([]string, 0, min(len(ids), max+1))
	for i, id := range ids {
		if i == max {
			out = append(out, fmt.Sprintf("and %d more", len(ids)-max))
			break
		}
		out = append(out, fmt.Sprintf("%q", id))
	}
	return out
}

// write writes one round's operations with the write engine, and waits for
// all of them: the next round's writes of the same keys come after.
func (f *follower) write(ctx context.Context, ops []Op) error {
	o := f.opts
	if f.lim == nil {
		f.lim = ddb.NewWriteLimiter(o.MaxWCU, o.Concurrency)
	}
	wo := o.WriteOptions
	wo.OnProgress = nil // a round is reported by its log line
	run, err := ddbwrite.Run(ctx, ddbwrite.RunOptions{
		WriteOptions: wo,
		Client:       o.Client, Table: o.Table, Spec: o.Layout.Table(), Limiter: f.lim,
		// The copy's writes opened the dead-letter file: the rounds add to it.
		Resume: true,
		Total:  int64(len(ops)),
	}, func(ctx context.Context, w *ddbwrite.DDBWriter, _ int64) error {
		return sendOps(ctx, w, ops)
	})
	f.rounds++
	f.res.Rounds++
	if run != nil {
		f.res.DeadLettered += run.Stats.DeadLettered
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", o.Table, err)
	}
	for _, op := range ops {
		if op.Kind == Put {
			f.res.Puts++
		} else {
			f.res.Deletes++
		}
	}
	return nil
}

// lag is how old the newest record applied was when its writes were
// acknowledged: how far B is behind A. A follower that waits for records
// is not behind, so the lag does not grow while the stream is quiet.
// DynamoDB gives a record's time to the second.
func (f *follower) lag() time.Duration { return f.lagAt }

// migrateFollow is Migrate with Follow: stream position, copy, follow,
// verify.
func migrateFollow(ctx context.Context, opts MigrateOptions) (*MigrateResult, error) {
	fo := *opts.Follow
	if fo.Poll <= 0 {
		fo.Poll = time.Second
	}
	if fo.SaveEvery <= 0 {
		fo.SaveEvery = 2 * time.Second
	}
	if fo.LogEvery <= 0 {
		fo.LogEvery = 5 * time.Second
	}
	log := opts.Log
	if opts.Shard.Of > 1 {
		return nil, fmt.Errorf("%w: --follow does not take --shard: one follower applies the whole stream", ddbwrite.ErrUsage)
	}
	lookup := func() (streams.Info, error) {
		info, err := streams.Lookup(ctx, opts.Client, opts.From)
		if errors.Is(err, streams.ErrNoStream) && fo.EnableStream {
			if info, err = streams.Enable(ctx, opts.Client, fo.Streams, opts.From, 2*time.Minute); err == nil {
				fmt.Fprintf(log, "enabled a NEW_AND_OLD_IMAGES stream on %s: %s\n", opts.From, info.ARN)
			}
		}
		return info, err
	}
	info, err := lookup()
	if errors.Is(err, streams.ErrNoStream) {
		return nil, fmt.Errorf("%w: --follow reads the source's stream: %v", ddbwrite.ErrUsage, err)
	}
	if err != nil {
		return nil, err
	}

	// The checkpoint holds the stream's position. The copy is not taken
	// up from a plan: a rerun copies again, and writes only what B lacks.
	ckPath := opts.Checkpoint
	opts.Checkpoint = ""
	ck := &followCheckpoint{Kind: followKind, From: opts.From, To: opts.Table, Settings: settingsDigest(opts.Settings)}
	saved, err := loadFollowCheckpoint(ckPath, ck)
	if err != nil {
		return nil, err
	}
	res := &MigrateResult{Follow: &FollowResult{}}
	var reader *streams.Reader
	if saved != nil {
		age := time.Since(saved.SavedAt)
		if age > streamRetention {
			fmt.Fprintf(log, "the stream position in %s was saved %s ago, past the stream's 24 h retention: copying %s again from a new position\n",
				ckPath, age.Round(time.Minute), opts.From)
		} else if reader, err = streams.NewReader(fo.Streams, info.ARN, &saved.Position); errors.Is(err, streams.ErrTrimmed) {
			fmt.Fprintf(log, "the stream position in %s cannot be used (%v): copying %s again from a new position\n", ckPath, err, opts.From)
			reader = nil
		} else if err != nil {
			return nil, err
		} else {
			res.Follow.Resumed = true
			ck.Records = saved.Records
			fmt.Fprintf(log, "resuming the stream of %s from checkpoint %s (saved %s ago, %s applied before); %s and %s are read again and only their differences written\n",
				opts.From, ckPath, age.Round(time.Second), units.Count(saved.Records, "record"), opts.From, opts.Table)
		}
	}
	// The copy reads A (and B) with consistent reads: a change made just
	// before the stream position is not in the stream, so an eventually
	// consistent Scan that missed it would leave B behind for good. It
	// costs the copy's Scan twice the RCU.
	opts.Scan.ConsistentRead = true
	f := &follower{opts: opts, fo: fo, log: log, res: res.Follow}
	defer f.closeState()
	for created := false; ; {
		if reader == nil {
			if reader, err = streams.NewReader(fo.Streams, info.ARN, nil); err != nil {
				return res, err
			}
			// The position comes before the copy: a change made while the
			// copy reads is in the stream after it.
			if err := reader.Mark(ctx); err != nil {
				return res, fmt.Errorf("reading the stream of %s: %w", opts.From, err)
			}
		}
		// B is created after the position is taken, while it is kept:
		// A's changes meanwhile are in the stream too.
		create := func() error {
			if !opts.CreateTable || created {
				return nil
			}
			created = true
			return ddbtable.CreateTable(ctx, opts.Client, opts.Table, opts.Layout.Table(), opts.Billing)
		}
		if err := f.copy(ctx, reader, res, create); err != nil {
			return res, err
		}
		err = f.follow(ctx, reader, ck, ckPath)
		if errors.Is(err, streams.ErrTrimmed) {
			fmt.Fprintf(log, "the stream lost the follower's position (%v): copying %s again from a new position\n", err, opts.From)
			// The table's stream now: another one, if it was replaced.
			if info, err = lookup(); err != nil {
				return res, fmt.Errorf("following %s: %w", opts.From, err)
			}
			reader = nil
			continue
		}
		if err != nil {
			return res, err
		}
		break
	}
	res.Follow.Held = len(f.held)
	res.Follow.Lag = f.lag()
	if res.Follow.Interrupted {
		res.Took = time.Since(opts.Started)
		return res, ddbwrite.ErrInterrupted
	}
	fmt.Fprintf(log, "follow: idle for %s after %s: verifying %s against %s (consistent reads)\n", fo.Idle, units.Count(res.Follow.Records, "record"), opts.Table, opts.From)
	res.Verify, err = verifySource(ctx, opts)
	if errors.Is(err, errSourceInvalid) {
		// The verification's answer (B is not exact), not a failure.
		res.Follow.SourceInvalid, err = true, nil
	}
	res.Took = time.Since(opts.Started)
	return res, err
}

// errSourceInvalid is verifySource's answer when A is not a valid tree.
var errSourceInvalid = errors.New("refresh: the source is not a valid tree")

// copy runs prepare, then copies A into B (a diff against what B holds),
// while the reader's marked positions are kept alive, and seeds the
// follower with the copy.
// A copy that catches A between two states that are not a valid tree (a
// Scan is not a point in time) is taken again, a few times.
func (f *follower) copy(ctx context.Context, reader *streams.Reader, res *MigrateResult, prepare func() error) error {
	kctx, stop := context.WithCancel(ctx)
	kept := make(chan error, 1)
	go func() { kept <- reader.Keep(kctx, time.Second) }()
	defer func() {
		stop()
		<-kept
	}()
	if err := prepare(); err != nil {
		return err
	}
	f.res.Backfills++
	for attempt := 1; ; attempt++ {
		err := f.copyOnce(ctx, res)
		if errors.Is(err, importer.ErrInvalid) && attempt < 3 {
			fmt.Fprintf(f.log, "the copy of %s read it while it was not a valid tree (%v); reading it again\n", f.opts.From, err)
			continue
		}
		if err != nil {
			return err
		}
		stop()
		if err := <-kept; err != nil {
			kept <- nil
			return fmt.Errorf("keeping the stream position of %s: %w", f.opts.From, err)
		}
		kept <- nil
		return nil
	}
}

// follow applies the stream until ctx ends or it stays idle for fo.Idle.
// Each poll's records are applied, and written, before the next poll; the
// position is saved only past records whose writes were acknowledged.
func (f *follower) follow(ctx context.Context, reader *streams.Reader, ck *followCheckpoint, path string) error {
	// The records in hand are finished even on Ctrl-C.
	wctx := context.WithoutCancel(ctx)
	base := ck.Records - f.res.Records
	save := func() error {
		ck.Position = reader.Position()
		ck.Records = base + f.res.Records
		if err := ck.Save(path); err != nil {
			return fmt.Errorf("saving the stream position: %w", err)
		}
		f.res.Saved = path != ""
		return nil
	}
	if err := save(); err != nil {
		return err
	}
	all, _ := reader.Shards()
	fmt.Fprintf(f.log, "following the stream of %s (%s) into %s\n", f.opts.From, units.Count(int64(all), "shard"), f.opts.Table)
	started, startRecords := time.Now(), f.res.Records
	last, lastSave, lastLog := time.Now(), time.Now(), time.Now()
	progress := func() {
		all, done := reader.Shards()
		rate := float64(f.res.Records-startRecords) / max(time.Since(started).Seconds(), 1e-3)
		line := fmt.Sprintf("follow: %s applied (%.1f/s), lag %s, %s and %s in %s, %s (%s closed and read)",
			units.Count(f.res.Records, "record"), rate, f.lag().Round(time.Millisecond), units.Count(f.res.Puts, "put"), units.Count(f.res.Deletes, "delete"),
			f.opts.Table, units.Count(int64(all), "shard"), units.Thousands(int64(done)))
		if len(f.held) > 0 {
			line += fmt.Sprintf(", %s held (A not a valid tree there)", units.Count(int64(len(f.held)), "node"))
		}
		if n := f.res.DeadLettered; n > 0 {
			line += fmt.Sprintf(", %s refused by DynamoDB (dead letters in %s)", units.Count(n, "item"), f.opts.DeadLetter)
		}
		fmt.Fprintln(f.log, line)
		lastLog = time.Now()
	}
	defer func() {
		f.res.Following += time.Since(started)
		if secs := f.res.Following.Seconds(); secs > 0 {
			f.res.RecordsPerSecond = float64(f.res.Records) / secs
		}
	}()
	for {
		if ctx.Err() != nil {
			f.res.Interrupted = true
			progress()
			return save()
		}
		if f.fo.writing != nil && f.fo.writing() {
			last = time.Now()
		}
		recs, err := reader.Poll(wctx)
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			if time.Since(lastLog) >= f.fo.LogEvery {
				progress()
			}
			if f.fo.Idle > 0 && time.Since(last) >= f.fo.Idle {
				progress()
				return save()
			}
			if len(f.held) > 0 {
				// Nothing new, but held nodes are looked at again.
				if err := f.round(wctx, nil); err != nil {
					return err
				}
			}
			pause(ctx, f.fo.Poll)
			continue
		}
		last = time.Now()
		if err := f.round(wctx, recs); err != nil {
			return err
		}
		if time.Since(lastSave) >= f.fo.SaveEvery {
			if err := save(); err != nil {
				return err
			}
			lastSave = time.Now()
		}
		if time.Since(lastLog) >= f.fo.LogEvery {
			progress()
		}
	}
}

func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// verifySource reads A again with consistent reads and plans B against it:
// no changes when B is exact. A that is not a valid tree is
// errSourceInvalid, its problems passed to OnProblems as A's (not the
// temporary snapshot's), or an item that does not read as a node told to
// Log.
func verifySource(ctx context.Context, opts MigrateOptions) (*Summary, error) {
	dir, err := os.MkdirTemp(opts.Input.OutOfCore.Dir(), "treeport-verify-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	snap := dir + "/source.ddb.json"
	scan := opts.Scan
	scan.ConsistentRead = true
	read, err := exporter.Export(ctx, exporter.ExportOptions{
		Layout: opts.FromLayout, Client: opts.Client, Table: opts.From, Scan: scan, Out: snap,
		Writer:    records.WriterOptions{Format: records.FormatDDBJSON, IDField: migrateIDField, ParentField: migrateParentField},
		OutOfCore: exportBudget(opts.Input.OutOfCore),
	})
	if err != nil {
		if errors.Is(err, layouts.ErrItem) {
			// An item of A that does not read as a node: A is not a
			// valid tree there.
			fmt.Fprintf(opts.Log, "verifying: %v\n", err)
			return nil, errSourceInvalid
		}
		return nil, fmt.Errorf("verifying: reading %s: %w", opts.From, err)
	}
	t := opts.Target
	t.Scan = scan
	var invalid bool
	onProblems := func(problems []*transform.RowError, more int) {
		invalid = true
		if opts.OnProblems == nil {
			return
		}
		out := make([]*transform.RowError, len(problems))
		for i, p := range problems {
			q := *p
			q.File, q.Line, q.Unit = "table "+opts.From, 0, ""
			out[i] = &q
		}
		opts.OnProblems(out, more)
	}
	j := &job{Target: t, onProblems: onProblems, input: importer.InputOptions{Path: snap, ClosureCopy: opts.Input.ClosureCopy, MaxProblems: opts.Input.MaxProblems, OutOfCore: opts.Input.OutOfCore,
		Source:   records.SourceOptions{Format: "ddbjson", IDField: migrateIDField, ParentField: migrateParentField},
		SizeHint: int(min(read.Nodes, math.MaxInt32))}}
	defer j.closeOOC()
	if err := j.read(ctx); err != nil {
		if invalid && errors.Is(err, importer.ErrInvalid) {
			return nil, errSourceInvalid
		}
		return nil, fmt.Errorf("verifying %s: %w", opts.Table, err)
	}
	s, err := j.plan(ctx, func(Op) error { return nil })
	if err != nil {
		return nil, fmt.Errorf("verifying %s: %w", opts.Table, err)
	}
	return s, nil
}
