package layoutbench

import (
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/treeport/treeport/transform"
)

// sampled is one node of the sample, with the number of nodes it stands
// for.
type sampled struct {
	node   int32 // forest index
	depth  int
	weight float64
}

// drawSample picks up to n nodes among the candidates, stratified by depth:
// the depths are cut into min(n, depths) contiguous bands, each band gets
// an even share of the sample (the rest going to the most populous bands),
// and the nodes of a band are drawn uniformly with a PCG seeded by seed. The
// same forest, n and seed give the same sample. With n at least the number
// of candidates, every candidate is taken, each standing for itself.
func drawSample(f *transform.Forest, ok func(i int32) bool, n int, seed uint64) ([]sampled, []Stratum) {
	var cand []int32
	maxDepth := 0
	for _, i := range f.Order() {
		if ok(i) {
			cand = append(cand, i)
			maxDepth = max(maxDepth, f.Depth(int(i)))
		}
	}
	if len(cand) == 0 || n <= 0 {
		return nil, nil
	}
	levels := maxDepth + 1
	bands := min(n, levels)
	bandOf := func(d int) int { return d * bands / levels }
	pop := make([]int64, bands)
	for _, i := range cand {
		pop[bandOf(f.Depth(int(i)))]++
	}
	// An even share each, the rest to the most populous bands, and what a
	// band cannot take to the next most populous with room.
	quota := make([]int, bands)
	left := min(n, len(cand))
	byPop := make([]int, bands)
	for b := range byPop {
		byPop[b] = b
	}
	sort.SliceStable(byPop, func(a, b int) bool { return pop[byPop[a]] > pop[byPop[b]] })
	for b := range quota {
		quota[b] = int(min(int64(left/bands), pop[b]))
	}
	for _, q := range quota {
		left -= q
	}
	for left > 0 {
		progress := false
		for _, b := range byPop {
			if left == 0 {
				break
			}
			if int64(quota[b]) < pop[b] {
				quota[b]++
				left--
				progress = true
			}
		}
		if !progress {
			break
		}
	}
	// Reservoir sampling per band, in the forest's order.
	rng := rand.New(rand.NewPCG(seed, 0x7472656570617274)) // "treepart"
	res := make([][]int32, bands)
	seen := make([]int64, bands)
	for _, i := range cand {
		b := bandOf(f.Depth(int(i)))
		seen[b]++
		if len(res[b]) < quota[b] {
			res[b] = append(res[b], i)
		} else if j := rng.Int64N(seen[b]); j < int64(quota[b]) {
			res[b][j] = i
		}
	}
	var out []sampled
	strata := make([]Stratum, bands)
	for b := range bands {
		lo := (b*levels + bands - 1) / bands
		hi := ((b+1)*levels+bands-1)/bands - 1
		strata[b] = Stratum{MinDepth: lo, MaxDepth: hi, Population: pop[b], Sampled: len(res[b])}
		for _, i := range res[b] {
			out = append(out, sampled{node: i, depth: f.Depth(int(i)), weight: float64(pop[b]) / float64(len(res[b]))})
		}
	}
	slices.SortFunc(out, func(a, b sampled) int {
		if a.depth != b.depth {
			return a.depth - b.depth
		}
		return int(a.node - b.node)
	})
	return out, strata
}
