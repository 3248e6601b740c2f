package layoutbench

import (
	"github.com/treeport/treeport/layouts"
)

// cost is what one query takes: requests, items read (a Query's
// ScannedCount, the items a GetItem or BatchGetItem returned), read
// capacity, and the nodes in its answer.
type cost struct {
	req, items int64
	rcu        float64
	nodes      int64
}

func (c *cost) add(o cost) {
	c.req += o.req
	c.items += o.items
	c.rcu += o.rcu
	c.nodes += o.nodes
}

// DynamoDB's read accounting, eventually consistent reads (what the
// exporter's queries use): half a unit per started 4 KB; a Query pays for
// all the items it reads, filtered or not, summed per page of at most 1 MB,
// and at least half a unit per page; a GetItem or a BatchGetItem pays per
// item.
const (
	readUnit   = 4096
	pageBytes  = 1 << 20
	batchGetKs = 100 // keys per BatchGetItem
)

func units(b int64) int64 { return (b + readUnit - 1) / readUnit }

// getCost is one GetItem of an item of size b.
func getCost(b int64) cost {
	return cost{req: 1, items: 1, rcu: 0.5 * float64(max(1, units(b)))}
}

// queryCost is one Query (and its further pages) reading n items of b
// bytes in all. Pages are taken as full 1 MB pages, so the rounding of a
// page boundary can add half a unit per page: the estimate is exact for
// answers under 1 MB.
//
// A Query that finds nothing is billed emptyQuery: DynamoDB's minimum of
// half a unit a request, as for a GetItem of a missing item; DynamoDB Local
// bills it 0 (tests hold the model to the server with that rule).
func queryCost(s sizeSum, emptyQuery float64) cost {
	if s.n == 0 {
		return cost{req: 1, rcu: emptyQuery}
	}
	pages := max(1, (s.bytes+pageBytes-1)/pageBytes)
	return cost{req: pages, items: s.n, rcu: 0.5 * float64(max(pages, units(s.bytes)))}
}

// emptyQueryRCU is what the model bills a Query that reads nothing.
const emptyQueryRCU = 0.5

// batchCost is BatchGetItem of items of the given sizes, 100 keys a request.
type batchCost struct{ c cost }

func (b *batchCost) add(size int32) {
	b.c.items++
	b.c.rcu += 0.5 * float64(max(1, units(int64(size))))
}

func (b *batchCost) done() cost {
	b.c.req = (b.c.items + batchGetKs - 1) / batchGetKs
	return b.c
}

// estimate is the cost of each query kind about sampled node k, from the
// layout's requests (as the exporter sends them) and the sizes the sink
// recorded. It follows exporter.Query: the prefix queries are given the
// node's path, as an application that stores it would.
func estimate(s *sink, x sampled, k int, emptyQuery float64) map[string]cost {
	f := s.f
	i := int(x.node)
	kids := f.Children(i)
	out := map[string]cost{}
	self := getCost(int64(s.size1[i]))
	self.nodes = 1
	out[KindGet] = self
	// own is the GetItem that tells a leaf (root) from a missing node when a
	// query comes back empty; it is not part of the answer.
	own := getCost(int64(s.size1[i]))

	// The subtree below the node, by relative depth.
	var desc, band2 sizeSum
	walk := func(fn func(y int32, rel int)) {
		type e struct {
			y   int32
			rel int
		}
		stack := []e{{int32(i), 0}}
		for len(stack) > 0 {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			fn(top.y, top.rel)
			for _, c := range f.Children(int(top.y)) {
				stack = append(stack, e{c, top.rel + 1})
			}
		}
	}
	ancestors := func(fn func(a int32)) {
		for a := f.Parent(i); a >= 0; a = f.Parent(a) {
			fn(int32(a))
		}
	}
	depth := int64(x.depth)

	switch s.fields.Layout {
	case layouts.PathName, layouts.ShardedName:
		var children sizeSum
		for _, c := range kids {
			children.add(int(s.size1[c]))
		}
		c := queryCost(children, emptyQuery)
		if children.n == 0 {
			c.add(own)
		}
		c.nodes = children.n
		out[KindChildren] = c

		shards := max(1, s.fields.Shards)
		perShard := make([]sizeSum, shards)
		walk(func(y int32, rel int) {
			if rel == 0 {
				return
			}
			desc.add(int(s.size1[y]))
			if rel <= 2 {
				band2.add(0)
			}
			k := 0
			if s.fields.Shards > 0 {
				k = layouts.Shard(f.ID(int(y)), s.fields.Shards) - 1
			}
			perShard[k].add(int(s.size1[y]))
		})
		d := own // the node's Path first
		for _, p := range perShard {
			d.add(queryCost(p, emptyQuery))
		}
		d.nodes = desc.n
		out[KindDescendants] = d
		d.nodes = band2.n // the band is a filter: the same reads
		out[KindDepth2] = d

		var b batchCost
		ancestors(func(a int32) { b.add(s.size1[a]) })
		a := own
		a.add(b.done())
		a.nodes = depth
		out[KindAncestors] = a

	case layouts.ClosureName:
		acc := s.acc[k]
		for _, q := range []struct {
			kind string
			rows sizeSum
			band int
		}{{KindChildren, acc.child, 1}, {KindDescendants, acc.desc, -1}, {KindDepth2, acc.band2, 2}} {
			c := queryCost(q.rows, emptyQuery)
			if q.rows.n == 0 {
				c.add(own)
			} else if !s.fields.CopyAll {
				// The rows hold only the copied attributes: the nodes'
				// own rows are read too.
				var b batchCost
				walk(func(y int32, rel int) {
					if rel > 0 && (q.band < 0 || rel <= q.band) {
						b.add(s.size1[y])
					}
				})
				c.add(b.done())
			}
			c.nodes = q.rows.n
			out[q.kind] = c
		}
		a := queryCost(acc.anc, emptyQuery)
		if acc.anc.n == 0 {
			a.add(own)
		} else {
			var b batchCost
			ancestors(func(a int32) { b.add(s.size1[a]) })
			a.add(b.done())
		}
		a.nodes = depth
		out[KindAncestors] = a

	case layouts.PrefixName:
		// listing is one listing-partition Query: the children of z.
		listing := func(z int32) cost {
			var rows sizeSum
			for _, c := range f.Children(int(z)) {
				rows.add(int(s.size2[c]))
			}
			return queryCost(rows, emptyQuery)
		}
		for _, q := range []struct {
			kind string
			band int
		}{{KindChildren, 1}, {KindDescendants, -1}, {KindDepth2, 2}} {
			var c cost
			var b batchCost
			walk(func(y int32, rel int) {
				if q.band < 0 || rel < q.band {
					c.add(listing(y)) // breadth first: a Query per node above the band's last level
				}
				if rel > 0 && (q.band < 0 || rel <= q.band) {
					b.add(s.size1[y])
				}
			})
			if len(kids) == 0 {
				c.add(own)
			}
			c.add(b.done())
			c.nodes = b.c.items
			out[q.kind] = c
		}
		var b batchCost
		b.add(s.size1[i])
		ancestors(func(a int32) { b.add(s.size1[a]) })
		a := b.done()
		a.nodes = depth
		out[KindAncestors] = a
	}
	return out
}
