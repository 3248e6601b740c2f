package layouts

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/treeport/treeport/transform"
)

var adjacencySchema = schema{
	layout:  AdjacencyName,
	attrs:   []string{"Id", "ParentId"},
	indexes: []string{"ByParent"},
}

// adjacencyLayout is the adjacency list as a table: one item per node,
// keyed by Id, with ParentId (absent on roots) and the index ByParent
// (ParentId, Id). It has the cheapest writes of the layouts (one item, one
// index, and a move rewrites the moved node's item alone), and answers
// children in one Query; descendants take a Query per node of the subtree.
type adjacencyLayout struct {
	base
	id, parent, byParent string
	rs                   reservedSet
}

var _ Layout = (*adjacencyLayout)(nil)

func newAdjacency(opts Options) (*adjacencyLayout, error) {
	delim, err := pathIDsDelimiter(AdjacencyName, opts)
	if err != nil {
		return nil, err
	}
	names, err := adjacencySchema.resolve(opts.Attr)
	if err != nil {
		return nil, err
	}
	l := &adjacencyLayout{
		base: newBase(adjacencySchema, names, delim, opts),
		id:   names["Id"], parent: names["ParentId"], byParent: names["ByParent"],
	}
	l.rs = newReservedSet(&l.base)
	return l, nil
}

// Table: partition key Id; ByParent (ParentId, Id), all attributes
// projected.
func (l *adjacencyLayout) Table() TableSpec {
	return TableSpec{
		PK: KeyAttr{Name: l.id, Type: types.ScalarAttributeTypeS},
		Indexes: []IndexSpec{
			{Name: l.byParent, PK: KeyAttr{l.parent, types.ScalarAttributeTypeS}, SK: &KeyAttr{l.id, types.ScalarAttributeTypeS}},
		},
		Signs: adjacencySigns,
	}
}

// adjacencySigns: a path or sharded-path table has adjacency's keys and
// ByParent, and its ByPath besides (by the SPEC's names).
var adjacencySigns = []Sign{
	{Layout: PathName, PK: KeyAttr{"TreeId", types.ScalarAttributeTypeS}, SK: KeyAttr{"Path", types.ScalarAttributeTypeS},
		Attrs: []string{"TreeId", "Path", "Depth"}},
	{Layout: ShardedName, PK: KeyAttr{"GraphId", types.ScalarAttributeTypeS}, SK: KeyAttr{"Path", types.ScalarAttributeTypeS},
		Attrs: []string{"GraphId", "Path", "Depth"}},
}

// Items emits the node's one item: its attributes as they are, Id, and
// ParentId (not on a root). The item is a fresh map the receiver owns; its
// attribute values are the node's.
func (l *adjacencyLayout) Items(n *transform.Node, emit func(Item)) error {
	if err := l.checkShape(n); err != nil {
		return err
	}
	if l.pathIDs {
		if err := l.checkPathIDs(n); err != nil {
			return err
		}
		if l.omits(n) {
			return l.checkAttrs(n)
		}
	}
	v := &adjacencyValues{}
	item := make(Item, len(n.Attrs)+2)
	for k, a := range n.Attrs {
		item[k] = a
	}
	v.id.Value = n.ID
	item[l.id] = &v.id
	want := len(n.Attrs) + 1
	if n.Parent != "" {
		v.parent.Value = n.Parent
		item[l.parent] = &v.parent
		want++
	}
	// A user attribute named as a layout attribute shows as an item with
	// fewer attributes than the two sets hold; a root has no ParentId to
	// collide with, so that name is looked up.
	clash := len(item) != want
	if n.Parent == "" {
		_, named := n.Attrs[l.parent]
		clash = clash || named
	}
	if clash {
		if err := l.checkAttrs(n); err != nil {
			return err
		}
	}
	emit(item)
	return nil
}

// adjacencyValues holds the layout attributes of one adjacency item.
type adjacencyValues struct {
	id, parent types.AttributeValueMemberS
}

// AppendItems is Items into buf: the same item, with the same checks.
func (l *adjacencyLayout) AppendItems(n *FlatNode, b *ItemBuffer, emit func([]Attr)) error {
	if err := l.checkFlatNode(&l.rs, n); err != nil || l.omitsFlat(n) {
		return err
	}
	b.reset()
	b.s[0].Value = n.ID
	attrs := append(b.attrs[:0], n.Attrs...)
	attrs = append(attrs, Attr{l.id, &b.s[0]})
	if n.Parent != "" {
		b.s[1].Value = n.Parent
		attrs = append(attrs, Attr{l.parent, &b.s[1]})
	}
	emit(attrs)
	b.attrs = attrs
	return nil
}

