package layoutbench

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/treeport/treeport/internal/pricing"
)

// costOf projects a layout's bill to the report's scale: write, import and
// storage figures grow linearly with the node count; a read of the mix
// costs what it cost on this dataset.
func costOf(res *Result, rep *Report, p pricing.Prices) Cost {
	f := rep.Scale.Factor
	scaled := func(v int64) int64 { return int64(math.Round(float64(v) * f)) }
	c := Cost{ImportSourceBytes: scaled(res.Cost.ImportSourceBytes)}
	c.LoadOnDemandUSD = money(p.OnDemandWrites(scaled(res.Load.WCU)))
	c.LoadImportUSD = money(p.Import(c.ImportSourceBytes))
	storage := 0.0
	for _, s := range res.Storage {
		storage += p.StorageMonth(scaled(s.Bytes), scaled(s.Items))
	}
	c.StorageMonthUSD = money(storage)
	for _, m := range rep.ReadMix {
		for _, q := range res.Queries {
			if q.Kind == m.Kind {
				c.ReadRCUPerOp += m.Share * q.RCU.Mean
				c.RequestsPerOp += m.Share * q.Requests.Mean
			}
		}
	}
	c.ReadRCUPerOp = round(c.ReadRCUPerOp)
	c.RequestsPerOp = round(c.RequestsPerOp)
	c.MillionReadsUSD = money(p.OnDemandReads(1e6 * c.ReadRCUPerOp))
	return c
}

// money keeps a millionth of a dollar.
func money(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// rank orders the layouts for the read mix: the cheapest reads first, then
// fewer requests a read, less storage, and the name. Each gets one line
// saying why.
func rank(rep *Report) []RankEntry {
	ls := append([]*Result(nil), rep.Layouts...)
	sort.SliceStable(ls, func(a, b int) bool {
		x, y := ls[a].Cost, ls[b].Cost
		if d := x.MillionReadsUSD - y.MillionReadsUSD; math.Abs(d) > 1e-9 {
			return d < 0
		}
		if d := x.RequestsPerOp - y.RequestsPerOp; math.Abs(d) > 1e-9 {
			return d < 0
		}
		if d := x.StorageMonthUSD - y.StorageMonthUSD; math.Abs(d) > 1e-12 {
			return d < 0
		}
		return ls[a].Layout < ls[b].Layout
	})
	var out []RankEntry
	for i, r := range ls {
		r.Rank = i + 1
		r.Why = why(r, ls, i)
		out = append(out, RankEntry{Rank: r.Rank, Layout: r.Layout, Why: r.Why})
	}
	return out
}

// why is one line on a layout's place: its reads against the best, then
// up to two traits that set it apart (partition skew, write amplification,
// storage, key lengths).
func why(r *Result, ranked []*Result, i int) string {
	best := ranked[0]
	var lead string
	c := r.Cost
	switch {
	case i == 0:
		lead = fmt.Sprintf("cheapest reads for this mix: %s RCU and %s requests a read, %s per million reads",
			num(c.ReadRCUPerOp), num(c.RequestsPerOp), usd(c.MillionReadsUSD))
	case best.Cost.ReadRCUPerOp > 0 && c.ReadRCUPerOp/best.Cost.ReadRCUPerOp < 1.005:
		lead = fmt.Sprintf("reads cost as much as %s (%s per million) but take %s requests a read against %s",
			best.Layout, usd(c.MillionReadsUSD), num(c.RequestsPerOp), num(best.Cost.RequestsPerOp))
	default:
		ratio := math.Inf(1)
		if best.Cost.ReadRCUPerOp > 0 {
			ratio = c.ReadRCUPerOp / best.Cost.ReadRCUPerOp
		}
		lead = fmt.Sprintf("reads cost %s× the best: %s RCU and %s requests a read, %s per million reads",
			num(ratio), num(c.ReadRCUPerOp), num(c.RequestsPerOp), usd(c.MillionReadsUSD))
	}
	var traits []string
	// Hot partitions: the largest share of a table's or index's items under
	// one partition key value.
	var hot *PartitionSkew
	for k := range r.Partitions {
		p := &r.Partitions[k]
		if len(p.ByItems) == 0 || p.Partitions < 2 && p.ByItems[0].Items < 2 {
			continue
		}
		if hot == nil || p.ByItems[0].Share > hot.ByItems[0].Share {
			hot = p
		}
	}
	if hot != nil && hot.ByItems[0].Share >= 0.25 {
		where := "the table"
		if hot.Index != "" {
			where = hot.Index
		}
		traits = append(traits, fmt.Sprintf("hot partition risk: %s %q holds %.0f%% of %s's items",
			hot.Attr, hot.ByItems[0].Value, 100*hot.ByItems[0].Share, where))
	}
	// Write amplification of a move.
	minMove, maxMove := math.Inf(1), 0.0
	for _, o := range ranked {
		if o.Rewrites.Move.Samples > 0 {
			minMove = min(minMove, o.Rewrites.Move.MeanItems)
			maxMove = max(maxMove, o.Rewrites.Move.MeanItems)
		}
	}
	if mv := r.Rewrites.Move; mv.Samples > 0 && len(ranked) > 1 && maxMove > 1.5*minMove {
		switch mv.MeanItems {
		case maxMove:
			traits = append(traits, fmt.Sprintf("write amplification: moving a subtree rewrites %s items on average (the most; worst %d)", num(mv.MeanItems), mv.WorstItems))
		case minMove:
			traits = append(traits, fmt.Sprintf("fewest items rewritten by a move: %s on average", num(mv.MeanItems)))
		}
	}
	// Storage against the smallest.
	var smallest *Result
	for _, o := range ranked {
		if smallest == nil || o.StoredBytes < smallest.StoredBytes {
			smallest = o
		}
	}
	if smallest != nil && smallest.StoredBytes > 0 && float64(r.StoredBytes) >= 2*float64(smallest.StoredBytes) {
		traits = append(traits, fmt.Sprintf("stores %s× the bytes of %s (%s a month)", num(float64(r.StoredBytes)/float64(smallest.StoredBytes)), smallest.Layout, usd(r.Cost.StorageMonthUSD)))
	}
	for _, k := range r.Keys {
		if k.Limit > 0 && k.Longest*2 >= k.Limit {
			where := "table"
			if k.Index != "" {
				where = k.Index
			}
			traits = append(traits, fmt.Sprintf("%s %s key %s up to %d of %d bytes", where, k.Role, k.Attr, k.Longest, k.Limit))
			break
		}
	}
	if len(traits) > 2 {
		traits = traits[:2]
	}
	return strings.Join(append([]string{lead}, traits...), "; ")
}

// num prints a figure with up to two decimals.
func num(v float64) string {
	if math.IsInf(v, 0) {
		return "∞"
	}
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		s = "0"
	}
	return s
}

