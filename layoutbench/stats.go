package layoutbench

import (
	"math"
	"sort"
)

// weighted is one sampled value with the nodes it stands for.
type weighted struct{ v, w float64 }

// dist summarises weighted values: the weighted mean, the weighted 50th and
// 95th percentiles (the smallest value whose cumulative weight reaches the
// share) and the largest value.
func dist(vals []weighted) Dist {
	if len(vals) == 0 {
		return Dist{}
	}
	sorted := append([]weighted(nil), vals...)
	sort.SliceStable(sorted, func(a, b int) bool { return sorted[a].v < sorted[b].v })
	var total, sum float64
	for _, x := range sorted {
		total += x.w
		sum += x.v * x.w
	}
	pct := func(p float64) float64 {
		cum := 0.0
		for _, x := range sorted {
			cum += x.w
			if cum >= p*total-1e-9 {
				return x.v
			}
		}
		return sorted[len(sorted)-1].v
	}
	return Dist{Mean: round(sum / total), P50: pct(0.5), P95: pct(0.95), Max: sorted[len(sorted)-1].v}
}

// round keeps four decimals, so that the report's numbers do not wobble in
// the last bits from one run to the next.
func round(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// queryStats summarises the sample's queries of each kind. got is what was
// measured (or estimated, offline); lat the latencies (nil offline).
func queryStats(sample []sampled, got []map[string]cost, lat []map[string]float64, est []map[string]cost) []QueryStats {
	var out []QueryStats
	for _, kind := range Kinds {
		var req, items, rcu, consumed, ms, nodes, erc []weighted
		for k, x := range sample {
			c := got[k][kind]
			req = append(req, weighted{float64(c.req), x.weight})
			items = append(items, weighted{float64(c.items), x.weight})
			rcu = append(rcu, weighted{c.rcu, x.weight})
			consumed = append(consumed, weighted{c.consumed, x.weight})
			nodes = append(nodes, weighted{float64(c.nodes), x.weight})
			erc = append(erc, weighted{est[k][kind].rcu, x.weight})
			if lat != nil {
				ms = append(ms, weighted{lat[k][kind], x.weight})
			}
		}
		q := QueryStats{
			Kind: kind, Source: "estimated", Samples: len(sample),
			Requests: dist(req), ItemsRead: dist(items), RCU: dist(rcu),
			EstimatedRCU: dist(erc).Mean, Nodes: dist(nodes).Mean,
		}
		if lat != nil {
			q.Source = "measured"
			d := dist(ms)
			q.LatencyMS = &d
			c := dist(consumed)
			q.ConsumedRCU = &c
		}
		out = append(out, q)
	}
	return out
}
