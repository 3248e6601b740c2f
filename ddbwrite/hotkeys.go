package ddbwrite

import (
	"sync"
	"time"

	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/layouts"
)

// Per-key pacing. DynamoDB serves each partition key value of a table and of
// each index at most about 1,000 WCU a second; past that it throttles the
// writes of that key (KeyRangeThroughputExceeded) while the rest of the
// table has capacity to spare. Cutting the shared rate for it would slow
// every key to the pace of the hottest one, so the writer holds back that
// key's items instead, under a limiter of their own, and keeps the rest
// flowing under the shared one.
//
// A part is one partition key value a write lands in: the table's
// ("\x00value") or an index's ("Index\x00value").

// PartsOf returns the partitions a write lands in: the table's, and each
// index's whose keys a put carries (a delete's index keys are unknown).
func PartsOf(spec layouts.TableSpec, item layouts.Item, put bool) []string {
	parts := make([]string, 0, 1+len(spec.Indexes))
	parts = append(parts, "\x00"+layouts.KeyOf(layouts.TableSpec{PK: spec.PK}, item))
	if !put {
		return parts
	}
	for _, ix := range spec.Indexes {
		if item[ix.PK.Name] == nil || (ix.SK != nil && item[ix.SK.Name] == nil) {
			continue
		}
		parts = append(parts, ix.Name+"\x00"+layouts.KeyOf(layouts.TableSpec{PK: ix.PK}, item))
	}
	return parts
}

// partIndex is the index a part belongs to, "" for the table.
func partIndex(part string) string {
	for i := 0; i < len(part); i++ {
		if part[i] == 0 {
			return part[:i]
		}
	}
	return part
}

// parts returns r's partitions, computed when first asked for: a run that
// meets no throttle never needs them. A request is with one worker at a
// time, and passes between them under h.mu.
func (h *hotKeys) parts(r *request) []string {
	if r.parts == nil {
		r.parts = PartsOf(h.spec, r.item, r.wr.PutRequest != nil)
	}
	return r.parts
}

// hotKeys holds the partitions DynamoDB throttled one by one, each with its
// own limiter, and the requests waiting for them. It is safe for concurrent
// use.
type hotKeys struct {
	spec        layouts.TableSpec
	mu          sync.Mutex
	keys        map[string]*ddb.WriteLimiter
	held        []heldReq
	live        int           // of held, those not spooled (see heldSpool)
	leave       bool          // drop the spooled ones: they wait for another run
	wake        chan struct{} // closed and replaced when held changes
	suspects    map[string]time.Time
	lastSuspect time.Time
	last        map[string]time.Time // each key's last throttle
	swept       time.Time
	trace       func(format string, args ...any)
}

// keyCeiling is the most one partition key value takes, in WCU a second,
// on DynamoDB.
const keyCeiling = 1000

// coolFor is how long a hot key is kept without a throttle once there are
// many.
const coolFor = 10 * time.Second

type heldReq struct {
	r   *request
	due time.Time
}

// suspectFor is how long a partition that a lone unprocessed item named
// stays a suspect: a second lone refusal of it within that time makes it
// hot.
const suspectFor = 2 * time.Second

func (h *hotKeys) init(spec layouts.TableSpec, trace func(string, ...any)) {
	h.spec = spec
	h.keys = map[string]*ddb.WriteLimiter{}
	h.suspects = map[string]time.Time{}
	h.last = map[string]time.Time{}
	h.wake = make(chan struct{})
	h.trace = trace
}

// split books the hot partitions of reqs and returns the requests whose
// partitions all have room now, and those that must wait for one.
func (h *hotKeys) split(reqs []*request) (ready, held []*request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.keys) == 0 {
		return reqs, nil
	}
	// What each hot partition is asked for by this batch, booked at once so
	// that the limiter sees batches, not single items.
	need := map[string]int{}
	for _, r := range reqs {
		for _, p := range h.parts(r) {
			if h.keys[p] != nil {
				need[p] += r.unit
			}
		}
	}
	if len(need) == 0 {
		return reqs, nil
	}
	wait := map[string]time.Duration{}
	for p, n := range need {
		if d := h.keys[p].Book(n); d > 0 {
			wait[p] = d
		}
	}
	if len(wait) == 0 {
		return reqs, nil
	}
	now := time.Now()
	for _, r := range reqs {
		var d time.Duration
		for _, p := range h.parts(r) {
			d = max(d, wait[p])
		}
		if d == 0 {
			ready = append(ready, r)
			continue
		}
		held = append(held, r)
		h.held = append(h.held, heldReq{r: r, due: now.Add(d)})
		if r.spooled == 0 {
			h.live++
		}
	}
	if len(held) > 0 {
		close(h.wake)
		h.wake = make(chan struct{})
	}
	return ready, held
}

