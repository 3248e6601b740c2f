package layoutbench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"

	"github.com/treeport/treeport/internal/pricing"
	"github.com/treeport/treeport/transform"
)

// Workload is what the table will do, and for how long: the ranking is the
// total cost of it, load and storage included, not the price of a read.
type Workload struct {
	// ReadsPerMonth are reads of the read mix a month.
	ReadsPerMonth float64 `json:"reads_per_month"`
	// WritesPerMonth are updates of one node's attributes a month.
	WritesPerMonth float64 `json:"writes_per_month"`
	// MovesPerMonth are subtree moves a month.
	MovesPerMonth float64 `json:"moves_per_month"`
	// DeletesPerMonth are deletes of one node a month (its children move
	// up to its parent).
	DeletesPerMonth float64 `json:"deletes_per_month"`
	// Months is how long the table lives: storage is paid for each month.
	Months float64 `json:"months"`
}

// DefaultWorkload is the workload when none is given: ten million reads a
// month for a year, nothing written after the load.
var DefaultWorkload = Workload{ReadsPerMonth: 10e6, Months: 12}

// Check says what is wrong with w.
func (w Workload) Check() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"reads-per-month", w.ReadsPerMonth}, {"writes-per-month", w.WritesPerMonth}, {"moves-per-month", w.MovesPerMonth},
		{"deletes-per-month", w.DeletesPerMonth}, {"months", w.Months}} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v > 1e18 {
			return fmt.Errorf("%s %v: want a number of 0 or more", f.name, f.v)
		}
	}
	if w.Months <= 0 {
		return fmt.Errorf("months %v: the table must live at least a part of a month", w.Months)
	}
	return nil
}

// WorkloadFile is the JSON of --workload FILE: the Workload's fields, and
// the read mix as --read-mix writes it.
type WorkloadFile struct {
	Workload
	ReadMix string `json:"read_mix"`
}

// ReadWorkload reads a --workload file. Fields left out keep their value
// in base.
func ReadWorkload(path string, base Workload) (WorkloadFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return WorkloadFile{}, err
	}
	wf := WorkloadFile{Workload: base}
	if err := json.Unmarshal(data, &wf); err != nil {
		return WorkloadFile{}, fmt.Errorf("%s: %v (want {\"reads_per_month\":N, \"writes_per_month\":N, \"moves_per_month\":N, \"deletes_per_month\":N, \"months\":N, \"read_mix\":\"get=10,...\"})", path, err)
	}
	if err := wf.Check(); err != nil {
		return WorkloadFile{}, fmt.Errorf("%s: %v", path, err)
	}
	return wf, nil
}

// shape is a sampled node's subtree: the nodes at each relative depth
// below it (byRel[0] = 1, the node), and its depth.
type shape struct {
	byRel []int64
	depth int
}

func shapeOf(f *transform.Forest, i int32) shape {
	s := shape{depth: f.Depth(int(i))}
	level := []int32{i}
	for len(level) > 0 {
		s.byRel = append(s.byRel, int64(len(level)))
		var next []int32
		for _, y := range level {
			next = append(next, f.Children(int(y))...)
		}
		level = next
	}
	return s
}

// growth is how --scale grows the forest: the trees stay as many and as
// deep, and every node's fan-out is multiplied by w, which makes the nodes
// at depth d w^d times as many; w is the one that gives the scale's node
// count. A deeper or wider tree then reads more per children or
// descendants query, and moves rewrite more, as they would.
type growth struct{ w float64 }

// growthTo finds w for a forest with levels[d] nodes at depth d grown to
// nodes.
func growthTo(levels []int64, nodes float64) growth {
	var n0 float64
	for _, c := range levels {
		n0 += float64(c)
	}
	if n0 == 0 || nodes <= 0 || len(levels) < 2 {
		return growth{w: 1}
	}
	total := func(w float64) float64 {
		t, p := 0.0, 1.0
		for _, c := range levels {
			t += float64(c) * p
			p *= w
		}
		return t
	}
	lo, hi := 0.0, 1.0
	for total(hi) < nodes && hi < 1e12 {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if total(mid) < nodes {
			lo = mid
		} else {
			hi = mid
		}
	}
	return growth{w: (lo + hi) / 2}
}

// sum is Σ byRel[r] w^r for r in [from, to] (to < 0: to the end).
func (g growth) sum(s shape, from, to int) float64 {
	t, p := 0.0, 1.0
	for r, c := range s.byRel {
		if r >= from && (to < 0 || r <= to) {
			t += float64(c) * p
		}
		p *= g.w
	}
	return t
}

