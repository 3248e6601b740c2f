package models

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
)

// modelReads are the reads of a model's table as its base layout sends
// them: keys, key conditions and filters in the base's attributes are
// translated through the model's templates, and the items read are turned
// back into the base's items. The table's other items (without the type
// field) are left out. A Query of an index that does not project every
// attribute is followed by a BatchGetItem of the items it found, whole.
type modelReads struct {
	m *modelLayout
	r layouts.Reads
}

// baseVals reads the base attributes of a base item (or key) into
// placeholders.
func (m *modelLayout) baseVals(item layouts.Item) (nodeVals, error) {
	var v nodeVals
	for name, a := range item {
		ba, ok := m.baseAttrs[name]
		if !ok {
			continue
		}
		if !ba.tmpl.match(valueText(a), &v, m.delim) {
			return v, fmt.Errorf("layouts: model %s: the %s layout's %s %q does not read back", m.name, m.baseName, ba.canon, valueText(a))
		}
	}
	v.derive(false, m.shards)
	return v, nil
}

// baseVals is the model's baseVals.
func (mr *modelReads) baseVals(item layouts.Item) (nodeVals, error) { return mr.m.baseVals(item) }

// tableKey is the model's key of the base key.
func (mr *modelReads) tableKey(key layouts.Item) (layouts.Item, error) {
	v, err := mr.baseVals(key)
	if err != nil {
		return nil, err
	}
	out := layouts.Item{}
	for _, a := range []*modelAttr{mr.m.pk, mr.m.sk} {
		if a == nil {
			continue
		}
		s, ok := a.tmpl.render(&v, mr.m.delim)
		if !ok {
			return nil, fmt.Errorf("layouts: model %s: cannot build key %s from the %s layout's key", mr.m.name, a.name, mr.m.baseName)
		}
		out[a.name] = mr.m.value(a, s)
	}
	return out, nil
}

// value is an attribute's value of its type.
func (m *modelLayout) value(a *modelAttr, s string) types.AttributeValue {
	if a.num {
		return &types.AttributeValueMemberN{Value: s}
	}
	return layouts.StringValue(s)
}

