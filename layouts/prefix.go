package layouts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/treeport/treeport/transform"
)

var prefixSchema = schema{
	layout: PrefixName,
	attrs:  []string{"Key", "Child"},
}

// prefixLayout writes two rows per node into a table keyed (Key, Child): an
// object row holding the node and a listing row under its parent's prefix.
type prefixLayout struct {
	base
	key, child string
	rs         reservedSet
	// links: a record's link_to is a link (Links); false for a table
	// model's base (WithoutLinks), where it is an attribute.
	links bool
}

var _ Layout = (*prefixLayout)(nil)

func newPrefix(opts Options) (*prefixLayout, error) {
	names, err := prefixSchema.resolve(opts.Attr)
	if err != nil {
		return nil, err
	}
	delim, err := delimiter(opts.Delimiter, DefaultPrefixDelimiter)
	if err != nil {
		return nil, err
	}
	l := &prefixLayout{base: newBase(prefixSchema, names, delim, opts), key: names["Key"], child: names["Child"], links: true}
	for _, a := range l.attrs {
		if strings.HasPrefix(a, delim) {
			return nil, errorf("--attr gives the prefix layout the attribute name %q, which starts with the delimiter %q; pick another", a, delim)
		}
	}
	l.rs = newReservedSet(&l.base)
	return l, nil
}

// Table: partition key Key, sort key Child, no index.
func (l *prefixLayout) Table() TableSpec {
	return TableSpec{
		PK: KeyAttr{Name: l.key, Type: types.ScalarAttributeTypeS},
		SK: &KeyAttr{Name: l.child, Type: types.ScalarAttributeTypeS},
	}
}

// Items emits the object row (Key = ¦c1¦…¦ck, Child = ¦, with the node's
// attributes) and then the listing row (Key = ¦c1¦…¦c(k-1)¦, or ¦ for a root,
// Child = ck). Each item is a fresh map the receiver owns; its attribute
// values are the node's.
func (l *prefixLayout) Items(n *transform.Node, emit func(Item)) error {
	if err := l.checkNode(n); err != nil {
		return err
	}
	if l.pathIDs {
		return l.pathIDItems(n, emit)
	}
	var b strings.Builder
	size := len(l.delim) * (len(n.Path) + 1)
	for _, id := range n.Path {
		size += len(id)
	}
	b.Grow(size)
	for _, id := range n.Path[:n.Depth] {
		b.WriteString(l.delim)
		b.WriteString(id)
	}
	b.WriteString(l.delim)
	listing := b.String()
	object := listing + n.ID

	return l.emitRows(n, object, listing, n.ID, emit)
}

// emitRows emits the node's object row (but for a node ImplicitInner
// omits) and its listing row. A link's object row holds its target's key
// under the delimiter in place of its link_to.
func (l *prefixLayout) emitRows(n *transform.Node, object, listing, name string, emit func(Item)) error {
	if !l.omits(n) {
		var target string
		if v, ok := n.Attrs[transform.LinkAttr]; ok && l.links {
			var err error
			if target, err = l.linkKey(v, n.Link); err != nil {
				return err
			}
		}
		item := make(Item, len(n.Attrs)+2)
		for k, v := range n.Attrs {
			item[k] = v
		}
		if target != "" {
			delete(item, transform.LinkAttr)
			item[l.delim] = strAttr(target)
		}
		item[l.key] = &types.AttributeValueMemberS{Value: object}
		item[l.child] = &types.AttributeValueMemberS{Value: l.delim}
		emit(item)
	}
	emit(Item{
		l.key:   &types.AttributeValueMemberS{Value: listing},
		l.child: &types.AttributeValueMemberS{Value: name},
	})
	return nil
}

