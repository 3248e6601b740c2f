package exporter

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// Kind is what a query asks for.
type Kind = layouts.QueryKind

// The kinds of query, as the command line names them.
const (
	Get         = layouts.QueryGet         // the node itself, at relative depth 0
	Children    = layouts.QueryChildren    // its children, at relative depth 1
	Descendants = layouts.QueryDescendants // its subtree, counted down from it
	Ancestors   = layouts.QueryAncestors   // the nodes above it, counted up from it
)

// Kinds lists every Kind, in the order help text shows them.
var Kinds = []Kind{Get, Children, Descendants, Ancestors}

// NoMaxDepth is QueryOptions.MaxDepth for no limit.
const NoMaxDepth = layouts.NoMaxDepth

// QueryOptions say what to ask of a table.
type QueryOptions struct {
	Kind Kind
	// ID is the node's id.
	ID string
	// Path is for the prefix layout, whose keys are paths: the ids from the
	// root to the node, both included (the last one is ID, or gives it
	// when ID is ""). Without it, the node's path is found with a Scan of
	// the whole table that keeps only its object row: correct, but it
	// costs the table's size in RCU (see OnLocate). Other layouts ignore it.
	Path []string
	// MinDepth and MaxDepth bound the relative depths of descendants and
	// ancestors, both included; MaxDepth NoMaxDepth means no bound. A
	// MinDepth of 0 includes the node itself. Get and Children ignore them
	// (Band gives each kind's defaults).
	MinDepth, MaxDepth int
	// Known says the caller knows the node is in the table: an empty answer
	// is not followed by a read of the node to tell a leaf from a missing
	// node (layouts.Request.Known). bench asks so, as an application
	// holding a node's id would.
	Known bool
	// FollowLinks, for get on a layout that writes links (layouts.Links:
	// prefix, dynamotree's symbolic links), answers a link with the node
	// it links to, read through the link once, its Via the link's id.
	FollowLinks bool
	// ConsistentRead asks for strongly consistent reads of the table.
	// Reads of a global secondary index are always eventually consistent.
	ConsistentRead bool
	// Concurrency bounds the requests in flight: the shards of a
	// sharded-path descendants query, a prefix level's listing queries, an
	// adjacency level's children queries, the BatchGetItem calls (8).
	Concurrency int
	// MaxRetries is how many times in a row a request may fail with a
	// retryable error before the query gives up (10).
	MaxRetries int
	// OnLocate, when set, is told that a prefix node's path had to be found
	// with a Scan, with the path found and what the Scan cost.
	OnLocate func(path []string, cost Stats)
}

// Band returns the relative depths a kind answers by default: get 0–0,
// children 1–1, descendants and ancestors 1–NoMaxDepth.
func Band(k Kind) (minDepth, maxDepth int) {
	switch k {
	case Get:
		return 0, 0
	case Children:
		return 1, 1
	}
	return 1, NoMaxDepth
}

// Result is one node of a query's answer: its id, its parent's, its
// relative depth (the distance from the queried node, counted down for
// children and descendants, up for ancestors, 0 for the node itself) and
// its attributes.
type Result = layouts.Result

// Query answers one query about one node the way the table's layout was
// designed to: the layout's Query (layouts.Reader) says which requests,
// and this package sends them:
//
//   - path: GetItem; children Query ByParent; descendants Query ByPath,
//     TreeId = t AND begins_with(Path, p + delimiter), a depth band as a
//     filter on Depth; ancestors by splitting Path and BatchGetItem.
//   - sharded-path: as path, with descendants querying the S GraphId
//     partitions of the tree in parallel.
//   - closure: GetItem (Id, 0); children and descendants Query ByAncestor
//     on RelativeDepth (= 1, >= a, BETWEEN a AND b); ancestors Query the
//     table, Id = X AND RelativeDepth BETWEEN a AND b, then BatchGetItem of
//     the ancestors' own rows.
//   - prefix: GetItem of the object row; children Query the listing
//     partition, then BatchGetItem of the object rows; descendants
//     breadth-first listing Queries, a level's in parallel, then
//     BatchGetItem; ancestors BatchGetItem of the prefix object rows.
//   - adjacency: GetItem; children Query ByParent; descendants
//     breadth-first ByParent Queries, a level's in parallel; ancestors a
//     GetItem a level up the chain of ParentIds.
//
// Every request asks for ReturnConsumedCapacity TOTAL, every Query and Scan
// follows LastEvaluatedKey, and BatchGetItem sends at most 100 keys and
// retries UnprocessedKeys with backoff. The results are sorted by relative
// depth, then by id (as bytes). A node that is not in the table is an error
// matching ErrNotFound, also for children and descendants (a leaf has none;
// a missing node is an error): when a query comes back empty, one GetItem
// tells the two apart.
func Query(ctx context.Context, client QueryAPI, table string, l layouts.Layout, opts QueryOptions) ([]Result, Stats, error) {
	return query(ctx, client, table, l, opts, nil)
}

