package layouts

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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
	l := &prefixLayout{base: newBase(prefixSchema, names, delim), key: names["Key"], child: names["Child"]}
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

	item := make(Item, len(n.Attrs)+2)
	for k, v := range n.Attrs {
		item[k] = v
	}
	item[l.key] = &types.AttributeValueMemberS{Value: object}
	item[l.child] = &types.AttributeValueMemberS{Value: l.delim}
	emit(item)
	emit(Item{
		l.key:   &types.AttributeValueMemberS{Value: listing},
		l.child: &types.AttributeValueMemberS{Value: n.ID},
	})
	return nil
}

// AppendItems is Items into buf: the same two rows, with the same checks.
func (l *prefixLayout) AppendItems(n *FlatNode, b *ItemBuffer, emit func([]Attr)) error {
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
	return transform.Record{ID: id, Parent: parent, Attrs: r.rest(l.attrs)}, true, nil
}

// Measure adds the node's two rows. It is exact; the table's collection is
// the largest listing: the node's children, or the forest's roots under ¦.
func (l *prefixLayout) Measure(s *transform.Stats, m *Measure) {
	m.Nodes++
	delim, idLen := len(l.delim), len(s.ID)
	objectKey := s.PathBytes + (s.Depth+1)*delim
	fixed := len(l.key) + len(l.child)
	m.item(fixed+objectKey+delim+s.AttrBytes, 0)
	m.item(fixed+objectKey-idLen+idLen, 0)
	m.key(0, objectKey) // the listing row's key is shorter by the id
	m.key(1, max(delim, idLen))
	m.collection(0, max(1, int64(s.Children), int64(s.Roots)))
}
