package exporter

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// DefaultSegments is the number of parallel Scan segments when
// ScanOptions.Segments is 0.
const DefaultSegments = 4

// MaxSegments is DynamoDB's limit on TotalSegments.
const MaxSegments = 1_000_000

// ScanOptions configure Scan and ScanItems. The zero value scans with
// DefaultSegments segments, eventually consistent reads and no rate cap.
type ScanOptions struct {
	// Segments is the number of parallel Scan segments (TotalSegments),
	// each read by its own goroutine.
	Segments int
	// MaxRCU caps the read rate at this many read capacity units a second,
	// shared by every segment; 0 means no cap. The cap holds on average (a
	// page is paid for once its cost is known).
	MaxRCU float64
	// ConsistentRead asks for strongly consistent reads, at twice the RCU.
	ConsistentRead bool
	// PageSize is the Limit of each Scan request; 0 lets DynamoDB fill
	// pages of 1 MB.
	PageSize int32
	// MaxRetries is how many times in a row a request may fail with a
	// retryable error (throttling, 5xx, a lost connection) before the scan
	// gives up (10). Retries back off exponentially with full jitter.
	MaxRetries int
	// OnPage, when set, is told the running totals after every page. It is
	// called from the segments' goroutines, one call at a time.
	OnPage func(Stats)
}

// errStop ends a scan early without an error.
var errStop = errors.New("exporter: stop scanning")

// ScanItems reads every item of table with a parallel Scan and calls fn with
// each page of items, following LastEvaluatedKey to the end of each segment.
// fn is called from several goroutines at once (one per segment) and may
// keep the items. An error from fn, or a failure of DynamoDB that retries do
// not cure (a *ServiceError, matching ErrService), stops every segment and is
// returned with the counts so far.
func ScanItems(ctx context.Context, client ScanAPI, table string, opts ScanOptions, fn func(items []layouts.Item) error) (Stats, error) {
	r := newReader(readerOptions{MaxRCU: opts.MaxRCU, MaxRetries: opts.MaxRetries})
	err := scanTable(ctx, client, r, table, opts, nil, fn)
	return r.snapshot(), err
}

// scanFilter narrows a Scan with a FilterExpression.
type scanFilter struct {
	expr   string
	names  map[string]string
	values map[string]types.AttributeValue
}

