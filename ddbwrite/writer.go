package ddbwrite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"golang.org/x/sync/errgroup"

	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// BatchWriter is the part of the DynamoDB client the writer uses;
// *dynamodb.Client satisfies it.
type BatchWriter interface {
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

var _ BatchWriter = (*dynamodb.Client)(nil)

// DynamoDB's BatchWriteItem limits.
const (
	MaxBatchItems = 25
	MaxBatchBytes = 16 << 20
)

// Errors of the writer. Each is wrapped with the details; test with errors.Is.
var (
	// ErrRetriesExhausted marks a batch that kept failing with retryable
	// errors past WriterOptions.MaxRetries. It also matches ddb.ErrService.
	ErrRetriesExhausted = errors.New("ddbwrite: retries exhausted")
	// ErrItemRejected marks an item DynamoDB refused as invalid while no
	// dead-letter sink was given.
	ErrItemRejected = errors.New("ddbwrite: item rejected by DynamoDB")
	// ErrTooManyRejected marks a run stopped because more items were
	// rejected than WriterOptions.MaxDeadLetters allows: the table and the
	// items probably do not match at all.
	ErrTooManyRejected = errors.New("ddbwrite: too many items rejected by DynamoDB")
	// ErrWriterClosed is returned by Write after Close.
	ErrWriterClosed = errors.New("ddbwrite: writer closed")
	// ErrBarrierRefused ends a Settle that found items dead-lettered: the
	// operations that were to follow the barrier must not be sent (a
	// refresh's deletes, when one of its puts is not in the table).
	ErrBarrierRefused = errors.New("ddbwrite: writes before the barrier were refused")
)

// WriterOptions configure a DDBWriter. The zero value works: 4 workers, no
// rate cap, 10 retries.
type WriterOptions struct {
	// Concurrency is the number of BatchWriteItem calls in flight (4).
	Concurrency int
	// MaxWCU caps the write rate in WCU per second; 0 means no cap. Either
	// way the rate backs off when DynamoDB pushes back.
	MaxWCU float64
	// Limiter, when set, is the rate limiter to share with the writers
	// before and after this one (one made with MaxWCU and Concurrency), so
	// that a series of short writers keeps to one rate and what DynamoDB's
	// pushback taught it; nil makes a new one.
	Limiter *ddb.WriteLimiter
	// MaxRetries is how many times in a row a batch may fail without any of
	// its items getting written before the run ends with ErrRetriesExhausted
	// (10).
	MaxRetries int
	// BaseBackoff and MaxBackoff bound the full-jitter exponential backoff
	// between retries (50 ms and 5 s).
	BaseBackoff, MaxBackoff time.Duration
	// RequestTimeout bounds one BatchWriteItem call; a call that times out
	// is retried (30 s).
	RequestTimeout time.Duration
	// Buffer is how many full batches may wait for a worker (Concurrency).
	Buffer int
	// Window bounds the items written or in flight past the watermark,
	// and so what a run that crashes redoes: Write blocks while it is
	// reached, which can only happen while a batch is being retried
	// (2 × (Concurrency + Buffer + 1) × 25; at least 50). Items held back
	// for a key over its partition's rate do not fill it: they move to
	// the held spool (see HeldSpool).
	Window int
	// HeldSpool is the file the items held back for a hot key move to
	// when they would fill the window (see heldSpool): "" for a temporary
	// file. A run that resumes passes the one of the run it goes on from
	// (Run passes the checkpoint's PATH.held): the items it holds below
	// StartSeq are written first. It is removed once all of it is
	// written.
	HeldSpool string
	// HeldRun identifies the run the held spool belongs to (the
	// checkpoint's fingerprint): a spool of another run is refused.
	HeldRun string
	// Spread is how many items the writer may keep back to spread its
	// batches over partition keys (Window / 2): each batch takes, oldest
	// first, items whose partition key values (the table's and every
	// index's) no item of the batch has yet, then fills up with the oldest.
	// Consecutive calls then hit many keys, as DynamoDB's loading guidance
	// asks, instead of a tree's one TreeId or one parent's children. The
	// items kept back are the ones already counted in Window: no copy is
	// made. Negative writes in input order.
	Spread int
	// ConsumedCapacity asks DynamoDB to return the capacity each call
	// consumed, for Stats.ConsumedWCU (a --report wants it). Only ask when
	// it is used: DynamoDB Local gives about a quarter less throughput when
	// it has to compute it (benchmarks/LOAD.md).
	ConsumedCapacity bool
	// StartSeq is the first sequence number this run writes, the watermark
	// of the checkpoint it resumes (0).
	StartSeq int64
	// DeadLetter receives the items DynamoDB rejects as invalid, one
	// {"Item":{...}} DynamoDB JSON line each, so that the file can be fixed
	// and imported again. Without it a rejected item ends the run with
	// ErrItemRejected. Writes to it are serialized.
	DeadLetter io.Writer
	// OnDeadLetter, when set, is told the reason of each dead-lettered item.
	// It is called from the writer's workers, one call at a time.
	OnDeadLetter func(seq int64, item layouts.Item, reason error)
	// MaxDeadLetters stops the run with ErrTooManyRejected once more items
	// than this were dead-lettered (1000); negative means no limit.
	MaxDeadLetters int
	// OnAck is called with the new watermark W whenever it advances: every
	// item with a sequence number below W is written, dead-lettered, or in
	// the held spool (see HeldSpool), synced to disk first. It
	// is called from one goroutine at a time, with increasing values, and
	// a last time by Close. An error from it (a checkpoint that cannot be
	// saved) ends the run.
	OnAck func(watermark int64) error
	// OnSend, when set, is called before each BatchWriteItem call with one
	// past the highest sequence number in its batch (items of the held
	// spool aside: their records say they were sent), from the workers,
	// concurrently: after a crash, the items from the watermark up to the
	// highest such value are all that the run may have written past it,
	// with the spooled ones marked sent.
	OnSend func(next int64)
	// OnProgress is called every ProgressInterval (1 s) and once by Close,
	// from one goroutine at a time.
	OnProgress       func(Progress)
	ProgressInterval time.Duration
	// Trace, when set, is told of the rate limiter's decisions (each cut:
	// what it measured, the limit it set), of the hot keys' and of the held
	// spool's, for tests and benchmarks. It is called from several
	// goroutines at once.
	Trace func(format string, args ...any)
}

func (o WriterOptions) withDefaults() WriterOptions {
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.MaxRetries <= 0 {
		o.MaxRetries = 10
	}
	if o.BaseBackoff <= 0 {
		o.BaseBackoff = 50 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Second
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 30 * time.Second
	}
	if o.Buffer <= 0 {
		o.Buffer = o.Concurrency
	}
	if o.Window <= 0 {
		o.Window = 2 * (o.Concurrency + o.Buffer + 1) * MaxBatchItems
	}
	o.Window = max(o.Window, 2*MaxBatchItems)
	switch {
	case o.Spread < 0:
		o.Spread = MaxBatchItems
	case o.Spread == 0:
		o.Spread = o.Window / 2
	}
	o.Spread = max(MaxBatchItems, min(o.Spread, o.Window/2))
	if o.MaxDeadLetters == 0 {
		o.MaxDeadLetters = 1000
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = time.Second
	}
	return o
}

// Progress is a snapshot of a running writer, for a progress bar.
type Progress struct {
	Items        int64   // items written
	DeadLettered int64   // items set aside
	Bytes        int64   // their DynamoDB size
	WCU          int64   // the WCU they cost, as computed
	ConsumedWCU  float64 // the WCU DynamoDB reported
	RateLimit    float64 // current limit in WCU/s; 0 while unlimited
	Throttles    int64   // throttle responses so far
	Watermark    int64   // every item below it is acknowledged
	// Held is how many acknowledged items wait in the held spool for
	// their key (written ones are in Items).
	Held    int64
	Elapsed time.Duration // since the writer was created
}

// Stats is what a writer did, for the summary and --report.
type Stats struct {
	Items        int64   `json:"items"`        // items written
	Bytes        int64   `json:"bytes"`        // their DynamoDB size
	ConsumedWCU  float64 `json:"consumed_wcu"` // as DynamoDB reported it
	ComputedWCU  int64   `json:"computed_wcu"` // as treeport counts it (SPEC §5)
	Requests     int64   `json:"requests"`     // BatchWriteItem calls
	Throttles    int64   `json:"throttle_events"`
	Retries      int64   `json:"retries"`
	ServerErrors int64   `json:"server_errors"` // 5xx responses
	NetErrors    int64   `json:"network_errors"`
	Unprocessed  int64   `json:"unprocessed_items"` // items DynamoDB handed back
	// KeyThrottles counts the throttles and hand-backs read as one
	// partition key's (see hotKeys): they slowed that key, not the run.
	KeyThrottles int64 `json:"key_throttles,omitempty"`
	DeadLettered int64 `json:"dead_lettered"`
	// Spooled counts the items held for a hot key that moved to the held
	// spool; Replayed the ones an earlier run had spooled that this one
	// wrote (they are in Items). Held is how many were not written when
	// the run ended: 0 unless it failed, or Run was interrupted with a
	// checkpoint (the spool keeps them for the run that resumes).
	Spooled  int64 `json:"spooled_items,omitempty"`
	Replayed int64 `json:"replayed_items,omitempty"`
	Held     int64 `json:"held_items,omitempty"`
	// DeadLetterReasons counts the dead-lettered items by reason.
	DeadLetterReasons map[string]int64 `json:"dead_letter_reasons,omitempty"`
	// MaxWCU is the cap (0: none); MinRateWCU the lowest the limiter went
	// (0: it never had to limit).
	MaxWCU     float64       `json:"max_wcu,omitempty"`
	MinRateWCU float64       `json:"min_rate_wcu,omitempty"`
	Watermark  int64         `json:"watermark"`
	Duration   time.Duration `json:"-"`
}

// MarshalJSON writes the stats with the duration in seconds.
func (s Stats) MarshalJSON() ([]byte, error) {
	type plain Stats
	return json.Marshal(struct {
		plain
		DurationSeconds float64 `json:"duration_seconds"`
		WCUPerSecond    float64 `json:"wcu_per_second"`
	}{plain(s), math.Round(s.Duration.Seconds()*1000) / 1000, s.rate()})
}

func (s Stats) rate() float64 {
	if s.Duration <= 0 {
		return 0
	}
	return math.Round(float64(s.ComputedWCU)/s.Duration.Seconds()*10) / 10
}

// DDBWriter writes items to one table with BatchWriteItem, several batches
// at a time, under one adaptive rate limit, and never loses one: every item
// is written, set aside in the dead-letter sink, or still unacknowledged
// when the run ends with an error.
//
// Progress is acknowledged as a watermark W (see WriterOptions.OnAck):
// every item numbered below W is done or in the held spool, and at most
// WriterOptions.Window items past it were handed to the writer; with the
// spooled items in memory (at most Window / 4, the only ones that can be
// in flight), that bounds what a rerun after a crash writes again. Puts and
// deletes are idempotent, so redoing them is safe.
//
// Write and Delete are called from one goroutine; Close ends the run. The
// callbacks report progress while it runs.
type DDBWriter struct {
	client BatchWriter
	table  string
	spec   layouts.TableSpec
	opts   WriterOptions
	lim    *ddb.WriteLimiter
	start  time.Time

	// Producer side, owned by the goroutine calling Write.
	pend    spreader
	lastSeq int64
	closed  bool
	result  Stats
	err     error

	batches chan *batch
	ctx     context.Context // the workers'; canceled by a failure or by Close
	cancel  context.CancelCauseFunc
	group   *errgroup.Group
	gctx    context.Context

	acks acker
	// firstDead is the lowest sequence number dead-lettered (MaxInt64:
	// none), where a run stopped by Settle must resume; firstDeadText its
	// key and DynamoDB's reason (under dlMu).
	firstDead     atomic.Int64
	firstDeadText string

	dlMu    sync.Mutex
	reasons map[string]int64

	n struct {
		items, bytes, wcu, requests, throttles, retries, server, net, unprocessed, dead atomic.Int64
		keyThrottles                                                                    atomic.Int64
		consumedMilli                                                                   atomic.Int64
	}

	bg     sync.WaitGroup
	bgStop chan struct{}

	// The run's first calls go a few at a time (see startGate).
	gate startGate
	// Partitions DynamoDB throttled one by one, paced apart (see hotKeys).
	hot hotKeys
	// Where the held items go when they would fill the window.
	spool    *heldSpool
	replayed atomic.Int64 // spooled items of an earlier run written
	// leaveHeld and the spool's closing, one at a time.
	leaveMu     sync.Mutex
	spoolClosed bool
}

// request is one item on its way, with what it costs.
type request struct {
	seqs  []int64 // usually one; more when a later write of the key replaced it
	key   string
	wr    types.WriteRequest
	item  layouts.Item // the item, or the key of a delete
	size  int
	wcu   int
	unit  int      // what it costs each partition it lands in
	parts []string // those partitions, once asked for (see hotKeys.parts)
	// spooled is 1 + the offset of its held spool record, 0 when it is not
	// spooled: its seqs are acknowledged already, and its record is marked
	// done once it is written.
	spooled int64
	sent    bool // it went in a call at least once
}

type batch struct {
	reqs []*request
}

// spreader holds the items written but not yet batched, in input order, at
// most WriterOptions.Spread of them, and makes batches of them.
type spreader struct {
	reqs   []*request
	byKey  map[string]*request
	inPart map[string]int // items kept back, by partition (when spreading)
	used   map[string]int // items of the batch being made, by partition
	taken  []bool
}

// add keeps r back; with spread, its partitions are counted.
func (s *spreader) add(r *request, spread bool, h *hotKeys) {
	if s.byKey == nil {
		s.byKey = map[string]*request{}
		s.inPart = map[string]int{}
		s.used = map[string]int{}
	}
	s.reqs = append(s.reqs, r)
	s.byKey[r.key] = r
	if spread {
		s.count(h.parts(r), 1)
	}
}

// count adds d to the count of each of parts.
func (s *spreader) count(parts []string, d int) {
	for _, p := range parts {
		if s.inPart[p] += d; s.inPart[p] <= 0 {
			delete(s.inPart, p)
		}
	}
}

// take removes a batch: with spread, first the items, oldest first, each of
// whose partitions has less than its share of the batch yet (its share of
// the items kept back, at least one item: a partition every item has, as a
// single tree's TreeId, does not hold anything back), then the oldest of
// the rest; without, the oldest items. A batch keeps under MaxBatchBytes.
func (s *spreader) take(spread bool, h *hotKeys) *batch {
	n := min(len(s.reqs), MaxBatchItems)
	b := &batch{reqs: make([]*request, 0, n)}
	bytes := 0
	s.taken = append(s.taken[:0], make([]bool, len(s.reqs))...)
	pick := func(i int) bool {
		r := s.reqs[i]
		if len(b.reqs) > 0 && bytes+r.size > MaxBatchBytes {
			return false
		}
		b.reqs = append(b.reqs, r)
		bytes += r.size
		s.taken[i] = true
		return true
	}
	if spread && len(s.reqs) > MaxBatchItems {
		clear(s.used)
		total := len(s.reqs)
	scan:
		for i, r := range s.reqs {
			if len(b.reqs) == MaxBatchItems {
				break
			}
			parts := h.parts(r)
			for _, p := range parts {
				if share := (MaxBatchItems*s.inPart[p] + total - 1) / total; s.used[p] >= share {
					continue scan
				}
			}
			if pick(i) {
				for _, p := range parts {
					s.used[p]++
				}
			}
		}
	}
	for i := range s.reqs {
		if len(b.reqs) == MaxBatchItems {
			break
		}
		if !s.taken[i] && !pick(i) {
			break
		}
	}
	kept := s.reqs[:0]
	for i, r := range s.reqs {
		if s.taken[i] {
			delete(s.byKey, r.key)
			if spread {
				s.count(h.parts(r), -1)
			}
		} else {
			kept = append(kept, r)
		}
	}
	clear(s.reqs[len(kept):])
	s.reqs = kept
	return b
}

// putBack returns a batch that could not be handed over, before the rest.
func (s *spreader) putBack(b *batch) {
	for _, r := range b.reqs {
		s.byKey[r.key] = r
	}
	s.reqs = append(b.reqs, s.reqs...)
	for _, r := range b.reqs {
		s.count(r.parts, 1) // nil unless spreading
	}
}

// NewDDBWriter starts a writer for table, whose keys and indexes are spec's.
// The client should not retry on its own (see NewClient); the writer asks
// each call to make one attempt.
func NewDDBWriter(client BatchWriter, table string, spec layouts.TableSpec, opts WriterOptions) *DDBWriter {
	opts = opts.withDefaults()
	w := &DDBWriter{
		client: client, table: table, spec: spec, opts: opts,
		lim:     opts.Limiter,
		start:   time.Now(),
		lastSeq: opts.StartSeq - 1,
		batches: make(chan *batch, opts.Buffer),
		reasons: map[string]int64{},
		bgStop:  make(chan struct{}),
	}
	if w.lim == nil {
		w.lim = ddb.NewWriteLimiter(opts.MaxWCU, opts.Concurrency)
	}
	w.gate.init(opts.Concurrency)
	w.hot.init(spec, opts.Trace)
	w.lim.Trace = opts.Trace
	w.acks.init(opts.StartSeq)
	w.firstDead.Store(math.MaxInt64)
	w.ctx, w.cancel = context.WithCancelCause(context.Background())
	w.group, w.gctx = errgroup.WithContext(w.ctx)
	var err error
	if w.spool, err = openHeldSpool(opts.HeldSpool, opts.HeldRun, opts.StartSeq, opts.Window/4); err != nil {
		w.spool = &heldSpool{}
		w.cancel(err) // Write and Close return it
	}
	for range opts.Concurrency {
		w.group.Go(w.work)
	}
	if opts.OnAck != nil {
		w.bg.Add(1)
		go w.ackLoop()
	}
	if opts.OnProgress != nil {
		w.bg.Add(1)
		go w.progressLoop()
	}
	return w
}

// Write queues a put of item, numbered seq. Sequence numbers must increase
// from WriterOptions.StartSeq; gaps are allowed. It blocks while the pipeline
// is full, and returns the run's error once a worker failed, or ctx's error.
// The writer keeps item: the caller must not change it afterwards. Two
// writes of one key that land in the same batch become one put of the later
// item; writes of one key far apart may reach DynamoDB in either order.
func (w *DDBWriter) Write(ctx context.Context, seq int64, item layouts.Item) error {
	return w.add(ctx, seq, item, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
}

// Delete queues a delete of the item with the given key attributes,
// numbered seq like a Write. Batches in flight are not ordered with each
// other, so a Write and a Delete of the same key in one run may land in
// either order; refresh plans and edits never hold a key twice. It costs one WCU per index as well as the table
// write, as DynamoDB charges by the size of the deleted item, unknown here.
func (w *DDBWriter) Delete(ctx context.Context, seq int64, key layouts.Item) error {
	return w.add(ctx, seq, key, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: key}})
}

