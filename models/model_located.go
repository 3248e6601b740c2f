package models

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// A located model (issue 25's composite sort key, Alex DeBrie's store
// locations): with path ids, the table is keyed by the node's name
// ({name}: StoreNumber), and one index, serving ByParent, by its root
// ({root}: Country) and the names between ({parent_subpath}:
// StateCityPostcode = WA#SEATTLE#98101). Only leaves (the stores) have
// items; the inner nodes (countries, states, cities, postcodes) are named
// by their keys alone, and cannot hold attributes. Names repeat among the
// inner nodes (PORTLAND in OR and in ME), never among the leaves, whose
// name is the table's key. The queries read the index, grouped at the
// delimiter as a full-path model's are (model_fullpath.go):
//
//   - get: a leaf is the GetItem of its name, whose keys must give its path
//     id; an inner node is there when a Query of the index below it, with
//     Limit 1, finds an item (its leaves, StateCityPostcode = its names,
//     or deeper, begins_with(its names + "#"));
//   - children: the leaves right below (StateCityPostcode = its names),
//     and the inner children, listed as a full-path model lists its folders:
//     a Query of begins_with(its names + "#") (for a root, its whole
//     partition) that ends at each child's first key, the next starting
//     past that child's keys;
//   - descendants: the same two Queries to their end, the inner nodes
//     between filled in;
//   - ancestors: named by the path id: no read but the node's own.

// LeavesOnly reports whether l is a table model that keeps only its
// leaves' items (a located model, keyed by the node's name): an inner
// node cannot hold attributes there.
func LeavesOnly(l layouts.Layout) bool {
	m, ok := l.(*modelLayout)
	return ok && m.located
}

// locatedKeys is tableKeys' check of a model keyed by {name}: only the
// leaves have items, so the inner nodes are implicit.
func (p *modelParser) locatedKeys() error {
	fail, m := p.fail, p.m
	if !m.implicitInner {
		return fail("implicit_inner", "a table keyed by the node's name ({name}) holds the leaves alone (an inner node's name may repeat: PORTLAND in OR and in ME): give \"implicit_inner\": true")
	}
	m.located = true
	return nil
}

// locatedIndex checks the one index of a located model: it serves
// ByParent, keyed by the root and the names between.
func (p *modelParser) locatedIndex(field string, x *modelIndex) error {
	fail, m := p.fail, p.m
	switch {
	case x.serves != "ByParent":
		return fail(field+".serves", "%q: a model keyed by {name} reads a node's children from the index keyed by {root} and {parent_subpath}: give \"serves\": \"ByParent\"", x.serves)
	case len(m.indexes) > 0:
		return fail(field, "a model keyed by {name} reads one index, keyed by {root} and {parent_subpath}: remove the others")
	case len(x.pk.tmpl.uses()) != 1 || !x.pk.tmpl.has(phRoot):
		return fail(field+".partition_key.template", "%q: a model keyed by {name} lists a node's subtree from the index partition of its root: build the partition key from {root}", x.pk.tmpl.text)
	case x.sk == nil || len(x.sk.tmpl.uses()) != 1 || x.sk.tmpl.parts[len(x.sk.tmpl.parts)-1].ph != phParentSubpath:
		return fail(field+".sort_key", "a model keyed by {name} lists a node's subtree with begins_with on the names between the root and a leaf: give a sort key that is {parent_subpath} at its end, after any text")
	case x.pk.absentOnRoot || x.sk.absentOnRoot || x.sparse:
		return fail(field, "the index holds every leaf: its keys cannot be absent on roots, nor the index sparse")
	}
	if pj := p.mj.Indexes[len(m.indexes)].Projection; pj != nil && pj.Type != "ALL" {
		return fail(field+".projection", "a model keyed by {name} reads its leaves whole from the index: project ALL")
	}
	x.projection = types.ProjectionTypeAll
	return nil
}

// unlocated reports whether an item of a located model's table lacks
// the index's keys: not in the index, it is no leaf (another entity's,
// such as a head office's item keyed by StoreNumber alone), and is never
// read as a node nor changed.
func (m *modelLayout) unlocated(item layouts.View) bool {
	if !m.located {
		return false
	}
	x := m.indexes[0]
	return item.Get(x.pk.name) == nil || item.Get(x.sk.name) == nil
}

// innerAttrsError is an inner node given attributes, which a located
// model cannot hold.
func (m *modelLayout) innerAttrsError(id string) error {
	return fmt.Errorf("%w: node %q has children and attributes, but model %s keeps only its leaves' items (keyed by their name); an inner node is named by its leaves' keys and cannot hold attributes: remove them, or move them to a leaf",
		transform.ErrReservedAttr, id, m.name)
}

