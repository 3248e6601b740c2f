package layouts

import (
	"fmt"
	"slices"
	"strconv"

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
	if opts.Delimiter != "" {
		return nil, fmt.Errorf("layouts: --delimiter %q: the closure layout has no delimiter; leave --delimiter out", opts.Delimiter)
	}
	names, err := closureSchema.resolve(opts.Attr)
	if err != nil {
		return nil, err
	}
	l := &closureLayout{
		base: newBase(closureSchema, names, ""),
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
	if err := l.checkNode(n); err != nil {
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
	self := row(0, len(n.Attrs))
	for k, v := range n.Attrs {
		self[k] = v
	}
	emit(self)
	for r := 1; r <= n.Depth; r++ {
		if l.copyAll {
			item := row(r, len(n.Attrs))
			for k, v := range n.Attrs {
				item[k] = v
			}
			emit(item)
			continue
		}
		item := row(r, len(l.copy))
		for _, k := range l.copy {
			if v, ok := n.Attrs[k]; ok {
				item[k] = v
			}
		}
		emit(item)
	}
	return nil
}

// AppendItems is Items into buf: the same rows, with the same checks.
func (l *closureLayout) AppendItems(n *FlatNode, b *ItemBuffer, emit func([]Attr)) error {
	if err := l.checkFlatNode(&l.rs, n); err != nil {
		return err
	}
	b.s[0].Value = n.ID
	b.s[1].Value = n.Parent
	attrs := append(b.attrs[:0], n.Attrs...)
	attrs = l.appendRow(attrs, b, n, 0)
	emit(attrs)
	for r := 1; r <= n.Depth; r++ {
		attrs = attrs[:0]
		if l.copyAll {
			attrs = append(attrs, n.Attrs...)
		} else {
			for _, k := range l.copy {
				for _, a := range n.Attrs {
					if a.Name == k {
						attrs = append(attrs, a)
						break
					}
				}
			}
		}
		attrs = l.appendRow(attrs, b, n, r)
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
	if c, ok := l.(*closureLayout); ok {
		return c.copySize(attrs)
	}
	return 0
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
	m.collection(0, int64(d+1))
	m.collection(1, int64(s.Subtree))
	if d == 0 {
		return
	}
	m.key(2, s.MaxAncestorIDBytes)
	fixed := common + l.copyBytes(s)
	ancBytes := s.PathBytes - idLen // the ids of the ancestors, each once
	rows := int64(d)
	m.Items += rows
	m.Bytes += rows*int64(fixed) + sumNumberSize(d) - int64(numberSize(0)) + int64(ancBytes)
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
