package layouts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/transform"
)

// Reader is the reading half of a layout: how a table of it is read back.
// Every Layout is a Reader, and each layout implements it in its own file,
// beside the code that writes its items, so that no package outside this
// one needs to know which layout it reads. Implementations are safe for
// concurrent use.
type Reader interface {
	// NodeFilter is the Scan filter that keeps only the items holding
	// nodes, for a layout whose tables hold other items too; nil when every
	// item holds a node. It does not lower what a Scan costs, but it leaves
	// the other items on the server.
	NodeFilter() *Filter
	// IsNode reports whether an item the layout wrote is the one holding
	// its node and the node's attributes. It looks only at what tells the
	// items apart (NodeFilter's attribute), not whether the item is valid.
	IsNode(item View) bool
	// NodeOf returns the id of the node an item holds, and its parent's
	// ("" for a root), without checking the rest of the item; false for an
	// item that holds no node.
	NodeOf(item View) (id, parent string, ok bool)
	// Owner returns the id of the node an item belongs to, from its key
	// attributes alone, so that a key without the rest of its item has an
	// owner too; "" when the key names none.
	Owner(item View) string
	// PathKeyed reports whether the layout's keys are paths rather than
	// ids: a query about a node is then given its path (Request.Path), or
	// has to find it with a Scan.
	PathKeyed() bool
	// Query answers a query about one node with the reads r sends, in no
	// particular order. A node that is not in the table is a
	// *NotFoundError; an item that does not fit the layout an *ItemError;
	// items that contradict each other an *InconsistentError.
	Query(ctx context.Context, r Reads, q Request) ([]Result, error)
	// Costs returns the layout's model of what its queries cost, over
	// forest f, for the nodes of f at the forest indexes in sample.
	Costs(f *transform.Forest, sample []int32) CostModel
}

// View is one item, in either of the forms the layouts give items in: a
// map (Items, the items of a table) or a slice of attributes (AppendItems).
// Making one copies nothing, and nor does passing it.
type View struct {
	m     Item
	attrs []Attr
}

// MapView is a View of an item as a map.
func MapView(item Item) View { return View{m: item} }

// AttrsView is a View of an item as a slice of attributes.
func AttrsView(attrs []Attr) View { return View{attrs: attrs} }

// Get returns the value of the attribute called name, or nil.
func (v View) Get(name string) types.AttributeValue {
	if v.m != nil {
		return v.m[name]
	}
	for _, a := range v.attrs {
		if a.Name == name {
			return a.Value
		}
	}
	return nil
}

// str returns the S attribute name, and whether it is one.
func (v View) str(name string) (string, bool) {
	s, ok := v.Get(name).(*types.AttributeValueMemberS)
	if !ok || s == nil {
		return "", false
	}
	return s.Value, true
}

// Filter is a FilterExpression with its names and values.
type Filter struct {
	Expr   string
	Names  map[string]string
	Values map[string]types.AttributeValue
	// Text says what the filter keeps, for messages: RelativeDepth = 0.
	Text string
}

// Reads are the DynamoDB reads of one table that a layout's queries send.
// The exporter implements them with its paced, retrying reader, which
// counts the requests and the capacity they consume; the tests with the
// items of a forest in memory. What a read is sent with that a layout does
// not choose (ConsistentRead on the table, never on an index;
// ReturnConsumedCapacity) is the implementation's. Implementations are safe
// for concurrent use.
type Reads interface {
	// GetItem reads the item with this key; nil when there is none.
	GetItem(ctx context.Context, key Item) (Item, error)
	// Query sends in, following LastEvaluatedKey to the last page, and
	// calls page with each page's items (not with an empty page). An error
	// from page ends it and is returned.
	Query(ctx context.Context, in QueryInput, page func(items []Item) error) error
	// BatchGet reads the items of keys with BatchGetItem, at most
	// MaxBatchGetKeys keys a request, until no key is left unprocessed. It
	// returns the items found, in no particular order; a key without an
	// item is left out.
	BatchGet(ctx context.Context, keys []Item) ([]Item, error)
	// Scan reads the whole table, keeping the items filter lets through,
	// and calls fn with them, a page at a time, from several goroutines at
	// once. fn returning ErrStopScan ends the Scan without an error.
	Scan(ctx context.Context, filter *Filter, fn func(items []Item) error) error
}

// MaxBatchGetKeys is DynamoDB's limit on the keys of one BatchGetItem.
const MaxBatchGetKeys = 100

// ErrStopScan, returned by the function given to Reads.Scan, ends the scan
// early without an error.
var ErrStopScan = errors.New("layouts: stop scanning")

// QueryInput is one Query of a table or an index.
type QueryInput struct {
	Index        string // "" for the table
	KeyCondition string
	Filter       string // "" for none
	Names        map[string]string
	Values       map[string]types.AttributeValue
	// Limit is the most items one page reads (DynamoDB's Limit), for a
	// query that may stop after its first items and should not be billed
	// for more; 0 leaves each page to DynamoDB's 1 MB.
	Limit int32
}

