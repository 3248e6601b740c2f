// Package faultproxy is an HTTP proxy for tests that stands between a
// DynamoDB client and DynamoDB Local and misbehaves on purpose: it answers a
// share of the requests with throttling errors or 5xx, forwards only part of
// some BatchWriteItem requests and hands the rest back as UnprocessedItems,
// cuts connections, and can enforce a write capacity the way a provisioned
// table does. Every decision comes from one seeded random source, so a run
// with the same seed and the same order of requests misbehaves the same way.
//
// The proxy listens on the loopback interface only, forwards only to a
// loopback address, bounds request and response bodies, and stops by itself
// after Config.Lifetime.
package faultproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// Config says how the proxy misbehaves. Shares are probabilities in [0, 1],
// drawn per request in this order: cut, throttle, server error, partial.
type Config struct {
	// Target is DynamoDB Local's URL; it must be a loopback address.
	Target string
	// Seed seeds the random source; the same seed and the same order of
	// requests give the same faults.
	Seed uint64
	// Operations limits the faults to these operations ("BatchWriteItem");
	// empty means every operation. Other requests are forwarded untouched.
	Operations []string

	// Throttle is the share of requests answered with HTTP 400 and a
	// ProvisionedThroughputExceededException or, every other time, a
	// ThrottlingException.
	Throttle float64
	// ServerError is the share answered with HTTP 500 InternalServerError
	// or, every other time, 503 ServiceUnavailable.
	ServerError float64
	// Partial is the share of BatchWriteItem requests of two items or more
	// forwarded with only some of their items; the others come back as
	// UnprocessedItems, merged into the real response.
	Partial float64
	// Cut is the share of requests whose connection is closed without an
	// answer: half of them before the request is forwarded, half after, so
	// that the client cannot know whether the write happened.
	Cut float64

	// CapacityWCU, when above 0, makes the proxy enforce a write capacity:
	// a BatchWriteItem whose items cost more WCU than the token bucket
	// holds is refused with ProvisionedThroughputExceededException. The
	// bucket fills at CapacityWCU per second up to BurstWCU (default:
	// CapacityWCU, one second's worth) and starts full, like a table's
	// burst capacity. An item costs ceil(size/1 KB) WCU times one plus the
	// number of Spec's indexes it lands in (a delete costs 1 per table and
	// index); Spec is keyed by table name, a missing table has no index.
	CapacityWCU float64
	BurstWCU    float64
	StartEmpty  bool
	Spec        map[string]layouts.TableSpec

	// PartitionWCU, when above 0, makes the proxy play DynamoDB's
	// partitions: each partition key value of a table, and of each of its
	// Spec indexes, takes at most PartitionWCU a second (DynamoDB: 1,000),
	// with one second's worth of burst, and the table as a whole takes
	// CapacityWCU (no limit when 0). Items are then taken one by one, as
	// DynamoDB does: a BatchWriteItem whose items all fit is forwarded,
	// one with some that do not fit is forwarded without them and they
	// come back as UnprocessedItems (no reason given, as DynamoDB gives
	// none there), and one none of whose items fit is refused with a
	// ProvisionedThroughputExceededException whose ThrottlingReasons say
	// why: TableWriteKeyRangeThroughputExceeded,
	// IndexWriteKeyRangeThroughputExceeded (the resource ARN names the
	// index) or TableWriteProvisionedThroughputExceeded. A key's writes cost
	// it the item's WCU, one replica's worth: an index's partition is
	// charged the item's WCU once.
	PartitionWCU float64

	// Reasons, when set, are the ThrottlingReasons that the injected
	// throttles (Throttle) carry, one after the other; without them an
	// injected throttle carries none, as DynamoDB's did before 2025.
	Reasons []Reason

	// Reject, when set, makes the proxy refuse whole, with a
	// ValidationException, every BatchWriteItem that puts an item carrying
	// an attribute of this name, as DynamoDB refuses a batch holding one
	// item it cannot take (a value of the wrong type for the key of an
	// index, say): the write only the service can refuse.
	Reject string
	// FailItem, when set, makes the proxy answer every BatchWriteItem that
	// puts an item carrying an attribute of this name with an
	// AccessDeniedException, an error no retry mends: the write fails
	// without being refused as invalid.
	FailItem string

	// OnRequest, when set, is told of every request received: its
	// operation ("Scan") and its body, which it must not keep or change.
	OnRequest func(op string, body []byte)
	// FailRequest, when set, may answer a request with an error instead of
	// forwarding it: given its operation ("GetRecords") and body (not to be
	// kept or changed), it returns the error's type, as DynamoDB and
	// DynamoDB Streams name them ("ExpiredIteratorException"), and
	// message, with ok; the answer is HTTP 400. It is asked before the
	// random faults, and its answers count as Failed.
	FailRequest func(op string, body []byte) (errType, msg string, ok bool)

	// Lifetime is how long the proxy serves before it closes itself
	// (default 5 minutes).
	Lifetime time.Duration
	// MaxBody bounds request and response bodies (default 32 MB).
	MaxBody int64
}

