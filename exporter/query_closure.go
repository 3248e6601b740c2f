package exporter

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// closureKey is the key of row (id, relative depth).
func (q *querier) closureKey(id string, rd int) layouts.Item {
	return layouts.Item{q.f.ID: strAttr(id), q.f.RelativeDepth: numAttr(rd)}
}

// closureSelf reads the node's own row (Id, 0).
func (q *querier) closureSelf(ctx context.Context, id string) (*transform.Record, error) {
	item, err := q.getItem(ctx, q.closureKey(id, 0))
	if err != nil {
		return nil, err
	}
	if item == nil {
		return nil, q.notFound(fmt.Sprintf("node %q", id))
	}
	rec, err := q.node(item)
	return &rec, err
}

// closure answers a query on a closure table.
func (q *querier) closure(ctx context.Context) ([]Result, error) {
	var res []Result
	checked := false // whether the node is known to exist
	if q.opts.Kind != Ancestors && q.inBand(0) {
		self, err := q.closureSelf(ctx, q.opts.ID)
		if err != nil {
			return nil, err
		}
		res = append(res, result(*self, 0))
		checked = true
	}
	var more []Result
	var err error
	switch q.opts.Kind {
	case Children, Descendants:
		more, err = q.closureDescendants(ctx)
	case Ancestors:
		more, checked, err = q.closureAncestors(ctx)
	}
	if err != nil {
		return nil, err
	}
	res = append(res, more...)
	if len(res) == 0 && !checked {
		// Nothing below (or above) it: a leaf (or a root), or no such node.
		if _, err := q.closureSelf(ctx, q.opts.ID); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// rdCondition is the RelativeDepth part of a key condition for the band
// from lo, and sets its values.
func (q *querier) rdCondition(lo int, values map[string]types.AttributeValue) string {
	values[":lo"] = numAttr(lo)
	switch {
	case q.opts.MaxDepth == lo:
		return "#rd = :lo"
	case q.opts.MaxDepth != NoMaxDepth:
		values[":hi"] = numAttr(q.opts.MaxDepth)
		return "#rd BETWEEN :lo AND :hi"
	}
	return "#rd >= :lo"
}

// closureDescendants queries ByAncestor: AncestorId = X and RelativeDepth
// in the band (= 1 for children). With --closure-copy all the rows hold
// their nodes whole; otherwise the nodes' own rows are read with
// BatchGetItem.
func (q *querier) closureDescendants(ctx context.Context) ([]Result, error) {
	if q.opts.MaxDepth == 0 {
		return nil, nil
	}
	values := map[string]types.AttributeValue{":x": strAttr(q.opts.ID)}
	cond := keyCond{
		index:  q.f.ByAncestor,
		expr:   "#a = :x AND " + q.rdCondition(max(q.opts.MinDepth, 1), values),
		names:  map[string]string{"#a": q.f.Ancestor, "#rd": q.f.RelativeDepth},
		values: values,
	}
	var res []Result
	depthOf := map[string]int{}
	err := q.query(ctx, cond, func(items []layouts.Item) error {
		for _, item := range items {
			row, err := q.closureRow(item)
			if err != nil {
				return err
			}
			if q.f.CopyAll {
				res = append(res, row)
			} else {
				depthOf[row.ID] = row.RelativeDepth
			}
		}
		return nil
	})
	if err != nil || q.f.CopyAll {
		return res, err
	}
	return q.closureSelfRows(ctx, depthOf, "below")
}

// closureAncestors queries the table: Id = X and RelativeDepth in the
// band. Row (X, r) names the ancestor r levels up; its own row (A, 0) is read
// with BatchGetItem, since row (X, r) holds X's attributes, not A's. It
// reports whether the node is known to exist.
func (q *querier) closureAncestors(ctx context.Context) ([]Result, bool, error) {
	values := map[string]types.AttributeValue{":x": strAttr(q.opts.ID)}
	cond := keyCond{
		expr:   "#id = :x AND " + q.rdCondition(q.opts.MinDepth, values),
		names:  map[string]string{"#id": q.f.ID, "#rd": q.f.RelativeDepth},
		values: values,
	}
	var res []Result
	depthOf := map[string]int{}
	rows := 0
	err := q.query(ctx, cond, func(items []layouts.Item) error {
		for _, item := range items {
			rows++
			rd, ok := asInt(item, q.f.RelativeDepth)
			if !ok {
				return itemError("table "+q.table, q.spec, item, q.l, fmt.Errorf("%w: %s is not a whole number", layouts.ErrItem, q.f.RelativeDepth))
			}
			if rd == 0 {
				rec, err := q.node(item)
				if err != nil {
					return err
				}
				res = append(res, result(rec, 0))
				continue
			}
			anc := asString(item, q.f.Ancestor)
			if anc == "" {
				return itemError("table "+q.table, q.spec, item, q.l, fmt.Errorf("%w: %s is missing", layouts.ErrItem, q.f.Ancestor))
			}
			depthOf[anc] = rd
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	// With the node's own row in the band, no row at all means no node.
	if rows == 0 && q.opts.MinDepth == 0 {
		return nil, true, q.notFound(fmt.Sprintf("node %q", q.opts.ID))
	}
	more, err := q.closureSelfRows(ctx, depthOf, "above")
	return append(res, more...), rows > 0, err
}

// closureSelfRows reads the own rows (id, 0) of the nodes in depthOf with
// BatchGetItem; each result gets the relative depth depthOf gives it.
func (q *querier) closureSelfRows(ctx context.Context, depthOf map[string]int, where string) ([]Result, error) {
	keys := make([]layouts.Item, 0, len(depthOf))
	for _, id := range sortedKeys(depthOf) {
		keys = append(keys, q.closureKey(id, 0))
	}
	items, err := q.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	res := make([]Result, 0, len(items))
	for _, item := range items {
		rec, err := q.node(item)
		if err != nil {
			return nil, err
		}
		d, ok := depthOf[rec.ID]
		if !ok {
			continue
		}
		delete(depthOf, rec.ID)
		res = append(res, result(rec, d))
	}
	if len(depthOf) > 0 {
		return nil, fmt.Errorf("%w: table %s: %q is %d levels %s %q, but has no row (%s, 0)",
			ErrInconsistent, q.table, sortedKeys(depthOf)[0], depthOf[sortedKeys(depthOf)[0]], where, q.opts.ID, sortedKeys(depthOf)[0])
	}
	return res, nil
}

// closureRow is the node a ByAncestor row (Y, r) stands for: Y at relative
// depth r, with its parent and the attributes the row copies.
func (q *querier) closureRow(item layouts.Item) (Result, error) {
	id := asString(item, q.f.ID)
	rd, ok := asInt(item, q.f.RelativeDepth)
	if id == "" || !ok || rd < 0 {
		return Result{}, itemError("table "+q.table, q.spec, item, q.l,
			fmt.Errorf("%w: want %s (S) and %s (a whole number)", layouts.ErrItem, q.f.ID, q.f.RelativeDepth))
	}
	attrs := make(transform.Attrs, len(item))
	for k, v := range item {
		attrs[k] = v
	}
	for _, k := range q.l.Reserved() {
		delete(attrs, k)
	}
	return Result{ID: id, Parent: asString(item, q.f.Parent), RelativeDepth: rd, Attrs: attrs}, nil
}
