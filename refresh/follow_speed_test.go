package refresh

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/treeport/treeport/internal/streams"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// TestFollowRoundsSpeed measures the follower's own work, without B's
// writes: the seed of a copy of TREEPORT_FOLLOW_SPEED nodes, then rounds of
// 100 records (80 changed attributes, 20 moved leaves) taken into the
// state, their affected sets and changes found and B's nodes updated. A
// measurement (benchmarks/REFRESH.md), run only when asked:
//
//	TREEPORT_FOLLOW_SPEED=100000 go test ./refresh -run TestFollowRoundsSpeed -v
func TestFollowRoundsSpeed(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("TREEPORT_FOLLOW_SPEED"))
	if n <= 0 {
		t.Skip("a measurement: set TREEPORT_FOLLOW_SPEED to a number of nodes")
	}
	lf, _ := layouts.New(layouts.AdjacencyName, layouts.Options{})
	lt, _ := layouts.New(layouts.PathName, layouts.Options{})
	r := rand.New(rand.NewPCG(5, 5))
	tr := randomTree(r, n)
	in := readSnapshot(t, snapshotOf(t, r, tr, nil).Path, lf, nil)
	fo := &follower{opts: MigrateOptions{FromLayout: lf, ApplyOptions: ApplyOptions{Target: Target{Layout: lt}}}, log: io.Discard, res: &FollowResult{}}
	started, cpu0 := time.Now(), cpuSeconds()
	if err := fo.seed(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	seeded, seedCPU := time.Since(started), cpuSeconds()-cpu0
	mk := newRoundMaker(t, r, tr, lf)
	const rounds = 1000
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	allocs0 := ms.Mallocs
	started, cpu0 = time.Now(), cpuSeconds()
	for k := range rounds {
		recs := mk.next(k)
		fo.applied.NewRound()
		changes, paths, _ := fo.changes(fo.affected(fo.take(recs)))
		fo.applyChanges(changes, paths, nil)
	}
	took, roundsCPU := time.Since(started), cpuSeconds()-cpu0
	runtime.ReadMemStats(&ms)
	allocs := float64(ms.Mallocs-allocs0) / rounds
	t.Logf("%d nodes: seed %s (%.1f s CPU, %.0f µs CPU a node); %d rounds of 100 records: %s a round (%.1f ms CPU, %.0f allocations, the records' own included)", n, seeded.Round(time.Millisecond),
		seedCPU, seedCPU*1e6/float64(n), rounds, (took / rounds).Round(time.Microsecond), roundsCPU*1e3/rounds, allocs)
}

// roundMaker makes a follow's rounds of 100 records of A in the adjacency
// layout lf: 80 changed attributes, then 20 leaves moved under a random
// node (the tree tr changes with them).
type roundMaker struct {
	t      *testing.T
	r      *rand.Rand
	tr     *tree
	lf     layouts.Layout
	ids    []string
	leaves []string
	kids   map[string]int
}

func newRoundMaker(t *testing.T, r *rand.Rand, tr *tree, lf layouts.Layout) *roundMaker {
	m := &roundMaker{t: t, r: r, tr: tr, lf: lf, ids: tr.ids(), kids: map[string]int{}}
	for _, id := range m.ids {
		m.kids[tr.parent[id]]++
	}
	for _, id := range m.ids {
		if m.kids[id] == 0 {
			m.leaves = append(m.leaves, id)
		}
	}
	return m
}

// item is node id's item in A.
func (m *roundMaker) item(id string) layouts.Item {
	node := transform.Node{Record: transform.Record{ID: id, Parent: m.tr.parent[id], Attrs: m.tr.attrs[id]}}
	if node.Parent != "" {
		node.Depth = 1 // the adjacency layout's items do not hold the path
	}
	var out layouts.Item
	if err := m.lf.Items(&node, func(it layouts.Item) { out = it }); err != nil {
		m.t.Fatal(err)
	}
	return out
}

// next is round k's records.
func (m *roundMaker) next(k int) []streams.Record {
	tr, r := m.tr, m.r
	recs := make([]streams.Record, 0, 100)
	for j := range 100 {
		var id string
		if j < 80 {
			id = m.ids[r.IntN(len(m.ids))]
			tr.attrs[id] = transform.Attrs{"v": s(fmt.Sprint(k, j))}
		} else {
			id = m.leaves[r.IntN(len(m.leaves))]
			if p := m.ids[r.IntN(len(m.ids))]; p != id && m.kids[id] == 0 {
				m.kids[tr.parent[id]]--
				m.kids[p]++
				tr.parent[id] = p
			}
		}
		it := m.item(id)
		recs = append(recs, streams.Record{Shard: "s", Seq: fmt.Sprint(k*100 + j), Event: "MODIFY", Keys: keyItem(m.lf.Table(), it), NewImage: it})
	}
	return recs
}