// Reason is a throttling reason the proxy sends: Reason is DynamoDB's
// string (IndexWriteKeyRangeThroughputExceeded, ...), Index the index the
// resource ARN names ("" for the table). The ARN names the table of the
// request.
type Reason struct {
	Reason string
	Index  string
	// Table is the table the ARN names; the proxy fills it in from the
	// request when empty.
	Table string
}

// The throttling reasons DynamoDB gives for writes.
const (
	TableKeyRange    = "TableWriteKeyRangeThroughputExceeded"
	IndexKeyRange    = "IndexWriteKeyRangeThroughputExceeded"
	TableCapacity    = "TableWriteProvisionedThroughputExceeded"
	IndexCapacity    = "IndexWriteProvisionedThroughputExceeded"
	TableAccount     = "TableWriteAccountLimitExceeded"
	TableMaxOnDemand = "TableWriteMaxOnDemandThroughputExceeded"
)

// ARN is the ARN the proxy gives a table, or an index of it when index is
// not empty.
func ARN(table, index string) string {
	a := "arn:aws:dynamodb:us-east-1:000000000000:table/" + table
	if index != "" {
		a += "/index/" + index
	}
	return a
}

// Counts are what the proxy did. Every field counts requests, except the
// *Items and *WCU fields.
type Counts struct {
	Requests      int64 // requests received
	Forwarded     int64 // requests forwarded to the target
	Throttled     int64 // injected throttling errors
	ServerErrors  int64 // injected 5xx
	Partial       int64 // BatchWriteItem requests forwarded in part
	HeldBackItems int64 // items handed back as unprocessed by Partial
	CutBefore     int64 // connections cut before forwarding
	CutAfter      int64 // connections cut after forwarding
	// CapacityRejected counts requests refused for lack of capacity.
	CapacityRejected int64
	// AcceptedWCU and AcceptedItems count the BatchWriteItem writes that
	// were forwarded and answered 200, with the WCU they cost as the
	// capacity mode counts it (whether or not it is on).
	AcceptedWCU   int64
	AcceptedItems int64
	// KeyRangeItems counts the items refused in partition mode because a
	// partition key value of the table or an index was over its limit,
	// TableItems those refused for the table's limit (see HotItems).
	KeyRangeItems int64
	TableItems    int64
	// Rejected counts the requests refused for an item carrying Reject,
	// Failed those failed for an item carrying FailItem or answered by
	// FailRequest.
	Rejected, Failed int64
}

// Faults is the number of requests that met an injected fault.
func (c Counts) Faults() int64 {
	return c.Throttled + c.ServerErrors + c.Partial + c.CutBefore + c.CutAfter + c.CapacityRejected + c.Failed
}

// Proxy is a running fault-injecting proxy. Its methods are safe for
// concurrent use.
type Proxy struct {
	cfg    Config
	target *url.URL
	srv    *http.Server
	ln     net.Listener
	client *http.Client
	ops    map[string]bool
	url    string

	mu     sync.Mutex
	rng    *rand.Rand
	flip   bool // alternates the two kinds of throttle and of 5xx
	tokens float64
	filled time.Time
	parts  map[string]*bucket // partition mode: by table, index and key value
	hot    map[string]int64
	reason int // the next of cfg.Reasons

	n struct {
		requests, forwarded, throttled, server, partial, heldBack, cutBefore, cutAfter,
		capRejected, acceptedWCU, acceptedItems, keyRangeItems, tableItems, rejected, failed atomic.Int64
	}

	closeOnce sync.Once
	closing   chan struct{} // closed by Close
	done      chan struct{} // closed when the server has stopped
}

