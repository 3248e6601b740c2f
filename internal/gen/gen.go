// Package gen generates synthetic forests, reproducible by seed, for
// benchmarks, demos and load tests.
//
// Every node's parent and attributes are a function of the seed and the
// node's position alone, so the same options always give the same records,
// on any machine and with any Go version (the generator is a SplitMix64 of
// its own, not math/rand).
package gen

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

// Shapes of forest Generate makes, as `treeport gen --shape` names them.
const (
	ShapeBalanced = "balanced" // every node has Fanout children, filled level by level
	ShapeRandom   = "random"   // a random recursive tree: a node's parent is uniform among the nodes before it
	ShapeDeep     = "deep"     // one chain (or, with Depth, chains of Depth nodes under one root)
	ShapeWide     = "wide"     // one root with every other node its child
	ShapeForest   = "forest"   // many small random recursive trees
)

// Shapes lists every shape, in the order help text shows them.
var Shapes = []string{ShapeBalanced, ShapeRandom, ShapeDeep, ShapeWide, ShapeForest}

// DefaultFanout is the fan-out of a balanced tree when Options.Fanout is 0.
const DefaultFanout = 4

// MaxForestTreeSize bounds the trees of a forest without Options.Trees: their
// sizes are uniform in 1..MaxForestTreeSize.
const MaxForestTreeSize = 50

// Options configure Generate.
type Options struct {
	// Nodes is how many records to generate; 0 generates none.
	Nodes int
	// Shape is one of Shapes; "" means balanced.
	Shape string
	// Seed picks the forest; the same seed gives the same records.
	Seed int64
	// Fanout is the number of children of a balanced tree's inner nodes. When
	// 0, it is the smallest fan-out that fits Nodes within Depth levels below
	// the root if Depth is set, else DefaultFanout. Other shapes ignore it.
	Fanout int
	// Depth bounds a deep tree: the nodes below the root form chains of Depth
	// nodes, so no node is deeper than Depth. For a balanced tree without
	// Fanout it picks the fan-out. 0 means no bound. Other shapes ignore it.
	Depth int
	// Trees splits the nodes into this many trees of near-equal size, each
	// of the chosen shape (node ids run on from one tree to the next). 0
	// means one tree, except for forest, where it means trees of random size
	// in 1..MaxForestTreeSize.
	Trees int
	// Shuffle emits the records in a seeded random order, so that children
	// often come before their parents, as they may in real exports. It holds
	// two int32 per node in memory (80 MB for 10 million nodes); without it,
	// Generate streams in constant memory, parents before children.
	Shuffle bool
}

// Attribute names and types every generated record carries.
const (
	AttrName    = "name"    // S: a pronounceable made-up word
	AttrSize    = "size"    // N: an integer in 0..10^7
	AttrScore   = "score"   // N: a decimal in 0.01..99.99 with two digits after the point
	AttrCreated = "created" // S: an RFC 3339 UTC timestamp in 2015..2024, in whole seconds
)

// Columns returns the columns of generated records, for
// records.WriterOptions, so that CSV and Parquet writers stream them
// instead of holding every record to infer them. In Parquet, size is INT64,
// score DOUBLE and created a TIMESTAMP(MICROS) adjusted to UTC, so that a
// generated Parquet file exercises a reader's timestamp path; treeport reads
// it back as the same text the other formats carry.
func Columns() []records.Column {
	return []records.Column{
		records.TimestampColumn(AttrCreated),
		{Name: AttrName, Type: "S"},
		{Name: AttrScore, Type: "N", Number: records.NumberDouble},
		{Name: AttrSize, Type: "N", Number: records.NumberInt64},
	}
}

// ID is the id of the node at 0-based position i: N1, N2, …
func ID(i int) string { return "N" + strconv.Itoa(i+1) }

