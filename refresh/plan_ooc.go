package refresh

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/internal/itemdigest"
	"github.com/treeport/treeport/internal/spill"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// TableItemBytes is what an item of the table costs a plan in memory
// (Table: its key in a map, its digest, size, index signatures and units,
// and its node's entry), with a margin: a table whose ItemCount times it
// is over --memory is planned out of core.
const TableItemBytes = 160

// planOutOfCore says whether the job plans out of core: its snapshot's
// OutOfCore is set and does not refuse, and the snapshot does not fit the
// budget (as ReadInput guesses), or the table does not (DescribeTable's
// ItemCount times TableItemBytes), or the passes are forced.
func (j *job) planOutOfCore(ctx context.Context) (bool, error) {
	o := j.input.OutOfCore
	if o == nil || o.Refuse != "" {
		return false, nil
	}
	ooc := importer.ReadsOutOfCore(j.input)
	if !ooc && o.Memory > 0 {
		out, err := j.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(j.Table)})
		if err != nil {
			return false, err
		}
		ooc = aws.ToInt64(out.Table.ItemCount)*TableItemBytes > o.Memory
	}
	return ooc, nil
}

// OutOfCoreNote is what plan and apply say of a plan made out of core
// (PlanTableResult.OutOfCore; apply writes it to its Log).
const OutOfCoreNote = "planned out of core: the snapshot or the table does not fit --memory (sorted runs in --tmp-dir, removed)"

// planRoom is about the most a plan out of core holds in --tmp-dir at
// once: the snapshot's passes (importer.SpillBytes, five times its size),
// the table's sorts (its size: keys and digests) and the items twice (the
// sort by key and the operations' spools), as many as the larger of the
// table and the snapshot hold.
func planRoom(snapshot string, tableBytes int64) int64 {
	passes := importer.SpillBytes(snapshot)
	return passes + tableBytes + 2*max(tableBytes, passes/5)
}

// oocJob is what a job planned out of core holds between read and plan:
// the temporary directory, the budget of each sort and the table's sorts.
type oocJob struct {
	dir   string
	spill *spill.Dir
	// tableItems is DescribeTable's ItemCount: the progress's total.
	tableItems int64
	budget     int
	table      *oocTable
}

// close removes what the plan out of core left: its sorts, its directory
// and the snapshot's passes' files.
func (j *job) closeOOC() {
	if j.ooc == nil {
		return
	}
	j.ooc.table.close()
	j.ooc.spill.Close()
	if j.in != nil {
		j.in.Close()
	}
	j.ooc = nil
}

// readOOC is read for a plan out of core: the snapshot through the
// out-of-core passes (forced), then the table into external sorts
// (scanTableOOC), one after the other so that their budgets do not add
// up.
func (j *job) readOOC(ctx context.Context) error {
	j.closeOOC()
	o := *j.input.OutOfCore
	o.Force, o.Layout = true, j.Layout
	// The room is asked before the first pass, of the snapshot's passes
	// and the plan's sorts together; the table's size is DescribeTable's
	// (updated about every six hours), 0 for a table not there yet.
	var tableBytes, tableItems int64
	if out, err := j.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(j.Table)}); err == nil {
		tableBytes = aws.ToInt64(out.Table.TableSizeBytes)
		tableItems = aws.ToInt64(out.Table.ItemCount)
	}
	dir, err := o.SpillDir("plan", "the plan out of core", planRoom(j.input.Path, tableBytes), j.input.Path+" and table "+j.Table)
	if err != nil {
		return err
	}
	// An eighth of the budget a sort: up to five hold their buffers at
	// once (the table's two, the snapshot's two and the one being
	// filled), beside the merges' buffers and a Scan's pages.
	j.ooc = &oocJob{dir: dir.Path, spill: dir, tableItems: tableItems, budget: int(max(o.Memory/8, 1<<20))}
	input := j.input
	input.OutOfCore = &o
	in, err := importer.ReadInput(ctx, input)
	if err != nil {
		return err
	}
	j.in = in
	if problems := in.CheckLayout(j.Layout); len(problems) > 0 {
		if j.onProblems != nil {
			j.onProblems(problems, in.MoreProblems())
		}
		return fmt.Errorf("%w: %s in %s; nothing was planned or written (a refresh needs a valid snapshot: skipping a node would delete it)",
			importer.ErrInvalid, countOf(len(problems)+in.MoreProblems(), "problem"), cmp.Or(j.from, j.input.Path))
	}
	if j.keys, err = importer.TableIndexKeys(ctx, j.Client, j.Table, j.Layout.Table()); err != nil {
		return err
	}
	scan := j.Scan
	if scan.Memory == 0 {
		scan.Memory = exporter.PagesMemory(int64(j.ooc.budget) * 8)
	}
	j.t, j.ooc.table, err = scanTableOOC(ctx, ReadTableOptions{Client: j.Client, Table: j.Table, Layout: j.Layout, Shard: j.Shard, Scan: scan,
		IgnoreUnparsable: j.IgnoreUnparsable}, dir.Path, j.ooc.budget,
		func(n int64) {
			total := j.ooc.tableItems
			if n > total {
				total = -1
			}
			o.Phase("reading the table (items)", n, total)
		})
	return err
}

