package refresh

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/itemdigest"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/refresh/followstate"
)

// copyOnce copies A into B once and seeds the follower's state with the
// copy: in memory (migrateCopy, the state from the snapshot's forest) when
// A's forest fits --memory, else out of core (migrateOOC, the state from
// the copy's own Scan of A, kept in stores that spill to --tmp-dir).
func (f *follower) copyOnce(ctx context.Context, res *MigrateResult) error {
	ooc, err := migrateOutOfCore(ctx, f.opts)
	if err != nil {
		return err
	}
	if !ooc {
		opts := f.opts
		if o := opts.Input.OutOfCore; o != nil && o.Refuse == "" {
			// As Migrate's copy in memory: a source larger than its
			// ItemCount said is refused, not read past the budget.
			c := *o
			c.Refuse = fmt.Sprintf("migrate --follow copied %s in memory, as its ItemCount (which DynamoDB updates about every six hours) fits --memory %s, but its forest does not: run it again once ItemCount is current, or give a larger --memory",
				opts.From, units.SizeText(o.Memory))
			opts.Input.OutOfCore = &c
		}
		j, cleanup, err := migrateCopy(ctx, opts, res)
		defer cleanup()
		f.countDeadLetters(res)
		if err != nil {
			return err
		}
		return f.seed(ctx, j.in)
	}
	if err := f.newState(ctx, true); err != nil {
		return err
	}
	spec, l := f.m.Spec(), f.opts.FromLayout
	mirror := func(items []layouts.Item) error {
		for _, it := range items {
			if l.IsNode(layouts.MapView(it)) {
				// An item that does not read as a node is the copy's to
				// report: it stops it.
				_, _ = f.m.Item(itemdigest.KeyOf(spec, it), it, nil)
			}
		}
		return f.stateErr()
	}
	opts := f.opts
	o := *opts.Input.OutOfCore
	if o.Memory > 0 {
		o.Memory = max(o.Memory-f.stateMemory(), o.Memory/2)
	}
	opts.Input.OutOfCore = &o
	r, err := migrateOOC(ctx, opts, mirror)
	if r != nil {
		res.Source, res.Apply = r.Source, r.Apply
	}
	f.countDeadLetters(res)
	if err != nil {
		return err
	}
	// B holds the copy: the nodes of the mirror.
	f.m.Nodes(func(c *followstate.Claim, inner bool) { f.applied.PutClaim(c, inner) })
	return f.stateErr()
}

func (f *follower) countDeadLetters(res *MigrateResult) {
	if res.Apply != nil && res.Apply.Run != nil {
		f.res.DeadLettered += res.Apply.Run.Stats.DeadLettered
	}
}

// seed builds the mirror and B's state from the copy's snapshot read in
// memory: what B holds after the copy is the snapshot's layout.
func (f *follower) seed(ctx context.Context, in *importer.Input) error {
	if err := f.newState(ctx, false); err != nil {
		return err
	}
	spec := f.m.Spec()
	_, err := in.EmitAttrs(ctx, importer.EmitOptions{Layout: f.opts.FromLayout}, func(_ int64, attrs []layouts.Attr) error {
		if !f.opts.FromLayout.IsNode(layouts.AttrsView(attrs)) {
			return nil
		}
		item := layouts.ItemOf(attrs)
		_, err := f.m.Item(itemdigest.KeyOf(spec, item), item, nil)
		return err
	})
	if err != nil {
		return err
	}
	forest := in.Forest
	for _, i32 := range forest.Order() {
		i := int(i32)
		id := forest.ID(i)
		c, ok, _ := f.m.Target(id)
		if !ok {
			return fmt.Errorf("refresh: node %q of the copy has no node item in %s's layout", id, f.opts.From)
		}
		f.applied.PutClaim(c, forest.HasChildren(i))
	}
	return f.stateErr()
}

// stateMemory is the part of --memory the follower's stores hold before
// they spill, out of core: a quarter (an eighth each), the rest the
// copy's passes'.
func (f *follower) stateMemory() int64 {
	return max(f.opts.Input.OutOfCore.Memory/4, 2<<20)
}

// newState gives the follower an empty state (a copy's seed replaces the
// last one's): in stores that never spill, or, out of core, in stores
// that spill to a directory of --tmp-dir, whose room is checked first
// (about three times A's size: its items' claims, by key and by id, and
// B's nodes).
func (f *follower) newState(ctx context.Context, ooc bool) error {
	f.closeState()
	dirs, memory := []string{"", ""}, int64(0)
	if ooc {
		o := f.opts.Input.OutOfCore
		out, err := f.opts.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(f.opts.From)})
		if err != nil {
			return fmt.Errorf("source: %w", err)
		}
		sd, err := o.SpillDir("follow", "migrate --follow's state", 3*aws.ToInt64(out.Table.TableSizeBytes)+1<<20, "table "+f.opts.From)
		if err != nil {
			return err
		}
		f.dir = sd
		dirs = []string{filepath.Join(sd.Path, "source"), filepath.Join(sd.Path, "destination")}
		for _, d := range dirs {
			if err := os.Mkdir(d, 0o700); err != nil {
				return err
			}
		}
		memory = f.stateMemory() / 2
	}
	for _, d := range dirs {
		s, err := newKVStore(d, memory)
		if err != nil {
			return err
		}
		f.stores = append(f.stores, s)
	}
	f.m, f.applied = followstate.New(f.opts.FromLayout, f.stores[0], f.stores[1])
	f.m.Parents = layouts.ImplicitInner(f.opts.Layout)
	f.held = map[string]held{}
	return nil
}

// closeState removes the follower's state, and its directory.
func (f *follower) closeState() {
	for _, s := range f.stores {
		s.Close()
	}
	f.stores = nil
	if f.dir != nil {
		f.dir.Close()
		f.dir = nil
	}
}

// stateErr is the first error of the follower's stores: what the state
// said after it is not to be trusted, and nothing it decided is written.
func (f *follower) stateErr() error {
	for _, err := range []error{f.m.Err(), f.applied.Err()} {
		if err != nil {
			return fmt.Errorf("refresh: the follower's state: %w", err)
		}
	}
	return nil
}