func (w *DDBWriter) add(ctx context.Context, seq int64, item layouts.Item, wr types.WriteRequest) error {
	if w.closed {
		return ErrWriterClosed
	}
	if err := w.failure(); err != nil {
		return err
	}
	if seq <= w.lastSeq {
		return fmt.Errorf("ddbwrite: write of seq %d after seq %d: sequence numbers must increase from %d", seq, w.lastSeq, w.opts.StartSeq)
	}
	r := w.request(seq, item, wr)
	// Keep the distance to the watermark bounded: with a batch stuck in
	// retries, the others would otherwise run ahead without limit, and a
	// crash would make the next run redo all of it. Items held for a hot
	// key move to the held spool, so that they do not stop the other
	// keys (a batch of them at a time while other items can go); items
	// kept back to spread the batches go next: the oldest of them holds
	// the watermark.
	//
	// Every item kept back goes, in a short batch if need be: while the
	// window is full, Write takes nothing more, and the watermark may be
	// held for seconds (by a hot key's item paced at its partition's
	// rate, or a batch in retries); the items kept back would wait all
	// that time for one call saved.
	//
	// The channels are taken before the state they signal changes of is
	// looked at: a watermark that moves in between wakes the loop.
	for {
		advanced, changed := w.acks.advanced(), w.hot.changed()
		if w.acks.ahead() < w.opts.Window {
			break
		}
		if n, err := w.spill(len(w.pend.reqs) > 0); err != nil {
			return err
		} else if n > 0 {
			continue
		}
		if len(w.pend.reqs) > 0 {
			if err := w.flush(ctx); err != nil {
				return err
			}
			continue
		}
		select {
		case <-advanced:
		case <-changed: // items held now can move to the spool
		case <-ctx.Done():
			return ctx.Err()
		case <-w.gctx.Done():
			return w.failure()
		}
	}
	w.lastSeq = seq
	w.acks.add(seq)
	if old := w.pend.byKey[r.key]; old != nil {
		// The same key twice in one batch is refused by DynamoDB; the later
		// write wins, as it would have had they gone one after the other.
		spread := w.opts.Spread > MaxBatchItems
		if spread {
			w.pend.count(old.parts, -1)
		}
		old.seqs = append(old.seqs, seq)
		old.wr, old.item, old.size, old.wcu, old.unit, old.parts = r.wr, r.item, r.size, r.wcu, r.unit, nil
		if spread {
			w.pend.count(w.hot.parts(old), 1)
		}
	} else {
		w.pend.add(r, w.opts.Spread > MaxBatchItems, &w.hot)
	}
	if len(w.pend.reqs) >= w.opts.Spread {
		return w.flush(ctx)
	}
	return nil
}

