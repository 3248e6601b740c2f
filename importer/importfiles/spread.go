package importfiles

import (
	"math/rand/v2"
	"slices"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/layouts"
)

// BulkPutSpread is how many items the files staged for a bulk put keep
// back to spread: AWS asks for a bulk put's input in random key order, so
// that its writes spread over the table's and the indexes' partitions, and
// the items come tree by tree, a parent's children together. A window of
// this many encoded items (a few hundred bytes each: about a megabyte) is
// what the staging holds beyond the streaming design's; never the table.
var BulkPutSpread = 4096

// spreadTries is how many items of the window the spreading looks at for
// one that shares no partition key value with the item before it.
const spreadTries = 16

// heldLine is an item kept back by a LineSpreader: its encoded line and its
// partitions (partsOf: the table's, then each index's it is in).
type heldLine struct {
	line  []byte
	parts []*partCount
}

// partCount is a partition and how many held items are in it: the items
// point at it, so that picking one needs no map lookup.
type partCount struct {
	key string
	n   int
}

// LineSpreader takes items as they come and hands them on, encoded, in a
// shuffled order: once window items are held, each new item sends on one
// of them picked at random, trying up to spreadTries picks for one that
// shares no partition key value (of the table or of an index) with the
// item sent before. A value every item held has, as one tree's TreeId in
// ByPath when the window holds one tree, cannot be avoided and is not
// looked at. The order is a function of the input (a fixed seed), and
// every item is sent on once.
type LineSpreader struct {
	spec   layouts.TableSpec
	window int
	rng    *rand.Rand
	held   []heldLine
	count  map[string]*partCount // items held, by partition
	last   []string              // the partitions of the item sent last
	free   [][]byte              // lines sent, for reuse
	item   layouts.Item          // scratch: the attributes as a map, for partsOf
	out    func(line []byte) error
}

func NewLineSpreader(spec layouts.TableSpec, window int, out func(line []byte) error) *LineSpreader {
	return &LineSpreader{spec: spec, window: max(1, window), rng: rand.New(rand.NewPCG(1, 2)),
		count: map[string]*partCount{}, item: layouts.Item{}, out: out}
}

// add takes one item as Layout.AppendItems builds it; it is encoded before
// add returns, so the caller may reuse its memory.
func (s *LineSpreader) Add(attrs []layouts.Attr) error {
	clear(s.item)
	for _, a := range attrs {
		s.item[a.Name] = a.Value
	}
	var buf []byte
	if n := len(s.free); n > 0 {
		buf, s.free = s.free[n-1][:0], s.free[:n-1]
	}
	h := heldLine{line: AppendAttrsLine(buf, attrs)}
	for _, k := range ddbwrite.PartsOf(s.spec, s.item, true) {
		pc := s.count[k]
		if pc == nil {
			pc = &partCount{key: k}
			s.count[k] = pc
		}
		pc.n++
		h.parts = append(h.parts, pc)
	}
	s.held = append(s.held, h)
	if len(s.held) > s.window {
		return s.send()
	}
	return nil
}

// drain sends on every item still held.
func (s *LineSpreader) Drain() error {
	for len(s.held) > 0 {
		if err := s.send(); err != nil {
			return err
		}
	}
	return nil
}

// send sends one held item on: of spreadTries picked at random, the one
// whose partitions hold the most items kept back, of those that do not
// clash with the item sent last (the first pick when they all do). Taking
// the busiest first keeps a partition that many items share from piling
// up in the window while the others go, and ending the files in a run.
func (s *LineSpreader) send() error {
	pick, best := s.rng.IntN(len(s.held)), -1
	for range spreadTries {
		k := s.rng.IntN(len(s.held))
		if s.clashes(s.held[k].parts) {
			continue
		}
		if h := s.heat(s.held[k].parts); h > best {
			pick, best = k, h
		}
	}
	h := s.held[pick]
	n := len(s.held) - 1
	s.held[pick] = s.held[n]
	s.held[n] = heldLine{}
	s.held = s.held[:n]
	s.last = s.last[:0]
	for _, pc := range h.parts {
		if pc.n--; pc.n == 0 {
			delete(s.count, pc.key)
		}
		s.last = append(s.last, pc.key)
	}
	err := s.out(h.line)
	s.free = append(s.free, h.line)
	return err
}

// heat is the most items held of one of parts, leaving out a partition
// every held item has.
func (s *LineSpreader) heat(parts []*partCount) int {
	h := 0
	for _, pc := range parts {
		if pc.n < len(s.held) {
			h = max(h, pc.n)
		}
	}
	return h
}

// clashes says whether parts shares with the item sent last a partition
// that not every held item has.
func (s *LineSpreader) clashes(parts []*partCount) bool {
	for _, pc := range parts {
		if pc.n < len(s.held) && slices.Contains(s.last, pc.key) {
			return true
		}
	}
	return false
}