// pathIDItems is Items with path ids: the object row's Key is the
// delimiter and the id, the listing row's the delimiter and the parent's id
// and the delimiter (the delimiter alone for a root), and its Child the
// node's name, so that the rows are those of a table of names under
// parents (dynamotree's ¦Accounts¦123456¦Links¦xyzpdq).
func (l *prefixLayout) pathIDItems(n *transform.Node, emit func(Item)) error {
	listing := l.delim
	if n.Parent != "" {
		listing = l.delim + n.Parent + l.delim
	}
	return l.emitRows(n, l.delim+n.ID, listing, NameOf(n.ID, l.delim), emit)
}

// AppendItems is Items into buf: the same two rows, with the same checks.
func (l *prefixLayout) AppendItems(n *FlatNode, b *ItemBuffer, emit func([]Attr)) error {
	if l.pathIDs || l.implicit {
		return appendViaItems(l, n, b, emit)
	}
	if err := l.checkFlatNode(&l.rs, n); err != nil {
		return err
	}
	b.reset()
	// The object key is the delimiter and the ids joined by it; the
	// listing key is that without the node's own id.
	b.text = append(b.text, l.delim...)
	if n.PathText != "" && n.PathDelim == l.delim {
		b.text = append(b.text, n.PathText...)
	} else {
		for i, id := range n.Path {
			if i > 0 {
				b.text = append(b.text, l.delim...)
			}
			b.text = append(b.text, id...)
		}
	}
	object := b.str(0)
	listing := len(object) - len(n.ID)

	attrs := append(b.attrs[:0], n.Attrs...)
	for i, a := range attrs {
		if a.Name != transform.LinkAttr || !l.links {
			continue
		}
		// A link: its row holds the target's key under the delimiter
		// instead (rare enough to allocate).
		target, err := l.linkKey(a.Value, n.Link)
		if err != nil {
			return err
		}
		attrs[i] = Attr{l.delim, strAttr(target)}
		break
	}
	b.s[0].Value = object
	b.s[1].Value = l.delim
	attrs = append(attrs, Attr{l.key, &b.s[0]}, Attr{l.child, &b.s[1]})
	emit(attrs)
	b.s[0].Value = object[:listing]
	b.s[1].Value = n.ID
	attrs = append(attrs[:0], Attr{l.key, &b.s[0]}, Attr{l.child, &b.s[1]})
	emit(attrs)
	b.attrs = attrs
	return nil
}

// Node returns the record of an object row (Child is the delimiter): the id
// is the last part of Key and the parent the part before it. It returns
// false for a listing row. It checks that Key and Child are strings, and
// that Key is made of the delimiter and non-empty ids.
func (l *prefixLayout) Node(item Item) (transform.Record, bool, error) {
	r := reader{layout: l.layout, item: item}
	key := r.str(l.key, true)
	child := r.str(l.child, true)
	if r.err != nil {
		return transform.Record{}, false, r.err
	}
	if !strings.HasPrefix(key, l.delim) {
		return transform.Record{}, false, r.fail("%s %q does not start with the delimiter %q; if the table uses another, give it with --delimiter", l.key, key, l.delim)
	}
	if child != l.delim {
		if !strings.HasSuffix(key, l.delim) {
			return transform.Record{}, false, r.fail("listing row %s %q does not end with the delimiter %q; if the table uses another, give it with --delimiter", l.key, key, l.delim)
		}
		return transform.Record{}, false, nil
	}
	ids := key[len(l.delim):]
	if l.pathIDs {
		r.id = ids
		parent := ""
		if i := strings.LastIndex(ids, l.delim); i >= 0 {
			parent = ids[:i]
		}
		if err := l.readPathID(&r, ids, parent); err != nil {
			return transform.Record{}, false, err
		}
		attrs := r.rest(l.attrs)
		if msg := l.readLinkIf(attrs); msg != "" {
			return transform.Record{}, false, r.fail("object row %s %q %s", l.key, key, msg)
		}
		return transform.Record{ID: ids, Parent: parent, Attrs: attrs}, true, nil
	}
	var id, parent string
	if i := strings.LastIndex(ids, l.delim); i >= 0 {
		id = ids[i+len(l.delim):]
		parent = ids[:i]
		if j := strings.LastIndex(parent, l.delim); j >= 0 {
			parent = parent[j+len(l.delim):]
		}
	} else {
		id = ids
	}
	r.id = id
	if id == "" || strings.HasPrefix(ids, l.delim) || strings.Contains(ids, l.delim+l.delim) {
		return transform.Record{}, false, r.fail("object row %s %q has an empty id between its delimiters %q", l.key, key, l.delim)
	}
	attrs := r.rest(l.attrs)
	if msg := l.readLinkIf(attrs); msg != "" {
		return transform.Record{}, false, r.fail("object row %s %q %s", l.key, key, msg)
	}
	return transform.Record{ID: id, Parent: parent, Attrs: attrs}, true, nil
}