// Node rebuilds the record of any item: the id is Id, the parent ParentId
// ("" when it is absent: a root), and the attributes are the rest. It
// checks that Id is a non-empty string, and ParentId too when present.
func (l *adjacencyLayout) Node(item Item) (transform.Record, bool, error) {
	r := reader{layout: l.layout, item: item}
	id := r.str(l.id, true)
	r.id = id
	parent := r.str(l.parent, false)
	if r.err != nil {
		return transform.Record{}, false, r.err
	}
	if err := l.readPathID(&r, id, parent); err != nil {
		return transform.Record{}, false, err
	}
	return transform.Record{ID: id, Parent: parent, Attrs: r.rest(l.attrs)}, true, nil
}

// Measure adds the node's item. It is exact: the table's collections are
// one item, ByParent's the node's children.
func (l *adjacencyLayout) Measure(s *transform.Stats, m *Measure) {
	m.Nodes++
	if l.measuresNoItem(s) {
		return
	}
	idLen := len(s.ID)
	size := s.AttrBytes + len(l.id) + idLen
	indexes := 0
	if s.ParentID != "" {
		size += len(l.parent) + len(s.ParentID)
		indexes++ // ByParent
		m.key(2, len(s.ParentID))
		m.key(3, idLen)
	}
	m.item(size, indexes)
	m.key(0, idLen)
	m.collectionOf(0, 1, s.ID)
	m.collectionOf(1, int64(s.Children), s.ID)
}

// NodeFilter is nil: every item of an adjacency table holds a node.
func (l *adjacencyLayout) NodeFilter() *Filter { return nil }

// IsNode is true: every item of an adjacency table holds a node.
func (l *adjacencyLayout) IsNode(View) bool { return true }

// NodeOf returns the item's Id and ParentId.
func (l *adjacencyLayout) NodeOf(item View) (id, parent string, ok bool) {
	id, ok = item.str(l.id)
	parent, _ = item.str(l.parent)
	return id, parent, ok && id != ""
}

// Owner is the item's Id.
func (l *adjacencyLayout) Owner(item View) string {
	id, _ := item.str(l.id)
	return id
}

// PathKeyed is false: the table is keyed by Id.
func (l *adjacencyLayout) PathKeyed() bool { return false }

// Query answers a query on an adjacency table: get is a GetItem on Id;
// children one Query of ByParent (ParentId = X); descendants a
// breadth-first walk of those Queries, a level's in parallel, down to the
// band's last level; ancestors a GetItem per level up the chain of
// ParentIds.
func (l *adjacencyLayout) Query(ctx context.Context, r Reads, q Request) ([]Result, error) {
	switch q.Kind {
	case QueryGet:
		self, err := l.self(ctx, r, q.ID)
		if err != nil {
			return nil, err
		}
		return []Result{self}, nil
	case QueryAncestors:
		return l.ancestors(ctx, r, &q)
	}
	return l.descendants(ctx, r, &q)
}

// self reads the node's item.
func (l *adjacencyLayout) self(ctx context.Context, r Reads, id string) (Result, error) {
	item, err := r.GetItem(ctx, Item{l.id: strAttr(id)})
	if err != nil {
		return Result{}, err
	}
	if item == nil {
		return Result{}, &NotFoundError{Node: fmt.Sprintf("node %q", id)}
	}
	return nodeResult(l, item, 0)
}

// descendants walks the subtree breadth first: the children of every node
// of a level are queried in parallel (ParentId = the node, on ByParent),
// level after level, down to the band's last level. The items of the index
// hold the nodes whole, so nothing more is read. When the node has no
// children and has not been read, one GetItem tells a leaf from a node
// that is not in the table.
func (l *adjacencyLayout) descendants(ctx context.Context, r Reads, q *Request) ([]Result, error) {
	var res []Result
	checked := false
	if q.InBand(0) {
		self, err := l.self(ctx, r, q.ID)
		if err != nil {
			return nil, err
		}
		res = append(res, self)
		checked = true
	}
	// seen guards the walk against a table whose ParentIds make a cycle,
	// which would otherwise never end.
	seen := map[string]bool{q.ID: true}
	level := []string{q.ID}
	for rd := 1; len(level) > 0 && (q.MaxDepth == NoMaxDepth || rd <= q.MaxDepth); rd++ {
		next, err := l.children(ctx, r, q, level, rd)
		if err != nil {
			return nil, err
		}
		if rd == 1 && len(next) == 0 && !checked && !q.Known {
			// No children: a leaf, or no such node.
			if _, err := l.self(ctx, r, q.ID); err != nil {
				return nil, err
			}
		}
		level = level[:0]
		for _, n := range next {
			if seen[n.ID] {
				return nil, &InconsistentError{Msg: fmt.Sprintf("node %q is below itself: the %s of the table's items make a cycle", n.ID, l.parent)}
			}
			seen[n.ID] = true
			level = append(level, n.ID)
			if q.InBand(rd) {
				res = append(res, n)
			}
		}
	}
	return res, nil
}

