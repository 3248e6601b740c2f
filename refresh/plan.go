// Package refresh makes a DynamoDB table equal to a snapshot with the fewest
// writes: it plans (compares every item the snapshot's layout wants with the
// items the table holds, by key and by value), applies plans with treeport's
// writer, and turns tree edits (move, delete, set) into item writes.
//
// A plan works item by item, so it is the smallest set of writes and deletes
// for any change, whatever its cause: an item is written only when the table
// lacks it or holds another value under its key, and deleted only when the
// snapshot does not want its key. A moved subtree thus rewrites, in the path
// layouts, the subtree's Path, Depth and TreeId or GraphId; in closure, the
// rows that link the subtree to its ancestors (rows whose key stays are
// overwritten, rows past the new depth deleted, new ones put); in prefix,
// the subtree's object and listing rows under their new keys; in
// adjacency, the moved node's item alone (its ParentId).
package refresh

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/itemdigest"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// OpKind is what an operation does to one item.
type OpKind string

// The kinds of operation.
const (
	Put    OpKind = "put"    // write the whole item
	Delete OpKind = "delete" // delete the item with this key
)

// Reason says why an item is written or deleted, by what happened to the
// node it belongs to.
type Reason string

// The reasons, in the order summaries list them.
const (
	ReasonNew     Reason = "new"     // the node is not in the table
	ReasonRemoved Reason = "removed" // the node is not in the snapshot
	ReasonMoved   Reason = "moved"   // the node, or one of its ancestors, has another parent
	ReasonChanged Reason = "changed" // the node's attributes changed
	// ReasonRepair: the node is the same in both, but the table's item is
	// not what the layout writes for it (written by hand, or by another
	// tool, or left half-way by a run that was killed without a
	// checkpoint).
	ReasonRepair Reason = "repair"
)

// Reasons lists every Reason in summary order.
var Reasons = []Reason{ReasonNew, ReasonRemoved, ReasonMoved, ReasonChanged, ReasonRepair}

// Op is one operation of a plan: a put of a whole item, or a delete of a key.
type Op struct {
	Kind   OpKind
	Reason Reason
	// ID is the node the item belongs to.
	ID string
	// Item is the whole item for a put, its key attributes for a delete.
	Item layouts.Item
	// WCU is what the operation costs as DynamoDB bills it: one unit per
	// started KB of the item (written, or deleted; a put over an item at
	// the larger of the two) for the table, and for each index it touches
	// per started KB of the copy the index keeps (layouts.ReplaceUnits).
	WCU int
	// After, on a delete of a moved node's item under --shard k/N, are
	// the node's new items that other copies put (a prefix move changes
	// a node's keys, and so its partitions): the delete is not sent
	// before the table holds them (waitForOtherShards).
	After []layouts.Item
}

// Count is what a plan does for one reason.
type Count struct {
	// Nodes is the number of nodes concerned (for moved: the nodes of the
	// moved subtrees).
	Nodes   int64 `json:"nodes"`
	Puts    int64 `json:"puts"`
	Deletes int64 `json:"deletes"`
	WCU     int64 `json:"wcu"`
}