// Settle is a barrier: it sends every operation handed to the writer so
// far and waits until each one is written or dead-lettered, the items held
// back for a hot key and those of the held spool (an earlier run's too)
// included. What is written after it is sent after all of those: a
// refresh's deletes after its puts, so that no node is missing while a
// plan is applied. It returns the run's error if the run failed, ctx's
// error if ctx ended first (what was handed over goes on being written,
// as without Settle), and an error matching ErrBarrierRefused when an
// item of this run was dead-lettered: then nothing more may be written,
// and Close returns nil (the caller says why the run stopped; Run takes
// the refused items out of the dead-letter file and moves the checkpoint
// back to the first of them, so that the rerun puts them again). Call it
// from the goroutine that calls Write.
func (w *DDBWriter) Settle(ctx context.Context) error {
	if w.closed {
		return ErrWriterClosed
	}
	for len(w.pend.reqs) > 0 {
		if err := w.flush(ctx); err != nil {
			return err
		}
	}
	// The spool's records are done without moving the watermark (it
	// passed them when they were spooled): a short tick sees them go.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for w.acks.watermark() <= w.lastSeq || w.spool.left.Load() > 0 {
		select {
		case <-w.acks.advanced():
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		case <-w.gctx.Done():
			return w.failure()
		}
	}
	if err := w.failure(); err != nil {
		return err
	}
	if n := w.n.dead.Load(); n > 0 {
		w.dlMu.Lock()
		first := w.firstDeadText
		w.dlMu.Unlock()
		return fmt.Errorf("%w: DynamoDB refused %d of them, the first operation %d (%s)",
			ErrBarrierRefused, n, w.firstDead.Load(), first)
	}
	return nil
}

