package models

import (
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// Models whose base writes several rows a node: closure and prefix.
//
// A table model whose base is closure describes each of a node's rows, one
// per (node, ancestor), rather than the node: the model's templates are
// built from a row's parts ({id}, {parent}, {ancestor}, {relative_depth}),
// and a row of the model reads back into the closure layout's row, which
// the closure layout then reads (Node, Query, Costs) as its own.
//
// {relative_depth} is a number. Alone with type N it is written as it is;
// in a text template it is zero-padded to the model's digits, so that the
// order of the text is the order of the numbers, which the closure
// layout's bands (= 1, >= 1, BETWEEN 1 AND 2) need of its sort keys.

// checkDepth refuses a node too deep for the digits of {relative_depth}
// in text (tooDeep is nil when the model writes it as a number only).
func (m *modelLayout) checkDepth(depth int) error {
	if m.tooDeep != nil && depth > maxPadded(m.digits) {
		return m.tooDeep
	}
	return nil
}

// putAttrs sets on item the model's attributes of v (but those a root
// does not have): those built from a closure row's own parts ({ancestor},
// {relative_depth}) when row, the others and the type field otherwise.
func (m *modelLayout) putAttrs(item layouts.Item, v *nodeVals, root, row bool) {
	for _, a := range m.attrs {
		if (a.absentOnRoot && root) || row != (a.tmpl.has(phAncestor) || a.tmpl.has(phRelDepth)) {
			continue
		}
		s, ok := a.tmpl.render(v, m.delim)
		if !ok {
			continue
		}
		item[a.name] = m.value(a, s)
	}
	if m.typeName != "" && !row {
		item[m.typeName] = layouts.StringValue(m.typeValue)
	}
}

// rowDepth is the relative depth the table's sort key of a closure model's
// row holds.
func (m *modelLayout) rowDepth(item layouts.View) (int, bool) {
	var v nodeVals
	av := item.Get(m.sk.name)
	if _, isN := av.(*types.AttributeValueMemberN); av == nil || isN != m.sk.num || !m.sk.tmpl.match(valueText(av), &v, m.delim) {
		return 0, false
	}
	return v.relDepth, true
}

// closureFilter keeps the nodes' own rows (relative depth 0) carrying the
// type field.
func (m *modelLayout) closureFilter() *layouts.Filter {
	v := nodeVals{}
	v.set(phRelDepth)
	zero, _ := m.sk.tmpl.render(&v, m.delim)
	f := &layouts.Filter{
		Expr:   "#rd = :rd",
		Names:  map[string]string{"#rd": m.sk.name},
		Values: map[string]types.AttributeValue{":rd": m.value(m.sk, zero)},
		Text:   m.sk.name + " = " + zero,
	}
	if m.typeName != "" {
		f.Expr = "#ty = :ty AND " + f.Expr
		f.Names["#ty"] = m.typeName
		f.Values[":ty"] = layouts.StringValue(m.typeValue)
		f.Text = m.typeName + " = " + m.typeValue + " AND " + f.Text
	}
	return f
}

// wholeRows reports whether a Query of the model's ByAncestor index is
// followed by a BatchGetItem of the rows it found, whole: when the index
// does not project every attribute, and the closure layout needs more of
// a row than its keys (its copied attributes, with --closure-copy all) or
// the type field is not there to tell the rows from other items.
func (m *modelLayout) wholeRows(x *modelIndex) bool {
	if x == nil || x.projection == types.ProjectionTypeAll {
		return false
	}
	return layouts.ClosureCopiesAll(m.base) || (m.typeName != "" && !x.projects(m.typeName, m))
}

// depthBound renders bound n of a band of relative depths through the
// key a's template; false when n is past what the digits hold (no row is).
func (m *modelLayout) depthBound(a *modelAttr, n int) (types.AttributeValue, bool) {
	if a.tmpl.width > 0 && n > maxPadded(a.tmpl.width) {
		return nil, false
	}
	v := nodeVals{relDepth: n}
	v.set(phRelDepth)
	s, _ := a.tmpl.render(&v, m.delim)
	return m.value(a, s), true
}

// rowShape is what a closure row's size is made of, for Measure.
type rowShape struct {
	idLen, parLen, ancLen, r int
	root                     bool
	user                     int // the bytes of the user's attributes on the row
}

// attrLen is the size of attribute a on the row (name and value), and
// false when the row does not have it.
func (m *modelLayout) attrLen(a *modelAttr, s rowShape) (int, bool) {
	if s.root && (a.absentOnRoot || a.tmpl.has(phParent)) {
		return 0, false
	}
	if a.num {
		return len(a.name) + layouts.NumberSize(s.r), true
	}
	n := len(a.name)
	for _, p := range a.tmpl.parts {
		switch p.ph {
		case "":
			n += len(p.lit)
		case phID:
			n += s.idLen
		case phParent:
			n += s.parLen
		case phAncestor:
			n += s.ancLen
		case phRelDepth:
			n += max(a.tmpl.width, layouts.Digits(s.r))
		}
	}
	return n, true
}

// keyLen is the length of key a's value on the row (a number's decimal
// text).
func (m *modelLayout) keyLen(a *modelAttr, s rowShape) int {
	if a.num {
		return len(strconv.Itoa(s.r))
	}
	n, _ := m.attrLen(a, s)
	return n - len(a.name)
}

// rowBytes is the size of the row, and of its copy in index x as x
// projects it (every attribute but the user's is exact; an INCLUDE naming
// one of the user's counts them all).
func (m *modelLayout) rowBytes(x *modelIndex, s rowShape) (size, projected int) {
	size = s.user
	if m.typeName != "" {
		size += len(m.typeName) + len(m.typeValue)
	}
	for _, a := range m.attrs {
		if n, ok := m.attrLen(a, s); ok {
			size += n
		}
	}
	if x.projection == types.ProjectionTypeAll {
		return size, size
	}
	seen := map[string]bool{}
	user := false
	add := func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		switch a := m.byName[name]; {
		case a != nil:
			if n, ok := m.attrLen(a, s); ok {
				projected += n
			}
		case name == m.typeName:
			projected += len(m.typeName) + len(m.typeValue)
		default:
			user = true
		}
	}
	for _, a := range []*modelAttr{m.pk, m.sk, x.pk, x.sk} {
		add(a.name)
	}
	for _, name := range x.include {
		add(name)
	}
	if user {
		projected += s.user
	}
	return size, projected
}