// Generate calls emit once per node, with a new record emit may keep. It
// stops at the first error emit returns and returns that error unchanged, so
// a caller stops early (on a cancelled context, say) by returning one.
// Invalid options are reported before anything is emitted.
func Generate(opts Options, emit func(*transform.Record) error) error {
	g, err := newGenerator(opts)
	if err != nil {
		return err
	}
	if !opts.Shuffle {
		for i := range opts.Nodes {
			if err := emit(g.record(i, g.next())); err != nil {
				return err
			}
		}
		return nil
	}
	if opts.Nodes > math.MaxInt32 {
		return fmt.Errorf("gen: cannot shuffle %d nodes; shuffle at most %d", opts.Nodes, math.MaxInt32)
	}
	parents := make([]int32, opts.Nodes)
	for i := range parents {
		parents[i] = int32(g.next())
	}
	order := make([]int32, opts.Nodes)
	for i := range order {
		order[i] = int32(i)
	}
	r := newRNG(opts.Seed, streamShuffle, 0)
	for i := len(order) - 1; i > 0; i-- { // Fisher–Yates
		j := r.intn(i + 1)
		order[i], order[j] = order[j], order[i]
	}
	for _, i := range order {
		if err := emit(g.record(int(i), int(parents[i]))); err != nil {
			return err
		}
	}
	return nil
}

// Independent random streams, so that, say, the parents of a random tree do
// not change when the attributes do.
const (
	streamParent uint64 = iota + 1
	streamAttrs
	streamTreeSize
	streamShuffle
)

// generator yields each node's parent in order: the parent's 0-based
// position, or -1 for a root. It holds only the current tree's bounds.
type generator struct {
	opts   Options
	fanout int
	i      int // the next node
	start  int // the first node of the current tree
	end    int // one past its last node
	tree   int // the current tree, from 0
}

func newGenerator(opts Options) (*generator, error) {
	if opts.Shape == "" {
		opts.Shape = ShapeBalanced
	}
	switch {
	case !slices.Contains(Shapes, opts.Shape):
		return nil, fmt.Errorf("gen: unknown shape %q; use one of %s", opts.Shape, strings.Join(Shapes, ", "))
	case opts.Nodes < 0:
		return nil, fmt.Errorf("gen: %d nodes; give a count of 0 or more", opts.Nodes)
	case opts.Fanout < 0:
		return nil, fmt.Errorf("gen: fan-out %d; give 1 or more (or 0 for the default)", opts.Fanout)
	case opts.Depth < 0:
		return nil, fmt.Errorf("gen: depth %d; give 1 or more (or 0 for no bound)", opts.Depth)
	case opts.Trees < 0:
		return nil, fmt.Errorf("gen: %d trees; give 1 or more (or 0 for the default)", opts.Trees)
	case opts.Trees > opts.Nodes:
		return nil, fmt.Errorf("gen: %d trees need at least %d nodes, not %d", opts.Trees, opts.Trees, opts.Nodes)
	}
	g := &generator{opts: opts, fanout: opts.Fanout}
	if opts.Shape == ShapeBalanced && g.fanout == 0 {
		g.fanout = DefaultFanout
		if opts.Depth > 0 {
			per := opts.Nodes
			if opts.Trees > 0 {
				per = (opts.Nodes + opts.Trees - 1) / opts.Trees
			}
			g.fanout = fanoutFor(per, opts.Depth)
		}
	}
	return g, nil
}

// fanoutFor is the smallest fan-out whose complete tree with depth levels
// below the root holds n nodes.
func fanoutFor(n, depth int) int {
	for f := 1; ; f++ {
		total, level := 1, 1
		for range depth {
			level *= f
			total += level
			if total >= n {
				return f
			}
		}
	}
}

