package layouts

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/treeport/treeport/transform"
)

var pathSchema = schema{
	layout:  PathName,
	attrs:   []string{"Id", "ParentId", "TreeId", "Path", "Depth"},
	indexes: []string{"ByParent", "ByPath"},
}

// pathLayout is the materialized-path layout, and with shards > 0 the
// sharded-path layout (sharded.go): one item per node, keyed by Id, with
// ByParent (ParentId, Id) and ByPath (TreeId or GraphId, Path).
type pathLayout struct {
	base
	id, parent, tree, path, depth string
	byParent, byPath              string
	// shards is S for sharded-path, whose tree attribute is GraphId; 0 for path.
	shards int
	rs     reservedSet
}

var _ Layout = (*pathLayout)(nil)

func newPath(opts Options) (*pathLayout, error) {
	names, err := pathSchema.resolve(opts.Attr)
	if err != nil {
		return nil, err
	}
	delim, err := delimiter(opts.Delimiter, DefaultPathDelimiter)
	if err != nil {
		return nil, err
	}
	l := &pathLayout{
		base: newBase(pathSchema, names, delim, opts),
		id:   names["Id"], parent: names["ParentId"], tree: names["TreeId"],
		path: names["Path"], depth: names["Depth"],
		byParent: names["ByParent"], byPath: names["ByPath"],
	}
	l.rs = newReservedSet(&l.base)
	return l, nil
}

// Table: partition key Id; ByParent (ParentId, Id) and ByPath (TreeId or
// GraphId, Path), all attributes projected.
func (l *pathLayout) Table() TableSpec {
	return TableSpec{
		PK: KeyAttr{Name: l.id, Type: types.ScalarAttributeTypeS},
		Indexes: []IndexSpec{
			{Name: l.byParent, PK: KeyAttr{l.parent, types.ScalarAttributeTypeS}, SK: &KeyAttr{l.id, types.ScalarAttributeTypeS}},
			{Name: l.byPath, PK: KeyAttr{l.tree, types.ScalarAttributeTypeS}, SK: &KeyAttr{l.path, types.ScalarAttributeTypeS}},
		},
	}
}

// Items emits the node's one item: its attributes, Id, ParentId (not on a
// root), TreeId (GraphId for sharded-path), Path and Depth. The item is a
// fresh map the receiver owns; its attribute values are the node's.
func (l *pathLayout) Items(n *transform.Node, emit func(Item)) error {
	// checkNode's checks, made cheap, for building items is the hot loop of
	// a load: the delimiter is checked on the joined Path, which holds
	// exactly Depth of them when no id holds one, and the attribute names
	// on the built item (below).
	if err := l.checkShape(n); err != nil {
		return err
	}
	var path string
	if l.pathIDs {
		// The id is the path.
		if err := l.checkPathIDs(n); err != nil {
			return err
		}
		path = n.ID
		if l.omits(n) {
			return l.checkAttrs(n)
		}
	} else if path = joinPath(n.Path, l.delim); strings.Count(path, l.delim) != n.Depth {
		if err := l.checkDelims(n); err != nil {
			return err
		}
	}
	// One allocation for the layout's five values.
	v := &pathValues{}
	item := make(Item, len(n.Attrs)+5)
	for k, a := range n.Attrs {
		item[k] = a
	}
	v.id.Value = n.ID
	item[l.id] = &v.id
	if n.Parent != "" {
		v.parent.Value = n.Parent
		item[l.parent] = &v.parent
	}
	if l.shards > 0 {
		v.tree.Value = GraphID(n.Path[0], Shard(n.ID, l.shards))
	} else {
		v.tree.Value = n.Path[0]
	}
	item[l.tree] = &v.tree
	v.path.Value = path
	item[l.path] = &v.path
	v.depth.Value = strconv.Itoa(n.Depth)
	item[l.depth] = &v.depth
	// A user attribute named as a layout attribute shows as an item with
	// fewer attributes than the two sets hold; a root has no ParentId to
	// collide with, so that name is looked up.
	clash := len(item) != len(n.Attrs)+5
	if n.Parent == "" {
		_, clash = n.Attrs[l.parent]
		clash = clash || len(item) != len(n.Attrs)+4
	}
	if clash {
		if err := l.checkAttrs(n); err != nil {
			return err
		}
	}
	emit(item)
	return nil
}