// answer is the size of the answer of a query of this kind about s, at
// growth g (w = 1: as the dataset has it): what a query's cost grows with.
func (g growth) answer(kind string, s shape) float64 {
	switch kind {
	case KindChildren:
		return g.sum(s, 1, 1)
	case KindDescendants:
		return g.sum(s, 1, -1)
	case KindDepth2:
		return g.sum(s, 1, 2)
	case KindAncestors:
		return float64(s.depth)
	}
	return 1
}

// slope fits v = a + b·x over the sample, weighted, and returns b, never
// below 0: what one more node in the answer (or the subtree) adds.
func slope(xs, vs, ws []float64) float64 {
	var sw, sx, sv float64
	for k := range xs {
		sw += ws[k]
		sx += ws[k] * xs[k]
		sv += ws[k] * vs[k]
	}
	if sw == 0 {
		return 0
	}
	mx, mv := sx/sw, sv/sw
	var sxx, sxv float64
	for k := range xs {
		dx := xs[k] - mx
		sxx += ws[k] * dx * dx
		sxv += ws[k] * dx * (vs[k] - mv)
	}
	if sxx <= 1e-12 {
		return 0
	}
	return max(0, sxv/sxx)
}

// perNode is what a layout cost for each sampled node, kept to project it
// to other scales: each query kind's RCU and requests, and the WCU of a
// move, a delete and a write of the node (NaN where it does not apply).
type perNode struct {
	rcu, req          map[string][]float64
	move, del, update []float64
	// fit is the model's rcu without the rounding of each Query page up to
	// 4 KB (layouts.Cost.Smooth): what the slope is fitted to, since on a
	// small dataset that rounding, not the answer, sets most Queries'
	// price and would hide what each answer node adds.
	fit map[string][]float64
}

// scaledMean is the weighted mean of vals, each grown from its answer x0
// to the answer x1 at the scale along the slope of fit (vals when nil)
// against x0; NaN values are left out.
func scaledMean(vals, fit, x0, x1, ws []float64) float64 {
	if fit == nil {
		fit = vals
	}
	var xs, vs, wv []float64
	for k, v := range vals {
		if !math.IsNaN(v) {
			xs, vs, wv = append(xs, x0[k]), append(vs, fit[k]), append(wv, ws[k])
		}
	}
	b := slope(xs, vs, wv)
	var sum, sw float64
	for k, v := range vals {
		if math.IsNaN(v) {
			continue
		}
		sum += ws[k] * (v + b*(x1[k]-x0[k]))
		sw += ws[k]
	}
	if sw == 0 {
		return 0
	}
	return sum / sw
}

// projection prices a layout's figures at a node count for a workload.
type projection struct {
	rep    *Report
	sample []sampled
	shapes []shape
	levels []int64 // accepted nodes at each depth
	prices pricing.Prices
	work   Workload
}

