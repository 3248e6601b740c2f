package models

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// fullPathCosts is a full-path model's cost model: its queries read one
// partition, in the order of its keys, so it keeps every item's key and
// size in that order and follows each query's reads through it, page by
// page, as fullPathQuery sends them (a node known to be there:
// Request.Known). A node without an item is an implicit one.
type fullPathCosts struct {
	m      *modelLayout
	f      *transform.Forest
	sample []int32
	size   []int32 // by forest index; 0: no item
	has    []bool
	keys   []fpKey // sorted by key, once Estimate is first called
	sorted bool
}

type fpKey struct {
	sk   string
	size int32
}

func (m *modelLayout) fullPathCosts(f *transform.Forest, sample []int32) *fullPathCosts {
	return &fullPathCosts{m: m, f: f, sample: sample, size: make([]int32, f.Len()), has: make([]bool, f.Len())}
}

func (c *fullPathCosts) Add(item layouts.Item, size int) (int32, int32, error) {
	sk, _ := layouts.MapView(item).Str(c.m.sk.name)
	id, ok := strings.CutPrefix(sk, c.m.skPrefix)
	i := c.f.Lookup(id)
	if !ok || i < 0 {
		return -1, -1, fmt.Errorf("models: model %s: an item of node %q, which is not in the forest", c.m.name, id)
	}
	c.size[i], c.has[i] = int32(size), true
	c.keys = append(c.keys, fpKey{sk: sk, size: int32(size)})
	c.sorted = false
	return int32(i), -1, nil
}

// at is the index of the first key at or after sk.
func (c *fullPathCosts) at(sk string) int {
	return sort.Search(len(c.keys), func(j int) bool { return c.keys[j].sk >= sk })
}

// page is the cost of one Query page reading keys.
func page(keys []fpKey) layouts.Cost {
	var s layouts.SizeSum
	for _, k := range keys {
		s.Add(int(k.size))
	}
	return layouts.QueryCost(s)
}

// Estimate prices the queries about sampled node k.
func (c *fullPathCosts) Estimate(k int) layouts.QueryCosts {
	if !c.sorted {
		slices.SortFunc(c.keys, func(a, b fpKey) int { return strings.Compare(a.sk, b.sk) })
		c.sorted = true
	}
	i := int(c.sample[k])
	id := c.f.ID(i)
	var out layouts.QueryCosts
	out.Get = c.get(i)
	out.Get.Nodes = 1

	out.Children = c.children(id)
	out.Children.Nodes = int64(len(c.f.Children(i)))

	under := c.m.skPrefix + id + c.m.delim
	lo := c.at(under)
	hi := lo
	for hi < len(c.keys) && strings.HasPrefix(c.keys[hi].sk, under) {
		hi++
	}
	d := page(c.keys[lo:hi])
	var all, band2 int64
	c.walk(i, 0, func(rel int) {
		all++
		if rel <= 2 {
			band2++
		}
	})
	d.Nodes = all
	out.Descendants = d
	d.Nodes = band2 // the band is kept as the keys are read: the same reads
	out.Depth2 = d

	out.Ancestors = c.get(i)
	var b layouts.BatchCost
	var keys int64
	for p := c.f.Parent(i); p >= 0; p = c.f.Parent(p) {
		if c.has[p] {
			b.Add(c.size[p])
		}
		keys++
	}
	if keys > 0 {
		// BatchGetItem of every ancestor's key, found or not (an
		// implicit node's is not).
		bc := b.Cost()
		bc.Requests = (keys + layouts.MaxBatchGetKeys - 1) / layouts.MaxBatchGetKeys
		bc.Smooth = max(bc.Smooth, float64(bc.Requests)*layouts.MinReadRCU(false))
		out.Ancestors.Add(bc)
	}
	out.Ancestors.Nodes = keys
	return out
}

// get is the GetItem of node i: its item, or, for an implicit node, a
// GetItem that finds nothing.
func (c *fullPathCosts) get(i int) layouts.Cost {
	if c.has[i] {
		return layouts.GetCost(int64(c.size[i]))
	}
	return layouts.Cost{Requests: 1, RCU: layouts.MinReadRCU(false), Smooth: layouts.MinReadRCU(false)}
}

// walk calls fn with the relative depth of every node below i.
func (c *fullPathCosts) walk(i, rel int, fn func(rel int)) {
	for _, ch := range c.f.Children(i) {
		fn(rel + 1)
		c.walk(int(ch), rel+1, fn)
	}
}

// children follows fullPathChildren's Queries through the keys: pages of
// fullPathPage keys, each Query ending at the first key below a child
// folder (the next starting past that folder's keys) or, past the first,
// at the first key outside the node's.
func (c *fullPathCosts) children(id string) layouts.Cost {
	under := c.m.skPrefix + id + c.m.delim
	var total layouts.Cost
	pos := c.at(under)
	end := pos // the first Query is begins_with: its keys alone
	for end < len(c.keys) && strings.HasPrefix(c.keys[end].sk, under) {
		end++
	}
	for {
		next, done := -1, false
		for first := true; ; first = false {
			if pos >= end {
				if first {
					total.Add(layouts.QueryCost(layouts.SizeSum{}))
				}
				done = true
				break
			}
			pg := c.keys[pos:min(pos+fullPathPage, end)]
			total.Add(page(pg))
			for _, k := range pg {
				if !strings.HasPrefix(k.sk, under) {
					done = true
					break
				}
				rest := k.sk[len(under):]
				if j := strings.Index(rest, c.m.delim); j >= 0 {
					if past, ok := c.m.afterDelim(under + rest[:j]); ok {
						next = c.at(past)
						break
					}
				}
			}
			if done || next >= 0 {
				break
			}
			pos += len(pg)
		}
		if done || next < 0 {
			return total
		}
		pos, end = next, len(c.keys) // sk >= past: to the partition's end
	}
}
