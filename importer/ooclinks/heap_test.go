package ooclinks

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/spill"
)

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestBadLinksOnDisk: 100,000 bad links and a chain of 20,000 links to
// links, in sorts of 64 KiB and a filter of 512 KiB, settle with the
// heap bounded by those and the files' buffers, not by the links: the
// map of their problems held before (issue 27) took about 250 bytes a
// link, some 25 MB here. Between rounds, what stays in memory is the
// filter and the buffers.
func TestBadLinksOnDisk(t *testing.T) {
	const bad, chain = 100_000, 20_000
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	dir, err := spill.New(t.TempDir(), "links", "the test")
	if err != nil {
		t.Fatal(err)
	}
	before := heapInUse()
	lk := New(dir, 64<<10, 1<<20)
	defer lk.Close()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	for k := range bad {
		if err := lk.Add(fmt.Sprintf("b%06d", k), s(fmt.Sprintf("missing%06d", k))); err != nil {
			t.Fatal(err)
		}
	}
	for k := range chain {
		to := fmt.Sprintf("c%06d", k+1)
		if k == chain-1 {
			to = "t"
		}
		if err := lk.Add(fmt.Sprintf("c%06d", k), s(to)); err != nil {
			t.Fatal(err)
		}
	}
	if err := lk.Done(); err != nil {
		t.Fatal(err)
	}
	// The peak of the live heap (after each collection: a fifth of it
	// more is allowed before the next), while the round is told and settles.
	peak := livePeak(before, func() {
		lk.Round()
		row := int64(0)
		seen := func(id string) {
			row++
			if err := lk.Seen(id, row, 0, int(row)+1, false, false, []string{"r", id}); err != nil {
				t.Fatal(err)
			}
		}
		for k := range bad {
			seen(fmt.Sprintf("b%06d", k))
		}
		for k := range chain {
			seen(fmt.Sprintf("c%06d", k))
		}
		seen("t")
		err = lk.Settle(context.Background(), func(file, line int) string { return fmt.Sprint(line) })
	})
	if err != nil {
		t.Fatal(err)
	}
	if !lk.Again || lk.problemCount() != bad {
		t.Fatalf("again %v, %d problems, want %d (the bad links; the chain is good)", lk.Again, lk.problemCount(), bad)
	}
	held := heapInUse() - min(before, heapInUse())
	runtime.KeepAlive(lk)
	t.Logf("%d bad links, a chain of %d: %d bytes held after the round, a peak of %d bytes above the start", bad, chain, held, peak)
	if held > 4<<20 {
		t.Errorf("%d bytes held between rounds, want under 4 MiB (the filter, 512 KiB, and the files' buffers)", held)
	}
	if peak > 20<<20 {
		t.Errorf("a live heap of %d bytes above the start, want under 20 MiB (the sorts' budgets and the files' buffers: 11-13 MB "+
			"measured, 14.7 MB with 300,000 bad links)", peak)
	}
}

// livePeak runs f and returns the peak of the live heap (after each
// collection) while it ran, above before (a heapInUse).
func livePeak(before uint64, f func()) uint64 {
	var (
		peak uint64
		stop = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		m := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			metrics.Read(m)
			peak = max(peak, m[0].Value.Uint64())
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	wg.Wait()
	return peak - min(before, peak)
}

// TestCycleOnDisk: 200,000 links on one cycle, and 50,000 on a chain into
// it, in sorts of 64 KiB, settle with the live heap bounded by the sorts
// and the files' buffers: before, those links were read into memory
// (some 100 bytes each, and a map), and each link's problem named the
// 200,000 ids of the cycle: 200,000 problems of some 2.4 MB each. Now
// each names 20 ids and counts the others. Under the race detector
// (raceScale) 50,000 links on the cycle and 12,500 on the chain: still
// hundreds of runs of 64 KiB each, and problems that named every id would
// be 50,000 of some 600 KB, far over the bound.
func TestCycleOnDisk(t *testing.T) {
	const cycle, chain = 200_000 / raceScale, 50_000 / raceScale
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	dir, err := spill.New(t.TempDir(), "links", "the test")
	if err != nil {
		t.Fatal(err)
	}
	lk := New(dir, 64<<10, 1<<20)
	defer lk.Close()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	// The cycle's ids run down from its first link in the input, c199999.
	id := func(k int) string { return fmt.Sprintf("c%06d", k) }
	for k := range cycle {
		if err := lk.Add(id(k), s(id((k+cycle-1)%cycle))); err != nil {
			t.Fatal(err)
		}
	}
	for k := range chain {
		to := fmt.Sprintf("i%06d", k+1)
		if k == chain-1 {
			to = id(1000)
		}
		if err := lk.Add(fmt.Sprintf("i%06d", k), s(to)); err != nil {
			t.Fatal(err)
		}
	}
	if err := lk.Done(); err != nil {
		t.Fatal(err)
	}
	peak := livePeak(heapInUse(), func() {
		lk.Round()
		row := int64(0)
		for k := cycle - 1; k >= 0; k-- {
			if err := lk.Seen(id(k), row, 0, int(row)+1, false, false, []string{"r", id(k)}); err != nil {
				t.Fatal(err)
			}
			row++
		}
		for k := range chain {
			if err := lk.Seen(fmt.Sprintf("i%06d", k), row, 0, int(row)+1, false, false, nil); err != nil {
				t.Fatal(err)
			}
			row++
		}
		err = lk.Settle(context.Background(), func(file, line int) string { return fmt.Sprint(line) })
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a cycle of %d links, a chain of %d into it: a peak of %d bytes above the start", cycle, chain, peak)
	var named []string
	for k := cycle - 1; k >= cycle-20; k-- {
		named = append(named, strconv.Quote(id(k)))
	}
	want := fmt.Sprintf(`transform: bad link: a cycle of links: %s → … (%d more) → %q`, strings.Join(named, " → "), cycle-20, id(cycle-1))
	// At full size, the message as it was written out by hand.
	if full := `transform: bad link: a cycle of links: "c199999" → "c199998" → "c199997" → "c199996" → "c199995" → "c199994" → "c199993" → ` +
		`"c199992" → "c199991" → "c199990" → "c199989" → "c199988" → "c199987" → "c199986" → "c199985" → "c199984" → "c199983" → "c199982" → ` +
		`"c199981" → "c199980" → … (199980 more) → "c199999"`; cycle == 200_000 && want != full {
		t.Fatalf("want %q, not %q", full, want)
	}
	p, err := lk.Problems()
	if err != nil || p == nil {
		t.Fatalf("no problems (%v)", err)
	}
	var n, cycled int
	for ; p.more; p.cur, p.more = p.sp.Next() {
		x := string(firstKey(p.cur))
		msg, kind := p.At([]byte(x))
		n++
		switch {
		case x[0] == 'c' && (msg != want || kind != Cycle):
			t.Fatalf("link %s: %q (%c), want %q", x, msg, kind, want)
		case x[0] == 'c':
			cycled++
		case x[0] == 'i' && !strings.HasSuffix(msg, "the target is a link that cannot be written"):
			t.Fatalf("link %s: %q, want a chain into a cycle's", x, msg)
		}
	}
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	if n != cycle+chain || cycled != cycle {
		t.Errorf("%d problems, %d of the cycle; want %d, %d", n, cycled, cycle+chain, cycle)
	}
	if peak > 20<<20 {
		t.Errorf("a live heap of %d bytes above the start, want under 20 MiB (the sorts' budgets and the files' buffers)", peak)
	}
}
