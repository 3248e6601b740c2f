package exporter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/internal/spill"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/models"
	"github.com/treeport/treeport/records/infile"
	"github.com/treeport/treeport/transform"
)

// VerifyRecordBytes is what a record costs the in-memory Verify: the
// record, its attributes' values, its entry in a map by id and the
// collector's headroom (a million generated nodes of five attributes on
// each side peak at 1.89 GB of RSS; benchmarks/README.md, "verify out of
// core"). A file and a table whose records
// together, at this much each, are over VerifyOutOfCore.Memory are
// compared out of core.
const VerifyRecordBytes = 1000

// VerifyOutOfCore holds Verify to a memory budget. A file and a table that
// fit in it are compared in memory; larger ones out of core
// (docs/SCALING.md, "verify out of core"):
//
//  1. the file's records (id, place, parent and attributes with their
//     types) go to an external sort by id, and a pass over it finds an id
//     that is there twice, before the table is read;
//  2. the table's nodes, as Scan rebuilds them, go to a second sort by
//     id, and the links of a layout that writes some (layouts.Links) to a
//     third, by their target;
//  3. one merge join of the three gives the missing, extra, moved and
//     changed nodes and the dangling links, with the same counts and the
//     same first examples as in memory.
type VerifyOutOfCore struct {
	// Memory is the budget in bytes.
	Memory int64
	// TmpDir is where the sorts' runs go ("": os.TempDir()).
	TmpDir string
	// Force compares out of core whatever the sizes (tests).
	Force bool
	// FileRecords is the caller's guess of how many records the file
	// holds (the import's: importer.EstimateNodes); 0 when not known.
	FileRecords int64
	// OnPhase, when set, is told how far each pass is: its name, and done
	// of total (total -1 when not known).
	OnPhase func(phase string, done, total int64)
	// Warn, when set, is told of what the sweep of TmpDir removed or left
	// (spill.Sweep).
	Warn func(string)
	// OnStart, when set, is called once the comparison is found to run
	// out of core, before the first pass.
	OnStart func()
}

func (o *VerifyOutOfCore) phase(name string, done, total int64) {
	if o.OnPhase != nil {
		if done > total {
			total = -1
		}
		o.OnPhase(name, done, total)
	}
}

// describeAPI is what the out-of-core choices of verify and export ask
// of a client that has it: the table's ItemCount and size. A client
// without it is sized by the file alone (verify) or never goes out of
// core (export).
type describeAPI interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// tableSize is DescribeTable's ItemCount and TableSizeBytes (updated about
// every six hours), zeros when the client cannot tell.
func tableSize(ctx context.Context, client ScanAPI, table string) (items, size int64, err error) {
	dc, ok := client.(describeAPI)
	if !ok {
		return 0, 0, nil
	}
	out, err := dc.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return 0, 0, err
	}
	return aws.ToInt64(out.Table.ItemCount), aws.ToInt64(out.Table.TableSizeBytes), nil
}

// verifyNeedsOOC says whether opts compares out of core, and the table's
// ItemCount and size for the progress and the room.
func verifyNeedsOOC(ctx context.Context, opts VerifyOptions) (ooc bool, items, size int64, err error) {
	o := opts.OutOfCore
	if o == nil {
		return false, 0, 0, nil
	}
	if items, size, err = tableSize(ctx, opts.Client, opts.Table); err != nil {
		return false, 0, 0, err
	}
	return o.Force || o.Memory > 0 && (o.FileRecords+items)*VerifyRecordBytes > o.Memory, items, size, nil
}

