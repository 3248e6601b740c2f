package layouts

import (
	"fmt"

	"github.com/treeport/treeport/transform"
)

// Cost is what one query takes: requests, items read (a Query's
// ScannedCount, the items a GetItem or BatchGetItem returned), read
// capacity as DynamoDB's documented rules bill it, and the nodes in its
// answer. EmptyQueries counts the Query requests that read nothing, each
// billed MinReadRCU in RCU; DynamoDB Local bills them 0, so its figure for
// the same requests is RCU - EmptyQueries × MinReadRCU.
type Cost struct {
	Requests, Items int64
	RCU             float64
	Nodes           int64
	EmptyQueries    int64
	// Smooth is RCU with each Query page priced as its minimum plus its
	// bytes, unrounded: what the reads grow along as the answer does, for
	// projecting a query's cost to a larger tree (on a small tree the
	// rounding up to 4 KB, not the answer, sets most pages' price).
	Smooth float64
}

// Add adds o to c.
func (c *Cost) Add(o Cost) {
	c.Requests += o.Requests
	c.Items += o.Items
	c.RCU += o.RCU
	c.Nodes += o.Nodes
	c.EmptyQueries += o.EmptyQueries
	c.Smooth += o.Smooth
}

// MinReadRCU is the least DynamoDB bills a read request of the given
// consistency, whatever it reads: half a unit eventually consistent, one
// unit strongly consistent (a read of up to 4 KB: "An eventually consistent
// read request of an item up to 4 KB requires one-half read unit",
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html).
// A Query that finds nothing pays it too: "Queries that do not return
// results consume the minimum number of read capacity units for that type
// of read operation"
// (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Query.html).
// DynamoDB Local bills such a Query 0, which is why treeport prices reads by
// these rules rather than by DynamoDB Local's consumed figure.
func MinReadRCU(consistent bool) float64 {
	if consistent {
		return 1
	}
	return 0.5
}

// QueryPageRCU is DynamoDB's documented price of one Query page (one
// request) that reads bytes of items, eventually consistent unless
// consistent: the bytes of every item read, filtered or not, summed and
// rounded up to 4 KB, half a unit a 4 KB (one strongly consistent), and
// never less than MinReadRCU, also when the page read nothing. It is the
// one place the price of a Query is computed; the layouts' cost models use
// it, and bench and query --stats price the requests they send with it.
func QueryPageRCU(bytes int64, consistent bool) float64 {
	units := max(1, readUnits(bytes))
	return MinReadRCU(consistent) * float64(units)
}

// QueryCosts are the costs of the queries a CostModel prices about one
// node, each as Query answers it: get; children; descendants; descendants
// with MaxDepth 2 (Depth2); ancestors; all but get from relative depth 1.
//
// Every layout is priced on equal terms: given the node's id, and knowing
// the node is there (Request.Known), so that no query reads the node only
// to tell a leaf from a missing node. A query whose pattern needs the
// node's path pays for learning it, the same way in every layout: one
// GetItem of the node's own item (path and sharded-path read their Path
// so before descendants and ancestors; a PathKeyed layout, whose keys are
// paths, before every query but get: LearnsPath).
type QueryCosts struct {
	Get, Children, Descendants, Depth2, Ancestors Cost
}

// CostModel estimates what a layout's queries cost on one forest, from the
// requests they send and the sizes of the items they read. Add is given
// every item of the forest, in the order the layout emits them (node by
// node, in the order of the forest's Emit); then Estimate prices the
// queries about each sampled node.
//
// DynamoDB's read accounting, for the eventually consistent reads the
// queries use, as the developer guide's "Capacity unit consumption for
// read operations" gives it
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html#read-operation-consumption):
// half a unit per started 4 KB; a Query pays for all the items it reads,
// filtered or not ("the number of read units ... is the sum of the sizes
// of all items read, rounded up to the next 4 KB boundary"), per page of
// at most 1 MB (a Query "returns at most 1 MB of data" a request), and at
// least half a unit per page, also an empty one (MinReadRCU); a GetItem
// pays for its item rounded up to 4 KB; a BatchGetItem pays per item, each
// rounded up to 4 KB before they are added ("DynamoDB processes each item
// in the batch as an individual GetItem request").
type CostModel interface {
	// Add records one item of size bytes. It returns the forest index of
	// the node the item belongs to, and of the other node its keys may
	// name (a closure row's ancestor), or -1.
	Add(item Item, size int) (node, other int32, err error)
	// Estimate returns the cost of the queries about sampled node k (an
	// index into the sample), priced by DynamoDB's documented rules (a
	// Query that reads nothing is billed MinReadRCU).
	Estimate(k int) QueryCosts
}

// The read accounting's units.
const (
	readUnit  = 4096
	pageBytes = 1 << 20
)

func readUnits(b int64) int64 { return (b + readUnit - 1) / readUnit }

// getCost is one GetItem of an item of size b.
func getCost(b int64) Cost {
	rcu := MinReadRCU(false) * float64(max(1, readUnits(b)))
	return Cost{Requests: 1, Items: 1, RCU: rcu, Smooth: rcu}
}

