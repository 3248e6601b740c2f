package transform

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
	"unsafe"
)

// PathTexts joins the paths of a forest's nodes by a delimiter, as
// AppendPathText does, without walking all the way up to the root: it keeps
// the joined paths of the nodes at the top of the trees, those with the
// largest subtrees, and a node's path is then its nearest kept ancestor's
// text and the few ids below it. Most of a path walk is near the root, and
// the nodes there are few.
//
// The kept nodes are those whose subtree has at least a size and whose path
// is at most maxKept bytes long, the size being the smallest power of two
// whose nodes' texts fit the budget. A parent's subtree is larger than its
// child's and its path shorter, so the parent of a kept node is kept too,
// and each kept text is made once, from its parent's.
//
// A PathTexts is not safe for concurrent use; the Forest it reads may be
// shared.
type PathTexts struct {
	f     *Forest
	delim string
	// kept[i] is 1 + where node i's joined path starts in text; 0 for a
	// node that is not kept.
	kept []uint32
	text []byte
	ids  []string // AppendPathText's, for the paths it does not join itself
	// splits is 0 until Splits has asked the forest's bounds, then 2 when
	// no id holds the delimiter, and 1 when one may.
	splits uint8
}

// maxKept is the longest path PathTexts keeps: any longer one is longer
// than DynamoDB's keys.
const maxKept = MaxPartitionKeyBytes

// NewPathTexts makes the PathTexts of the forest for delim, keeping at
// most budget bytes of text (and 4 bytes a node of offsets). It keeps
// texts for a one-byte delimiter only; with another, Append is
// AppendPathText.
func (f *Forest) NewPathTexts(delim string, budget int) *PathTexts {
	p := &PathTexts{f: f, delim: delim}
	if len(delim) != 1 {
		return p
	}
	// The bytes of text the nodes would take, by the bit length of their
	// subtree's size: a node with children has a subtree of at least 2,
	// of bit length 2 or more. A node in or below a cycle has none.
	var bytes [33]int64
	for i := range f.nodes {
		if l := p.pathLen(i); l > 0 {
			bytes[bits.Len32(uint32(f.subtree[i]))] += int64(l)
		}
	}
	from, total := len(bytes), int64(0)
	for b := len(bytes) - 1; b >= 2 && total+bytes[b] <= min(int64(budget), math.MaxUint32-1); b-- {
		total += bytes[b]
		from = b
	}
	if total == 0 {
		return p
	}
	p.kept = make([]uint32, len(f.nodes))
	p.text = make([]byte, 0, total)
	least := int32(1) << (from - 1) // the smallest subtree kept
	keep := func(i int32) {
		if f.subtree[i] < least || p.pathLen(int(i)) == 0 {
			return
		}
		p.kept[i] = uint32(len(p.text)) + 1
		if q := f.nodes[i].parent; q >= 0 {
			k := p.kept[q] - 1 // kept, as the parent of a kept node
			p.text = append(p.text, p.text[k:int(k)+p.pathLen(int(q))]...)
			p.text = append(p.text, delim...)
		}
		p.text = append(p.text, f.id(i)...)
	}
	if f.topo {
		for i, sub := range f.subtree {
			if sub >= least {
				keep(int32(i))
			}
		}
	} else {
		for _, i := range f.Order() {
			keep(i)
		}
	}
	return p
}

// pathLen is the length of node i's joined path when PathTexts would keep
// it: 0 for a node without children, one that is not placed, and one whose
// path is longer than maxKept.
func (p *PathTexts) pathLen(i int) int {
	f := p.f
	if f.subtree[i] < 2 {
		return 0
	}
	l := int(f.pathBytes[i]) + int(f.depth[i])*len(p.delim)
	if f.pathBytes[i] == math.MaxInt32 || l > maxKept {
		return 0
	}
	return l
}

// Forest is the forest whose paths p joins.
func (p *PathTexts) Forest() *Forest { return p.f }

// Delim is the delimiter p joins ids with.
func (p *PathTexts) Delim() string { return p.delim }

// Splits reports whether the text Append makes for node i splits back, at
// the delimiter, into exactly the ids of node i's path in the forest: the
// node is placed in its tree (not in or below a cycle), and no id of the
// forest holds the delimiter (Bounds.IDsMayHold, measured once).
func (p *PathTexts) Splits(i int) bool {
	if p.splits == 0 {
		p.splits = 1
		if !p.f.Bounds().IDsMayHold(p.delim) {
			p.splits = 2
		}
	}
	return p.splits == 2 && p.f.pathBytes[i] != 0
}

// Kept is how many bytes of text p holds.
func (p *PathTexts) Kept() int { return len(p.text) }

