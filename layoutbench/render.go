package layoutbench

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/treeport/treeport/internal/units"
)

// Formats the report is written in, by file extension.
var formats = map[string]func(io.Writer, *Report) error{
	".md":   WriteMarkdown,
	".json": WriteJSON,
	".html": WriteHTML,
	".htm":  WriteHTML,
}

// Writer returns the writer for a report file, chosen by its extension
// (.md, .json, .html), or an error naming the ones there are.
func Writer(path string) (func(io.Writer, *Report) error, error) {
	if w, ok := formats[strings.ToLower(filepath.Ext(path))]; ok {
		return w, nil
	}
	return nil, fmt.Errorf("report %q: the file name must end in .md, .json or .html", path)
}

// WriteJSON writes the report as indented JSON (docs/bench-report.schema.json).
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// mixText is the read mix as "get 10%, children 40%, …".
func mixText(r *Report) string {
	var parts []string
	for _, m := range r.ReadMix {
		parts = append(parts, fmt.Sprintf("%s %s%%", m.Kind, num(100*m.Share)))
	}
	return strings.Join(parts, ", ")
}

// summary is the report's first line.
func summary(r *Report) string {
	where := "offline (from the file alone)"
	if r.Mode == "online" {
		where = "online against " + r.Endpoint
	}
	return fmt.Sprintf("%s: %s, %s, depth up to %d; %s; sample of %s (seed %d)",
		r.Input.Path, units.Count(int64(r.Input.Nodes), "node"), units.Count(int64(r.Input.Trees), "tree"), r.Input.MaxDepth, where, units.Count(int64(r.Sample.Nodes), "node"), r.Sample.Seed)
}

// query returns a layout's stats for a kind.
func (res *Result) query(kind string) QueryStats {
	for _, q := range res.Queries {
		if q.Kind == kind {
			return q
		}
	}
	return QueryStats{Kind: kind}
}

// WriteText writes the terminal summary: one row per layout and the
// ranking.
func WriteText(w io.Writer, r *Report) error {
	fmt.Fprintf(w, "treeport bench: %s\n", summary(r))
	fmt.Fprintf(w, "workload: %s; read mix: %s; costs at %s; prices %s as of %s\n\n", workText(r.Workload), mixText(r), units.Count(int64(r.Scale.Nodes), "node"), r.Prices.Region, r.Prices.AsOf)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"layout", "items", "stored", "WCU load", "load ≥ s"}
	if r.Mode == "online" {
		head = append(head, "load s")
	}
	for _, k := range Kinds {
		head = append(head, shortKind(k)+" RCU")
	}
	head = append(head, "RCU/read", "req/read", "move WCU", "delete WCU", "write WCU", "$ load", "$ storage", "$ reads", "$ writes", "$ total")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, res := range r.Layouts {
		row := []string{res.Layout, num(float64(res.Items)), humanBytes(res.StoredBytes), num(float64(res.Load.WCU)), num(res.Load.MinSeconds)}
		if r.Mode == "online" {
			row = append(row, fmt.Sprintf("%.2f", deref(res.Load.Seconds)))
		}
		for _, k := range Kinds {
			row = append(row, num(res.query(k).RCU.Mean))
		}
		c := res.Cost
		row = append(row, num(c.ReadRCUPerOp), num(c.RequestsPerOp),
			num(c.MoveWCU), num(c.DeleteWCU), num(c.WriteWCU),
			usd(c.LoadUSD), usd(c.StorageUSD), usd(c.ReadsUSD), usd(c.WritesUSD+c.MovesUSD+c.DeletesUSD), usd(c.TotalUSD))
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Scale.Nodes != int64(r.Input.Nodes) {
		fmt.Fprintf(w, "items, stored, the load's WCU and seconds and each query's RCU are this file's (%s); RCU/read, req/read, move, delete and write WCU and every $ are projected to %s (--scale)\n",
			units.Count(int64(r.Input.Nodes), "node"), units.Count(r.Scale.Nodes, "node"))
	}
	fmt.Fprintf(w, "\nrecommendation for this workload (%s):\n", marginText(r))
	for _, e := range r.Ranking {
		fmt.Fprintf(w, "  %d. %s: %s\n", e.Rank, e.Layout, e.Why)
	}
	for _, b := range r.BreakEvens {
		fmt.Fprintf(w, "  %s\n", breakEvenText(b))
	}
	_, err := fmt.Fprintln(w)
	return err
}