// sizeSum counts items and their bytes.
type sizeSum struct {
	n     int64
	bytes int64
}

func (s *sizeSum) add(size int) { s.n++; s.bytes += int64(size) }

// queryCost is one eventually consistent Query (and its further pages)
// reading the items s counts. Pages are taken as full 1 MB pages, so the
// rounding of a page boundary can add half a unit per page: the estimate is
// exact for answers under 1 MB. A Query that finds nothing is one page
// that read nothing.
func queryCost(s sizeSum) Cost {
	if s.n == 0 {
		return Cost{Requests: 1, RCU: QueryPageRCU(0, false), EmptyQueries: 1, Smooth: MinReadRCU(false)}
	}
	pages := max(1, (s.bytes+pageBytes-1)/pageBytes)
	rcu := QueryPageRCU(s.bytes, false)
	// Each page is billed at least the minimum.
	rcu = max(rcu, float64(pages)*MinReadRCU(false))
	// The minimum a page and the bytes, added rather than the larger: the
	// minimum grows with the number of Queries (a breadth-first walk's), the
	// bytes with the answer.
	smooth := float64(pages)*MinReadRCU(false) + MinReadRCU(false)*float64(s.bytes)/readUnit
	return Cost{Requests: pages, Items: s.n, RCU: rcu, Smooth: smooth}
}

// batchCost is BatchGetItem of items of the given sizes, 100 keys a request.
type batchCost struct{ c Cost }

func (b *batchCost) add(size int32) {
	b.c.Items++
	rcu := MinReadRCU(false) * float64(max(1, readUnits(int64(size))))
	b.c.RCU += rcu
	b.c.Smooth += rcu
}

func (b *batchCost) done() Cost {
	b.c.Requests = (b.c.Items + MaxBatchGetKeys - 1) / MaxBatchGetKeys
	return b.c
}

// costForest is what every layout's cost model keeps: the forest, the
// sample, and the size of each node's own item (the item Node rebuilds it
// from).
type costForest struct {
	f      *transform.Forest
	sample []int32
	own    []int32
	// read holds, for an index whose copy of an item is smaller than the
	// item (a table model's that projects fewer attributes), the size of
	// each node's copy, which a Query of the index reads; nil for every
	// index of a layout's.
	read map[string][]int32
}

// setIndexSize records that index holds size bytes of node i's item.
func (c *costForest) setIndexSize(index string, i int32, size int) {
	if c.read == nil {
		c.read = map[string][]int32{}
	}
	if c.read[index] == nil {
		c.read[index] = make([]int32, len(c.own))
	}
	c.read[index][i] = int32(size)
}

// inIndex returns the size of each node's item as a Query of index reads
// it, by forest index.
func (c *costForest) inIndex(index string) []int32 {
	if r := c.read[index]; r != nil {
		return r
	}
	return c.own
}

// forest is the cost model's costForest, for a table model to record what
// its indexes hold.
func (c *costForest) forest() *costForest { return c }

func newCostForest(f *transform.Forest, sample []int32) costForest {
	return costForest{f: f, sample: sample, own: make([]int32, f.Len())}
}

// lookup is the forest index of the node with this id.
func (c *costForest) lookup(id string) (int32, error) {
	i := c.f.Lookup(id)
	if i < 0 {
		return -1, fmt.Errorf("layouts: an item of node %q, which is not in the forest", id)
	}
	return int32(i), nil
}

// walk calls fn with node i and every node below it, with its distance
// below i.
func (c *costForest) walk(i int32, fn func(y int32, rel int)) {
	type e struct {
		y   int32
		rel int
	}
	stack := []e{{i, 0}}
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		fn(top.y, top.rel)
		for _, ch := range c.f.Children(int(top.y)) {
			stack = append(stack, e{ch, top.rel + 1})
		}
	}
}

// ancestors calls fn with each node above i, from its parent up.
func (c *costForest) ancestors(i int32, fn func(a int32)) {
	for a := c.f.Parent(int(i)); a >= 0; a = c.f.Parent(a) {
		fn(int32(a))
	}
}

// get is the GetItem of node i's own item, which answers get and is how a
// query that needs the node's path learns it (LearnsPath).
func (c *costForest) get(i int32) Cost { return getCost(int64(c.own[i])) }

// getFirst is where every layout's Estimate of sample k starts: the
// sampled node i, the GetItem of its own item, and the estimate with that
// GetItem as its get (of one node).
func (c *costForest) getFirst(k int) (i int32, own Cost, out QueryCosts) {
	i = c.sample[k]
	own = c.get(i)
	out.Get = own
	out.Get.Nodes = 1
	return i, own, out
}

// addOwn records the size of the one item of the node with this id, for a
// layout that writes one item a node: its Add.
func (c *costForest) addOwn(id string, size int) (int32, int32, error) {
	i, err := c.lookup(id)
	if err != nil {
		return -1, -1, err
	}
	c.own[i] = int32(size)
	return i, -1, nil
}