// Links reports whether l writes a record with transform.LinkAttr as a
// link and reads a link back as such a record: the prefix layout, whose
// links are dynamotree's symbolic links. The link's object row holds,
// under the delimiter as attribute name, the target's full key
// (¦Accounts¦123456¦Links¦xyzpdq); its listing rows are any node's. The
// other layouts keep link_to as an attribute like any other.
func Links(l Layout) bool {
	p, ok := l.(*prefixLayout)
	return ok && p.links
}

// WithoutLinks returns l, or for a prefix layout a copy of it that keeps
// link_to as an attribute like any other: a table model's base, whose
// rows the model names and values itself.
func WithoutLinks(l Layout) Layout {
	p, ok := l.(*prefixLayout)
	if !ok {
		return l
	}
	c := *p
	c.links = false
	c.rs = newReservedSet(&c.base)
	return &c
}

// linkKey is the key of a link's target, which the link's object row
// holds: the node's link_to value v must be a string, and link, the
// target's path the caller found in the forest, must be set and end with
// it; with path ids, the value is the path and link may be nil.
func (l *prefixLayout) linkKey(v types.AttributeValue, link []string) (string, error) {
	s, ok := v.(*types.AttributeValueMemberS)
	if !ok || s == nil {
		return "", fmt.Errorf("%w: %s is %s, want the id of the node it links to (S)", transform.ErrLink, transform.LinkAttr, typeName(v))
	}
	if l.pathIDs {
		// The target's id is its path, its key the delimiter and it:
		// no forest is needed (edit and follow have none).
		if (len(link) > 0 && link[len(link)-1] != s.Value) || s.Value == "" || strings.HasPrefix(s.Value, l.delim) ||
			strings.HasSuffix(s.Value, l.delim) || strings.Contains(s.Value, l.delim+l.delim) {
			return "", fmt.Errorf("%w: %s %q is not a path id (names joined by %q)", transform.ErrLink, transform.LinkAttr, s.Value, l.delim)
		}
		return l.delim + s.Value, nil
	}
	if len(link) == 0 || !strings.HasSuffix(l.delim+s.Value, l.delim+link[len(link)-1]) {
		return "", fmt.Errorf("%w: %s %q: the target's path is not known here: import, plan, apply and migrate find it in their input; edit and follow write a link only with --path-ids, where link_to is the path", transform.ErrLink, transform.LinkAttr, s.Value)
	}
	for _, id := range link {
		if id == "" || strings.Contains(id, l.delim) {
			return "", fmt.Errorf("%w: %s %q: the target's path %q has an empty id or one holding the delimiter %q", transform.ErrLink, transform.LinkAttr, s.Value, link, l.delim)
		}
	}
	return l.keyOf(link), nil
}

// readLinkIf is readLink where the layout reads links, and nothing else.
func (l *prefixLayout) readLinkIf(attrs transform.Attrs) string {
	if !l.links {
		return ""
	}
	return l.readLink(attrs)
}