// toBase turns the model's items read into the base's, leaving the
// table's other items out.
func (mr *modelReads) toBase(items []layouts.Item) ([]layouts.Item, error) {
	out := make([]layouts.Item, 0, len(items))
	for _, it := range items {
		if mr.m.foreign(layouts.MapView(it)) {
			continue
		}
		if mr.m.typeName == "" && mr.m.Owner(layouts.MapView(it)) == "" {
			continue // a key of another entity
		}
		b, err := mr.m.toBase(it)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func (mr *modelReads) GetItem(ctx context.Context, key layouts.Item) (layouts.Item, error) {
	k, err := mr.tableKey(key)
	if err != nil {
		return nil, err
	}
	item, err := mr.r.GetItem(ctx, k)
	if err != nil || item == nil {
		return nil, err
	}
	items, err := mr.toBase([]layouts.Item{item})
	if err != nil || len(items) == 0 {
		return nil, err
	}
	return items[0], nil
}

func (mr *modelReads) BatchGet(ctx context.Context, keys []layouts.Item) ([]layouts.Item, error) {
	ks := make([]layouts.Item, 0, len(keys))
	for _, key := range keys {
		k, err := mr.tableKey(key)
		if err != nil {
			return nil, err
		}
		ks = append(ks, k)
	}
	items, err := mr.r.BatchGet(ctx, ks)
	if err != nil {
		return nil, err
	}
	return mr.toBase(items)
}

func (mr *modelReads) Scan(ctx context.Context, filter *layouts.Filter, fn func(items []layouts.Item) error) error {
	f, err := mr.filter(filter)
	if err != nil {
		return err
	}
	return mr.r.Scan(ctx, f, func(items []layouts.Item) error {
		b, err := mr.toBase(items)
		if err != nil || len(b) == 0 {
			return err
		}
		return fn(b)
	})
}

// filter is the base's Scan filter, translated, and the type field's. The
// base layouts that Scan with a filter (prefix, to find a node's path)
// filter on their table's keys: = a value, and contains(key, text), which
// holds of the model's key when it holds of the base's (the base checks
// what it finds).
func (mr *modelReads) filter(f *layouts.Filter) (*layouts.Filter, error) {
	m := mr.m
	if f == nil {
		return m.NodeFilter(), nil
	}
	cs, err := parseClauses(f.Expr)
	if err != nil {
		return nil, err
	}
	b := &exprBuilder{names: map[string]string{}, values: map[string]types.AttributeValue{}}
	var out []string
	for _, c := range cs {
		ba, ok := m.baseAttrs[f.Names[c.name]]
		var target *modelAttr
		for _, a := range []*modelAttr{m.pk, m.sk} {
			if a != nil && ok && a.tmpl.has(ba.tmpl.uses()[0]) {
				target = a
			}
		}
		if target == nil || (c.op != "=" && c.op != "contains") {
			return nil, fmt.Errorf("layouts: model %s: the %s layout's Scan filter %s has no translation", m.name, m.baseName, f.Text)
		}
		if c.op == "contains" {
			out = append(out, fmt.Sprintf("contains(%s, %s)", b.name(target.name), b.value(f.Values[c.vals[0]])))
			continue
		}
		var v nodeVals
		if !ba.tmpl.match(valueText(f.Values[c.vals[0]]), &v, m.delim) {
			return nil, fmt.Errorf("layouts: model %s: a filter value does not read back through %s", m.name, ba.tmpl.text)
		}
		s, ok := target.tmpl.render(&v, m.delim)
		if !ok {
			return nil, fmt.Errorf("layouts: model %s: %s cannot be built from the %s layout's %s", m.name, target.name, m.baseName, ba.canon)
		}
		out = append(out, b.name(target.name)+" = "+b.value(m.value(target, s)))
	}
	if m.typeName != "" {
		out = append(out, b.name(m.typeName)+" = "+b.value(layouts.StringValue(m.typeValue)))
	}
	return &layouts.Filter{Expr: strings.Join(out, " AND "), Names: b.names, Values: b.values, Text: f.Text}, nil
}

// clause is one condition of a key condition or filter: #name op :value
// (BETWEEN has two values; begins_with is op "begins_with").
type clause struct {
	name, op string
	vals     []string
}

// parseClauses reads the conditions the base layouts write: "#a = :v",
// "#a > :v" (>=, <, <=), "#a BETWEEN :x AND :y" and "begins_with(#a, :v)",
// joined by AND.
func parseClauses(expr string) ([]clause, error) {
	toks := strings.Fields(expr)
	var cs []clause
	for i := 0; i < len(toks); {
		t := toks[i]
		switch {
		case strings.HasPrefix(t, "begins_with(") && i+1 < len(toks):
			cs = append(cs, clause{name: strings.TrimSuffix(strings.TrimPrefix(t, "begins_with("), ","), op: "begins_with",
				vals: []string{strings.TrimSuffix(toks[i+1], ")")}})
			i += 2
		case strings.HasPrefix(t, "contains(") && i+1 < len(toks):
			cs = append(cs, clause{name: strings.TrimSuffix(strings.TrimPrefix(t, "contains("), ","), op: "contains",
				vals: []string{strings.TrimSuffix(toks[i+1], ")")}})
			i += 2
		case i+2 < len(toks) && toks[i+1] == "BETWEEN" && i+4 < len(toks):
			cs = append(cs, clause{name: t, op: "BETWEEN", vals: []string{toks[i+2], toks[i+4]}})
			i += 5
		case i+2 < len(toks):
			cs = append(cs, clause{name: t, op: toks[i+1], vals: []string{toks[i+2]}})
			i += 3
		default:
			return nil, fmt.Errorf("layouts: cannot read the condition %q", expr)
		}
		if i < len(toks) {
			if toks[i] != "AND" {
				return nil, fmt.Errorf("layouts: cannot read the condition %q", expr)
			}
			i++
		}
	}
	return cs, nil
}

// exprBuilder writes translated conditions with fresh names and values.
type exprBuilder struct {
	names  map[string]string
	values map[string]types.AttributeValue
	n      int
}

func (b *exprBuilder) name(attr string) string {
	for k, v := range b.names {
		if v == attr {
			return k
		}
	}
	k := "#m" + strconv.Itoa(len(b.names))
	b.names[k] = attr
	return k
}

func (b *exprBuilder) value(v types.AttributeValue) string {
	k := ":m" + strconv.Itoa(b.n)
	b.n++
	b.values[k] = v
	return k
}

// queryIndex is where a base layout's Query reads, in the model: the
// table or the index serving the base's, the base's key attributes there
// and the model's.
type queryIndex struct {
	x              *modelIndex // nil: the table
	basePK, baseSK string
	pk, sk         *modelAttr
}

// queryIndex is the table or index the base's Query names.
func (mr *modelReads) queryIndex(name string) (queryIndex, error) {
	m := mr.m
	q := queryIndex{basePK: m.baseTable.PK.Name, pk: m.pk, sk: m.sk}
	if m.baseTable.SK != nil {
		q.baseSK = m.baseTable.SK.Name
	}
	if name == "" {
		return q, nil
	}
	if q.x = m.index(name); q.x == nil {
		return q, fmt.Errorf("layouts: model %s has no index serving the %s layout's %s", m.name, m.baseName, name)
	}
	for _, bx := range m.baseTable.Indexes {
		if bx.Name == name {
			q.basePK, q.baseSK = bx.PK.Name, ""
			if bx.SK != nil {
				q.baseSK = bx.SK.Name
			}
		}
	}
	q.pk, q.sk = q.x.pk, q.x.sk
	return q, nil
}

// Query sends the base layout's Query in the model's terms: its key
// condition through the model's key templates, the filters the model can
// keep, and the items found back as the base's.
func (mr *modelReads) Query(ctx context.Context, in layouts.QueryInput, page func(items []layouts.Item) error) error {
	q, err := mr.queryIndex(in.Index)
	if err != nil {
		return err
	}
	x := q.x
	conds, err := parseClauses(in.KeyCondition)
	if err != nil {
		return err
	}
	var filters []clause
	if in.Filter != "" {
		if filters, err = parseClauses(in.Filter); err != nil {
			return err
		}
	}
	b := &exprBuilder{names: map[string]string{}, values: map[string]types.AttributeValue{}}
	var key []string
	exact := exactDepth(filters, &in)
	for _, c := range conds {
		cond, none, err := mr.keyCond(c, &in, q, exact, b)
		if err != nil || none {
			return err
		}
		if cond != "" {
			key = append(key, cond)
		}
	}
	filter := mr.filterConds(filters, &in, x, b)
	out := layouts.QueryInput{Index: "", KeyCondition: strings.Join(key, " AND "), Filter: strings.Join(filter, " AND "), Names: b.names, Values: b.values, Limit: in.Limit}
	if x != nil {
		out.Index = x.name
	}
	return mr.r.Query(ctx, out, mr.wholeItems(ctx, x, page))
}

// exactDepth is the one depth a filter keeps, or -1.
func exactDepth(filters []clause, in *layouts.QueryInput) int {
	exact := -1
	for _, f := range filters {
		if f.op == "BETWEEN" && in.Values[f.vals[0]] != nil {
			lo, _ := in.Values[f.vals[0]].(*types.AttributeValueMemberN)
			hi, _ := in.Values[f.vals[1]].(*types.AttributeValueMemberN)
			if lo != nil && hi != nil && lo.Value == hi.Value {
				exact, _ = strconv.Atoi(lo.Value)
			}
		}
	}
	return exact
}

// keyCond is the clause c of the base's key condition on the model's key
// that holds the attribute: "" when it needs no condition, and none when
// no item can match (the Query is not sent).
func (mr *modelReads) keyCond(c clause, in *layouts.QueryInput, q queryIndex, exact int, b *exprBuilder) (cond string, none bool, err error) {
	m, x := mr.m, q.x
	attr := in.Names[c.name]
	target := q.pk
	if attr == q.baseSK && attr != q.basePK {
		target = q.sk
	}
	if target == nil {
		return "", false, fmt.Errorf("layouts: model %s: no key for the %s layout's %s", m.name, m.baseName, strings.TrimPrefix(attr, modelPrivate))
	}
	ba := m.baseAttrs[attr]
	op := c.op
	if ba.canon == "RelativeDepth" && (op == "BETWEEN" || op == ">=") {
		op = "band"
	}
	switch op {
	case "=":
		var v nodeVals
		if !ba.tmpl.match(valueText(in.Values[c.vals[0]]), &v, m.delim) {
			return "", false, fmt.Errorf("layouts: model %s: a key value does not read back through %s", m.name, ba.tmpl.text)
		}
		v.derive(false, m.shards)
		s, ok := target.tmpl.render(&v, m.delim)
		if !ok {
			return "", false, fmt.Errorf("layouts: model %s: %s cannot be built from the %s layout's %s", m.name, target.name, m.baseName, ba.canon)
		}
		if s == "" {
			// No item holds an empty key: a sparse index left
			// these nodes out, and any other index has none.
			if x != nil && x.sparse {
				return "", false, m.sparseMiss(x, target)
			}
			return "", true, nil
		}
		return b.name(target.name) + " = " + b.value(m.value(target, s)), false, nil
	case "begins_with":
		text := valueText(in.Values[c.vals[0]])
		ids := strings.Split(strings.TrimSuffix(text, m.delim), m.delim)
		s, ok := target.tmpl.renderPrefix(ids, m.delim)
		if !ok {
			return "", false, fmt.Errorf("layouts: model %s: %s cannot be read with begins_with on the path", m.name, target.name)
		}
		if s == "" {
			// Every value begins with "": the partition key alone
			// reads them all, but for the nodes a sparse index left
			// out, which it cannot read.
			if x != nil && x.sparse {
				return "", false, m.sparseMiss(x, target)
			}
			return "", false, nil
		}
		op := "begins_with(%s, %s)"
		if exact == len(ids) && target.tmpl.parts[len(target.tmpl.parts)-1].ph == phInner {
			// The nodes exactly one level below have exactly this
			// text: one equality instead of the subtree.
			op = "%s = %s"
		}
		return fmt.Sprintf(op, b.name(target.name), b.value(layouts.StringValue(s))), false, nil
	case "band":
		// A band of a closure's relative depths: each bound through
		// the key's template (zero-padded text keeps the order). A
		// band open above ends at the most the digits hold, which
		// keeps the other entities of a node's partition out.
		lo, _ := strconv.Atoi(valueText(in.Values[c.vals[0]]))
		hi := maxPadded(9)
		if c.op == "BETWEEN" {
			hi, _ = strconv.Atoi(valueText(in.Values[c.vals[1]]))
		}
		if target.tmpl.width > 0 {
			hi = min(hi, maxPadded(target.tmpl.width))
		}
		lov, ok := m.depthBound(target, lo)
		if !ok || lo > hi {
			return "", true, nil // no row is that deep
		}
		if c.op == ">=" && target.num {
			return rangeExpr(b.name(target.name), ">=", []string{b.value(lov)}), false, nil
		}
		hiv, _ := m.depthBound(target, hi)
		return rangeExpr(b.name(target.name), "BETWEEN", []string{b.value(lov), b.value(hiv)}), false, nil
	default:
		if !target.tmpl.bare() || !ba.tmpl.bare() || target.tmpl.parts[0].ph != ba.tmpl.parts[0].ph {
			return "", false, fmt.Errorf("layouts: model %s: %s %s needs %s to be {%s} alone", m.name, ba.canon, c.op, target.name, ba.tmpl.uses()[0])
		}
		vs := make([]string, len(c.vals))
		for i, v := range c.vals {
			vs[i] = b.value(in.Values[v])
		}
		return rangeExpr(b.name(target.name), c.op, vs), false, nil
	}
}

// filterConds are the base's filters the model keeps: a filter on a base
// attribute the model stores, as it is and projected, is kept; otherwise
// the base layout filters the items it is given (the path layouts check
// the depth band of each). The type field keeps the model's items.
func (mr *modelReads) filterConds(filters []clause, in *layouts.QueryInput, x *modelIndex, b *exprBuilder) []string {
	m := mr.m
	var filter []string
	for _, f := range filters {
		ba := m.baseAttrs[in.Names[f.name]]
		var stored *modelAttr
		for _, a := range m.attrs {
			if a.tmpl.bare() && ba.tmpl.bare() && a.tmpl.parts[0].ph == ba.tmpl.parts[0].ph && a.num == ba.num && x.projects(a.name, m) {
				stored = a
			}
		}
		if stored == nil {
			continue
		}
		vs := make([]string, len(f.vals))
		for i, v := range f.vals {
			vs[i] = b.value(in.Values[v])
		}
		filter = append(filter, rangeExpr(b.name(stored.name), f.op, vs))
	}
	if m.typeName != "" && x.projects(m.typeName, m) {
		filter = append(filter, b.name(m.typeName)+" = "+b.value(layouts.StringValue(m.typeValue)))
	}
	return filter
}

// wholeItems is the page function of the model's Query: the items found,
// read whole when the index holds part of each, given to page as the
// base's.
func (mr *modelReads) wholeItems(ctx context.Context, x *modelIndex, page func(items []layouts.Item) error) func(items []layouts.Item) error {
	m := mr.m
	return func(items []layouts.Item) error {
		if x != nil && x.projection != types.ProjectionTypeAll && (!m.closure || m.wholeRows(x)) {
			// The index holds part of each item: read them whole.
			keys := make([]layouts.Item, 0, len(items))
			for _, it := range items {
				if m.Owner(layouts.MapView(it)) == "" {
					continue
				}
				k := layouts.Item{m.pk.name: it[m.pk.name]}
				if m.sk != nil {
					k[m.sk.name] = it[m.sk.name]
				}
				keys = append(keys, k)
			}
			var err error
			if items, err = mr.r.BatchGet(ctx, keys); err != nil {
				return err
			}
		}
		bs, err := mr.toBase(items)
		if err != nil || len(bs) == 0 {
			return err
		}
		return page(bs)
	}
}

// ErrSparseMiss marks a query that a sparse index cannot answer: the nodes
// it asks for are those whose key of the index is empty, which are not in
// the index. The query is refused rather than answered without them.
var ErrSparseMiss = errors.New("layouts: the nodes asked for are not in the sparse index")

// sparseMiss is the error of a key condition whose value renders empty:
// the nodes it would find are left out of a sparse index (and an empty
// value is no key DynamoDB takes).
func (m *modelLayout) sparseMiss(x *modelIndex, target *modelAttr) error {
	where := "the table"
	if x != nil {
		where = "index " + x.name
	}
	return fmt.Errorf("model %s: the nodes this query asks for have an empty %s (template %q), so they are not in %s and cannot be read through it; query a node further down, or give the template literal text (\"/%s\") so that no value is empty (%w)",
		m.name, target.name, target.tmpl.text, where, target.tmpl.text, ErrSparseMiss)
}

// rangeExpr writes a comparison of name with the values.
func rangeExpr(name, op string, vals []string) string {
	if op == "BETWEEN" {
		return name + " BETWEEN " + vals[0] + " AND " + vals[1]
	}
	return name + " " + op + " " + vals[0]
}

// valueText is the text of an S or N value.
func valueText(v types.AttributeValue) string {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return x.Value
	case *types.AttributeValueMemberN:
		return x.Value
	}
	return ""
}
