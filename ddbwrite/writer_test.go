package ddbwrite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/layouts"
)

// testSpec is a table like the path layout's: a partition key and one index
// that only items with a ParentId land in.
var testSpec = layouts.TableSpec{
	PK: layouts.KeyAttr{Name: "Id", Type: types.ScalarAttributeTypeS},
	Indexes: []layouts.IndexSpec{{
		Name: "ByParent",
		PK:   layouts.KeyAttr{Name: "ParentId", Type: types.ScalarAttributeTypeS},
		SK:   &layouts.KeyAttr{Name: "Id", Type: types.ScalarAttributeTypeS},
	}},
}

func testItem(i int) layouts.Item {
	it := layouts.Item{
		"Id": &types.AttributeValueMemberS{Value: fmt.Sprintf("n%05d", i)},
		"n":  &types.AttributeValueMemberN{Value: strconv.Itoa(i)},
	}
	if i%3 != 0 {
		it["ParentId"] = &types.AttributeValueMemberS{Value: fmt.Sprintf("n%05d", i/3)}
	}
	return it
}

func seqOf(it layouts.Item) int64 {
	n, _ := strconv.ParseInt(it["n"].(*types.AttributeValueMemberN).Value, 10, 64)
	return n
}

// fakeDDB is an in-memory BatchWriter. hook, when set, may answer a call
// instead of the table (handled=true), or let the table take it.
type fakeDDB struct {
	mu    sync.Mutex
	table map[string]layouts.Item // by Id
	calls int
	sizes []int
	hook  func(ctx context.Context, call int, reqs []types.WriteRequest) (out *dynamodb.BatchWriteItemOutput, err error, handled bool)
}

func newFake() *fakeDDB { return &fakeDDB{table: map[string]layouts.Item{}} }

func (f *fakeDDB) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	f.mu.Lock()
	f.calls++
	call := f.calls
	var reqs []types.WriteRequest
	for _, rs := range in.RequestItems {
		reqs = append(reqs, rs...)
	}
	f.sizes = append(f.sizes, len(reqs))
	hook := f.hook
	f.mu.Unlock()
	if len(reqs) > MaxBatchItems {
		return nil, fmt.Errorf("fake: %d items in one batch", len(reqs))
	}
	seen := map[string]bool{}
	for _, r := range reqs {
		k := layouts.KeyOf(testSpec, r.PutRequest.Item)
		if seen[k] {
			return nil, &smithy.GenericAPIError{Code: "ValidationException", Message: "Provided list of item keys contains duplicates"}
		}
		seen[k] = true
	}
	if hook != nil {
		if out, err, handled := hook(ctx, call, reqs); handled {
			if err == nil && out != nil {
				f.apply(reqs, out.UnprocessedItems)
			}
			return out, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.apply(reqs, nil)
	return &dynamodb.BatchWriteItemOutput{}, nil
}

// apply writes the requests that were not handed back.
func (f *fakeDDB) apply(reqs []types.WriteRequest, unprocessed map[string][]types.WriteRequest) {
	back := map[string]bool{}
	for _, rs := range unprocessed {
		for _, r := range rs {
			back[layouts.KeyOf(testSpec, r.PutRequest.Item)] = true
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range reqs {
		it := r.PutRequest.Item
		if !back[layouts.KeyOf(testSpec, it)] {
			f.table[it["Id"].(*types.AttributeValueMemberS).Value] = it
		}
	}
}

func (f *fakeDDB) has(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.table[id] != nil
}

func (f *fakeDDB) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.table)
}

// fastOptions keep retries quick in tests.
// fastOptions shortens the backoff and writes in input order (no
// spreading): these tests count on which items share a batch.
// TestWriterSpreads covers the spreading.
func fastOptions(o WriterOptions) WriterOptions {
	o.Spread = -1
	o.BaseBackoff = time.Millisecond
	o.MaxBackoff = 5 * time.Millisecond
	return o
}

// writeEach writes item(i) for i below n, as sequence number i, closes
// the writer and returns its stats; a failed write or close fails the
// test.
func writeEach(t *testing.T, w *DDBWriter, n int, item func(int) layouts.Item) Stats {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		if err := w.Write(ctx, int64(i), item(i)); err != nil {
			t.Fatal(err)
		}
	}
	st, err := w.Close(ctx)
	if err != nil {
		t.Fatalf("close: %v (stats %+v)", err, st)
	}
	return st
}