// FirstDeadLettered is the lowest sequence number of the items
// dead-lettered so far, and false when there is none.
func (w *DDBWriter) FirstDeadLettered() (int64, bool) {
	first := w.firstDead.Load()
	return first, first != math.MaxInt64
}

// request makes the request of a put or a delete.
func (w *DDBWriter) request(seq int64, item layouts.Item, wr types.WriteRequest) *request {
	r := &request{seqs: []int64{seq}, key: layouts.KeyOf(w.spec, item), wr: wr, item: item}
	if wr.PutRequest != nil {
		r.size = transform.ItemSize(item)
		r.unit = transform.WCU(r.size)
		r.wcu = r.unit
		for _, ix := range w.spec.Indexes {
			r.wcu += layouts.IndexUnits(w.spec, ix, item, r.size)
		}
	} else {
		r.unit = 1
		r.wcu = 1 + len(w.spec.Indexes)
	}
	return r
}

// spill moves the items held for their keys that are not spooled yet to
// the held spool, and acknowledges them once it holds them; a few stay in
// memory, held as they were. With batch, it moves nothing unless there
// are a batch's worth of them. It returns how many moved.
func (w *DDBWriter) spill(batch bool) (int, error) {
	held := w.hot.takeLive(batch)
	if len(held) == 0 {
		return 0, nil
	}
	reqs := make([]*request, len(held))
	for i, hr := range held {
		reqs[i] = hr.r
	}
	kept, err := w.spool.put(reqs)
	if err != nil {
		w.hot.hold(held) // they wait in the window, as they would without a spool
		w.cancel(err)
		return 0, err
	}
	w.hot.hold(held[:kept])
	for _, r := range reqs {
		w.acks.ack(r.seqs)
	}
	if w.opts.Trace != nil {
		w.opts.Trace("%d held items spooled (%d stay in memory)", len(reqs), kept)
	}
	return len(reqs), nil
}