// New starts a proxy on a free loopback port. Stop it with Close.
func New(cfg Config) (*Proxy, error) {
	target, err := url.Parse(cfg.Target)
	if err != nil || target.Host == "" {
		return nil, fmt.Errorf("faultproxy: target %q is not a URL", cfg.Target)
	}
	if !loopback(target.Hostname()) {
		return nil, fmt.Errorf("faultproxy: target %q is not a loopback address; the proxy is for local tests only", cfg.Target)
	}
	for _, s := range []float64{cfg.Throttle, cfg.ServerError, cfg.Partial, cfg.Cut} {
		if s < 0 || s > 1 || math.IsNaN(s) {
			return nil, fmt.Errorf("faultproxy: share %v is not in [0, 1]", s)
		}
	}
	if cfg.Lifetime <= 0 {
		cfg.Lifetime = 5 * time.Minute
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 32 << 20
	}
	if cfg.CapacityWCU > 0 && cfg.BurstWCU <= 0 {
		cfg.BurstWCU = cfg.CapacityWCU
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &Proxy{
		cfg: cfg, target: target, ln: ln,
		rng:     rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		filled:  time.Now(),
		parts:   map[string]*bucket{},
		hot:     map[string]int64{},
		url:     "http://" + ln.Addr().String(),
		done:    make(chan struct{}),
		closing: make(chan struct{}),
		client: &http.Client{
			Timeout: 60 * time.Second,
			Transport: &http.Transport{
				MaxIdleConns: 64, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second,
				DisableCompression: true,
			},
		},
	}
	if !cfg.StartEmpty {
		p.tokens = cfg.BurstWCU
	}
	if len(cfg.Operations) > 0 {
		p.ops = map[string]bool{}
		for _, op := range cfg.Operations {
			p.ops[op] = true
		}
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		_ = p.srv.Serve(ln)
		close(p.done)
	}()
	go func() {
		t := time.NewTimer(cfg.Lifetime)
		defer t.Stop()
		select {
		case <-t.C:
			p.Close()
		case <-p.closing:
		}
	}()
	return p, nil
}

// URL is the proxy's endpoint, to give a DynamoDB client as its BaseEndpoint.
func (p *Proxy) URL() string { return p.url }

// Close stops the proxy and closes its connections. It is safe to call more
// than once.
func (p *Proxy) Close() {
	p.closeOnce.Do(func() {
		close(p.closing)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := p.srv.Shutdown(ctx); err != nil {
			_ = p.srv.Close()
		}
		<-p.done
		p.client.CloseIdleConnections()
	})
}

// HotItems counts, by "index/value" ("/value" for the table's partition
// key), the items partition mode refused for that key's limit.
func (p *Proxy) HotItems() map[string]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	hot := make(map[string]int64, len(p.hot))
	for k, v := range p.hot {
		hot[k] = v
	}
	return hot
}

// Counts returns a snapshot of the counters.
func (p *Proxy) Counts() Counts {
	return Counts{
		KeyRangeItems:    p.n.keyRangeItems.Load(),
		TableItems:       p.n.tableItems.Load(),
		Rejected:         p.n.rejected.Load(),
		Failed:           p.n.failed.Load(),
		Requests:         p.n.requests.Load(),
		Forwarded:        p.n.forwarded.Load(),
		Throttled:        p.n.throttled.Load(),
		ServerErrors:     p.n.server.Load(),
		Partial:          p.n.partial.Load(),
		HeldBackItems:    p.n.heldBack.Load(),
		CutBefore:        p.n.cutBefore.Load(),
		CutAfter:         p.n.cutAfter.Load(),
		CapacityRejected: p.n.capRejected.Load(),
		AcceptedWCU:      p.n.acceptedWCU.Load(),
		AcceptedItems:    p.n.acceptedItems.Load(),
	}
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// fault is what to do with one request.
type fault int

const (
	none fault = iota
	cutBefore
	cutAfter
	throttle
	throttleAlt
	server500
	server503
	partial
)

func (p *Proxy) decide(faulty bool, batch bool) fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Draw every number whatever the outcome, so that one knob does not
	// shift the faults another knob produces.
	rCut, rHalf, rThrottle, rServer, rPartial := p.rng.Float64(), p.rng.Float64(), p.rng.Float64(), p.rng.Float64(), p.rng.Float64()
	if !faulty {
		return none
	}
	switch {
	case rCut < p.cfg.Cut:
		if rHalf < 0.5 {
			return cutBefore
		}
		return cutAfter
	case rThrottle < p.cfg.Throttle:
		p.flip = !p.flip
		if p.flip {
			return throttle
		}
		return throttleAlt
	case rServer < p.cfg.ServerError:
		p.flip = !p.flip
		if p.flip {
			return server500
		}
		return server503
	case batch && rPartial < p.cfg.Partial:
		return partial
	}
	return none
}