// oocPlan is a plan out of core: the same operations and summary as Plan,
// from sorted passes over files instead of the forest and Table's maps.
//
//  1. the snapshot is emitted once: each item to a sort by key (its
//     digest, owner, pricing and the item itself), each node to a sort by
//     id (parent, depth, a digest of its attributes);
//  2. structure: the snapshot's nodes merge-joined by id with the table's
//     give the new, removed and changed nodes and the roots of moved
//     subtrees; the rest of a moved subtree is found a level at a time
//     (each level's nodes, sorted by parent, joined with the level above's
//     moved ids);
//  3. items: the two sorts by key merge-joined give the puts and deletes,
//     priced as planPuts and planDeletes price them, to a sort by owner;
//  4. reasons: that sort joined with the nodes' classes gives each
//     operation its reason, to three spools (puts, deletes, a node's own
//     deletes last) replayed in that order.
type oocPlan struct {
	ctx    context.Context
	o      *importer.OutOfCore // its Phase: the progress
	dir    string
	budget int
	l      layouts.Layout
	spec   layouts.TableSpec
	s      *Summary
	t      *Table
	ot     *oocTable
	shard  ddbwrite.Shard
	// gone and after are otherShards' spools (under --shard, when a moved
	// node's items are deleted); lastGone is the last owner in gone.
	gone, after *extsort.Spool
	lastGone    []byte
	// changedInPlace counts the changed nodes that did not move.
	changedInPlace int64
}

func (p *oocPlan) sorter() *extsort.Sorter {
	s := newFirstSorter(p.dir, p.budget)
	s.OnSpill = func(n int64) { p.o.Phase("sorting (bytes spilled)", n, -1) }
	return s
}

// tick tells the progress how far a pass is, n of total records (an
// estimate: none once passed), and returns the context's error: the
// passes call it every 4,096 records, so Ctrl-C stops them at once.
func (p *oocPlan) tick(pass string, n int, total int64) error {
	if int64(n) > total {
		total = -1
	}
	p.o.Phase(pass, int64(n), total)
	return p.ctx.Err()
}