// next returns the parent of the next node and moves on.
func (g *generator) next() int {
	i := g.i
	g.i++
	if i >= g.end {
		g.start, g.end = i, i+g.treeSize(g.tree, i)
		g.tree++
	}
	j := i - g.start // position within the tree
	if j == 0 {
		return -1
	}
	switch g.opts.Shape {
	case ShapeBalanced:
		return g.start + (j-1)/g.fanout
	case ShapeDeep:
		if d := g.opts.Depth; d > 0 && (j-1)%d == 0 {
			return g.start
		}
		return i - 1
	case ShapeWide:
		return g.start
	}
	return g.start + newRNG(g.opts.Seed, streamParent, uint64(i)).intn(j) // random, forest
}

// treeSize is the size of tree t, which starts at node start.
func (g *generator) treeSize(t, start int) int {
	n, trees := g.opts.Nodes, g.opts.Trees
	if trees == 0 && g.opts.Shape == ShapeForest {
		size := 1 + newRNG(g.opts.Seed, streamTreeSize, uint64(t)).intn(MaxForestTreeSize)
		return min(size, n-start)
	}
	if trees <= 1 {
		return n
	}
	// Near-equal sizes: the first n%trees trees get one node more.
	size := n / trees
	if t < n%trees {
		size++
	}
	return size
}

// record builds node i's record.
func (g *generator) record(i, parent int) *transform.Record {
	r := newRNG(g.opts.Seed, streamAttrs, uint64(i))
	rec := &transform.Record{ID: ID(i)}
	if parent >= 0 {
		rec.Parent = ID(parent)
	}
	score := 1 + r.intn(9999)
	if score%10 == 0 {
		score++ // no trailing zero, so the text is the number's canonical form
	}
	created := epoch + int64(r.intn(int(span)))
	rec.Attrs = transform.Attrs{
		AttrName:    &types.AttributeValueMemberS{Value: r.name()},
		AttrSize:    &types.AttributeValueMemberN{Value: strconv.Itoa(r.size())},
		AttrScore:   &types.AttributeValueMemberN{Value: strconv.Itoa(score/100) + "." + strconv.Itoa(score%100/10) + strconv.Itoa(score%10)},
		AttrCreated: &types.AttributeValueMemberS{Value: time.Unix(created, 0).UTC().Format(time.RFC3339)},
	}
	return rec
}

// The created timestamps fall in [2015-01-01, 2025-01-01).
var (
	epoch = time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	span  = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Unix() - epoch
)

// rng is SplitMix64: tiny, fast, and fixed forever, so a seed's forest never
// changes.
type rng struct{ state uint64 }

func newRNG(seed int64, stream, i uint64) *rng {
	r := &rng{state: uint64(seed)}
	r.state = r.next() ^ stream*0x9e3779b97f4a7c15
	r.state = r.next() ^ i
	r.next()
	return r
}

func (r *rng) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// intn returns a number in [0, n); n must be positive. The modulo bias is
// below 2^-40 for any n a forest has.
func (r *rng) intn(n int) int {
	if n <= 0 {
		panic(errors.New("gen: intn of a non-positive bound"))
	}
	return int(r.next() % uint64(n))
}

var (
	onsets = []string{"b", "br", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "st", "t", "th", "v", "z", "ch", "sh", "tr"}
	vowels = []string{"a", "e", "i", "o", "u", "ai", "ea", "ou"}
	codas  = []string{"", "", "", "n", "r", "l", "s", "m", "x"}
)

// name makes a pronounceable word of two or three syllables, capitalised.
func (r *rng) name() string {
	var buf [32]byte
	b := buf[:0]
	for range 2 + r.intn(2) {
		b = append(b, onsets[r.intn(len(onsets))]...)
		b = append(b, vowels[r.intn(len(vowels))]...)
	}
	b = append(b, codas[r.intn(len(codas))]...)
	b[0] -= 'a' - 'A'
	return string(b)
}

// size is spread over orders of magnitude, like file sizes: a random integer
// of one to seven digits, each length equally likely.
func (r *rng) size() int {
	n := r.intn(10)
	for range r.intn(7) {
		n = n*10 + r.intn(10)
	}
	return n
}
