package layouts

import (
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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
		base: newBase(pathSchema, names, delim),
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
	path := joinPath(n.Path, l.delim)
	if strings.Count(path, l.delim) != n.Depth {
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
	if path != id && !strings.HasSuffix(path, l.delim+id) {
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
	idLen := len(s.ID)
	pathLen := s.PathBytes + s.Depth*len(l.delim)
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
	m.collection(0, 1)
	m.collection(1, int64(s.Children))
	if l.shards > 0 {
		m.collection(2, int64((s.TreeSize+l.shards-1)/l.shards))
	} else {
		m.collection(2, int64(s.TreeSize))
	}
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