// cost projects res to nodes.
func (pj *projection) cost(res *Result, nodes int64) Cost {
	p := pj.prices
	factor := 1.0
	if pj.rep.Input.Nodes > 0 {
		factor = float64(nodes) / float64(pj.rep.Input.Nodes)
	}
	g := growthTo(pj.levels, float64(nodes))
	scaledInt := func(v int64) int64 { return int64(math.Round(float64(v) * factor)) }
	c := Cost{ImportSourceBytes: scaledInt(res.importBytes)}
	c.LoadOnDemandUSD = money(p.OnDemandWrites(scaledInt(res.Load.WCU)))
	c.LoadImportUSD = money(p.Import(c.ImportSourceBytes))
	storage := 0.0
	for _, s := range res.Storage {
		storage += p.StorageMonth(scaledInt(s.Bytes), scaledInt(s.Items))
	}
	c.StorageMonthUSD = money(storage)

	ws := make([]float64, len(pj.sample))
	for k, x := range pj.sample {
		ws[k] = x.weight
	}
	one := growth{w: 1}
	x0 := make([]float64, len(pj.sample))
	x1 := make([]float64, len(pj.sample))
	for _, m := range pj.rep.ReadMix {
		for k, s := range pj.shapes {
			x0[k], x1[k] = one.answer(m.Kind, s), g.answer(m.Kind, s)
		}
		c.ReadRCUPerOp += m.Share * scaledMean(res.perNode.rcu[m.Kind], res.perNode.fit[m.Kind], x0, x1, ws)
		c.RequestsPerOp += m.Share * scaledMean(res.perNode.req[m.Kind], nil, x0, x1, ws)
	}
	c.ReadRCUPerOp = round(c.ReadRCUPerOp)
	c.RequestsPerOp = round(c.RequestsPerOp)
	c.MillionReadsUSD = money(p.OnDemandReads(1e6 * c.ReadRCUPerOp))

	// Moves and deletes rewrite the subtree: they grow with it.
	for k, s := range pj.shapes {
		x0[k], x1[k] = one.sum(s, 0, -1), g.sum(s, 0, -1)
	}
	c.MoveWCU = round(scaledMean(res.perNode.move, nil, x0, x1, ws))
	c.DeleteWCU = round(scaledMean(res.perNode.del, nil, x0, x1, ws))
	c.WriteWCU = round(scaledMean(res.perNode.update, nil, x0, x0, ws))

	w := pj.work
	c.LoadUSD, c.LoadMethod = c.LoadOnDemandUSD, "on-demand writes"
	if c.LoadImportUSD < c.LoadUSD {
		c.LoadUSD, c.LoadMethod = c.LoadImportUSD, "ImportTable"
	}
	c.StorageUSD = money(storage * w.Months)
	c.ReadsUSD = money(p.OnDemandReads(w.ReadsPerMonth * w.Months * c.ReadRCUPerOp))
	c.WritesUSD = money(p.OnDemandWritesF(w.WritesPerMonth * w.Months * c.WriteWCU))
	c.MovesUSD = money(p.OnDemandWritesF(w.MovesPerMonth * w.Months * c.MoveWCU))
	c.DeletesUSD = money(p.OnDemandWritesF(w.DeletesPerMonth * w.Months * c.DeleteWCU))
	c.TotalUSD = money(c.LoadUSD + c.StorageUSD + c.ReadsUSD + c.WritesUSD + c.MovesUSD + c.DeletesUSD)
	return c
}

// ScaleNodes are the node counts of the cost-versus-scale curve.
var ScaleNodes = []int64{1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// curves are the total cost of the workload at each of ScaleNodes, and at
// the report's scale for read volumes from a hundredth to a hundred times
// the workload's (at least a million a month).
func (pj *projection) curves(rep *Report) Curves {
	var out Curves
	for _, n := range ScaleNodes {
		pt := CurvePoint{X: float64(n), TotalUSD: map[string]float64{}}
		for _, r := range rep.Layouts {
			pt.TotalUSD[r.Layout] = pj.cost(r, n).TotalUSD
		}
		out.ByScale = append(out.ByScale, pt)
	}
	base := max(pj.work.ReadsPerMonth, 1e6)
	for _, f := range []float64{0.01, 0.1, 1, 10, 100} {
		reads := base * f
		pt := CurvePoint{X: reads, TotalUSD: map[string]float64{}}
		for _, r := range rep.Layouts {
			c := r.Cost
			pt.TotalUSD[r.Layout] = money(c.TotalUSD - c.ReadsUSD + pj.prices.OnDemandReads(reads*pj.work.Months*c.ReadRCUPerOp))
		}
		out.ByReads = append(out.ByReads, pt)
	}
	return out
}

// breakEvens are the read volumes at which the first layout of the ranking
// and each of the next two cost the same for the workload: the one with
// the dearer reads and the cheaper rest wins below, the other above.
func breakEvens(rep *Report, p pricing.Prices) []BreakEven {
	if len(rep.Ranking) < 2 {
		return []BreakEven{}
	}
	by := map[string]*Result{}
	for _, r := range rep.Layouts {
		by[r.Layout] = r
	}
	w := rep.Workload
	best := by[rep.Ranking[0].Layout]
	out := []BreakEven{}
	for _, e := range rep.Ranking[1:min(3, len(rep.Ranking))] {
		o := by[e.Layout]
		fixedB := best.Cost.TotalUSD - best.Cost.ReadsUSD
		fixedO := o.Cost.TotalUSD - o.Cost.ReadsUSD
		perB := p.OnDemandReads(best.Cost.ReadRCUPerOp) * w.Months // a read a month, for the months
		perO := p.OnDemandReads(o.Cost.ReadRCUPerOp) * w.Months
		if perB == perO || (fixedO-fixedB)*(perB-perO) <= 0 {
			continue // one of the two is cheaper at every volume
		}
		reads := (fixedO - fixedB) / (perB - perO)
		cheap, dear := o.Layout, best.Layout // o's reads are cheaper: it wins above
		if perO > perB {
			cheap, dear = best.Layout, o.Layout
		}
		out = append(out, BreakEven{CheaperReads: cheap, CheaperRest: dear, ReadsPerMonth: math.Round(reads)})
	}
	return out
}