// QueryKind is what a query asks for.
type QueryKind string

// The kinds of query, as the command line names them.
const (
	QueryGet         QueryKind = "get"         // the node itself, at relative depth 0
	QueryChildren    QueryKind = "children"    // its children, at relative depth 1
	QueryDescendants QueryKind = "descendants" // its subtree, counted down from it
	QueryAncestors   QueryKind = "ancestors"   // the nodes above it, counted up from it
)

// NoMaxDepth is Request.MaxDepth for no limit.
const NoMaxDepth = -1

// Request is one query about one node, checked by the caller: the band is
// in order, and get and children have theirs (0–0, 1–1).
type Request struct {
	Kind QueryKind
	// ID is the node's id.
	ID string
	// Path is the ids from the root to the node, for a PathKeyed layout;
	// nil to find it with a Scan. Other layouts ignore it.
	Path []string
	// MinDepth and MaxDepth bound the relative depths of the answer, both
	// included; MaxDepth NoMaxDepth means no bound.
	MinDepth, MaxDepth int
	// Concurrency bounds the queries a layout sends at once (a level of a
	// breadth-first walk, the shards of a tree); at least 1.
	Concurrency int
	// OnLocate, when set, is told the path that a Scan found.
	OnLocate func(path []string)
	// Known says the caller knows the node is in the table (it holds an id
	// an earlier answer gave it, as bench's sample and an application do):
	// an answer that comes back empty is not followed by a read of the node
	// to tell a leaf (or a root) from a node that is not there. Without it,
	// such a query reports a missing node as a *NotFoundError.
	Known bool
	// FollowLinks, for get on a layout that writes links (Links), answers
	// a link with the node it links to, read through the link once (a
	// link to a link answers the second link), its Via set to the link's
	// id. Other layouts and kinds ignore it.
	FollowLinks bool
}

// LearnsPath reports whether a query of this kind on l needs the node's
// path before it can be sent, given only the id: every query but get of a
// PathKeyed layout (its keys are paths). The cost models price learning it
// as path and sharded-path learn theirs, by one GetItem of the node's own
// item (PathCost), so that every layout is priced given the same knowledge
// of the node, its id; bench sends that read before the query.
func LearnsPath(l Reader, kind QueryKind) bool {
	return l.PathKeyed() && kind != QueryGet
}

// InBand reports whether relative depth d is in the query's band.
func (q *Request) InBand(d int) bool {
	return d >= q.MinDepth && (q.MaxDepth == NoMaxDepth || d <= q.MaxDepth)
}

// Result is one node of a query's answer.
type Result struct {
	ID     string
	Parent string // "" for a root
	// RelativeDepth is the distance from the queried node: counted down for
	// children and descendants, up for ancestors, 0 for the node itself.
	RelativeDepth int
	Attrs         transform.Attrs
	// Via is the id of the link the node was reached through
	// (Request.FollowLinks), or "".
	Via string
}

// ItemError is an item of the table that does not fit the layout. It
// unwraps to Err, which matches ErrItem.
type ItemError struct {
	Item Item
	Err  error
}

func (e *ItemError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *ItemError) Unwrap() error { return e.Err }

// NotFoundError is a queried node that is not in the table.
type NotFoundError struct {
	Node string // `node "CM4"`, with its path for a PathKeyed layout
}

func (e *NotFoundError) Error() string { return e.Node + " is not in the table" }

// InconsistentError is a table whose items contradict each other (a prefix
// listing row whose object row is missing).
type InconsistentError struct{ Msg string }

func (e *InconsistentError) Error() string { return e.Msg }

// TableError is a table written with other options than the layout's (a
// sharded-path table of another --shards).
type TableError struct{ Msg string }

func (e *TableError) Error() string { return e.Msg }

// nodeResult rebuilds the node of an item that must hold one.
func nodeResult(l Layout, item Item, depth int) (Result, error) {
	rec, ok, err := l.Node(item)
	if err != nil {
		return Result{}, &ItemError{Item: item, Err: err}
	}
	if !ok {
		return Result{}, &ItemError{Item: item, Err: fmt.Errorf("%w: not a node's own item", ErrItem)}
	}
	return Result{ID: rec.ID, Parent: rec.Parent, RelativeDepth: depth, Attrs: rec.Attrs}, nil
}

// strAttr is an S value.
func strAttr(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

// numAttr is an N value.
func numAttr(n int) types.AttributeValue { return &types.AttributeValueMemberN{Value: strconv.Itoa(n)} }

// asString returns an item's S attribute, or "".
func asString(item Item, name string) string {
	if s, ok := item[name].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// asInt returns an item's N attribute as an int, and whether it is one.
func asInt(item Item, name string) (int, bool) {
	n, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(n.Value)
	return v, err == nil
}

// sortedKeys returns a map's keys in order, for deterministic messages.
func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