// AppendItems is Items into buf: the same item, with the same checks.
func (l *pathLayout) AppendItems(n *FlatNode, b *ItemBuffer, emit func([]Attr)) error {
	if l.pathIDs {
		return appendViaItems(l, n, b, emit)
	}
	b.reset()
	var path, root string
	if n.textOnly() {
		var err error
		if root, err = l.checkText(n); err != nil {
			return err
		}
		path = n.PathText
	} else {
		node := n.node()
		if err := l.checkShape(&node); err != nil {
			return err
		}
		path, root = b.joinedPath(n, l.delim), n.Path[0]
		if strings.Count(path, l.delim) != n.Depth {
			if err := l.checkDelims(&node); err != nil {
				return err
			}
		}
	}
	if err := l.checkFlatAttrs(&l.rs, n); err != nil {
		return err
	}
	// The layout attributes come first, the same for every node of the
	// layout (but a root's, without the parent): only their values are
	// set, and the node's own attributes are copied after them.
	if b.headOf != l {
		b.head = append(b.head[:0], Attr{l.parent, &b.s[1]}, Attr{l.id, &b.s[0]}, Attr{l.tree, &b.s[2]},
			Attr{l.path, &b.s[3]}, Attr{l.depth, &b.n})
		b.headOf = l
	}
	b.s[0].Value = n.ID
	b.s[1].Value = n.Parent
	if l.shards > 0 {
		start := len(b.text)
		b.text = append(b.text, root...)
		b.text = append(b.text, '#')
		b.text = strconv.AppendInt(b.text, int64(Shard(n.ID, l.shards)), 10)
		b.s[2].Value = b.str(start)
	} else {
		b.s[2].Value = root
	}
	b.s[3].Value = path
	b.n.Value = b.appendInt(n.Depth)
	attrs := append(b.head[:pathHead], n.Attrs...)
	b.head = attrs
	if n.Parent == "" {
		attrs = attrs[1:]
	}
	emit(attrs)
	return nil
}

// pathHead is how many layout attributes a path item has (but a root's).
const pathHead = 5

// pathValues holds the layout attributes of one path item.
type pathValues struct {
	id, parent, tree, path types.AttributeValueMemberS
	depth                  types.AttributeValueMemberN
}

