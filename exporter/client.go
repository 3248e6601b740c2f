package exporter

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
)

// ScanAPI is the part of the DynamoDB client that Scan and Verify use;
// *dynamodb.Client satisfies it.
type ScanAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// QueryAPI is the part of the DynamoDB client that Query uses: GetItem,
// Query and BatchGetItem, and Scan to find a prefix node whose path is not
// given. *dynamodb.Client satisfies it.
type QueryAPI interface {
	ScanAPI
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

var _ QueryAPI = (*dynamodb.Client)(nil)

// Errors of the exporter; test with errors.Is.
var (
	// ErrNotFound marks a query whose node is not in the table (a
	// *NotFoundError). It also matches fs.ErrNotExist.
	ErrNotFound = errors.New("exporter: node not found")
	// ErrInconsistent marks a table whose items contradict each other (a
	// prefix listing row whose object row is missing).
	ErrInconsistent = errors.New("exporter: the table is inconsistent")
)

// NotFoundError is a query's node that is not in the table.
type NotFoundError struct {
	Node   string // `node "CM4"`, with its path for the prefix layout
	Table  string
	Layout string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("exporter: %s is not in table %s (layout %s)", e.Node, e.Table, e.Layout)
}

// Is makes a missing node match ErrNotFound and fs.ErrNotExist.
func (e *NotFoundError) Is(target error) bool {
	return target == ErrNotFound || target == fs.ErrNotExist
}

// Stats count what reading a table cost. ConsumedRCU is what DynamoDB
// reported (ReturnConsumedCapacity TOTAL: the table and its indexes).
type Stats struct {
	Requests    int64   `json:"requests"`
	Items       int64   `json:"items_read"` // items the service read: ScannedCount of a Scan or Query, items returned by GetItem and BatchGetItem
	ConsumedRCU float64 `json:"rcu_consumed"`
	Throttles   int64   `json:"throttles"` // throttled requests, each retried
	Retries     int64   `json:"retries"`   // requests sent again: throttles, 5xx, network errors, unprocessed keys
	// Failed counts the requests that got an error back (throttles, 5xx,
	// network errors), which DynamoDB does not bill: Requests - Failed is
	// what the reads took had nothing gone wrong.
	Failed int64 `json:"failed_requests"`
	// EmptyQueries counts the Query requests that read nothing.
	EmptyQueries int64 `json:"empty_queries"`
	// PricedRCU is what DynamoDB's documented rules bill the same
	// requests: ConsumedRCU, with each Query that read nothing raised to
	// the minimum of its read type (layouts.MinReadRCU). DynamoDB bills
	// them so, and the two are equal; DynamoDB Local bills them 0.
	PricedRCU float64 `json:"rcu_priced"`
	// Unparsable counts the items that carry a table model's type field
	// but do not read back through its templates: skipped, never exported;
	// UnparsableKey is the key of one.
	Unparsable    int64  `json:"unparsable_items,omitempty"`
	UnparsableKey string `json:"unparsable_example,omitempty"`
}

// Add adds o to s.
func (s *Stats) Add(o Stats) {
	s.Requests += o.Requests
	s.Items += o.Items
	s.ConsumedRCU += o.ConsumedRCU
	s.Throttles += o.Throttles
	s.Retries += o.Retries
	s.Failed += o.Failed
	s.EmptyQueries += o.EmptyQueries
	s.PricedRCU += o.PricedRCU
	s.Unparsable += o.Unparsable
	if s.UnparsableKey == "" {
		s.UnparsableKey = o.UnparsableKey
	}
}

// String is one line for a summary: "12 requests, 340 items read, 42.5 RCU".
func (s Stats) String() string {
	out := fmt.Sprintf("%s, %s read, %s RCU consumed", plural(s.Requests, "request"), plural(s.Items, "item"), formatRCU(s.ConsumedRCU))
	if s.PricedRCU > s.ConsumedRCU {
		// DynamoDB Local: say what DynamoDB would bill.
		out += fmt.Sprintf("; DynamoDB would bill %s RCU (a Query that finds nothing costs the minimum; %d here)", formatRCU(s.PricedRCU), s.EmptyQueries)
	}
	if s.Throttles > 0 || s.Retries > 0 {
		out += fmt.Sprintf(", %d throttled, %d retries", s.Throttles, s.Retries)
	}
	if s.Unparsable > 0 {
		out += fmt.Sprintf("; %d items carry the model's type field but do not read back through its templates and were left out (one: %s)", s.Unparsable, s.UnparsableKey)
	}
	return out
}

// plural says "1 request", "2 requests" or "12,345 requests".
func plural(n int64, thing string) string { return units.Count(n, thing) }

func formatRCU(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.1f", v)
}

// reader runs read requests: it counts them, retries the retryable failures
// with full-jitter exponential backoff and, when a cap is set, holds the
// consumed capacity to the cap. It is safe for concurrent use.
type reader struct {
	pacer      *ddb.ReadPacer // nil: no cap
	maxRetries int
	backoff    ddb.Backoff

	mu    sync.Mutex
	stats Stats
}

// readerOptions configure a reader; zero values take the defaults.
type readerOptions struct {
	MaxRCU      float64
	MaxRetries  int           // 10
	BaseBackoff time.Duration // 50 ms
	MaxBackoff  time.Duration // 5 s
}

func newReader(o readerOptions) *reader {
	r := &reader{maxRetries: o.MaxRetries, backoff: ddb.Backoff{Base: o.BaseBackoff, Max: o.MaxBackoff}, pacer: ddb.NewReadPacer(o.MaxRCU)}
	if r.maxRetries <= 0 {
		r.maxRetries = 10
	}
	if r.backoff.Base <= 0 {
		r.backoff.Base = 50 * time.Millisecond
	}
	if r.backoff.Max <= 0 {
		r.backoff.Max = 5 * time.Second
	}
	return r
}

// do runs call until it succeeds, fails for good, or has failed
// maxRetries times in a row. op names the operation for errors. The call
// returns the consumed capacity and the number of items read, which do
// counts and then pays to the rate limiter.
func (r *reader) do(ctx context.Context, op string, call func(ctx context.Context) (*types.ConsumedCapacity, []types.ConsumedCapacity, int64, error)) error {
	for fails := 0; ; fails++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		cc, ccs, items, err := call(ctx)
		rcu := ddb.Capacity(cc, ccs)
		r.mu.Lock()
		r.stats.Requests++
		if fails > 0 {
			r.stats.Retries++
		}
		if err == nil {
			r.stats.Items += items
			r.stats.ConsumedRCU += rcu
			r.stats.PricedRCU += rcu
		} else {
			r.stats.Failed++
		}
		kind, code := ddb.Classify(err)
		if kind == ddb.Throttle {
			r.stats.Throttles++
		}
		r.mu.Unlock()
		if err == nil {
			return r.pacer.Pay(ctx, rcu)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// A read has nothing to split: an invalid request is not retried.
		if !kind.Retryable() || fails >= r.maxRetries {
			se := &ddb.ServiceError{Pkg: "exporter", Op: op, Code: code, Err: err}
			if kind.Retryable() {
				se.Attempts = fails + 1
			}
			return se
		}
		if err := r.backoff.Sleep(ctx, fails); err != nil {
			return err
		}
	}
}

// emptyQuery counts a Query request that read nothing and was billed rcu:
// DynamoDB's documented price is at least the minimum of its read type.
func (r *reader) emptyQuery(rcu float64, consistent bool) {
	r.mu.Lock()
	r.stats.EmptyQueries++
	r.stats.PricedRCU += max(0, layouts.MinReadRCU(consistent)-rcu)
	r.mu.Unlock()
}

// retried counts a request sent again that do did not see fail: a
// BatchGetItem's unprocessed keys.
func (r *reader) retried() {
	r.mu.Lock()
	r.stats.Retries++
	r.mu.Unlock()
}

// snapshot returns the counts so far.
func (r *reader) snapshot() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}
