package layouts

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/transform"
)

// What a table model (package models) builds on: a model writes and reads
// a base layout's items under its own names, so it needs a few of the
// layouts' own measures and prices. Nothing here is for the jobs.

// A Model is a layout built on a base layout (a table model). Check and
// the closure helpers look through it to its base.
type Model interface {
	Layout
	// Base is the layout the model's items are the items of.
	Base() Layout
	// CheckNode returns what is wrong with the node's id, depth and key
	// values under the model, beyond the base layout's checks.
	CheckNode(s *transform.Stats) []error
}

// MaxAttrNameBytes is the longest attribute name DynamoDB accepts.
const MaxAttrNameBytes = maxAttrNameBytes

// StringValue is the string attribute value s.
func StringValue(s string) types.AttributeValue { return strAttr(s) }

// TypeName is the DynamoDB type of v (S, N, ...), for errors.
func TypeName(v types.AttributeValue) string { return typeName(v) }

// Digits is the length of n's decimal text, n ≥ 0.
func Digits(n int) int { return digits(n) }

// NumberSize is the stored size of the number n ≥ 0.
func NumberSize(n int) int { return numberSize(n) }

// MaxNumberSize is the largest NumberSize(r) for 1 ≤ r ≤ d.
func MaxNumberSize(d int) int { return maxNumberSize(d) }

// SumNumberSize is Σ NumberSize(r) for 0 ≤ r ≤ d.
func SumNumberSize(d int) int64 { return sumNumberSize(d) }

// GetCost is one GetItem of an item of b bytes.
func GetCost(b int64) Cost { return getCost(b) }

// SizeSum counts the items a Query reads and their bytes.
type SizeSum struct{ s sizeSum }

// Add counts an item of size bytes.
func (s *SizeSum) Add(size int) { s.s.add(size) }

// QueryCost is one Query (and its further pages) reading what s counts.
func QueryCost(s SizeSum) Cost { return queryCost(s.s) }

// BatchCost is BatchGetItem of items, 100 keys a request.
type BatchCost struct{ b batchCost }

// Add counts an item of size bytes.
func (b *BatchCost) Add(size int32) { b.b.add(size) }

// Cost is the requests' cost, and none when nothing was read (no request
// is sent).
func (b *BatchCost) Cost() Cost {
	if b.b.c.Items == 0 {
		return Cost{}
	}
	return b.b.done()
}

// SetIndexSize records, in the base layout's cost model cm, that index
// holds size bytes of node i's item (a model's index projecting fewer
// attributes); it does nothing for a cost model that keeps no sizes.
func SetIndexSize(cm CostModel, index string, i int32, size int) {
	if f, ok := cm.(interface{ forest() *costForest }); ok {
		f.forest().setIndexSize(index, i, size)
	}
}

// IndexSizes is the size of each node's item as a Query of index reads it,
// by forest index, in the base layout's cost model cm.
func IndexSizes(cm CostModel, index string) []int32 {
	return cm.(interface{ forest() *costForest }).forest().inIndex(index)
}

// AddClosureRow is cm.Add of a closure row whose copy in ByAncestor, which
// the descendants' Query reads, is indexSize bytes; ok is false when cm is
// not the closure layout's cost model.
func AddClosureRow(cm CostModel, item Item, size, indexSize int) (node, other int32, err error, ok bool) {
	cc, ok := cm.(*closureCosts)
	if !ok {
		return 0, 0, nil, false
	}
	node, other, err = cc.add(item, size, indexSize)
	return node, other, err, true
}

// ClosureRow is the closure layout l's row r of node n: the node's
// attributes it carries, in an item with room for extra more.
func ClosureRow(l Layout, n *transform.Node, r, extra int) Item {
	c := l.(*closureLayout)
	return c.rowAttrs(n, r, make(Item, c.rowAttrCount(n, r)+extra))
}

// ClosureCopiesAll reports whether the closure layout l copies every
// attribute to the ancestor rows.
func ClosureCopiesAll(l Layout) bool { return l.(*closureLayout).copyAll }

// ClosureCopyBytes is the size of the attributes an ancestor row of the
// node copies under the closure layout l.
func ClosureCopyBytes(l Layout, s *transform.Stats) int {
	return l.(*closureLayout).copyBytes(s)
}

// CheckShape is the first guard the base layout l's Items runs: a node
// whose Path does not match it, or an empty id; then an id on its path
// containing l's delimiter.
func CheckShape(l Layout, n *transform.Node) error {
	b := l.(interface{ layoutBase() *base }).layoutBase()
	if err := b.checkShape(n); err != nil {
		return err
	}
	return b.checkDelims(n)
}

// Str returns the S attribute name, and whether it is one.
func (v View) Str(name string) (string, bool) { return v.str(name) }

// ProjectedItem adds an item of size bytes whose copies in the indexes it
// lands in are not whole: copies holds each copy's size.
func (m *Measure) ProjectedItem(size int, copies []int) { m.projectedItem(size, copies) }

// Key records a key of n bytes in slot (partition keys even, sort keys odd).
func (m *Measure) Key(slot, n int) { m.key(slot, n) }

// Collection records an item collection of n items in slot i.
func (m *Measure) Collection(i int, n int64) { m.collection(i, n) }

// CollectionOf is Collection, naming the partition key value of a new
// largest collection.
func (m *Measure) CollectionOf(i int, n int64, value string) { m.collectionOf(i, n, value) }

// SharedCollectionOf adds n items to collection i, one that every node's
// items land in (a partition key constant per tenant), named value: Add
// sums such a collection over the nodes instead of keeping the largest.
func (m *Measure) SharedCollectionOf(i int, n int64, value string) {
	for len(m.shared) <= i {
		m.shared = append(m.shared, false)
	}
	m.shared[i] = true
	for len(m.Hot) <= i {
		m.Hot = append(m.Hot, "")
	}
	m.Hot[i] = value
	m.collection(i, m.collectionAt(i)+n)
}

// collectionAt is collection i so far.
func (m *Measure) collectionAt(i int) int64 {
	if i < len(m.Collections) {
		return m.Collections[i]
	}
	return 0
}

// Item adds one item of size bytes landing in the given number of indexes.
func (m *Measure) Item(size, indexes int) { m.item(size, indexes) }