// readBack holds the spooled items the held spool gives back.
func (w *DDBWriter) readBack() error {
	reqs, err := w.spool.readBack(func(seq int64, item map[string]types.AttributeValue, put bool) *request {
		if put {
			return w.request(seq, item, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
		}
		return w.request(seq, item, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: item}})
	})
	w.hot.hold(heldAt(reqs, time.Now()))
	return err
}

// flush hands a batch of the items kept back to the workers. On failure
// the items stay kept back, unacknowledged.
func (w *DDBWriter) flush(ctx context.Context) error {
	if len(w.pend.reqs) == 0 {
		return nil
	}
	b := w.pend.take(w.opts.Spread > MaxBatchItems, &w.hot)
	select {
	case w.batches <- b:
		return nil
	case <-ctx.Done():
		w.pend.putBack(b)
		return ctx.Err()
	case <-w.gctx.Done():
		w.pend.putBack(b)
		return w.failure()
	}
}

// failure is the error that stopped the workers, or nil.
func (w *DDBWriter) failure() error {
	if w.gctx.Err() == nil {
		return nil
	}
	if err := context.Cause(w.gctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("ddbwrite: writer stopped: %w", context.Cause(w.gctx))
}

// leaveHeld makes the writer end without writing the items in the held
// spool, which the spool keeps for the run that resumes, and moves there
// the items held now: a run interrupted with a checkpoint then ends once
// its batches in flight are, not at its hot keys' pace. It is safe to call
// from another goroutine while Write or Close run; after Close it does
// nothing.
func (w *DDBWriter) leaveHeld() error {
	w.leaveMu.Lock()
	defer w.leaveMu.Unlock()
	if w.spoolClosed {
		return nil // too late: everything is written
	}
	w.spool.leave()
	w.hot.leaveSpooled()
	_, err := w.spill(false)
	return err
}

// Close sends what is queued, waits for every batch in flight and returns
// the stats and the run's first error. If ctx ends first, the batches in
// flight are abandoned (their items stay unacknowledged) and ctx's error is
// returned. The watermark in the stats, also passed to OnAck a last time,
// is exact either way. Calling Close again returns the same.
func (w *DDBWriter) Close(ctx context.Context) (Stats, error) {
	if w.closed {
		return w.result, w.err
	}
	w.closed = true
	var err error
	for len(w.pend.reqs) > 0 && err == nil {
		err = w.flush(ctx)
	}
	close(w.batches)
	done := make(chan error, 1)
	go func() { done <- w.group.Wait() }()
	var werr error
	select {
	case werr = <-done:
		if werr == nil {
			// errgroup cancels gctx once Wait returns, so only a cause set
			// on the parent context (OnAck failed) is a failure here.
			if cause := context.Cause(w.ctx); cause != nil {
				werr = cause
			}
		}
	case <-ctx.Done():
		w.cancel(ctx.Err())
		<-done
		werr = ctx.Err()
	}
	w.cancel(context.Canceled)
	if err == nil {
		err = werr
	}
	close(w.bgStop)
	w.bg.Wait()
	if w.opts.OnAck != nil {
		if aerr := w.notifyAck(); aerr != nil && err == nil {
			err = aerr
		}
	}
	w.leaveMu.Lock()
	w.spool.close()
	w.spoolClosed = true
	w.leaveMu.Unlock()
	w.result = w.stats()
	if w.opts.OnProgress != nil {
		w.opts.OnProgress(w.progress())
	}
	w.err = err
	return w.result, err
}

func (w *DDBWriter) stats() Stats {
	s := Stats{
		Items:        w.n.items.Load(),
		Bytes:        w.n.bytes.Load(),
		ConsumedWCU:  float64(w.n.consumedMilli.Load()) / 1000,
		ComputedWCU:  w.n.wcu.Load(),
		Requests:     w.n.requests.Load(),
		Throttles:    w.n.throttles.Load(),
		Retries:      w.n.retries.Load(),
		ServerErrors: w.n.server.Load(),
		NetErrors:    w.n.net.Load(),
		Unprocessed:  w.n.unprocessed.Load(),
		KeyThrottles: w.n.keyThrottles.Load(),
		DeadLettered: w.n.dead.Load(),
		Spooled:      w.spool.spooled.Load(),
		Replayed:     w.replayed.Load(),
		Held:         w.spool.left.Load(),
		Watermark:    w.acks.watermark(),
		Duration:     time.Since(w.start),
	}
	if w.opts.MaxWCU > 0 {
		s.MaxWCU = w.opts.MaxWCU
	}
	if m := w.lim.MinLimit(); !math.IsInf(m, 1) {
		s.MinRateWCU = math.Round(m*10) / 10
	}
	w.dlMu.Lock()
	if len(w.reasons) > 0 {
		s.DeadLetterReasons = make(map[string]int64, len(w.reasons))
		for k, v := range w.reasons {
			s.DeadLetterReasons[k] = v
		}
	}
	w.dlMu.Unlock()
	return s
}

func (w *DDBWriter) progress() Progress {
	p := Progress{
		Items:        w.n.items.Load(),
		DeadLettered: w.n.dead.Load(),
		Bytes:        w.n.bytes.Load(),
		WCU:          w.n.wcu.Load(),
		ConsumedWCU:  float64(w.n.consumedMilli.Load()) / 1000,
		Throttles:    w.n.throttles.Load(),
		Watermark:    w.acks.watermark(),
		Held:         w.spool.left.Load(),
		Elapsed:      time.Since(w.start),
	}
	if l := w.lim.Limit(); !math.IsInf(l, 1) {
		p.RateLimit = l
	}
	return p
}

func (w *DDBWriter) progressLoop() {
	defer w.bg.Done()
	t := time.NewTicker(w.opts.ProgressInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			w.opts.OnProgress(w.progress())
		case <-w.bgStop:
			return
		}
	}
}