// due takes up to n held requests whose time has come, no key twice, and
// returns them with the time the next one comes (zero if none is held) and
// a channel closed when more are held.
func (h *hotKeys) due(n int) ([]*request, time.Time, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	var out []*request
	var next time.Time
	keys := map[string]bool{}
	kept := h.held[:0]
	for _, hr := range h.held {
		if h.leave && hr.r.spooled != 0 {
			continue
		}
		if len(out) < n && !hr.due.After(now) && !keys[hr.r.key] {
			keys[hr.r.key] = true
			out = append(out, hr.r)
			if hr.r.spooled == 0 {
				h.live--
			}
			continue
		}
		kept = append(kept, hr)
		if next.IsZero() || hr.due.Before(next) {
			next = hr.due
		}
	}
	clear(h.held[len(kept):])
	h.held = kept
	return out, next, h.wake
}

// allHot says whether every one of reqs lands in a partition that is hot
// already.
func (h *hotKeys) allHot(reqs []*request) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.keys) == 0 {
		return false
	}
next:
	for _, r := range reqs {
		for _, p := range h.parts(r) {
			if h.keys[p] != nil {
				continue next
			}
		}
		return false
	}
	return true
}

// holdFor holds reqs, refused for their hot partitions, for d: they wait
// as the items split holds, and the worker goes on with other keys'
// items instead of backing off with them.
func (h *hotKeys) holdFor(reqs []*request, d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	due := time.Now().Add(d)
	for _, r := range reqs {
		h.held = append(h.held, heldReq{r: r, due: due})
		if r.spooled == 0 {
			h.live++
		}
	}
	close(h.wake)
	h.wake = make(chan struct{})
}

// takeLive takes the held requests that are not spooled yet, oldest
// first; with batch, only when there are MaxBatchItems of them at least.
func (h *hotKeys) takeLive(batch bool) []heldReq {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.live == 0 || (batch && h.live < MaxBatchItems) {
		return nil
	}
	var out []heldReq
	kept := h.held[:0]
	for _, hr := range h.held {
		if hr.r.spooled == 0 {
			out = append(out, hr)
		} else {
			kept = append(kept, hr)
		}
	}
	clear(h.held[len(kept):])
	h.held = kept
	h.live = 0
	return out
}

// changed returns a channel closed when the held requests next change.
func (h *hotKeys) changed() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.wake
}

// leaveSpooled drops the spooled requests held, and the ones held from
// now on: the spool keeps them for the run that resumes.
func (h *hotKeys) leaveSpooled() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.leave = true
	close(h.wake)
	h.wake = make(chan struct{})
}

// hold holds requests until their due times: spooled ones, or the ones
// takeLive took that could not be spooled.
func (h *hotKeys) hold(hrs []heldReq) {
	if len(hrs) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held = append(h.held, hrs...)
	for _, hr := range hrs {
		if hr.r.spooled == 0 {
			h.live++
		}
	}
	close(h.wake)
	h.wake = make(chan struct{})
}

// throttled records a key-range throttle of parts, for a call sent at sent:
// each gets its limiter, which cuts.
func (h *hotKeys) throttled(parts map[string]int, sent time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	if len(h.keys) > 64 && now.Sub(h.swept) > coolFor {
		// Forget the keys that went a while without a throttle: most
		// partitions named with others by one throttle were not hot.
		for p, t := range h.last {
			if now.Sub(t) > coolFor {
				delete(h.keys, p)
				delete(h.last, p)
			}
		}
		h.swept = now
	}
	for p := range parts {
		h.last[p] = now
		lim := h.keys[p]
		if lim == nil {
			// A key's partition takes at most keyCeiling: the key starts
			// there, and its first cut lands under it; the next one, from
			// what the key was seen to take.
			lim = ddb.NewWriteLimiter(keyCeiling, 1)
			h.keys[p] = lim
		}
		if lim.Throttled(sent) && h.trace != nil {
			h.trace("key %q throttled: its limit %.0f WCU/s", p, lim.Limit())
		}
	}
}