func shortKind(k string) string {
	switch k {
	case KindDescendants:
		return "desc"
	case KindDepth2:
		return "desc≤2"
	case KindAncestors:
		return "anc"
	}
	return k
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// humanBytes prints a size in B, KiB, MiB or GiB.
func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// where names the table or an index.
func where(index string) string {
	if index == "" {
		return "table"
	}
	return index
}

// workText says what the workload is.
func workText(w Workload) string {
	return fmt.Sprintf("%s reads, %s writes, %s moves, %s deletes a month for %s months",
		count(w.ReadsPerMonth), count(w.WritesPerMonth), count(w.MovesPerMonth), count(w.DeletesPerMonth), num(w.Months))
}

// count prints a large number short: 2.6 billion, 10 million, 500.
func count(v float64) string {
	switch {
	case v >= 1e9:
		return num(v/1e9) + " billion"
	case v >= 1e6:
		return num(v/1e6) + " million"
	case v >= 1e4:
		return num(v/1e3) + " thousand"
	}
	return num(v)
}

// marginText says how clear the pick is.
func marginText(r *Report) string {
	switch {
	case len(r.Ranking) < 2:
		return "one layout"
	case r.Ranking[1].Rank == r.Ranking[0].Rank:
		return fmt.Sprintf("%s and %s tie, within %.1f%%", r.Ranking[0].Layout, r.Ranking[1].Layout, 100*tieShare)
	}
	return fmt.Sprintf("%s, %s", r.Ranking[0].Layout, marginAfterPick(r))
}

// marginAfterPick is the margin said after the pick's name, which the page
// shows on its own: "by a margin of 1.06× over path".
func marginAfterPick(r *Report) string {
	switch {
	case len(r.Ranking) < 2:
		return "the only layout"
	case r.Ranking[1].Rank == r.Ranking[0].Rank:
		return fmt.Sprintf("tied with %s, within %.1f%%", r.Ranking[1].Layout, 100*tieShare)
	}
	return fmt.Sprintf("by a margin of %s× over %s", num(r.Margin), r.Ranking[1].Layout)
}

// breakEvenText says where two layouts cost the same.
func breakEvenText(b BreakEven) string {
	return fmt.Sprintf("break-even: %s costs less than %s above %s reads a month, more below", b.CheaperReads, b.CheaperRest, count(b.ReadsPerMonth))
}

// WriteMarkdown writes the report as Markdown.
func WriteMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# treeport bench: %s\n\n", mdText(filepath.Base(r.Input.Path)))
	p("%s.\n\n", mdText(summary(r)))
	p("Workload: %s. Read mix: %s. Costs projected to %s nodes. Prices: %s, as of %s.\n\n", workText(r.Workload), mixText(r), num(float64(r.Scale.Nodes)), mdText(r.Prices.Region), mdText(r.Prices.AsOf))

	p("## Recommendation\n\n")
	p("For this workload: %s.\n\n", mdText(marginText(r)))
	for _, e := range r.Ranking {
		p("%d. **%s**: %s\n", e.Rank, mdText(e.Layout), mdText(e.Why))
	}
	if len(r.BreakEvens) > 0 {
		p("\n")
		for _, b := range r.BreakEvens {
			p("- %s\n", mdText(breakEvenText(b)))
		}
	}

	p("\n## At a glance\n\n")
	p("| layout | items | stored (table + indexes) | largest item | WCU to load | consumed WCU | load time | load time on DynamoDB, at least | RCU per read | requests per read | WCU per move | WCU per delete | WCU per write |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, res := range r.Layouts {
		consumed, secs := "—", "—"
		if res.Load.ConsumedWCU != nil {
			consumed = num(*res.Load.ConsumedWCU)
		}
		if res.Load.Seconds != nil {
			secs = fmt.Sprintf("%.2f s", *res.Load.Seconds)
		}
		p("| %s | %d | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", mdText(res.Layout), res.Items, humanBytes(res.StoredBytes), humanBytes(int64(res.MaxItemBytes)),
			res.Load.WCU, consumed, secs, units.DurationText(res.Load.MinSeconds)+" ("+res.Load.BoundBy+")", num(res.Cost.ReadRCUPerOp), num(res.Cost.RequestsPerOp), num(res.Cost.MoveWCU), num(res.Cost.DeleteWCU), num(res.Cost.WriteWCU))
	}

	p("\n## Cost at %s nodes\n\n", num(float64(r.Scale.Nodes)))
	p("| layout | load, on-demand writes | load, ImportTable | storage per month | a million reads of the mix |\n|---|---:|---:|---:|---:|\n")
	for _, res := range r.Layouts {
		p("| %s | %s | %s | %s | %s |\n", mdText(res.Layout), usd(res.Cost.LoadOnDemandUSD), usd(res.Cost.LoadImportUSD), usd(res.Cost.StorageMonthUSD), usd(res.Cost.MillionReadsUSD))
	}
	p("\n## The workload's cost at %s nodes\n\n%s.\n\n", num(float64(r.Scale.Nodes)), workText(r.Workload))
	p("| layout | load | storage | reads | writes | moves | deletes | total |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, res := range r.Layouts {
		c := res.Cost
		p("| %s | %s (%s) | %s | %s | %s | %s | %s | **%s** |\n", mdText(res.Layout), usd(c.LoadUSD), mdText(c.LoadMethod), usd(c.StorageUSD), usd(c.ReadsUSD), usd(c.WritesUSD), usd(c.MovesUSD), usd(c.DeletesUSD), usd(c.TotalUSD))
	}

	p("\n## Reads\n\n")
	src := "estimated from the layouts' requests and the items' sizes"
	if r.Mode == "online" {
		src = "sent to the server; RCU priced by DynamoDB's documented rules, next to what the server reported consumed"
	}
	p("Per query, over the sample (%s): mean (p95) of requests, items read and RCU", src)
	if r.Mode == "online" {
		p(", and latency p50 / p95")
	}
	p(".\n\n| query | layout | answer nodes | requests | items read | RCU |")
	if r.Mode == "online" {
		p(" RCU the server reported | latency ms |")
	}
	p("\n|---|---|---:|---:|---:|---:|")
	if r.Mode == "online" {
		p("---:|---:|")
	}
	p("\n")
	for _, k := range Kinds {
		for _, res := range r.Layouts {
			q := res.query(k)
			p("| %s | %s | %s | %s (%s) | %s (%s) | %s (%s) |", k, mdText(res.Layout), num(q.Nodes), num(q.Requests.Mean), num(q.Requests.P95),
				num(q.ItemsRead.Mean), num(q.ItemsRead.P95), num(q.RCU.Mean), num(q.RCU.P95))
			if r.Mode == "online" {
				consumed := "—"
				if q.ConsumedRCU != nil {
					consumed = fmt.Sprintf("%s (%s)", num(q.ConsumedRCU.Mean), num(q.ConsumedRCU.P95))
				}
				p(" %s |", consumed)
			}
			if q.LatencyMS != nil {
				p(" %s / %s |", num(q.LatencyMS.P50), num(q.LatencyMS.P95))
			}
			p("\n")
		}
	}

	p("\n## Storage\n\n| layout | table or index | items | bytes | billed bytes |\n|---|---|---:|---:|---:|\n")
	for _, res := range r.Layouts {
		for _, s := range res.Storage {
			p("| %s | %s | %d | %s | %s |\n", mdText(res.Layout), mdText(where(s.Index)), s.Items, humanBytes(s.Bytes), humanBytes(s.BilledBytes))
		}
	}

	p("\n## Keys and items against DynamoDB's limits\n\n| layout | where | key | attribute | longest | limit |\n|---|---|---|---|---:|---:|\n")
	for _, res := range r.Layouts {
		p("| %s | item | — | — | %d B | %d B |\n", mdText(res.Layout), res.MaxItemBytes, res.ItemLimit)
		for _, k := range res.Keys {
			p("| %s | %s | %s | %s | %d B | %d B |\n", mdText(res.Layout), mdText(where(k.Index)), mdText(k.Role), mdText(k.Attr), k.Longest, k.Limit)
		}
	}

	p("\n## Hottest partitions\n\nThe partition key values holding the most items (top %d), with their share of the table's or index's items.\n\n", topN)
	p("| layout | table or index | partitions | by items | by bytes |\n|---|---|---:|---|---|\n")
	for _, res := range r.Layouts {
		for _, s := range res.Partitions {
			var byItems, byBytes []string
			for _, v := range s.ByItems {
				byItems = append(byItems, fmt.Sprintf("`%s` %d (%s%%)", mdCode(v.Value), v.Items, num(100*v.Share)))
			}
			for _, v := range s.ByBytes {
				byBytes = append(byBytes, fmt.Sprintf("`%s` %s", mdCode(v.Value), humanBytes(v.Bytes)))
			}
			p("| %s | %s (%s) | %d | %s | %s |\n", mdText(res.Layout), mdText(where(s.Index)), mdText(s.Attr), s.Partitions, strings.Join(byItems, ", "), strings.Join(byBytes, ", "))
		}
	}

	p("\n## Rewrites\n\n| layout | change | samples | mean puts | mean deletes | mean items | mean WCU | worst WCU (node) |\n|---|---|---:|---:|---:|---:|---:|---|\n")
	for _, res := range r.Layouts {
		for _, c := range []struct {
			name string
			s    RewriteStats
		}{{"move a subtree", res.Rewrites.Move}, {"delete a node", res.Rewrites.Delete}, {"write a node", res.Rewrites.Write}} {
			p("| %s | %s | %d | %s | %s | %s | %s | %d (`%s`) |\n", mdText(res.Layout), c.name, c.s.Samples, num(c.s.MeanPuts), num(c.s.MeanDeletes), num(c.s.MeanItems), num(c.s.MeanWCU), c.s.WorstWCU, mdCode(c.s.WorstNode))
		}
	}

	p("\n## Sample\n\n| depths | nodes | sampled |\n|---|---:|---:|\n")
	for _, s := range r.Sample.Strata {
		d := fmt.Sprint(s.MinDepth)
		if s.MaxDepth != s.MinDepth {
			d = fmt.Sprintf("%d–%d", s.MinDepth, s.MaxDepth)
		}
		p("| %s | %d | %d |\n", d, s.Population, s.Sampled)
	}

	p("\n## Notes\n\n")
	for _, n := range r.Notes {
		p("- %s\n", mdText(n))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdText makes plain text (a file name, an id, an attribute name, a note)
// safe in Markdown, in a paragraph or a table cell, as html.EscapeString
// makes it safe in the HTML report: HTML's special characters become
// entities and Markdown's punctuation is escaped with a backslash, so that
// no input becomes markup (a file named <img src=x onerror=…>.json, say).
func mdText(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch c {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '\n', '\r':
			b.WriteByte(' ')
		case '\\', '`', '*', '_', '[', ']', '|', '#', '!', '~':
			b.WriteByte('\\')
			b.WriteRune(c)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// mdCode makes a value safe inside a Markdown code span in a table.
func mdCode(s string) string {
	return strings.NewReplacer("`", "'", "|", "\\|", "\n", " ").Replace(s)
}