// usd prints dollars: cents above a dollar, more digits below.
func usd(v float64) string {
	switch {
	case v == 0:
		return "$0"
	case v >= 100:
		return fmt.Sprintf("$%.0f", v)
	case v >= 1:
		return fmt.Sprintf("$%.2f", v)
	case v >= 0.01:
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.6f", v)
}

// notes say how the report's figures were obtained.
func notes(rep *Report) []string {
	var n []string
	if rep.Mode == "online" {
		n = append(n, fmt.Sprintf("Online against %s: each layout was loaded into a fresh on-demand table with treeport's writer, the sample's queries were sent with treeport's query code, and every answer was checked against the input. Requests and items read are the server's accounting; load times and latencies are those of this server (DynamoDB Local's say little about DynamoDB's). RCU, the costs and the ranking price the requests sent by DynamoDB's documented rules: a Query that finds nothing bills the minimum of its read type (half a unit), as DynamoDB's Query reference says, where DynamoDB Local reports 0; consumed_rcu is what the server reported. The estimated_rcu_mean of each query is the offline model's figure, which the documented price matches query for query.", rep.Endpoint))
	} else {
		n = append(n, "Offline: nothing was sent to a server. Read costs are estimated from the requests each layout's queries send (the same code treeport query runs) and the sizes of the items they read: half an RCU per started 4 KB, a Query summed over pages of 1 MB, a GetItem or BatchGetItem per item. Latency needs a server: run without --offline against DynamoDB Local or --endpoint-url.")
	}
	n = append(n,
		fmt.Sprintf("Sample: %d nodes drawn with seed %d, stratified by depth; means and percentiles weigh each node by the nodes of its depth band it stands for, so they estimate a node chosen uniformly. Prefix queries are given the node's path, as an application that stores it would.", rep.Sample.Nodes, rep.Sample.Seed),
		"Stored bytes follow DynamoDB's item size rules; each index holds the items that have its key attributes (all attributes projected); billing adds the per-item overhead of the price list to the table and to each index.",
		"Rewrites: move = the sampled node's subtree goes under another node at its parent's depth (its own depth when there is none, its grandparent as a last resort; roots are not moved); delete = the node goes and its children move up to its parent. Counted by building each affected node's items before and after and comparing keys and contents: puts are new or changed items, deletes are keys that disappear.",
		fmt.Sprintf("Costs at %d nodes (×%s of this dataset), %s. ImportTable bills the uncompressed DynamoDB JSON it reads: the bytes of the lines import --out writes.", rep.Scale.Nodes, num(rep.Scale.Factor), rep.Scale.Method),
		fmt.Sprintf("Prices: DynamoDB on-demand, %s, as of %s (treeport's price list; check them against AWS's pricing page for your region).", rep.Prices.Region, rep.Prices.AsOf),
	)
	for _, r := range rep.Layouts {
		if r.Rejected > 0 {
			n = append(n, fmt.Sprintf("%s rejects %d nodes of the input (with their subtrees); its figures leave them out.", r.Layout, r.Rejected))
		}
	}
	return n
}
