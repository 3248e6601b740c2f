package refresh

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/itemdigest"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/models"
	"github.com/treeport/treeport/transform"
)

// Table is what a plan needs to know of a table: a digest of every item (one
// word, its size and its index count, not the item), and the tree its nodes
// form (each node's parent and a digest of its attributes). It is read with
// one parallel Scan.
type Table struct {
	Name   string
	layout layouts.Layout
	spec   layouts.TableSpec
	shard  ddbwrite.Shard

	// items indexes entries by key; entries hold no pointers, so that the
	// garbage collector need not look into them.
	items   map[string]int32
	entries []tableItem
	// sigs holds stride words an entry: for each index, a digest of the
	// item's key in it (0 when the item is not in it), and for an INCLUDE
	// index a digest of the attributes it projects too, so that a put over
	// the item is priced as DynamoDB bills it (indexSigs).
	sigs   []uint64
	stride int
	// ixUnits holds, for each entry, what deleting or replacing its copy
	// in each index costs (layouts.IndexUnits; 0 when not in the index).
	ixUnits []uint16
	nodes   map[string]tableNode
	// Duplicates counts node items whose id another node item had already
	// (a table written by something else, or by hand); the plan deletes
	// the items that the snapshot does not want.
	Duplicates int
	// Items is every item of the layout read, this shard's or not;
	// OtherItems the table model's table's other items, left alone.
	Items, OtherItems int64
	// ShardItems, under a shard, is every item this shard owns (the
	// layout's, the other entities' and those that do not read): what
	// the shard's deletes are weighed against.
	ShardItems int64
	// Unparsable counts the items that are not foreign (see
	// models.Foreign) but do not read as part of a node of the layout:
	// its attributes do not read back through the layout or the model
	// (layouts.Layout.Node fails). They are never planned, so never
	// changed or deleted; ReadTable fails on them unless
	// IgnoreUnparsable.
	// UnparsableKeys are the keys of the first few, and UnparsableWhy
	// says what is wrong with the first.
	Unparsable     int64
	UnparsableKeys []string
	UnparsableWhy  string

	// unreadable holds the keys of the unparsable items, and foreign the
	// keys of this shard's foreign items: a plan never puts over one.
	unreadable map[string]struct{}
	foreign    map[string]struct{}
	// Read is what the Scan cost.
	Read exporter.Stats
}

type tableItem struct {
	digest uint64
	size   uint32
	seen   bool
	// node says the item is a node's own (a node item, closure's self
	// row, prefix's object row): a plan deletes them after the others,
	// so that a run stopped half-way leaves no row without its node.
	node bool
}

// maxUnparsableKeys is how many unparsable items a table names.
const maxUnparsableKeys = 5

type tableNode struct {
	parent string
	attrs  uint64
}

// ReadTableOptions say how to read a table for a plan.
type ReadTableOptions struct {
	Client exporter.ScanAPI
	Table  string
	Layout layouts.Layout
	Scan   exporter.ScanOptions
	// Shard, when Of > 1, keeps only the items whose partition key hashes
	// to this shard. The nodes are kept whole: the plan's classification
	// and the mass-delete guard look at the whole tree.
	Shard ddbwrite.Shard
	// IgnoreUnparsable leaves alone the items that are not foreign but do
	// not read as part of a node (Table.Unparsable); without it ReadTable
	// fails on them, naming the first few.
	IgnoreUnparsable bool
}