func writeAll(t *testing.T, w *DDBWriter, n int) (Stats, error) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		if err := w.Write(ctx, int64(i), testItem(i)); err != nil {
			st, _ := w.Close(ctx)
			return st, err
		}
	}
	return w.Close(ctx)
}

// Every item arrives once, in full batches but the last. The window is
// larger than the run: a full window sends the items kept back in a short
// batch (TestWriterFullWindowSendsWhatItKeeps), and whether three workers
// fall behind far enough for it to fill depends on the machine's load
// (this test failed about once in 40 runs with the default window).
func TestWriterWritesEverything(t *testing.T) {
	f := newFake()
	w := NewDDBWriter(f, "t", testSpec, fastOptions(WriterOptions{Concurrency: 3, Window: 1001}))
	st, err := writeAll(t, w, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if f.len() != 1000 || st.Items != 1000 || st.Watermark != 1000 {
		t.Fatalf("table has %d items, stats say %d items, watermark %d; want 1000 each", f.len(), st.Items, st.Watermark)
	}
	for i, n := range f.sizes {
		if n != MaxBatchItems && i != len(f.sizes)-1 {
			// Only the last batch may be short: the others are full.
			t.Errorf("call %d had %d items, want %d", i+1, n, MaxBatchItems)
		}
	}
	// 1 WCU per item, 2 for the two thirds with a ParentId (ByParent).
	want := int64(0)
	for i := range 1000 {
		want += 1
		if i%3 != 0 {
			want++
		}
	}
	if st.ComputedWCU != want {
		t.Errorf("computed WCU = %d, want %d", st.ComputedWCU, want)
	}
}

// When the window is full, Write takes nothing more until the watermark
// moves, which a batch in retries or a hot key's item can hold for
// seconds: the items it kept back go out at once, in a short batch, rather
// than wait all that time. Here the first call is held: 25 items in it,
// 25 queued, 10 kept back fill the window of 60, and the 61st Write sends
// those 10 before it waits.
func TestWriterFullWindowSendsWhatItKeeps(t *testing.T) {
	f := newFake()
	release := make(chan struct{})
	f.hook = func(ctx context.Context, call int, _ []types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error, bool) {
		if call == 1 {
			<-release
		}
		return nil, nil, false
	}
	w := NewDDBWriter(f, "t", testSpec, fastOptions(WriterOptions{Concurrency: 1, Buffer: 1, Window: 60}))
	ctx := context.Background()
	for i := range 60 {
		if err := w.Write(ctx, int64(i), testItem(i)); err != nil {
			t.Fatal(err)
		}
	}
	wrote := make(chan error, 1)
	go func() { wrote <- w.Write(ctx, 60, testItem(60)) }()
	select {
	case err := <-wrote:
		t.Fatalf("Write with the window full returned (%v) while the first call was held", err)
	case <-time.After(50 * time.Millisecond): // it waits, as it must
	}
	close(release)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	st, err := w.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	sizes := append([]int(nil), f.sizes...)
	f.mu.Unlock()
	if st.Watermark != 61 || f.len() != 61 || !slices.Equal(sizes, []int{25, 25, 10, 1}) {
		t.Errorf("calls of %v items, %d written, watermark %d; want calls of [25 25 10 1] (the 10 kept back sent with the window full), 61 written", sizes, f.len(), st.Watermark)
	}
}

// The watermark must never pass an item that is not written, whatever order
// the batches finish in.
func TestWatermarkNeverPassesUnacknowledged(t *testing.T) {
	f := newFake()
	release := make(chan struct{})
	f.hook = func(ctx context.Context, call int, reqs []types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error, bool) {
		first := seqOf(reqs[0].PutRequest.Item)
		if first == 50 || first == 150 {
			<-release // these batches finish last
		}
		return nil, nil, false
	}
	var mu sync.Mutex
	var marks []int64
	var violations []string
	w := NewDDBWriter(f, "t", testSpec, fastOptions(WriterOptions{
		Concurrency: 4,
		OnAck: func(wm int64) error {
			for i := range wm {
				if !f.has(fmt.Sprintf("n%05d", i)) {
					violations = append(violations, fmt.Sprintf("watermark %d passes item %d, not written", wm, i))
					break
				}
			}
			mu.Lock()
			marks = append(marks, wm)
			mu.Unlock()
			return nil
		},
	}))
	ctx := context.Background()
	// The first call goes alone (the probe), and the others wait for its
	// answer: it must not be one of the held batches, or nothing moves
	// and the Writes below block. So the first batch is written, and
	// answered, before the rest are given.
	deadline := time.Now().Add(5 * time.Second)
	for i := range 300 {
		if err := w.Write(ctx, int64(i), testItem(i)); err != nil {
			t.Fatal(err)
		}
		for i == MaxBatchItems-1 && f.len() < MaxBatchItems && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	// Everything but the two held batches gets written.
	deadline = time.Now().Add(5 * time.Second)
	for f.len() < 250 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := w.acks.watermark(); got != 50 {
		t.Errorf("with batch 50..74 held, watermark = %d, want 50", got)
	}
	close(release)
	st, err := w.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Watermark != 300 {
		t.Errorf("final watermark = %d, want 300", st.Watermark)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, v := range violations {
		t.Error(v)
	}
	for i := 1; i < len(marks); i++ {
		if marks[i] <= marks[i-1] {
			t.Errorf("OnAck values not increasing: %v", marks)
			break
		}
	}
	if len(marks) == 0 || marks[len(marks)-1] != 300 {
		t.Errorf("OnAck's last value = %v, want 300", marks)
	}
}

func TestWriterStartSeqAndOrder(t *testing.T) {
	tests := []struct {
		name    string
		start   int64
		seqs    []int64
		wantErr bool
		wantWM  int64
	}{
		{name: "resume", start: 10, seqs: []int64{10, 11, 12}, wantWM: 13},
		{name: "gaps", start: 0, seqs: []int64{0, 5, 9}, wantWM: 10},
		{name: "below start", start: 10, seqs: []int64{9}, wantErr: true, wantWM: 10},
		{name: "not increasing", start: 0, seqs: []int64{0, 2, 2}, wantErr: true, wantWM: 3},
		{name: "nothing", start: 7, wantWM: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewDDBWriter(newFake(), "t", testSpec, WriterOptions{Spread: -1, StartSeq: tt.start})
			var err error
			for i, s := range tt.seqs {
				if err = w.Write(context.Background(), s, testItem(100+i)); err != nil {
					break
				}
			}
			if (err != nil) != tt.wantErr {
				t.Errorf("error = %v, want error %v", err, tt.wantErr)
			}
			st, cerr := w.Close(context.Background())
			if cerr != nil {
				t.Fatal(cerr)
			}
			if st.Watermark != tt.wantWM {
				t.Errorf("watermark = %d, want %d", st.Watermark, tt.wantWM)
			}
		})
	}
}

// Two writes of one key never go in one batch: the later one wins.
func TestWriterSameKeyTwice(t *testing.T) {
	f := newFake()
	w := NewDDBWriter(f, "t", testSpec, WriterOptions{Spread: -1, Concurrency: 1})
	a := testItem(1)
	b := testItem(1)
	b["v"] = &types.AttributeValueMemberS{Value: "later"}
	all := []layouts.Item{a, testItem(2), b}
	st := writeEach(t, w, len(all), func(i int) layouts.Item { return all[i] })
	if got := f.table["n00001"]["v"]; got == nil || got.(*types.AttributeValueMemberS).Value != "later" {
		t.Errorf("n00001 = %v, want the later write", f.table["n00001"])
	}
	if st.Watermark != 3 || st.Items != 2 {
		t.Errorf("watermark %d, items %d; want 3 and 2 (two puts)", st.Watermark, st.Items)
	}
}

// Unprocessed items are retried, and only they are.
func TestWriterRetriesOnlyUnprocessed(t *testing.T) {
	f := newFake()
	var mu sync.Mutex
	sent := map[string]int{}
	f.hook = func(ctx context.Context, call int, reqs []types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error, bool) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range reqs {
			sent[r.PutRequest.Item["Id"].(*types.AttributeValueMemberS).Value]++
		}
		if len(reqs) < 2 || call%2 == 0 {
			return nil, nil, false
		}
		// Hand back the last third of every other batch of two or more.
		k := len(reqs) - len(reqs)/3
		return &dynamodb.BatchWriteItemOutput{UnprocessedItems: map[string][]types.WriteRequest{"t": reqs[k:]}}, nil, true
	}
	w := NewDDBWriter(f, "t", testSpec, fastOptions(WriterOptions{Concurrency: 2}))
	st, err := writeAll(t, w, 200)
	if err != nil {
		t.Fatal(err)
	}
	if f.len() != 200 {
		t.Fatalf("table has %d items, want 200", f.len())
	}
	var extra int
	for _, n := range sent {
		extra += n - 1
	}
	if int64(extra) != st.Unprocessed {
		t.Errorf("items sent again = %d, unprocessed = %d: only unprocessed items may be resent", extra, st.Unprocessed)
	}
	if st.Unprocessed == 0 || st.Retries == 0 {
		t.Errorf("stats %+v: want unprocessed items and retries", st)
	}
}

func apiErr(code string) error {
	return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "BatchWriteItem",
		Err: &smithy.GenericAPIError{Code: code, Message: "test"}}
}

