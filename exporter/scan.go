package exporter

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/models"
	"github.com/treeport/treeport/records"
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
	// pages of 1 MB (or Memory sets it).
	PageSize int32
	// Memory, when not 0 and PageSize is 0, bounds the memory of the
	// pages in flight once decoded (a page of 1 MB is some 15 MB of
	// heap): each request's Limit is set so that the segments' pages, and
	// the chunks waiting for the workers and in their hands (three pages a
	// worker at most), fit in it, from the bytes
	// an item the pages read so far took (pager). The out-of-core jobs
	// give it a share of --memory; 0 reads pages of 1 MB.
	Memory int64
	// MaxRetries is how many times in a row a request may fail with a
	// retryable error (throttling, 5xx, a lost connection) before the scan
	// gives up (10). Retries back off exponentially with full jitter.
	MaxRetries int
	// OnPage, when set, is told the running totals after every page. It is
	// called from the segments' goroutines, one call at a time.
	OnPage func(Stats)
	// Partition, when set, is the one partition of the table to read (its
	// partition key and value, models.Partition): a Query of it replaces
	// the Scan of the whole table, and Segments does not apply. Scan sets
	// it from a table model whose partition key is constant per tenant.
	Partition layouts.Item
	// OnItems, when set, is handed each page of the table's items before
	// they are read as nodes, one call at a time (SpillNodes only: the
	// follower builds its mirror of the source from the copy's own read).
	OnItems func(items []layouts.Item) error
}

// partitionAPI is the Query a client needs to read one partition
// (ScanOptions.Partition); a client without it is read with a Scan.
type partitionAPI interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// errStop ends a scan early without an error.
var errStop = errors.New("exporter: stop scanning")

// ScanItems reads every item of table with a parallel Scan and calls fn with
// the items, a page (or a part of one) at a time, following
// LastEvaluatedKey to the end of each segment. fn is called from several
// goroutines at once (a pool of about one a CPU, fed by the segments, which
// ask for their next pages while fn runs) and may keep the items. An error
// from fn, or a failure of DynamoDB that retries do not cure (a
// *ddb.ServiceError, matching ddb.ErrService), stops every segment and is
// returned with the counts so far.
//
// The package decodes the pages of a *dynamodb.Client itself, for speed,
// into the same items the SDK would give; what it does not know, the SDK
// decodes.
func ScanItems(ctx context.Context, client ScanAPI, table string, opts ScanOptions, fn func(items []layouts.Item) error) (Stats, error) {
	r := newReader(readerOptions{MaxRCU: opts.MaxRCU, MaxRetries: opts.MaxRetries})
	err := scanTable(ctx, client, r, table, opts, nil, fn)
	return r.snapshot(), err
}

// scanChunk is the most items a worker takes at a time: a page of 1 MB
// (thousands of items) is cut in chunks, so that the workers share the
// last pages of a scan instead of one of them rebuilding a whole page while
// the others wait.
const scanChunk = 1024