// keep draws how many of n items a partial forward keeps: 1 to n-1.
func (p *Proxy) keep(n int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return 1 + p.rng.IntN(n-1)
}

// SetCapacity changes the write capacity the proxy enforces while it
// serves, as a table whose throughput is raised or lowered; 0 lifts the
// limit. The bucket keeps its tokens and holds at most one second's worth
// of the new capacity.
func (p *Proxy) SetCapacity(wcu float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cfg.CapacityWCU <= 0 {
		p.tokens, p.filled = 0, time.Now()
	}
	p.cfg.CapacityWCU = wcu
	p.cfg.BurstWCU = wcu
}

// take spends cost tokens if the bucket holds them. A cost above the burst
// passes when the bucket is full, leaving it in debt, so that no request is
// refused forever.
func (p *Proxy) take(cost float64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cfg.CapacityWCU <= 0 {
		return true
	}
	now := time.Now()
	p.tokens = math.Min(p.cfg.BurstWCU, p.tokens+now.Sub(p.filled).Seconds()*p.cfg.CapacityWCU)
	p.filled = now
	if p.tokens >= math.Min(cost, p.cfg.BurstWCU) {
		p.tokens -= cost
		return true
	}
	return false
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.n.requests.Add(1)
	body, err := io.ReadAll(io.LimitReader(r.Body, p.cfg.MaxBody+1))
	if err != nil {
		http.Error(w, "faultproxy: reading the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if int64(len(body)) > p.cfg.MaxBody {
		http.Error(w, "faultproxy: request body over the limit", http.StatusRequestEntityTooLarge)
		return
	}
	op := operation(r.Header.Get("X-Amz-Target"))
	if p.cfg.OnRequest != nil {
		p.cfg.OnRequest(op, body)
	}
	if p.cfg.FailRequest != nil {
		if typ, msg, ok := p.cfg.FailRequest(op, body); ok {
			p.n.failed.Add(1)
			writeError(w, http.StatusBadRequest, "com.amazonaws.dynamodb.v20120810#"+typ, msg+" (injected by faultproxy)", nil)
			return
		}
	}
	batch := op == "BatchWriteItem"
	f := p.decide(p.ops == nil || p.ops[op], batch)

	var req *batchRequest
	if batch {
		req, _ = parseBatch(body) // an unreadable body is forwarded as it is
	}

	if p.inject(w, f, req) {
		return
	}

	if batch && req != nil && p.refuse(w, req) {
		return
	}

	body, held := p.holdBack(f, req, body)
	if batch && req != nil && p.cfg.PartitionWCU > 0 {
		var ok bool
		if body, held, ok = p.admitPartitions(w, req, body, held); !ok {
			return
		}
	}
	var cost float64
	var items int
	if req != nil {
		cost, items = req.cost(p.cfg.Spec)
	}
	if batch && p.cfg.PartitionWCU <= 0 && !p.take(cost) {
		p.n.capRejected.Add(1)
		var reasons []Reason
		for _, t := range tablesOf(req) {
			reasons = append(reasons, Reason{Reason: TableCapacity, Table: t})
		}
		writeError(w, http.StatusBadRequest, "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
			"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API. (capacity enforced by faultproxy)", reasons)
		return
	}

	status, header, respBody, err := p.forward(r, body)
	if err != nil {
		http.Error(w, "faultproxy: forwarding: "+err.Error(), http.StatusBadGateway)
		return
	}
	p.n.forwarded.Add(1)
	if batch && status == http.StatusOK {
		p.n.acceptedWCU.Add(int64(cost))
		p.n.acceptedItems.Add(int64(items))
	}
	if f == cutAfter {
		p.n.cutAfter.Add(1)
		cut(w)
		return
	}
	if held != nil && status == http.StatusOK {
		if merged, err := mergeUnprocessed(respBody, held); err == nil {
			respBody = merged
		}
	}
	writeResponse(w, status, header, respBody)
}

// inject answers the request with the fault f decided on, if it is one
// that is answered before the request is forwarded; true when it was.
func (p *Proxy) inject(w http.ResponseWriter, f fault, req *batchRequest) bool {
	switch f {
	case cutBefore:
		p.n.cutBefore.Add(1)
		cut(w)
		return true
	case throttle:
		p.n.throttled.Add(1)
		writeError(w, http.StatusBadRequest, "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
			"The level of configured provisioned throughput for the table was exceeded. (injected by faultproxy)", p.injectedReasons(req))
		return true
	case throttleAlt:
		p.n.throttled.Add(1)
		writeError(w, http.StatusBadRequest, "com.amazonaws.dynamodb.v20120810#ThrottlingException",
			"Rate of requests exceeds the allowed throughput. (injected by faultproxy)", p.injectedReasons(req))
		return true
	case server500:
		p.n.server.Add(1)
		writeError(w, http.StatusInternalServerError, "com.amazonaws.dynamodb.v20120810#InternalServerError",
			"Internal server error (injected by faultproxy)", nil)
		return true
	case server503:
		p.n.server.Add(1)
		writeError(w, http.StatusServiceUnavailable, "com.amazonaws.dynamodb.v20120810#ServiceUnavailable",
			"Service unavailable (injected by faultproxy)", nil)
		return true
	}
	return false
}

// refuse answers a batch that puts an item carrying Config.Reject's or
// FailItem's text with the error DynamoDB would give; true when it did.
func (p *Proxy) refuse(w http.ResponseWriter, req *batchRequest) bool {
	if p.cfg.Reject != "" && req.puts(p.cfg.Reject) {
		p.n.rejected.Add(1)
		writeError(w, http.StatusBadRequest, "com.amazonaws.dynamodb.v20120810#ValidationException",
			"One or more parameter values were invalid: an item carries "+p.cfg.Reject+" (refused by faultproxy)", nil)
		return true
	}

	if p.cfg.FailItem != "" && req.puts(p.cfg.FailItem) {
		p.n.failed.Add(1)
		writeError(w, http.StatusBadRequest, "com.amazonaws.dynamodb.v20120810#AccessDeniedException",
			"User is not authorized to perform dynamodb:BatchWriteItem: an item carries "+p.cfg.FailItem+" (failed by faultproxy)", nil)
		return true
	}
	return false
}

// holdBack keeps back part of a partial batch: the body to forward and
// the requests to answer as unprocessed.
func (p *Proxy) holdBack(f fault, req *batchRequest, body []byte) ([]byte, map[string][]json.RawMessage) {
	var held map[string][]json.RawMessage
	if f == partial && req != nil && req.items() >= 2 {
		var kept []byte
		kept, held = req.split(p.keep(req.items()))
		if kept != nil {
			body = kept
			p.n.partial.Add(1)
			for _, h := range held {
				p.n.heldBack.Add(int64(len(h)))
			}
		} else {
			held = nil
		}
	}
	return body, held
}

// admitPartitions keeps the batch's requests within each partition's
// capacity; false when none is admitted and the batch was answered with a
// throttle.
func (p *Proxy) admitPartitions(w http.ResponseWriter, req *batchRequest, body []byte, held map[string][]json.RawMessage) ([]byte, map[string][]json.RawMessage, bool) {
	kept, refused, reasons := p.admit(req)
	if len(kept) == 0 {
		p.n.capRejected.Add(1)
		writeError(w, http.StatusBadRequest, "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
			"The level of configured provisioned throughput for the table was exceeded. (partitions enforced by faultproxy)", reasons)
		return nil, nil, false
	}
	if len(refused) > 0 {
		body = req.keepOnly(kept)
		if held == nil {
			held = map[string][]json.RawMessage{}
		}
		for t, rs := range refused {
			held[t] = append(held[t], rs...)
		}
	}
	return body, held, true
}

// writeResponse writes DynamoDB's answer, its body perhaps changed.
func writeResponse(w http.ResponseWriter, status int, header http.Header, respBody []byte) {
	for k, vs := range header {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "X-Amz-Crc32", "Connection", "Transfer-Encoding":
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	// The SDK checks DynamoDB's CRC32 of the body; the body may have changed.
	w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(respBody)), 10))
	w.Header().Set("Content-Length", strconv.Itoa(len(respBody)))
	w.WriteHeader(status)
	_, _ = w.Write(respBody)
}

