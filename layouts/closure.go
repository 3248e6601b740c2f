package layouts

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/transform"
)

var closureSchema = schema{
	layout:  ClosureName,
	attrs:   []string{"Id", "RelativeDepth", "AncestorId", "ParentId"},
	indexes: []string{"ByAncestor"},
}

// closureLayout replicates a node once per ancestor: rows (Id, RelativeDepth)
// with AncestorId, and the index ByAncestor (AncestorId, RelativeDepth).
type closureLayout struct {
	base
	id, rd, anc, parent, byAncestor string
	// copyAll: ancestor rows copy every attribute; otherwise they copy the
	// attributes named in copy (none when it is empty).
	copyAll bool
	copy    []string
	rs      reservedSet
}

var _ Layout = (*closureLayout)(nil)

func newClosure(opts Options) (*closureLayout, error) {
	delim, err := pathIDsDelimiter(ClosureName, opts)
	if err != nil {
		return nil, err
	}
	names, err := closureSchema.resolve(opts.Attr)
	if err != nil {
		return nil, err
	}
	l := &closureLayout{
		base: newBase(closureSchema, names, delim, opts),
		id:   names["Id"], rd: names["RelativeDepth"], anc: names["AncestorId"], parent: names["ParentId"],
		byAncestor: names["ByAncestor"],
		copyAll:    opts.ClosureCopy == nil,
	}
	for _, c := range opts.ClosureCopy {
		if c == "" {
			return nil, fmt.Errorf("layouts: --closure-copy has an empty attribute name; give all, none, or names separated by commas")
		}
		if err := l.attrNameError(c); err != nil {
			return nil, fmt.Errorf("layouts: --closure-copy %s: %w", c, err)
		}
		if !slices.Contains(l.copy, c) {
			l.copy = append(l.copy, c)
		}
	}
	l.rs = newReservedSet(&l.base)
	return l, nil
}

// Table: partition key Id, sort key RelativeDepth (N); ByAncestor
// (AncestorId, RelativeDepth), all attributes projected.
func (l *closureLayout) Table() TableSpec {
	return TableSpec{
		PK: KeyAttr{Name: l.id, Type: types.ScalarAttributeTypeS},
		SK: &KeyAttr{Name: l.rd, Type: types.ScalarAttributeTypeN},
		Indexes: []IndexSpec{
			{Name: l.byAncestor, PK: KeyAttr{l.anc, types.ScalarAttributeTypeS}, SK: &KeyAttr{l.rd, types.ScalarAttributeTypeN}},
		},
	}
}

// Items emits depth + 1 rows: first the node's own row (RelativeDepth 0,
// AncestorId the node, every attribute), then one per ancestor from the
// parent up, each with the attributes ClosureCopy picks. Every row carries
// ParentId, except a root's. Each item is a fresh map the receiver owns; its
// attribute values are the node's.
func (l *closureLayout) Items(n *transform.Node, emit func(Item)) error {
	if err := l.checkNode(n); err != nil || l.omits(n) {
		return err
	}
	id := &types.AttributeValueMemberS{Value: n.ID}
	var parent types.AttributeValue
	if n.Parent != "" {
		parent = &types.AttributeValueMemberS{Value: n.Parent}
	}
	row := func(r int, copied int) Item {
		item := make(Item, copied+4)
		item[l.id] = id
		item[l.rd] = &types.AttributeValueMemberN{Value: strconv.Itoa(r)}
		if r == 0 {
			item[l.anc] = id
		} else {
			item[l.anc] = &types.AttributeValueMemberS{Value: n.Path[n.Depth-r]}
		}
		if parent != nil {
			item[l.parent] = parent
		}
		return item
	}
	for r := 0; r <= n.Depth; r++ {
		emit(l.rowAttrs(n, r, row(r, l.rowAttrCount(n, r))))
	}
	return nil
}

