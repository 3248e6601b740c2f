package layoutbench

import (
	"fmt"
	"html"
	"io"
	"path/filepath"
	"strings"
)

// palette gives each layout its colour, in report order.
var palette = []string{"#2f6fb3", "#d9822b", "#3a9a5b", "#a54ca8", "#c0392b", "#6d6d6d"}

// metric is one bar chart: a figure per layout.
type metric struct {
	title, unit string
	value       func(*Result) float64
	format      func(float64) string
	lowerBetter bool
}

// metrics are the charts of the HTML page, one per figure.
func metrics(r *Report) []metric {
	n := func(v float64) string { return num(v) }
	ms := []metric{
		{"Cost of a million reads of the mix", "USD", func(x *Result) float64 { return x.Cost.MillionReadsUSD }, usd, true},
		{"RCU per read of the mix", "RCU", func(x *Result) float64 { return x.Cost.ReadRCUPerOp }, n, true},
		{"Requests per read of the mix", "requests", func(x *Result) float64 { return x.Cost.RequestsPerOp }, n, true},
	}
	for _, k := range Kinds {
		ms = append(ms, metric{fmt.Sprintf("RCU of a %s query (mean)", k), "RCU", func(x *Result) float64 { return x.query(k).RCU.Mean }, n, true})
	}
	if r.Mode == "online" {
		for _, k := range Kinds {
			ms = append(ms, metric{fmt.Sprintf("Latency of a %s query (p95)", k), "ms", func(x *Result) float64 {
				if l := x.query(k).LatencyMS; l != nil {
					return l.P95
				}
				return 0
			}, n, true})
		}
		ms = append(ms, metric{"Load time", "s", func(x *Result) float64 { return deref(x.Load.Seconds) }, n, true})
	}
	ms = append(ms,
		metric{"Items", "items", func(x *Result) float64 { return float64(x.Items) }, n, true},
		metric{"Stored bytes, table and indexes (billed)", "bytes", func(x *Result) float64 { return float64(x.StoredBytes) }, func(v float64) string { return humanBytes(int64(v)) }, true},
		metric{"WCU to load", "WCU", func(x *Result) float64 { return float64(x.Load.WCU) }, n, true},
		metric{fmt.Sprintf("Load cost at %d nodes, on-demand writes", r.Scale.Nodes), "USD", func(x *Result) float64 { return x.Cost.LoadOnDemandUSD }, usd, true},
		metric{fmt.Sprintf("Load cost at %d nodes, ImportTable", r.Scale.Nodes), "USD", func(x *Result) float64 { return x.Cost.LoadImportUSD }, usd, true},
		metric{fmt.Sprintf("Storage per month at %d nodes", r.Scale.Nodes), "USD", func(x *Result) float64 { return x.Cost.StorageMonthUSD }, usd, true},
		metric{"Hottest partition's share of its table or index", "%", func(x *Result) float64 { return 100 * hottest(x) }, func(v float64) string { return num(v) + "%" }, true},
		metric{"Items rewritten to move a subtree (mean)", "items", func(x *Result) float64 { return x.Rewrites.Move.MeanItems }, n, true},
		metric{"Items rewritten to delete a node (mean)", "items", func(x *Result) float64 { return x.Rewrites.Delete.MeanItems }, n, true},
		metric{"Largest item", "bytes", func(x *Result) float64 { return float64(x.MaxItemBytes) }, func(v float64) string { return humanBytes(int64(v)) }, true},
	)
	return ms
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

// chart draws one horizontal bar chart as inline SVG.
func chart(b *strings.Builder, r *Report, m metric) {
	const (
		labelW = 120
		barW   = 380
		rowH   = 26
		valueW = 110
	)
	top := 0.0
	for _, x := range r.Layouts {
		top = max(top, m.value(x))
	}
	best := -1.0
	for _, x := range r.Layouts {
		if v := m.value(x); best < 0 || v < best {
			best = v
		}
	}
	h := rowH*len(r.Layouts) + 8
	w := labelW + barW + valueW
	fmt.Fprintf(b, "<figure class=\"chart\"><figcaption>%s</figcaption>\n", html.EscapeString(m.title))
	fmt.Fprintf(b, "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\">\n<title>%s (%s; %s)</title>\n",
		w, h, w, h, html.EscapeString(m.title), html.EscapeString(m.title), html.EscapeString(m.unit), "shorter is better")
	for i, x := range r.Layouts {
		v := m.value(x)
		y := 4 + i*rowH
		bw := 0.0
		if top > 0 {
			bw = v / top * barW
		}
		if v > 0 && bw < 2 {
			bw = 2
		}
		fmt.Fprintf(b, "<text x=\"%d\" y=\"%d\" class=\"lbl\">%s</text>", labelW-8, y+17, html.EscapeString(x.Layout))
		fmt.Fprintf(b, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" rx=\"3\" fill=\"%s\"/>", labelW, y+3, bw, rowH-8, palette[i%len(palette)])
		mark := ""
		if v == best && len(r.Layouts) > 1 {
			mark = " ★"
		}
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%d\" class=\"val\">%s%s</text>\n", float64(labelW)+bw+6, y+17, html.EscapeString(m.format(v)), mark)
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
	p(`<style>
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0;background:#f6f7f9;color:#1d232b}
main{max-width:1180px;margin:0 auto;padding:24px}
h1{font-size:26px;margin:0 0 4px}h2{font-size:20px;margin:32px 0 10px;border-bottom:1px solid #d5dae1;padding-bottom:4px}
.sub{color:#59626e;margin:0 0 18px}
.rec{background:#fff;border:2px solid #2f6fb3;border-radius:10px;padding:16px 22px;margin:12px 0 8px;box-shadow:0 1px 3px rgba(0,0,0,.08)}
.rec h2{border:0;margin:0 0 6px;font-size:22px}.rec .pick{font-size:30px;font-weight:700;color:#2f6fb3}
.rec ol{margin:8px 0 0;padding-left:22px}.rec li{margin:4px 0}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:14px}
figure.chart{background:#fff;border:1px solid #dde2e8;border-radius:8px;margin:0;padding:10px 12px}
figcaption{font-weight:600;margin-bottom:4px}
svg .lbl{font-size:13px;text-anchor:end;fill:#1d232b}svg .val{font-size:12px;fill:#3b434d}
table{border-collapse:collapse;background:#fff;font-size:13px;margin:6px 0}
th,td{border:1px solid #dde2e8;padding:4px 8px;text-align:right;vertical-align:top}th{background:#eef1f5}
td:first-child,th:first-child,td.l{text-align:left}
code{font-size:12px;background:#eef1f5;padding:0 3px;border-radius:3px}
.notes li{margin:4px 0;color:#3b434d}
</style></head><body><main>
`)
	p("<h1>treeport bench: %s</h1>\n<p class=\"sub\">%s.<br>Read mix: %s. Costs at %d nodes. Prices: %s as of %s.</p>\n",
		e(filepath.Base(r.Input.Path)), e(summary(r)), e(mixText(r)), r.Scale.Nodes, e(r.Prices.Region), e(r.Prices.AsOf))

	p("<section class=\"rec\" id=\"recommendation\"><h2>Recommendation</h2>\n")
	if len(r.Ranking) > 0 {
		p("<div>For this read mix: <span class=\"pick\">%s</span></div>\n<ol>\n", e(r.Ranking[0].Layout))
		for _, x := range r.Ranking {
			p("<li><b>%s</b>: %s</li>\n", e(x.Layout), e(x.Why))
		}
		p("</ol>\n")
	}
	p("</section>\n")

	p("<h2>Charts</h2>\n<p class=\"sub\">One chart per figure; shorter bars are better, ★ marks the best.</p>\n<div class=\"charts\">\n")
	for _, m := range metrics(r) {
		chart(&b, r, m)
	}
	p("</div>\n")

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
		}{{"move a subtree", x.Rewrites.Move}, {"delete a node", x.Rewrites.Delete}} {
			rows = append(rows, []string{x.Layout, c.name, fmt.Sprint(c.s.Samples), num(c.s.MeanPuts), num(c.s.MeanDeletes), num(c.s.MeanItems), fmt.Sprintf("%d (%s)", c.s.WorstItems, c.s.WorstNode)})
		}
	}
	table([]string{"layout", "change", "samples", "mean puts", "mean deletes", "mean items", "worst (node)"}, rows)

	p("<h2>Notes</h2>\n<ul class=\"notes\">\n")
	for _, n := range r.Notes {
		p("<li>%s</li>\n", e(n))
	}
	p("</ul>\n<p class=\"sub\">Generated by treeport bench (report schema %d).</p>\n</main></body></html>\n", r.SchemaVersion)
	_, err := io.WriteString(w, b.String())
	return err
}
