package layouts

import (
	"sync"

	"github.com/treeport/treeport/transform"
)

// Measure is what a set of nodes' items add up to, as Layout.Measure
// computes it from Stats alone. It powers the dry run and the key and size
// checks without building a single item. A Measure is not safe for
// concurrent use; measure in parallel into separate ones and Add them.
type Measure struct {
	// Nodes counts the nodes measured, Items their items, Bytes the items'
	// DynamoDB sizes, and WCU the write capacity units writing them costs:
	// for each item ceil(size / 1 KB) × (1 + the indexes it lands in).
	Nodes, Items, Bytes, WCU int64
	// IndexItems and IndexBytes count the copies of the items the indexes
	// store: an item that lands in k indexes is stored k more times, whole
	// in an index projecting ALL (every layout's), and as its projected
	// attributes in a table model's KEYS_ONLY or INCLUDE index
	// (IndexItemBytes). Storage is billed for the table and every index.
	IndexItems, IndexBytes int64
	// MaxItemBytes is the size of the largest item.
	MaxItemBytes int
	// Keys holds the longest key value in bytes (a number's decimal text)
	// for each key slot: [table PK, table SK, index 0 PK, index 0 SK, …], in
	// the order of Table().Indexes. A slot that does not exist (a table
	// without a sort key) stays 0. An index slot only counts the items that
	// land in that index.
	Keys []int
	// Collections holds the largest item collection (items sharing one
	// partition key value) of the table and then of each index.
	Collections []int64
	// Hot names, for each of Collections, the partition key value of that
	// largest collection (the first one measured at that size), as the
	// layout gives it: a load writes all of its items to one partition,
	// which DynamoDB serves at PartitionWCU at most. It costs no memory per
	// key: a layout's partition key values are a node's tree, parent or
	// ancestor, whose sizes the node's Stats carry already. Empty when the
	// layout does not name it.
	Hot []string
	// shared marks the collections every node's items land in (a table
	// model's partition key constant per tenant): Add sums them rather
	// than keeping the largest.
	shared []bool
}

// PartitionWCU is the most write capacity units a second DynamoDB serves
// one partition, and so one partition key value, of a table or of an index.
const PartitionWCU = 1000

// HotKeyAdvisor is a layout that can say how to spread a partition key
// value too hot to load in time: for the collection slot (0 the table,
// 1 + k index k) and the factor by which its writes must be spread, a
// short clause ("sharded-path with --shards 16 spreads it"); "" when it
// has none.
type HotKeyAdvisor interface {
	SpreadAdvice(slot int, factor int) string
}

// NewMeasure returns an empty Measure sized for the layout's table.
func NewMeasure(l Layout) *Measure {
	n := 1 + len(l.Table().Indexes)
	return &Measure{Keys: make([]int, 2*n), Collections: make([]int64, n), Hot: make([]string, n)}
}

// Add adds o to m: counts are summed and maxima kept.
func (m *Measure) Add(o *Measure) {
	m.Nodes += o.Nodes
	m.Items += o.Items
	m.Bytes += o.Bytes
	m.WCU += o.WCU
	m.IndexItems += o.IndexItems
	m.IndexBytes += o.IndexBytes
	m.MaxItemBytes = max(m.MaxItemBytes, o.MaxItemBytes)
	for len(m.Keys) < len(o.Keys) {
		m.Keys = append(m.Keys, 0)
	}
	for i, k := range o.Keys {
		m.Keys[i] = max(m.Keys[i], k)
	}
	for len(m.Collections) < len(o.Collections) {
		m.Collections = append(m.Collections, 0)
	}
	for len(m.Hot) < len(o.Collections) {
		m.Hot = append(m.Hot, "")
	}
	for len(m.shared) < len(o.shared) {
		m.shared = append(m.shared, false)
	}
	for i, c := range o.Collections {
		if i < len(o.shared) && o.shared[i] {
			m.shared[i] = true
			m.Collections[i] += c
			if i < len(o.Hot) && o.Hot[i] != "" {
				m.Hot[i] = o.Hot[i]
			}
			continue
		}
		if c > m.Collections[i] && i < len(o.Hot) {
			m.Hot[i] = o.Hot[i]
		}
		m.Collections[i] = max(m.Collections[i], c)
	}
}

// item adds one item of the given size landing in the given number of indexes.
func (m *Measure) item(size, indexes int) {
	m.Items++
	m.Bytes += int64(size)
	m.IndexItems += int64(indexes)
	m.IndexBytes += int64(size * indexes)
	m.WCU += int64(transform.WCU(size) * (1 + indexes))
	m.MaxItemBytes = max(m.MaxItemBytes, size)
}

