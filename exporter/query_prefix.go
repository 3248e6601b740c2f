package exporter

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/treeport/treeport/layouts"
)

// objectKey is the key of the object row of the node at the end of ids.
func (q *querier) objectKey(ids []string) layouts.Item {
	return layouts.Item{
		q.f.Key:   strAttr(q.f.Delimiter + strings.Join(ids, q.f.Delimiter)),
		q.f.Child: strAttr(q.f.Delimiter),
	}
}

// prefix answers a query on a prefix table. Its keys are paths, so the
// node's path comes first: QueryOptions.Path, or else a Scan finds it.
func (q *querier) prefix(ctx context.Context) ([]Result, error) {
	path := q.opts.Path
	if len(path) == 0 {
		var err error
		if path, err = q.locate(ctx); err != nil {
			return nil, err
		}
	}
	for _, id := range path {
		if strings.Contains(id, q.f.Delimiter) {
			return nil, fmt.Errorf("exporter: the id %q on the path contains the prefix layout's delimiter %q", id, q.f.Delimiter)
		}
	}
	switch q.opts.Kind {
	case Get:
		res, err := q.prefixSelf(ctx, path)
		if err != nil {
			return nil, err
		}
		return []Result{res}, nil
	case Ancestors:
		return q.prefixAncestors(ctx, path)
	}
	return q.prefixDescendants(ctx, path)
}

// pathName names a node by its path in messages.
func (q *querier) pathName(path []string) string {
	return fmt.Sprintf("node %q (path %s)", path[len(path)-1], q.f.Delimiter+strings.Join(path, q.f.Delimiter))
}

// prefixSelf reads the node's object row.
func (q *querier) prefixSelf(ctx context.Context, path []string) (Result, error) {
	item, err := q.getItem(ctx, q.objectKey(path))
	if err != nil {
		return Result{}, err
	}
	if item == nil {
		return Result{}, q.notFound(q.pathName(path))
	}
	rec, err := q.node(item)
	if err != nil {
		return Result{}, err
	}
	return result(rec, 0), nil
}

// prefixAncestors reads the object rows of the path's prefixes with
// BatchGetItem. The node's own row is read too, whether or not the band
// wants it, so that a path that is not in the table is an error.
func (q *querier) prefixAncestors(ctx context.Context, path []string) ([]Result, error) {
	d := len(path) - 1
	keyOf := func(ids []string) string { return q.f.Delimiter + strings.Join(ids, q.f.Delimiter) }
	depthOf := map[string]int{keyOf(path): 0}
	keys := []layouts.Item{q.objectKey(path)}
	for r := max(q.opts.MinDepth, 1); r <= d && q.inBand(r); r++ {
		ids := path[:d-r+1]
		depthOf[keyOf(ids)] = r
		keys = append(keys, q.objectKey(ids))
	}
	items, err := q.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	var res []Result
	for _, item := range items {
		rec, err := q.node(item)
		if err != nil {
			return nil, err
		}
		key := asString(item, q.f.Key)
		r, ok := depthOf[key]
		if !ok {
			continue
		}
		delete(depthOf, key)
		if q.inBand(r) {
			res = append(res, result(rec, r))
		}
	}
	if _, ok := depthOf[keyOf(path)]; ok {
		return nil, q.notFound(q.pathName(path))
	}
	if len(depthOf) > 0 {
		return nil, fmt.Errorf("%w: table %s: %s is in the table, but its ancestor %s has no object row",
			ErrInconsistent, q.table, q.pathName(path), sortedKeys(depthOf)[0])
	}
	return res, nil
}