// verifyOOC is Verify out of core (see VerifyOutOfCore).
func verifyOOC(ctx context.Context, opts VerifyOptions, keep int, tableItems, tableBytes int64) (*Diff, error) {
	o := opts.OutOfCore
	spill.Sweep(o.TmpDir, o.Warn)
	dir, err := spill.New(o.TmpDir, "verify", "the verify out of core")
	if err == nil {
		// The file's records and the table's nodes each on disk once,
		// encoded (about their size), and as much again for a margin;
		// the table's spool once more, and its order's sorts.
		err = dir.Room(2*(infile.Size(opts.In)+tableBytes)+tableBytes+200*tableItems, "the verify out of core", opts.In+" and table "+opts.Table)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ddbwrite.ErrUsage, err)
	}
	defer dir.Close()
	if o.OnStart != nil {
		o.OnStart()
	}
	// A quarter of the budget for each of the two big sorts, which fill
	// one after the other but merge together; an eighth for the links
	// and for the implied nodes' two sorts; the rest for the Scan's pages
	// and the merges' buffers.
	budget := int(max(o.Memory/4, 1<<20))
	v := &oocVerify{ctx: ctx, opts: opts, o: o, dir: dir.Path, keep: keep, tableItems: tableItems}
	v.file = v.sorter(budget)
	defer v.file.Close()
	v.table = v.sorter(budget)
	defer v.table.Close()
	if layouts.Links(opts.Layout) {
		v.links = v.sorter(budget / 2)
		defer v.links.Close()
	}
	readErr := v.readFile()
	if readErr != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	// An id twice before the row that could not be read is what the
	// in-memory read would have stopped at first.
	if err := v.duplicates(); err != nil {
		return nil, err
	}
	if readErr != nil {
		return nil, readErr
	}
	defer func() {
		if v.tableRecs != nil {
			v.tableRecs.Close()
			v.order.close()
		}
	}()
	if err := v.readTable(budget / 4); err != nil {
		return nil, err
	}
	if err := v.placeTable(); err != nil {
		return nil, err
	}
	return v.join()
}

// oocVerify is one verify out of core: its sorts and what the passes
// found.
type oocVerify struct {
	ctx        context.Context
	opts       VerifyOptions
	o          *VerifyOutOfCore
	dir        string
	keep       int
	tableItems int64

	// file: S(id) Row(seq) S(file) I(line) S(parent) Bs(attributes);
	// table: S(id) Row(seq) S(parent) Bs(attributes);
	// links: S(target) Row(seq) S(id) S(parent).
	file, table, links *extsort.Sorter
	// tableRecs spools the table's records as they are read, and order
	// takes their ids and parents, for placeTable.
	tableRecs  *extsort.Spool
	order      *oocOrder
	fileNodes  int
	read       Stats
	tableNodes int
}

func (v *oocVerify) sorter(budget int) *extsort.Sorter {
	s := extsort.New(v.dir, budget, extsort.CompareKeyRow)
	s.Prefix = extsort.PrefixKeyRow
	s.OnSpill = func(n int64) { v.o.phase("sorting (bytes spilled)", n, -1) }
	return s
}

// tick is how often the passes tell the progress and look at the
// context: every 4,096 records.
const tick = 4096