// Append appends node i's path, its ids from the root down joined by the
// delimiter, to dst: what AppendPathText appends to its text.
func (p *PathTexts) Append(dst []byte, i int) []byte {
	f := p.f
	total := int(f.pathBytes[i])
	if total == math.MaxInt32 || total == 0 || p.kept == nil || len(p.delim) != 1 {
		// A path of uncounted length, a node that is not placed, or no
		// text kept: the whole walk.
		p.ids, dst = f.AppendPathText(p.ids[:0], dst, i, p.delim)
		return dst
	}
	d := int(f.depth[i])
	total += d
	start := len(dst)
	dst = slices.Grow(dst, total)[:start+total]
	p.join(dst[start:], int32(i), d, p.delim[0])
	return dst
}

// join is joinPath for a one-byte delimiter, without the ids, and stopping
// at the first kept node, whose text is then exactly what is left of t.
func (p *PathTexts) join(t []byte, i int32, d int, delim byte) {
	f := p.f
	pt := unsafe.Pointer(unsafe.SliceData(t))
	nodes, kept := f.nodes, p.kept
	pos := len(t)
	n := i
	for k := d; k >= 0; k-- {
		if o := kept[n]; o != 0 {
			if copy(t[:pos], p.text[o-1:]) != pos {
				panic("transform: a kept path shorter than its node's pathBytes")
			}
			return
		}
		r := &nodes[n]
		l := int(r.n)
		if l > pos {
			panic("transform: a path longer than its node's pathBytes")
		}
		pos -= l
		if l <= 8 && pos+l >= 8 {
			w := binary.LittleEndian.Uint64(r.b[:]) << (8 * uint(8-l))
			binary.LittleEndian.PutUint64((*[8]byte)(unsafe.Add(pt, pos+l-8))[:], w)
		} else {
			putID(pt, pos, r, f, n)
		}
		if k > 0 {
			pos--
			*(*byte)(unsafe.Add(pt, pos)) = delim
		}
		n = r.parent
	}
}

// putID writes the id of node n, whose record is r, at [pos, pos+l) of the
// text at pt, which holds at least pos+l bytes, for the ids that are not
// one word of their record (the walks write those themselves, as the last
// l bytes of the word [pos+l-8, pos+l)). It writes a word at a time where
// it can: the bytes before pos that a word writes are the text's to
// overwrite.
func putID(pt unsafe.Pointer, pos int, r *nodeRec, f *Forest, n int32) {
	l := int(r.n)
	switch {
	case l <= 8:
		for j := l - 1; j >= 0; j-- {
			*(*byte)(unsafe.Add(pt, pos+j)) = r.b[j]
		}
	case pos >= 8:
		// Words [pos+e-8, pos+e) of t from [a+e-8, a+e) of the arena:
		// pos+e-8 >= pos-7 >= 1 and a+e-8 >= a-7 >= 1, within both.
		a := int(binary.LittleEndian.Uint64(r.b[:]))
		pa := unsafe.Pointer(unsafe.SliceData(f.arena))
		for e := l; e > 0; e -= 8 {
			*(*[8]byte)(unsafe.Add(pt, pos+e-8)) = *(*[8]byte)(unsafe.Add(pa, a+e-8))
		}
	default:
		copy(unsafe.Slice((*byte)(unsafe.Add(pt, pos)), l), f.id(n))
	}
}

// Warm reads ahead what Append reads for nodes from to to-1 (at most
// warmLen of them): the records up to each one's nearest kept ancestor, and
// the start of that ancestor's text. It walks their paths side by side, a
// level of all of them at a time, so that the processor waits for their
// cache misses together, as WarmPaths does.
func (p *PathTexts) Warm(from, to int) {
	f := p.f
	if p.kept == nil {
		return
	}
	var (
		cur  [warmLen]int32
		left [warmLen]int32 // levels the walk may yet go up: a node in a cycle is at depth 0
	)
	to = min(to, from+warmLen, len(f.nodes))
	k := 0
	for i := max(from, 0); i < to; i++ {
		cur[k], left[k] = int32(i), f.depth[i]
		k++
	}
	nodes, kept, text := f.nodes, p.kept, p.text
	var sink byte
	for live := k; live > 0; {
		live = 0
		for j := range cur[:k] {
			c := cur[j]
			if c < 0 {
				continue
			}
			if o := kept[c]; o != 0 {
				sink += text[o-1]
				cur[j] = -1
				continue
			}
			if left[j] == 0 {
				cur[j] = -1
				continue
			}
			left[j]--
			cur[j] = nodes[c].parent
			live++
		}
	}
	f.warmSink.Add(int32(sink))
}