func (p *Proxy) forward(r *http.Request, body []byte) (int, http.Header, []byte, error) {
	u := *p.target
	u.Path = r.URL.Path
	u.RawQuery = r.URL.RawQuery
	out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	for k, vs := range r.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Connection", "Accept-Encoding":
			continue
		}
		out.Header[k] = vs
	}
	resp, err := p.client.Do(out)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, p.cfg.MaxBody+1))
	if err != nil {
		return 0, nil, nil, err
	}
	if int64(len(data)) > p.cfg.MaxBody {
		return 0, nil, nil, errors.New("response body over the limit")
	}
	return resp.StatusCode, resp.Header, data, nil
}

// cut closes the client's connection without an answer.
func cut(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // a reset, as a dropped connection looks
	}
	_ = conn.Close()
}

// writeError answers as DynamoDB does: the type in x-amzn-ErrorType and in
// the JSON body's __type, the throttling reasons in the body's
// ThrottlingReasons (throttlingReasons for a ThrottlingException, as
// DynamoDB spells it there).
func writeError(w http.ResponseWriter, status int, typ, msg string, reasons []Reason) {
	short := typ[strings.LastIndexByte(typ, '#')+1:]
	fields := map[string]any{"__type": typ, "message": msg}
	if len(reasons) > 0 {
		list := make([]map[string]string, len(reasons))
		for i, r := range reasons {
			list[i] = map[string]string{"reason": r.Reason, "resource": ARN(r.Table, r.Index)}
		}
		name := "ThrottlingReasons"
		if short == "ThrottlingException" {
			name = "throttlingReasons"
		}
		fields[name] = list
	}
	body, _ := json.Marshal(fields)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-Errortype", short)
	w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func operation(target string) string {
	if i := strings.LastIndexByte(target, '.'); i >= 0 {
		return target[i+1:]
	}
	return target
}

// batchRequest is a BatchWriteItem body, kept raw where the proxy does not
// need to look.
type batchRequest struct {
	fields map[string]json.RawMessage
	tables []string // in a fixed order
	reqs   map[string][]json.RawMessage
}

func parseBatch(body []byte) (*batchRequest, error) {
	var b batchRequest
	if err := json.Unmarshal(body, &b.fields); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b.fields["RequestItems"], &b.reqs); err != nil {
		return nil, err
	}
	for t := range b.reqs {
		b.tables = append(b.tables, t)
	}
	slices.Sort(b.tables)
	return &b, nil
}

