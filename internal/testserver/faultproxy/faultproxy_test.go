package faultproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/layouts"
)

// upstream is a stand-in for DynamoDB Local that accepts every write and
// remembers the ids it was sent.
type upstream struct {
	*httptest.Server
	mu  sync.Mutex
	ids []string
	ops []string
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		op := operation(r.Header.Get("X-Amz-Target"))
		u.mu.Lock()
		u.ops = append(u.ops, op)
		if op == "BatchWriteItem" {
			var req struct {
				RequestItems map[string][]struct {
					PutRequest struct{ Item map[string]map[string]string }
				}
			}
			if err := json.Unmarshal(body, &req); err != nil {
				t.Errorf("upstream got a body it cannot read: %v\n%s", err, body)
			}
			for _, rs := range req.RequestItems {
				for _, r := range rs {
					u.ids = append(u.ids, r.PutRequest.Item["Id"]["S"])
				}
			}
		}
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		if op == "BatchWriteItem" {
			io.WriteString(w, `{"UnprocessedItems":{}}`)
			return
		}
		io.WriteString(w, `{"TableNames":[]}`)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) received() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.ids...)
}

func start(t *testing.T, cfg Config) *Proxy {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func client(p *Proxy) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(p.URL()), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""),
	})
}

func batch(first, n int, withParent bool) *dynamodb.BatchWriteItemInput {
	var reqs []types.WriteRequest
	for i := first; i < first+n; i++ {
		item := map[string]types.AttributeValue{"Id": &types.AttributeValueMemberS{Value: fmt.Sprintf("n%d", i)}}
		if withParent {
			item["ParentId"] = &types.AttributeValueMemberS{Value: "p"}
		}
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
	}
	return &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"t": reqs}}
}

func TestNewRefuses(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{name: "remote target", cfg: Config{Target: "http://10.1.2.3:8000"}},
		{name: "not a URL", cfg: Config{Target: "::"}},
		{name: "share above 1", cfg: Config{Target: "http://127.0.0.1:1", Throttle: 1.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if p, err := New(tt.cfg); err == nil {
				p.Close()
				t.Fatal("New accepted it")
			}
		})
	}
}

// The injected errors are the service's own: the SDK decodes them into its
// typed errors.
func TestInjectedErrorsAsTheSDKSeesThem(t *testing.T) {
	up := newUpstream(t)
	tests := []struct {
		name   string
		cfg    Config
		checks []func(error) string // one per call, in order
	}{
		{name: "throttles", cfg: Config{Throttle: 1}, checks: []func(error) string{
			func(err error) string {
				var e *types.ProvisionedThroughputExceededException
				if !errors.As(err, &e) {
					return "want ProvisionedThroughputExceededException"
				}
				return ""
			},
			func(err error) string {
				var e smithy.APIError
				if !errors.As(err, &e) || e.ErrorCode() != "ThrottlingException" {
					return "want ThrottlingException"
				}
				return ""
			},
		}},
		{name: "5xx", cfg: Config{ServerError: 1}, checks: []func(error) string{
			func(err error) string {
				var e *types.InternalServerError
				if !errors.As(err, &e) {
					return "want InternalServerError"
				}
				return ""
			},
			func(err error) string {
				var re *smithyhttp.ResponseError
				if !errors.As(err, &re) || re.HTTPStatusCode() != 503 {
					return "want HTTP 503"
				}
				return ""
			},
		}},
		{name: "cut", cfg: Config{Cut: 1, Seed: 3}, checks: []func(error) string{
			func(err error) string {
				var api smithy.APIError
				if err == nil || errors.As(err, &api) {
					return "want a transport error"
				}
				return ""
			},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Target = up.URL
			p := start(t, tt.cfg)
			c := client(p)
			for i, check := range tt.checks {
				_, err := c.BatchWriteItem(context.Background(), batch(i*10, 3, false))
				if msg := check(err); msg != "" {
					t.Errorf("call %d: error %v: %s", i+1, err, msg)
				}
			}
		})
	}
}