// query is Query, stopped with errOverBudget once the items it read
// would be over held's budget (nil: no budget).
func query(ctx context.Context, client QueryAPI, table string, l layouts.Layout, opts QueryOptions, held *heldBudget) ([]Result, Stats, error) {
	if err := checkQuery(&opts); err != nil {
		return nil, Stats{}, err
	}
	if l.PathKeyed() {
		for _, id := range opts.Path {
			if strings.Contains(id, l.Delimiter()) {
				return nil, Stats{}, fmt.Errorf("exporter: the id %q on the path contains the %s layout's delimiter %q", id, l.Name(), l.Delimiter())
			}
		}
	}
	q := &querier{
		client: client, table: table, l: l, spec: l.Table(), opts: opts,
		r:    newReader(readerOptions{MaxRetries: opts.MaxRetries}),
		held: held,
	}
	req := layouts.Request{
		Kind: opts.Kind, ID: opts.ID, Path: opts.Path,
		MinDepth: opts.MinDepth, MaxDepth: opts.MaxDepth, Concurrency: opts.Concurrency,
		Known: opts.Known, FollowLinks: opts.FollowLinks,
	}
	if opts.OnLocate != nil {
		req.OnLocate = func(path []string) { opts.OnLocate(path, q.r.snapshot()) }
	}
	res, err := l.Query(ctx, q, req)
	if err != nil {
		return nil, q.r.snapshot(), q.tableError(err)
	}
	SortResults(res)
	return res, q.r.snapshot(), nil
}

