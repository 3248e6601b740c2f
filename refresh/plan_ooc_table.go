package refresh

import (
	"context"
	"sync"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/internal/itemdigest"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/models"
	"github.com/treeport/treeport/transform"
)

// The kinds of a table's item in the out-of-core plan's sort by key.
const (
	oocItem       = 0 // reads as part of a node: a plan may put over it or delete it
	oocUnreadable = 1 // does not read as part of a node (Table.Unparsable)
	oocForeign    = 2 // another entity's (models.Foreign)
)

// oocTable is a table read for a plan out of core: instead of Table's
// maps, two external sorts in the plan's temporary directory.
//
// items holds a record an item, sorted by key (appendKey's bytes): the
// key, the kind (oocItem, oocUnreadable, oocForeign), and for an oocItem
// its digest, size, whether it is its node's own, its owner's id, its
// index signatures (indexSigs) and its index units. nodes holds a record
// a node item, sorted by id: the id, the parent and the digest of the
// node's attributes.
type oocTable struct {
	items, nodes *extsort.Sorter
}

func (o *oocTable) close() {
	if o == nil {
		return
	}
	o.items.Close()
	o.nodes.Close()
}

// newFirstSorter is an external sort by the records' first field
// (extsort.CompareFirst), stable where it is the same.
func newFirstSorter(dir string, budget int) *extsort.Sorter {
	s := extsort.New(dir, budget, extsort.CompareFirst)
	s.Prefix = extsort.PrefixKeyRow // the first field's first 8 bytes
	return s
}

// scanTableOOC reads a table as ReadTable does, counting the same, but
// keeps its items and nodes in external sorts of budget bytes each in
// dir: a fixed memory whatever the table's size. The Table returned holds
// the counts, the first unparsable keys and what the Scan cost; it has no
// maps. Unparsable items stop it as they stop ReadTable, unless
// IgnoreUnparsable. Under a shard, the sort by key holds only the items
// this copy owns, the sort by id every node (as ReadTable), and with path
// ids the inner nodes they imply (addImpliedOOC).
//
// It tells read of the items read so far after each page.
func scanTableOOC(ctx context.Context, opts ReadTableOptions, dir string, budget int, read func(int64)) (*Table, *oocTable, error) {
	t := &Table{Name: opts.Table, layout: opts.Layout, spec: opts.Layout.Table(), shard: opts.Shard}
	t.stride = sigStride(t.spec)
	ot := &oocTable{items: newFirstSorter(dir, budget), nodes: newFirstSorter(dir, budget)}
	reserved := opts.Layout.Reserved()
	l, spec := t.layout, t.spec
	scan := opts.Scan
	if scan.Partition == nil {
		scan.Partition = models.Partition(opts.Layout)
	}
	var implied *exporter.ImpliedNodes // nil: no path ids
	if layouts.ReadsImplicit(l) {
		implied = exporter.NewImpliedNodes(dir, budget, l.Delimiter())
		defer implied.Close()
	}
	var mu sync.Mutex
	var scanned int64
	st, err := exporter.ScanItems(ctx, opts.Client, opts.Table, scan, func(items []layouts.Item) error {
		var d itemdigest.Digester
		var its, nodes extsort.Enc
		var itEnds, nodeEnds []int
		var other int64
		var bad []badItem
		var key []byte
		var sigs []uint64
		var links [][2]string // with path ids: each node's id and parent
		keyOnly := layouts.Item{}
		var owned int64
		for _, item := range items {
			// Under --shard, every node record, but only this copy's
			// items: the others' are neither put over nor deleted.
			own := opts.Shard.OwnsValue(item[spec.PK.Name])
			if own {
				owned++
			}
			key = itemdigest.AppendKey(key[:0], spec, itemdigest.MapView(item))
			if models.Foreign(l, layouts.MapView(item)) {
				other++
				if !own {
					continue
				}
				its.Bs(key)
				its.Flag(oocForeign)
				itEnds = append(itEnds, len(its.B))
				continue
			}
			isNode, err := readsAsNode(l, item)
			if err != nil {
				bad = append(bad, badItem{"", ddb.KeyString(item, spec.KeyNames()...), err.Error()})
				if !own {
					continue
				}
				its.Bs(key)
				its.Flag(oocUnreadable)
				itEnds = append(itEnds, len(its.B))
				continue
			}
			all, user := d.ItemAndAttrs(item, reserved)
			if isNode {
				id, parent, _ := l.NodeOf(layouts.MapView(item))
				nodes.S(id)
				nodes.S(parent)
				nodes.U(user)
				nodeEnds = append(nodeEnds, len(nodes.B))
				if implied != nil {
					links = append(links, [2]string{id, parent})
				}
			}
			if !own {
				continue
			}
			// The owner is the key's, as a delete names it (planDeletes).
			clear(keyOnly)
			keyOnly[spec.PK.Name] = item[spec.PK.Name]
			if spec.SK != nil {
				keyOnly[spec.SK.Name] = item[spec.SK.Name]
			}
			size := transform.ItemSize(item)
			its.Bs(key)
			its.Flag(oocItem)
			its.U(all)
			its.I(size)
			its.Flag(flagOf(isNode))
			its.S(l.Owner(layouts.MapView(keyOnly)))
			sigs = indexSigs(&d, spec, item, sigs[:0])
			for _, s := range sigs {
				its.U(s)
			}
			for _, ix := range spec.Indexes {
				its.I(layouts.IndexUnits(spec, ix, item, size))
			}
			itEnds = append(itEnds, len(its.B))
		}
		mu.Lock()
		defer mu.Unlock()
		scanned += int64(len(items))
		read(scanned)
		t.Items += int64(len(items)) - other - int64(len(bad))
		t.OtherItems += other
		t.ShardItems += owned
		for _, b := range bad {
			if t.Unparsable == 0 {
				t.UnparsableWhy = b.why
			}
			t.Unparsable++
			if len(t.UnparsableKeys) < maxUnparsableKeys {
				t.UnparsableKeys = append(t.UnparsableKeys, b.text)
			}
		}
		for _, ln := range links {
			if err := implied.Add(ln[0], ln[1]); err != nil {
				return err
			}
		}
		if err := addRecords(ot.items, its.B, itEnds); err != nil {
			return err
		}
		return addRecords(ot.nodes, nodes.B, nodeEnds)
	})
	t.Read = st
	if err == nil {
		err = addImpliedOOC(implied, ot.nodes)
	}
	if err == nil && t.Unparsable > 0 && !opts.IgnoreUnparsable {
		err = t.unparsableError()
	}
	if err != nil {
		ot.close()
		return nil, nil, err
	}
	return t, ot, nil
}