// measureClosure is Measure for a closure model: the node's own row
// exactly, and its depth ancestor rows in O(1), each of which is a fixed
// size plus the numbers' and the ancestor ids' bytes, so that the items,
// bytes, index bytes, keys and collections are exact; WCU and MaxItemBytes
// are exact when every ancestor row is within one kilobyte, and upper
// bounds otherwise, as the closure layout's.
func (m *modelLayout) measureClosure(s *transform.Stats, ms *layouts.Measure) {
	ms.Nodes++
	x := m.indexes[0] // closure's one index, ByAncestor
	d, idLen := s.Depth, len(s.ID)
	own := rowShape{idLen: idLen, parLen: len(s.ParentID), ancLen: idLen, root: d == 0, user: s.AttrBytes}
	size, proj := m.rowBytes(x, own)
	ms.ProjectedItem(size, []int{proj})
	ms.Key(0, m.keyLen(m.pk, own))
	ms.Key(1, m.keyLen(m.sk, own))
	ms.Key(2, m.keyLen(x.pk, own))
	ms.Key(3, m.keyLen(x.sk, own))
	ms.CollectionOf(0, int64(d+1), m.hotKey(m.pk.tmpl, map[string]string{phID: s.ID}))
	ms.CollectionOf(1, int64(s.Subtree), m.hotKey(x.pk.tmpl, map[string]string{phAncestor: s.ID}))
	if d == 0 {
		return
	}
	// Row r is a + n·numberSize(r) + k·len(its ancestor's id), where n
	// counts the N attributes of {relative_depth} and k the {ancestor}s.
	row := rowShape{idLen: idLen, parLen: len(s.ParentID), r: 1, user: layouts.ClosureCopyBytes(m.base, s)}
	s0, p0 := m.rowBytes(x, row)
	row.ancLen = 1
	s1, p1 := m.rowBytes(x, row)
	k, kp := s1-s0, p1-p0
	n, np := 0, 0
	for _, a := range m.attrs {
		if a.num && a.tmpl.has(phRelDepth) {
			n++
			if x.projects(a.name, m) {
				np++
			}
		}
	}
	a, ap := s0-n*layouts.NumberSize(1), p0-np*layouts.NumberSize(1)
	rows := int64(d)
	ancBytes := int64(s.PathBytes - idLen) // the ancestors' ids, each once
	nums := layouts.SumNumberSize(d) - int64(layouts.NumberSize(0))
	ms.Items += rows
	ms.Bytes += rows*int64(a) + int64(n)*nums + int64(k)*ancBytes
	ms.IndexItems += rows
	ms.IndexBytes += rows*int64(ap) + int64(np)*nums + int64(kp)*ancBytes

	// Every row lands in ByAncestor: the table writes the rows, the index
	// their copies (the same rows when it projects ALL).
	wcu, hi := ancestorRowsWCU(rows, a, n, k, layouts.MaxNumberSize(d), s.MaxAncestorIDBytes, ancBytes)
	iwcu, _ := ancestorRowsWCU(rows, ap, np, kp, layouts.MaxNumberSize(d), s.MaxAncestorIDBytes, ancBytes)
	ms.WCU += wcu + iwcu
	ms.MaxItemBytes = max(ms.MaxItemBytes, hi)

	row.r, row.ancLen = d, s.MaxAncestorIDBytes
	ms.Key(1, m.keyLen(m.sk, row))
	ms.Key(2, m.keyLen(x.pk, row))
	ms.Key(3, m.keyLen(x.sk, row))
}