func TestWriterFailures(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		is      []error
		partial bool // some items get written before the failure
	}{
		{name: "access denied", err: apiErr("AccessDeniedException"), is: []error{ddb.ErrService}},
		{name: "no table", err: &types.ResourceNotFoundException{Message: aws.String("Requested resource not found")}, is: []error{ddb.ErrService}},
		{name: "throttled forever", err: apiErr("ProvisionedThroughputExceededException"), is: []error{ddb.ErrService, ErrRetriesExhausted}},
		{name: "5xx forever", err: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 503}}, Err: errors.New("unavailable")}, is: []error{ddb.ErrService, ErrRetriesExhausted}},
		{name: "network down", err: &smithyhttp.RequestSendError{Err: io.ErrUnexpectedEOF}, is: []error{ddb.ErrService, ErrRetriesExhausted}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			f.hook = func(ctx context.Context, call int, reqs []types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error, bool) {
				if call <= 2 {
					return nil, nil, false // the first two batches go through
				}
				return nil, tt.err, true
			}
			var acked []int64
			w := NewDDBWriter(f, "t", testSpec, fastOptions(WriterOptions{Concurrency: 1, MaxRetries: 3,
				OnAck: func(wm int64) error { acked = append(acked, wm); return nil }}))
			st, err := writeAll(t, w, 200)
			if err == nil {
				t.Fatal("want an error")
			}
			for _, target := range tt.is {
				if !errors.Is(err, target) {
					t.Errorf("error %q does not match %v", err, target)
				}
			}
			if st.Watermark != 50 || f.len() != 50 {
				t.Errorf("watermark %d with %d items written; want 50 and 50", st.Watermark, f.len())
			}
			if len(acked) == 0 || acked[len(acked)-1] != 50 {
				t.Errorf("OnAck got %v, want it to end at 50", acked)
			}
		})
	}
}

