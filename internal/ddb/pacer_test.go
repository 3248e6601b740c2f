package ddb

import (
	"context"
	"math"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// inUse makes the writers hold every reservation up to now, as writers
// waiting on the limiter do.
func inUse(l *WriteLimiter, clk *fakeClock) { l.next = clk.now() }

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6*math.Max(1, math.Abs(b)) }

func TestLimiterDiscoversFromUnlimited(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := newWriteLimiterClock(0, 1, clk.now)
	if !math.IsInf(l.Limit(), 1) {
		t.Fatalf("limit = %v, want unlimited", l.Limit())
	}
	// 400 WCU accepted over the first second, then a throttle.
	for range 16 {
		clk.advance(62500 * time.Microsecond)
		l.Wait(context.Background(), 25)
		l.Success(25)
	}
	if !math.IsInf(l.Limit(), 1) {
		t.Fatalf("successes changed an unlimited limit to %v", l.Limit())
	}
	if !l.Congestion() {
		t.Fatal("first congestion did not cut")
	}
	if want := 400 * aimdDecrease; !near(l.Limit(), want) {
		t.Errorf("limit after the first throttle = %v, want %v (a share of the accepted rate)", l.Limit(), want)
	}
	if l.MinLimit() != l.Limit() {
		t.Errorf("min limit = %v, want %v", l.MinLimit(), l.Limit())
	}

	// Startup: while the writers use it, the limit doubles every
	// aimdStartupDoubling until the next cut.
	before := l.Limit()
	clk.advance(aimdStartupDoubling)
	inUse(l, clk)
	l.Success(25)
	if want := 2 * before; !near(l.Limit(), want) {
		t.Errorf("limit after one doubling time = %v, want %v", l.Limit(), want)
	}
	// The next cut ends the startup: from there the climb is linear.
	clk.advance(aimdWindow)
	for range 20 {
		clk.advance(50 * time.Millisecond)
		l.Success(20) // 400 WCU/s accepted, under the doubled limit
	}
	l.Congestion()
	cut := l.Limit()
	if want := 400 * aimdDecrease; !near(cut, want) {
		t.Errorf("second cut to %v, want %v", cut, want)
	}
	clk.advance(time.Second)
	inUse(l, clk)
	l.Success(25)
	if want := cut + 400*aimdIncreasePerSec; !near(l.Limit(), want) {
		t.Errorf("limit a second after the second cut = %v, want %v", l.Limit(), want)
	}
}

// The first throttle of a run, before anything was accepted, starts from
// one batch per aimdMinSpan, however many writers there are: all that is
// known is that one call was too much.
func TestLimiterFirstGuess(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := newWriteLimiterClock(0, 8, clk.now)
	l.Wait(context.Background(), 75) // the first call, alone
	clk.advance(2 * time.Millisecond)
	l.Congestion()
	if want := 75 / aimdMinSpan.Seconds() * aimdDecrease; !near(l.Limit(), want) {
		t.Errorf("limit = %v, want %v: one batch per %v", l.Limit(), want, aimdMinSpan)
	}
	if !l.startup {
		t.Error("the first cut did not start the startup doubling")
	}
}

// A throttle of a call sent before the last cut is the signal that cut,
// even after the cooldown: a call held back in a retry, or in flight for
// long, must not cut the limit twice.
func TestLimiterThrottleBeforeCut(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := newWriteLimiterClock(1000, 1, clk.now)
	early := clk.now()
	clk.advance(10 * time.Millisecond)
	if !l.Throttled(clk.now()) {
		t.Fatal("first throttle did not cut")
	}
	cut := l.Limit()
	clk.advance(2 * aimdCooldown)
	if l.Throttled(early) {
		t.Errorf("a call sent before the cut cut again: limit %v → %v", cut, l.Limit())
	}
	if !l.Throttled(clk.now().Add(-time.Millisecond)) {
		t.Error("a call sent after the cut and the cooldown did not cut")
	}
}