// ancestorRowsWCU is the WCU of writing rows ancestor rows (or their
// copies in an index), row r being a + n·numberSize(r) + k·len(its
// ancestor's id) bytes, with maxNS the largest numberSize, the longest
// ancestor id maxAnc bytes and ancBytes the ancestors' ids together: exact
// when every row is within one kilobyte, an upper bound otherwise. hi is
// the largest row's size.
func ancestorRowsWCU(rows int64, a, n, k, maxNS, maxAnc int, ancBytes int64) (wcu int64, hi int) {
	hi = a + n*maxNS + k*maxAnc
	lo := min(a+n*layouts.NumberSize(1)+k, hi)
	wlo, whi := int64(transform.WCU(lo)), int64(transform.WCU(hi))
	wcu = rows * wlo
	if whi > wlo {
		// A row costs more than wlo only if k times its ancestor's id
		// is at least need bytes. The longest id may be; of the other
		// rows-1, each at least 1 byte and adding up to the rest, at most
		// heavy are.
		heavy := rows - 1
		if need := wlo*1024 - int64(a+n*maxNS) + 1; k > 0 {
			needLen := (need + int64(k) - 1) / int64(k)
			if needLen > 1 {
				heavy = min(heavy, max(0, ancBytes-int64(maxAnc)-(rows-1))/(needLen-1))
			}
		}
		wcu += (1 + heavy) * (whi - wlo)
	}
	return wcu, hi
}

// closureRowCosts are the BatchGetItems of whole rows that follow a Query
// of a closure model's ByAncestor index projecting less than the rows
// (wholeRows), for each sampled node: of its children's rows, its
// descendants' down to relative depth 2, and all of its descendants'.
type closureRowCosts struct {
	sampleAt           []int32
	child, band2, desc []layouts.BatchCost
}

func newClosureRowCosts(f *transform.Forest, sample []int32) *closureRowCosts {
	c := &closureRowCosts{sampleAt: make([]int32, f.Len()),
		child: make([]layouts.BatchCost, len(sample)), band2: make([]layouts.BatchCost, len(sample)), desc: make([]layouts.BatchCost, len(sample))}
	for i := range c.sampleAt {
		c.sampleAt[i] = -1
	}
	for k, i := range sample {
		c.sampleAt[i] = int32(k)
	}
	return c
}

