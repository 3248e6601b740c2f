package layoutbench

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/treeport/treeport/internal/units"
)

// money keeps a millionth of a dollar.
func money(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// tieShare is how close two totals must be to be a tie: half a percent.
const tieShare = 0.005

// tied reports whether two totals are a tie.
func tied(a, b float64) bool {
	return math.Abs(a-b) <= tieShare*max(math.Abs(a), math.Abs(b))
}

// rank orders the layouts by the total cost of the workload: load,
// storage for its months, and its reads, writes, moves and deletes. Totals
// within half a percent are a tie and share a rank (the cheaper first
// still); within a tie, the layout whose load can go faster on DynamoDB
// (its hottest partition key value bounds it less) comes first, then equal
// totals are ordered by fewer requests a read, then the name. Each gets one
// line saying why.
func rank(rep *Report) []RankEntry {
	ls := append([]*Result(nil), rep.Layouts...)
	sort.SliceStable(ls, func(a, b int) bool {
		x, y := ls[a].Cost, ls[b].Cost
		if x.TotalUSD != y.TotalUSD {
			return x.TotalUSD < y.TotalUSD
		}
		if d := x.RequestsPerOp - y.RequestsPerOp; math.Abs(d) > 1e-9 {
			return d < 0
		}
		return ls[a].Layout < ls[b].Layout
	})
	// A tie is settled by the load time: runs of totals tied with the run's
	// first are ordered by the least time their load takes on DynamoDB.
	for i := 0; i < len(ls); {
		j := i + 1
		for j < len(ls) && tied(ls[j].Cost.TotalUSD, ls[i].Cost.TotalUSD) {
			j++
		}
		sort.SliceStable(ls[i:j], func(a, b int) bool {
			return loadSeconds(ls[i+a]) < loadSeconds(ls[i+b])
		})
		i = j
	}
	var out []RankEntry
	for i, r := range ls {
		r.Rank = i + 1
		if i > 0 && tied(r.Cost.TotalUSD, ls[i-1].Cost.TotalUSD) {
			r.Rank = ls[i-1].Rank
		}
		r.Why = why(r, ls, i, rep.Workload)
		out = append(out, RankEntry{Rank: r.Rank, Layout: r.Layout, Why: r.Why})
	}
	return out
}

// parts lists the non-zero parts of a total.
func parts(c Cost, w Workload) string {
	p := []string{fmt.Sprintf("load %s (%s)", usd(c.LoadUSD), c.LoadMethod), fmt.Sprintf("storage %s for %s months", usd(c.StorageUSD), num(w.Months)),
		fmt.Sprintf("reads %s (%s RCU a read)", usd(c.ReadsUSD), num(c.ReadRCUPerOp))}
	for _, x := range []struct {
		name string
		v    float64
		wcu  float64
	}{{"writes", c.WritesUSD, c.WriteWCU}, {"moves", c.MovesUSD, c.MoveWCU}, {"deletes", c.DeletesUSD, c.DeleteWCU}} {
		if x.v > 0 {
			p = append(p, fmt.Sprintf("%s %s (%s WCU each, at the scale)", x.name, usd(x.v), num(x.wcu)))
		}
	}
	return strings.Join(p, ", ")
}

// why is one line on a layout's place: its total against the best, with
// its parts, then up to two traits that set it apart (partition spread,
// write amplification, storage, key lengths).
func why(r *Result, ranked []*Result, i int, w Workload) string {
	best := ranked[0]
	var lead string
	c := r.Cost
	switch {
	case i == 0 && len(ranked) > 1 && tied(c.TotalUSD, ranked[1].Cost.TotalUSD):
		lead = fmt.Sprintf("ties with %s at %s for this workload: %s", ranked[1].Layout, usd(c.TotalUSD), parts(c, w))
	case i == 0:
		lead = fmt.Sprintf("cheapest for this workload: %s: %s", usd(c.TotalUSD), parts(c, w))
		if len(ranked) > 1 && c.TotalUSD > 0 {
			lead += fmt.Sprintf("; the next, %s, costs %s×", ranked[1].Layout, num(ranked[1].Cost.TotalUSD/c.TotalUSD))
		}
	case tied(c.TotalUSD, best.Cost.TotalUSD):
		lead = fmt.Sprintf("ties with %s at %s: %s", best.Layout, usd(c.TotalUSD), parts(c, w))
	default:
		ratio := math.Inf(1)
		if best.Cost.TotalUSD > 0 {
			ratio = c.TotalUSD / best.Cost.TotalUSD
		}
		lead = fmt.Sprintf("costs %s× the best: %s: %s", num(ratio), usd(c.TotalUSD), parts(c, w))
	}
	var traits []string
	// A load by BatchWriteItem that one partition key value holds back
	// (DynamoDB serves at most 1,000 WCU/s a partition): a minute or more.
	if r.Load.BoundBy == "partition" && c.LoadMethod != "ImportTable" && r.Load.MinSeconds >= 60 {
		traits = append(traits, fmt.Sprintf("slow to load by writes: its hottest partition key value holds the load on DynamoDB to at least %s (ImportTable is not held to it)", units.DurationText(r.Load.MinSeconds)))
	}
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
		top := hot.ByItems[0]
		if len(hot.ByItems) > 1 && hot.ByItems[1].Share*1.25 >= top.Share {
			// Spread evenly over a few partitions, by design: a spread,
			// not one hot key.
			n := 1
			for _, v := range hot.ByItems[1:] {
				if v.Share*1.25 >= top.Share {
					n++
				}
			}
			traits = append(traits, fmt.Sprintf("spread: %s's items are split about evenly over %d %s values of %.0f%% each at most",
				where, n, hot.Attr, 100*top.Share))
		} else {
			traits = append(traits, fmt.Sprintf("hot partition risk: %s %q holds %.0f%% of %s's items",
				hot.Attr, top.Value, 100*top.Share, where))
		}
	}
	// Write amplification of a move, by the WCU of the sampled moves on
	// this file: the figures of the report's rewrites table, so that "the
	// most" is the most there.
	minMove, maxMove := math.Inf(1), 0.0
	for _, o := range ranked {
		if o.Rewrites.Move.Samples > 0 {
			minMove = min(minMove, o.Rewrites.Move.MeanWCU)
			maxMove = max(maxMove, o.Rewrites.Move.MeanWCU)
		}
	}
	if mv := r.Rewrites.Move; mv.Samples > 0 && len(ranked) > 1 && maxMove > 1.5*minMove {
		switch mv.MeanWCU {
		case maxMove:
			traits = append(traits, fmt.Sprintf("write amplification: a move of a subtree of this file costs %s WCU on average, the most of the layouts (worst %d WCU; %s rewritten on average)", num(mv.MeanWCU), mv.WorstWCU, items(mv.MeanItems)))
		case minMove:
			traits = append(traits, fmt.Sprintf("cheapest moves: a move of a subtree of this file costs %s WCU on average, the least of the layouts (%s rewritten)", num(mv.MeanWCU), items(mv.MeanItems)))
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

// items says "1 item" or "2.5 items".
func items(v float64) string {
	if v == 1 {
		return "1 item"
	}
	return num(v) + " items"
}

// num prints a figure with up to two decimals, its thousands separated by
// commas (24,871,196.5).
func num(v float64) string {
	if math.IsInf(v, 0) {
		return "∞"
	}
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		s = "0"
	}
	return thousands(s)
}

// thousands puts a comma between each group of three digits of the
// integer part of the decimal text s.
func thousands(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	whole, frac, dot := strings.Cut(s, ".")
	if len(whole) <= 3 {
		return sign + s
	}
	var b strings.Builder
	for i, d := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	if dot {
		b.WriteString("." + frac)
	}
	return sign + b.String()
}

// usd prints dollars: cents above a dollar, more digits below; thousands
// separated by commas ($24,871,196).
func usd(v float64) string {
	switch {
	case v == 0:
		return "$0"
	case v >= 100:
		return "$" + thousands(fmt.Sprintf("%.0f", v))
	case v >= 1:
		return "$" + thousands(fmt.Sprintf("%.2f", v))
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
		fmt.Sprintf("Sample: %d nodes drawn with seed %d, stratified by depth; means and percentiles weigh each node by the nodes of its depth band it stands for, so they estimate a node chosen uniformly. Every layout is given the node's id, as an application holding it from an earlier answer would: no query reads the node only to tell a leaf from a missing node, and a query that needs the node's path learns it with one GetItem of the node's own item, in every layout alike.", rep.Sample.Nodes, rep.Sample.Seed),
		"Stored bytes follow DynamoDB's item size rules; each index holds the items that have its key attributes (all attributes projected); billing adds the per-item overhead of the price list to the table and to each index.",
		"Rewrites: move = the sampled node's subtree goes under another node at its parent's depth (its own depth when there is none, its grandparent as a last resort; roots are not moved); delete = the node goes and its children move up to its parent (a root with children is left out: edit refuses it); write = the node's own attributes change, the same size. Counted by building each affected node's items before and after and comparing keys and contents: puts are new or changed items, deletes are keys that disappear. WCU: each item written or deleted costs ceil(size / 1 KB) for the table, of the larger of its two sizes, and again for each index it is put in or deleted from, twice for an index whose key changes (a delete and a put).",
		fmt.Sprintf("Workload: %s reads of the mix, %s writes, %s moves and %s deletes a month, for %s months. The ranking is its total cost: the load (the cheaper of on-demand writes and ImportTable), storage for the months, and the reads and writes on demand. Totals within 0.5%% are a tie.", num(rep.Workload.ReadsPerMonth), num(rep.Workload.WritesPerMonth), num(rep.Workload.MovesPerMonth), num(rep.Workload.DeletesPerMonth), num(rep.Workload.Months)),
		fmt.Sprintf("Costs at %s nodes (×%s of this dataset), %s. ImportTable bills the uncompressed DynamoDB JSON it reads: the bytes of the lines import --out writes.", num(float64(rep.Scale.Nodes)), num(rep.Scale.Factor), rep.Scale.Method),
		fmt.Sprintf("Prices: DynamoDB on-demand, %s, as of %s (treeport's price list; check them against AWS's pricing page for your region).", rep.Prices.Region, rep.Prices.AsOf),
	)
	for _, r := range rep.Layouts {
		if r.Rejected > 0 {
			n = append(n, fmt.Sprintf("%s rejects %d nodes of the input (with their subtrees); its figures leave them out.", r.Layout, r.Rejected))
		}
	}
	return n
}

// loadSeconds is the least time r's load takes on DynamoDB when it is
// loaded by writes; an ImportTable load is not held to a partition's rate,
// so it counts as 0.
func loadSeconds(r *Result) float64 {
	if r.Cost.LoadMethod == "ImportTable" {
		return 0
	}
	return r.Load.MinSeconds
}