// A batch refused as invalid is split down to the bad items, which go to
// the dead-letter sink; the rest is written.
func TestWriterDeadLetters(t *testing.T) {
	bad := map[string]bool{"n00007": true, "n00020": true, "n00021": true, "n00140": true}
	hook := func(ctx context.Context, call int, reqs []types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error, bool) {
		for _, r := range reqs {
			if bad[r.PutRequest.Item["Id"].(*types.AttributeValueMemberS).Value] {
				return nil, apiErr("ValidationException"), true
			}
		}
		return nil, nil, false
	}
	tests := []struct {
		name    string
		sink    bool
		max     int
		wantErr error
		wantDL  int64
	}{
		{name: "set aside", sink: true, wantDL: 4},
		{name: "no sink", sink: false, wantErr: ErrItemRejected},
		{name: "too many", sink: true, max: 2, wantErr: ErrTooManyRejected, wantDL: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			f.hook = hook
			var dl bytes.Buffer
			var reasons []string
			opts := fastOptions(WriterOptions{Concurrency: 1, MaxDeadLetters: tt.max,
				OnDeadLetter: func(seq int64, item layouts.Item, reason error) { reasons = append(reasons, reason.Error()) }})
			if tt.sink {
				opts.DeadLetter = &dl
			}
			w := NewDDBWriter(f, "t", testSpec, opts)
			st, err := writeAll(t, w, 150)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if st.DeadLettered != tt.wantDL {
				t.Errorf("dead-lettered %d, want %d", st.DeadLettered, tt.wantDL)
			}
			if tt.wantErr != nil {
				return
			}
			if f.len() != 146 || st.Watermark != 150 || st.Items != 146 {
				t.Errorf("table %d, items %d, watermark %d; want 146, 146, 150", f.len(), st.Items, st.Watermark)
			}
			lines := bytes.Split(bytes.TrimSpace(dl.Bytes()), []byte("\n"))
			got := map[string]bool{}
			for _, l := range lines {
				var v struct{ Item map[string]map[string]any }
				if err := json.Unmarshal(l, &v); err != nil {
					t.Fatalf("dead-letter line %s: %v", l, err)
				}
				got[v.Item["Id"]["S"].(string)] = true
			}
			if len(got) != len(bad) {
				t.Errorf("dead letters %v, want %v", got, bad)
			}
			for id := range bad {
				if !got[id] || f.has(id) {
					t.Errorf("%s: in dead letters %v, in table %v; want only dead letters", id, got[id], f.has(id))
				}
			}
			if len(reasons) != 4 || st.DeadLetterReasons["ValidationException: test"] != 4 {
				t.Errorf("reasons %v, report %v", reasons, st.DeadLetterReasons)
			}
		})
	}
}