// readLink turns a link's object row's attributes into a record's: the
// target's key under the delimiter becomes transform.LinkAttr, the
// target's id (linkID). It returns what is wrong with the row, or "": a
// target that is not a key, or a link_to attribute on the row, which
// would read back as a link.
func (l *prefixLayout) readLink(attrs transform.Attrs) string {
	v, ok := attrs[l.delim]
	_, named := attrs[transform.LinkAttr]
	switch {
	case !ok && named:
		return fmt.Sprintf("has an attribute %q, which the %s layout reads as a link; it cannot be exported as it is (a link's row holds its target's key under the attribute %q)", transform.LinkAttr, l.layout, l.delim)
	case !ok:
		return ""
	case named:
		return fmt.Sprintf("is a link (attribute %q) and has an attribute %q too", l.delim, transform.LinkAttr)
	}
	s, isS := v.(*types.AttributeValueMemberS)
	if !isS || s == nil {
		return fmt.Sprintf("is a link whose attribute %q is %s, want the target's key (S)", l.delim, typeName(v))
	}
	target := s.Value
	if len(target) <= len(l.delim) || !strings.HasPrefix(target, l.delim) || strings.HasSuffix(target, l.delim) || strings.Contains(target, l.delim+l.delim) {
		return fmt.Sprintf("is a link whose target %q is not a key: want the delimiter %q and ids, as %sAccounts%s123456", target, l.delim, l.delim, l.delim)
	}
	delete(attrs, l.delim)
	attrs[transform.LinkAttr] = strAttr(l.linkID(target))
	return ""
}

// linkID is the id of the node at the object key target: its last id,
// or with path ids the key without its first delimiter.
func (l *prefixLayout) linkID(target string) string {
	if l.pathIDs {
		return target[len(l.delim):]
	}
	return target[strings.LastIndex(target, l.delim)+len(l.delim):]
}

// Measure adds the node's two rows. It is exact; the table's collection is
// the largest listing: the node's children, or the forest's roots under ¦.
func (l *prefixLayout) Measure(s *transform.Stats, m *Measure) {
	m.Nodes++
	delim, idLen := len(l.delim), len(s.ID)
	objectKey := s.PathBytes + (s.Depth+1)*delim
	fixed := len(l.key) + len(l.child)
	listingKey, name := objectKey-idLen, idLen
	if l.pathIDs {
		// The keys join names: the id is the path.
		objectKey = delim + idLen
		name = len(NameOf(s.ID, l.delim))
		listingKey = objectKey - name
	}
	m.item(fixed+listingKey+name, 0)
	if l.measuresNoItem(s) {
		m.key(0, listingKey)
		m.key(1, name)
	} else {
		m.item(fixed+objectKey+delim+s.AttrBytes, 0)
		m.key(0, objectKey) // the listing row's key is shorter by the id
		m.key(1, max(delim, name))
	}
	switch {
	case int64(s.Roots) > int64(s.Children) && m.tops(0, int64(s.Roots)):
		m.collectionOf(0, int64(s.Roots), l.delim) // the roots' listing
	case m.tops(0, max(1, int64(s.Children))):
		m.collectionOf(0, max(1, int64(s.Children)), "…"+l.delim+s.ID+l.delim) // the node's children's listing
	}
}

// NodeFilter keeps the object rows: Child = the delimiter.
func (l *prefixLayout) NodeFilter() *Filter {
	return &Filter{
		Expr:   "#c = :d",
		Names:  map[string]string{"#c": l.child},
		Values: map[string]types.AttributeValue{":d": strAttr(l.delim)},
		Text:   fmt.Sprintf("%s = %q", l.child, l.delim),
	}
}

// IsNode reports whether the item is an object row: its Child is the
// delimiter.
func (l *prefixLayout) IsNode(item View) bool {
	child, ok := item.str(l.child)
	return ok && child == l.delim
}