// planOOC is Plan for a job read by readOOC.
func (j *job) planOOC(ctx context.Context, fn func(Op) error) (*Summary, error) {
	if j.ooc == nil || j.ooc.table == nil {
		return nil, fmt.Errorf("refresh: the plan out of core was read already: read it again")
	}
	defer func() {
		j.ooc.table.close()
		j.ooc.table = nil
	}()
	in, l, t := j.in, j.Layout, j.t
	if n := in.RejectedCount(); n > 0 {
		return nil, fmt.Errorf("refresh: the snapshot has %d rejected nodes; a plan needs a valid snapshot, or it would delete them", n)
	}
	s := &Summary{
		Table: t.Name, Layout: l.Name(), Shard: j.Shard.String(), TableItems: t.Items, TableShardItems: t.ShardItems, TableOtherItems: t.OtherItems,
		TableUnreadable: t.Unparsable, UnreadableKeys: t.UnparsableKeys, ByReason: map[Reason]*Count{},
	}
	for _, r := range Reasons {
		s.ByReason[r] = &Count{}
	}
	p := &oocPlan{ctx: ctx, o: j.input.OutOfCore, dir: j.ooc.dir, budget: j.ooc.budget, l: l, spec: l.Table(), s: s, t: t, ot: j.ooc.table, shard: j.Shard}
	defer func() {
		for _, sp := range []*extsort.Spool{p.gone, p.after} {
			if sp != nil {
				sp.Close()
			}
		}
	}()
	items, nodes := p.sorter(), p.sorter()
	defer items.Close()
	defer nodes.Close()
	if err := p.emitSnapshot(in, items, nodes); err != nil {
		return nil, err
	}
	class, moved, err := p.structure(nodes)
	if class != nil {
		defer class.Close()
	}
	if moved != nil {
		defer moved.Close()
	}
	if err != nil {
		return nil, err
	}
	ops := p.sorter()
	defer ops.Close()
	if err := p.items(items, ops); err != nil {
		return nil, err
	}
	spools, err := p.reasons(ops, class, moved)
	for _, sp := range spools {
		defer sp.Close()
	}
	if err == nil {
		err = p.otherShards(in)
	}
	if err != nil {
		return nil, err
	}
	s.Unchanged = s.SnapshotNodes - s.ByReason[ReasonNew].Nodes - s.ByReason[ReasonMoved].Nodes - p.changedInPlace
	s.Total.Nodes = s.SnapshotNodes - s.Unchanged + s.ByReason[ReasonRemoved].Nodes
	return s, p.replay(spools, fn)
}

// emitSnapshot is the first pass: the snapshot's items to the sort items,
// by key, its nodes to the sort nodes, by id. An item's record holds its key, digest,
// owner, whether its node's own item came before it (planPuts' curKnown),
// what a put of it costs as a new item, its size, index signatures and
// units (to price a put over the table's item) and the item as DynamoDB
// JSON. A node's record holds its id, parent, depth, whether its node
// item came, and the digest of its attributes.
func (p *oocPlan) emitSnapshot(in *importer.Input, items, nodes *extsort.Sorter) error {
	l, spec, reserved := p.l, p.spec, p.l.Reserved()
	var (
		d        itemdigest.Digester
		e, ne    extsort.Enc
		keyBuf   []byte
		sigs     []uint64
		curOwner string
		curKnown bool
		emitted  int
		pend     struct {
			id, parent string
			depth      int
			has, open  bool
			user       uint64
		}
	)
	flush := func() error {
		if !pend.open {
			return nil
		}
		pend.open = false
		ne.Reset()
		ne.S(pend.id)
		ne.S(pend.parent)
		ne.I(pend.depth)
		ne.Flag(flagOf(pend.has))
		ne.U(pend.user)
		return nodes.Add(ne.B)
	}
	// Under --shard, every node but only this copy's items (its node
	// item too: a node whose node item another copy owns is not known
	// changed, as in planPuts).
	es, err := in.EmitAttrs(p.ctx, importer.EmitOptions{Layout: l, Shard: p.shard, Node: func(id, parent string, depth int) error {
		if err := flush(); err != nil {
			return err
		}
		pend.id, pend.parent, pend.depth, pend.has, pend.open, pend.user = strings.Clone(id), strings.Clone(parent), depth, false, true, 0
		if emitted++; emitted&4095 == 0 {
			return p.tick("emitting the snapshot's items (nodes)", emitted, -1)
		}
		return nil
	}}, func(_ int64, attrs []layouts.Attr) error {
		view := layouts.AttrsView(attrs)
		id := l.Owner(view)
		if id != curOwner {
			curOwner, curKnown = strings.Clone(id), false
		}
		digest, user := d.FlatAndAttrs(attrs, reserved)
		if l.IsNode(view) {
			curKnown = true
			if pend.open && pend.id == id {
				pend.has, pend.user = true, user
			}
		}
		put := layouts.ItemOf(attrs)
		size := transform.ItemSize(put)
		keyBuf = itemdigest.AppendKey(keyBuf[:0], spec, itemdigest.FlatView(attrs))
		e.Reset()
		e.Bs(keyBuf)
		e.U(digest)
		e.S(id)
		e.Flag(flagOf(curKnown))
		e.I(layouts.WriteUnits(spec, put))
		e.I(size)
		sigs = indexSigs(&d, spec, put, sigs[:0])
		for _, s := range sigs {
			e.U(s)
		}
		for _, ix := range spec.Indexes {
			e.I(layouts.IndexUnits(spec, ix, put, size))
		}
		e.Bs(ddbjson.AppendItem(nil, put))
		return items.Add(e.B)
	})
	if err == nil {
		err = flush()
	}
	p.s.SnapshotNodes, p.s.SnapshotItems = es.Nodes, es.Items
	return err
}

