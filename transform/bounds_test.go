package transform

import (
	"math/rand"
	"strings"
	"testing"
)

// Bounds bound every node's Stats and are reached by some node; IDsMayHold
// finds every string an id holds, and no byte that none does.
func TestBounds(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for seed := 0; seed < 40; seed++ {
		rows := randomRows(rng, 1+rng.Intn(300), seed%2 == 1)
		if seed%4 == 3 {
			rows = append(rows, [2]string{"c1", "c2"}, [2]string{"c2", "c1"}, [2]string{"x/y", "c1"})
		}
		b := NewBuilder(0, false)
		for i, r := range rows {
			b.Add(&Record{ID: r[0], Parent: r[1], File: "in.csv", Line: i + 2}, "", 10+rng.Intn(1000), 0)
		}
		f, _ := b.Build()
		bounds := f.Bounds()
		var most Bounds
		var s Stats
		for i := range f.Len() {
			f.Stats(i, &s)
			for _, m := range []struct {
				name     string
				v, bound int
				most     *int
			}{
				{"id", len(s.ID), bounds.IDBytes, &most.IDBytes},
				{"parent id", len(s.ParentID), bounds.IDBytes, nil},
				{"root id", len(s.RootID), bounds.IDBytes, nil},
				{"ancestor id", s.MaxAncestorIDBytes, bounds.IDBytes, nil},
				{"path", s.PathBytes, bounds.PathBytes, &most.PathBytes},
				{"depth", s.Depth, bounds.Depth, &most.Depth},
				{"attributes", s.AttrBytes, bounds.AttrBytes, &most.AttrBytes},
				{"copied attributes", s.CopyBytes, bounds.CopyBytes, &most.CopyBytes},
			} {
				if m.v > m.bound {
					t.Fatalf("seed %d node %q: %s %d over the bound %d", seed, s.ID, m.name, m.v, m.bound)
				}
				if m.most != nil {
					*m.most = max(*m.most, m.v)
				}
			}
		}
		if most.IDBytes != bounds.IDBytes || most.PathBytes != bounds.PathBytes || most.Depth != bounds.Depth ||
			most.AttrBytes != bounds.AttrBytes || most.CopyBytes != bounds.CopyBytes {
			t.Fatalf("seed %d: bounds %+v, but the nodes reach only %+v", seed, *bounds, most)
		}
		for _, probe := range []string{"/", "x", "é", "xé", "#", "\x00", "😀", "12", "y", "1", "9", "\xa9"} {
			held := false
			for i := range f.Len() {
				held = held || strings.Contains(f.ID(i), probe)
			}
			if held && !bounds.IDsMayHold(probe) {
				t.Fatalf("seed %d: an id holds %q, but IDsMayHold says none does", seed, probe)
			}
			// Only a string of more than a byte may straddle two ids of
			// the arena.
			if !held && bounds.IDsMayHold(probe) && len(probe) == 1 {
				t.Fatalf("seed %d: no id holds %q, but IDsMayHold says one may", seed, probe)
			}
		}
	}
}