// Close with a context that ends abandons the batches in flight but keeps
// the watermark exact.
func TestWriterCloseCanceled(t *testing.T) {
	f := newFake()
	block := make(chan struct{})
	defer close(block)
	f.hook = func(ctx context.Context, call int, reqs []types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error, bool) {
		if call > 1 {
			select {
			case <-block:
			case <-ctx.Done():
				return nil, ctx.Err(), true
			}
		}
		return nil, nil, false
	}
	w := NewDDBWriter(f, "t", testSpec, WriterOptions{Spread: -1, Concurrency: 1})
	for i := range 60 {
		if err := w.Write(context.Background(), int64(i), testItem(i)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	st, err := w.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close error = %v, want the deadline", err)
	}
	if st.Watermark != 25 {
		t.Errorf("watermark = %d, want 25 (the first batch)", st.Watermark)
	}
	if err := w.Write(context.Background(), 100, testItem(100)); !errors.Is(err, ErrWriterClosed) {
		t.Errorf("Write after Close = %v, want ErrWriterClosed", err)
	}
	if _, err2 := w.Close(context.Background()); !errors.Is(err2, context.DeadlineExceeded) {
		t.Errorf("second Close = %v, want the first Close's error", err2)
	}
}

func TestStatsJSON(t *testing.T) {
	st := Stats{Items: 10, Bytes: 2048, ConsumedWCU: 12.5, ComputedWCU: 12, Throttles: 3, Retries: 4, Duration: 1500 * time.Millisecond}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"items": 10.0, "bytes": 2048.0, "consumed_wcu": 12.5, "throttle_events": 3.0, "retries": 4.0, "duration_seconds": 1.5, "wcu_per_second": 8.0}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v (in %s)", k, m[k], v, b)
		}
	}
}