// Summary is what a plan does, counted.
type Summary struct {
	Table         string `json:"table"`
	Layout        string `json:"layout"`
	Shard         string `json:"shard,omitempty"`
	TableNodes    int64  `json:"table_nodes"`
	SnapshotNodes int64  `json:"snapshot_nodes"`
	// TableItems is the number of the layout's items in the table (every
	// shard's); TableOtherItems those of a table model's table's other
	// entities (items without its type field), which a plan leaves alone.
	TableItems int64 `json:"table_items"`
	// TableShardItems, under --shard, is every item of the table this
	// shard owns, of any kind: the plan's deletes are this shard's, and
	// are weighed against it.
	TableShardItems int64 `json:"table_shard_items,omitempty"`
	TableOtherItems int64 `json:"table_other_items"`
	// TableUnreadable is the number of items that are not foreign but do
	// not read as part of a node (Table.Unparsable), left alone with
	// --ignore-unparsable; UnreadableKeys names the first few.
	TableUnreadable int64    `json:"table_unreadable_items"`
	UnreadableKeys  []string `json:"unreadable_keys,omitempty"`
	// SnapshotItems is the number of items the snapshot's layout wants
	// (this shard's).
	SnapshotItems int64 `json:"snapshot_items"`
	// MovedSubtrees is the number of nodes whose own parent changed: the
	// roots of the moved subtrees (Reasons[moved].Nodes counts their nodes).
	MovedSubtrees int64 `json:"moved_subtrees"`
	// ChangedNodes is the number of nodes in both whose attributes changed,
	// moved or not.
	ChangedNodes int64 `json:"changed_nodes"`
	// Unchanged is the number of nodes that need no write.
	Unchanged int64 `json:"unchanged_nodes"`
	// ByReason counts the operations by reason.
	ByReason map[Reason]*Count `json:"by_reason"`
	// Total counts every operation; its Nodes are the nodes the plan
	// changes, each once (new, removed, moved or with changed
	// attributes). Repairs rewrite items, not nodes. Under --shard, new,
	// removed and moved nodes are the whole tree's (every shard classifies
	// the whole tree) and changed ones this shard's: the shards' totals
	// do not add up to the whole plan's.
	Total Count `json:"total"`
}

// DeleteRatio is the part of the table the plan deletes: the larger of
// the part of its nodes it removes and the part of all its items (the
// layout's, the other entities' and the unreadable ones) it deletes, for
// whatever reason. A move's deletes count too: a snapshot that lost its
// parent column keeps every node but moves each to a root of its own, and
// on a closure table that deletes every ancestor row (78 of a 13-node
// chain's 91 items), which is the damage the guard is there to stop. A
// large restructuring that is meant says so with --allow-mass-delete or
// a higher --max-delete-ratio.
func (s *Summary) DeleteRatio() float64 {
	r := 0.0
	if s.TableNodes > 0 {
		r = float64(s.ByReason[ReasonRemoved].Nodes) / float64(s.TableNodes)
	}
	if all := s.deleteBase(); all > 0 {
		r = max(r, float64(s.DeletedItems())/float64(all))
	}
	return r
}

// DeletedItems is the number of items the plan deletes, for removed nodes
// and for moved or repaired ones alike (the deletes DeleteRatio counts).
func (s *Summary) DeletedItems() int64 { return s.Total.Deletes }

// DeleteText says what the plan deletes, in nodes and in items, against
// what the table holds: "removes 3 of the table's 40 nodes (deletes 6 of
// its 80 items)"; the items count every delete, a move's too.
func (s *Summary) DeleteText() string {
	if s.Shard != "" {
		return fmt.Sprintf("removes %d of the table's %d nodes (deletes %d of the %d items of shard %s)",
			s.ByReason[ReasonRemoved].Nodes, s.TableNodes, s.DeletedItems(), s.deleteBase(), s.Shard)
	}
	return fmt.Sprintf("removes %d of the table's %d nodes (deletes %d of its %d items)",
		s.ByReason[ReasonRemoved].Nodes, s.TableNodes, s.DeletedItems(), s.TableAllItems())
}

// deleteBase is what DeletedItems is weighed against: every item of the
// table, or under --shard every item of this shard (a shard deletes only
// its own share of a removal).
func (s *Summary) deleteBase() int64 {
	if s.Shard != "" {
		return s.TableShardItems
	}
	return s.TableAllItems()
}

// TableAllItems is every item the table holds: the layout's, the other
// entities' and the unreadable ones.
func (s *Summary) TableAllItems() int64 { return s.TableItems + s.TableOtherItems + s.TableUnreadable }

// Changes is the number of operations.
func (s *Summary) Changes() int64 { return s.Total.Puts + s.Total.Deletes }