// A partial forward writes some items and hands the others back; together
// they are the request, each item once.
func TestPartialForward(t *testing.T) {
	up := newUpstream(t)
	p := start(t, Config{Target: up.URL, Partial: 1, Seed: 11})
	c := client(p)
	total := 0
	for call := range 5 {
		in := batch(call*100, 20, false)
		out, err := c.BatchWriteItem(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		back := map[string]bool{}
		for _, r := range out.UnprocessedItems["t"] {
			back[r.PutRequest.Item["Id"].(*types.AttributeValueMemberS).Value] = true
		}
		if len(back) == 0 || len(back) == 20 {
			t.Errorf("call %d: %d of 20 handed back, want some but not all", call, len(back))
		}
		total += len(back)
	}
	got := up.received()
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			t.Errorf("%s forwarded twice", id)
		}
		seen[id] = true
	}
	if len(got)+total != 100 {
		t.Errorf("forwarded %d + handed back %d, want 100", len(got), total)
	}
	if n := p.Counts(); n.HeldBackItems != int64(total) || n.Partial != 5 {
		t.Errorf("counts %+v, want 5 partial requests and %d items held back", n, total)
	}
}

// Faults touch only the operations named; the others pass untouched.
func TestOperationsFilter(t *testing.T) {
	up := newUpstream(t)
	p := start(t, Config{Target: up.URL, Throttle: 1, Operations: []string{"BatchWriteItem"}})
	c := client(p)
	if _, err := c.ListTables(context.Background(), &dynamodb.ListTablesInput{}); err != nil {
		t.Errorf("ListTables through a proxy that throttles only BatchWriteItem: %v", err)
	}
	if _, err := c.BatchWriteItem(context.Background(), batch(0, 1, false)); err == nil {
		t.Error("BatchWriteItem was not throttled")
	}
}

// The same seed and the same requests give the same faults.
func TestDeterministic(t *testing.T) {
	up := newUpstream(t)
	run := func(seed uint64) Counts {
		p := start(t, Config{Target: up.URL, Seed: seed, Throttle: 0.2, ServerError: 0.1, Partial: 0.3, Cut: 0.1})
		c := client(p)
		for i := range 40 {
			c.BatchWriteItem(context.Background(), batch(i*10, 5, false))
		}
		p.Close()
		return p.Counts()
	}
	a, b, other := run(42), run(42), run(43)
	if a != b {
		t.Errorf("seed 42 twice: %+v and %+v", a, b)
	}
	if a == other {
		t.Errorf("seeds 42 and 43 gave the same faults: %+v", a)
	}
	if a.Faults() == 0 || a.Requests != 40 {
		t.Errorf("counts %+v: want 40 requests with some faults", a)
	}
}

// The capacity mode admits writes at its rate, counting indexes, and
// refuses the rest as a provisioned table does.
func TestCapacity(t *testing.T) {
	up := newUpstream(t)
	spec := layouts.TableSpec{
		PK:      layouts.KeyAttr{Name: "Id", Type: types.ScalarAttributeTypeS},
		Indexes: []layouts.IndexSpec{{Name: "ByParent", PK: layouts.KeyAttr{Name: "ParentId", Type: types.ScalarAttributeTypeS}}},
	}
	const rate = 200.0
	p := start(t, Config{Target: up.URL, CapacityWCU: rate, BurstWCU: 40, StartEmpty: true,
		Spec: map[string]layouts.TableSpec{"t": spec}})
	c := client(p)
	begin := time.Now()
	var sent int
	for time.Since(begin) < time.Second {
		// 10 items in the index: 20 WCU a request.
		_, err := c.BatchWriteItem(context.Background(), batch(sent, 10, true))
		var ptee *types.ProvisionedThroughputExceededException
		if err != nil && !errors.As(err, &ptee) {
			t.Fatal(err)
		}
		sent += 10
		time.Sleep(5 * time.Millisecond)
	}
	el := time.Since(begin).Seconds()
	n := p.Counts()
	if n.AcceptedWCU != 2*n.AcceptedItems {
		t.Errorf("accepted %d WCU for %d items, want 2 WCU an item (table + index)", n.AcceptedWCU, n.AcceptedItems)
	}
	if max := rate * el; float64(n.AcceptedWCU) > max {
		t.Errorf("accepted %d WCU in %.2fs, more than %v", n.AcceptedWCU, el, max)
	}
	// Less a few requests' worth: the bucket admits whole requests only.
	// On a busy machine this loop may offer less than the capacity; then
	// the bound is what it offered.
	offered := 2 * float64(sent)
	if min := math.Min(rate*el, offered) - 80; float64(n.AcceptedWCU) < min {
		t.Errorf("accepted %d WCU in %.2fs (%.0f offered), want at least %v", n.AcceptedWCU, el, offered, min)
	}
	if n.CapacityRejected == 0 {
		t.Errorf("nothing refused: %+v", n)
	}
	if got := len(up.received()); int64(got) != n.AcceptedItems {
		t.Errorf("upstream got %d items, proxy counted %d", got, n.AcceptedItems)
	}
}