// SortResults sorts results by relative depth, then by id.
func SortResults(res []Result) {
	slices.SortFunc(res, func(a, b Result) int {
		if c := cmp.Compare(a.RelativeDepth, b.RelativeDepth); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// checkQuery validates opts and fills in the band of get and children.
func checkQuery(o *QueryOptions) error {
	if !slices.Contains(Kinds, o.Kind) {
		return fmt.Errorf("exporter: unknown query %q; want get, children, descendants or ancestors", o.Kind)
	}
	if o.ID == "" && len(o.Path) > 0 {
		o.ID = o.Path[len(o.Path)-1]
	}
	if o.ID == "" {
		return fmt.Errorf("exporter: a query needs the node's id")
	}
	if len(o.Path) > 0 {
		if o.Path[len(o.Path)-1] != o.ID {
			return fmt.Errorf("exporter: the path %q does not end with the id %q", o.Path, o.ID)
		}
		if slices.Contains(o.Path, "") {
			return fmt.Errorf("exporter: the path %q has an empty id", o.Path)
		}
	}
	if o.Kind == Get || o.Kind == Children {
		o.MinDepth, o.MaxDepth = Band(o.Kind)
	}
	switch {
	case o.MinDepth < 0:
		return fmt.Errorf("exporter: minimum depth %d: want 0 or more", o.MinDepth)
	case o.MaxDepth < NoMaxDepth:
		return fmt.Errorf("exporter: maximum depth %d: want 0 or more (or no maximum)", o.MaxDepth)
	case o.MaxDepth != NoMaxDepth && o.MaxDepth < o.MinDepth:
		return fmt.Errorf("exporter: maximum depth %d is below the minimum depth %d", o.MaxDepth, o.MinDepth)
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	return nil
}

// querier sends the reads of one query: it is the layouts.Reads of the
// layout's Query, with the paced, retrying reader that counts them.
type querier struct {
	client QueryAPI
	table  string
	l      layouts.Layout
	spec   layouts.TableSpec
	opts   QueryOptions
	r      *reader
	// held, when set, counts the items read that a query may hold (not a
	// Scan's, which locates a prefix node and keeps one row).
	held *heldBudget
}

// errOverBudget stops a query whose items would be over a heldBudget.
var errOverBudget = errors.New("exporter: the subtree's records are over the memory budget")

// heldBudget is what a subtree's query may hold: the layout's query holds
// every item it reads (its answer, an adjacency or prefix level's
// frontier), and the export then holds them as records.
type heldBudget struct{ left atomic.Int64 }

// newHeldBudget is a budget of n bytes; below 0, none (the first item
// read is over it).
func newHeldBudget(n int64) *heldBudget {
	b := &heldBudget{}
	b.left.Store(n)
	return b
}

// take counts items as ExportRecordBytes and twice their size each, as a
// table's export is sized, and says errOverBudget once they are over.
func (b *heldBudget) take(items ...layouts.Item) error {
	if b == nil || len(items) == 0 {
		return nil
	}
	var n int64
	for _, it := range items {
		n += ExportRecordBytes + 2*int64(transform.ItemSize(it))
	}
	if b.left.Add(-n) < 0 {
		return errOverBudget
	}
	return nil
}

var _ layouts.Reads = (*querier)(nil)

// tableError says which table a layout's finding is about.
func (q *querier) tableError(err error) error {
	var item *layouts.ItemError
	var missing *layouts.NotFoundError
	var inconsistent *layouts.InconsistentError
	var other *layouts.TableError
	switch {
	case errors.As(err, &item):
		return itemError("table "+q.table, q.spec, item.Item, q.l, item.Err)
	case errors.As(err, &missing):
		return &NotFoundError{Node: missing.Node, Table: q.table, Layout: q.l.Name()}
	case errors.As(err, &inconsistent):
		return fmt.Errorf("%w: table %s: %s", ErrInconsistent, q.table, inconsistent.Msg)
	case errors.As(err, &other):
		return fmt.Errorf("exporter: table %s: %s", q.table, other.Msg)
	}
	return err
}

// GetItem reads one item of the table; nil when there is none.
func (q *querier) GetItem(ctx context.Context, key layouts.Item) (layouts.Item, error) {
	in := &dynamodb.GetItemInput{
		TableName:              aws.String(q.table),
		Key:                    key,
		ConsistentRead:         aws.Bool(q.opts.ConsistentRead),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}
	var out *dynamodb.GetItemOutput
	err := q.r.do(ctx, "GetItem", func(ctx context.Context) (*types.ConsumedCapacity, []types.ConsumedCapacity, int64, error) {
		var err error
		out, err = q.client.GetItem(ctx, in, ddb.NoSDKRetry)
		if err != nil {
			return nil, nil, 0, err
		}
		n := int64(0)
		if len(out.Item) > 0 {
			n = 1
		}
		return out.ConsumedCapacity, nil, n, nil
	})
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", q.table, err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, q.held.take(out.Item)
}

// Query runs a Query to its last page and calls fn with each page's items.
func (q *querier) Query(ctx context.Context, c layouts.QueryInput, fn func(items []layouts.Item) error) error {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(q.table),
		KeyConditionExpression:    aws.String(c.KeyCondition),
		ExpressionAttributeNames:  c.Names,
		ExpressionAttributeValues: c.Values,
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	}
	if c.Index != "" {
		in.IndexName = aws.String(c.Index)
	} else {
		in.ConsistentRead = aws.Bool(q.opts.ConsistentRead)
	}
	if c.Filter != "" {
		in.FilterExpression = aws.String(c.Filter)
	}
	if c.Limit > 0 {
		in.Limit = aws.Int32(c.Limit)
	}
	for {
		var out *dynamodb.QueryOutput
		err := q.r.do(ctx, "Query", func(ctx context.Context) (*types.ConsumedCapacity, []types.ConsumedCapacity, int64, error) {
			var err error
			out, err = q.client.Query(ctx, in, ddb.NoSDKRetry)
			if err != nil {
				return nil, nil, 0, err
			}
			return out.ConsumedCapacity, nil, int64(out.ScannedCount), nil
		})
		if err != nil {
			where := "table " + q.table
			if c.Index != "" {
				where += ", index " + c.Index
			}
			return fmt.Errorf("%s: %w", where, err)
		}
		if out.ScannedCount == 0 {
			q.r.emptyQuery(ddb.Capacity(out.ConsumedCapacity, nil), aws.ToBool(in.ConsistentRead))
		}
		if len(out.Items) > 0 {
			if err := q.held.take(out.Items...); err != nil {
				return err
			}
			if err := fn(out.Items); err != nil {
				return err
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// MaxBatchGetKeys is DynamoDB's limit on the keys of one BatchGetItem.
const MaxBatchGetKeys = layouts.MaxBatchGetKeys

// BatchGet reads the items of keys with BatchGetItem, at most 100 keys a
// request and Concurrency requests at once, retrying UnprocessedKeys with
// backoff. It returns the items found, in no particular order; a key
// without an item is left out.
func (q *querier) BatchGet(ctx context.Context, keys []layouts.Item) ([]layouts.Item, error) {
	var mu sync.Mutex
	var found []layouts.Item
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(q.opts.Concurrency)
	for start := 0; start < len(keys); start += MaxBatchGetKeys {
		batch := keys[start:min(start+MaxBatchGetKeys, len(keys))]
		g.Go(func() error {
			items, err := q.batchGetOne(gctx, batch)
			if err != nil {
				return err
			}
			if err := q.held.take(items...); err != nil {
				return err
			}
			mu.Lock()
			found = append(found, items...)
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return found, nil
}

// batchGetOne reads up to 100 keys, until no key is left unprocessed.
func (q *querier) batchGetOne(ctx context.Context, keys []layouts.Item) ([]layouts.Item, error) {
	var found []layouts.Item
	pending := keys
	for fails := 0; len(pending) > 0; {
		in := &dynamodb.BatchGetItemInput{
			RequestItems: map[string]types.KeysAndAttributes{
				q.table: {Keys: pending, ConsistentRead: aws.Bool(q.opts.ConsistentRead)},
			},
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		}
		var out *dynamodb.BatchGetItemOutput
		err := q.r.do(ctx, "BatchGetItem", func(ctx context.Context) (*types.ConsumedCapacity, []types.ConsumedCapacity, int64, error) {
			var err error
			out, err = q.client.BatchGetItem(ctx, in, ddb.NoSDKRetry)
			if err != nil {
				return nil, nil, 0, err
			}
			return nil, out.ConsumedCapacity, int64(len(out.Responses[q.table])), nil
		})
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", q.table, err)
		}
		found = append(found, out.Responses[q.table]...)
		left := out.UnprocessedKeys[q.table].Keys
		if len(left) == 0 {
			break
		}
		if len(left) < len(pending) {
			fails = 0 // progress
		} else {
			fails++
		}
		if fails > q.r.maxRetries {
			return nil, &ddb.ServiceError{Pkg: "exporter", Op: "BatchGetItem", Attempts: fails,
				Err: fmt.Errorf("table %s: %d keys stayed unprocessed", q.table, len(left))}
		}
		q.r.retried()
		if err := q.r.backoff.Sleep(ctx, fails); err != nil {
			return nil, err
		}
		pending = left
	}
	return found, nil
}

// Scan reads the table through filter with a parallel Scan of
// Concurrency segments; fn returning layouts.ErrStopScan ends it early.
func (q *querier) Scan(ctx context.Context, filter *layouts.Filter, fn func(items []layouts.Item) error) error {
	return scanTable(ctx, q.client, q.r, q.table, ScanOptions{Segments: q.opts.Concurrency, ConsistentRead: q.opts.ConsistentRead}, filter,
		func(items []layouts.Item) error {
			if err := fn(items); errors.Is(err, layouts.ErrStopScan) {
				return errStop
			} else if err != nil {
				return err
			}
			return nil
		})
}
