package layoutbench

import (
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// topN is how many partition key values the report lists.
const topN = 5

// sink measures a layout's items as Emit streams them: what the table and
// each index hold, the partition key values, and the sizes the read model
// needs. It keeps a few integers per node and one counter per partition key
// value, never the items.
type sink struct {
	f     *transform.Forest
	spec  layouts.TableSpec
	costs layouts.CostModel

	storage []Storage
	parts   []*partCount // the table's, then each index's
	maxItem int

	// cur is the node the item counted last belongs to; anc the other node
	// its keys may name (a closure row's ancestor), or -1.
	cur, anc int32
}

// partCount counts the items and bytes of each partition key value. Values
// that are a nearby node's id (the item's node, its parent, the closure
// row's ancestor: Id, ParentId, AncestorId, TreeId of a root's items) are
// counted in arrays indexed by node, which keeps a million-node forest's
// counts small and fast; the others (sharded GraphId, prefix keys) in a map.
type partCount struct {
	index, attr string
	at          map[string]int32
	vals        []string
	items       []int64
	bytes       []int64
	last        string // the map value counted last, and its index
	lastAt      int32

	nodeItems []int32 // by forest index; nil until a value is a node id
	nodeBytes []int64
}

func (p *partCount) add(v string, size int) {
	i, ok := p.lastAt, p.vals != nil && v == p.last
	if !ok {
		i, ok = p.at[v]
	}
	if !ok {
		i = int32(len(p.vals))
		p.at[v] = i
		p.vals = append(p.vals, v)
		p.items = append(p.items, 0)
		p.bytes = append(p.bytes, 0)
	}
	p.last, p.lastAt = v, i
	p.items[i]++
	p.bytes[i] += int64(size)
}

func (p *partCount) addNode(n int, node int32, size int) {
	if p.nodeItems == nil {
		p.nodeItems = make([]int32, n)
		p.nodeBytes = make([]int64, n)
	}
	p.nodeItems[node]++
	p.nodeBytes[node] += int64(size)
}

// partValue is one partition key value's counts.
type partValue struct {
	v            string
	items, bytes int64
}

// values calls fn with every value counted: the node-indexed ones (merged
// with a map entry of the same value, should there be one) and the rest.
func (p *partCount) values(f *transform.Forest, fn func(partValue)) {
	merged := map[int32]bool{}
	for i := range p.nodeItems {
		if p.nodeItems[i] == 0 {
			continue
		}
		pv := partValue{f.ID(i), int64(p.nodeItems[i]), p.nodeBytes[i]}
		if len(p.vals) > 0 {
			if j, ok := p.at[pv.v]; ok {
				pv.items += p.items[j]
				pv.bytes += p.bytes[j]
				merged[j] = true
			}
		}
		fn(pv)
	}
	for j, v := range p.vals {
		if !merged[int32(j)] {
			fn(partValue{v, p.items[j], p.bytes[j]})
		}
	}
}

// skew returns the number of distinct values and the topN values by items
// (byBytes false) or bytes, ties broken by the other figure and then by the
// value, so that the report is deterministic.
func (p *partCount) skew(f *transform.Forest, total int64) (int64, []PartitionValue, []PartitionValue) {
	less := func(byBytes bool) func(a, b partValue) bool {
		return func(a, b partValue) bool {
			x1, x2, y1, y2 := a.items, a.bytes, b.items, b.bytes
			if byBytes {
				x1, x2, y1, y2 = a.bytes, a.items, b.bytes, b.items
			}
			if x1 != y1 {
				return x1 > y1
			}
			if x2 != y2 {
				return x2 > y2
			}
			return a.v < b.v
		}
	}
	byItems, byBytes := less(false), less(true)
	var topI, topB []partValue
	keep := func(top []partValue, v partValue, before func(a, b partValue) bool) []partValue {
		if len(top) == topN && !before(v, top[topN-1]) {
			return top
		}
		k := sort.Search(len(top), func(i int) bool { return before(v, top[i]) })
		if len(top) < topN {
			top = append(top, partValue{})
		}
		copy(top[k+1:], top[k:])
		top[k] = v
		return top
	}
	var n int64
	p.values(f, func(v partValue) {
		n++
		topI = keep(topI, v, byItems)
		topB = keep(topB, v, byBytes)
	})
	conv := func(top []partValue) []PartitionValue {
		out := make([]PartitionValue, 0, len(top))
		for _, v := range top {
			share := 0.0
			if total > 0 {
				share = float64(v.items) / float64(total)
			}
			out = append(out, PartitionValue{Value: v.v, Items: v.items, Bytes: v.bytes, Share: share})
		}
		return out
	}
	return n, conv(topI), conv(topB)
}

func newSink(f *transform.Forest, l layouts.Layout, sample []sampled) *sink {
	nodes := make([]int32, len(sample))
	for k, x := range sample {
		nodes[k] = x.node
	}
	spec := l.Table()
	s := &sink{f: f, spec: spec, costs: l.Costs(f, nodes), cur: -1, anc: -1}
	s.storage = append(s.storage, Storage{})
	s.parts = append(s.parts, &partCount{attr: spec.PK.Name, at: map[string]int32{}})
	for _, ix := range spec.Indexes {
		s.storage = append(s.storage, Storage{Index: ix.Name})
		s.parts = append(s.parts, &partCount{index: ix.Name, attr: ix.PK.Name, at: map[string]int32{}})
	}
	return s
}

// keyString is a key value as text: a string, a number's decimal text, a
// binary's bytes.
func keyString(v types.AttributeValue) (string, bool) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return v.Value, true
	case *types.AttributeValueMemberN:
		return v.Value, true
	case *types.AttributeValueMemberB:
		return string(v.Value), true
	}
	return "", false
}

// add measures one item. Items arrive node by node, in the layout's order.
func (s *sink) add(item layouts.Item) error {
	size := transform.ItemSize(item)
	s.maxItem = max(s.maxItem, size)
	var err error
	if s.cur, s.anc, err = s.costs.Add(item, size); err != nil {
		return err
	}
	s.count(0, item[s.spec.PK.Name], size)
	for k, ix := range s.spec.Indexes {
		v, ok := item[ix.PK.Name]
		if !ok {
			continue
		}
		if ix.SK != nil {
			if _, ok := item[ix.SK.Name]; !ok {
				continue
			}
		}
		s.count(1+k, v, layouts.IndexItemBytes(s.spec, ix, item, size))
	}
	return nil
}

// count adds an item to the table (k = 0) or an index.
func (s *sink) count(k int, key types.AttributeValue, size int) {
	s.storage[k].Items++
	s.storage[k].Bytes += int64(size)
	v, _ := keyString(key)
	p := s.parts[k]
	if _, isS := key.(*types.AttributeValueMemberS); isS && s.cur >= 0 {
		for _, n := range [...]int32{s.cur, s.anc, int32(s.f.Parent(int(s.cur)))} {
			if n >= 0 && s.f.ID(int(n)) == v {
				p.addNode(s.f.Len(), n, size)
				return
			}
		}
	}
	p.add(v, size)
}

// skew returns the hottest partitions of the table and of each index.
func (s *sink) skew() []PartitionSkew {
	out := make([]PartitionSkew, len(s.parts))
	for k, p := range s.parts {
		n, byItems, byBytes := p.skew(s.f, s.storage[k].Items)
		out[k] = PartitionSkew{Index: p.index, Attr: p.attr, Partitions: n, ByItems: byItems, ByBytes: byBytes}
	}
	return out
}
