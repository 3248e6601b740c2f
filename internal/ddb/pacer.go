package ddb

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// The two pacers. Reads and writes are both held to capacity units per
// second, but they are not paced the same way, for reasons that matter:
//
//   - A write's cost is known before it is sent (from the items' sizes), so
//     the WriteLimiter makes it wait first. A read's cost is known only from
//     the response, so the ReadPacer makes the reader pay after the fact,
//     and a burst at the start may exceed the cap by one page per worker.
//   - The WriteLimiter adapts: without a cap it has to find the table's
//     capacity, and throttled or unprocessed writes cut its limit (AIMD).
//     The ReadPacer holds a fixed cap the user chose (--max-rcu); a
//     throttled read costs nothing and is only retried after a backoff.
//   - Their bursts differ: a tenth of a second of the write limit, against
//     one second of the read cap, which TestScanRateCap (exporter) and the
//     writer's tuning (TestWriterFindsCapacity) each rely on.
//
// What they share is the waiting (wait) and the backoff of the callers that
// use them (Backoff).

// The limiter's tuning. They are variables so that tests can shorten time.
var (
	// aimdDecrease is the multiplicative cut on a congestion signal.
	aimdDecrease = 0.85
	// aimdIncreasePerSec is the additive increase, per second of writing at
	// the limit, as a share of the rate a cut started from: the climb back
	// there takes (1-aimdDecrease)/aimdIncreasePerSec seconds, whatever the
	// scale.
	aimdIncreasePerSec = 0.05
	// aimdStartupDoubling is how long the limit takes to double after the
	// first cut of an unlimited limiter, until the next cut: that first
	// estimate rests on a fraction of a second and may be far too low.
	aimdStartupDoubling = 1500 * time.Millisecond
	// aimdPastBase slows the additive climb once the limit is back at the
	// rate the last cut started from: the capacity is near, and a slow
	// climb past it drains the table's burst credit over seconds instead of
	// throttling again within one.
	aimdPastBase = 0.25
	// aimdCooldown is the least time between two cuts. The batches in flight
	// when the service starts throttling all come back throttled within
	// about one round trip; they are one signal, not many. A throttle of a
	// call sent before the last cut is never a new signal (see Throttled).
	aimdCooldown = 400 * time.Millisecond
	// aimdCutPause is how long a cut holds every writer back.
	aimdCutPause = 200 * time.Millisecond
	// aimdWindow is how far back the accepted rate is measured, never
	// before the last cut: what came before it says nothing of the limit
	// the cut set.
	aimdWindow = time.Second
	// aimdMinSpan is the shortest span a rate is measured over, so that the
	// first few batches of a run do not make an absurd rate.
	aimdMinSpan = 200 * time.Millisecond
	// aimdBurst is how much unused rate the limiter lets through at once
	// after an idle spell.
	aimdBurst = 100 * time.Millisecond
	// aimdCalm is how long the limit stays in its additive climb after a
	// cut before it probes for more capacity, doubling every
	// aimdProbeDoubling: capacity comes back (a throttle spell ends, a
	// table scales up), and a linear climb from a low cut would take
	// minutes to find it. A probe that ends in a cut doubles the calm spell,
	// up to aimdMaxCalm, so that a steady capacity is probed less and less
	// often; a probe that at least doubles the limit resets it.
	aimdCalm          = 8 * time.Second
	aimdMaxCalm       = 30 * time.Second
	aimdProbeDoubling = time.Second
	// aimdMinRate is the floor of the limit, in WCU per second.
	aimdMinRate = 1.0
	// aimdPeakFloor keeps the limit at or above this share of the best rate
	// the service accepted in a second over the last aimdPeakWindow. Faults
	// that do not come from capacity (a spell of 5xx, a flaky network) come
	// at any rate, and cutting on each would walk the limit down to nothing;
	// a real drop of capacity below the floor still ends in backoff, as
	// every throttled batch waits longer before its next try.
	aimdPeakFloor  = 0.25
	aimdPeakWindow = 30 * time.Second
)