// NodeOf returns the id of an object row, the last id of its Key, and the
// parent's, the one before it.
func (l *prefixLayout) NodeOf(item View) (id, parent string, ok bool) {
	key, ok1 := item.str(l.key)
	child, ok2 := item.str(l.child)
	if !ok1 || !ok2 || child != l.delim || !strings.HasPrefix(key, l.delim) {
		return "", "", false
	}
	path := key[len(l.delim):]
	i := strings.LastIndex(path, l.delim)
	if i < 0 {
		return path, "", path != ""
	}
	if l.pathIDs {
		return path, path[:i], true
	}
	id, parent = path[i+len(l.delim):], path[:i]
	if j := strings.LastIndex(parent, l.delim); j >= 0 {
		parent = parent[j+len(l.delim):]
	}
	return id, parent, id != ""
}

// Owner is the last id of an object row's Key, or a listing row's Child.
// A Key without the delimiter (not written by this layout) is taken whole.
func (l *prefixLayout) Owner(item View) string {
	child, _ := item.str(l.child)
	key, _ := item.str(l.key)
	if l.pathIDs {
		// The object row's Key and a listing row's Key and Child name the
		// node's path.
		key = strings.TrimPrefix(key, l.delim)
		if child != l.delim {
			return key + child
		}
		return key
	}
	if child != l.delim {
		return child
	}
	if i := strings.LastIndex(key, l.delim); i >= 0 {
		return key[i+len(l.delim):]
	}
	return key
}

// PathKeyed is true: the keys are paths; but with path ids, which are
// the paths themselves.
func (l *prefixLayout) PathKeyed() bool { return !l.pathIDs }

// Query answers a query on a prefix table: get is a GetItem of the object
// row; children a Query of the listing partition, then BatchGetItem of the
// object rows; descendants breadth-first listing Queries, a level's in
// parallel, then BatchGetItem; ancestors BatchGetItem of the prefix object
// rows. The keys are paths, so the node's path comes first: Request.Path,
// or else a Scan finds it.
func (l *prefixLayout) Query(ctx context.Context, r Reads, q Request) ([]Result, error) {
	path := q.Path
	if l.pathIDs {
		// The id is the path: no Scan.
		path = strings.Split(q.ID, l.delim)
	}
	if len(path) == 0 {
		var err error
		if path, err = l.locate(ctx, r, &q); err != nil {
			return nil, err
		}
	}
	switch q.Kind {
	case QueryGet:
		if q.FollowLinks {
			return l.follow(ctx, r, path)
		}
		res, err := l.self(ctx, r, path)
		if err != nil {
			return nil, err
		}
		return []Result{res}, nil
	case QueryAncestors:
		return l.ancestors(ctx, r, &q, path)
	}
	return l.descendants(ctx, r, &q, path)
}

// keyOf is the Key of the object row of the node at the end of ids.
func (l *prefixLayout) keyOf(ids []string) string { return l.delim + strings.Join(ids, l.delim) }

// objectKey is the key of the object row of the node at the end of ids.
func (l *prefixLayout) objectKey(ids []string) Item {
	return Item{l.key: strAttr(l.keyOf(ids)), l.child: strAttr(l.delim)}
}

// pathName names a node by its path in messages.
func (l *prefixLayout) pathName(path []string) string {
	return fmt.Sprintf("node %q (path %s)", path[len(path)-1], l.keyOf(path))
}

// self reads the node's object row.
func (l *prefixLayout) self(ctx context.Context, r Reads, path []string) (Result, error) {
	item, err := r.GetItem(ctx, l.objectKey(path))
	if err != nil {
		return Result{}, err
	}
	if item == nil && ReadsImplicit(l) {
		// An implicit inner node has its listing row only.
		listing := Item{l.key: strAttr(l.keyOf(path[:len(path)-1]) + l.delim), l.child: strAttr(path[len(path)-1])}
		if len(path) == 1 {
			listing[l.key] = strAttr(l.delim)
		}
		if item, err = r.GetItem(ctx, listing); err != nil {
			return Result{}, err
		}
		if item != nil {
			return l.implicitResult(path, 0), nil
		}
	}
	if item == nil {
		return Result{}, &NotFoundError{Node: l.pathName(path)}
	}
	return nodeResult(l, item, 0)
}

