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
	ms := []metric{
		{fmt.Sprintf("Total cost of the workload at %s nodes", count(float64(r.Scale.Nodes))), "USD", func(x *Result) float64 { return x.Cost.TotalUSD }, usd, true},
		{"Reads of the workload", "USD", func(x *Result) float64 { return x.Cost.ReadsUSD }, usd, true},
		{"Writes, moves and deletes of the workload", "USD", func(x *Result) float64 { return x.Cost.WritesUSD + x.Cost.MovesUSD + x.Cost.DeletesUSD }, usd, true},
		{fmt.Sprintf("Storage for %s months", num(r.Workload.Months)), "USD", func(x *Result) float64 { return x.Cost.StorageUSD }, usd, true},
		{"Load, the cheaper way", "USD", func(x *Result) float64 { return x.Cost.LoadUSD }, usd, true},
		{"Cost of a million reads of the mix", "USD", func(x *Result) float64 { return x.Cost.MillionReadsUSD }, usd, true},
		{"RCU per read of the mix", "RCU", func(x *Result) float64 { return x.Cost.ReadRCUPerOp }, with("RCU"), true},
		{"Requests per read of the mix", "requests", func(x *Result) float64 { return x.Cost.RequestsPerOp }, with("requests"), true},
	}
	for _, k := range Kinds {
		ms = append(ms, metric{fmt.Sprintf("RCU of %s query (mean, this dataset)", aKind(k)), "RCU", func(x *Result) float64 { return x.query(k).RCU.Mean }, with("RCU"), true})
	}
	ms = append(ms,
		metric{"Items", "items", func(x *Result) float64 { return float64(x.Items) }, with("items"), true},
		metric{"Stored bytes, table and indexes (billed)", "bytes", func(x *Result) float64 { return float64(x.StoredBytes) }, bytesF, true},
		metric{"WCU to load", "WCU", func(x *Result) float64 { return float64(x.Load.WCU) }, with("WCU"), true},
		metric{"Hottest partition's share of its table or index", "%", func(x *Result) float64 { return 100 * hottest(x) }, func(v float64) string { return num(v) + "%" }, true},
		metric{"WCU to move a subtree (mean, at the scale)", "WCU", func(x *Result) float64 { return x.Cost.MoveWCU }, with("WCU"), true},
		metric{"WCU to delete a node (mean, at the scale)", "WCU", func(x *Result) float64 { return x.Cost.DeleteWCU }, with("WCU"), true},
		metric{"WCU to write a node's attributes (mean)", "WCU", func(x *Result) float64 { return x.Cost.WriteWCU }, with("WCU"), true},
		metric{"Largest item", "bytes", func(x *Result) float64 { return float64(x.MaxItemBytes) }, bytesF, true},
	)
	return ms
}

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
// tie (tieShare), and stars is false for figures that rank nothing. When
// one bar is over 30 times another, the bars are drawn on a log scale, so
// that an outlier does not flatten the rest, and the caption says so.
func chart(b *strings.Builder, r *Report, m metric, stars bool) {
	const (
		labelW = 110
		barW   = 330
		rowH   = 26
		valueW = 150
	)
	top, low := 0.0, math.Inf(1)
	for _, x := range r.Layouts {
		v := m.value(x)
		top = max(top, v)
		if v > 0 {
			low = min(low, v)
		}
	}
	logScale := top > 0 && !math.IsInf(low, 1) && top/low > 30
	scale := func(v float64) float64 {
		switch {
		case top <= 0 || v <= 0:
			return 0
		case logScale:
			// From a tenth of the smallest value to the largest.
			return math.Log10(v/(low/10)) / math.Log10(top/(low/10)) * barW
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
	caption := m.title
	if logScale {
		caption += " (log scale)"
	}
	fmt.Fprintf(b, "<figure class=\"chart\"><figcaption>%s</figcaption>\n", html.EscapeString(caption))
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
		fmt.Fprintf(b, "<path d=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2.5\"/>", strings.TrimSpace(path.String()), palette[i%len(palette)])
		fmt.Fprintf(b, "<text x=\"%d\" y=\"%.1f\" class=\"key\" fill=\"%s\">%s</text>\n", w-right+6, keyY[i], palette[i%len(palette)], html.EscapeString(x.Layout))
	}
	b.WriteString("</svg></figure>\n")
}

// WriteHTML writes the report as one self-contained HTML page: no script
// and nothing fetched, the charts inline SVG, the recommendation first.
func WriteHTML(w io.Writer, r *Report) error {
	var b strings.Builder
	e := html.EscapeString
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
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
</style></head><body><main>
`)
	p("<h1>treeport bench: %s</h1>\n", e(filepath.Base(r.Input.Path)))
	p("<p class=\"caveat\" id=\"caveat\">%s</p>\n", e(caveat(r)))
	p("<p class=\"sub\">%s.<br>Workload: %s. Read mix: %s. Costs at %d nodes. Prices: %s as of %s.</p>\n",
		e(summary(r)), e(workText(r.Workload)), e(mixText(r)), r.Scale.Nodes, e(r.Prices.Region), e(r.Prices.AsOf))

	p("<section class=\"rec\" id=\"recommendation\"><h2>Recommendation</h2>\n")
	if len(r.Ranking) > 0 {
		p("<div>For this workload: <span class=\"pick\">%s</span><span class=\"margin\" id=\"margin\">%s</span></div>\n<ol>\n", e(r.Ranking[0].Layout), e(marginText(r)))
		for _, x := range r.Ranking {
			p("<li><b>%d. %s</b>: %s</li>\n", x.Rank, e(x.Layout), e(x.Why))
		}
		p("</ol>\n")
		for _, be := range r.BreakEvens {
			p("<p>%s.</p>\n", e(breakEvenText(be)))
		}
	}
	p("</section>\n")

	p("<h2>Cost against scale and read volume</h2>\n<div class=\"charts\">\n")
	lineChart(&b, r, "by-scale", fmt.Sprintf("Total cost of the workload against the node count (%s)", workText(r.Workload)), "nodes", r.Curves.ByScale)
	lineChart(&b, r, "by-reads", fmt.Sprintf("Total cost of the workload at %s nodes against the reads a month", count(float64(r.Scale.Nodes))), "reads a month", r.Curves.ByReads)
	p("</div>\n")

	p("<h2>Charts</h2>\n<p class=\"sub\">One chart per figure; shorter bars are better; ★ marks the best when no other ties it (within %.1f%%).</p>\n<div class=\"charts\">\n", 100*tieShare)
	for _, m := range metrics(r) {
		chart(&b, r, m, true)
	}
	p("</div>\n")
	if lm := latencyMetrics(r); len(lm) > 0 {
		p("<h2>Timings on %s</h2>\n<p class=\"sub\">What this server took, for the record only: no ranking uses them, and none is starred. Against DynamoDB Local they measure the JVM, its warm-up and this machine more than the layout (a GetItem is the same request in every layout); DynamoDB's own latency needs a run against DynamoDB.</p>\n<div class=\"charts\">\n", e(r.Endpoint))
		for _, m := range lm {
			chart(&b, r, m, false)
		}
		p("</div>\n")
	}

	table := func(head []string, rows [][]string) {
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

	p("<h2>At a glance</h2>\n")
	var rows [][]string
	for _, x := range r.Layouts {
		consumed, secs := "—", "—"
		if x.Load.ConsumedWCU != nil {
			consumed = num(*x.Load.ConsumedWCU)
		}
		if x.Load.Seconds != nil {
			secs = fmt.Sprintf("%.2f s", *x.Load.Seconds)
		}
		rows = append(rows, []string{x.Layout, fmt.Sprint(x.Items), humanBytes(x.StoredBytes), humanBytes(int64(x.MaxItemBytes)), fmt.Sprint(x.Load.WCU), consumed, secs,
			usd(x.Cost.LoadOnDemandUSD), usd(x.Cost.LoadImportUSD), usd(x.Cost.StorageMonthUSD), usd(x.Cost.MillionReadsUSD)})
	}
	table([]string{"layout", "items", "stored", "largest item", "WCU to load", "consumed WCU", "load time", "load $ (on-demand)", "load $ (ImportTable)", "storage $/month", "$ per 1M reads"}, rows)

	p("<h2>The workload's cost</h2>\n")
	rows = nil
	for _, x := range r.Layouts {
		c := x.Cost
		rows = append(rows, []string{x.Layout, usd(c.LoadUSD) + " (" + c.LoadMethod + ")", usd(c.StorageUSD), usd(c.ReadsUSD), usd(c.WritesUSD), usd(c.MovesUSD), usd(c.DeletesUSD), usd(c.TotalUSD),
			num(c.MoveWCU) + " WCU", num(c.DeleteWCU) + " WCU", num(c.WriteWCU) + " WCU"})
	}
	table([]string{"layout", "load $", "storage $", "reads $", "writes $", "moves $", "deletes $", "total $", "a move", "a delete", "a write"}, rows)

	p("<h2>Reads</h2>\n")
	rows = nil
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
	table([]string{"query", "layout", "source", "answer nodes", "requests mean (p95)", "items read mean (p95)", "RCU mean (p95)", "latency ms p50 / p95"}, rows)

	p("<h2>Hottest partitions</h2>\n")
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
	table([]string{"layout", "table or index", "partitions", "top by items", "top by bytes"}, rows)

	p("<h2>Storage and limits</h2>\n")
	rows = nil
	for _, x := range r.Layouts {
		for _, s := range x.Storage {
			rows = append(rows, []string{x.Layout, where(s.Index), fmt.Sprint(s.Items), humanBytes(s.Bytes), humanBytes(s.BilledBytes)})
		}
	}
	table([]string{"layout", "table or index", "items", "bytes", "billed bytes"}, rows)
	rows = nil
	for _, x := range r.Layouts {
		rows = append(rows, []string{x.Layout, "largest item", "", fmt.Sprintf("%d B", x.MaxItemBytes), fmt.Sprintf("%d B", x.ItemLimit)})
		for _, k := range x.Keys {
			rows = append(rows, []string{x.Layout, where(k.Index) + " " + k.Role + " key", k.Attr, fmt.Sprintf("%d B", k.Longest), fmt.Sprintf("%d B", k.Limit)})
		}
	}
	table([]string{"layout", "what", "attribute", "longest", "limit"}, rows)

	p("<h2>Rewrites</h2>\n")
	rows = nil
	for _, x := range r.Layouts {
		for _, c := range []struct {
			name string
			s    RewriteStats
		}{{"move a subtree", x.Rewrites.Move}, {"delete a node", x.Rewrites.Delete}, {"write a node", x.Rewrites.Write}} {
			rows = append(rows, []string{x.Layout, c.name, fmt.Sprint(c.s.Samples), num(c.s.MeanPuts), num(c.s.MeanDeletes), num(c.s.MeanItems), num(c.s.MeanWCU) + " WCU", fmt.Sprintf("%d WCU (%s)", c.s.WorstWCU, c.s.WorstNode)})
		}
	}
	table([]string{"layout", "change", "samples", "mean puts", "mean deletes", "mean items", "mean WCU (this dataset)", "worst (node)"}, rows)

	p("<h2>Notes</h2>\n<ul class=\"notes\">\n")
	for _, n := range r.Notes {
		p("<li>%s</li>\n", e(n))
	}
	p("</ul>\n<p class=\"sub\">Generated by treeport bench (report schema %d).</p>\n</main></body></html>\n", r.SchemaVersion)
	_, err := io.WriteString(w, b.String())
	return err
}

// aKind names a query kind with its article: "a get query" but "an
// ancestors query".
func aKind(k string) string {
	if k != "" && strings.ContainsRune("aeiou", rune(k[0])) {
		return "an " + k
	}
	return "a " + k
}