// WriteLimiter is the writers' shared rate limiter, counted in write capacity
// units. It starts at the cap (MaxWCU), or unlimited when there is no cap.
//
// A capacity signal (throttling, unprocessed items) cuts the limit to
// aimdDecrease times the rate the service accepted since the last cut (over
// at most aimdWindow), or times the limit when that is lower. A throttle of a
// call sent before the last cut is the same signal as the one that cut, and
// two cuts are at least aimdCooldown apart. When the writers push harder
// than the table takes, what it accepts is its capacity, so a cut lands just
// under it rather than at an arbitrary fraction of an overshooting limit.
// The first cut of an unlimited limiter starts a startup phase in which the
// limit doubles every aimdStartupDoubling until the next cut (from one batch
// per aimdMinSpan when nothing was accepted yet); after that, acknowledged
// writes raise it linearly back to the rate the cut started from, then a
// quarter as fast (aimdPastBase) for the rest of a calm spell (aimdCalm,
// longer after each probe that ended in a cut), then double it every
// aimdProbeDoubling until the next cut or the cap, and only while the
// writers use all of it. It never goes below aimdPeakFloor of the best
// recent second, and a cut holds every writer back for aimdCutPause.
//
// Tuning (checked by TestWriterFindsCapacity against a proxy enforcing 400
// WCU/s on a table with no burst credit, 4 workers of 25-WCU calls, and by
// BenchmarkCapacity, 8 workers of 75-WCU calls, no cap): 93–98% of the
// capacity is used over 10 s with 2% (4 workers) and 4 to 5% (8 workers)
// of the calls throttled: the first (the table has no credit), the one that
// ends the startup and, in some runs, one more (benchmarks/LOAD.md).
//
// It is safe for concurrent use.
type WriteLimiter struct {
	mu  sync.Mutex
	now func() time.Time

	max     float64       // the cap; +Inf without one
	limit   float64       // current limit; +Inf while unlimited
	minSeen float64       // lowest limit set so far
	step    float64       // additive increase per second
	startup bool          // between the first cut of an unlimited limiter and the next
	base    float64       // the accepted rate the last cut started from
	calm    time.Duration // the additive spell after a cut, before probing
	conc    int           // batches in flight at most
	maxCost int           // the largest cost a Wait asked for

	next      time.Time // GCRA: when the next reservation may start
	lastCut   time.Time
	lastRaise time.Time
	start     time.Time

	acked meter // WCU acknowledged by the service
	sent  meter // WCU let through by Wait
	peak  meter // WCU acknowledged, by the second, over aimdPeakWindow

	// Trace, when set before the limiter is used, is told of every cut:
	// what it measured and the limit it set.
	Trace func(format string, args ...any)
}

// NewWriteLimiter returns a limiter capped at maxWCU per second (0 or less
// means no cap) for up to concurrency batches in flight.
func NewWriteLimiter(maxWCU float64, concurrency int) *WriteLimiter {
	return newWriteLimiterClock(maxWCU, concurrency, time.Now)
}

func newWriteLimiterClock(maxWCU float64, concurrency int, now func() time.Time) *WriteLimiter {
	if maxWCU <= 0 {
		maxWCU = math.Inf(1)
	}
	t := now()
	return &WriteLimiter{
		now: now, max: maxWCU, limit: maxWCU, minSeen: maxWCU, conc: max(concurrency, 1),
		start: t, lastRaise: t, calm: aimdCalm,
		acked: newMeter(aimdWindow, 20),
		sent:  newMeter(aimdWindow, 20),
		peak:  newMeter(aimdPeakWindow, int(aimdPeakWindow/time.Second)),
	}
}

// Wait blocks until wcu units may be spent, or ctx is done. A cost larger
// than the burst is let through and paid for by the writes after it, so a
// batch of large items is never refused.
//
// A writer books its units only when their turn has come, not in advance:
// booked ahead, eight writers held at a low limit would each keep the slot
// that limit gave them, seconds away, however much the limit rose or fell
// meanwhile (a limit doubling from 300 WCU/s ran 1.9 s behind its own
// rise). Waiting writers look again when the turn they saw comes.
func (l *WriteLimiter) Wait(ctx context.Context, wcu int) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		delay := l.book(wcu)
		if delay <= 0 {
			return nil
		}
		if err := wait(ctx, delay); err != nil {
			return err
		}
	}
}

