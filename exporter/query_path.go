package exporter

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// pathAnchor is the queried node of a path or sharded-path table.
type pathAnchor struct {
	rec   transform.Record
	ids   []string // Path split: the root first, the node last
	depth int
}

// anchor reads the node's item (GetItem on Id) and checks it.
func (q *querier) pathAnchor(ctx context.Context) (*pathAnchor, error) {
	item, err := q.getItem(ctx, layouts.Item{q.f.ID: strAttr(q.opts.ID)})
	if err != nil {
		return nil, err
	}
	if item == nil {
		return nil, q.notFound(fmt.Sprintf("node %q", q.opts.ID))
	}
	rec, err := q.node(item)
	if err != nil {
		return nil, err
	}
	depth, _ := asInt(item, q.f.Depth) // q.node checked it
	a := &pathAnchor{rec: rec, ids: strings.Split(asString(item, q.f.Path), q.f.Delimiter), depth: depth}
	if len(a.ids) != depth+1 {
		return nil, itemError("table "+q.table, q.spec, item, q.l,
			fmt.Errorf("%w: %s has %d ids but %s is %d", layouts.ErrItem, q.f.Path, len(a.ids), q.f.Depth, depth))
	}
	if q.f.Shards > 0 {
		// The shard is a function of the id; another k means that the
		// table was written with another --shards, and a descendants
		// query would miss nodes.
		want := layouts.GraphID(a.ids[0], layouts.Shard(rec.ID, q.f.Shards))
		if got := asString(item, q.f.Tree); got != want {
			return nil, fmt.Errorf("exporter: table %s: node %q has %s %q, but with --shards %d it would be %q: give the --shards the table was written with",
				q.table, rec.ID, q.f.Tree, got, q.f.Shards, want)
		}
	}
	return a, nil
}

// path answers a query on a path or sharded-path table.
func (q *querier) path(ctx context.Context) ([]Result, error) {
	if q.opts.Kind == Children {
		var res []Result
		err := q.query(ctx, keyCond{
			index:  q.f.ByParent,
			expr:   "#p = :x",
			names:  map[string]string{"#p": q.f.Parent},
			values: map[string]types.AttributeValue{":x": strAttr(q.opts.ID)},
		}, func(items []layouts.Item) error {
			for _, item := range items {
				rec, err := q.node(item)
				if err != nil {
					return err
				}
				res = append(res, result(rec, 1))
			}
			return nil
		})
		if err != nil || len(res) > 0 {
			return res, err
		}
		// No children: a leaf, or no such node.
		_, err = q.pathAnchor(ctx)
		return nil, err
	}

	a, err := q.pathAnchor(ctx)
	if err != nil {
		return nil, err
	}
	var res []Result
	if q.inBand(0) {
		res = append(res, result(a.rec, 0))
	}
	switch q.opts.Kind {
	case Descendants:
		more, err := q.pathDescendants(ctx, a)
		return append(res, more...), err
	case Ancestors:
		more, err := q.pathAncestors(ctx, a)
		return append(res, more...), err
	}
	return res, nil
}

// pathDescendants queries ByPath: TreeId = t AND begins_with(Path, p +
// delimiter), with the depth band as a filter on Depth. The trailing
// delimiter keeps CM2 from matching CM20. sharded-path queries the tree's S
// GraphId partitions in parallel.
func (q *querier) pathDescendants(ctx context.Context, a *pathAnchor) ([]Result, error) {
	if q.opts.MaxDepth == 0 {
		return nil, nil
	}
	lo := max(q.opts.MinDepth, 1)
	names := map[string]string{"#t": q.f.Tree, "#p": q.f.Path}
	values := map[string]types.AttributeValue{
		":p": strAttr(strings.Join(a.ids, q.f.Delimiter) + q.f.Delimiter),
	}
	filter := ""
	switch {
	case q.opts.MaxDepth != NoMaxDepth:
		filter = "#d BETWEEN :lo AND :hi"
		values[":lo"] = numAttr(a.depth + lo)
		values[":hi"] = numAttr(a.depth + q.opts.MaxDepth)
	case lo > 1:
		filter = "#d >= :lo"
		values[":lo"] = numAttr(a.depth + lo)
	}
	if filter != "" {
		names["#d"] = q.f.Depth
	}
	trees := []string{a.ids[0]}
	if q.f.Shards > 0 {
		trees = trees[:0]
		for k := 1; k <= q.f.Shards; k++ {
			trees = append(trees, layouts.GraphID(a.ids[0], k))
		}
	}
	var mu sync.Mutex
	var res []Result
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(q.opts.Concurrency)
	for _, tree := range trees {
		vals := make(map[string]types.AttributeValue, len(values)+1)
		for k, v := range values {
			vals[k] = v
		}
		vals[":t"] = strAttr(tree)
		g.Go(func() error {
			return q.query(gctx, keyCond{
				index: q.f.ByPath, expr: "#t = :t AND begins_with(#p, :p)", filter: filter,
				names: names, values: vals,
			}, func(items []layouts.Item) error {
				page := make([]Result, 0, len(items))
				for _, item := range items {
					rec, err := q.node(item)
					if err != nil {
						return err
					}
					d, _ := asInt(item, q.f.Depth)
					if rel := d - a.depth; q.inBand(rel) {
						page = append(page, result(rec, rel))
					}
				}
				mu.Lock()
				res = append(res, page...)
				mu.Unlock()
				return nil
			})
		})
	}
	return res, g.Wait()
}

// pathAncestors splits the node's Path and reads the ancestors in the band
// with BatchGetItem.
func (q *querier) pathAncestors(ctx context.Context, a *pathAnchor) ([]Result, error) {
	want := map[string]int{} // id → relative depth
	var keys []layouts.Item
	for r := max(q.opts.MinDepth, 1); r <= a.depth && q.inBand(r); r++ {
		id := a.ids[a.depth-r]
		want[id] = r
		keys = append(keys, layouts.Item{q.f.ID: strAttr(id)})
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
		res = append(res, result(rec, want[rec.ID]))
		delete(want, rec.ID)
	}
	if len(want) > 0 {
		return nil, fmt.Errorf("%w: table %s: %q is on the Path of %q, but has no item", ErrInconsistent, q.table, sortedKeys(want)[0], a.rec.ID)
	}
	return res, nil
}