// The bits of a node's class (oocPlan.structure).
const (
	classInTable = 1 << iota // the table holds the node
	classInSnap              // the snapshot holds it
	classChanged             // both, and its attributes changed
)

// snapNode and tableNodeRec are the records of the two sorts by id.
type snapNode struct {
	id, parent string
	depth      int
	has        bool
	user       uint64
}

func (n *snapNode) decode(rec []byte) {
	d := extsort.Dec{B: rec}
	n.id, n.parent, n.depth = d.S(), d.S(), d.I()
	n.has = d.Flag() == 1
	n.user = d.U()
}

type tableNodeRec struct {
	id, parent string
	attrs      uint64
}

// structure is the second pass: the snapshot's nodes joined by id with the
// table's. It counts the new, removed and changed nodes, the table's
// nodes and the moved subtrees' roots in s, and returns every node's
// class in id order (a spool of id and class bits) and, when a subtree
// moved, the ids of the moved nodes, sorted (propagate).
func (p *oocPlan) structure(snap *extsort.Sorter) (class *extsort.Spool, moved *extsort.Sorter, err error) {
	si, err := snap.Sort()
	if err != nil {
		return nil, nil, err
	}
	defer si.Close()
	ti, err := p.ot.nodes.Sort()
	if err != nil {
		return nil, nil, err
	}
	defer ti.Close()
	class, err = extsort.NewSpool(p.dir)
	if err != nil {
		return nil, nil, err
	}
	levels := extsort.New(p.dir, p.budget, compareLevel)
	levels.Prefix = extsort.PrefixRow
	defer levels.Close()
	s := p.s
	var sn snapNode
	var tn tableNodeRec
	nextT := func() bool {
		for {
			rec, ok := ti.Next()
			if !ok {
				return false
			}
			d := extsort.Dec{B: rec}
			id := d.S()
			if id == tn.id && s.TableNodes > 0 {
				p.t.Duplicates++ // the first read is kept, as ReadTable keeps it
				continue
			}
			tn = tableNodeRec{id: id, parent: d.S(), attrs: d.U()}
			s.TableNodes++
			return true
		}
	}
	rec, sok := si.Next()
	if sok {
		sn.decode(rec)
	}
	tok := nextT()
	var e, le extsort.Enc
	for n := 0; sok || tok; n++ {
		if n&4095 == 0 {
			if err := p.tick("comparing the nodes (nodes)", n, snap.Records+p.ot.nodes.Records); err != nil {
				return class, nil, err
			}
		}
		c := 0
		switch {
		case !sok:
			c = 1
		case !tok:
			c = -1
		default:
			c = strings.Compare(sn.id, tn.id)
		}
		e.Reset()
		switch {
		case c < 0: // the snapshot's alone
			s.ByReason[ReasonNew].Nodes++
			e.S(sn.id)
			e.Flag(classInSnap)
		case c > 0: // the table's alone
			s.ByReason[ReasonRemoved].Nodes++
			e.S(tn.id)
			e.Flag(classInTable)
		default:
			bits := uint8(classInTable | classInSnap)
			if sn.has && sn.user != tn.attrs {
				bits |= classChanged
				s.ChangedNodes++
			}
			e.S(sn.id)
			e.Flag(bits)
			pc := sn.parent != tn.parent
			if pc {
				s.MovedSubtrees++
			}
			le.Reset()
			le.Row(int64(sn.depth))
			le.S(sn.parent)
			le.S(sn.id)
			le.Flag(flagOf(pc))
			if err := levels.Add(le.B); err != nil {
				return class, nil, err
			}
		}
		if err := class.Add(e.B); err != nil {
			return class, nil, err
		}
		if c <= 0 {
			if rec, sok = si.Next(); sok {
				sn.decode(rec)
			}
		}
		if c >= 0 {
			tok = nextT()
		}
	}
	if err := errors.Join(si.Err(), ti.Err(), class.Rewind()); err != nil {
		return class, nil, err
	}
	s.ByReason[ReasonChanged].Nodes = s.ChangedNodes
	if s.MovedSubtrees == 0 {
		return class, nil, nil
	}
	moved, err = p.propagate(levels)
	return class, moved, err
}