// follow reads the node's object row and, when it is a link, the object
// row of its target, once: dynamotree's Get, which follows links, but not
// past the first, so that a cycle of links someone else wrote ends too.
func (l *prefixLayout) follow(ctx context.Context, r Reads, path []string) ([]Result, error) {
	item, err := r.GetItem(ctx, l.objectKey(path))
	if err != nil {
		return nil, err
	}
	if item == nil {
		return nil, &NotFoundError{Node: l.pathName(path)}
	}
	link, err := nodeResult(l, item, 0)
	if err != nil {
		return nil, err
	}
	target, ok := item[l.delim].(*types.AttributeValueMemberS)
	if !ok {
		return []Result{link}, nil // not a link: the node itself
	}
	res, err := l.self(ctx, r, strings.Split(strings.TrimPrefix(target.Value, l.delim), l.delim))
	var missing *NotFoundError
	if errors.As(err, &missing) {
		return nil, &NotFoundError{Node: fmt.Sprintf("node %q (path %s), which the link %s links to,", l.linkID(target.Value), target.Value, l.pathName(path))}
	}
	if err != nil {
		return nil, err
	}
	res.Via = link.ID
	return []Result{res}, nil
}

// implicitResult is the node at the end of path, an implicit inner node:
// no attributes.
func (l *prefixLayout) implicitResult(path []string, rd int) Result {
	res := Result{ID: path[len(path)-1], RelativeDepth: rd, Attrs: transform.Attrs{}}
	if len(path) > 1 {
		res.Parent = path[len(path)-2]
	}
	if l.pathIDs {
		res.ID = strings.Join(path, l.delim)
		res.Parent = strings.Join(path[:len(path)-1], l.delim)
	}
	return res
}

// implicitRest turns the keys of depthOf, object rows a BatchGetItem did
// not find, into implicit inner nodes when the layout reads them; they
// are left in depthOf otherwise.
func (l *prefixLayout) implicitRest(depthOf map[string]int, res []Result, keep func(rd int) bool) []Result {
	if !ReadsImplicit(l) {
		return res
	}
	for key, rd := range depthOf {
		if keep(rd) {
			res = append(res, l.implicitResult(strings.Split(strings.TrimPrefix(key, l.delim), l.delim), rd))
		}
		delete(depthOf, key)
	}
	return res
}

// ancestors reads the object rows of the path's prefixes with
// BatchGetItem. The node's own row is read too, whether or not the band
// wants it, so that a path that is not in the table is an error; unless
// the node is Known and the band leaves it out.
func (l *prefixLayout) ancestors(ctx context.Context, r Reads, q *Request, path []string) ([]Result, error) {
	d := len(path) - 1
	depthOf := map[string]int{}
	var keys []Item
	self := !q.Known || q.InBand(0)
	if self {
		depthOf[l.keyOf(path)] = 0
		keys = append(keys, l.objectKey(path))
	}
	for rd := max(q.MinDepth, 1); rd <= d && q.InBand(rd); rd++ {
		ids := path[:d-rd+1]
		depthOf[l.keyOf(ids)] = rd
		keys = append(keys, l.objectKey(ids))
	}
	res, err := l.objectsAt(ctx, r, keys, depthOf, q.InBand, nil)
	if err != nil {
		return nil, err
	}
	if _, ok := depthOf[l.keyOf(path)]; ok && self {
		if _, err := l.self(ctx, r, path); err != nil {
			return nil, err
		}
	}
	res = l.implicitRest(depthOf, res, q.InBand)
	if len(depthOf) > 0 {
		return nil, &InconsistentError{Msg: fmt.Sprintf("%s is in the table, but its ancestor %s has no object row", l.pathName(path), sortedKeys(depthOf)[0])}
	}
	return res, nil
}