// Waiting writers take their turn at the limit in force when it comes, not
// at the one in force when they started waiting: a limit that rises (or is
// cut) while eight writers queue changes their pace at once.
func TestLimiterWaitersSeeNewLimit(t *testing.T) {
	l := NewWriteLimiter(100, 8) // 75-WCU calls: one per 750 ms
	ctx := context.Background()
	if err := l.Wait(ctx, 75); err != nil { // the burst
		t.Fatal(err)
	}
	start := time.Now()
	done := make(chan time.Duration, 8)
	for range 8 {
		go func() {
			if err := l.Wait(ctx, 75); err != nil {
				t.Error(err)
			}
			done <- time.Since(start)
		}()
	}
	time.Sleep(50 * time.Millisecond)
	l.mu.Lock()
	l.limit, l.max = 100000, 100000 // the limit rises while they wait
	l.mu.Unlock()
	var last time.Duration
	for range 8 {
		last = max(last, <-done)
	}
	// Booked in advance, the eighth would go 8 × 750 ms = 6 s later.
	if last > 2*time.Second {
		t.Errorf("the last of eight waiters went after %v: the rise of the limit did not reach them", last)
	}
}

func TestLimiterCooldown(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := newWriteLimiterClock(1000, 1, clk.now)
	tests := []struct {
		name    string
		after   time.Duration
		wantCut bool
	}{
		{name: "first", after: 0, wantCut: true},
		{name: "same round trip", after: 10 * time.Millisecond, wantCut: false},
		{name: "still cooling", after: aimdCooldown - 20*time.Millisecond, wantCut: false},
		{name: "after cooldown", after: 20 * time.Millisecond, wantCut: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk.advance(tt.after)
			before := l.Limit()
			cut := l.Congestion()
			if cut != tt.wantCut {
				t.Fatalf("cut = %v, want %v", cut, tt.wantCut)
			}
			if cut != (l.Limit() < before) {
				t.Errorf("limit %v → %v, cut reported %v", before, l.Limit(), cut)
			}
		})
	}
}

func TestLimiterFloor(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := newWriteLimiterClock(1000, 1, clk.now)
	l.Congestion() // nothing accepted yet: a plain cut
	if want := 1000 * aimdDecrease; !near(l.Limit(), want) {
		t.Errorf("limit = %v, want %v", l.Limit(), want)
	}
	// A good second (800 WCU, all within one clock second, as the peak
	// meter counts), then faults on and on: the limit stops at the floor.
	for range 20 {
		clk.advance(40 * time.Millisecond)
		l.Success(40)
	}
	for range 50 {
		clk.advance(aimdCooldown)
		l.Congestion()
	}
	if want := aimdPeakFloor * 800; !near(l.Limit(), want) {
		t.Errorf("limit after many faults = %v, want the floor %v", l.Limit(), want)
	}
}

func TestLimiterAdditiveIncrease(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := newWriteLimiterClock(120, 1, clk.now)
	for range 10 {
		clk.advance(100 * time.Millisecond)
		l.Success(10)
	}
	l.Congestion() // base min(120, 100 accepted) = 100
	if !near(l.Limit(), 100*aimdDecrease) {
		t.Fatalf("limit = %v, want %v", l.Limit(), 100*aimdDecrease)
	}
	step := 100 * aimdIncreasePerSec

	// Not held back by the limit: no increase.
	clk.advance(2 * time.Second)
	l.Success(10)
	if !near(l.Limit(), 100*aimdDecrease) {
		t.Errorf("limit rose to %v while nobody waited", l.Limit())
	}

	// Used: the limit climbs by step per second.
	clk.advance(time.Second)
	inUse(l, clk)
	l.Success(10)
	if want := 100*aimdDecrease + step; !near(l.Limit(), want) {
		t.Errorf("limit after 1 s in use = %v, want %v", l.Limit(), want)
	}
	// And stops at the cap.
	for range 100 {
		clk.advance(time.Second)
		inUse(l, clk)
		l.Success(10)
	}
	if l.Limit() != 120 {
		t.Errorf("limit = %v, want the cap 120", l.Limit())
	}
}

// Wait paces real time at the limit.
func TestLimiterPaces(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test")
	}
	l := NewWriteLimiter(2000, 1)
	ctx := context.Background()
	start := time.Now()
	for range 40 {
		if err := l.Wait(ctx, 50); err != nil {
			t.Fatal(err)
		}
	}
	// 2000 WCU at 2000 WCU/s, less the burst.
	el := time.Since(start)
	if el < 800*time.Millisecond || el > 1500*time.Millisecond {
		t.Errorf("40 × 50 WCU at 2000 WCU/s took %v, want about 0.9 s", el)
	}
	// A cost far above one second's worth still goes through.
	ctx2, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	l2 := NewWriteLimiter(10, 1)
	if err := l2.Wait(ctx2, 1000); err != nil {
		t.Errorf("a large cost on an idle limiter: %v", err)
	}
	if err := l2.Wait(ctx2, 1); err == nil {
		t.Error("the next Wait should wait for the large cost to be paid, past the deadline")
	}
}

