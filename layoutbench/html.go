package layoutbench

import (
	"fmt"
	"html"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"
)

// caveat is what the reader must know before any figure: where they come
// from.
func caveat(r *Report) string {
	if r.Mode == "online" {
		return "Measured against " + r.Endpoint + ". Costs are DynamoDB's documented prices of the requests sent (DynamoDB Local under-reports a Query that finds nothing as 0 RCU; DynamoDB bills 0.5), not what this server reported. Its timings are DynamoDB Local's, not DynamoDB's: they are shown apart, at the end, and rank nothing."
	}
	return "Computed from the file alone, by DynamoDB's documented rules (read, write and storage billing), without a server: no timing is measured."
}

// palette gives each layout its colour, in report order.
var palette = []string{"#2f6fb3", "#d9822b", "#3a9a5b", "#a54ca8", "#c0392b", "#6d6d6d"}

// dashes give each layout's line its own pattern, in report order, so that
// lines drawn over each other (layouts that cost the same) still show.
var dashes = []string{"", "10 5", "3 4", "14 4 3 4", "6 3 1 3", "1 3"}

// marker draws layout i's point marker at (x, y): a circle, a square, a
// triangle, a diamond, a cross or a plus, hollow, so that one drawn over
// another still shows both.
func marker(b *strings.Builder, i int, x, y float64) {
	c := palette[i%len(palette)]
	const s = 4.5
	switch i % 6 {
	case 0:
		fmt.Fprintf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" class=\"mk\" stroke=\"%s\"/>", x, y, s, c)
	case 1:
		fmt.Fprintf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" class=\"mk\" stroke=\"%s\"/>", x-s, y-s, 2*s, 2*s, c)
	case 2:
		fmt.Fprintf(b, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\" class=\"mk\" stroke=\"%s\"/>", x, y-s-1, x+s+1, y+s, x-s-1, y+s, c)
	case 3:
		fmt.Fprintf(b, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\" class=\"mk\" stroke=\"%s\"/>", x, y-s-1.5, x+s+1.5, y, x, y+s+1.5, x-s-1.5, y, c)
	case 4:
		fmt.Fprintf(b, "<polyline points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\" class=\"mk\" stroke=\"%s\"/>", x-s, y-s, x+s, y+s, x, y, x-s, y+s, x+s, y-s, c)
	default:
		fmt.Fprintf(b, "<polyline points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\" class=\"mk\" stroke=\"%s\"/>", x-s-1, y, x+s+1, y, x, y, x, y-s-1, x, y+s+1, c)
	}
}

// dashAttr is layout i's stroke-dasharray attribute, or none for a solid
// line.
func dashAttr(i int) string {
	if d := dashes[i%len(dashes)]; d != "" {
		return fmt.Sprintf(" stroke-dasharray=\"%s\"", d)
	}
	return ""
}

// metric is one bar chart: a figure per layout.
type metric struct {
	title, unit string
	value       func(*Result) float64
	format      func(float64) string
	lowerBetter bool
}