// objectsAt reads the object rows keys name with BatchGetItem and appends
// each to res at the relative depth depthOf gives its key, when inBand
// takes that depth. The keys it reads leave depthOf: what is left there
// has no object row.
func (l *prefixLayout) objectsAt(ctx context.Context, r Reads, keys []Item, depthOf map[string]int, inBand func(int) bool, res []Result) ([]Result, error) {
	items, err := r.BatchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	for _, item := range items {
		n, err := nodeResult(l, item, 0)
		if err != nil {
			return nil, err
		}
		key := asString(item, l.key)
		rd, ok := depthOf[key]
		if !ok {
			continue
		}
		delete(depthOf, key)
		if inBand(rd) {
			n.RelativeDepth = rd
			res = append(res, n)
		}
	}
	return res, nil
}

// descendants lists the subtree breadth first: each level's listing
// partitions (Key = the parent's key + delimiter) are queried in parallel,
// down to the band's last level; then the object rows of the levels in the
// band are read with BatchGetItem.
func (l *prefixLayout) descendants(ctx context.Context, r Reads, q *Request, path []string) ([]Result, error) {
	var res []Result
	checked := false
	if q.InBand(0) {
		self, err := l.self(ctx, r, path)
		if err != nil {
			return nil, err
		}
		res = append(res, self)
		checked = true
	}
	type wanted struct {
		path  []string
		depth int
	}
	var want []wanted
	level := [][]string{path}
	for rd := 1; len(level) > 0 && (q.MaxDepth == NoMaxDepth || rd <= q.MaxDepth); rd++ {
		next, err := l.listChildren(ctx, r, q, level)
		if err != nil {
			return nil, err
		}
		if rd == 1 && len(next) == 0 && !checked && !q.Known {
			// No children: a leaf, or no such node.
			if _, err := l.self(ctx, r, path); err != nil {
				return nil, err
			}
		}
		if q.InBand(rd) {
			for _, p := range next {
				want = append(want, wanted{p, rd})
			}
		}
		level = next
	}
	keys := make([]Item, len(want))
	depthOf := make(map[string]int, len(want))
	for i, w := range want {
		keys[i] = l.objectKey(w.path)
		depthOf[l.keyOf(w.path)] = w.depth
	}
	res, err := l.objectsAt(ctx, r, keys, depthOf, func(int) bool { return true }, res)
	if err != nil {
		return nil, err
	}
	res = l.implicitRest(depthOf, res, func(int) bool { return true })
	if len(depthOf) > 0 {
		return nil, &InconsistentError{Msg: fmt.Sprintf("a listing row names %s, which has no object row", sortedKeys(depthOf)[0])}
	}
	return res, nil
}