// projectedItem is item for an item whose copies in the indexes it lands
// in are not whole (an index projecting KEYS_ONLY or INCLUDE): copies holds
// each copy's size.
func (m *Measure) projectedItem(size int, copies []int) {
	m.item(size, len(copies))
	m.IndexBytes -= int64(size * len(copies))
	m.WCU -= int64(transform.WCU(size) * len(copies))
	for _, c := range copies {
		m.IndexBytes += int64(c)
		m.WCU += int64(transform.WCU(c)) // the copy's write (layouts.IndexUnits)
	}
}

func (m *Measure) key(slot, n int) {
	if slot >= len(m.Keys) {
		m.Keys = append(m.Keys, make([]int, slot+1-len(m.Keys))...)
	}
	m.Keys[slot] = max(m.Keys[slot], n)
}

func (m *Measure) collection(i int, n int64) {
	if i >= len(m.Collections) {
		m.Collections = append(m.Collections, make([]int64, i+1-len(m.Collections))...)
	}
	m.Collections[i] = max(m.Collections[i], n)
}

// tops reports whether a collection of n items in slot i is larger than
// any measured so far, for a layout to name its value only then.
func (m *Measure) tops(i int, n int64) bool {
	return i >= len(m.Collections) || n > m.Collections[i]
}

// collectionOf is collection, naming the partition key value of a new
// largest collection.
func (m *Measure) collectionOf(i int, n int64, value string) {
	if m.tops(i, n) {
		for len(m.Hot) <= i {
			m.Hot = append(m.Hot, "")
		}
		m.Hot[i] = value
	}
	m.collection(i, n)
}

// digits is the length of n's decimal text, n ≥ 0.
func digits(n int) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}

// numberSize is transform.NumberSize(strconv.Itoa(n)) for n ≥ 0, without
// formatting: one byte per two significant digits, plus one.
func numberSize(n int) int {
	if n == 0 {
		return 1
	}
	for n%10 == 0 {
		n /= 10
	}
	return (digits(n)+1)/2 + 1
}

// maxNumberSize is the largest numberSize(r) for 1 ≤ r ≤ d.
func maxNumberSize(d int) int {
	if d <= 0 {
		return numberSize(0)
	}
	s := digits(d)
	p := 1
	for range s - 1 {
		p *= 10
	}
	// The s-digit numbers up to d all end in zeros when d is a power of ten,
	// so they have fewer significant digits.
	if d == p && s > 1 {
		s--
	}
	return (s+1)/2 + 1
}

// numberSizeTable holds the sums of numberSize(r) for 0 ≤ r ≤ i, so that a
// closure node's rows are measured in O(1) at any usual depth.
const numberSizeTable = 1 << 14

var numberSizeSums = sync.OnceValue(func() []int64 {
	t := make([]int64, numberSizeTable)
	var sum int64
	for r := range t {
		sum += int64(numberSize(r))
		t[r] = sum
	}
	return t
})

// sumNumberSize is Σ numberSize(r) for 0 ≤ r ≤ d. Beyond the table it
// counts instead of adding: a closure node 100,000 levels deep is measured
// in O(log² d), not O(d), so that a deep chain's dry run is not quadratic.
func sumNumberSize(d int) int64 {
	t := numberSizeSums()
	if d < len(t) {
		return t[d]
	}
	return int64(numberSize(0)) + sumNumberSizeFrom1(d)
}

// sumNumberSizeFrom1 is Σ numberSize(r) for 1 ≤ r ≤ d. r is m × 10^z with m
// not a multiple of 10, and numberSize(r) depends only on digits(m): for
// each z, the m up to d / 10^z are counted by their number of digits.
func sumNumberSizeFrom1(d int) int64 {
	// notTens(x) counts 1 ≤ m ≤ x that are not multiples of 10.
	notTens := func(x int) int64 { return int64(x - x/10) }
	var sum int64
	for top := d; top > 0; top /= 10 {
		lo := 1
		for s := 1; lo <= top; s++ {
			hi := min(top, lo*10-1)
			sum += (notTens(hi) - notTens(lo-1)) * int64((s+1)/2+1)
			lo *= 10
		}
	}
	return sum
}

// StoredItems and StoredBytes are what storage is billed for: the items of
// the table and their copies in every index.
func (m *Measure) StoredItems() int64 { return m.Items + m.IndexItems }

// StoredBytes: see StoredItems.
func (m *Measure) StoredBytes() int64 { return m.Bytes + m.IndexBytes }