// metrics are the bar charts of the HTML page, one per figure, each value
// printed with its unit. Latency and load time, which only DynamoDB Local's
// say anything about here, are latencyMetrics, apart.
func metrics(r *Report) []metric {
	with := func(unit string) func(float64) string { return func(v float64) string { return num(v) + " " + unit } }
	bytesF := func(v float64) string { return humanBytes(int64(v)) }
	// Every title says which size its figure is of: the workload's, at
	// --scale, or this file's, as measured.
	at, here := atScale(r), thisFile(r)
	ms := []metric{
		{"Total cost of the workload, " + at, "USD", func(x *Result) float64 { return x.Cost.TotalUSD }, usd, true},
		{"Reads of the workload, " + at, "USD", func(x *Result) float64 { return x.Cost.ReadsUSD }, usd, true},
		{"Writes, moves and deletes of the workload, " + at, "USD", func(x *Result) float64 { return x.Cost.WritesUSD + x.Cost.MovesUSD + x.Cost.DeletesUSD }, usd, true},
		{fmt.Sprintf("Storage for %s months, %s", num(r.Workload.Months), at), "USD", func(x *Result) float64 { return x.Cost.StorageUSD }, usd, true},
		{"Load, the cheaper way, " + at, "USD", func(x *Result) float64 { return x.Cost.LoadUSD }, usd, true},
		{"Cost of a million reads of the mix, " + at, "USD", func(x *Result) float64 { return x.Cost.MillionReadsUSD }, usd, true},
		{"RCU per read of the mix, " + at, "RCU", func(x *Result) float64 { return x.Cost.ReadRCUPerOp }, with("RCU"), true},
		{"Requests per read of the mix, " + at, "requests", func(x *Result) float64 { return x.Cost.RequestsPerOp }, with("requests"), true},
	}
	for _, k := range Kinds {
		ms = append(ms, metric{fmt.Sprintf("RCU of %s query (mean), %s", aKind(k), here), "RCU", func(x *Result) float64 { return x.query(k).RCU.Mean }, with("RCU"), true})
	}
	ms = append(ms,
		metric{"Items, " + here, "items", func(x *Result) float64 { return float64(x.Items) }, with("items"), true},
		metric{"Stored bytes, table and indexes (billed), " + here, "bytes", func(x *Result) float64 { return float64(x.StoredBytes) }, bytesF, true},
		metric{"WCU to load, " + here, "WCU", func(x *Result) float64 { return float64(x.Load.WCU) }, with("WCU"), true},
		metric{"Hottest partition's share of its table or index, " + here, "%", func(x *Result) float64 { return 100 * hottest(x) }, func(v float64) string { return num(v) + "%" }, true},
		metric{"WCU to move a subtree (mean), " + at, "WCU", func(x *Result) float64 { return x.Cost.MoveWCU }, with("WCU"), true},
		metric{"WCU to delete a node (mean), " + at, "WCU", func(x *Result) float64 { return x.Cost.DeleteWCU }, with("WCU"), true},
		metric{"WCU to write a node's attributes (mean, the same at any size)", "WCU", func(x *Result) float64 { return x.Cost.WriteWCU }, with("WCU"), true},
		metric{"Largest item, " + here, "bytes", func(x *Result) float64 { return float64(x.MaxItemBytes) }, bytesF, true},
	)
	return ms
}

// atScale labels a figure projected to --scale: "at 50,000,000 nodes".
func atScale(r *Report) string { return "at " + num(float64(r.Scale.Nodes)) + " nodes" }

// thisFile labels a figure measured on the input as it is: "this file (48
// nodes)".
func thisFile(r *Report) string { return "this file (" + num(float64(r.Input.Nodes)) + " nodes)" }

// latencyMetrics are the charts of what an online run timed on its server:
// no star, since against DynamoDB Local they measure the JVM more than the
// layout.
func latencyMetrics(r *Report) []metric {
	if r.Mode != "online" {
		return nil
	}
	var ms []metric
	for _, k := range Kinds {
		ms = append(ms, metric{fmt.Sprintf("Latency of %s query (p95)", aKind(k)), "ms", func(x *Result) float64 {
			if l := x.query(k).LatencyMS; l != nil {
				return l.P95
			}
			return 0
		}, func(v float64) string { return num(v) + " ms" }, true})
	}
	return append(ms, metric{"Load time", "s", func(x *Result) float64 { return deref(x.Load.Seconds) }, func(v float64) string { return num(v) + " s" }, true})
}

// hottest is the largest share of a table's or index's items under one
// partition key value, over those with more than one item.
func hottest(x *Result) float64 {
	best := 0.0
	for _, p := range x.Partitions {
		if len(p.ByItems) > 0 && (p.Partitions > 1 || p.ByItems[0].Items > 1) {
			best = max(best, p.ByItems[0].Share)
		}
	}
	return best
}

// chart draws one horizontal bar chart as inline SVG, as wide as its card.
// The best value gets a ★ only when it beats every other by more than a
// tie (tieShare), and stars is false for figures that rank nothing. The
// bars are linear, from zero: a bar 30 times another is drawn 30 times as
// long (a log scale made 30× look like 2×); a bar too short to see keeps
// a 2-pixel stub, and every bar has its value printed beside it.
func chart(b *strings.Builder, r *Report, m metric, stars bool) {
	const (
		labelW = 110
		barW   = 330
		rowH   = 26
		valueW = 150
	)
	top := 0.0
	for _, x := range r.Layouts {
		top = max(top, m.value(x))
	}
	scale := func(v float64) float64 {
		if top <= 0 || v <= 0 {
			return 0
		}
		return v / top * barW
	}
	// The star: the best, unless another is within a tie of it.
	best, bestAt := math.Inf(1), -1
	for i, x := range r.Layouts {
		if v := m.value(x); v < best {
			best, bestAt = v, i
		}
	}
	for i, x := range r.Layouts {
		if i != bestAt && tied(m.value(x), best) {
			bestAt = -1
		}
	}
	h := rowH*len(r.Layouts) + 8
	w := labelW + barW + valueW
	fmt.Fprintf(b, "<figure class=\"chart\"><figcaption>%s</figcaption>\n", html.EscapeString(m.title))
	fmt.Fprintf(b, "<svg viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\">\n<title>%s (%s; %s)</title>\n",
		w, h, html.EscapeString(m.title), html.EscapeString(m.title), html.EscapeString(m.unit), "shorter is better")
	for i, x := range r.Layouts {
		v := m.value(x)
		y := 4 + i*rowH
		bw := scale(v)
		if v > 0 && bw < 2 {
			bw = 2
		}
		fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\" class=\"lbl\">%s</text>", labelW-8, y+17, html.EscapeString(x.Layout))
		fmt.Fprintf(b, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" rx=\"3\" fill=\"%s\"/>", labelW, y+3, bw, rowH-8, palette[i%len(palette)])
		mark := ""
		if stars && i == bestAt && len(r.Layouts) > 1 {
			mark = " ★"
		}
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%d\" class=\"val\">%s%s</text>\n", float64(labelW)+bw+6, y+17, html.EscapeString(m.format(v)), mark)
	}
	b.WriteString("</svg></figure>\n")
}