// scanTable runs the segments of a Scan under one errgroup. Each segment
// hands its pages, in chunks of at most scanChunk items, to a pool of
// workers that call fn, and asks for its next page at once: decoding and
// rebuilding overlap with the requests in flight, as they would not if a
// segment processed its page before asking for the next. The pool has one
// worker a CPU (at most one a segment), and at most two chunks a worker
// wait for it, which bounds the memory a slow fn lets pile up. fn returning
// errStop ends the scan early, without an error.
func scanTable(ctx context.Context, client ScanAPI, r *reader, table string, opts ScanOptions, filter *layouts.Filter, fn func(items []layouts.Item) error) error {
	segments := opts.Segments
	switch {
	case segments == 0:
		segments = DefaultSegments
	case segments < 0 || segments > MaxSegments:
		return fmt.Errorf("exporter: %d segments: give 1 to %d", segments, MaxSegments)
	}
	qc, byQuery := client.(partitionAPI)
	byQuery = byQuery && len(opts.Partition) == 1
	if byQuery {
		segments = 1
	}
	workers := min(segments, runtime.GOMAXPROCS(0))
	var pages *pager
	if opts.PageSize == 0 {
		pages = newPager(opts.Memory, segments+3*workers, opts.ConsistentRead)
	}
	g, gctx := errgroup.WithContext(ctx)
	chunks := make(chan []layouts.Item, 2*workers)
	var pageMu sync.Mutex
	var readers sync.WaitGroup
	readers.Add(segments)
	for seg := range segments {
		g.Go(func() error {
			defer readers.Done()
			read := func(page func([]layouts.Item) error) error {
				if byQuery {
					return queryPartition(gctx, qc, r, table, opts, filter, pages, page)
				}
				return scanSegment(gctx, client, r, table, opts, filter, pages, seg, segments, page)
			}
			return read(func(items []layouts.Item) error {
				for len(items) > 0 {
					n := min(len(items), scanChunk)
					select {
					case chunks <- items[:n:n]:
					case <-gctx.Done():
						return gctx.Err()
					}
					items = items[n:]
				}
				if opts.OnPage != nil {
					pageMu.Lock()
					opts.OnPage(r.snapshot())
					pageMu.Unlock()
				}
				return nil
			})
		})
	}
	g.Go(func() error {
		readers.Wait()
		close(chunks)
		return nil
	})
	for range workers {
		g.Go(func() error {
			for items := range chunks {
				if err := gctx.Err(); err != nil {
					return err
				}
				if err := fn(items); err != nil {
					return err
				}
			}
			return nil
		})
	}
	err := g.Wait()
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// scanSegment reads one segment of a Scan page by page, following
// LastEvaluatedKey to its end, and hands each page to page.
func scanSegment(ctx context.Context, client ScanAPI, r *reader, table string, opts ScanOptions, filter *layouts.Filter, pages *pager, seg, segments int, page func(items []layouts.Item) error) error {
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
		in.FilterExpression = aws.String(filter.Expr)
		in.ExpressionAttributeNames = filter.Names
		in.ExpressionAttributeValues = filter.Values
	}
	for {
		if l := pages.limit(); l > 0 {
			in.Limit = aws.Int32(l)
		}
		var out *dynamodb.ScanOutput
		err := r.do(ctx, "Scan", func(ctx context.Context) (*types.ConsumedCapacity, []types.ConsumedCapacity, int64, error) {
			var err error
			out, err = client.Scan(ctx, in, ddb.NoSDKRetry, scanDecoding)
			if err != nil {
				return nil, nil, 0, err
			}
			return out.ConsumedCapacity, nil, int64(out.ScannedCount), nil
		})
		if err != nil {
			return fmt.Errorf("table %s, segment %d of %d: %w", table, seg, segments, err)
		}
		pages.read(int(out.ScannedCount), capacityUnits(out.ConsumedCapacity))
		if err := page(out.Items); err != nil {
			return err
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// queryPartition reads the one partition opts.Partition names with a
// Query, page by page, following LastEvaluatedKey to its end, and hands
// each page to page, as scanSegment does a segment's.
func queryPartition(ctx context.Context, client partitionAPI, r *reader, table string, opts ScanOptions, filter *layouts.Filter, pages *pager, page func(items []layouts.Item) error) error {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(table),
		ConsistentRead:            aws.Bool(opts.ConsistentRead),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
		KeyConditionExpression:    aws.String("#partition_key = :partition_key"),
		ExpressionAttributeNames:  map[string]string{},
		ExpressionAttributeValues: map[string]types.AttributeValue{},
	}
	for name, value := range opts.Partition {
		in.ExpressionAttributeNames["#partition_key"] = name
		in.ExpressionAttributeValues[":partition_key"] = value
	}
	if opts.PageSize > 0 {
		in.Limit = aws.Int32(opts.PageSize)
	}
	if filter != nil {
		in.FilterExpression = aws.String(filter.Expr)
		maps.Copy(in.ExpressionAttributeNames, filter.Names)
		maps.Copy(in.ExpressionAttributeValues, filter.Values)
	}
	for {
		if l := pages.limit(); l > 0 {
			in.Limit = aws.Int32(l)
		}
		var out *dynamodb.QueryOutput
		err := r.do(ctx, "Query", func(ctx context.Context) (*types.ConsumedCapacity, []types.ConsumedCapacity, int64, error) {
			var err error
			out, err = client.Query(ctx, in, ddb.NoSDKRetry)
			if err != nil {
				return nil, nil, 0, err
			}
			return out.ConsumedCapacity, nil, int64(out.ScannedCount), nil
		})
		if err != nil {
			return fmt.Errorf("table %s, partition %s: %w", table, ddb.KeyString(opts.Partition, slices.Collect(maps.Keys(opts.Partition))...), err)
		}
		pages.read(int(out.ScannedCount), capacityUnits(out.ConsumedCapacity))
		if err := page(out.Items); err != nil {
			return err
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
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
	held, st, err := scanNodes(ctx, client, table, l, opts, nil)
	if err != nil {
		return nil, st, err
	}
	order, _ := forestOrder(held.ids, held.parents)
	recs := make([]*transform.Record, len(order))
	for k, i := range order {
		recs[k] = held.recs[i]
	}
	return recs, st, nil
}

// heldNodes are the nodes read so far, held to be sorted: their ids and
// parents, and for each either its record (recs) or, when they were encoded
// as they came, its bytes in the output format (encs).
type heldNodes struct {
	ids, parents []string
	recs         []*transform.Record
	encs         [][]byte
	// unparsable counts a table model's items that do not read back.
	unparsable    int64
	unparsableKey string
}

// joinHeld puts the nodes of pages end to end.
func joinHeld(pages []*heldNodes) *heldNodes {
	n := 0
	for _, p := range pages {
		n += len(p.ids)
	}
	h := &heldNodes{ids: make([]string, 0, n), parents: make([]string, 0, n)}
	if len(pages) > 0 && pages[0].encs != nil {
		h.encs = make([][]byte, 0, n)
	} else {
		h.recs = make([]*transform.Record, 0, n)
	}
	for _, p := range pages {
		h.ids = append(h.ids, p.ids...)
		h.parents = append(h.parents, p.parents...)
		h.recs = append(h.recs, p.recs...)
		h.encs = append(h.encs, p.encs...)
	}
	return h
}

// addImplied adds the implicit inner nodes that the held nodes' path ids
// name (layouts.Implied), as records without attributes, encoded when the
// others are.
func (h *heldNodes) addImplied(l layouts.Layout, newEncoder func() records.Encoder) error {
	extra := layouts.Implied(l, h.ids, h.parents)
	var enc records.Encoder
	if len(extra) > 0 && h.encs != nil {
		enc = newEncoder()
	}
	for _, r := range extra {
		h.ids = append(h.ids, r.ID)
		h.parents = append(h.parents, r.Parent)
		if enc == nil {
			h.recs = append(h.recs, r)
			continue
		}
		b, err := enc.Encode(nil, r)
		if err != nil {
			return err
		}
		h.encs = append(h.encs, b)
	}
	return nil
}

// arenaBlock is the size of the blocks encoded records are laid in: one
// allocation for a few hundred records rather than one each.
const arenaBlock = 64 << 10

// scanNodes reads the nodes of table as Scan does, in no particular order.
// With newEncoder, each record is encoded by the worker that rebuilt it, and
// only its id, parent and bytes are kept: the encoding, the heaviest part
// of writing, is spread over the scan instead of following it, and what is
// held is a fraction of the items' size.
func scanNodes(ctx context.Context, client ScanAPI, table string, l layouts.Layout, opts ScanOptions, newEncoder func() records.Encoder) (*heldNodes, Stats, error) {
	r := newReader(readerOptions{MaxRCU: opts.MaxRCU, MaxRetries: opts.MaxRetries})
	var mu sync.Mutex
	var pages []*heldNodes
	filter := l.NodeFilter()
	if opts.Partition == nil {
		// A model's partition constant per tenant: a Query of it.
		opts.Partition = models.Partition(l)
	}
	err := scanTable(ctx, client, r, table, opts, filter, func(items []layouts.Item) error {
		page := &heldNodes{ids: make([]string, 0, len(items)), parents: make([]string, 0, len(items))}
		var enc records.Encoder
		var arena []byte
		if newEncoder != nil {
			enc = newEncoder()
			page.encs = make([][]byte, 0, len(items))
		} else {
			page.recs = make([]*transform.Record, 0, len(items))
		}
		var err error
		page.unparsable, page.unparsableKey, err = pageNodes(table, l, items, func(rec *transform.Record) error {
			page.ids = append(page.ids, rec.ID)
			page.parents = append(page.parents, rec.Parent)
			if enc == nil {
				keep := new(transform.Record)
				*keep = *rec
				page.recs = append(page.recs, keep)
				return nil
			}
			if cap(arena)-len(arena) < arenaBlock/16 {
				arena = make([]byte, 0, arenaBlock)
			}
			start := len(arena)
			var err error
			if arena, err = enc.Encode(arena, rec); err != nil {
				return err
			}
			page.encs = append(page.encs, arena[start:len(arena):len(arena)])
			return nil
		})
		if err != nil {
			return err
		}
		mu.Lock()
		pages = append(pages, page)
		mu.Unlock()
		return nil
	})
	st := r.snapshot()
	for _, p := range pages {
		st.Unparsable += p.unparsable
		if st.UnparsableKey == "" {
			st.UnparsableKey = p.unparsableKey
		}
	}
	if err != nil {
		return nil, st, err
	}
	held := joinHeld(pages)
	if err := held.addImplied(l, newEncoder); err != nil {
		return nil, st, err
	}
	if len(held.ids) == 0 && st.Items > 0 {
		// The filter left every item on the server: none has the layout's
		// node key.
		return nil, st, noNodes(table, st.Items, l, filter)
	}
	return held, st, nil
}

// noNodes is the error of a table that has items but none of them a node
// of the layout: the filter left every item on the server, or none read
// as a node.
func noNodes(table string, items int64, l layouts.Layout, filter *layouts.Filter) error {
	what := ""
	if filter != nil {
		what = filter.Text
	}
	return fmt.Errorf("%w: table %s has %d items, but none is a node of the %s layout (%s); %s",
		layouts.ErrItem, table, items, l.Name(), what, models.FitHint(l))
}

// pageNodes reads a page of a table's items as nodes of l, handing each
// to each (the record is only valid during the call). A table model's
// item that does not read back is counted and named (the first one's key),
// not a reason to stop; any other item that does not read is the error.
func pageNodes(table string, l layouts.Layout, items []layouts.Item, each func(rec *transform.Record) error) (unparsable int64, unparsableKey string, err error) {
	spec := l.Table()
	// One record for the page: each does not keep it, and a record a loop
	// iteration would allocate.
	var rec transform.Record
	for _, item := range items {
		var ok bool
		rec, ok, err = l.Node(item)
		if err != nil {
			if models.CheckItem(l, item) != nil {
				unparsable++
				if unparsableKey == "" {
					unparsableKey = ddb.KeyString(item, spec.KeyNames()...)
				}
				continue
			}
			return unparsable, unparsableKey, itemError(table, spec, item, l, err)
		}
		if !ok {
			continue
		}
		if err := each(&rec); err != nil {
			return unparsable, unparsableKey, err
		}
	}
	return unparsable, unparsableKey, nil
}

// itemError says which item of which table does not fit the layout, and
// what to check.
func itemError(where string, spec layouts.TableSpec, item layouts.Item, l layouts.Layout, err error) error {
	return fmt.Errorf("exporter: %s: item %s: %w (%s)",
		where, ddb.KeyString(item, spec.KeyNames()...), err, models.FitHint(l))
}