// compareLevel orders the nodes of both by depth, then by parent.
func compareLevel(a, b []byte) int {
	if c := bytes.Compare(a[:8], b[:8]); c != 0 {
		return c
	}
	da, db := extsort.Dec{B: a[8:]}, extsort.Dec{B: b[8:]}
	return bytes.Compare(da.Bytes(), db.Bytes())
}

// propagate finds the moved subtrees a level at a time: a node the table
// holds moved when its parent changed, or when its parent is a moved
// node (planStructure). Each level's nodes come sorted by parent, and are
// joined with the level above's moved ids, sorted; the moved ids of every
// level go to the sort returned, by id, and are counted in s.
func (p *oocPlan) propagate(levels *extsort.Sorter) (*extsort.Sorter, error) {
	all := extsort.New(p.dir, p.budget, bytes.Compare)
	it, err := levels.Sort()
	if err != nil {
		return all, err
	}
	defer it.Close()
	var (
		cur, above *extsort.Sorter // this level's moved ids; the level above's
		aboveIt    *extsort.Iter
		aboveID    []byte
		aboveOK    bool
		depth      int64 = -1
	)
	closeAbove := func() {
		if aboveIt != nil {
			aboveIt.Close()
			above.Close()
			aboveIt, above = nil, nil
		}
	}
	defer func() {
		closeAbove()
		if cur != nil {
			cur.Close()
		}
	}()
	for n := 0; ; n++ {
		rec, ok := it.Next()
		if !ok {
			break
		}
		if n&4095 == 0 {
			if err := p.tick("finding the moved subtrees (nodes)", n, levels.Records); err != nil {
				return all, err
			}
		}
		if d := extsort.RowOf(rec); d != depth {
			closeAbove()
			if cur != nil && d == depth+1 {
				above, cur = cur, nil
				if aboveIt, err = above.Sort(); err != nil {
					return all, err
				}
				aboveID, aboveOK = aboveIt.Next()
			} else if cur != nil {
				cur.Close()
			}
			cur, depth = extsort.New(p.dir, p.budget, bytes.Compare), d
		}
		dec := extsort.Dec{B: rec[8:], Share: true}
		parent, id := dec.Bytes(), dec.Bytes()
		m := dec.Flag() == 1
		if !m && len(parent) > 0 && aboveIt != nil {
			for aboveOK && bytes.Compare(aboveID, parent) < 0 {
				aboveID, aboveOK = aboveIt.Next()
			}
			m = aboveOK && bytes.Equal(aboveID, parent)
		}
		if m {
			p.s.ByReason[ReasonMoved].Nodes++
			if err := cur.Add(id); err != nil {
				return all, err
			}
			if err := all.Add(id); err != nil {
				return all, err
			}
		}
	}
	if aboveIt != nil && aboveIt.Err() != nil {
		return all, aboveIt.Err()
	}
	return all, it.Err()
}
