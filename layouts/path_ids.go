package layouts

import (
	"context"
	"fmt"
	"strings"
)

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
