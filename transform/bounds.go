package transform

import (
	"encoding/binary"
	"strings"
	"unsafe"

	"github.com/treeport/treeport/internal/swar"
)

// Bounds are upper bounds on the Stats of every node of a forest: the
// largest of each measure. A layout that
// finds every node within them need not look at the nodes one by one.
type Bounds struct {
	IDBytes   int // the longest id, which bounds ParentID, RootID and MaxAncestorIDBytes
	PathBytes int // the longest path, saturating at math.MaxInt32
	Depth     int
	AttrBytes int
	CopyBytes int
	f         *Forest // whose ids IDsMayHold reads
}

// IDsMayHold reports whether some id may hold s. False means that none
// does. It reads every id, a word at a time for a one-byte s, on the
// first call for s; it remembers the answer.
func (b *Bounds) IDsMayHold(s string) bool {
	if b.f == nil || s == "" {
		return true
	}
	f := b.f
	f.heldMu.Lock()
	defer f.heldMu.Unlock()
	held, ok := f.held[s]
	if !ok {
		held = b.idsMayHold(s)
		if f.held == nil {
			f.held = map[string]bool{}
		}
		f.held[s] = held
	}
	return held
}

// idsMayHold is IDsMayHold, measured.
func (b *Bounds) idsMayHold(s string) bool {
	f := b.f
	// The ids of more than 8 bytes are in the arena, which holds nothing
	// else but its padding: s in the arena may only span two ids.
	if strings.Contains(unsafe.String(unsafe.SliceData(f.arena[arenaPad:]), len(f.arena)-arenaPad), s) {
		return true
	}
	if len(s) > 1 {
		for i := range f.nodes {
			if r := &f.nodes[i]; r.n <= 8 && strings.Contains(unsafe.String(&r.b[0], int(r.n)), s) {
				return true
			}
		}
		return false
	}
	// A word of the byte against each record's id, masked to its length.
	c := uint64(s[0]) * swar.LSBs
	for i := range f.nodes {
		r := &f.nodes[i]
		if r.n > 8 {
			continue
		}
		if swar.ZeroBytes(binary.LittleEndian.Uint64(r.b[:])^c)&(swar.MSBs>>(64-8*uint(r.n))) != 0 {
			return true
		}
	}
	return false
}

// Bounds returns the bounds of the forest's nodes, placed or not, rejected
// or not. They are measured once, on the first call.
func (f *Forest) Bounds() *Bounds {
	f.boundsOnce.Do(func() {
		b := &f.bounds
		b.f = f
		for i := range f.nodes {
			b.IDBytes = max(b.IDBytes, int(f.nodes[i].n))
			b.PathBytes = max(b.PathBytes, int(f.pathBytes[i]))
			b.Depth = max(b.Depth, int(f.depth[i]))
			b.AttrBytes = max(b.AttrBytes, int(f.attrBytes[i]))
		}
		b.CopyBytes = b.AttrBytes
		if f.copyBytes != nil {
			b.CopyBytes = 0
			for _, c := range f.copyBytes {
				b.CopyBytes = max(b.CopyBytes, int(c))
			}
		}
	})
	return &f.bounds
}