func (w *DDBWriter) ackLoop() {
	defer w.bg.Done()
	for {
		select {
		case <-w.acks.changed:
			if err := w.notifyAck(); err != nil {
				w.cancel(err)
				return
			}
		case <-w.bgStop:
			return
		}
	}
}

// notifyAck passes the watermark to OnAck if it moved. Only one goroutine
// calls it at a time: ackLoop, then Close once ackLoop has stopped.
func (w *DDBWriter) notifyAck() error {
	wm := w.acks.watermark()
	if wm <= w.acks.reported {
		return nil
	}
	// The spooled items below wm were appended before they were
	// acknowledged: synced now, they are on disk before wm is saved.
	if err := w.spool.sync(); err != nil {
		return err
	}
	if err := w.opts.OnAck(wm); err != nil {
		return fmt.Errorf("ddbwrite: saving progress at item %d: %w", wm, err)
	}
	w.acks.reported = wm
	return nil
}

// work is one worker: it writes batches, and the requests held back for
// their hot partitions when their time comes, until there are no more.
func (w *DDBWriter) work() error {
	batches := w.batches
	for {
		if err := w.readBack(); err != nil {
			return err
		}
		reqs, next, more := w.hot.due(MaxBatchItems)
		if len(reqs) == 0 {
			if batches == nil && next.IsZero() {
				return nil
			}
			var timer *time.Timer
			var ring <-chan time.Time
			if !next.IsZero() {
				timer = time.NewTimer(time.Until(next))
				ring = timer.C
			}
			select {
			case b, ok := <-batches:
				if !ok {
					batches = nil
				} else {
					reqs = b.reqs
				}
			case <-ring:
			case <-more:
			case <-w.gctx.Done():
			}
			if timer != nil {
				timer.Stop()
			}
			if w.gctx.Err() != nil {
				return nil // the cause is already recorded
			}
			if len(reqs) == 0 {
				continue
			}
		}
		if err := w.gctx.Err(); err != nil {
			return nil // the cause is already recorded
		}
		if err := w.write(w.gctx, reqs); err != nil {
			if w.gctx.Err() != nil && errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
	}
}

// write writes reqs, retrying what is not written, until all are written or
// dead-lettered, or it gives up.
func (w *DDBWriter) write(ctx context.Context, reqs []*request) error {
	rt := retries{backoff: ddb.Backoff{Base: w.opts.BaseBackoff, Max: w.opts.MaxBackoff}}
	for attempt := 0; len(reqs) > 0; attempt++ {
		if attempt > 0 {
			w.n.retries.Add(1)
			if err := rt.backoff.Sleep(ctx, max(rt.fails, 1)); err != nil {
				return context.Cause(ctx)
			}
		}
		// Items of a hot partition that has no room now wait for it, with
		// the worker that takes them when it has; the others go on.
		if ready, held := w.hot.split(reqs); len(held) > 0 {
			if reqs = ready; len(reqs) == 0 {
				return nil
			}
		}
		cost := 0
		for _, r := range reqs {
			cost += r.wcu
		}
		// The start gate comes before the limiter, so that the calls it
		// held back are paced by what the first ones taught the limiter.
		if err := w.gate.enter(ctx); err != nil {
			return err
		}
		if err := w.lim.Wait(ctx, cost); err != nil {
			w.gate.leave(false)
			return err
		}
		out, sent, err := w.call(ctx, reqs)
		if err != nil {
			if stop, err := w.callFailed(ctx, reqs, err, sent, &rt); stop {
				return err
			}
			continue
		}
		w.n.consumedMilli.Add(int64(math.Round(ddb.Capacity(nil, out.ConsumedCapacity) * 1000)))
		next, stop, err := w.handedBack(reqs, cost, out.UnprocessedItems[w.table], sent, &rt)
		if stop {
			return err
		}
		reqs = next
	}
	return nil
}

// retries is where one batch's retries stand: the failed attempts in a
// row, and the backoff between them.
type retries struct {
	fails   int
	backoff ddb.Backoff
}

// call sends reqs in one BatchWriteItem call, and says when it was sent.
func (w *DDBWriter) call(ctx context.Context, reqs []*request) (*dynamodb.BatchWriteItemOutput, time.Time, error) {
	in := &dynamodb.BatchWriteItemInput{
		RequestItems: map[string][]types.WriteRequest{w.table: writeRequests(reqs)},
	}
	if w.opts.ConsumedCapacity {
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	}
	actx, cancel := context.WithTimeout(ctx, w.opts.RequestTimeout)
	// A spooled item's record says it may be written, for the redo
	// bound of a run that resumes; it is below the watermark already.
	var hi int64
	for _, r := range reqs {
		if r.spooled != 0 {
			if !r.sent {
				w.spool.mark(r, heldSent)
			}
		} else {
			for _, q := range r.seqs {
				hi = max(hi, q+1)
			}
		}
		r.sent = true
	}
	if w.opts.OnSend != nil && hi > 0 {
		w.opts.OnSend(hi)
	}
	sent := time.Now()
	out, err := w.client.BatchWriteItem(actx, in, ddb.NoSDKRetry)
	cancel()
	w.gate.leave(err == nil && len(out.UnprocessedItems[w.table]) == 0)
	w.n.requests.Add(1)
	return out, sent, err
}

// callFailed takes a call of reqs that failed with err: it says to stop,
// with the error that ends the batch (nil: its items were held for their
// hot keys, or dead-lettered), or to retry.
func (w *DDBWriter) callFailed(ctx context.Context, reqs []*request, err error, sent time.Time, rt *retries) (stop bool, _ error) {
	switch kind, code := ddb.Classify(err); {
	case ctx.Err() != nil:
		return true, context.Cause(ctx)
	case kind == ddb.Validation:
		return true, w.split(ctx, reqs, err)
	case kind == ddb.Other:
		return true, &ddb.ServiceError{Pkg: "importer", Op: "BatchWriteItem", Code: code, Err: err}
	default:
		// Only a throttle speaks of capacity: a server error or a
		// failed connection is retried with backoff, and the shared
		// rate stays where it is.
		switch kind {
		case ddb.Throttle:
			w.n.throttles.Add(1)
			w.gate.open()
			// A throttle whose reasons all name partition key values
			// slows those keys' writes; any other slows them all.
			if parts := w.hot.fromReasons(reqs, ddb.ThrottleReasons(err)); parts != nil {
				w.n.keyThrottles.Add(1)
				hot := w.hot.allHot(reqs)
				w.hot.throttled(parts, sent)
				if hot {
					// A call of hot keys' items only: they back off
					// held, and the worker goes on with the others.
					w.n.retries.Add(1)
					w.hot.holdFor(reqs, rt.backoff.Delay(max(rt.fails, 1)))
					return true, nil
				}
			} else {
				w.lim.Throttled(sent)
			}
		case ddb.Server:
			w.n.server.Add(1)
		case ddb.Net:
			w.n.net.Add(1)
		}
		rt.fails++
		if rt.fails > w.opts.MaxRetries {
			return true, fmt.Errorf("ddbwrite: %w: %w after %d attempts of a batch of %d items (first key %s): %w",
				ddb.ErrService, ErrRetriesExhausted, rt.fails, len(reqs), ddb.KeyString(reqs[0].item, w.spec.KeyNames()...), err)
		}
		return false, nil
	}
}

// handedBack takes a call of reqs that DynamoDB answered, handing back
// unprocessed: it counts what was written, and returns the requests to
// retry, or says to stop, with the error that ends the batch (nil: all
// written, or what is left was held for its hot keys).
func (w *DDBWriter) handedBack(reqs []*request, cost int, unprocessed []types.WriteRequest, sent time.Time, rt *retries) (next []*request, stop bool, _ error) {
	left, err := w.unprocessed(reqs, unprocessed)
	if err != nil {
		return nil, true, err
	}
	if len(left) == 0 {
		w.done(reqs, cost)
		return nil, true, nil
	}
	written := make([]*request, 0, len(reqs)-len(left))
	wcost := 0
	for _, r := range reqs {
		if !left[r] {
			written = append(written, r)
			wcost += r.wcu
		}
	}
	w.done(written, wcost)
	w.n.unprocessed.Add(int64(len(left)))
	w.gate.open()
	var back []*request
	for _, r := range reqs {
		if left[r] {
			back = append(back, r)
		}
	}
	if parts := w.hot.fromUnprocessed(written, back); parts != nil {
		if len(parts) > 0 {
			w.n.keyThrottles.Add(1)
			w.hot.throttled(parts, sent)
			if w.hot.allHot(back) {
				// The items handed back for their keys back off held,
				// and the worker goes on with other keys' items.
				w.n.retries.Add(1)
				w.hot.holdFor(back, rt.backoff.Delay(1))
				return nil, true, nil
			}
		}
	} else {
		w.lim.Throttled(sent)
	}
	if len(written) > 0 {
		rt.fails = 0
	} else if rt.fails++; rt.fails > w.opts.MaxRetries {
		return nil, true, fmt.Errorf("ddbwrite: %w: %w: DynamoDB handed back all %d items of a batch %d times (first key %s)",
			ddb.ErrService, ErrRetriesExhausted, len(reqs), rt.fails, ddb.KeyString(reqs[0].item, w.spec.KeyNames()...))
	}
	next = make([]*request, 0, len(left))
	for _, r := range reqs {
		if left[r] {
			next = append(next, r)
		}
	}
	return next, false, nil
}

// startGate starts a run slowly: its first BatchWriteItem call goes alone,
// and every call answered in full lets one more go, until Concurrency calls
// are in flight or a capacity signal comes (the limiter then paces every
// call). A table already out of capacity then throttles a call or two, not
// Concurrency of them at once, and the limiter has its first signal before
// the rest are sent; a healthy table costs a few round trips.
type startGate struct {
	mu       sync.Mutex
	opened   atomic.Bool
	slots    chan struct{} // one token per call allowed in flight
	issued   int           // tokens put in slots so far
	capacity int
}

func (g *startGate) init(concurrency int) {
	g.capacity = max(concurrency, 1)
	g.slots = make(chan struct{}, g.capacity)
	g.slots <- struct{}{}
	g.issued = 1
	if g.capacity == 1 {
		g.opened.Store(true)
	}
}

// enter waits for a slot while the gate is closed. Every enter that returns
// nil is followed by one leave.
func (g *startGate) enter(ctx context.Context) error {
	if g.opened.Load() {
		return nil
	}
	select {
	case <-g.slots:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// leave gives the slot back, with one more if the call was answered in
// full.
func (g *startGate) leave(ok bool) {
	if g.opened.Load() {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.opened.Load() {
		return
	}
	g.slots <- struct{}{}
	if ok {
		g.grant(1)
	}
}

// open lets every call through from now on.
func (g *startGate) open() {
	if g.opened.Load() {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.grant(g.capacity)
}

// grant adds up to n tokens; the gate opens once all are out. g.mu is held.
func (g *startGate) grant(n int) {
	for ; n > 0 && g.issued < g.capacity; n-- {
		g.slots <- struct{}{}
		g.issued++
	}
	if g.issued == g.capacity {
		g.opened.Store(true)
	}
}

// unprocessed maps the requests DynamoDB handed back to the ones sent.
func (w *DDBWriter) unprocessed(sent []*request, back []types.WriteRequest) (map[*request]bool, error) {
	if len(back) == 0 {
		return nil, nil
	}
	byKey := make(map[string]*request, len(sent))
	for _, r := range sent {
		byKey[r.key] = r
	}
	left := make(map[*request]bool, len(back))
	for _, wr := range back {
		var item layouts.Item
		switch {
		case wr.PutRequest != nil:
			item = wr.PutRequest.Item
		case wr.DeleteRequest != nil:
			item = wr.DeleteRequest.Key
		}
		r := byKey[layouts.KeyOf(w.spec, item)]
		if r == nil {
			return nil, fmt.Errorf("ddbwrite: %w: BatchWriteItem handed back an unprocessed item that was not sent (key %s)", ddb.ErrService, ddb.KeyString(item, w.spec.KeyNames()...))
		}
		left[r] = true
	}
	return left, nil
}

// done acknowledges written requests.
func (w *DDBWriter) done(reqs []*request, cost int) {
	var bytes int64
	for _, r := range reqs {
		bytes += int64(r.size)
	}
	w.n.items.Add(int64(len(reqs)))
	w.n.bytes.Add(bytes)
	w.n.wcu.Add(int64(cost))
	w.lim.Success(cost)
	w.hot.success(reqs)
	for _, r := range reqs {
		w.ack(r)
	}
}

// ack acknowledges r, written or dead-lettered: its seqs, or its spooled
// record.
func (w *DDBWriter) ack(r *request) {
	if r.spooled == 0 {
		w.acks.ack(r.seqs)
		return
	}
	if r.seqs[0] < w.opts.StartSeq {
		w.replayed.Add(1)
	}
	w.spool.done(r)
}

// split writes the halves of a batch DynamoDB refused as a whole, down to
// the single items it refuses, which are dead-lettered. DynamoDB validates
// a whole batch before writing any of it, so nothing was written yet.
func (w *DDBWriter) split(ctx context.Context, reqs []*request, cause error) error {
	if len(reqs) == 1 {
		return w.deadLetter(reqs[0], cause)
	}
	mid := len(reqs) / 2
	if err := w.write(ctx, reqs[:mid]); err != nil {
		return err
	}
	return w.write(ctx, reqs[mid:])
}

func (w *DDBWriter) deadLetter(r *request, cause error) error {
	reason := cause.Error()
	var apiErr smithy.APIError
	if errors.As(cause, &apiErr) {
		reason = apiErr.ErrorCode() + ": " + apiErr.ErrorMessage()
	}
	seq := r.seqs[len(r.seqs)-1]
	if w.opts.DeadLetter == nil {
		return fmt.Errorf("%w: item %d (key %s): %s; pass --dead-letter FILE to set such items aside and go on",
			ErrItemRejected, seq, ddb.KeyString(r.item, w.spec.KeyNames()...), reason)
	}
	w.dlMu.Lock()
	defer w.dlMu.Unlock()
	if limit := w.opts.MaxDeadLetters; limit >= 0 && w.n.dead.Load() >= int64(limit) {
		return fmt.Errorf("%w: more than %d (last: item %d, key %s: %s); check that the table matches the layout",
			ErrTooManyRejected, limit, seq, ddb.KeyString(r.item, w.spec.KeyNames()...), reason)
	}
	if _, err := w.opts.DeadLetter.Write(ddbjson.AppendLine(nil, r.item)); err != nil {
		return fmt.Errorf("ddbwrite: writing the dead-letter file: %w", err)
	}
	w.n.dead.Add(1)
	if r.seqs[0] < w.firstDead.Load() { // dlMu is held: no other writer of it
		w.firstDead.Store(r.seqs[0])
		w.firstDeadText = fmt.Sprintf("key %s: %s", ddb.KeyString(r.item, w.spec.KeyNames()...), reason)
	}
	if k := reasonKey(reason); len(w.reasons) < 100 || w.reasons[k] > 0 {
		w.reasons[k]++
	}
	if w.opts.OnDeadLetter != nil {
		w.opts.OnDeadLetter(seq, r.item, errors.New(reason))
	}
	w.ack(r)
	return nil
}

func writeRequests(reqs []*request) []types.WriteRequest {
	out := make([]types.WriteRequest, len(reqs))
	for i, r := range reqs {
		out[i] = r.wr
	}
	return out
}

// acker tracks which sequence numbers are acknowledged and derives the
// watermark: the lowest one that is not, or one past the last added.
type acker struct {
	mu       sync.Mutex
	pending  []ackEntry // in seq order; pending[head:] are live
	head     int
	next     int64         // watermark when nothing is pending
	changed  chan struct{} // one signal for ackLoop
	adv      chan struct{} // closed, and replaced, when the watermark moves
	reported int64         // last value passed to OnAck; owned by notifyAck's caller
}

type ackEntry struct {
	seq  int64
	done bool
}

func (a *acker) init(start int64) {
	a.next = start
	a.reported = start
	a.changed = make(chan struct{}, 1)
	a.adv = make(chan struct{})
}

// ahead is the number of items added since the watermark, acknowledged
// or not.
func (a *acker) ahead() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pending) - a.head
}

// advanced returns a channel closed when the watermark next moves.
func (a *acker) advanced() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.adv
}

func (a *acker) add(seq int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.head > 1024 && a.head > len(a.pending)/2 {
		a.pending = append(a.pending[:0], a.pending[a.head:]...)
		a.head = 0
	}
	a.pending = append(a.pending, ackEntry{seq: seq})
}

func (a *acker) ack(seqs []int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	live := a.pending[a.head:]
	for _, s := range seqs {
		i := sort.Search(len(live), func(i int) bool { return live[i].seq >= s })
		if i < len(live) && live[i].seq == s {
			live[i].done = true
		}
	}
	moved := false
	for a.head < len(a.pending) && a.pending[a.head].done {
		a.next = a.pending[a.head].seq + 1
		a.head++
		moved = true
	}
	if moved {
		select {
		case a.changed <- struct{}{}:
		default:
		}
		close(a.adv)
		a.adv = make(chan struct{})
	}
}

func (a *acker) watermark() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.head < len(a.pending) {
		return a.pending[a.head].seq
	}
	return a.next
}

// reasonKey shortens a reason for the report's counts.
func reasonKey(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
