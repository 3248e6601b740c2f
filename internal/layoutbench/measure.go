package layoutbench

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

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
	f      *transform.Forest
	fields layouts.Fields
	spec   layouts.TableSpec

	storage []Storage
	parts   []*partCount // the table's, then each index's
	maxItem int

	// size1 is each node's own item: the path item, the closure self row,
	// the prefix object row. size2 is the prefix listing row.
	size1, size2 []int32
	// cur is the node whose items arrive; anc walks up its ancestors along
	// a closure node's rows.
	cur, anc int32

	// sampleAt maps a forest index to its place in the sample, or -1;
	// acc holds what the closure rows add up to for each sampled node.
	sampleAt []int32
	acc      []closureAcc
}

// closureAcc is what a sampled node X's queries read in a closure table:
// the ByAncestor rows naming X (by relative depth band) and X's own
// ancestor rows.
type closureAcc struct {
	child, band2, desc sizeSum // ByAncestor rows (Y, r) with AncestorId X: r = 1, r ≤ 2, all r ≥ 1
	anc                sizeSum // X's rows (X, r), r ≥ 1
}

// sizeSum counts items and their bytes.
type sizeSum struct {
	n     int64
	bytes int64
}

func (s *sizeSum) add(size int) { s.n++; s.bytes += int64(size) }

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

func newSink(f *transform.Forest, l layouts.Layout, sample []sampled) (*sink, error) {
	fields, err := layouts.FieldsOf(l)
	if err != nil {
		return nil, err
	}
	spec := l.Table()
	s := &sink{f: f, fields: fields, spec: spec, cur: -1, anc: -1}
	s.storage = append(s.storage, Storage{})
	s.parts = append(s.parts, &partCount{attr: spec.PK.Name, at: map[string]int32{}})
	for _, ix := range spec.Indexes {
		s.storage = append(s.storage, Storage{Index: ix.Name})
		s.parts = append(s.parts, &partCount{index: ix.Name, attr: ix.PK.Name, at: map[string]int32{}})
	}
	s.size1 = make([]int32, f.Len())
	if fields.Layout == layouts.PrefixName {
		s.size2 = make([]int32, f.Len())
	}
	if fields.Layout == layouts.ClosureName {
		s.sampleAt = make([]int32, f.Len())
		for i := range s.sampleAt {
			s.sampleAt[i] = -1
		}
		for k, x := range sample {
			s.sampleAt[x.node] = int32(k)
		}
		s.acc = make([]closureAcc, len(sample))
	}
	return s, nil
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
	if err := s.place(item, size); err != nil {
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
		s.count(1+k, v, size)
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

// place finds the node the item belongs to and records its size.
func (s *sink) place(item layouts.Item, size int) error {
	f := s.fields
	str := func(name string) string {
		v, _ := item[name].(*types.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	lookup := func(id string) (int32, error) {
		i := s.f.Lookup(id)
		if i < 0 {
			return -1, fmt.Errorf("layoutbench: an item of node %q, which is not in the input", id)
		}
		return int32(i), nil
	}
	var err error
	switch f.Layout {
	case layouts.PathName, layouts.ShardedName:
		if s.cur, err = lookup(str(f.ID)); err != nil {
			return err
		}
		s.size1[s.cur] = int32(size)
	case layouts.PrefixName:
		if str(f.Child) == f.Delimiter {
			key := str(f.Key)
			if s.cur, err = lookup(key[strings.LastIndex(key, f.Delimiter)+len(f.Delimiter):]); err != nil {
				return err
			}
			s.size1[s.cur] = int32(size)
			return nil
		}
		if s.cur < 0 {
			return fmt.Errorf("layoutbench: a prefix listing row before any object row")
		}
		s.size2[s.cur] = int32(size)
	case layouts.ClosureName:
		n, _ := item[f.RelativeDepth].(*types.AttributeValueMemberN)
		if n == nil {
			return fmt.Errorf("layoutbench: a closure row without %s", f.RelativeDepth)
		}
		r, err := strconv.Atoi(n.Value)
		if err != nil {
			return fmt.Errorf("layoutbench: a closure row with %s %q", f.RelativeDepth, n.Value)
		}
		if r == 0 {
			if s.cur, err = lookup(str(f.ID)); err != nil {
				return err
			}
			s.anc = s.cur
			s.size1[s.cur] = int32(size)
			return nil
		}
		// Rows come from the parent up: each names the parent of the one
		// before.
		if s.anc < 0 || s.f.Parent(int(s.anc)) < 0 {
			return fmt.Errorf("layoutbench: closure row %d of %q has no ancestor that far up", r, str(f.ID))
		}
		s.anc = int32(s.f.Parent(int(s.anc)))
		if k := s.sampleAt[s.anc]; k >= 0 {
			a := &s.acc[k]
			a.desc.add(size)
			if r == 1 {
				a.child.add(size)
			}
			if r <= 2 {
				a.band2.add(size)
			}
		}
		if k := s.sampleAt[s.cur]; k >= 0 {
			s.acc[k].anc.add(size)
		}
	}
	return nil
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
