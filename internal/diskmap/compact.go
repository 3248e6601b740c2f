package diskmap

// flush writes the memtable to a new run and empties it; then the runs
// are compacted when there are too many.
func (m *Map) flush() error {
	t := m.mem
	w, err := m.newWriter(int64(t.count), t.used, nil)
	if err != nil {
		return err
	}
	for it := t.seek(nil); it.valid(); it.next() {
		x := it.entry()
		n := &t.entries[x]
		// A deleted key that no run holds needs no tombstone.
		if n.del && !n.old {
			continue
		}
		w.add(t.key(x), t.value(x), n.del)
	}
	r, buf, err := w.finish()
	m.wbuf = buf
	if err != nil {
		return err
	}
	if r != nil {
		m.runs = append(m.runs, r)
		m.flushed += r.size
		m.written += r.size
	}
	t.reset()
	return m.compact()
}

// newWriter starts a run of about n records and size bytes, its blocks
// sized for the indexes' share and its filter for the filters' share
// beside the runs' but those of merging (which it replaces).
func (m *Map) newWriter(n, size int64, merging []*run) (*runWriter, error) {
	var data, bloomBits, keys, blocks int64
	for _, r := range m.runs {
		data += r.size
		blocks += int64(r.blocks())
		keys += int64(len(r.keys))
		if !contains(merging, r) {
			bloomBits += int64(len(r.bloom)) * 64
		}
	}
	data += size
	// An index entry: its key (the average so far; 64 bytes to begin
	// with) and 12 bytes.
	per := int64(64 + 12)
	if blocks > 0 {
		per = keys/blocks + 12
	}
	bs := int64(m.block)
	for bs < maxBlock && data/bs*per > m.indexShare {
		bs *= 2
	}
	bits := min(n*bloomBitsPerKey, m.bloomShare*8-bloomBits)
	if bits < 3*n {
		bits = 0
	}
	m.ids++
	return newRunWriter(m.dir.Path, m.ids, n, int(bs), bits, m.seed, m.wbuf)
}

func contains(rs []*run, r *run) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

// compact merges runs, size-tiered: the newest runs whose sizes are
// within a factor of 2 of the newest's, when there are mergeWidth of
// them (as flushes make runs of one size, four of them make one of the
// next size, and so on); and, while there are more than maxRuns, the
// adjacent runs (adjacent, so that the newest value of a key stays the
// newest) whose merge writes the fewest bytes for each run it removes.
// The older rule, merging the 4 adjacent runs with the fewest bytes each
// time, wrote each byte 10 times for 250 flushes and, by simulation, 170
// times for 4,000; this one, 5 and 10.
func (m *Map) compact() error {
	for len(m.runs) > 1 {
		n := len(m.runs)
		last := m.runs[n-1].size
		j := n - 1
		for j > 0 && m.runs[j-1].size >= last/2 && m.runs[j-1].size <= 2*last {
			j--
		}
		if n-j >= mergeWidth {
			if err := m.mergeRuns(j, n); err != nil {
				return err
			}
			continue
		}
		if n <= maxRuns {
			return nil
		}
		bi, bj, best := 0, 0, 0.0
		for i := range n - 1 {
			var sum int64
			for k := i; k < n; k++ {
				sum += m.runs[k].size
				if k == i {
					continue
				}
				if c := float64(sum) / float64(k-i); bj == 0 || c < best {
					bi, bj, best = i, k+1, c
				}
			}
		}
		if err := m.mergeRuns(bi, bj); err != nil {
			return err
		}
	}
	return nil
}

// stopEvery is how many records a merge reads between two asks of Stop.
const stopEvery = 4096

// mergeRuns replaces runs[i:j] with one run: each key's newest record,
// and no tombstones when runs[i] is the oldest (nothing older to shadow).
func (m *Map) mergeRuns(i, j int) error {
	in := m.runs[i:j]
	var n, size int64
	for _, r := range in {
		n += r.n
		size += r.size
	}
	w, err := m.newWriter(n, size, in)
	if err != nil {
		return err
	}
	srcs := make([]iter, 0, len(in))
	for k := len(in) - 1; k >= 0; k-- {
		srcs = append(srcs, m.runIter(in[k]))
	}
	defer m.freeIters(srcs)
	mg := merge{srcs: srcs}
	recs := 0
	err = mg.each(func(k, v []byte, del bool) error {
		if recs++; m.stop != nil && recs%stopEvery == 0 {
			if err := m.stop(); err != nil {
				return err
			}
		}
		if del && i == 0 {
			return nil
		}
		w.add(k, v, del)
		return w.err
	})
	if err != nil {
		w.abort()
		return err
	}
	r, buf, err := w.finish()
	m.wbuf = buf
	if err != nil {
		return err
	}
	for _, old := range in {
		old.close()
	}
	runs := append([]*run{}, m.runs[:i]...)
	if r != nil {
		runs = append(runs, r)
		m.written += r.size
	}
	m.merges++
	m.runs = append(runs, m.runs[j:]...)
	return nil
}