// rowAttrCount is how many of the node's attributes row r carries, at most.
func (l *closureLayout) rowAttrCount(n *transform.Node, r int) int {
	if r == 0 || l.copyAll {
		return len(n.Attrs)
	}
	return len(l.copy)
}

// rowAttrs sets on item the node's attributes that row r carries: every
// one on the node's own row, and what ClosureCopy picks on the others. It
// returns item.
func (l *closureLayout) rowAttrs(n *transform.Node, r int, item Item) Item {
	if r == 0 || l.copyAll {
		for k, v := range n.Attrs {
			item[k] = v
		}
		return item
	}
	for _, k := range l.copy {
		if v, ok := n.Attrs[k]; ok {
			item[k] = v
		}
	}
	return item
}

// AppendItems is Items into buf: the same rows, with the same checks.
func (l *closureLayout) AppendItems(n *FlatNode, b *ItemBuffer, emit func([]Attr)) error {
	if err := l.checkFlatNode(&l.rs, n); err != nil || l.omitsFlat(n) {
		return err
	}
	b.s[0].Value = n.ID
	b.s[1].Value = n.Parent
	attrs := append(b.attrs[:0], n.Attrs...)
	attrs = l.appendRow(attrs, b, n, 0)
	emit(attrs)
	for r := 1; r <= n.Depth; r++ {
		attrs = l.appendRow(l.copied(attrs[:0], n), b, n, r)
		emit(attrs)
	}
	b.attrs = attrs
	return nil
}

// appendRow appends the layout attributes of row r (RelativeDepth r) of
// the node to attrs. b.s[0] holds the node's id and b.s[1] its parent.
func (l *closureLayout) appendRow(attrs []Attr, b *ItemBuffer, n *FlatNode, r int) []Attr {
	b.reset()
	attrs = append(attrs, Attr{l.id, &b.s[0]})
	b.n.Value = b.appendInt(r)
	attrs = append(attrs, Attr{l.rd, &b.n})
	if r == 0 {
		attrs = append(attrs, Attr{l.anc, &b.s[0]})
	} else {
		b.s[2].Value = n.Path[n.Depth-r]
		attrs = append(attrs, Attr{l.anc, &b.s[2]})
	}
	if n.Parent != "" {
		attrs = append(attrs, Attr{l.parent, &b.s[1]})
	}
	return attrs
}

// Node returns the record of a RelativeDepth 0 row (its parent is ParentId)
// and false for an ancestor row. It checks that Id, RelativeDepth and
// AncestorId are there with their types, and that a node's own row names
// itself as its ancestor.
func (l *closureLayout) Node(item Item) (transform.Record, bool, error) {
	r := reader{layout: l.layout, item: item}
	id := r.str(l.id, true)
	r.id = id
	rd := r.num(l.rd)
	anc := r.str(l.anc, true)
	parent := r.str(l.parent, false)
	if r.err != nil {
		return transform.Record{}, false, r.err
	}
	if rd > 0 {
		return transform.Record{}, false, nil
	}
	if anc != id {
		return transform.Record{}, false, r.fail("%s is 0 but %s is %q, not the row's own %s", l.rd, l.anc, anc, l.id)
	}
	if err := l.readPathID(&r, id, parent); err != nil {
		return transform.Record{}, false, err
	}
	return transform.Record{ID: id, Parent: parent, Attrs: r.rest(l.attrs)}, true, nil
}

// copyBytes is the size of the attributes an ancestor row of the node copies.
// With ClosureCopy all or none it does not depend on Stats.CopyBytes.
func (l *closureLayout) copyBytes(s *transform.Stats) int {
	switch {
	case l.copyAll:
		return s.AttrBytes
	case len(l.copy) == 0:
		return 0
	}
	return s.CopyBytes
}

// copySize is the size of the attributes of attrs an ancestor row copies.
func (l *closureLayout) copySize(attrs transform.Attrs) int {
	if l.copyAll {
		return transform.AttrsSize(attrs)
	}
	n := 0
	for _, k := range l.copy {
		if v, ok := attrs[k]; ok {
			n += len(k) + transform.ValueSize(v)
		}
	}
	return n
}