// The read pacer lets one second of the cap through at once, then holds
// the rest to the cap; without a cap it never waits.
func TestReadPacer(t *testing.T) {
	ctx := context.Background()
	if p := NewReadPacer(0); p != nil || p.Pay(ctx, 1e9) != nil {
		t.Fatal("a pacer without a cap waited or failed")
	}
	p := NewReadPacer(100)
	start := time.Now()
	for range 3 {
		if err := p.Pay(ctx, 49.5); err != nil { // 50 units each, rounded up
			t.Fatal(err)
		}
	}
	// 150 units: 100 of burst, then 50 at 100 per second.
	if took := time.Since(start); took < 450*time.Millisecond {
		t.Errorf("150 RCU at a cap of 100 RCU/s took %v, want at least 0.5 s", took)
	}
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := p.Pay(ctx, 1000); err == nil {
		t.Error("Pay on an ended context succeeded")
	}
}

// After a calm spell the limit stops climbing linearly and probes, doubling
// every aimdProbeDoubling while writes succeed: capacity that comes back
// (here from 300 to far more) is found within seconds, not the minutes a
// linear climb from a low cut would take. A probe that ends in a throttle
// doubles the calm spell before the next one.
func TestLimiterClimbsBackAfterCalm(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := newWriteLimiterClock(0, 4, clk.now)
	// 300 WCU/s accepted for a second, then a throttle, then another after
	// the startup doubling: the limit settles under 300.
	for range 2 {
		for range 12 {
			clk.advance(83 * time.Millisecond)
			l.Success(25)
		}
		l.Congestion()
	}
	cut := l.Limit()
	if cut > 300 {
		t.Fatalf("limit after two cuts at 300 WCU/s = %v", cut)
	}
	// The capacity is back. Writes succeed, the writers use the limit: by
	// the end of the calm spell the climb was linear (a few percent a
	// second), and then the limit doubles each second.
	step := 100 * time.Millisecond
	for clk.now().Sub(l.lastCut) < aimdCalm {
		clk.advance(step)
		inUse(l, clk)
		l.Success(25)
	}
	linear := l.Limit()
	if linear > 2*cut {
		t.Errorf("limit after the calm spell = %v, from %v: want a linear climb", linear, cut)
	}
	for range 60 { // 6 s
		clk.advance(step)
		inUse(l, clk)
		l.Success(25)
	}
	if got, want := l.Limit(), linear*math.Exp2(6); !near(got, want) {
		t.Errorf("limit 6 s into the probe = %v, want %v (doubling every %v)", got, want, aimdProbeDoubling)
	}
	if l.Limit() < 17000 {
		t.Errorf("limit %v: 10 s after capacity came back, want the engine's 17,000 WCU/s", l.Limit())
	}
	if l.calm != aimdCalm {
		t.Errorf("calm = %v after a probe that found new capacity, want %v", l.calm, aimdCalm)
	}

	// A probe that ends in a throttle: the next calm spell is twice as
	// long, and the one after that twice again, up to aimdMaxCalm.
	calm := l.calm
	clk.advance(aimdCooldown)
	l.Congestion()
	if l.calm != 2*calm {
		t.Errorf("calm after a probe that ended in a throttle = %v, want %v", l.calm, 2*calm)
	}
	for clk.now().Sub(l.lastCut) < l.calm {
		clk.advance(step)
		inUse(l, clk)
		l.Success(25)
	}
	clk.advance(step)
	inUse(l, clk)
	l.Success(25)
	clk.advance(aimdCooldown)
	l.Congestion()
	if want := min(4*calm, aimdMaxCalm); l.calm != want {
		t.Errorf("calm after a second probe that ended in a throttle = %v, want %v", l.calm, want)
	}
	longest := time.Duration(0)
	for range 4 {
		for clk.now().Sub(l.lastCut) <= l.calm {
			clk.advance(step)
			inUse(l, clk)
			l.Success(25)
		}
		clk.advance(aimdCooldown)
		l.Congestion()
		longest = max(longest, l.calm)
	}
	if longest != aimdMaxCalm {
		t.Errorf("longest calm after many probes = %v, want it capped at %v", longest, aimdMaxCalm)
	}
}