// locatedIndexKeys are the index's key names and the text before its
// values.
func (m *modelLayout) locatedIndexKeys() (x *modelIndex, pkPre, skPre string) {
	x = m.indexes[0]
	pkPre = x.pk.tmpl.pre
	if n := len(x.sk.tmpl.parts); n > 1 {
		skPre = x.sk.tmpl.parts[0].lit
	}
	return x, pkPre, skPre
}

// locatedInput is a Query of the index: the root's partition, and, when
// cond is not "", a condition on the sort key with the value v (after
// the sort key's text).
func (m *modelLayout) locatedInput(root, cond, v string) layouts.QueryInput {
	x, pkPre, skPre := m.locatedIndexKeys()
	pk := pkPre + root + x.pk.tmpl.suf
	in := layouts.QueryInput{
		Index:        x.name,
		KeyCondition: "#c = :c",
		Names:        map[string]string{"#c": x.pk.name},
		Values:       map[string]types.AttributeValue{":c": layouts.StringValue(pk)},
	}
	if cond != "" {
		in.KeyCondition += " AND " + cond
		in.Names["#s"] = x.sk.name
		in.Values[":s"] = layouts.StringValue(skPre + v)
	}
	return in
}

// locatedSplit is a path id's root and the names below it, joined.
func (m *modelLayout) locatedSplit(id string) (root, sub string) {
	root, sub, _ = strings.Cut(id, m.delim)
	return root, sub
}

// locatedQuery answers a query of a located model's table.
func (m *modelLayout) locatedQuery(ctx context.Context, r layouts.Reads, q layouts.Request) ([]layouts.Result, error) {
	if q.ID == "" || m.checkPathID(q.ID, m.pathParent(q.ID)) != nil {
		return nil, &layouts.NotFoundError{Node: fmt.Sprintf("node %q", q.ID)}
	}
	switch q.Kind {
	case layouts.QueryChildren:
		res, err := m.locatedBelow(ctx, r, q.ID, 1, 1, true)
		if err != nil || len(res) > 0 || q.Known {
			return res, err
		}
		_, err = m.locatedAnchor(ctx, r, q)
		return nil, err
	case layouts.QueryDescendants:
		var res []layouts.Result
		found := false
		if q.MaxDepth != 0 {
			var err error
			if res, err = m.locatedBelow(ctx, r, q.ID, max(q.MinDepth, 1), q.MaxDepth, false); err != nil {
				return nil, err
			}
			found = len(res) > 0
		}
		if q.InBand(0) || (!found && !q.Known) {
			if found {
				q.Known = true
			}
			self, err := m.locatedAnchor(ctx, r, q)
			if err != nil {
				return nil, err
			}
			if q.InBand(0) {
				res = append(res, self)
			}
		}
		return res, nil
	}
	self, err := m.locatedAnchor(ctx, r, q)
	if err != nil {
		return nil, err
	}
	var res []layouts.Result
	if q.InBand(0) {
		res = append(res, self)
	}
	if q.Kind == layouts.QueryAncestors {
		for p, d := m.pathParent(q.ID), 1; p != ""; p, d = m.pathParent(p), d+1 {
			if q.InBand(d) {
				res = append(res, m.implicitResult(p, d))
			}
		}
	}
	return res, nil
}

// locatedAnchor reads the queried node: a leaf's item (GetItem of its
// name, whose keys must give its path id), or, for an inner node, the
// first leaf below it. Known skips the second read.
func (m *modelLayout) locatedAnchor(ctx context.Context, r layouts.Reads, q layouts.Request) (layouts.Result, error) {
	key := layouts.Item{}
	v := nodeVals{name: layouts.NameOf(q.ID, m.delim)}
	v.set(phName)
	for _, a := range []*modelAttr{m.pk, m.sk} {
		if a != nil {
			s, _ := a.tmpl.render(&v, m.delim)
			key[a.name] = m.value(a, s)
		}
	}
	item, err := r.GetItem(ctx, key)
	if err != nil {
		return layouts.Result{}, err
	}
	if item != nil && !m.foreign(layouts.MapView(item)) {
		n, err := m.fullPathResult(item, 0)
		if err != nil {
			return layouts.Result{}, err
		}
		if n.ID == q.ID {
			return n, nil
		}
	}
	if q.Known {
		return m.implicitResult(q.ID, 0), nil
	}
	root, sub := m.locatedSplit(q.ID)
	conds := []string{""}
	if strings.Contains(q.ID, m.delim) {
		conds = []string{"#s = :s", "begins_with(#s, :s)"}
	}
	for i, cond := range conds {
		v := sub
		if i == 1 {
			v += m.delim
		}
		in := m.locatedInput(root, cond, v)
		in.Limit = 1
		found := false
		err := r.Query(ctx, in, func(items []layouts.Item) error {
			for _, it := range items {
				found = found || !m.foreign(layouts.MapView(it))
			}
			return errListed
		})
		if err != nil && !errors.Is(err, errListed) {
			return layouts.Result{}, err
		}
		if found {
			return m.implicitResult(q.ID, 0), nil
		}
	}
	return layouts.Result{}, &layouts.NotFoundError{Node: fmt.Sprintf("node %q", q.ID)}
}