// joinPath is strings.Join(path, delim), with one allocation and no copy
// of a single id.
func joinPath(path []string, delim string) string {
	switch len(path) {
	case 0:
		return ""
	case 1:
		return path[0]
	}
	n := len(delim) * (len(path) - 1)
	for _, id := range path {
		n += len(id)
	}
	b := make([]byte, 0, n)
	b = append(b, path[0]...)
	for _, id := range path[1:] {
		b = append(b, delim...)
		b = append(b, id...)
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// Node rebuilds the record of any item: the parent is ParentId, and the
// layout attributes are dropped. It checks that Id, TreeId (GraphId), Path
// and Depth are there with their types, that Path ends with the Id, and that
// ParentId is there exactly when Depth is not 0.
func (l *pathLayout) Node(item Item) (transform.Record, bool, error) {
	r := reader{layout: l.layout, item: item}
	id := r.str(l.id, true)
	r.id = id
	parent := r.str(l.parent, false)
	r.str(l.tree, true)
	path := r.str(l.path, true)
	depth := r.num(l.depth)
	if r.err != nil {
		return transform.Record{}, false, r.err
	}
	if l.pathIDs {
		if path != id {
			return transform.Record{}, false, r.fail("%s %q is not %s %q: with --path-ids a node's path is its id", l.path, path, l.id, id)
		}
		if err := CheckPathID(id, parent, l.delim); err != nil {
			return transform.Record{}, false, r.fail("%v", err)
		}
	} else if path != id && !strings.HasSuffix(path, l.delim+id) {
		return transform.Record{}, false, r.fail("%s %q does not end with %s %q; if the table uses another delimiter than %q, give it with --delimiter",
			l.path, path, l.id, id, l.delim)
	}
	if (depth == 0) != (parent == "") {
		return transform.Record{}, false, r.fail("%s is %d but %s is %q: a node has a parent exactly when its depth is not 0", l.depth, depth, l.parent, parent)
	}
	return transform.Record{ID: id, Parent: parent, Attrs: r.rest(l.attrs)}, true, nil
}

// Measure adds the node's item. It is exact, except that sharded-path's
// ByPath collection is the even share ceil(TreeSize / S) of the tree: the
// largest shard holds at least that many.
func (l *pathLayout) Measure(s *transform.Stats, m *Measure) {
	m.Nodes++
	if l.measuresNoItem(s) {
		return
	}
	idLen := len(s.ID)
	pathLen := s.PathBytes + s.Depth*len(l.delim)
	if l.pathIDs {
		pathLen = idLen
	}
	treeLen := len(s.RootID)
	if l.shards > 0 {
		treeLen += 1 + digits(Shard(s.ID, l.shards))
	}
	size := s.AttrBytes + len(l.id) + idLen + len(l.tree) + treeLen +
		len(l.path) + pathLen + len(l.depth) + numberSize(s.Depth)
	indexes := 1 // ByPath
	if s.ParentID != "" {
		size += len(l.parent) + len(s.ParentID)
		indexes++ // ByParent
		m.key(2, len(s.ParentID))
		m.key(3, idLen)
	}
	m.item(size, indexes)
	m.key(0, idLen)
	m.key(4, treeLen)
	m.key(5, pathLen)
	m.collectionOf(0, 1, s.ID)
	m.collectionOf(1, int64(s.Children), s.ID)
	if l.shards > 0 {
		if n := int64((s.TreeSize + l.shards - 1) / l.shards); m.tops(2, n) {
			name := s.RootID + "#1"
			if l.shards > 1 {
				name = fmt.Sprintf("%s#1…%s#%d", s.RootID, s.RootID, l.shards)
			}
			m.collectionOf(2, n, name)
		}
	} else {
		m.collectionOf(2, int64(s.TreeSize), s.RootID)
	}
}

// SpreadAdvice says how to spread ByPath's partition (slot 2), one tree's
// index writes, over factor times more partitions: sharded-path's
// --shards. A parent's children (ByParent) cannot be spread.
func (l *pathLayout) SpreadAdvice(slot, factor int) string {
	if slot != 2 {
		return ""
	}
	shards := 2
	for shards < factor*max(l.shards, 1) {
		shards *= 2
	}
	if l.shards > 0 {
		return fmt.Sprintf("--shards %d spreads it", shards)
	}
	return fmt.Sprintf("%s with --shards %d spreads it", ShardedName, shards)
}

// NodeFilter is nil: every item of a path table holds a node.
func (l *pathLayout) NodeFilter() *Filter { return nil }

// IsNode is true: every item of a path table holds a node.
func (l *pathLayout) IsNode(View) bool { return true }

// NodeOf returns the item's Id and ParentId.
func (l *pathLayout) NodeOf(item View) (id, parent string, ok bool) {
	id, ok = item.str(l.id)
	parent, _ = item.str(l.parent)
	return id, parent, ok && id != ""
}

// Owner is the item's Id.
func (l *pathLayout) Owner(item View) string {
	id, _ := item.str(l.id)
	return id
}

// PathKeyed is false: the table is keyed by Id.
func (l *pathLayout) PathKeyed() bool { return false }

// Query answers a query on a path or sharded-path table: get is a GetItem
// on Id; children a Query of ByParent; descendants a Query of ByPath,
// TreeId = t AND begins_with(Path, p + delimiter), with a depth band as a
// filter on Depth (sharded-path queries the S GraphId partitions of the
// tree in parallel); ancestors split the node's Path and read the ids with
// BatchGetItem.
func (l *pathLayout) Query(ctx context.Context, r Reads, q Request) ([]Result, error) {
	if l.pathIDs {
		return l.queryPathIDs(ctx, r, q)
	}
	return l.queryIDs(ctx, r, q)
}

// queryIDs is Query but with path ids.
func (l *pathLayout) queryIDs(ctx context.Context, r Reads, q Request) ([]Result, error) {
	if q.Kind == QueryChildren {
		var res []Result
		err := r.Query(ctx, QueryInput{
			Index:        l.byParent,
			KeyCondition: "#p = :x",
			Names:        map[string]string{"#p": l.parent},
			Values:       map[string]types.AttributeValue{":x": strAttr(q.ID)},
		}, func(items []Item) error {
			for _, item := range items {
				n, err := nodeResult(l, item, 1)
				if err != nil {
					return err
				}
				res = append(res, n)
			}
			return nil
		})
		if err != nil || len(res) > 0 || q.Known {
			return res, err
		}
		// No children: a leaf, or no such node.
		_, err = l.anchor(ctx, r, &q)
		return nil, err
	}

	a, err := l.anchor(ctx, r, &q)
	if err != nil {
		return nil, err
	}
	var res []Result
	if q.InBand(0) {
		res = append(res, a.node)
	}
	switch q.Kind {
	case QueryDescendants:
		more, err := l.descendants(ctx, r, &q, a)
		return append(res, more...), err
	case QueryAncestors:
		more, err := l.ancestors(ctx, r, &q, a)
		return append(res, more...), err
	}
	return res, nil
}

// queryPathIDs is Query on a path or sharded-path table with path ids,
// where an inner node may have no item (ImplicitInner, or a table built
// so): it is read as a node without attributes when items below it name
// it. The node's own item is read first (GetItem); a node without one is
// looked for below, with the Query of ByPath that descendants sends. With
// ImplicitInner, children are read that way too (ByParent cannot list a
// child that has no item), and descendants are read whole and filled with
// the implicit nodes between, then cut to the band.
func (l *pathLayout) queryPathIDs(ctx context.Context, r Reads, q Request) ([]Result, error) {
	if q.Kind == QueryChildren && !l.implicit {
		return l.queryIDs(ctx, r, q)
	}
	item, err := r.GetItem(ctx, Item{l.id: strAttr(q.ID)})
	if err != nil {
		return nil, err
	}
	ids := strings.Split(q.ID, l.delim)
	a := &pathAnchor{node: impliedResult(q.ID, l.delim, 0), ids: ids, depth: len(ids) - 1}
	implicit := item == nil
	if !implicit {
		if a.node, err = nodeResult(l, item, 0); err != nil {
			return nil, err
		}
	}
	var below []Result
	if implicit || (l.implicit && q.Kind != QueryAncestors && q.Kind != QueryGet) {
		all := Request{Kind: QueryDescendants, ID: q.ID, MinDepth: 1, MaxDepth: NoMaxDepth, Concurrency: q.Concurrency}
		if below, err = l.descendants(ctx, r, &all, a); err != nil {
			return nil, err
		}
		if implicit && len(below) == 0 {
			return nil, &NotFoundError{Node: fmt.Sprintf("node %q", q.ID)}
		}
	}
	var res []Result
	if q.InBand(0) {
		res = append(res, a.node)
	}
	switch q.Kind {
	case QueryChildren, QueryDescendants:
		if below == nil && !l.implicit {
			more, err := l.descendants(ctx, r, &q, a)
			return append(res, more...), err
		}
		return append(res, fillImplied(l, q.ID, below, &q)...), nil
	case QueryAncestors:
		more, err := l.ancestors(ctx, r, &q, a)
		return append(res, more...), err
	}
	return res, nil
}

// pathAnchor is the queried node of a path or sharded-path table.
type pathAnchor struct {
	node  Result
	ids   []string // Path split: the root first, the node last
	depth int
}

// anchor reads the node's item (GetItem on Id) and checks it.
func (l *pathLayout) anchor(ctx context.Context, r Reads, q *Request) (*pathAnchor, error) {
	item, err := r.GetItem(ctx, Item{l.id: strAttr(q.ID)})
	if err != nil {
		return nil, err
	}
	if item == nil {
		return nil, &NotFoundError{Node: fmt.Sprintf("node %q", q.ID)}
	}
	node, err := nodeResult(l, item, 0)
	if err != nil {
		return nil, err
	}
	depth, _ := asInt(item, l.depth) // nodeResult checked it
	a := &pathAnchor{node: node, ids: strings.Split(asString(item, l.path), l.delim), depth: depth}
	if len(a.ids) != depth+1 {
		return nil, &ItemError{Item: item, Err: fmt.Errorf("%w: %s has %d ids but %s is %d", ErrItem, l.path, len(a.ids), l.depth, depth)}
	}
	if l.shards > 0 {
		// The shard is a function of the id; another k means that the
		// table was written with another --shards, and a descendants
		// query would miss nodes.
		want := GraphID(a.ids[0], Shard(node.ID, l.shards))
		if got := asString(item, l.tree); got != want {
			return nil, &TableError{Msg: fmt.Sprintf("node %q has %s %q, but with --shards %d it would be %q: give the --shards the table was written with",
				node.ID, l.tree, got, l.shards, want)}
		}
	}
	return a, nil
}

// descendants queries ByPath: TreeId = t AND begins_with(Path, p +
// delimiter), with the depth band as a filter on Depth. The trailing
// delimiter keeps CM2 from matching CM20. sharded-path queries the tree's S
// GraphId partitions in parallel.
func (l *pathLayout) descendants(ctx context.Context, r Reads, q *Request, a *pathAnchor) ([]Result, error) {
	if q.MaxDepth == 0 {
		return nil, nil
	}
	lo := max(q.MinDepth, 1)
	names := map[string]string{"#t": l.tree, "#p": l.path}
	values := map[string]types.AttributeValue{
		":p": strAttr(strings.Join(a.ids, l.delim) + l.delim),
	}
	filter := ""
	switch {
	case q.MaxDepth != NoMaxDepth:
		filter = "#d BETWEEN :lo AND :hi"
		values[":lo"] = numAttr(a.depth + lo)
		values[":hi"] = numAttr(a.depth + q.MaxDepth)
	case lo > 1:
		filter = "#d >= :lo"
		values[":lo"] = numAttr(a.depth + lo)
	}
	if filter != "" {
		names["#d"] = l.depth
	}
	trees := []string{a.ids[0]}
	if l.shards > 0 {
		trees = trees[:0]
		for k := 1; k <= l.shards; k++ {
			trees = append(trees, GraphID(a.ids[0], k))
		}
	}
	var mu sync.Mutex
	var res []Result
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(q.Concurrency)
	for _, tree := range trees {
		vals := make(map[string]types.AttributeValue, len(values)+1)
		for k, v := range values {
			vals[k] = v
		}
		vals[":t"] = strAttr(tree)
		g.Go(func() error {
			return r.Query(gctx, QueryInput{
				Index: l.byPath, KeyCondition: "#t = :t AND begins_with(#p, :p)", Filter: filter,
				Names: names, Values: vals,
			}, func(items []Item) error {
				page := make([]Result, 0, len(items))
				for _, item := range items {
					n, err := nodeResult(l, item, 0)
					if err != nil {
						return err
					}
					d, _ := asInt(item, l.depth)
					if n.RelativeDepth = d - a.depth; q.InBand(n.RelativeDepth) {
						page = append(page, n)
					}
				}
				mu.Lock()
				res = append(res, page...)
				mu.Unlock()
				return nil
			})
		})
	}
	return res, g.Wait()
}

// ancestors splits the node's Path and reads the ancestors in the band with
// BatchGetItem.
func (l *pathLayout) ancestors(ctx context.Context, r Reads, q *Request, a *pathAnchor) ([]Result, error) {
	want := map[string]int{} // id → relative depth
	var keys []Item
	for rd := max(q.MinDepth, 1); rd <= a.depth && q.InBand(rd); rd++ {
		id := a.ids[a.depth-rd]
		if l.pathIDs {
			id = strings.Join(a.ids[:a.depth-rd+1], l.delim)
		}
		want[id] = rd
		keys = append(keys, Item{l.id: strAttr(id)})
	}
	items, err := r.BatchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	res := make([]Result, 0, len(items))
	for _, item := range items {
		n, err := nodeResult(l, item, 0)
		if err != nil {
			return nil, err
		}
		n.RelativeDepth = want[n.ID]
		res = append(res, n)
		delete(want, n.ID)
	}
	if l.pathIDs {
		// An ancestor without an item: an implicit inner node.
		for id, rd := range want {
			res = append(res, impliedResult(id, l.delim, rd))
		}
		want = nil
	}
	if len(want) > 0 {
		return nil, &InconsistentError{Msg: fmt.Sprintf("%q is on the Path of %q, but has no item", sortedKeys(want)[0], a.node.ID)}
	}
	return res, nil
}

// Costs is the cost model of Query on a path or sharded-path table.
func (l *pathLayout) Costs(f *transform.Forest, sample []int32) CostModel {
	return &pathCosts{costForest: newCostForest(f, sample), l: l}
}

// pathCosts keeps the size of each node's one item.
type pathCosts struct {
	costForest
	l *pathLayout
}

func (c *pathCosts) Add(item Item, size int) (int32, int32, error) {
	return c.addOwn(asString(item, c.l.id), size)
}

// Estimate follows Query given the id of a node known to be there
// (Request.Known): children one Query of ByParent, keyed by the id, which
// needs no more; descendants and ancestors need the node's Path, learnt by
// the GetItem of its item (as every layout that needs the path learns it:
// LearnsPath), then a Query of ByPath per shard, or BatchGetItem of the
// ancestors the Path names.
func (c *pathCosts) Estimate(k int) QueryCosts {
	i, own, out := c.getFirst(k)

	var children sizeSum
	byParent, byPath := c.inIndex(c.l.byParent), c.inIndex(c.l.byPath)
	for _, ch := range c.f.Children(int(i)) {
		children.add(int(byParent[ch]))
	}
	out.Children = queryCost(children)
	out.Children.Nodes = children.n

	shards := max(1, c.l.shards)
	perShard := make([]sizeSum, shards)
	var desc, band2 sizeSum
	c.walk(i, func(y int32, rel int) {
		if rel == 0 {
			return
		}
		desc.add(int(c.own[y]))
		if rel <= 2 {
			band2.add(0)
		}
		k := 0
		if c.l.shards > 0 {
			k = Shard(c.f.ID(int(y)), c.l.shards) - 1
		}
		perShard[k].add(int(byPath[y]))
	})
	d := own // the node's Path first
	for _, p := range perShard {
		d.Add(queryCost(p))
	}
	d.Nodes = desc.n
	out.Descendants = d
	d.Nodes = band2.n // the band is a filter: the same reads
	out.Depth2 = d

	var b batchCost
	c.ancestors(i, func(a int32) { b.add(c.own[a]) })
	out.Ancestors = own
	out.Ancestors.Add(b.done())
	out.Ancestors.Nodes = int64(c.f.Depth(int(i)))
	return out
}

// reader takes an item's layout attributes apart, keeping the first problem.
type reader struct {
	layout string
	item   Item
	id     string // for errors, once known
	err    error
}

func (r *reader) fail(format string, args ...any) error {
	where := r.layout + " item"
	if r.id != "" {
		where += fmt.Sprintf(" %q", r.id)
	}
	return fmt.Errorf("%w: %s: %s", ErrItem, where, fmt.Sprintf(format, args...))
}

// str returns the string attribute name; a missing one is an error only
// when required, an empty one always.
func (r *reader) str(name string, required bool) string {
	if r.err != nil {
		return ""
	}
	v, ok := r.item[name]
	if !ok {
		if required {
			r.err = r.fail("attribute %q is missing", name)
		}
		return ""
	}
	s, ok := v.(*types.AttributeValueMemberS)
	if !ok || s == nil {
		r.err = r.fail("attribute %q is %s, want S", name, typeName(v))
		return ""
	}
	if s.Value == "" {
		r.err = r.fail("attribute %q is an empty string", name)
	}
	return s.Value
}

// num returns the required attribute name as a non-negative integer.
func (r *reader) num(name string) int {
	if r.err != nil {
		return 0
	}
	v, ok := r.item[name]
	if !ok {
		r.err = r.fail("attribute %q is missing", name)
		return 0
	}
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok || n == nil {
		r.err = r.fail("attribute %q is %s, want N", name, typeName(v))
		return 0
	}
	i, err := strconv.Atoi(n.Value)
	if err != nil || i < 0 {
		r.err = r.fail("attribute %q is %q, want a whole number ≥ 0", name, n.Value)
		return 0
	}
	return i
}

// rest returns the item's attributes but the layout's.
func (r *reader) rest(layoutAttrs []string) transform.Attrs {
	attrs := make(transform.Attrs, len(r.item))
	for k, v := range r.item {
		attrs[k] = v
	}
	for _, a := range layoutAttrs {
		delete(attrs, a)
	}
	return attrs
}

// typeName is the DynamoDB type of v, for errors.
func typeName(v types.AttributeValue) string {
	var name string
	var isNil bool
	switch v := v.(type) {
	case nil:
		return "no value"
	case *types.AttributeValueMemberS:
		name, isNil = "S", v == nil
	case *types.AttributeValueMemberN:
		name, isNil = "N", v == nil
	case *types.AttributeValueMemberB:
		name, isNil = "B", v == nil
	case *types.AttributeValueMemberBOOL:
		name, isNil = "BOOL", v == nil
	case *types.AttributeValueMemberNULL:
		name, isNil = "NULL", v == nil
	case *types.AttributeValueMemberL:
		name, isNil = "L", v == nil
	case *types.AttributeValueMemberM:
		name, isNil = "M", v == nil
	case *types.AttributeValueMemberSS:
		name, isNil = "SS", v == nil
	case *types.AttributeValueMemberNS:
		name, isNil = "NS", v == nil
	case *types.AttributeValueMemberBS:
		name, isNil = "BS", v == nil
	default:
		return fmt.Sprintf("%T", v)
	}
	if isNil {
		return "a nil " + name
	}
	return name
}