// CopyBytes is what Stats.CopyBytes holds for a node with these attributes
// under layout l: the size of the attributes a closure ancestor row copies,
// and 0 for the other layouts. Closure's Measure only reads Stats.CopyBytes
// when ClosureCopy names attributes.
func CopyBytes(l Layout, attrs transform.Attrs) int {
	if c, ok := asClosure(l); ok {
		return c.copySize(attrs)
	}
	return 0
}

// asClosure is the closure layout l is, or that a table model of l has as
// its base.
func asClosure(l Layout) (*closureLayout, bool) {
	if m, ok := l.(Model); ok {
		l = m.Base()
	}
	c, ok := l.(*closureLayout)
	return c, ok
}

// ClosureCopy is what the closure layout l (or a table model whose base
// is closure) copies to its ancestor rows, as Options.ClosureCopy says it:
// nil for every attribute, empty for none, else the names; nil for any
// other layout.
func ClosureCopy(l Layout) []string {
	c, ok := asClosure(l)
	if !ok || c.copyAll {
		return nil
	}
	return append([]string{}, c.copy...)
}

// CopiedName is the shortest of the attribute names closure's ancestor rows
// copy when --closure-copy names some, and "" otherwise (all, none, or
// another layout). An attribute of that name can stand for the copied ones
// where items are built from the attributes' sizes alone (bench's
// rewrites): the ancestor rows copy it, and a node that has any of the
// copied attributes has at least that many bytes of them.
func CopiedName(l Layout) string {
	c, ok := asClosure(l)
	if !ok || c.copyAll || len(c.copy) == 0 {
		return ""
	}
	name := c.copy[0]
	for _, k := range c.copy[1:] {
		if len(k) < len(name) {
			name = k
		}
	}
	return name
}

// Measure adds the node's depth + 1 rows in O(1). Items, Bytes, the keys and
// the collections (the table's Id = depth + 1 rows, ByAncestor's = the
// subtree) are exact. Stats has only the sum and the longest of the ancestor
// ids, so two numbers are upper bounds in rare cases: WCU, when the ancestor
// rows do not all fall in the same kilobyte (it is exact whenever every
// ancestor row is within one), and MaxItemBytes, by a byte or two, below a
// depth of more than 100.
func (l *closureLayout) Measure(s *transform.Stats, m *Measure) {
	m.Nodes++
	if l.measuresNoItem(s) {
		return
	}
	d := s.Depth
	idLen := len(s.ID)
	common := len(l.id) + idLen + len(l.rd) + len(l.anc)
	if s.ParentID != "" {
		common += len(l.parent) + len(s.ParentID)
	}
	m.item(common+numberSize(0)+idLen+s.AttrBytes, 1)
	m.key(0, idLen)
	m.key(1, digits(d))
	m.key(2, idLen)
	m.key(3, digits(d))
	m.collectionOf(0, int64(d+1), s.ID)
	m.collectionOf(1, int64(s.Subtree), s.ID)
	if d == 0 {
		return
	}
	m.key(2, s.MaxAncestorIDBytes)
	fixed := common + l.copyBytes(s)
	ancBytes := s.PathBytes - idLen // the ids of the ancestors, each once
	rows := int64(d)
	bytes := rows*int64(fixed) + sumNumberSize(d) - int64(numberSize(0)) + int64(ancBytes)
	m.Items += rows
	m.Bytes += bytes
	// Every ancestor row lands in ByAncestor.
	m.IndexItems += rows
	m.IndexBytes += bytes
	// An ancestor row is fixed + numberSize(r) + len(its ancestor's id):
	// between lo and hi.
	maxNS := maxNumberSize(d)
	hi := fixed + maxNS + s.MaxAncestorIDBytes
	lo := min(fixed+numberSize(1)+1, hi)
	wlo, whi := int64(transform.WCU(lo)), int64(transform.WCU(hi))
	wcu := rows * wlo
	if whi > wlo {
		// A row costs more than wlo only if its ancestor's id is at least
		// need bytes long. The longest id is; of the other d-1, each at
		// least 1 byte and adding up to the rest, at most heavy are.
		need := wlo*1024 - int64(fixed+maxNS) + 1
		heavy := rows - 1
		if need > 1 {
			heavy = min(heavy, max(0, int64(ancBytes-s.MaxAncestorIDBytes)-(rows-1))/(need-1))
		}
		wcu += (1 + heavy) * (whi - wlo)
	}
	m.WCU += wcu * 2 // every row lands in ByAncestor
	m.MaxItemBytes = max(m.MaxItemBytes, hi)
}