// usdShort prints a round dollar figure for an axis: $10, $1k, $10M, $1B.
func usdShort(v float64) string {
	switch {
	case v >= 1e9:
		return "$" + num(v/1e9) + "B"
	case v >= 1e6:
		return "$" + num(v/1e6) + "M"
	case v >= 1e3:
		return "$" + num(v/1e3) + "k"
	}
	return "$" + num(v)
}

// lineChart draws the workload's total cost of each layout against x (node
// counts or reads a month), both axes on a log scale, as inline SVG.
func lineChart(b *strings.Builder, r *Report, id, title, xUnit string, pts []CurvePoint) {
	if len(pts) < 2 {
		return
	}
	const (
		w, h             = 600, 300
		left, right      = 70, 110
		topPad, bottomPd = 12, 42
	)
	lo, hi := math.Inf(1), 0.0
	for _, p := range pts {
		for _, v := range p.TotalUSD {
			if v > 0 {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if hi <= 0 {
		return
	}
	ylo, yhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if yhi <= ylo {
		yhi = ylo + 1
	}
	xlo, xhi := math.Log10(pts[0].X), math.Log10(pts[len(pts)-1].X)
	px := func(x float64) float64 { return left + (math.Log10(x)-xlo)/(xhi-xlo)*(w-left-right) }
	py := func(v float64) float64 {
		v = max(v, math.Pow(10, ylo))
		return topPad + (yhi-math.Log10(v))/(yhi-ylo)*(h-topPad-bottomPd)
	}
	fmt.Fprintf(b, "<figure class=\"chart line\" id=\"%s\"><figcaption>%s</figcaption>\n", id, html.EscapeString(title))
	fmt.Fprintf(b, "<svg viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\"><title>%s (USD against %s, log scales)</title>\n", w, h, html.EscapeString(title), html.EscapeString(title), html.EscapeString(xUnit))
	for e := ylo; e <= yhi; e++ {
		y := py(math.Pow(10, e))
		fmt.Fprintf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/><text x=\"%d\" y=\"%.1f\" class=\"ax\">%s</text>\n",
			left, w-right, y, y, left-6, y+4, html.EscapeString(usdShort(math.Pow(10, e))))
	}
	for _, p := range pts {
		x := px(p.X)
		fmt.Fprintf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" class=\"grid\"/><text x=\"%.1f\" y=\"%d\" class=\"axx\">%s</text>\n",
			x, x, topPad, h-bottomPd, x, h-bottomPd+16, html.EscapeString(count(p.X)))
	}
	fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\" class=\"axx\">%s</text>\n", (left+w-right)/2, h-6, html.EscapeString(xUnit))
	// The layouts' names at the lines' ends, pushed apart where they would
	// overlap.
	keyY := make([]float64, len(r.Layouts))
	order := make([]int, len(r.Layouts))
	for i, x := range r.Layouts {
		keyY[i] = py(pts[len(pts)-1].TotalUSD[x.Layout]) + 4
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return keyY[order[a]] < keyY[order[b]] })
	for k := 1; k < len(order); k++ {
		if prev := keyY[order[k-1]]; keyY[order[k]] < prev+13 {
			keyY[order[k]] = prev + 13
		}
	}
	for i, x := range r.Layouts {
		var path strings.Builder
		for k, p := range pts {
			op := "L"
			if k == 0 {
				op = "M"
			}
			fmt.Fprintf(&path, "%s%.1f %.1f ", op, px(p.X), py(p.TotalUSD[x.Layout]))
		}
		fmt.Fprintf(b, "<path d=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2.5\"%s/>", strings.TrimSpace(path.String()), palette[i%len(palette)], dashAttr(i))
		for _, p := range pts {
			marker(b, i, px(p.X), py(p.TotalUSD[x.Layout]))
		}
		fmt.Fprintf(b, "<text x=\"%d\" y=\"%.1f\" class=\"key\" fill=\"%s\">%s</text>\n", w-right+6, keyY[i], palette[i%len(palette)], html.EscapeString(x.Layout))
	}
	b.WriteString("</svg>")
	legend(b, r)
	b.WriteString("</figure>\n")
}