// addImpliedOOC is Table.addImplied out of core: the inner nodes that
// the path ids imply and no item holds, to the sort of nodes, without
// attributes.
func addImpliedOOC(implied *exporter.ImpliedNodes, nodes *extsort.Sorter) error {
	var d itemdigest.Digester
	_, empty := d.ItemAndAttrs(nil, nil)
	var e extsort.Enc
	_, err := implied.Each(func(id, parent string) error {
		e.Reset()
		e.S(id)
		e.S(parent)
		e.U(empty)
		return nodes.Add(e.B)
	})
	return err
}

// addRecords adds to s the records of buf that end at ends.
func addRecords(s *extsort.Sorter, buf []byte, ends []int) error {
	start := 0
	for _, end := range ends {
		if err := s.Add(buf[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

func flagOf(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// oocTableItem is a record of oocTable.items, decoded.
type oocTableItem struct {
	key    []byte
	kind   uint8
	digest uint64
	size   int
	node   bool
	owner  string
	sigs   []uint64
	units  []int
}

// decode reads rec into it; its key and owner share rec's memory.
func (it *oocTableItem) decode(rec []byte, stride, indexes int) {
	d := extsort.Dec{B: rec, Share: true}
	it.key = d.Bytes()
	it.kind = d.Flag()
	if it.kind != oocItem {
		return
	}
	it.digest = d.U()
	it.size = d.I()
	it.node = d.Flag() == 1
	it.owner = d.S()
	it.sigs = it.sigs[:0]
	for range stride {
		it.sigs = append(it.sigs, d.U())
	}
	it.units = it.units[:0]
	for range indexes {
		it.units = append(it.units, d.I())
	}
}