// success records units written to hot partitions.
func (h *hotKeys) success(reqs []*request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.keys) == 0 {
		return
	}
	got := map[string]int{}
	for _, r := range reqs {
		for _, p := range h.parts(r) {
			if h.keys[p] != nil {
				got[p] += r.unit
			}
		}
	}
	for p, n := range got {
		h.keys[p].Success(n)
	}
}

// fromReasons returns the partitions of reqs that key-range throttling
// reasons name, with the units reqs ask of each, or nil when a reason
// speaks of the table's or an index's capacity (or there is none): the
// shared rate must be cut then.
func (h *hotKeys) fromReasons(reqs []*request, reasons []ddb.ThrottleReason) map[string]int {
	if len(reasons) == 0 {
		return nil
	}
	indexes := map[string]bool{}
	for _, r := range reasons {
		if !r.KeyRange() {
			return nil
		}
		indexes[r.Index] = true
	}
	parts := map[string]int{}
	for _, r := range reqs {
		for _, p := range h.parts(r) {
			if indexes[partIndex(p)] {
				parts[p] += r.unit
			}
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return parts
}

// fromUnprocessed guesses whether the items DynamoDB handed back (left) of
// a call that wrote others (written) were refused for their keys, not for
// the table's capacity, and returns those partitions, or nil: the shared
// rate must be cut then. UnprocessedItems carry no reason, so it reads the
// keys. Two or more items handed back are a key's when they share a
// partition: of those they share, the one fewest items of the call have
// (when every item of the call has it, as a single tree's TreeId, pacing
// that key paces the whole call: a shared cut by another name). A lone
// item handed back is a key's when one of its partitions is hot already,
// or when a lone refusal named it within suspectFor (a partition every
// item of the call has tells nothing there); otherwise its partitions
// become the suspects, and it cuts the shared rate unless it is the first
// lone refusal within suspectFor (then it returns an empty map: no key, no
// cut).
func (h *hotKeys) fromUnprocessed(written, left []*request) map[string]int {
	if len(written) == 0 || len(left) == 0 {
		return nil // all handed back: nothing to compare with
	}
	size := len(written) + len(left)
	inCall := map[string]int{}
	for _, r := range written {
		for _, p := range h.parts(r) {
			inCall[p]++
		}
	}
	inLeft := map[string]int{}
	units := map[string]int{}
	for _, r := range left {
		for _, p := range h.parts(r) {
			inCall[p]++
			inLeft[p]++
			units[p] += r.unit
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(left) >= 2 {
		best := 0
		for p, c := range inLeft {
			if c == len(left) && (best == 0 || inCall[p] < best) {
				best = inCall[p]
			}
		}
		if best > 0 {
			hot := map[string]int{}
			for p, c := range inLeft {
				if c == len(left) && inCall[p] == best {
					hot[p] = units[p]
				}
			}
			return hot
		}
	}
	hot := map[string]int{}
	known := 0
	for _, r := range left {
		found := false
		for _, p := range h.parts(r) {
			if h.keys[p] != nil {
				hot[p] += r.unit
				found = true
			}
		}
		if found {
			known++
		}
	}
	if known == len(left) {
		return hot
	}
	if len(left) != 1 {
		return nil
	}
	now := time.Now()
	for p := range inLeft {
		if t, seen := h.suspects[p]; seen && now.Sub(t) < suspectFor && inCall[p] < size {
			return map[string]int{p: units[p]}
		}
	}
	// A first lone refusal is retried without a cut: if the table is short
	// of capacity, more come, and the next that names no suspect cuts.
	first := now.Sub(h.lastSuspect) >= suspectFor
	if len(h.suspects) > 4096 {
		clear(h.suspects)
	}
	for p := range inLeft {
		if inCall[p] < size {
			h.suspects[p] = now
		}
	}
	h.lastSuspect = now
	if first {
		return map[string]int{}
	}
	return nil
}