// Options say what to plan.
type Options struct {
	// Input is the snapshot, read and checked against Layout (no problems
	// left: a plan never runs on an input with rejected nodes, since it
	// would delete them from the table).
	Input  *importer.Input
	Layout layouts.Layout
	// Table is the table as ReadTable read it, with the same Layout and
	// Shard.
	Table *Table
	Shard ddbwrite.Shard
}

// Plan compares the snapshot with the table and calls fn with each
// operation that makes the table equal to the snapshot: first the puts, in
// the snapshot's order, then the deletes, in key order (so that a moved node
// is never missing from the table while the plan is applied). Structure is
// classified before any item is built, so Summary's node counts are known
// when the first operation is passed on; the summary is returned complete.
// An error from fn stops the plan.
func Plan(ctx context.Context, opts Options, fn func(Op) error) (*Summary, error) {
	in, l, t := opts.Input, opts.Layout, opts.Table
	if t.layout.Name() != l.Name() {
		return nil, fmt.Errorf("refresh: the table was read as %s, the plan is for %s", t.layout.Name(), l.Name())
	}
	if n := in.Forest.RejectedCount(); n > 0 {
		return nil, fmt.Errorf("refresh: the snapshot has %d rejected nodes; a plan needs a valid snapshot, or it would delete them", n)
	}
	f := in.Forest
	s := &Summary{
		Table: t.Name, Layout: l.Name(), Shard: opts.Shard.String(),
		TableNodes: int64(len(t.nodes)), SnapshotNodes: int64(f.Len()), TableItems: t.Items, TableShardItems: t.ShardItems,
		TableOtherItems: t.OtherItems, TableUnreadable: t.Unparsable, UnreadableKeys: t.UnparsableKeys,
		ByReason: map[Reason]*Count{},
	}
	for _, r := range Reasons {
		s.ByReason[r] = &Count{}
	}
	inTable, moved := planStructure(opts, s)
	changedInPlace, err := planPuts(ctx, opts, s, inTable, moved, fn)
	if err != nil {
		return nil, err
	}
	if err := planDeletes(ctx, opts, s, moved, fn); err != nil {
		return nil, err
	}
	// Forget what this plan saw, so that the table can be planned again.
	for i := range t.entries {
		t.entries[i].seen = false
	}
	s.Unchanged = s.SnapshotNodes - s.ByReason[ReasonNew].Nodes - s.ByReason[ReasonMoved].Nodes - changedInPlace
	// Every node the plan changes, once: a moved node whose attributes
	// changed too is counted under both reasons.
	s.Total.Nodes = s.SnapshotNodes - s.Unchanged + s.ByReason[ReasonRemoved].Nodes
	return s, nil
}

// planStructure is the first step of Plan: structure, before any item is
// built. It says which of the snapshot's nodes the table holds, and which
// sit in a moved subtree, and counts the new, moved and removed nodes in s.
func planStructure(opts Options, s *Summary) (inTable, moved []bool) {
	f, t := opts.Input.Forest, opts.Table
	// Which nodes are new, and which sit in a moved subtree (parents come
	// before children in Order).
	inTable = make([]bool, f.Len())
	moved = make([]bool, f.Len())
	for _, i32 := range f.Order() {
		i := int(i32)
		tn, ok := t.nodes[f.ID(i)]
		if !ok {
			s.ByReason[ReasonNew].Nodes++
			continue
		}
		inTable[i] = true
		parent := ""
		if p := f.Parent(i); p >= 0 {
			parent = f.ID(p)
		}
		switch {
		case tn.parent != parent:
			moved[i] = true
			s.MovedSubtrees++
		case f.Parent(i) >= 0 && moved[f.Parent(i)]:
			moved[i] = true
		}
		if moved[i] {
			s.ByReason[ReasonMoved].Nodes++
		}
	}
	for id := range t.nodes {
		if f.Lookup(id) < 0 {
			s.ByReason[ReasonRemoved].Nodes++
		}
	}
	return inTable, moved
}

