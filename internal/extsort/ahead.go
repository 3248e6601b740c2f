package extsort

// The read ahead of an Iter (Sorter.ReadAhead): a goroutine merges the
// runs into batches, copies of the records one after the other, and
// hands them to Next over a channel; Next hands each back once its
// records are read. aheadBatches batches go round, so the goroutine fills
// one while Next reads another and a third waits.

// aheadBatches is how many batches an Iter's read ahead keeps.
const aheadBatches = 3

// aheadBatch is the size of a read ahead's batch for a Sorter whose runs
// fill budget bytes (half the budget New was given, when it writes its
// runs while the next fills): an eighth of it, from 16 KiB to 256 KiB.
// The merge's read buffers take half of budget (Sort), the batches three
// eighths at most: a merge with read ahead stays within budget, as the
// runs' buffers are given up before it starts.
func aheadBatch(budget int) int { return min(256<<10, max(16<<10, budget/8)) }

// batch is records merged ahead: rec i is buf[ends[i-1]:ends[i]].
type batch struct {
	buf  []byte
	ends []int
}

type ahead struct {
	full chan *batch   // batches filled, in order; closed after the last
	free chan *batch   // batches read, for the goroutine to fill again
	stop chan struct{} // closed by Close: the goroutine stops
	done chan struct{} // closed when the goroutine has returned
	err  error         // what ended the merge, read once full is closed
	cur  *batch        // the batch Next reads (nil: none)
	i    int           // the next record of cur
	shut bool          // stop is closed
}

// startAhead starts the goroutine that merges the runs in batches of
// about size bytes (a record larger is a batch of its own).
func (it *Iter) startAhead(size int) {
	a := &ahead{full: make(chan *batch, aheadBatches), free: make(chan *batch, aheadBatches),
		stop: make(chan struct{}), done: make(chan struct{})}
	for range aheadBatches {
		a.free <- &batch{buf: make([]byte, 0, size)}
	}
	it.ahead = a
	go func() {
		defer close(a.done)
		defer close(a.full)
		for {
			var b *batch
			select {
			case b = <-a.free:
			case <-a.stop:
				return
			}
			b.buf, b.ends = b.buf[:0], b.ends[:0]
			end := false
			for len(b.buf) < size {
				rec, ok := it.merge()
				if !ok {
					end = true
					break
				}
				b.buf = append(b.buf, rec...)
				b.ends = append(b.ends, len(b.buf))
			}
			if len(b.ends) > 0 {
				select {
				case a.full <- b:
				case <-a.stop:
					return
				}
			}
			if end {
				a.err = it.merr
				return
			}
		}
	}()
}

// nextAhead is Next with read ahead.
func (it *Iter) nextAhead() ([]byte, bool) {
	a := it.ahead
	for a.cur == nil || a.i == len(a.cur.ends) {
		if a.cur != nil {
			a.free <- a.cur // never blocks: free has room for every batch
			a.cur = nil
		}
		b, ok := <-a.full
		if !ok {
			if !a.shut {
				it.err = a.err
			}
			return nil, false
		}
		a.cur, a.i = b, 0
	}
	start := 0
	if a.i > 0 {
		start = a.cur.ends[a.i-1]
	}
	end := a.cur.ends[a.i]
	a.i++
	return a.cur.buf[start:end:end], true
}

// stopAhead stops the read ahead's goroutine, if any, and waits for it:
// the run files are then the Iter's again.
func (it *Iter) stopAhead() {
	a := it.ahead
	if a == nil || a.shut {
		return
	}
	a.shut = true
	close(a.stop)
	<-a.done
}