// NodeFilter keeps the nodes' own rows: RelativeDepth = 0.
func (l *closureLayout) NodeFilter() *Filter {
	return &Filter{
		Expr:   "#rd = :zero",
		Names:  map[string]string{"#rd": l.rd},
		Values: map[string]types.AttributeValue{":zero": numAttr(0)},
		Text:   l.rd + " = 0",
	}
}

// IsNode reports whether the item is a node's own row, at RelativeDepth 0.
func (l *closureLayout) IsNode(item View) bool {
	v, ok := item.Get(l.rd).(*types.AttributeValueMemberN)
	return ok && v != nil && v.Value == "0"
}

// NodeOf returns the Id and ParentId of a node's own row.
func (l *closureLayout) NodeOf(item View) (id, parent string, ok bool) {
	if !l.IsNode(item) {
		return "", "", false
	}
	id, ok = item.str(l.id)
	parent, _ = item.str(l.parent)
	return id, parent, ok && id != ""
}

// Owner is the row's Id: every row of a node has its Id.
func (l *closureLayout) Owner(item View) string {
	id, _ := item.str(l.id)
	return id
}

// PathKeyed is false: the table is keyed by Id.
func (l *closureLayout) PathKeyed() bool { return false }

// Query answers a query on a closure table: get is a GetItem of (Id, 0);
// children and descendants Query ByAncestor on RelativeDepth (= 1, >= a,
// BETWEEN a AND b); ancestors Query the table, Id = X AND RelativeDepth in
// the band, then BatchGetItem of the ancestors' own rows.
func (l *closureLayout) Query(ctx context.Context, r Reads, q Request) ([]Result, error) {
	if l.implicit {
		return l.queryImplicit(ctx, r, q)
	}
	var res []Result
	checked := false // whether the node is known to exist
	if q.Kind != QueryAncestors && q.InBand(0) {
		self, err := l.self(ctx, r, q.ID)
		if err != nil {
			return nil, err
		}
		res = append(res, self)
		checked = true
	}
	var more []Result
	var err error
	switch q.Kind {
	case QueryChildren, QueryDescendants:
		more, err = l.descendants(ctx, r, &q)
	case QueryAncestors:
		more, checked, err = l.ancestors(ctx, r, &q)
	}
	if err != nil {
		return nil, err
	}
	res = append(res, more...)
	if len(res) == 0 && !checked && !q.Known {
		// Nothing below (or above) it: a leaf (or a root), or no such node.
		if _, err := l.self(ctx, r, q.ID); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// queryImplicit is Query on a closure table with ImplicitInner (and so
// path ids), where an inner node may have no row: such a node is read as a
// node without attributes when rows below it name it. Its own row is read
// first; a node without one is looked for below (ByAncestor, AncestorId =
// X). Children and descendants read the whole subtree from ByAncestor (a
// child without rows is found only through its own descendants' rows),
// fill in the implicit nodes and cut it to the band; ancestors are the
// prefixes of the path id, read with BatchGetItem.
func (l *closureLayout) queryImplicit(ctx context.Context, r Reads, q Request) ([]Result, error) {
	item, err := r.GetItem(ctx, l.key(q.ID, 0))
	if err != nil {
		return nil, err
	}
	self := impliedResult(q.ID, l.delim, 0)
	if item != nil {
		if self, err = nodeResult(l, item, 0); err != nil {
			return nil, err
		}
	}
	var below []Result
	if item == nil || q.Kind == QueryChildren || q.Kind == QueryDescendants {
		all := Request{Kind: QueryDescendants, ID: q.ID, MinDepth: 1, MaxDepth: NoMaxDepth, Concurrency: q.Concurrency}
		if below, err = l.descendants(ctx, r, &all); err != nil {
			return nil, err
		}
		if item == nil && len(below) == 0 {
			return nil, &NotFoundError{Node: fmt.Sprintf("node %q", q.ID)}
		}
	}
	var res []Result
	if q.InBand(0) {
		res = append(res, self)
	}
	switch q.Kind {
	case QueryChildren, QueryDescendants:
		return append(res, fillImplied(l, q.ID, below, &q)...), nil
	case QueryAncestors:
		depthOf := map[string]int{}
		id := q.ID
		for rd := 1; ; rd++ {
			i := strings.LastIndex(id, l.delim)
			if i < 0 {
				break
			}
			id = id[:i]
			if q.InBand(rd) {
				depthOf[id] = rd
			}
		}
		more, err := l.selfRows(ctx, r, &q, depthOf, "above")
		return append(res, more...), err
	}
	return res, nil
}

// key is the key of row (id, relative depth).
func (l *closureLayout) key(id string, rd int) Item {
	return Item{l.id: strAttr(id), l.rd: numAttr(rd)}
}

// self reads the node's own row (Id, 0).
func (l *closureLayout) self(ctx context.Context, r Reads, id string) (Result, error) {
	item, err := r.GetItem(ctx, l.key(id, 0))
	if err != nil {
		return Result{}, err
	}
	if item == nil {
		return Result{}, &NotFoundError{Node: fmt.Sprintf("node %q", id)}
	}
	return nodeResult(l, item, 0)
}

// rdCondition is the RelativeDepth part of a key condition for the band
// from lo, and sets its values.
func rdCondition(q *Request, lo int, values map[string]types.AttributeValue) string {
	values[":lo"] = numAttr(lo)
	switch {
	case q.MaxDepth == lo:
		return "#rd = :lo"
	case q.MaxDepth != NoMaxDepth:
		values[":hi"] = numAttr(q.MaxDepth)
		return "#rd BETWEEN :lo AND :hi"
	}
	return "#rd >= :lo"
}

// descendants queries ByAncestor: AncestorId = X and RelativeDepth in the
// band (= 1 for children). With --closure-copy all the rows hold their
// nodes whole; otherwise the nodes' own rows are read with BatchGetItem.
func (l *closureLayout) descendants(ctx context.Context, r Reads, q *Request) ([]Result, error) {
	if q.MaxDepth == 0 {
		return nil, nil
	}
	values := map[string]types.AttributeValue{":x": strAttr(q.ID)}
	in := QueryInput{
		Index:        l.byAncestor,
		KeyCondition: "#a = :x AND " + rdCondition(q, max(q.MinDepth, 1), values),
		Names:        map[string]string{"#a": l.anc, "#rd": l.rd},
		Values:       values,
	}
	var res []Result
	depthOf := map[string]int{}
	err := r.Query(ctx, in, func(items []Item) error {
		for _, item := range items {
			row, err := l.row(item)
			if err != nil {
				return err
			}
			if l.copyAll {
				res = append(res, row)
			} else {
				depthOf[row.ID] = row.RelativeDepth
			}
		}
		return nil
	})
	if err != nil || l.copyAll {
		return res, err
	}
	return l.selfRows(ctx, r, q, depthOf, "below")
}

// ancestors queries the table: Id = X and RelativeDepth in the band. Row
// (X, r) names the ancestor r levels up; its own row (A, 0) is read with
// BatchGetItem, since row (X, r) holds X's attributes, not A's. It reports
// whether the node is known to exist.
func (l *closureLayout) ancestors(ctx context.Context, r Reads, q *Request) ([]Result, bool, error) {
	values := map[string]types.AttributeValue{":x": strAttr(q.ID)}
	in := QueryInput{
		KeyCondition: "#id = :x AND " + rdCondition(q, q.MinDepth, values),
		Names:        map[string]string{"#id": l.id, "#rd": l.rd},
		Values:       values,
	}
	var res []Result
	depthOf := map[string]int{}
	rows := 0
	err := r.Query(ctx, in, func(items []Item) error {
		for _, item := range items {
			rows++
			rd, ok := asInt(item, l.rd)
			if !ok {
				return &ItemError{Item: item, Err: fmt.Errorf("%w: %s is not a whole number", ErrItem, l.rd)}
			}
			if rd == 0 {
				n, err := nodeResult(l, item, 0)
				if err != nil {
					return err
				}
				res = append(res, n)
				continue
			}
			anc := asString(item, l.anc)
			if anc == "" {
				return &ItemError{Item: item, Err: fmt.Errorf("%w: %s is missing", ErrItem, l.anc)}
			}
			depthOf[anc] = rd
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	// With the node's own row in the band, no row at all means no node.
	if rows == 0 && q.MinDepth == 0 {
		return nil, true, &NotFoundError{Node: fmt.Sprintf("node %q", q.ID)}
	}
	more, err := l.selfRows(ctx, r, q, depthOf, "above")
	return append(res, more...), rows > 0, err
}

// selfRows reads the own rows (id, 0) of the nodes in depthOf with
// BatchGetItem; each result gets the relative depth depthOf gives it.
func (l *closureLayout) selfRows(ctx context.Context, r Reads, q *Request, depthOf map[string]int, where string) ([]Result, error) {
	keys := make([]Item, 0, len(depthOf))
	for _, id := range sortedKeys(depthOf) {
		keys = append(keys, l.key(id, 0))
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
		d, ok := depthOf[n.ID]
		if !ok {
			continue
		}
		delete(depthOf, n.ID)
		n.RelativeDepth = d
		res = append(res, n)
	}
	if l.pathIDs {
		// Named by a row's AncestorId or a path id, without a row of its
		// own: an implicit inner node.
		for id, d := range depthOf {
			res = append(res, impliedResult(id, l.delim, d))
		}
		clear(depthOf)
	}
	if len(depthOf) > 0 {
		first := sortedKeys(depthOf)[0]
		return nil, &InconsistentError{Msg: fmt.Sprintf("%q is %d levels %s %q, but has no row (%s, 0)", first, depthOf[first], where, q.ID, first)}
	}
	return res, nil
}

// row is the node a ByAncestor row (Y, r) stands for: Y at relative depth
// r, with its parent and the attributes the row copies.
func (l *closureLayout) row(item Item) (Result, error) {
	id := asString(item, l.id)
	rd, ok := asInt(item, l.rd)
	if id == "" || !ok || rd < 0 {
		return Result{}, &ItemError{Item: item, Err: fmt.Errorf("%w: want %s (S) and %s (a whole number)", ErrItem, l.id, l.rd)}
	}
	attrs := make(transform.Attrs, len(item))
	for k, v := range item {
		attrs[k] = v
	}
	for _, k := range l.attrs {
		delete(attrs, k)
	}
	return Result{ID: id, Parent: asString(item, l.parent), RelativeDepth: rd, Attrs: attrs}, nil
}

// Costs is the cost model of Query on a closure table.
func (l *closureLayout) Costs(f *transform.Forest, sample []int32) CostModel {
	c := &closureCosts{costForest: newCostForest(f, sample), l: l, cur: -1, anc: -1,
		sampleAt: make([]int32, f.Len()), acc: make([]closureAcc, len(sample))}
	for i := range c.sampleAt {
		c.sampleAt[i] = -1
	}
	for k, i := range sample {
		c.sampleAt[i] = int32(k)
	}
	return c
}

// closureCosts keeps the size of each node's own row, and for each sampled
// node what the rows its queries read add up to.
type closureCosts struct {
	costForest
	l *closureLayout
	// cur is the node whose rows arrive; anc walks up its ancestors along
	// its rows.
	cur, anc int32
	// sampleAt maps a forest index to its place in the sample, or -1.
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

func (c *closureCosts) Add(item Item, size int) (int32, int32, error) {
	return c.add(item, size, size)
}

// add is Add of a row whose copy in ByAncestor, which the descendants'
// Query reads, is indexSize bytes: size for the closure layout's, which
// projects every attribute, less for a table model's index that projects
// fewer.
func (c *closureCosts) add(item Item, size, indexSize int) (int32, int32, error) {
	n, _ := item[c.l.rd].(*types.AttributeValueMemberN)
	if n == nil {
		return c.cur, c.anc, fmt.Errorf("layouts: a closure row without %s", c.l.rd)
	}
	r, err := strconv.Atoi(n.Value)
	if err != nil {
		return c.cur, c.anc, fmt.Errorf("layouts: a closure row with %s %q", c.l.rd, n.Value)
	}
	if r == 0 {
		if c.cur, err = c.lookup(asString(item, c.l.id)); err != nil {
			return c.cur, c.anc, err
		}
		c.anc = c.cur
		c.own[c.cur] = int32(size)
		return c.cur, c.anc, nil
	}
	// Rows come from the parent up: each names the parent of the one
	// before.
	if c.anc < 0 || c.f.Parent(int(c.anc)) < 0 {
		return c.cur, c.anc, fmt.Errorf("layouts: closure row %d of %q has no ancestor that far up", r, asString(item, c.l.id))
	}
	c.anc = int32(c.f.Parent(int(c.anc)))
	if k := c.sampleAt[c.anc]; k >= 0 {
		a := &c.acc[k]
		a.desc.add(indexSize)
		if r == 1 {
			a.child.add(indexSize)
		}
		if r <= 2 {
			a.band2.add(indexSize)
		}
	}
	if k := c.sampleAt[c.cur]; k >= 0 {
		c.acc[k].anc.add(size)
	}
	return c.cur, c.anc, nil
}

// Estimate follows Query given the id of a node known to be there
// (Request.Known): a Query of ByAncestor for each band, keyed by the id
// (and BatchGetItem of the nodes' own rows when the rows do not copy every
// attribute); ancestors a Query of the node's rows, which name the
// ancestors but hold the node's attributes, then BatchGetItem of the
// ancestors' own rows: a Query and a BatchGetItem, not one Query.
func (c *closureCosts) Estimate(k int) QueryCosts {
	i, _, out := c.getFirst(k)
	acc := c.acc[k]
	for _, q := range []struct {
		cost *Cost
		rows sizeSum
		band int
	}{{&out.Children, acc.child, 1}, {&out.Descendants, acc.desc, -1}, {&out.Depth2, acc.band2, 2}} {
		cost := queryCost(q.rows)
		if q.rows.n > 0 && !c.l.copyAll {
			// The rows hold only the copied attributes: the nodes' own
			// rows are read too.
			var b batchCost
			c.walk(i, func(y int32, rel int) {
				if rel > 0 && (q.band < 0 || rel <= q.band) {
					b.add(c.own[y])
				}
			})
			cost.Add(b.done())
		}
		cost.Nodes = q.rows.n
		*q.cost = cost
	}
	a := queryCost(acc.anc)
	var b batchCost
	c.ancestors(i, func(x int32) { b.add(c.own[x]) })
	a.Add(b.done())
	a.Nodes = int64(c.f.Depth(int(i)))
	out.Ancestors = a
	return out
}

// RunEmitter is a layout whose node writes many rows alike but for a
// relative depth and an ancestor's id (closure's ancestor rows, and a
// table model's built on them), so that they can be sized without being
// built. AppendItemRuns emits the items of n, as AppendItems would: the
// node's own row with run 0, then, for a node below a root, its first
// ancestor row (relative depth 1, ancestor its parent) with run =
// n.Depth, standing for all its ancestor rows; row r differs from it only
// where RunShape says. n.Path is not read and may be nil: the input's
// checks have passed (CheckLayout), and the run costs O(1) however deep
// the node is. RunShape's false says the layout writes no runs (a table
// model on another base).
type RunEmitter interface {
	AppendItemRuns(n *FlatNode, b *ItemBuffer, emit func(item []Attr, run int)) error
	RunShape() (RunShape, bool)
}

// RunShape says where row r of a run differs from its first row: the id r
// levels up stands in the place of the parent's Ancestors times, and r in
// the place of 1 once for each of Depths, written zero-padded to that
// many digits (0: as it is).
type RunShape struct {
	Ancestors int
	Depths    []int
}

// EmitsRuns reports whether AppendItemRuns gives l's items in runs.
func EmitsRuns(l Layout) bool {
	r, ok := l.(RunEmitter)
	if !ok {
		return false
	}
	_, ok = r.RunShape()
	return ok
}

// AppendItemRuns is RunEmitter's AppendItemRuns of l; for a layout that
// does not emit runs it returns an error.
func AppendItemRuns(l Layout, n *FlatNode, b *ItemBuffer, emit func(item []Attr, run int)) error {
	if !EmitsRuns(l) {
		return fmt.Errorf("layouts: the %s layout does not emit its items in runs", l.Name())
	}
	return l.(RunEmitter).AppendItemRuns(n, b, emit)
}

// RunShapeOf is RunEmitter's RunShape of l; false for a layout that does
// not emit runs.
func RunShapeOf(l Layout) (RunShape, bool) {
	if r, ok := l.(RunEmitter); ok {
		return r.RunShape()
	}
	return RunShape{}, false
}

// RunShape: the closure layout's rows differ in RelativeDepth, a number,
// and AncestorId; false with implicit inner nodes.
func (l *closureLayout) RunShape() (RunShape, bool) {
	// With implicit inner nodes, a node's rows depend on whether it has
	// children: no runs.
	return RunShape{Ancestors: 1, Depths: []int{0}}, !l.implicit
}

// AppendItemRuns: see RunEmitter. Row 1 of the node is built as if the
// node were one level deep, by the same code as AppendItems.
func (l *closureLayout) AppendItemRuns(n *FlatNode, b *ItemBuffer, emit func(item []Attr, run int)) error {
	if n.ID == "" {
		return fmt.Errorf("layouts: %s: a node has an empty id", l.layout)
	}
	if err := l.checkFlatAttrs(&l.rs, n); err != nil {
		return err
	}
	b.s[0].Value = n.ID
	b.s[1].Value = n.Parent
	attrs := append(b.attrs[:0], n.Attrs...)
	attrs = l.appendRow(attrs, b, n, 0)
	emit(attrs, 0)
	if n.Depth > 0 {
		path := [2]string{n.Parent, n.ID}
		one := FlatNode{ID: n.ID, Parent: n.Parent, Depth: 1, Path: path[:]}
		attrs = l.appendRow(l.copied(attrs[:0], n), b, &one, 1)
		emit(attrs, n.Depth)
	}
	b.attrs = attrs
	return nil
}

var _ RunEmitter = (*closureLayout)(nil)

// copied appends the attributes of n that its ancestor rows copy.
func (l *closureLayout) copied(attrs []Attr, n *FlatNode) []Attr {
	if l.copyAll {
		return append(attrs, n.Attrs...)
	}
	for _, k := range l.copy {
		for _, a := range n.Attrs {
			if a.Name == k {
				attrs = append(attrs, a)
				break
			}
		}
	}
	return attrs
}