// listChildren queries the listing partition of every path of a level, in
// parallel, and returns the children's paths.
func (l *prefixLayout) listChildren(ctx context.Context, r Reads, q *Request, level [][]string) ([][]string, error) {
	var mu sync.Mutex
	var next [][]string
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(q.Concurrency)
	for _, parent := range level {
		g.Go(func() error {
			return r.Query(gctx, QueryInput{
				KeyCondition: "#k = :k",
				Names:        map[string]string{"#k": l.key},
				Values:       map[string]types.AttributeValue{":k": strAttr(l.keyOf(parent) + l.delim)},
			}, func(items []Item) error {
				page := make([][]string, 0, len(items))
				for _, item := range items {
					child := asString(item, l.child)
					if child == "" || child == l.delim {
						return &ItemError{Item: item, Err: fmt.Errorf("%w: a listing row without a child id", ErrItem)}
					}
					p := make([]string, len(parent)+1)
					copy(p, parent)
					p[len(parent)] = child
					page = append(page, p)
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

// locate finds the path of the node Request.ID with a Scan that keeps the
// object rows whose Key contains delimiter + id, and stops at the first
// whose Key ends with it. It costs up to a read of the whole table.
func (l *prefixLayout) locate(ctx context.Context, r Reads, q *Request) ([]string, error) {
	suffix := l.delim + q.ID
	filter := &Filter{
		Expr:  "#c = :d AND contains(#k, :x)",
		Names: map[string]string{"#c": l.child, "#k": l.key},
		Values: map[string]types.AttributeValue{
			":d": strAttr(l.delim),
			":x": strAttr(suffix),
		},
	}
	var mu sync.Mutex
	var found string
	err := r.Scan(ctx, filter, func(items []Item) error {
		for _, item := range items {
			if key := asString(item, l.key); strings.HasSuffix(key, suffix) {
				mu.Lock()
				if found == "" || key < found {
					found = key
				}
				mu.Unlock()
				return ErrStopScan
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if found == "" {
		return nil, &NotFoundError{Node: fmt.Sprintf("node %q", q.ID)}
	}
	path := strings.Split(strings.TrimPrefix(found, l.delim), l.delim)
	if q.OnLocate != nil {
		q.OnLocate(path)
	}
	return path, nil
}

// Costs is the cost model of Query on a prefix table, given the node's
// path.
func (l *prefixLayout) Costs(f *transform.Forest, sample []int32) CostModel {
	return &prefixCosts{costForest: newCostForest(f, sample), l: l, listing: make([]int32, f.Len())}
}

// prefixCosts keeps the size of each node's object row and listing row.
type prefixCosts struct {
	costForest
	l       *prefixLayout
	listing []int32
}

// Add finds each row's node from its own keys: an implicit inner node
// (--implicit-inner) has a listing row and no object row.
func (c *prefixCosts) Add(item Item, size int) (int32, int32, error) {
	key, child := asString(item, c.l.key), asString(item, c.l.child)
	if child == c.l.delim {
		id := key[strings.LastIndex(key, c.l.delim)+len(c.l.delim):]
		if c.l.pathIDs {
			id = strings.TrimPrefix(key, c.l.delim)
		}
		i, err := c.lookup(id)
		if err != nil {
			return i, -1, err
		}
		c.own[i] = int32(size)
		return i, -1, nil
	}
	// A listing row: Key is the parent's key and the delimiter, Child
	// the node's name.
	id := child
	if c.l.pathIDs {
		id = strings.TrimPrefix(key, c.l.delim) + child
	}
	i, err := c.lookup(id)
	if err != nil {
		return i, -1, err
	}
	c.listing[i] = int32(size)
	return i, -1, nil
}

// Estimate follows Query given the id of a node known to be there
// (Request.Known). The keys are paths, so every query but get first learns
// the node's path, priced as path learns its own: the GetItem of the node's
// item (LearnsPath). Then a listing Query per node above the band's last
// level and BatchGetItem of the object rows; ancestors BatchGetItem of the
// ancestors' object rows.
func (c *prefixCosts) Estimate(k int) QueryCosts {
	i, own, out := c.getFirst(k)
	// listing is one listing-partition Query: the children of z.
	listing := func(z int32) Cost {
		var rows sizeSum
		for _, ch := range c.f.Children(int(z)) {
			rows.add(int(c.listing[ch]))
		}
		return queryCost(rows)
	}
	learn := own // the path
	if c.l.pathIDs {
		learn = Cost{} // the id is the path
	}
	for _, q := range []struct {
		cost *Cost
		band int
	}{{&out.Children, 1}, {&out.Descendants, -1}, {&out.Depth2, 2}} {
		cost := learn
		var b batchCost
		c.walk(i, func(y int32, rel int) {
			if q.band < 0 || rel < q.band {
				cost.Add(listing(y)) // breadth first: a Query per node above the band's last level
			}
			if rel > 0 && (q.band < 0 || rel <= q.band) {
				b.add(c.own[y])
			}
		})
		cost.Add(b.done())
		cost.Nodes = b.c.Items
		*q.cost = cost
	}
	var b batchCost
	c.ancestors(i, func(a int32) { b.add(c.own[a]) })
	out.Ancestors = learn
	out.Ancestors.Add(b.done())
	out.Ancestors.Nodes = int64(c.f.Depth(int(i)))
	return out
}