// planPuts is the second step of Plan: every item the snapshot wants,
// compared with the table's, and a put of each that differs, passed to fn.
// It counts the puts and the changed nodes in s, and returns how many of
// the changed nodes did not move.
func planPuts(ctx context.Context, opts Options, s *Summary, inTable, moved []bool, fn func(Op) error) (changedInPlace int64, _ error) {
	in, l, t, f := opts.Input, opts.Layout, opts.Table, opts.Input.Forest
	var (
		d          itemdigest.Digester
		cur        = -1 // the node whose items are being emitted
		curKnown   bool // its node item was seen (a shard may not own it)
		curChanged bool
		changed    int64
		keyBuf     []byte
		sigs       []uint64
	)
	spec := l.Table()
	reserved := l.Reserved()
	es, err := in.EmitAttrs(ctx, importer.EmitOptions{Layout: l, Shard: opts.Shard}, func(_ int64, attrs []layouts.Attr) error {
		item := itemdigest.FlatView(attrs)
		view := layouts.AttrsView(attrs)
		id := t.layout.Owner(view)
		// A node's items come together, and the nodes in the forest's
		// order: the node is most often the last one or the next.
		i := cur
		if i < 0 || f.ID(i) != id {
			if i+1 < f.Len() && f.ID(i+1) == id {
				i++
			} else {
				i = f.Lookup(id)
			}
		}
		if i != cur {
			cur, curKnown, curChanged = i, false, false
		}
		digest, user := d.FlatAndAttrs(attrs, reserved)
		if i >= 0 && inTable[i] && t.layout.IsNode(view) {
			curKnown = true
			curChanged = user != t.nodes[id].attrs
			if curChanged {
				changed++
				if !moved[i] {
					changedInPlace++
				}
			}
		}
		keyBuf = itemdigest.AppendKey(keyBuf[:0], spec, item)
		old := int32(-1)
		if k, ok := t.items[string(keyBuf)]; ok {
			ti := &t.entries[k]
			ti.seen = true
			if ti.digest == digest {
				return nil
			}
			old = k
		}
		var reason Reason
		switch {
		case i < 0 || !inTable[i]:
			reason = ReasonNew
		case moved[i]:
			reason = ReasonMoved
		case curChanged || !curKnown:
			// Without the node item (another shard's), an item that
			// differs most likely carries changed attributes.
			reason = ReasonChanged
		default:
			reason = ReasonRepair
		}
		// The attributes are EmitAttrs' memory: the operation gets a copy.
		put := layouts.ItemOf(attrs)
		if what, ok := t.Unreadable(put); ok {
			return invalidf("node %q: its item %s would overwrite the table's item under that key, which %s; treeport never changes such an item: move or delete it, or fix the %s; nothing was written",
				id, ddb.KeyString(put, spec.KeyNames()...), what, layoutWord(l))
		}
		wcu := layouts.WriteUnits(spec, put)
		if old >= 0 {
			// A put over the table's item: priced as DynamoDB bills it.
			oldSigs := t.sigs[int(old)*t.stride : int(old+1)*t.stride]
			oldUnits := t.units(int(old))
			sigs = indexSigs(&d, spec, put, sigs[:0])
			size := transform.ItemSize(put)
			wcu = layouts.ReplaceUnitsBy(spec, transform.WCU(int(t.entries[old].size)), transform.WCU(size), func(i int) (layouts.IndexChange, int, int) {
				return indexChange(spec, oldSigs, sigs, i), int(oldUnits[i]), layouts.IndexUnits(spec, spec.Indexes[i], put, size)
			})
		}
		op := Op{Kind: Put, Reason: reason, ID: strings.Clone(id), Item: put, WCU: wcu}
		s.Add(op)
		return fn(op)
	})
	if err != nil {
		return 0, err
	}
	s.SnapshotItems = es.Items
	s.ChangedNodes = changed
	s.ByReason[ReasonChanged].Nodes = changed
	return changedInPlace, nil
}