func (b *batchRequest) items() int {
	n := 0
	for _, rs := range b.reqs {
		n += len(rs)
	}
	return n
}

// split keeps the first k requests (tables in name order) and returns the
// rewritten body and the requests held back, by table.
func (b *batchRequest) split(k int) ([]byte, map[string][]json.RawMessage) {
	kept := map[string][]json.RawMessage{}
	held := map[string][]json.RawMessage{}
	for _, t := range b.tables {
		for _, r := range b.reqs[t] {
			if k > 0 {
				kept[t] = append(kept[t], r)
				k--
			} else {
				held[t] = append(held[t], r)
			}
		}
	}
	fields := make(map[string]json.RawMessage, len(b.fields))
	for k, v := range b.fields {
		fields[k] = v
	}
	ri, err := json.Marshal(kept)
	if err != nil {
		return nil, nil
	}
	fields["RequestItems"] = ri
	body, err := json.Marshal(fields)
	if err != nil {
		return nil, nil
	}
	b.reqs = kept
	return body, held
}

// cost is the WCU and item count of the requests b forwards.
// puts reports whether the batch puts an item that has attribute name.
func (b *batchRequest) puts(name string) bool {
	for _, rs := range b.reqs {
		for _, raw := range rs {
			var wr struct {
				PutRequest *struct{ Item map[string]json.RawMessage }
			}
			if json.Unmarshal(raw, &wr) == nil && wr.PutRequest != nil && wr.PutRequest.Item[name] != nil {
				return true
			}
		}
	}
	return false
}