// prefixDescendants lists the subtree breadth first: each level's listing
// partitions (Key = the parent's key + delimiter) are queried in parallel,
// down to the band's last level; then the object rows of the levels in the
// band are read with BatchGetItem.
func (q *querier) prefixDescendants(ctx context.Context, path []string) ([]Result, error) {
	var res []Result
	checked := false
	if q.inBand(0) {
		self, err := q.prefixSelf(ctx, path)
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
	for r := 1; len(level) > 0 && (q.opts.MaxDepth == NoMaxDepth || r <= q.opts.MaxDepth); r++ {
		next, err := q.listChildren(ctx, level)
		if err != nil {
			return nil, err
		}
		if r == 1 && len(next) == 0 && !checked {
			// No children: a leaf, or no such node.
			if _, err := q.prefixSelf(ctx, path); err != nil {
				return nil, err
			}
		}
		if q.inBand(r) {
			for _, p := range next {
				want = append(want, wanted{p, r})
			}
		}
		level = next
	}
	keys := make([]layouts.Item, len(want))
	depthOf := make(map[string]int, len(want))
	for i, w := range want {
		keys[i] = q.objectKey(w.path)
		depthOf[q.f.Delimiter+strings.Join(w.path, q.f.Delimiter)] = w.depth
	}
	items, err := q.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	for _, item := range items {
		rec, err := q.node(item)
		if err != nil {
			return nil, err
		}
		key := asString(item, q.f.Key)
		r, ok := depthOf[key]
		if !ok {
			continue
		}
		delete(depthOf, key)
		res = append(res, result(rec, r))
	}
	if len(depthOf) > 0 {
		key := sortedKeys(depthOf)[0]
		return nil, fmt.Errorf("%w: table %s: a listing row names %s, which has no object row", ErrInconsistent, q.table, key)
	}
	return res, nil
}

// listChildren queries the listing partition of every path of a level, in
// parallel, and returns the children's paths.
func (q *querier) listChildren(ctx context.Context, level [][]string) ([][]string, error) {
	var mu sync.Mutex
	var next [][]string
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(q.opts.Concurrency)
	for _, parent := range level {
		g.Go(func() error {
			listing := q.f.Delimiter + strings.Join(parent, q.f.Delimiter) + q.f.Delimiter
			return q.query(gctx, keyCond{
				expr:   "#k = :k",
				names:  map[string]string{"#k": q.f.Key},
				values: map[string]types.AttributeValue{":k": strAttr(listing)},
			}, func(items []layouts.Item) error {
				page := make([][]string, 0, len(items))
				for _, item := range items {
					child := asString(item, q.f.Child)
					if child == "" || child == q.f.Delimiter {
						return itemError("table "+q.table, q.spec, item, q.l, fmt.Errorf("%w: a listing row without a child id", layouts.ErrItem))
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

// locate finds the path of the node QueryOptions.ID with a Scan that keeps
// the object rows whose Key contains delimiter + id, and stops at the first
// whose Key ends with it. It costs up to a read of the whole table.
func (q *querier) locate(ctx context.Context) ([]string, error) {
	suffix := q.f.Delimiter + q.opts.ID
	filter := &scanFilter{
		expr:  "#c = :d AND contains(#k, :x)",
		names: map[string]string{"#c": q.f.Child, "#k": q.f.Key},
		values: map[string]types.AttributeValue{
			":d": strAttr(q.f.Delimiter),
			":x": strAttr(suffix),
		},
	}
	var mu sync.Mutex
	var found string
	err := scanTable(ctx, q.client, q.r, q.table, ScanOptions{Segments: q.opts.Concurrency, ConsistentRead: q.opts.ConsistentRead}, filter,
		func(items []layouts.Item) error {
			for _, item := range items {
				if key := asString(item, q.f.Key); strings.HasSuffix(key, suffix) {
					mu.Lock()
					if found == "" || key < found {
						found = key
					}
					mu.Unlock()
					return errStop
				}
			}
			return nil
		})
	if err != nil {
		return nil, err
	}
	if found == "" {
		return nil, q.notFound(fmt.Sprintf("node %q", q.opts.ID))
	}
	path := strings.Split(strings.TrimPrefix(found, q.f.Delimiter), q.f.Delimiter)
	if q.opts.OnLocate != nil {
		q.opts.OnLocate(path, q.r.snapshot())
	}
	return path, nil
}