// planDeletes is the last step of Plan: a delete of each item the table
// holds and the snapshot does not want (the ones planPuts did not see),
// passed to fn and counted in s.
func planDeletes(ctx context.Context, opts Options, s *Summary, moved []bool, fn func(Op) error) error {
	t, f, spec := opts.Table, opts.Input.Forest, opts.Layout.Table()
	// A node's own items go last, so that a run stopped half-way leaves
	// every row it did not delete with its node (a row without its node
	// does not read, and would stop the next plan).
	var gone, goneNodes []string
	for k, i := range t.items {
		if e := t.entries[i]; !e.seen {
			if e.node {
				goneNodes = append(goneNodes, k)
			} else {
				gone = append(gone, k)
			}
		}
	}
	slices.Sort(gone)
	slices.Sort(goneNodes)
	after, err := otherShardsItems(ctx, opts, t, moved, append(gone, goneNodes...))
	if err != nil {
		return err
	}
	for _, k := range append(gone, goneNodes...) {
		if err := ctx.Err(); err != nil {
			return err
		}
		ti := t.entries[t.items[k]]
		wcu := transform.WCU(int(ti.size))
		for _, u := range t.units(int(t.items[k])) {
			wcu += int(u)
		}
		key, err := itemdigest.DecodeKey(spec, k)
		if err != nil {
			return err
		}
		id := t.layout.Owner(layouts.MapView(key))
		if _, read := t.nodes[id]; id != "" && !read && f.Lookup(id) < 0 {
			// A row of no node the table holds nor the snapshot
			// wants (a prefix listing row with no object row and
			// nothing below, another writer's): never read as part
			// of a node, so never deleted (SPEC §9).
			continue
		}
		reason := ReasonRepair
		switch i := f.Lookup(id); {
		case id == "":
		case i < 0:
			reason = ReasonRemoved
		case moved[i]:
			reason = ReasonMoved
		}
		op := Op{Kind: Delete, Reason: reason, ID: id, Item: key, WCU: wcu}
		if reason == ReasonMoved {
			op.After = after[id]
		}
		s.Add(op)
		if err := fn(op); err != nil {
			return err
		}
	}
	return nil
}

// Add counts one more operation.
func (s *Summary) Add(op Op) {
	c := s.ByReason[op.Reason]
	if op.Kind == Put {
		c.Puts++
		s.Total.Puts++
	} else {
		c.Deletes++
		s.Total.Deletes++
	}
	c.WCU += int64(op.WCU)
	s.Total.WCU += int64(op.WCU)
}

// otherShardsItems is, under --shard k/N, for each moved node of which the
// plan deletes items (gone, keys as keyOf gives them), the node's new
// items that other copies own: a move that changes a node's keys (the
// prefix layout's) puts its new items in partitions of other copies, and
// the old ones may go only once those are in the table. Without a shard,
// or without such deletes, it is nil and costs nothing.
func otherShardsItems(ctx context.Context, opts Options, t *Table, moved []bool, gone []string) (map[string][]layouts.Item, error) {
	if opts.Shard.Of <= 1 {
		return nil, nil
	}
	f, spec := opts.Input.Forest, opts.Layout.Table()
	ids := map[string]bool{}
	for _, k := range gone {
		key, err := itemdigest.DecodeKey(spec, k)
		if err != nil {
			return nil, err
		}
		if i := f.Lookup(t.layout.Owner(layouts.MapView(key))); i >= 0 && moved[i] {
			ids[f.ID(i)] = true
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	after := map[string][]layouts.Item{}
	_, err := opts.Input.EmitAttrs(ctx, importer.EmitOptions{Layout: opts.Layout}, func(_ int64, attrs []layouts.Attr) error {
		item := layouts.ItemOf(attrs)
		if opts.Shard.OwnsValue(item[spec.PK.Name]) {
			return nil // this copy's own put, acknowledged before any delete
		}
		if id := t.layout.Owner(layouts.AttrsView(attrs)); ids[id] {
			// The id is EmitAttrs' memory: the map keeps a copy.
			id = strings.Clone(id)
			after[id] = append(after[id], item)
		}
		return nil
	})
	return after, err
}