// A checkpoint that cannot be saved ends the run: going on would redo
// unbounded work after a crash.
func TestWriterOnAckError(t *testing.T) {
	boom := errors.New("disk full")
	w := NewDDBWriter(newFake(), "t", testSpec, WriterOptions{Spread: -1, Concurrency: 2,
		OnAck: func(int64) error { return boom }})
	var werr error
	for i := range 2000 {
		if werr = w.Write(context.Background(), int64(i), testItem(i)); werr != nil {
			break
		}
	}
	_, err := w.Close(context.Background())
	if !errors.Is(err, boom) {
		t.Errorf("Close = %v, want the OnAck error", err)
	}
	if werr != nil && !errors.Is(werr, boom) {
		t.Errorf("Write = %v, want the OnAck error", werr)
	}
}

// While a batch is stuck, the others may run ahead of the watermark only
// as far as the window: that bounds what a crash makes the next run redo.
func TestWriterWindow(t *testing.T) {
	f := newFake()
	release := make(chan struct{})
	f.hook = func(ctx context.Context, call int, reqs []types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error, bool) {
		if seqOf(reqs[0].PutRequest.Item) == 25 { // the first call goes alone: hold the second
			<-release
		}
		return nil, nil, false
	}
	w := NewDDBWriter(f, "t", testSpec, WriterOptions{Spread: -1, Concurrency: 4, Window: 100})
	var written atomic.Int64
	done := make(chan error, 1)
	go func() {
		for i := range 300 {
			if err := w.Write(context.Background(), int64(i), testItem(i)); err != nil {
				done <- err
				return
			}
			written.Store(int64(i) + 1)
			// The first batch is the probe only if it is answered before
			// the second is given (see TestWatermarkNeverPassesUnacknowledged).
			for deadline := time.Now().Add(5 * time.Second); i == MaxBatchItems-1 && f.len() < MaxBatchItems && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		}
		done <- nil
	}()
	// Wait for the items the window lets through (a busy machine may take
	// a while), then a little longer for any that it should not.
	for deadline := time.Now().Add(5 * time.Second); f.len() < 100 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	// The watermark stays at 25; the window lets items 25 to 124 in.
	if n := written.Load(); n > 125 {
		t.Errorf("with batch 25..49 stuck, %d items were accepted, want at most 125", n)
	}
	if n := f.len(); n != 100 {
		t.Errorf("%d items in the table while batch 25..49 is stuck, want 100", n)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st, err := w.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Watermark != 300 || f.len() != 300 {
		t.Errorf("watermark %d, table %d; want 300", st.Watermark, f.len())
	}
}

// The run's first call goes alone: a table out of capacity throttles one
// request, not all the workers' at once.
func TestWriterFirstCallAlone(t *testing.T) {
	f := newFake()
	var inFlight, duringFirst atomic.Int32
	f.hook = func(ctx context.Context, call int, reqs []types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error, bool) {
		inFlight.Add(1)
		defer inFlight.Add(-1)
		if call == 1 {
			time.Sleep(100 * time.Millisecond)
			duringFirst.Store(inFlight.Load())
		}
		return nil, nil, false
	}
	w := NewDDBWriter(f, "t", testSpec, WriterOptions{Spread: -1, Concurrency: 4})
	if _, err := writeAll(t, w, 200); err != nil {
		t.Fatal(err)
	}
	if n := duringFirst.Load(); n != 1 {
		t.Errorf("%d calls in flight during the first one, want it alone", n)
	}
	if f.len() != 200 {
		t.Errorf("table has %d items, want 200", f.len())
	}
}