// children queries ByParent for the children of every node of a level, in
// parallel, and returns them at relative depth rd.
func (l *adjacencyLayout) children(ctx context.Context, r Reads, q *Request, level []string, rd int) ([]Result, error) {
	var mu sync.Mutex
	var next []Result
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, q.Concurrency))
	for _, parent := range level {
		g.Go(func() error {
			return r.Query(gctx, QueryInput{
				Index:        l.byParent,
				KeyCondition: "#p = :x",
				Names:        map[string]string{"#p": l.parent},
				Values:       map[string]types.AttributeValue{":x": strAttr(parent)},
			}, func(items []Item) error {
				page := make([]Result, 0, len(items))
				for _, item := range items {
					n, err := nodeResult(l, item, rd)
					if err != nil {
						return err
					}
					page = append(page, n)
				}
				mu.Lock()
				next = append(next, page...)
				mu.Unlock()
				return nil
			})
		})
	}
	return next, g.Wait()
}

// ancestors reads the node's item, then its parent's, and so on up to the
// root or the band's last level: one GetItem a level, for each names the
// next. A ParentId without an item is an *InconsistentError.
func (l *adjacencyLayout) ancestors(ctx context.Context, r Reads, q *Request) ([]Result, error) {
	cur, err := l.self(ctx, r, q.ID)
	if err != nil {
		return nil, err
	}
	var res []Result
	if q.InBand(0) {
		res = append(res, cur)
	}
	seen := map[string]bool{cur.ID: true}
	for rd := 1; cur.Parent != "" && (q.MaxDepth == NoMaxDepth || rd <= q.MaxDepth); rd++ {
		if seen[cur.Parent] {
			return nil, &InconsistentError{Msg: fmt.Sprintf("node %q is above itself: the %s of the table's items make a cycle", cur.Parent, l.parent)}
		}
		seen[cur.Parent] = true
		item, err := r.GetItem(ctx, Item{l.id: strAttr(cur.Parent)})
		if err != nil {
			return nil, err
		}
		if item == nil {
			return nil, &InconsistentError{Msg: fmt.Sprintf("%q is the %s of %q, but has no item", cur.Parent, l.parent, cur.ID)}
		}
		if cur, err = nodeResult(l, item, rd); err != nil {
			return nil, err
		}
		if q.InBand(rd) {
			res = append(res, cur)
		}
	}
	return res, nil
}

// Costs is the cost model of Query on an adjacency table.
func (l *adjacencyLayout) Costs(f *transform.Forest, sample []int32) CostModel {
	return &adjacencyCosts{costForest: newCostForest(f, sample), l: l}
}

// adjacencyCosts keeps the size of each node's one item.
type adjacencyCosts struct {
	costForest
	l *adjacencyLayout
}

func (c *adjacencyCosts) Add(item Item, size int) (int32, int32, error) {
	return c.addOwn(asString(item, c.l.id), size)
}

// Estimate follows Query given the id of a node known to be there
// (Request.Known): children one Query of ByParent; descendants a Query per
// node of the subtree above the band's last level (a leaf's comes back
// empty, and is billed the minimum); ancestors a GetItem per level, the
// node's own first, since only it names the parent.
func (c *adjacencyCosts) Estimate(k int) QueryCosts {
	i, own, out := c.getFirst(k)
	// children is one ByParent Query: the children of z.
	byParent := c.inIndex(c.l.byParent)
	children := func(z int32) Cost {
		var items sizeSum
		for _, ch := range c.f.Children(int(z)) {
			items.add(int(byParent[ch]))
		}
		return queryCost(items)
	}
	for _, q := range []struct {
		cost *Cost
		band int
	}{{&out.Children, 1}, {&out.Descendants, -1}, {&out.Depth2, 2}} {
		var cost Cost
		var nodes int64
		c.walk(i, func(y int32, rel int) {
			if q.band < 0 || rel < q.band {
				cost.Add(children(y))
			}
			if rel > 0 && (q.band < 0 || rel <= q.band) {
				nodes++
			}
		})
		cost.Nodes = nodes
		*q.cost = cost
	}
	out.Ancestors = own
	c.ancestors(i, func(a int32) { out.Ancestors.Add(c.get(a)) })
	out.Ancestors.Nodes = int64(c.f.Depth(int(i)))
	return out
}