// Book spends wcu units if their turn has come and returns 0, or returns
// how long until the next turn without spending anything: Wait without the
// waiting, for a caller that has other work meanwhile.
func (l *WriteLimiter) Book(wcu int) time.Duration { return l.book(wcu) }

// book spends wcu units if their turn has come, or says how long until the
// next turn.
func (l *WriteLimiter) book(wcu int) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if math.IsInf(l.limit, 1) {
		l.sent.add(now, float64(wcu))
		l.maxCost = max(l.maxCost, wcu)
		return 0
	}
	// Generic cell rate: a booking starts at l.next but no earlier than
	// now-burst (so idle time buys at most one burst) and pushes l.next by
	// its cost.
	startAt := l.next
	if floor := now.Add(-aimdBurst); startAt.Before(floor) {
		startAt = floor
	}
	if startAt.After(now) {
		return startAt.Sub(now)
	}
	l.sent.add(now, float64(wcu))
	l.maxCost = max(l.maxCost, wcu)
	l.next = startAt.Add(time.Duration(float64(wcu) / l.limit * float64(time.Second)))
	return 0
}

// Success records wcu units acknowledged by the service and raises the limit
// while the limiter, not the writers, sets the pace.
func (l *WriteLimiter) Success(wcu int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.acked.add(now, float64(wcu))
	l.peak.add(now, float64(wcu))
	dt := now.Sub(l.lastRaise).Seconds()
	l.lastRaise = now
	if math.IsInf(l.limit, 1) || l.limit >= l.max {
		return
	}
	// Raising a limit the writers do not use (the input or the network is
	// slower) would only store up an overshoot for later. The writers use
	// it when the reservations run at or past now: no idle time is left to
	// spend as a burst. (Counting what was sent over the last second would
	// miss the batch about to go, and below one batch a second it sees
	// nothing at all.)
	if l.next.Before(now.Add(-aimdBurst / 2)) {
		return
	}
	switch {
	case l.startup:
		l.limit *= math.Exp2(dt / aimdStartupDoubling.Seconds())
	case now.Sub(l.lastCut) >= l.calm:
		l.limit *= math.Exp2(dt / aimdProbeDoubling.Seconds())
		if l.limit >= 2*l.base {
			l.calm = aimdCalm // capacity came back: the next probe comes soon again
		}
	case l.limit < l.base:
		l.limit += l.step * dt
	default:
		// Past the rate the last cut started from, the capacity is where
		// the next throttle waits: the climb slows down there, and the
		// probe after the calm spell looks further.
		l.limit += l.step * aimdPastBase * dt
	}
	l.limit = math.Min(l.limit, l.max)
}

// Congestion records a capacity signal for a call sent just now: see
// Throttled.
func (l *WriteLimiter) Congestion() bool {
	l.mu.Lock()
	now := l.now()
	l.mu.Unlock()
	return l.Throttled(now)
}

// Throttled records a capacity signal (a throttle, unprocessed items) for a
// call sent at sent, and cuts the limit unless it was cut since sent (the
// call went out at the rate the cut corrected: the same signal) or less
// than aimdCooldown ago. Server errors and failed connections are no such
// signal: the writer retries them with backoff and does not call it. It
// reports whether it cut.
func (l *WriteLimiter) Throttled(sent time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if !l.lastCut.IsZero() && (now.Sub(l.lastCut) < aimdCooldown || sent.Before(l.lastCut)) {
		return false
	}
	from := now.Add(-aimdWindow)
	if from.Before(l.start) {
		from = l.start
	}
	if from.Before(l.lastCut) {
		from = l.lastCut
	}
	span := max(now.Sub(from), aimdMinSpan).Seconds()
	accepted := l.acked.since(from, now) / span
	base := accepted
	if math.IsInf(l.limit, 1) {
		// A throttle before anything was accepted (a table out of capacity
		// from the start) says only that one call was too much. The guess
		// is then one batch per aimdMinSpan, the least that makes
		// progress; the startup phase doubles it until the next cut.
		// (Guessing what the writers would send, every batch in flight per
		// aimdMinSpan, set 3,000 WCU/s for 8 workers of 75-WCU batches and
		// had about ten calls throttled before the next cut.)
		if base <= 0 {
			base = float64(l.maxCost) / aimdMinSpan.Seconds()
		}
		if base <= 0 {
			return false
		}
		l.startup = true
	} else {
		if base <= 0 || base > l.limit {
			base = l.limit
		}
		if !l.startup && now.Sub(l.lastCut) >= l.calm {
			// A probe found the capacity again: probe less often.
			l.calm = min(2*l.calm, aimdMaxCalm)
		}
		l.startup = false
	}
	l.base = base
	floor := math.Max(aimdMinRate, aimdPeakFloor*l.peak.max(now)/l.peak.slot.Seconds())
	l.limit = math.Min(l.limit, math.Max(floor, base*aimdDecrease))
	l.step = base * aimdIncreasePerSec
	l.minSeen = math.Min(l.minSeen, l.limit)
	if l.Trace != nil {
		l.Trace("cut at %v: accepted %.0f over %.2fs base %.0f floor %.0f → limit %.0f startup %v", now.Sub(l.start).Round(time.Millisecond), accepted, span, base, floor, l.limit, l.startup)
	}
	l.lastCut = now
	l.lastRaise = now
	// Pause everyone for a moment: the table has just run dry, and what
	// it gains meanwhile is kept (a burst capacity), not lost, so the
	// pause costs no throughput and spares the retries of the batches in
	// flight a second round of throttles.
	if l.next.Before(now) {
		l.next = now
	}
	l.next = l.next.Add(aimdCutPause)
	return true
}