func TestLifetime(t *testing.T) {
	up := newUpstream(t)
	p := start(t, Config{Target: up.URL, Lifetime: 100 * time.Millisecond})
	c := client(p)
	if _, err := c.ListTables(context.Background(), &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("before the end of its lifetime: %v", err)
	}
	// It stops answering once its lifetime is over: polled, since a
	// loaded machine may fire the proxy's timer late; 10 s bounds a proxy
	// that never stops.
	answered := 1
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := c.ListTables(ctx, &dynamodb.ListTablesInput{})
		cancel()
		if err != nil {
			break
		}
		answered++
		if time.Now().After(deadline) {
			t.Fatal("the proxy still answers 10 s after its 100 ms lifetime")
		}
	}
	up.mu.Lock()
	ops := append([]string(nil), up.ops...)
	up.mu.Unlock()
	// Upstream saw the calls answered, and none after the proxy closed.
	if len(ops) != answered || slices.ContainsFunc(ops, func(op string) bool { return op != "ListTables" }) {
		t.Errorf("upstream saw %v, want the %d ListTables answered", ops, answered)
	}
}

// Partition mode takes items one by one: a key over its limit is refused
// alone (UnprocessedItems) while the others are written, and a call none of
// whose items fit is refused with the reason DynamoDB gives, which the SDK
// decodes and ddb.ThrottleReasons reads, index and all.
func TestPartitionMode(t *testing.T) {
	up := newUpstream(t)
	spec := layouts.TableSpec{
		PK:      layouts.KeyAttr{Name: "Id", Type: types.ScalarAttributeTypeS},
		Indexes: []layouts.IndexSpec{{Name: "ByParent", PK: layouts.KeyAttr{Name: "ParentId", Type: types.ScalarAttributeTypeS}}},
	}
	p := start(t, Config{Target: up.URL, PartitionWCU: 3, Spec: map[string]layouts.TableSpec{"t": spec}})
	c := client(p)
	// Five items under ParentId "p": the partition takes three.
	out, err := c.BatchWriteItem(context.Background(), batch(0, 5, true))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(out.UnprocessedItems["t"]); n != 2 {
		t.Errorf("%d items handed back, want the 2 over ParentId p's 3 WCU", n)
	}
	// Again at once: p is empty, every item is refused, with the reason.
	_, err = c.BatchWriteItem(context.Background(), batch(10, 2, true))
	reasons := ddb.ThrottleReasons(err)
	if len(reasons) != 1 || reasons[0].Reason != IndexKeyRange || reasons[0].Index != "ByParent" || !reasons[0].KeyRange() {
		t.Errorf("reasons %+v (error %v), want one IndexWriteKeyRangeThroughputExceeded on ByParent", reasons, err)
	}
	// Items without a parent land in their own table partitions: written.
	if out, err := c.BatchWriteItem(context.Background(), batch(20, 4, false)); err != nil || len(out.UnprocessedItems["t"]) != 0 {
		t.Errorf("items on fresh keys: err %v, handed back %v", err, out)
	}
	cn := p.Counts()
	if cn.KeyRangeItems != 4 || p.HotItems()["ByParent/p"] != 4 {
		t.Errorf("counts %+v, hot %v: want 4 items refused for ByParent/p", cn, p.HotItems())
	}
	if got := len(up.received()); got != 3+4 {
		t.Errorf("upstream got %d items, want 7", got)
	}
}

// Injected throttles carry the configured reasons, in both spellings of the
// field (ThrottlingReasons, throttlingReasons) that the SDK reads.
func TestInjectedReasons(t *testing.T) {
	up := newUpstream(t)
	p := start(t, Config{Target: up.URL, Throttle: 1, Reasons: []Reason{{Reason: TableKeyRange}, {Reason: IndexCapacity, Index: "ByPath"}}})
	c := client(p)
	var got []ddb.ThrottleReason
	for i := range 2 {
		_, err := c.BatchWriteItem(context.Background(), batch(i, 1, false))
		got = append(got, ddb.ThrottleReasons(err)...)
	}
	want := []ddb.ThrottleReason{{Reason: TableKeyRange}, {Reason: IndexCapacity, Index: "ByPath"}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("reasons %+v, want %+v", got, want)
	}
	if !got[0].KeyRange() || got[1].KeyRange() {
		t.Errorf("KeyRange: %v %v, want true false", got[0].KeyRange(), got[1].KeyRange())
	}
}