// legend names each layout's colour, dash and marker, under a line chart.
func legend(b *strings.Builder, r *Report) {
	b.WriteString("<div class=\"legend\">")
	for i, x := range r.Layouts {
		fmt.Fprintf(b, "<span><svg viewBox=\"0 0 44 14\" width=\"44\" height=\"14\"><line x1=\"2\" x2=\"42\" y1=\"7\" y2=\"7\" stroke=\"%s\" stroke-width=\"2.5\"%s/>", palette[i%len(palette)], dashAttr(i))
		marker(b, i, 22, 7)
		fmt.Fprintf(b, "</svg>%s</span>", html.EscapeString(x.Layout))
	}
	b.WriteString("</div>")
}

// relativeChart draws each layout's total cost divided by the pick's,
// against the reads a month, on a linear scale: the pick is the flat line
// at 1×, the margin the text quotes is the gap at this workload's reads
// (the vertical line), and a break-even is where a line crosses 1×. Lines
// drawn on top of each other in the cost curves come apart here. A total
// is linear in the reads a month, so it is read off the first and last
// points of the by-reads curve and drawn smooth.
func relativeChart(b *strings.Builder, r *Report, pts []CurvePoint) {
	if len(pts) < 2 || len(r.Ranking) < 2 {
		return
	}
	pick := r.Ranking[0].Layout
	first, last := pts[0], pts[len(pts)-1]
	total := func(layout string, x float64) float64 {
		a, b := first.TotalUSD[layout], last.TotalUSD[layout]
		return a + (b-a)*(x-first.X)/(last.X-first.X)
	}
	const (
		w, h             = 600, 300
		left, right      = 70, 110
		topPad, bottomPd = 12, 42
		steps            = 60
	)
	// From the curve's first read volume, or a decade below the lowest
	// break-even the recommendation quotes when that is lower (a total
	// is linear in the reads: the line goes on exactly), to its last.
	lowX, highX := first.X, last.X
	for _, be := range r.BreakEvens {
		if be.ReadsPerMonth > 0 && be.ReadsPerMonth < lowX*2 {
			lowX = math.Pow(10, math.Floor(math.Log10(be.ReadsPerMonth))-1)
		}
	}
	xs := make([]float64, steps+1)
	for k := range xs {
		xs[k] = math.Pow(10, math.Log10(lowX)+(math.Log10(highX)-math.Log10(lowX))*float64(k)/steps)
	}
	ratio := func(layout string, x float64) float64 {
		if p := total(pick, x); p > 0 {
			return total(layout, x) / p
		}
		return math.Inf(1)
	}
	// The y range: from just below the lowest ratio to 2×, or less when
	// every line stays lower; a layout above it all along is named under
	// the chart with its ratio at this workload.
	const clip = 2.0
	ylo, yhi := 1.0, 1.0
	var above []string
	for _, x := range r.Layouts {
		in := false
		for _, v := range xs {
			q := ratio(x.Layout, v)
			ylo = min(ylo, q)
			if q <= clip {
				in = true
				yhi = max(yhi, q)
			}
		}
		if !in {
			above = append(above, fmt.Sprintf("%s (%s× at this workload)", x.Layout, num(ratio(x.Layout, r.Workload.ReadsPerMonth))))
		}
	}
	ylo = math.Floor(ylo*10-0.5) / 10
	yhi = min(clip, math.Ceil(yhi*10+0.5)/10)
	xlo, xhi := math.Log10(lowX), math.Log10(highX)
	px := func(x float64) float64 { return left + (math.Log10(x)-xlo)/(xhi-xlo)*(w-left-right) }
	py := func(v float64) float64 { return topPad + (yhi-v)/(yhi-ylo)*(h-topPad-bottomPd) }
	title := fmt.Sprintf("Each layout's total cost divided by %s's, %s, against the reads a month", pick, atScale(r))
	fmt.Fprintf(b, "<figure class=\"chart line\" id=\"relative\"><figcaption>%s</figcaption>\n", html.EscapeString(title))
	fmt.Fprintf(b, "<svg viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\"><title>%s (linear ratio against reads a month, log scale)</title>\n", w, h, html.EscapeString(title), html.EscapeString(title))
	step := 0.1
	if yhi-ylo > 1 {
		step = 0.25
	}
	for v := math.Ceil(ylo/step) * step; v <= yhi+1e-9; v += step {
		y := py(v)
		fmt.Fprintf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/><text x=\"%d\" y=\"%.1f\" class=\"ax\">%s×</text>\n", left, w-right, y, y, left-6, y+4, num(v))
	}
	for e := math.Ceil(xlo); e <= xhi+1e-9; e++ {
		x := px(math.Pow(10, e))
		fmt.Fprintf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" class=\"grid\"/><text x=\"%.1f\" y=\"%d\" class=\"axx\">%s</text>\n",
			x, x, topPad, h-bottomPd, x, h-bottomPd+16, html.EscapeString(count(math.Pow(10, e))))
	}
	fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\" class=\"axx\">reads a month (log scale)</text>\n", (left+w-right)/2, h-6)
	// This workload's reads, where the margin is quoted.
	if wx := r.Workload.ReadsPerMonth; wx >= lowX && wx <= highX {
		x := px(wx)
		fmt.Fprintf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" class=\"now\"/><text x=\"%.1f\" y=\"%d\" class=\"nowt\">this workload</text>\n", x, x, topPad, h-bottomPd, x+4, topPad+11)
	}
	keyY := make([]float64, len(r.Layouts))
	order := make([]int, 0, len(r.Layouts))
	for i, x := range r.Layouts {
		keyY[i] = py(min(ratio(x.Layout, highX), yhi)) + 4
		order = append(order, i)
	}
	sort.Slice(order, func(a, b int) bool { return keyY[order[a]] < keyY[order[b]] })
	for k := 1; k < len(order); k++ {
		if prev := keyY[order[k-1]]; keyY[order[k]] < prev+13 {
			keyY[order[k]] = prev + 13
		}
	}
	for i, x := range r.Layouts {
		// The line leaves the chart where it goes out of the y range, and
		// comes back where it returns.
		var path strings.Builder
		op := "M"
		for _, v := range xs {
			q := ratio(x.Layout, v)
			if q < ylo || q > yhi {
				op = "M"
				continue
			}
			fmt.Fprintf(&path, "%s%.1f %.1f ", op, px(v), py(q))
			op = "L"
		}
		if path.Len() == 0 {
			continue
		}
		fmt.Fprintf(b, "<path d=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2.5\"%s/>", strings.TrimSpace(path.String()), palette[i%len(palette)], dashAttr(i))
		if q := ratio(x.Layout, highX); q <= yhi {
			fmt.Fprintf(b, "<text x=\"%d\" y=\"%.1f\" class=\"key\" fill=\"%s\">%s</text>\n", w-right+6, keyY[i], palette[i%len(palette)], html.EscapeString(x.Layout))
		}
	}
	// The break-evens the recommendation quotes, where a line crosses 1×,
	// labelled below it, one under the other.
	for k, be := range r.BreakEvens {
		if be.ReadsPerMonth < lowX || be.ReadsPerMonth > highX {
			continue
		}
		x, y := px(be.ReadsPerMonth), py(ratio(be.CheaperReads, be.ReadsPerMonth))
		fmt.Fprintf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" class=\"be\"/><text x=\"%.1f\" y=\"%.1f\" class=\"bet\">%s</text>\n",
			x, y, x+6, y+16+13*float64(k), html.EscapeString(fmt.Sprintf("break-even with %s: %s reads", otherThan(be, pick), count(be.ReadsPerMonth))))
	}
	b.WriteString("</svg>")
	legend(b, r)
	if len(above) > 0 {
		fmt.Fprintf(b, "<p class=\"off\">Above %s× all along, off the chart: %s.</p>", num(yhi), html.EscapeString(strings.Join(above, ", ")))
	}
	b.WriteString("</figure>\n")
}

