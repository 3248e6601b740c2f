package exporter

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/time/rate"

	"github.com/treeport/treeport/internal/awserr"
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
	// ErrService marks a failure of DynamoDB, or of the way to it, that
	// retrying did not cure (access denied, no such table, retries
	// exhausted).
	ErrService = errors.New("exporter: DynamoDB service failure")
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
}

// Add adds o to s.
func (s *Stats) Add(o Stats) {
	s.Requests += o.Requests
	s.Items += o.Items
	s.ConsumedRCU += o.ConsumedRCU
	s.Throttles += o.Throttles
	s.Retries += o.Retries
	s.Failed += o.Failed
}

// String is one line for a summary: "12 requests, 340 items read, 42.5 RCU".
func (s Stats) String() string {
	out := fmt.Sprintf("%d requests, %d items read, %s RCU consumed", s.Requests, s.Items, formatRCU(s.ConsumedRCU))
	if s.Throttles > 0 || s.Retries > 0 {
		out += fmt.Sprintf(", %d throttled, %d retries", s.Throttles, s.Retries)
	}
	return out
}

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
	limiter     *rate.Limiter // nil: no cap
	burst       int
	maxRetries  int
	baseBackoff time.Duration
	maxBackoff  time.Duration

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
	r := &reader{maxRetries: o.MaxRetries, baseBackoff: o.BaseBackoff, maxBackoff: o.MaxBackoff}
	if r.maxRetries <= 0 {
		r.maxRetries = 10
	}
	if r.baseBackoff <= 0 {
		r.baseBackoff = 50 * time.Millisecond
	}
	if r.maxBackoff <= 0 {
		r.maxBackoff = 5 * time.Second
	}
	if o.MaxRCU > 0 {
		r.burst = max(1, int(o.MaxRCU))
		r.limiter = rate.NewLimiter(rate.Limit(o.MaxRCU), r.burst)
	}
	return r
}

// noSDKRetry turns the SDK's own retries off for one call: the reader
// retries, and it must see every throttle.
func noSDKRetry(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }

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
		rcu := capacity(cc, ccs)
		r.mu.Lock()
		r.stats.Requests++
		if fails > 0 {
			r.stats.Retries++
		}
		if err == nil {
			r.stats.Items += items
			r.stats.ConsumedRCU += rcu
		} else {
			r.stats.Failed++
		}
		kind, code := classify(err)
		if kind == errThrottle {
			r.stats.Throttles++
		}
		r.mu.Unlock()
		if err == nil {
			return r.pay(ctx, rcu)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if kind == errOther || fails >= r.maxRetries {
			se := &ServiceError{Op: op, Code: code, Err: err}
			if kind != errOther {
				se.Attempts = fails + 1
			}
			return se
		}
		if err := r.sleep(ctx, fails); err != nil {
			return err
		}
	}
}

// pay takes rcu units from the rate limiter, waiting as long as the cap
// needs. A request is paid after it returns, since only then is its cost
// known: the cap holds on average, and a burst at the start may exceed it by
// one page per worker.
func (r *reader) pay(ctx context.Context, rcu float64) error {
	if r.limiter == nil || rcu <= 0 {
		return nil
	}
	units := int(rcu + 0.999)
	for units > 0 {
		n := min(units, r.burst)
		if err := r.limiter.WaitN(ctx, n); err != nil {
			return err
		}
		units -= n
	}
	return nil
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

// sleep waits a full-jitter exponential backoff: a random time up to
// baseBackoff·2^fails, at most maxBackoff.
func (r *reader) sleep(ctx context.Context, fails int) error {
	ceil := r.maxBackoff
	if fails < 30 {
		if d := r.baseBackoff << fails; d > 0 && d < ceil {
			ceil = d
		}
	}
	t := time.NewTimer(rand.N(ceil) + time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// capacity adds up what the service reported as consumed.
func capacity(cc *types.ConsumedCapacity, ccs []types.ConsumedCapacity) float64 {
	total := 0.0
	if cc != nil && cc.CapacityUnits != nil {
		total += *cc.CapacityUnits
	}
	for _, c := range ccs {
		if c.CapacityUnits != nil {
			total += *c.CapacityUnits
		}
	}
	return total
}

// ServiceError is a DynamoDB failure with the operation and the service's
// error code. It matches ErrService and unwraps to the SDK's error.
type ServiceError struct {
	Op       string // "Scan", "Query", "GetItem", "BatchGetItem"
	Code     string // the service's error code; "" for a transport error
	Attempts int    // > 0 when the error was retryable and retries ran out
	Err      error
}

func (e *ServiceError) Error() string {
	hint := ""
	switch e.Code {
	case "AccessDeniedException", "UnrecognizedClientException", "MissingAuthenticationTokenException",
		"InvalidSignatureException", "ExpiredTokenException":
		hint = "; check the credentials (--profile, AWS_PROFILE, AWS_ACCESS_KEY_ID) and their permissions"
	case "ResourceNotFoundException":
		hint = "; check --table and --region (or --endpoint-url)"
	case "ValidationException":
		hint = "; check that the table has the keys and indexes of --layout (and its --attr renames): treeport schema prints them"
	}
	if e.Attempts > 0 {
		hint += fmt.Sprintf(" (gave up after %d attempts; lower --max-rcu or --segments, or raise the table's capacity)", e.Attempts)
	}
	return fmt.Sprintf("exporter: DynamoDB %s failed: %v%s", e.Op, e.Err, hint)
}

// Unwrap returns the SDK's error.
func (e *ServiceError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrService) true.
func (e *ServiceError) Is(target error) bool { return target == ErrService }

type errKind = awserr.Kind

const (
	errOther    = awserr.Other    // not retryable
	errThrottle = awserr.Throttle // the service asks to slow down
	errServer   = awserr.Server   // 5xx
	errNet      = awserr.Net      // the connection failed
)

// classify sorts an error by what the reader should do with it, and
// returns the service's error code if there is one. A read has nothing to
// split: an invalid request is not retried.
func classify(err error) (errKind, string) {
	k, code := awserr.Classify(err)
	if k == awserr.Validation {
		k = awserr.Other
	}
	return k, code
}