func (b *batchRequest) cost(specs map[string]layouts.TableSpec) (float64, int) {
	total, items := 0.0, 0
	for t, rs := range b.reqs {
		spec := specs[t]
		for _, raw := range rs {
			items++
			var wr struct {
				PutRequest *struct {
					Item json.RawMessage
				}
				DeleteRequest *struct {
					Key json.RawMessage
				}
			}
			if err := json.Unmarshal(raw, &wr); err != nil || wr.PutRequest == nil {
				total += float64(1 + len(spec.Indexes))
				continue
			}
			item, err := ddbjson.DecodeItem(wr.PutRequest.Item)
			if err != nil {
				total++
				continue
			}
			total += float64(transform.WCU(transform.ItemSize(item)) * (1 + indexesOf(spec, item)))
		}
	}
	return total, items
}

// indexesOf counts the indexes whose keys the item has. The proxy plays the
// service, so it does not borrow the writer's own accounting.
func indexesOf(spec layouts.TableSpec, item map[string]types.AttributeValue) int {
	n := 0
	for _, ix := range spec.Indexes {
		if item[ix.PK.Name] == nil {
			continue
		}
		if ix.SK != nil && item[ix.SK.Name] == nil {
			continue
		}
		n++
	}
	return n
}

// mergeUnprocessed adds the held-back requests to a BatchWriteItem
// response's UnprocessedItems.
func mergeUnprocessed(resp []byte, held map[string][]json.RawMessage) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(resp, &fields); err != nil {
		return nil, err
	}
	un := map[string][]json.RawMessage{}
	if raw, ok := fields["UnprocessedItems"]; ok {
		if err := json.Unmarshal(raw, &un); err != nil {
			return nil, err
		}
	}
	for t, rs := range held {
		un[t] = append(un[t], rs...)
	}
	raw, err := json.Marshal(un)
	if err != nil {
		return nil, err
	}
	fields["UnprocessedItems"] = raw
	return json.Marshal(fields)
}

// tablesOf is the tables a BatchWriteItem writes to, in name order.
func tablesOf(req *batchRequest) []string {
	if req == nil {
		return nil
	}
	return req.tables
}

// injectedReasons is the next of Config.Reasons for an injected throttle,
// naming the request's first table, or nil.
func (p *Proxy) injectedReasons(req *batchRequest) []Reason {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.cfg.Reasons) == 0 {
		return nil
	}
	r := p.cfg.Reasons[p.reason%len(p.cfg.Reasons)]
	p.reason++
	if r.Table == "" {
		if ts := tablesOf(req); len(ts) > 0 {
			r.Table = ts[0]
		}
	}
	return []Reason{r}
}

// bucket is a token bucket of one partition key value.
type bucket struct {
	tokens float64
	filled time.Time
}

// fill adds what the time since the last fill earned, up to one second's
// worth of rate.
func (b *bucket) fill(now time.Time, rate float64) {
	b.tokens = math.Min(rate, b.tokens+now.Sub(b.filled).Seconds()*rate)
	b.filled = now
}