// otherThan is the layout of a break-even that is not pick.
func otherThan(be BreakEven, pick string) string {
	if be.CheaperReads == pick {
		return be.CheaperRest
	}
	return be.CheaperReads
}

// WriteHTML writes the report as one self-contained HTML page: no script
// and nothing fetched, the charts inline SVG, the recommendation first.
func WriteHTML(w io.Writer, r *Report) error {
	var b strings.Builder
	htmlHead(&b, r)
	htmlRecommendation(&b, r)
	htmlCharts(&b, r)
	htmlCostTables(&b, r)
	htmlReadTables(&b, r)
	htmlStorageTables(&b, r)
	htmlNotes(&b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

// htmlHead writes the page up to the recommendation: the head, its
// style sheet, the title, the caveat and the summary.
func htmlHead(b *strings.Builder, r *Report) {
	e := html.EscapeString
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	p("<title>treeport bench: %s</title>\n", e(filepath.Base(r.Input.Path)))
	b.WriteString(`<style>
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0;background:#f6f7f9;color:#1d232b}
main{max-width:1180px;margin:0 auto;padding:24px}
h1{font-size:26px;margin:0 0 4px}h2{font-size:20px;margin:32px 0 10px;border-bottom:1px solid #d5dae1;padding-bottom:4px}
.sub{color:#59626e;margin:0 0 18px}
.rec{background:#fff;border:2px solid #2f6fb3;border-radius:10px;padding:16px 22px;margin:12px 0 8px;box-shadow:0 1px 3px rgba(0,0,0,.08)}
.rec h2{border:0;margin:0 0 6px;font-size:22px}.rec .pick{font-size:30px;font-weight:700;color:#2f6fb3}
.rec ol{margin:8px 0 0;padding-left:22px}.rec li{margin:4px 0}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(460px,1fr));gap:14px}
figure.chart{background:#fff;border:1px solid #dde2e8;border-radius:8px;margin:0;padding:10px 12px;min-width:0;overflow:hidden}
figure.chart svg{display:block;width:100%;height:auto}
svg .grid{stroke:#e3e7ec;stroke-width:1}svg .ax{font-size:11px;text-anchor:end;fill:#59626e}svg .axx{font-size:11px;text-anchor:middle;fill:#59626e}svg .key{font-size:12px;font-weight:600}
.caveat{background:#fff7e6;border:1px solid #e0b050;border-radius:8px;padding:10px 16px;margin:8px 0 12px}
.margin{font-size:16px;color:#3b434d;margin-left:8px}
figcaption{font-weight:600;margin-bottom:4px}
svg .lbl{font-size:13px;text-anchor:end;fill:#1d232b}svg .val{font-size:12px;fill:#3b434d}
table{border-collapse:collapse;background:#fff;font-size:13px;margin:6px 0}
th,td{border:1px solid #dde2e8;padding:4px 8px;text-align:right;vertical-align:top}th{background:#eef1f5}
td:first-child,th:first-child,td.l{text-align:left}
code{font-size:12px;background:#eef1f5;padding:0 3px;border-radius:3px}
.notes li{margin:4px 0;color:#3b434d}
svg .mk{fill:#fff;stroke-width:1.6}svg .now{stroke:#1d232b;stroke-width:1;stroke-dasharray:4 3}svg .nowt{font-size:11px;fill:#1d232b}
svg .be{fill:#1d232b}svg .bet{font-size:11px;fill:#1d232b}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:13px;margin-top:4px}.legend span{display:inline-flex;align-items:center;gap:4px}
.off{font-size:13px;color:#59626e;margin:4px 0 0}
</style></head><body><main>
`)
	p("<h1>treeport bench: %s</h1>\n", e(filepath.Base(r.Input.Path)))
	p("<p class=\"caveat\" id=\"caveat\">%s</p>\n", e(caveat(r)))
	p("<p class=\"sub\">%s.<br>Workload: %s. Read mix: %s. Costs projected to %s nodes; figures marked \"this file\" are measured on its %s nodes as they are. Prices: %s as of %s.</p>\n",
		e(summary(r)), e(workText(r.Workload)), e(mixText(r)), num(float64(r.Scale.Nodes)), num(float64(r.Input.Nodes)), e(r.Prices.Region), e(r.Prices.AsOf))
}

// htmlRecommendation writes the pick, the ranking and the break-evens.
func htmlRecommendation(b *strings.Builder, r *Report) {
	e := html.EscapeString
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("<section class=\"rec\" id=\"recommendation\"><h2>Recommendation</h2>\n")
	if len(r.Ranking) > 0 {
		p("<div>For this workload: <span class=\"pick\">%s</span><span class=\"margin\" id=\"margin\">%s</span></div>\n<ol>\n", e(r.Ranking[0].Layout), e(marginAfterPick(r)))
		for _, x := range r.Ranking {
			// The list numbers itself; value keeps a tie's shared rank.
			p("<li value=\"%d\"><b>%s</b>: %s</li>\n", x.Rank, e(x.Layout), e(x.Why))
		}
		p("</ol>\n")
		for _, be := range r.BreakEvens {
			p("<p>%s.</p>\n", e(breakEvenText(be)))
		}
	}
	p("</section>\n")
}

// htmlCharts writes the cost curves, one chart per figure and the
// timings, when there are any.
func htmlCharts(b *strings.Builder, r *Report) {
	e := html.EscapeString
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("<h2>Cost against scale and read volume</h2>\n<div class=\"charts\">\n")
	lineChart(b, r, "by-scale", fmt.Sprintf("Total cost of the workload against the node count (%s)", workText(r.Workload)), "nodes", r.Curves.ByScale)
	lineChart(b, r, "by-reads", fmt.Sprintf("Total cost of the workload, %s, against the reads a month", atScale(r)), "reads a month", r.Curves.ByReads)
	relativeChart(b, r, r.Curves.ByReads)
	p("</div>\n")

	p("<h2>Charts</h2>\n<p class=\"sub\">One chart per figure; shorter bars are better; ★ marks the best when no other ties it (within %.1f%%).</p>\n<div class=\"charts\">\n", 100*tieShare)
	for _, m := range metrics(r) {
		chart(b, r, m, true)
	}
	p("</div>\n")
	if lm := latencyMetrics(r); len(lm) > 0 {
		p("<h2>Timings on %s</h2>\n<p class=\"sub\">What this server took, for the record only: no ranking uses them, and none is starred. Against DynamoDB Local they measure the JVM, its warm-up and this machine more than the layout (a GetItem is the same request in every layout); DynamoDB's own latency needs a run against DynamoDB.</p>\n<div class=\"charts\">\n", e(r.Endpoint))
		for _, m := range lm {
			chart(b, r, m, false)
		}
		p("</div>\n")
	}
}

// htmlCostTables writes the at-a-glance table and the workload's cost.
func htmlCostTables(b *strings.Builder, r *Report) {
	e := html.EscapeString
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	at, here := atScale(r), thisFile(r)
	p("<h2>At a glance</h2>\n<p class=\"sub\">The first columns are measured on %s as it is; the dollar columns are projected to %s nodes (--scale).</p>\n", e(here), e(num(float64(r.Scale.Nodes))))
	var rows [][]string
	for _, x := range r.Layouts {
		consumed, secs := "—", "—"
		if x.Load.ConsumedWCU != nil {
			consumed = num(*x.Load.ConsumedWCU)
		}
		if x.Load.Seconds != nil {
			secs = fmt.Sprintf("%.2f s", *x.Load.Seconds)
		}
		rows = append(rows, []string{x.Layout, num(float64(x.Items)), humanBytes(x.StoredBytes), humanBytes(int64(x.MaxItemBytes)), num(float64(x.Load.WCU)), consumed, secs,
			usd(x.Cost.LoadOnDemandUSD), usd(x.Cost.LoadImportUSD), usd(x.Cost.StorageMonthUSD), usd(x.Cost.MillionReadsUSD)})
	}
	htmlTable(b, []string{"layout", "items, " + here, "stored, " + here, "largest item", "WCU to load, " + here, "consumed WCU, " + here, "load time, " + here,
		"load $ on-demand, " + at, "load $ ImportTable, " + at, "storage $/month, " + at, "$ per 1M reads, " + at}, rows)

	p("<h2>The workload's cost, %s</h2>\n", e(at))
	rows = nil
	for _, x := range r.Layouts {
		c := x.Cost
		rows = append(rows, []string{x.Layout, usd(c.LoadUSD) + " (" + c.LoadMethod + ")", usd(c.StorageUSD), usd(c.ReadsUSD), usd(c.WritesUSD), usd(c.MovesUSD), usd(c.DeletesUSD), usd(c.TotalUSD),
			num(c.MoveWCU) + " WCU", num(c.DeleteWCU) + " WCU", num(c.WriteWCU) + " WCU"})
	}
	htmlTable(b, []string{"layout", "load $", "storage $", "reads $", "writes $", "moves $", "deletes $", "total $", "WCU of a move", "WCU of a delete", "WCU of a write"}, rows)
}

// htmlReadTables writes the reads and the hottest partitions.
func htmlReadTables(b *strings.Builder, r *Report) {
	e := html.EscapeString
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	here := thisFile(r)
	p("<h2>Reads, %s</h2>\n", e(here))
	var rows [][]string
	for _, k := range Kinds {
		for _, x := range r.Layouts {
			q := x.query(k)
			lat := "needs a server"
			if q.LatencyMS != nil {
				lat = num(q.LatencyMS.P50) + " / " + num(q.LatencyMS.P95)
			}
			rows = append(rows, []string{k, x.Layout, q.Source, num(q.Nodes), num(q.Requests.Mean) + " (" + num(q.Requests.P95) + ")",
				num(q.ItemsRead.Mean) + " (" + num(q.ItemsRead.P95) + ")", num(q.RCU.Mean) + " (" + num(q.RCU.P95) + ")", lat})
		}
	}
	htmlTable(b, []string{"query", "layout", "source", "answer nodes", "requests mean (p95)", "items read mean (p95)", "RCU mean (p95)", "latency ms p50 / p95"}, rows)

	p("<h2>Hottest partitions, %s</h2>\n", e(here))
	rows = nil
	for _, x := range r.Layouts {
		for _, s := range x.Partitions {
			var top []string
			for _, v := range s.ByItems {
				top = append(top, fmt.Sprintf("%s: %d items (%s%%)", v.Value, v.Items, num(100*v.Share)))
			}
			var topB []string
			for _, v := range s.ByBytes {
				topB = append(topB, fmt.Sprintf("%s: %s", v.Value, humanBytes(v.Bytes)))
			}
			rows = append(rows, []string{x.Layout, where(s.Index) + " (" + s.Attr + ")", fmt.Sprint(s.Partitions), strings.Join(top, "; "), strings.Join(topB, "; ")})
		}
	}
	htmlTable(b, []string{"layout", "table or index", "partitions", "top by items", "top by bytes"}, rows)
}

// htmlStorageTables writes storage and limits, and the rewrites.
func htmlStorageTables(b *strings.Builder, r *Report) {
	e := html.EscapeString
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	here := thisFile(r)
	p("<h2>Storage and limits, %s</h2>\n", e(here))
	var rows [][]string
	for _, x := range r.Layouts {
		for _, s := range x.Storage {
			rows = append(rows, []string{x.Layout, where(s.Index), fmt.Sprint(s.Items), humanBytes(s.Bytes), humanBytes(s.BilledBytes)})
		}
	}
	htmlTable(b, []string{"layout", "table or index", "items", "bytes", "billed bytes"}, rows)
	rows = nil
	for _, x := range r.Layouts {
		rows = append(rows, []string{x.Layout, "largest item", "", num(float64(x.MaxItemBytes)) + " B", num(float64(x.ItemLimit)) + " B"})
		for _, k := range x.Keys {
			rows = append(rows, []string{x.Layout, where(k.Index) + " " + k.Role + " key", k.Attr, num(float64(k.Longest)) + " B", num(float64(k.Limit)) + " B"})
		}
	}
	htmlTable(b, []string{"layout", "what", "attribute", "longest", "limit"}, rows)

	p("<h2>Rewrites, %s</h2>\n", e(here))
	rows = nil
	for _, x := range r.Layouts {
		for _, c := range []struct {
			name string
			s    RewriteStats
		}{{"move a subtree", x.Rewrites.Move}, {"delete a node", x.Rewrites.Delete}, {"write a node", x.Rewrites.Write}} {
			rows = append(rows, []string{x.Layout, c.name, fmt.Sprint(c.s.Samples), num(c.s.MeanPuts), num(c.s.MeanDeletes), num(c.s.MeanItems), num(c.s.MeanWCU) + " WCU", fmt.Sprintf("%d WCU (%s)", c.s.WorstWCU, c.s.WorstNode)})
		}
	}
	htmlTable(b, []string{"layout", "change", "samples", "mean puts", "mean deletes", "mean items", "mean WCU", "worst (node)"}, rows)
}

// htmlNotes writes the notes and the end of the page.
func htmlNotes(b *strings.Builder, r *Report) {
	e := html.EscapeString
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("<h2>Notes</h2>\n<ul class=\"notes\">\n")
	for _, n := range r.Notes {
		p("<li>%s</li>\n", e(n))
	}
	p("</ul>\n<p class=\"sub\">Generated by treeport bench (report schema %d).</p>\n</main></body></html>\n", r.SchemaVersion)
}

// htmlTable writes a table of text cells, escaped, under a head row.
func htmlTable(b *strings.Builder, head []string, rows [][]string) {
	e := html.EscapeString
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("<table><tr>")
	for _, h := range head {
		p("<th>%s</th>", e(h))
	}
	p("</tr>\n")
	for _, row := range rows {
		p("<tr>")
		for _, c := range row {
			p("<td>%s</td>", e(c))
		}
		p("</tr>\n")
	}
	p("</table>\n")
}

// aKind names a query kind with its article: "a get query" but "an
// ancestors query".
func aKind(k string) string {
	if k != "" && strings.ContainsRune("aeiou", rune(k[0])) {
		return "an " + k
	}
	return "a " + k
}