// add counts row r of a node whose ancestor r levels up is anc.
func (c *closureRowCosts) add(anc int32, r int, size int) {
	if r == 0 || anc < 0 {
		return
	}
	k := c.sampleAt[anc]
	if k < 0 {
		return
	}
	c.desc[k].Add(int32(size))
	if r <= 2 {
		c.band2[k].Add(int32(size))
	}
	if r == 1 {
		c.child[k].Add(int32(size))
	}
}

// WithClosureCopy returns the table model l with its closure base copying
// to the ancestor rows what cc says (as Options.ClosureCopy, which
// --closure-copy gives), in place of the model's closure_copy. It is an
// error for a layout or a model whose base is not closure.
func WithClosureCopy(l layouts.Layout, cc []string) (layouts.Layout, error) {
	m, ok := l.(*modelLayout)
	if !ok || !m.closure {
		return nil, fmt.Errorf("layouts: %s has no ancestor rows to copy attributes to: --closure-copy goes with the closure layout or a model whose base is closure", l.Name())
	}
	renames := map[string]string{}
	for c := range canonTemplates[layouts.ClosureName] {
		renames[c] = modelPrivate + c
	}
	base, err := layouts.New(layouts.ClosureName, layouts.Options{Attr: renames, ClosureCopy: cc})
	if err != nil {
		return nil, err
	}
	out := *m
	out.base = base
	return &out, nil
}

// indexReadBytes is the size of item (of size bytes) as a Query of index x
// reads it: the item whole when x projects every attribute, otherwise its
// projected attributes (IndexItemBytes).
func (m *modelLayout) indexReadBytes(x *modelIndex, item layouts.Item, size int) int {
	if x == nil || x.projection == types.ProjectionTypeAll {
		return size
	}
	spec := m.Table()
	for _, ix := range spec.Indexes {
		if ix.Name == x.name {
			return layouts.IndexItemBytes(spec, ix, item, size)
		}
	}
	return size
}

// The prefix base: a model describes each of the prefix layout's two rows
// a node has, the object row (Key ¦a¦b, Child ¦) and the listing row (Key
// ¦a¦, Child b), by templates of its Key and Child ({key}, {child}), and
// reads each back into the prefix layout's row, which the prefix layout
// then reads as its own.

// prefixRow is the model's item of prefix row b: the row's user
// attributes, the model's attributes built from its Key and Child, and the
// type field. root says the row is a root's.
func (m *modelLayout) prefixRow(b layouts.Item, root bool) layouts.Item {
	v := nodeVals{key: valueText(b[modelPrivate+"Key"]), child: valueText(b[modelPrivate+"Child"])}
	v.set(phKey)
	v.set(phChild)
	item := make(layouts.Item, len(b)+len(m.attrs))
	for k, a := range b {
		if _, ok := m.baseAttrs[k]; !ok {
			item[k] = a
		}
	}
	m.putAttrs(item, &v, root, false)
	m.putAttrs(item, &v, root, true)
	return item
}

// prefixKey is the prefix layout's key of a model row, read from the
// model's table key; false when it does not read back.
func (m *modelLayout) prefixKey(item layouts.View) (layouts.Item, bool) {
	var v nodeVals
	for _, a := range []*modelAttr{m.pk, m.sk} {
		s, ok := item.Str(a.name)
		if !ok || !a.tmpl.match(s, &v, m.delim) {
			return nil, false
		}
	}
	return layouts.Item{modelPrivate + "Key": layouts.StringValue(v.key), modelPrivate + "Child": layouts.StringValue(v.child)}, true
}

// prefixFilter keeps the object rows (Child is the delimiter) carrying the
// type field.
func (m *modelLayout) prefixFilter() *layouts.Filter {
	v := nodeVals{child: m.delim}
	v.set(phChild)
	obj, _ := m.sk.tmpl.render(&v, m.delim)
	f := &layouts.Filter{
		Expr:   "#c = :c",
		Names:  map[string]string{"#c": m.sk.name},
		Values: map[string]types.AttributeValue{":c": layouts.StringValue(obj)},
		Text:   m.sk.name + " = " + obj,
	}
	if m.typeName != "" {
		f.Expr = "#ty = :ty AND " + f.Expr
		f.Names["#ty"] = m.typeName
		f.Values[":ty"] = layouts.StringValue(m.typeValue)
		f.Text = m.typeName + " = " + m.typeValue + " AND " + f.Text
	}
	return f
}