// admit takes a BatchWriteItem's items one by one in partition mode: an
// item is accepted when the table and every partition it writes (the
// table's, and each index's it lands in) have its WCU left, and then costs
// them that. It returns the accepted and the refused requests' positions
// by table, and the reasons of the refusals.
func (p *Proxy) admit(req *batchRequest) (kept, refused map[string][]json.RawMessage, reasons []Reason) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	kept, refused = map[string][]json.RawMessage{}, map[string][]json.RawMessage{}
	seen := map[Reason]bool{}
	for _, t := range req.tables {
		spec := p.cfg.Spec[t]
		for _, raw := range req.reqs[t] {
			item, wcu, put := decodeWrite(raw)
			cost := float64(wcu * (1 + indexesOf(spec, item)))
			if !put {
				cost = float64(1 + len(spec.Indexes))
			}
			// The partitions this write lands in: the table's, and each
			// index's (a delete's index keys are unknown here).
			type part struct {
				index, value string
			}
			parts := []part{{"", keyText(item[spec.PK.Name])}}
			if put {
				for _, ix := range spec.Indexes {
					if item[ix.PK.Name] == nil || (ix.SK != nil && item[ix.SK.Name] == nil) {
						continue
					}
					parts = append(parts, part{ix.Name, keyText(item[ix.PK.Name])})
				}
			}
			var why *Reason
			if p.cfg.CapacityWCU > 0 {
				p.tokens = math.Min(p.cfg.BurstWCU, p.tokens+now.Sub(p.filled).Seconds()*p.cfg.CapacityWCU)
				p.filled = now
				if p.tokens < cost {
					why = &Reason{Reason: TableCapacity, Table: t}
				}
			}
			buckets := make([]*bucket, len(parts))
			for i, pt := range parts {
				id := t + "\x00" + pt.index + "\x00" + pt.value
				b := p.parts[id]
				if b == nil {
					b = &bucket{filled: now}
					if !p.cfg.StartEmpty {
						b.tokens = p.cfg.PartitionWCU
					}
					p.parts[id] = b
				}
				b.fill(now, p.cfg.PartitionWCU)
				buckets[i] = b
				if why == nil && b.tokens < math.Min(float64(wcu), p.cfg.PartitionWCU) {
					r := Reason{Reason: TableKeyRange, Table: t}
					if pt.index != "" {
						r = Reason{Reason: IndexKeyRange, Index: pt.index, Table: t}
					}
					why = &r
					p.hot[pt.index+"/"+pt.value]++
				}
			}
			if why != nil {
				refused[t] = append(refused[t], raw)
				if why.Reason == TableCapacity {
					p.n.tableItems.Add(1)
				} else {
					p.n.keyRangeItems.Add(1)
				}
				if !seen[*why] {
					seen[*why] = true
					reasons = append(reasons, *why)
				}
				continue
			}
			if p.cfg.CapacityWCU > 0 {
				p.tokens -= cost
			}
			for _, b := range buckets {
				b.tokens -= float64(wcu)
			}
			kept[t] = append(kept[t], raw)
		}
	}
	if len(allItems(kept)) == 0 {
		return nil, refused, reasons
	}
	return kept, refused, reasons
}

func allItems(m map[string][]json.RawMessage) []json.RawMessage {
	var all []json.RawMessage
	for _, rs := range m {
		all = append(all, rs...)
	}
	return all
}

// decodeWrite reads one WriteRequest: the item (or the key of a delete),
// its WCU, and whether it is a put.
func decodeWrite(raw json.RawMessage) (map[string]types.AttributeValue, int, bool) {
	var wr struct {
		PutRequest *struct {
			Item json.RawMessage
		}
		DeleteRequest *struct {
			Key json.RawMessage
		}
	}
	if err := json.Unmarshal(raw, &wr); err != nil {
		return nil, 1, false
	}
	if wr.PutRequest != nil {
		item, err := ddbjson.DecodeItem(wr.PutRequest.Item)
		if err != nil {
			return nil, 1, true
		}
		return item, transform.WCU(transform.ItemSize(item)), true
	}
	if wr.DeleteRequest != nil {
		key, _ := ddbjson.DecodeItem(wr.DeleteRequest.Key)
		return key, 1, false
	}
	return nil, 1, false
}

// keyText renders a key value for the proxy's counts.
func keyText(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return v.Value
	case *types.AttributeValueMemberB:
		return fmt.Sprintf("%x", v.Value)
	}
	return ""
}

// keepOnly rewrites the request to the kept requests and returns its body.
func (b *batchRequest) keepOnly(kept map[string][]json.RawMessage) []byte {
	fields := make(map[string]json.RawMessage, len(b.fields))
	for k, v := range b.fields {
		fields[k] = v
	}
	ri, _ := json.Marshal(kept)
	fields["RequestItems"] = ri
	body, _ := json.Marshal(fields)
	b.reqs = kept
	b.tables = b.tables[:0]
	for t := range kept {
		b.tables = append(b.tables, t)
	}
	slices.Sort(b.tables)
	return body
}