// ReadTable scans a table and keeps what a plan compares with a snapshot.
// Only the items that read as part of a node of the layout are kept, so a
// plan never changes or deletes another: a table model's foreign items
// are counted in OtherItems, the items that do not read in Unparsable.
// Unparsable items stop ReadTable with an error (importer.ErrInvalid)
// naming the first few, unless IgnoreUnparsable.
func ReadTable(ctx context.Context, opts ReadTableOptions) (*Table, error) {
	t := &Table{
		Name: opts.Table, layout: opts.Layout, spec: opts.Layout.Table(), shard: opts.Shard,
		items: map[string]int32{}, nodes: map[string]tableNode{},
	}
	t.stride = sigStride(t.spec)
	reserved := opts.Layout.Reserved()
	var mu sync.Mutex
	type seenItem struct {
		key   string
		it    tableItem
		sigs  []uint64
		units []uint16
	}
	type seenNode struct {
		id string
		n  tableNode
	}
	scan := opts.Scan
	if scan.Partition == nil {
		// A model's partition constant per tenant: the plan reads it
		// alone, and another tenant's items are not even counted.
		scan.Partition = models.Partition(opts.Layout)
	}
	st, err := exporter.ScanItems(ctx, opts.Client, opts.Table, scan, func(items []layouts.Item) error {
		var d itemdigest.Digester
		var other int64
		var bad []badItem
		var foreign []string
		var owned int64
		its := make([]seenItem, 0, len(items))
		pageUnits := make([]uint16, 0, len(items)*len(t.spec.Indexes)) // never grows: its items' units stay put
		var nodes []seenNode
		for _, item := range items {
			if opts.Shard.OwnsValue(item[t.spec.PK.Name]) {
				owned++
			}
			if models.Foreign(t.layout, layouts.MapView(item)) {
				// Another entity of a table model's table: never the
				// plan's to change or delete, nor to put over (a node
				// whose key it holds is refused: Table.Unreadable).
				other++
				if opts.Shard.OwnsValue(item[t.spec.PK.Name]) {
					foreign = append(foreign, itemdigest.KeyOf(t.spec, item))
				}
				continue
			}
			isNode, err := readsAsNode(t.layout, item)
			if err != nil {
				// Never planned, so never changed or deleted.
				bad = append(bad, badItem{itemdigest.KeyOf(t.spec, item), ddb.KeyString(item, t.spec.KeyNames()...), err.Error()})
				continue
			}
			all, user := d.ItemAndAttrs(item, reserved)
			if isNode {
				id, parent, _ := t.layout.NodeOf(layouts.MapView(item))
				nodes = append(nodes, seenNode{id, tableNode{parent: parent, attrs: user}})
			}
			if !opts.Shard.OwnsValue(item[t.spec.PK.Name]) {
				continue
			}
			size := transform.ItemSize(item)
			start := len(pageUnits)
			for _, ix := range t.spec.Indexes {
				pageUnits = append(pageUnits, uint16(layouts.IndexUnits(t.spec, ix, item, size)))
			}
			units := pageUnits[start:len(pageUnits):len(pageUnits)]
			its = append(its, seenItem{itemdigest.KeyOf(t.spec, item), tableItem{digest: all, size: uint32(size), node: isNode},
				indexSigs(&d, t.spec, item, nil), units})
		}
		mu.Lock()
		defer mu.Unlock()
		t.Items += int64(len(items)) - other - int64(len(bad))
		t.OtherItems += other
		t.ShardItems += owned
		for _, b := range bad {
			t.unparsable(b.key, b.text, b.why)
		}
		if len(foreign) > 0 && t.foreign == nil {
			t.foreign = map[string]struct{}{}
		}
		for _, k := range foreign {
			t.foreign[k] = struct{}{}
		}
		for _, s := range its {
			if i, dup := t.items[s.key]; dup { // a Scan gives each item once; be safe
				t.entries[i] = s.it
				copy(t.sigs[int(i)*t.stride:], s.sigs)
				copy(t.ixUnits[int(i)*len(s.units):], s.units)
				continue
			}
			t.items[s.key] = int32(len(t.entries))
			t.entries = append(t.entries, s.it)
			t.sigs = append(t.sigs, s.sigs...)
			t.ixUnits = append(t.ixUnits, s.units...)
		}
		for _, s := range nodes {
			if _, dup := t.nodes[s.id]; dup {
				t.Duplicates++
				continue
			}
			t.nodes[s.id] = s.n
		}
		return nil
	})
	t.Read = st
	if err != nil {
		return nil, err
	}
	t.addImplied()
	if t.Unparsable > 0 && !opts.IgnoreUnparsable {
		return nil, t.unparsableError()
	}
	return t, nil
}

// badItem is an item that does not read as part of a node: its key, its
// key as text, and what is wrong.
type badItem struct{ key, text, why string }

// readsAsNode says whether an item that is not foreign reads as part of a
// node of l: a node's own item (true), or another row of the layout
// (false: a closure ancestor row, a prefix listing row, which name their
// node and its ancestors; one whose node is gone, left by another shard's
// copy or a stopped run, is deleted when the snapshot does not want it).
// An error says why it does not read at all.
func readsAsNode(l layouts.Layout, item layouts.Item) (bool, error) {
	// Node reads every attribute the layout or model writes (a typed
	// model's CheckItem is the same call).
	_, isNode, err := l.Node(item)
	if err != nil {
		return false, err
	}
	if isNode {
		if _, _, ok := l.NodeOf(layouts.MapView(item)); !ok {
			return false, fmt.Errorf("no id")
		}
	}
	return isNode, nil
}

// unparsable counts one more item that does not read as part of a node;
// the table's mutex is held, or the scan is over.
func (t *Table) unparsable(key, text, why string) {
	if t.Unparsable == 0 {
		t.UnparsableWhy = why
	}
	t.Unparsable++
	if t.unreadable == nil {
		t.unreadable = map[string]struct{}{}
	}
	t.unreadable[key] = struct{}{}
	if len(t.UnparsableKeys) < maxUnparsableKeys {
		t.UnparsableKeys = append(t.UnparsableKeys, text)
	}
}

// Unreadable reports whether the table holds an item under the key of
// item that does not read as part of a node, or that is another entity's
// (models.Foreign): one a plan must not put over. It says which.
func (t *Table) Unreadable(item layouts.Item) (string, bool) {
	if len(t.unreadable) == 0 && len(t.foreign) == 0 {
		return "", false
	}
	k := itemdigest.KeyOf(t.spec, item)
	if _, ok := t.unreadable[k]; ok {
		return "does not read as a node of " + t.layout.Name(), true
	}
	if _, ok := t.foreign[k]; ok {
		return "is another entity's (it does not carry the model's type field)", true
	}
	return "", false
}