// scanTable runs the segments of a Scan under one errgroup. fn returning
// errStop ends the scan early, without an error.
func scanTable(ctx context.Context, client ScanAPI, r *reader, table string, opts ScanOptions, filter *scanFilter, fn func(items []layouts.Item) error) error {
	segments := opts.Segments
	switch {
	case segments == 0:
		segments = DefaultSegments
	case segments < 0 || segments > MaxSegments:
		return fmt.Errorf("exporter: %d segments: give 1 to %d", segments, MaxSegments)
	}
	g, gctx := errgroup.WithContext(ctx)
	var pageMu sync.Mutex
	for seg := range segments {
		g.Go(func() error {
			in := &dynamodb.ScanInput{
				TableName:              aws.String(table),
				ConsistentRead:         aws.Bool(opts.ConsistentRead),
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
			}
			if segments > 1 {
				in.Segment = aws.Int32(int32(seg))
				in.TotalSegments = aws.Int32(int32(segments))
			}
			if opts.PageSize > 0 {
				in.Limit = aws.Int32(opts.PageSize)
			}
			if filter != nil {
				in.FilterExpression = aws.String(filter.expr)
				in.ExpressionAttributeNames = filter.names
				in.ExpressionAttributeValues = filter.values
			}
			for {
				var out *dynamodb.ScanOutput
				err := r.do(gctx, "Scan", func(ctx context.Context) (*types.ConsumedCapacity, []types.ConsumedCapacity, int64, error) {
					var err error
					out, err = client.Scan(ctx, in, noSDKRetry)
					if err != nil {
						return nil, nil, 0, err
					}
					return out.ConsumedCapacity, nil, int64(out.ScannedCount), nil
				})
				if err != nil {
					return fmt.Errorf("table %s, segment %d of %d: %w", table, seg, segments, err)
				}
				if len(out.Items) > 0 {
					if err := fn(out.Items); err != nil {
						return err
					}
				}
				if opts.OnPage != nil {
					pageMu.Lock()
					opts.OnPage(r.snapshot())
					pageMu.Unlock()
				}
				if len(out.LastEvaluatedKey) == 0 {
					return nil
				}
				in.ExclusiveStartKey = out.LastEvaluatedKey
			}
		})
	}
	err := g.Wait()
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// Scan reads every item of table with a parallel Scan (see ScanItems) and
// rebuilds the records its layout holds: each item goes through l.Node, the
// items that are not nodes (prefix listing rows, closure ancestor rows) are
// passed over (a FilterExpression leaves them on the server), and the
// layout's attributes are dropped. The records come back
// in the order of SortRecords.
//
// Every record is held in memory until the end, to sort them: about the
// size of the items plus a few hundred bytes a node.
//
// An item that does not fit the layout stops the scan with an error naming
// its key (a wrong --layout, --attr or --delimiter is the usual cause), and
// so does a table none of whose items is a node of the layout.
func Scan(ctx context.Context, client ScanAPI, table string, l layouts.Layout, opts ScanOptions) ([]*transform.Record, Stats, error) {
	r := newReader(readerOptions{MaxRCU: opts.MaxRCU, MaxRetries: opts.MaxRetries})
	var mu sync.Mutex
	var recs []*transform.Record
	spec := l.Table()
	err := scanTable(ctx, client, r, table, opts, nodeFilter(l), func(items []layouts.Item) error {
		page := make([]*transform.Record, 0, len(items))
		for _, item := range items {
			rec, ok, err := l.Node(item)
			if err != nil {
				return itemError(table, spec, item, l, err)
			}
			if ok {
				page = append(page, &rec)
			}
		}
		mu.Lock()
		recs = append(recs, page...)
		mu.Unlock()
		return nil
	})
	st := r.snapshot()
	if err != nil {
		return nil, st, err
	}
	if len(recs) == 0 && st.Items > 0 {
		// The filter left every item on the server: none has the layout's
		// node key.
		f, _ := layouts.FieldsOf(l)
		what := f.RelativeDepth + " = 0"
		if f.Layout == layouts.PrefixName {
			what = fmt.Sprintf("%s = %q", f.Child, f.Delimiter)
		}
		return nil, st, fmt.Errorf("%w: table %s has %d items, but none is a node of the %s layout (%s); is --layout right, with the --attr renames and --delimiter the table was written with?",
			layouts.ErrItem, table, st.Items, l.Name(), what)
	}
	return SortRecords(recs), st, nil
}

// nodeFilter keeps only the items that are nodes, for the layouts whose
// tables hold other items too: closure's own rows (RelativeDepth = 0) and
// prefix's object rows (Child = the delimiter). The filter does not lower
// the RCU a Scan consumes, but it leaves the other rows on the server: a
// closure table holds depth + 1 rows per node.
func nodeFilter(l layouts.Layout) *scanFilter {
	f, err := layouts.FieldsOf(l)
	if err != nil {
		return nil
	}
	switch f.Layout {
	case layouts.ClosureName:
		return &scanFilter{
			expr:   "#rd = :zero",
			names:  map[string]string{"#rd": f.RelativeDepth},
			values: map[string]types.AttributeValue{":zero": numAttr(0)},
		}
	case layouts.PrefixName:
		return &scanFilter{
			expr:   "#c = :d",
			names:  map[string]string{"#c": f.Child},
			values: map[string]types.AttributeValue{":d": strAttr(f.Delimiter)},
		}
	}
	return nil
}

// itemError says which item of which table does not fit the layout, and
// what to check.
func itemError(where string, spec layouts.TableSpec, item layouts.Item, l layouts.Layout, err error) error {
	return fmt.Errorf("exporter: %s: item %s: %w (is --layout %s right, with the --attr renames and --delimiter the table was written with?)",
		where, keyString(spec, item), err, l.Name())
}

// keyString renders an item's key for messages: Id="a", RelativeDepth=2.
func keyString(spec layouts.TableSpec, item layouts.Item) string {
	part := func(name string) string {
		switch v := item[name].(type) {
		case *types.AttributeValueMemberS:
			return fmt.Sprintf("%s=%q", name, v.Value)
		case *types.AttributeValueMemberN:
			return fmt.Sprintf("%s=%s", name, v.Value)
		case *types.AttributeValueMemberB:
			return fmt.Sprintf("%s=%x", name, v.Value)
		case nil:
			return name + " missing"
		default:
			return fmt.Sprintf("%s of type %T", name, v)
		}
	}
	s := part(spec.PK.Name)
	if spec.SK != nil {
		s += ", " + part(spec.SK.Name)
	}
	return s
}