// measurePrefix is Measure for a prefix model: the node's object row and
// its listing row, exactly; the largest listing is the prefix layout's.
func (m *modelLayout) measurePrefix(s *transform.Stats, ms *layouts.Measure) {
	bm := layouts.NewMeasure(m.base)
	m.base.Measure(s, bm)
	ms.Nodes++
	delim, idLen := len(m.delim), len(s.ID)
	objectKey := s.PathBytes + (s.Depth+1)*delim
	root := s.ParentID == ""
	rowBytes := func(key, child, user int) int {
		n := user
		if m.typeName != "" {
			n += len(m.typeName) + len(m.typeValue)
		}
		for _, a := range m.attrs {
			if a.absentOnRoot && root {
				continue
			}
			n += len(a.name) + m.prefixLen(a, key, child)
		}
		return n
	}
	ms.Item(rowBytes(objectKey, delim, s.AttrBytes), 0)
	ms.Item(rowBytes(objectKey-idLen, idLen, 0), 0)
	ms.Key(0, m.prefixLen(m.pk, objectKey, delim))
	ms.Key(1, max(m.prefixLen(m.sk, objectKey, delim), m.prefixLen(m.sk, objectKey-idLen, idLen)))
	for i, c := range bm.Collections {
		// The base names the Key of its largest listing.
		ms.CollectionOf(i, c, m.hotKey(m.pk.tmpl, map[string]string{phKey: bm.Hot[i]}))
	}
}

// prefixLen is the length of attribute a's value on a prefix row whose
// Key and Child are key and child bytes long.
func (m *modelLayout) prefixLen(a *modelAttr, key, child int) int {
	n := 0
	for _, p := range a.tmpl.parts {
		switch p.ph {
		case "":
			n += len(p.lit)
		case phKey:
			n += key
		case phChild:
			n += child
		}
	}
	return n
}

// RunShape is layouts.RunEmitter's for a closure model: its rows differ
// from one another where the templates of the row's own attributes hold
// {ancestor} and {relative_depth}, each written with its template's width.
// A model on another base writes no runs.
func (m *modelLayout) RunShape() (layouts.RunShape, bool) {
	if !m.closure {
		return layouts.RunShape{}, false
	}
	var s layouts.RunShape
	for _, a := range m.attrs {
		for _, p := range a.tmpl.parts {
			switch p.ph {
			case phAncestor:
				s.Ancestors++
			case phRelDepth:
				s.Depths = append(s.Depths, a.tmpl.width)
			}
		}
	}
	return s, true
}

// AppendItemRuns is layouts.RunEmitter's for a closure model: the node's
// own row and its row 1, built by AppendItems as if the node were one
// level deep (a closure model's templates hold no depth of the node's but
// the row's), row 1 standing for the node's depth rows.
func (m *modelLayout) AppendItemRuns(n *layouts.FlatNode, b *layouts.ItemBuffer, emit func([]layouts.Attr, int)) error {
	if !m.closure {
		return fmt.Errorf("layouts: the %s layout does not emit its items in runs", m.Name())
	}
	if err := m.checkDepth(n.Depth); err != nil {
		return fmt.Errorf("layouts: node %q: %w", n.ID, err)
	}
	one := layouts.FlatNode{ID: n.ID, Parent: n.Parent, Attrs: n.Attrs, Path: []string{n.ID}}
	if n.Depth > 0 {
		one.Depth, one.Path = 1, []string{n.Parent, n.ID}
	}
	r := 0
	return m.AppendItems(&one, b, func(attrs []layouts.Attr) {
		run := 0
		if r == 1 {
			run = n.Depth
		}
		r++
		emit(attrs, run)
	})
}

var _ layouts.RunEmitter = (*modelLayout)(nil)