// readFile reads the file's records to the file sort, checking each
// against the limits every reader shares, as readRecords does. It returns
// the error that ended the read early: a row that cannot be read, one over
// the limits, or the context's.
func (v *oocVerify) readFile() error {
	var e extsort.Enc
	var seq int64
	for {
		if seq%tick == 0 {
			v.o.phase("reading the file (records)", seq, v.o.FileRecords)
			if err := v.ctx.Err(); err != nil {
				return err
			}
		}
		rec, err := v.opts.Records.Next(v.ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if _, over := infile.CheckLimits(rec.Attrs, rec.File, rec.Line, v.opts.Unit, rec.ID); over != nil {
			return over
		}
		e.Reset()
		e.S(rec.ID)
		e.Row(seq)
		e.S(rec.File)
		e.I(rec.Line)
		e.S(rec.Parent)
		e.Bs(ddbjson.AppendItem(nil, rec.Attrs))
		if err := v.file.Add(e.B); err != nil {
			return err
		}
		seq++
	}
}

// fileRec is a record of the file sort, decoded.
type fileRec struct {
	id     string
	seq    int64
	file   string
	line   int
	parent string
	attrs  []byte
}

func decodeFileRec(b []byte) fileRec {
	d := extsort.Dec{B: b}
	var r fileRec
	r.id, r.seq, r.file, r.line, r.parent = d.S(), d.Row(), d.S(), d.I(), d.S()
	r.attrs = d.Bytes()
	return r
}

// duplicates reads the file sort once and returns the error readRecords
// would have: of the records whose id an earlier record has, the one read
// first, with the line of the first of its id. It counts the file's
// nodes.
func (v *oocVerify) duplicates() error {
	it, err := v.file.Sort()
	if err != nil {
		return err
	}
	defer it.Close()
	var (
		prev fileRec
		// dup is the second record of an id read first, of all the ids
		// there twice; firstLine is the line of the first of prev's id.
		dup                 *fileRec
		firstLine, dupFirst int
		inGroup             int
		n                   int64
	)
	for b, ok := it.Next(); ok; b, ok = it.Next() {
		r := decodeFileRec(b)
		r.attrs = nil
		if n > 0 && r.id == prev.id {
			inGroup++
			if inGroup == 2 && (dup == nil || r.seq < dup.seq) {
				d := r
				dup, dupFirst = &d, firstLine
			}
		} else {
			firstLine, inGroup = r.line, 1
			v.fileNodes++
		}
		prev = r
		n++
		if n%tick == 0 {
			v.o.phase("checking the file's ids (records)", n, v.o.FileRecords)
			if err := v.ctx.Err(); err != nil {
				return err
			}
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	if dup != nil {
		return &transform.RowError{File: dup.file, Line: dup.line, ID: dup.id,
			Err: fmt.Errorf("%w (first at line %d): a file with an id twice cannot be compared with a table", transform.ErrDuplicateID, dupFirst)}
	}
	return nil
}

// readTable scans the table as Scan does, each node to the table sort
// and each link to the links sort; a layout whose inner nodes are implied
// by path ids gets them as Scan does (ImpliedNodes, implied sorts of
// implied bytes each).
func (v *oocVerify) readTable(implied int) error {
	l := v.opts.Layout
	var imp *ImpliedNodes
	if layouts.ReadsImplicit(l) {
		imp = NewImpliedNodes(v.dir, max(implied, 1<<20), l.Delimiter())
		defer imp.Close()
	}
	var (
		e   extsort.Enc
		seq int64
		err error
	)
	if v.tableRecs, err = extsort.NewSpool(v.dir); err != nil {
		return err
	}
	v.order = newOOCOrder(v.dir, max(implied, 64<<10), v.o.phase)
	add := func(rec *transform.Record) error {
		e.Reset()
		e.S(rec.ID)
		e.Row(seq)
		e.S(rec.Parent)
		e.Bs(ddbjson.AppendItem(nil, rec.Attrs))
		if err := v.tableRecs.Add(e.B); err != nil {
			return err
		}
		if err := v.order.add(seq, rec.ID, rec.Parent); err != nil {
			return err
		}
		if to, ok := rec.Attrs[transform.LinkAttr].(*types.AttributeValueMemberS); ok && v.links != nil {
			e.Reset()
			e.S(to.Value)
			e.Row(seq)
			e.S(rec.ID)
			e.S(rec.Parent)
			if err := v.links.Add(e.B); err != nil {
				return err
			}
		}
		seq++
		v.tableNodes++
		return nil
	}
	scan := v.opts.Scan
	if scan.Memory == 0 && v.opts.OutOfCore != nil {
		scan.Memory = PagesMemory(v.opts.OutOfCore.Memory)
	}
	st, err := scanNodesEach(v.ctx, v.opts.Client, v.opts.Table, l, scan, func(recs []transform.Record, items int64) error {
		for i := range recs {
			if err := add(&recs[i]); err != nil {
				return err
			}
			if err := imp.Add(recs[i].ID, recs[i].Parent); err != nil {
				return err
			}
		}
		v.o.phase("reading the table (items)", items, v.tableItems)
		return nil
	})
	v.read = st
	if err != nil {
		return err
	}
	_, err = imp.Each(func(id, parent string) error {
		return add(&transform.Record{ID: id, Parent: parent, Attrs: transform.Attrs{}})
	})
	return err
}

// placeTable sorts the table's records by id, each id's records in the
// order the in-memory Scan gives them (SortRecords': the first of an id
// there is the one compared with the file, the others extra): by the
// order they were read when no id repeats, else by their place in the
// forest, which the export's passes (oocOrder) give.
func (v *oocVerify) placeTable() error {
	o := v.order
	if err := o.resolve(v.ctx); err != nil {
		return err
	}
	if err := v.tableRecs.Rewind(); err != nil {
		return err
	}
	if o.check.Duplicates == 0 {
		for rec, ok := v.tableRecs.Next(); ok; rec, ok = v.tableRecs.Next() {
			if err := v.table.Add(rec); err != nil {
				return err
			}
		}
		return v.tableRecs.Err()
	}
	r, err := o.link(v.ctx)
	if err != nil {
		return err
	}
	if r, err = o.rank(v.ctx, r); err != nil {
		return err
	}
	defer r.close()
	// A record on a tour goes by its distance to the tour's end (the
	// larger, the earlier), one in or below a cycle after them all, by
	// the order it was read (forestOrder's rest, by id then index).
	end := uint64(2*o.n + 3)
	var e extsort.Enc
	return o.ranks(v.ctx, r, func(row int64, dist uint64, inCycle bool) error {
		rec, ok := v.tableRecs.Next()
		if !ok {
			return fmt.Errorf("exporter: verify: the table's spool ends at row %d of %d: %v", row, o.n, v.tableRecs.Err())
		}
		d := extsort.Dec{B: rec, Share: true}
		id := d.Bytes()
		d.Row()
		place := end - dist
		if inCycle {
			place = end + 1 + uint64(row)
		}
		e.Reset()
		e.Bs(id)
		e.Row(int64(place))
		e.B = append(e.B, d.B...)
		return v.table.Add(e.B)
	})
}

// scanNodesEach reads the nodes of table as scanNodes does, and hands
// them to fn a chunk at a time, one call at a time, with the items read
// so far; it holds none of them. A table model's item that does not read
// back is counted (Stats.Unparsable), and a table none of whose items is
// a node is an error, as in Scan.
func scanNodesEach(ctx context.Context, client ScanAPI, table string, l layouts.Layout, opts ScanOptions, fn func(recs []transform.Record, items int64) error) (Stats, error) {
	r := newReader(readerOptions{MaxRCU: opts.MaxRCU, MaxRetries: opts.MaxRetries})
	filter := l.NodeFilter()
	if opts.Partition == nil {
		opts.Partition = models.Partition(l)
	}
	var (
		mu            sync.Mutex
		nodes         int64
		unparsable    int64
		unparsableKey string
	)
	err := scanTable(ctx, client, r, table, opts, filter, func(items []layouts.Item) error {
		recs := make([]transform.Record, 0, len(items))
		bad, badKey, err := pageNodes(table, l, items, func(rec *transform.Record) error {
			recs = append(recs, *rec)
			return nil
		})
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		nodes += int64(len(recs))
		unparsable += bad
		if unparsableKey == "" {
			unparsableKey = badKey
		}
		return fn(recs, r.snapshot().Items)
	})
	st := r.snapshot()
	st.Unparsable, st.UnparsableKey = unparsable, unparsableKey
	if err != nil {
		return st, err
	}
	if nodes == 0 && st.Items > 0 {
		return st, noNodes(table, st.Items, l, filter)
	}
	return st, nil
}

// tableRec is a record of the table sort, decoded.
type tableRec struct {
	id, parent string
	attrs      []byte
}

func decodeTableRec(b []byte) tableRec {
	d := extsort.Dec{B: b}
	var r tableRec
	r.id = d.S()
	d.Row()
	r.parent = d.S()
	r.attrs = d.Bytes()
	return r
}

// diffKeeper counts one kind of difference and keeps its first examples,
// which come in id order.
type diffKeeper struct {
	set  DiffSet
	keep int
}

func (k *diffKeeper) add(d NodeDiff) {
	k.set.Count++
	if len(k.set.Examples) < k.keep {
		k.set.Examples = append(k.set.Examples, d)
	}
}

// join merges the file sort, the table sort and the links sort, all by
// id, into the Diff.
func (v *oocVerify) join() (*Diff, error) {
	d := &Diff{File: v.opts.In, Table: v.opts.Table, FileNodes: v.fileNodes, TableNodes: v.tableNodes, Read: v.read}
	missing, extra, moved, changed := &diffKeeper{keep: v.keep}, &diffKeeper{keep: v.keep}, &diffKeeper{keep: v.keep}, &diffKeeper{keep: v.keep}
	fit, err := v.file.Sort()
	if err != nil {
		return nil, err
	}
	defer fit.Close()
	tit, err := v.table.Sort()
	if err != nil {
		return nil, err
	}
	defer tit.Close()
	links, err := v.newLinkJoin()
	if err != nil {
		return nil, err
	}
	defer links.close()
	fb, fok := fit.Next()
	tb, tok := tit.Next()
	var n, steps int64
	total := int64(v.fileNodes + v.tableNodes)
	for fok || tok {
		var f fileRec
		var t tableRec
		c := 0
		switch {
		case !tok:
			c = -1
		case !fok:
			c = 1
		}
		if fok {
			f = decodeFileRec(fb)
		}
		if tok {
			t = decodeTableRec(tb)
			if c == 0 {
				c = strings.Compare(f.id, t.id)
			}
		}
		if c >= 0 {
			if err := links.upTo(t.id); err != nil {
				return nil, err
			}
		}
		switch {
		case c < 0:
			missing.add(NodeDiff{ID: f.id, FileParent: f.parent})
		case c > 0:
			extra.add(NodeDiff{ID: t.id, TableParent: t.parent})
		default:
			if f.parent != t.parent {
				moved.add(NodeDiff{ID: f.id, FileParent: f.parent, TableParent: t.parent})
			}
			attrs, err := diffEncodedAttrs(f.attrs, t.attrs)
			if err != nil {
				return nil, fmt.Errorf("exporter: verify: node %q: %w", f.id, err)
			}
			if len(attrs) > 0 {
				changed.add(NodeDiff{ID: f.id, FileParent: f.parent, TableParent: t.parent, Attrs: attrs})
			}
		}
		if c <= 0 {
			fb, fok = fit.Next()
			n++
		}
		if c >= 0 {
			// A second node of the same id in the table is extra.
			id := t.id
			for tb, tok = tit.Next(); tok && string(extsort.FirstKey(tb)) == id; tb, tok = tit.Next() {
				r := decodeTableRec(tb)
				extra.add(NodeDiff{ID: r.id, TableParent: r.parent})
				n++
			}
			n++
		}
		if steps++; steps%tick == 0 {
			v.o.phase("comparing (nodes)", n, total)
			if err := v.ctx.Err(); err != nil {
				return nil, err
			}
		}
	}
	if err := errors.Join(fit.Err(), tit.Err()); err != nil {
		return nil, err
	}
	if err := links.rest(); err != nil {
		return nil, err
	}
	d.Missing, d.Extra, d.Moved, d.Changed = missing.set, extra.set, moved.set, changed.set
	if v.links != nil {
		d.Dangling = links.set()
	}
	return d, nil
}

// diffEncodedAttrs is diffAttrs of two attribute maps as the sorts hold
// them, in DynamoDB JSON.
func diffEncodedAttrs(file, table []byte) ([]AttrDiff, error) {
	if bytes.Equal(file, table) {
		return nil, nil
	}
	fa, err := ddbjson.DecodeItem(file)
	if err != nil {
		return nil, err
	}
	ta, err := ddbjson.DecodeItem(table)
	if err != nil {
		return nil, err
	}
	return diffAttrs(fa, ta), nil
}

// linkJoin walks the links sort, by target, beside the table's ids: a
// link whose target is passed over is dangling. Its examples are the
// first by the link's id, as diffSet orders them: it keeps the smallest
// few seen so far.
type linkJoin struct {
	it    *extsort.Iter
	cur   []byte
	ok    bool
	count int
	keep  int
	ex    []NodeDiff
}

func (v *oocVerify) newLinkJoin() (*linkJoin, error) {
	j := &linkJoin{keep: v.keep}
	if v.links == nil {
		return j, nil
	}
	it, err := v.links.Sort()
	if err != nil {
		return nil, err
	}
	j.it = it
	j.cur, j.ok = it.Next()
	return j, nil
}

func (j *linkJoin) close() {
	if j.it != nil {
		j.it.Close()
	}
}

// upTo reads the links whose target sorts before id (dangling) or is id
// (not).
func (j *linkJoin) upTo(id string) error {
	if j.it == nil {
		return nil
	}
	for j.ok {
		c := strings.Compare(string(extsort.FirstKey(j.cur)), id)
		if c > 0 {
			return nil
		}
		if c < 0 {
			j.dangling()
		}
		j.cur, j.ok = j.it.Next()
	}
	return j.it.Err()
}

// rest reads the links left: their targets are in no node of the table.
func (j *linkJoin) rest() error {
	if j.it == nil {
		return nil
	}
	for ; j.ok; j.cur, j.ok = j.it.Next() {
		j.dangling()
	}
	return j.it.Err()
}

func (j *linkJoin) dangling() {
	d := extsort.Dec{B: j.cur}
	to := d.S()
	d.Row()
	id, parent := d.S(), d.S()
	j.count++
	j.ex = append(j.ex, NodeDiff{ID: id, TableParent: parent, LinkTo: to})
	if len(j.ex) > 4*j.keep+64 {
		j.trim()
	}
}

func (j *linkJoin) trim() {
	slices.SortStableFunc(j.ex, func(a, b NodeDiff) int { return strings.Compare(a.ID, b.ID) })
	j.ex = j.ex[:min(j.keep, len(j.ex))]
}

func (j *linkJoin) set() DiffSet {
	j.trim()
	return DiffSet{Count: j.count, Examples: j.ex}
}