// unparsableError is the error of a table with unparsable items, for a
// caller that did not ask to leave them alone.
func (t *Table) unparsableError() error {
	var why string
	if models.HasTypeField(t.layout) {
		why = "they carry the model's type field but do not read back through its templates: fix them"
	} else {
		why = fmt.Sprintf("the %s has no type field, so treeport cannot tell another entity's items from broken nodes: give the model a type field (docs/MODELS.md), fix the items, or make sure this is the right table and layout", layoutWord(t.layout))
	}
	return invalidf("table %s: %d items do not read as nodes of %s %s, such as %s (the first: %s); nothing was planned or written: %s, or pass --ignore-unparsable to leave them alone and go on",
		t.Name, t.Unparsable, layoutWord(t.layout), t.layout.Name(), strings.Join(t.UnparsableKeys, ", "), t.UnparsableWhy, why)
}

// invalidError is an error of the table or the snapshot that nothing
// written can mend: it matches importer.ErrInvalid (exit 2) without
// saying so in its text.
type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == importer.ErrInvalid }

func invalidf(format string, args ...any) error {
	return &invalidError{fmt.Sprintf(format, args...)}
}

// layoutWord is "model" for a table model, "layout" otherwise.
func layoutWord(l layouts.Layout) string {
	if models.IsModel(l) {
		return "model"
	}
	return "layout"
}

// Nodes is the number of nodes in the table.
func (t *Table) Nodes() int { return len(t.nodes) }

// sigStride is how many words indexSigs gives an item of spec's table.
func sigStride(spec layouts.TableSpec) int {
	n := 0
	for _, ix := range spec.Indexes {
		n++
		if ix.Projection == types.ProjectionTypeInclude {
			n++
		}
	}
	return n
}

// units is what the put or delete of entry i's copy in each index costs.
func (t *Table) units(i int) []uint16 {
	n := len(t.spec.Indexes)
	return t.ixUnits[i*n : (i+1)*n]
}

// indexSigs appends to dst, for each index of spec, a digest of the item's
// key in it (0 when the item is not in it), and for an INCLUDE index a
// digest of the attributes it projects. Two items' signatures tell what a
// put of one over the other does to each index (indexChange).
func indexSigs(d *itemdigest.Digester, spec layouts.TableSpec, item layouts.Item, dst []uint64) []uint64 {
	for _, ix := range spec.Indexes {
		var k uint64
		if key := layouts.IndexKeyAttrs(ix, item); key != nil {
			k = d.Item(key) | 1
		}
		dst = append(dst, k)
		if ix.Projection == types.ProjectionTypeInclude {
			inc := make(layouts.Item, len(ix.NonKeyAttributes))
			for _, name := range ix.NonKeyAttributes {
				if v, ok := item[name]; ok {
					inc[name] = v
				}
			}
			dst = append(dst, d.Item(inc))
		}
	}
	return dst
}

// indexChange says what a put of an item with signatures new over one with
// signatures old (indexSigs) does to index i, when the two items differ.
func indexChange(spec layouts.TableSpec, old, new []uint64, i int) layouts.IndexChange {
	w := 0
	for _, ix := range spec.Indexes[:i] {
		w++
		if ix.Projection == types.ProjectionTypeInclude {
			w++
		}
	}
	ix := spec.Indexes[i]
	ko, kn := old[w], new[w]
	switch {
	case ko != 0 && kn != 0 && ko == kn:
		switch ix.Projection {
		case types.ProjectionTypeKeysOnly:
			return layouts.IndexUntouched
		case types.ProjectionTypeInclude:
			if old[w+1] == new[w+1] {
				return layouts.IndexUntouched
			}
		}
		// ALL: the items differ, so what the index projects does.
		return layouts.IndexUpdate
	case ko != 0 && kn != 0:
		return layouts.IndexRekey
	case ko != 0:
		return layouts.IndexLeave
	case kn != 0:
		return layouts.IndexEnter
	}
	return layouts.IndexUntouched
}

// addImplied adds the table's implicit inner nodes (layouts.Implied): the
// ancestors that the path ids of the nodes name but that have no item,
// nodes without attributes. A snapshot's node without attributes is then
// the same state under --implicit-inner: nothing to write.
func (t *Table) addImplied() {
	if !layouts.ReadsImplicit(t.layout) {
		return
	}
	ids := make([]string, 0, len(t.nodes))
	parents := make([]string, 0, len(t.nodes))
	for id, n := range t.nodes {
		ids = append(ids, id)
		parents = append(parents, n.parent)
	}
	var d itemdigest.Digester
	_, empty := d.ItemAndAttrs(nil, nil)
	for _, r := range layouts.Implied(t.layout, ids, parents) {
		t.nodes[r.ID] = tableNode{parent: r.Parent, attrs: empty}
	}
}