// locatedBelow reads the nodes below id at relative depths lo to hi (hi
// NoMaxDepth: no bound): the leaves right below it (one Query of the
// index at its names), and the leaves further down with the inner nodes
// between; with group (children), the inner children alone are listed,
// each Query ending at a child's first key and the next starting past the
// child's keys.
func (m *modelLayout) locatedBelow(ctx context.Context, r layouts.Reads, id string, lo, hi int, group bool) ([]layouts.Result, error) {
	root, sub := m.locatedSplit(id)
	depth0 := strings.Count(id, m.delim)
	at := map[string]int{}
	var res []layouts.Result
	add := func(n layouts.Result, real bool) {
		if n.RelativeDepth < lo || (hi != layouts.NoMaxDepth && n.RelativeDepth > hi) {
			return
		}
		if i, ok := at[n.ID]; ok {
			if real {
				res[i] = n
			}
			return
		}
		at[n.ID] = len(res)
		res = append(res, n)
	}
	leaf := func(it layouts.Item) error {
		n, err := m.fullPathResult(it, 0)
		if err != nil {
			return err
		}
		n.RelativeDepth = strings.Count(n.ID, m.delim) - depth0
		add(n, true)
		for p, d := n.Parent, n.RelativeDepth-1; d >= 1; p, d = m.pathParent(p), d-1 {
			add(m.implicitResult(p, d), false)
		}
		return nil
	}
	if depth0 > 0 {
		// The leaves right below: their names between are id's.
		err := r.Query(ctx, m.locatedInput(root, "#s = :s", sub), func(items []layouts.Item) error {
			for _, it := range items {
				if !m.foreign(layouts.MapView(it)) {
					if err := leaf(it); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	// The keys further down: "" for a root (every key of its partition),
	// else the names between and the delimiter.
	under := ""
	if depth0 > 0 {
		under = sub + m.delim
	}
	_, _, skPre := m.locatedIndexKeys()
	in := m.locatedInput(root, "begins_with(#s, :s)", under)
	if under == "" {
		in = m.locatedInput(root, "", "")
	}
	if !group {
		err := r.Query(ctx, in, func(items []layouts.Item) error {
			for _, it := range items {
				if !m.foreign(layouts.MapView(it)) {
					if err := leaf(it); err != nil {
						return err
					}
				}
			}
			return nil
		})
		return res, err
	}
	in.Limit = fullPathPage
	x, _, _ := m.locatedIndexKeys()
	for {
		var next string
		err := r.Query(ctx, in, func(items []layouts.Item) error {
			for _, it := range items {
				sv, _ := layouts.MapView(it).Str(x.sk.name)
				if !strings.HasPrefix(sv, skPre+under) {
					return errListed
				}
				if m.foreign(layouts.MapView(it)) {
					continue
				}
				rest := sv[len(skPre+under):]
				name, deeper := rest, false
				if i := strings.Index(rest, m.delim); i >= 0 {
					name, deeper = rest[:i], true
				}
				add(m.implicitResult(id+m.delim+name, 1), false)
				// Past the child's keys: those that are its names (its
				// leaves), then those below it.
				if !deeper {
					next = skPre + under + name + "\x00"
					return errSkipFolder
				}
				if past, ok := m.afterDelim(skPre + under + name); ok {
					next = past
					return errSkipFolder
				}
			}
			return nil
		})
		if !errors.Is(err, errSkipFolder) {
			if errors.Is(err, errListed) {
				err = nil
			}
			return res, err
		}
		in = m.locatedInput(root, "#s >= :s", "")
		in.Values[":s"] = layouts.StringValue(next)
		in.Limit = fullPathPage
	}
}

// locatedCosts is a located model's cost model: its queries read the
// index partition of a tree's root in the order of StateCityPostcode,
// so it keeps each root's leaves' index values and sizes in that order
// and follows each query's reads through them, page by page, as
// locatedQuery sends them (a node known to be there: Request.Known). An
// inner node has no item.
type locatedCosts struct {
	m      *modelLayout
	f      *transform.Forest
	sample []int32
	size   []int32 // by forest index; 0: no item
	has    []bool
	byName map[string]int32 // a leaf's name → its item's size
	parts  map[string][]fpKey
	sorted bool
}

func (m *modelLayout) locatedCosts(f *transform.Forest, sample []int32) *locatedCosts {
	return &locatedCosts{m: m, f: f, sample: sample, size: make([]int32, f.Len()), has: make([]bool, f.Len()),
		byName: map[string]int32{}, parts: map[string][]fpKey{}}
}

func (c *locatedCosts) Add(item layouts.Item, size int) (int32, int32, error) {
	id, _, ok := c.m.NodeOf(layouts.MapView(item))
	i := c.f.Lookup(id)
	if !ok || i < 0 {
		return -1, -1, fmt.Errorf("models: model %s: an item of node %q, which is not in the forest", c.m.name, id)
	}
	c.size[i], c.has[i] = int32(size), true
	c.byName[layouts.NameOf(id, c.m.delim)] = int32(size)
	x, _, _ := c.m.locatedIndexKeys()
	root, _ := c.m.locatedSplit(id)
	sv, _ := layouts.MapView(item).Str(x.sk.name)
	c.parts[root] = append(c.parts[root], fpKey{sk: sv, size: int32(size)})
	c.sorted = false
	return int32(i), -1, nil
}

// Estimate prices the queries about sampled node k.
func (c *locatedCosts) Estimate(k int) layouts.QueryCosts {
	if !c.sorted {
		for _, keys := range c.parts {
			slices.SortStableFunc(keys, func(a, b fpKey) int { return strings.Compare(a.sk, b.sk) })
		}
		c.sorted = true
	}
	i := int(c.sample[k])
	id := c.f.ID(i)
	root, sub := c.m.locatedSplit(id)
	keys := c.parts[root]
	_, _, skPre := c.m.locatedIndexKeys()
	at := func(s string) int { return sort.Search(len(keys), func(j int) bool { return keys[j].sk >= s }) }
	depth0 := c.f.Depth(i)
	under := skPre
	if depth0 > 0 {
		under = skPre + sub + c.m.delim
	}
	// The keys right below (= its names) and further down (begins_with).
	var equal, below []fpKey
	if depth0 > 0 {
		lo := at(skPre + sub)
		hi := lo
		for hi < len(keys) && keys[hi].sk == skPre+sub {
			hi++
		}
		equal = keys[lo:hi]
	}
	lo := at(under)
	hi := lo
	for hi < len(keys) && strings.HasPrefix(keys[hi].sk, under) {
		hi++
	}
	below = keys[lo:hi]

	var out layouts.QueryCosts
	out.Get = c.get(i)
	out.Get.Nodes = 1
	out.Ancestors = c.get(i)
	out.Ancestors.Nodes = int64(depth0)

	var d layouts.Cost
	if depth0 > 0 {
		d.Add(page(equal))
	}
	d.Add(page(below))
	var all, band2 int64
	(&fullPathCosts{f: c.f}).walk(i, 0, func(rel int) {
		all++
		if rel <= 2 {
			band2++
		}
	})
	d.Nodes = all
	out.Descendants = d
	d.Nodes = band2
	out.Depth2 = d

	var ch layouts.Cost
	if depth0 > 0 {
		ch.Add(page(equal))
	}
	pos, end := lo, hi
	for {
		if pos >= end {
			ch.Add(layouts.QueryCost(layouts.SizeSum{}))
			break
		}
		pg := keys[pos:min(pos+fullPathPage, end)]
		ch.Add(page(pg))
		first := pg[0].sk
		if !strings.HasPrefix(first, under) {
			break
		}
		rest := first[len(under):]
		next := first + "\x00"
		if j := strings.Index(rest, c.m.delim); j >= 0 {
			past, ok := c.m.afterDelim(under + rest[:j])
			if !ok {
				break // (not reached: the delimiter is not the last code point)
			}
			next = past
		}
		pos, end = at(next), len(keys)
	}
	ch.Nodes = int64(len(c.f.Children(i)))
	out.Children = ch
	return out
}

// get is the GetItem of the node's name: a leaf's item, or the leaf of
// that name elsewhere, or nothing.
func (c *locatedCosts) get(i int) layouts.Cost {
	if size, ok := c.byName[layouts.NameOf(c.f.ID(i), c.m.delim)]; ok {
		return layouts.GetCost(int64(size))
	}
	return layouts.Cost{Requests: 1, RCU: layouts.MinReadRCU(false), Smooth: layouts.MinReadRCU(false)}
}