// Limit is the current limit in WCU per second, +Inf when unlimited.
func (l *WriteLimiter) Limit() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit
}

// MinLimit is the lowest limit set so far, +Inf if never limited.
func (l *WriteLimiter) MinLimit() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.minSeen
}

// meter sums values over a sliding window of fixed slots.
type meter struct {
	slot  time.Duration
	vals  []float64
	stamp []int64 // slot number each value belongs to
}

func newMeter(window time.Duration, slots int) meter {
	return meter{slot: window / time.Duration(slots), vals: make([]float64, slots), stamp: make([]int64, slots)}
}

func (m *meter) add(now time.Time, v float64) {
	n := now.UnixNano() / int64(m.slot)
	i := int(n % int64(len(m.vals)))
	if m.stamp[i] != n {
		m.stamp[i], m.vals[i] = n, 0
	}
	m.vals[i] += v
}

// max is the largest slot total over the window ending now.
func (m *meter) max(now time.Time) float64 {
	n := now.UnixNano() / int64(m.slot)
	best := 0.0
	for i, s := range m.stamp {
		if s > n-int64(len(m.vals)) && s <= n && m.vals[i] > best {
			best = m.vals[i]
		}
	}
	return best
}

// since is the total of the slots from the one holding from to the one
// holding now, within the window.
func (m *meter) since(from, now time.Time) float64 {
	n := now.UnixNano() / int64(m.slot)
	f := max(from.UnixNano()/int64(m.slot), n-int64(len(m.vals))+1)
	total := 0.0
	for i, s := range m.stamp {
		if s >= f && s <= n {
			total += m.vals[i]
		}
	}
	return total
}

// ReadPacer holds the capacity the readers consume to a cap, in read
// capacity units per second, shared by every worker; its burst is one
// second of the cap. A nil *ReadPacer sets no cap. It is safe for
// concurrent use.
type ReadPacer struct {
	limiter *rate.Limiter
	burst   int
}

// NewReadPacer returns a pacer capped at maxRCU per second, or nil (no cap)
// when maxRCU is 0 or less.
func NewReadPacer(maxRCU float64) *ReadPacer {
	if maxRCU <= 0 {
		return nil
	}
	burst := max(1, int(maxRCU))
	return &ReadPacer{limiter: rate.NewLimiter(rate.Limit(maxRCU), burst), burst: burst}
}

// Pay takes rcu units, rounded up, waiting as long as the cap needs, or
// until ctx ends. A request is paid after it returns, since only then is
// its cost known: the cap holds on average, and a burst at the start may
// exceed it by one page per worker.
func (p *ReadPacer) Pay(ctx context.Context, rcu float64) error {
	if p == nil || rcu <= 0 {
		return nil
	}
	units := int(rcu + 0.999)
	for units > 0 {
		n := min(units, p.burst)
		if err := p.limiter.WaitN(ctx, n); err != nil {
			return err
		}
		units -= n
	}
	return nil
}
