package layoutbench

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chromium returns the headless browser for the HTML tests: the one
// TREEPORT_TEST_CHROMIUM names (scripts/chromium.sh env), else chromium on
// the PATH. Without one the test is skipped, except under CI, where it
// fails.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TREEPORT_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium: install it with scripts/chromium.sh install, and export TREEPORT_TEST_CHROMIUM (eval \"$(scripts/chromium.sh env)\")"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (under CI a missing browser is a failure, not a skip)")
	}
	t.Skip(msg)
	return ""
}

// runChromium runs the headless browser with the flags that keep it off
// the network and out of the user's profile.
func runChromium(t *testing.T, browser string, args ...string) []byte {
	t.Helper()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--hide-scrollbars"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, append(base, args...)...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", browser, args, err, stderr.String())
	}
	return out.Bytes()
}

// TestHTMLInChromium renders the HTML report in headless Chromium: the
// screenshot is not blank, and the page holds a chart per metric, the two
// cost curves, the DynamoDB Local caveat before the recommendation, the
// pick with its margin, a unit on every value, and fetches nothing; and no
// chart overflows its card (measured in the browser).
func TestHTMLInChromium(t *testing.T) {
	browser := chromium(t)
	rep := offline(t, readFixture(t, "cars"), Options{Scale: 50_000_000})
	var buf bytes.Buffer
	if err := WriteHTML(&buf, rep); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, external := range []string{"http://", "https://", "<script", "<link", "@import", "url("} {
		if strings.Contains(page, external) {
			t.Errorf("the page is not self-contained: it has %q", external)
		}
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + file

	dom := string(runChromium(t, browser, "--dump-dom", url))
	charts := len(metrics(rep)) + 3 // and the two curves and the ratio chart
	if got := strings.Count(dom, `<figure class="chart`); got != charts || charts < 10 {
		t.Errorf("the rendered page has %d charts, want %d (one per metric, two curves and the ratio chart)", got, charts)
	}
	checkReadsRight(t, rep, dom)
	best := rep.Ranking[0]
	for _, want := range []string{"Recommendation", "For this workload: <span class=\"pick\">" + best.Layout + "</span>", htmlEscape(marginAfterPick(rep)),
		htmlEscape(best.Why), "Total cost of the workload", "<rect", `id="by-scale"`, `id="by-reads"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered page lacks %q", want)
		}
	}
	if c, r := strings.Index(dom, `id="caveat"`), strings.Index(dom, "Recommendation"); c < 0 || c > r {
		t.Errorf("the caveat (at %d) is not above the recommendation (at %d)", c, r)
	}
	// A line per layout in each curve.
	for _, id := range []string{"by-scale", "by-reads"} {
		fig := dom[strings.Index(dom, `id="`+id+`"`):]
		fig = fig[:strings.Index(fig, "</figure>")]
		if n := strings.Count(fig, "<path "); n != len(rep.Layouts) {
			t.Errorf("%s: %d lines, want one per layout (%d)", id, n, len(rep.Layouts))
		}
	}
	// Every value carries its unit.
	for _, v := range regexp.MustCompile(`class="val">([^<]*)<`).FindAllStringSubmatch(dom, -1) {
		if !regexp.MustCompile(`\$|[a-zA-Z%]`).MatchString(v[1]) {
			t.Errorf("the value %q has no unit", v[1])
		}
	}

	// In the browser: no chart, and no text of a chart, reaches past its
	// card. A copy of the page measures itself and writes what it found.
	probe := strings.Replace(page, "</body>", `<script>
const bad = [];
for (const fig of document.querySelectorAll("figure.chart")) {
  const box = fig.getBoundingClientRect();
  for (const el of fig.querySelectorAll("svg, svg text, svg rect")) {
    const r = el.getBoundingClientRect();
    if (r.right > box.right + 0.5 || r.left < box.left - 0.5) bad.push(fig.querySelector("figcaption").textContent + ": " + (el.textContent || el.tagName));
  }
}
document.body.setAttribute("data-overflow", bad.length ? bad.join(" | ") : "none");
</script></body>`, 1)
	probeFile := filepath.Join(dir, "probe.html")
	if err := os.WriteFile(probeFile, []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, width := range []string{"1280,1600", "900,1600"} {
		got := string(runChromium(t, browser, "--dump-dom", "--window-size="+width, "file://"+probeFile))
		m := regexp.MustCompile(`data-overflow="([^"]*)"`).FindStringSubmatch(got)
		if m == nil {
			t.Fatalf("the probe did not run at %s", width)
		}
		if m[1] != "none" {
			t.Errorf("at %s, charts overflow their cards: %s", width, m[1])
		}
	}

	shot := filepath.Join(dir, "shot.png")
	runChromium(t, browser, "--screenshot="+shot, "--window-size=1280,1600", url)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	ink, colours := inked(img)
	b := img.Bounds()
	t.Logf("screenshot %dx%d: %d non-background pixels, %d colours", b.Dx(), b.Dy(), ink, colours)
	if ink < b.Dx()*b.Dy()/50 || colours < 8 {
		t.Errorf("the screenshot looks blank: %d non-background pixels of %d, %d colours", ink, b.Dx()*b.Dy(), colours)
	}
	// The layouts' bar colours are there: the charts were drawn.
	for _, c := range palette[:len(rep.Layouts)] {
		if !hasColour(img, c) {
			t.Errorf("no pixel of the bar colour %s in the screenshot", c)
		}
	}
}

// checkReadsRight holds the rendered page to what a team reads in it
// before choosing a layout: the ranking numbered once, the pick named once,
// large numbers with separators, the text's "the most" the most in the
// table it sits above, lines that lie on each other told apart, bars on a
// linear scale, and every figure saying whether it is this file's or
// projected to --scale.
func checkReadsRight(t *testing.T, rep *Report, dom string) {
	t.Helper()
	// Numbered once: the <ol> numbers, the text does not.
	if m := regexp.MustCompile(`<li[^>]*>\s*(<b>)?\s*\d+\.`).FindString(dom); m != "" {
		t.Errorf("the ranking is numbered twice: %q", m)
	}
	if n := strings.Count(dom, `<li value="`); n != len(rep.Ranking) {
		t.Errorf("%d ranked items, want %d", n, len(rep.Ranking))
	}
	// The pick's name once in the heading line.
	heading := regexp.MustCompile(`For this workload: <span class="pick">([^<]*)</span><span class="margin" id="margin">([^<]*)</span>`).FindStringSubmatch(dom)
	if heading == nil {
		t.Fatal("no recommendation heading")
	}
	if strings.Contains(heading[2], heading[1]) {
		t.Errorf("the heading repeats the pick: %q %q", heading[1], heading[2])
	}
	// Separators: no run of four or more digits in the text.
	text := regexp.MustCompile(`(?s)<style>.*</style>`).ReplaceAllString(dom, "")
	text = regexp.MustCompile(`<[^>]*>`).ReplaceAllString(text, "\n")
	for _, m := range regexp.MustCompile(`\$?\d{4,}`).FindAllString(text, -1) {
		if len(m) == 4 && (strings.HasPrefix(m, "20") || strings.HasPrefix(m, "19")) {
			continue // a year
		}
		t.Errorf("a number without separators: %q", m)
	}
	if !strings.Contains(text, usd(rep.Layouts[len(rep.Layouts)-1].Cost.TotalUSD)) || !strings.Contains(usd(1234567), "1,234,567") {
		t.Errorf("usd(1234567) = %q", usd(1234567))
	}
	// "The most" WCU for a move is the most of the rewrites table.
	most, mostWCU := "", -1.0
	for _, x := range rep.Layouts {
		if x.Rewrites.Move.MeanWCU > mostWCU {
			most, mostWCU = x.Layout, x.Rewrites.Move.MeanWCU
		}
	}
	said := 0
	for _, e := range rep.Ranking {
		if strings.Contains(e.Why, "the most of the layouts") {
			said++
			if e.Layout != most || !strings.Contains(e.Why, num(mostWCU)+" WCU on average") {
				t.Errorf("%s is said to cost the most WCU a move (%q), but the table's most is %s with %s WCU", e.Layout, e.Why, most, num(mostWCU))
			}
		}
	}
	row := regexp.MustCompile(`<td>` + regexp.QuoteMeta(most) + `</td><td>move a subtree</td>(?:<td>[^<]*</td>){4}<td>([^<]*)</td>`).FindStringSubmatch(dom)
	if said != 1 || row == nil || row[1] != num(mostWCU)+" WCU" {
		t.Errorf("the text names the most expensive move %d times; the table's row: %v (want %s WCU)", said, row, num(mostWCU))
	}
	// Lines on each other are told apart: a dash pattern of their own and
	// a marker at every point, and a chart of each layout against the pick.
	for _, id := range []string{"by-scale", "by-reads"} {
		fig := dom[strings.Index(dom, `id="`+id+`"`):]
		fig = fig[:strings.Index(fig, "</figure>")]
		seen := map[string]bool{}
		for _, p := range regexp.MustCompile(`<path [^>]*>`).FindAllString(fig, -1) {
			d := regexp.MustCompile(`stroke-dasharray="([^"]*)"`).FindStringSubmatch(p)
			key := ""
			if d != nil {
				key = d[1]
			}
			if seen[key] {
				t.Errorf("%s: two lines share the dash pattern %q", id, key)
			}
			seen[key] = true
		}
		points := len(rep.Curves.ByScale)
		if id == "by-reads" {
			points = len(rep.Curves.ByReads)
		}
		if n := strings.Count(fig, `class="mk"`); n < points*len(rep.Layouts) {
			t.Errorf("%s: %d markers, want one per layout and point (%d)", id, n, points*len(rep.Layouts))
		}
	}
	rel := dom[strings.Index(dom, `id="relative"`):]
	rel = rel[:strings.Index(rel, "</figure>")]
	for _, want := range []string{"divided by " + rep.Ranking[0].Layout, "this workload", "1×", "break-even with " + rep.Ranking[1].Layout} {
		if !strings.Contains(rel, want) {
			t.Errorf("the ratio chart lacks %q", want)
		}
	}
	// Bars: linear, and every figure says which size it is of.
	at, here := atScale(rep), thisFile(rep)
	for _, c := range regexp.MustCompile(`<figure class="chart"><figcaption>([^<]*)</figcaption>`).FindAllStringSubmatch(dom, -1) {
		title := c[1]
		if strings.Contains(title, "log scale") {
			t.Errorf("a bar chart on a log scale: %q", title)
		}
		if !strings.Contains(title, htmlEscape(at)) && !strings.Contains(title, htmlEscape(here)) && !strings.Contains(title, "any size") && !strings.Contains(title, "Latency") {
			t.Errorf("%q does not say whether it is this file's or at the scale", title)
		}
	}
	for _, h := range regexp.MustCompile(`<th>([^<]*)</th>`).FindAllStringSubmatch(dom, -1) {
		if (strings.Contains(h[1], "on-demand") || strings.Contains(h[1], "ImportTable") || strings.Contains(h[1], "/month")) && !strings.Contains(h[1], at) {
			t.Errorf("column %q is projected but does not say so", h[1])
		}
		if strings.HasPrefix(h[1], "WCU to load") && !strings.Contains(h[1], here) {
			t.Errorf("column %q is this file's but does not say so", h[1])
		}
	}
}

// htmlEscape escapes text as Chromium's DOM serializer does in a text node.
func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\u00a0", "&nbsp;").Replace(s)
}

// inked counts the pixels that differ from the most common one (the
// background) and the distinct colours.
func inked(img image.Image) (int, int) {
	counts := map[uint32]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			counts[(r>>8)<<16|(g>>8)<<8|bl>>8]++
		}
	}
	top := 0
	for _, n := range counts {
		top = max(top, n)
	}
	return b.Dx()*b.Dy() - top, len(counts)
}

func hasColour(img image.Image, hex string) bool {
	var want [3]uint32
	for i := range want {
		var v uint32
		for _, c := range hex[1+2*i : 3+2*i] {
			v *= 16
			switch {
			case c >= '0' && c <= '9':
				v += uint32(c - '0')
			default:
				v += uint32(c-'a') + 10
			}
		}
		want[i] = v
	}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r>>8, want[0]) && near(g>>8, want[1]) && near(bl>>8, want[2]) {
				return true
			}
		}
	}
	return false
}

func near(a, b uint32) bool { return a+3 >= b && b+3 >= a }

// TestChartTiesAreNotWins: a chart stars the best only when no other
// layout ties it, and a latency chart stars nothing.
func TestChartTiesAreNotWins(t *testing.T) {
	rep := &Report{Layouts: []*Result{{Layout: "a"}, {Layout: "b"}, {Layout: "c"}}}
	vals := map[string]float64{}
	m := metric{"x", "RCU", func(x *Result) float64 { return vals[x.Layout] }, func(v float64) string { return num(v) + " RCU" }, true}
	draw := func(stars bool) string {
		var b strings.Builder
		chart(&b, rep, m, stars)
		return b.String()
	}
	vals = map[string]float64{"a": 1, "b": 1.002, "c": 3}
	if strings.Contains(draw(true), "★") {
		t.Error("a tie within 0.5% is starred")
	}
	vals = map[string]float64{"a": 1, "b": 1.2, "c": 3}
	if got := strings.Count(draw(true), "★"); got != 1 {
		t.Errorf("%d stars for a clear best, want 1", got)
	}
	if strings.Contains(draw(false), "★") {
		t.Error("a chart that ranks nothing is starred")
	}
	// Bars are linear from zero: 30 times the value is 30 times the bar
	// (a log scale drew 30× as 2×).
	vals = map[string]float64{"a": 1, "b": 2, "c": 30}
	svg := draw(true)
	widths := regexp.MustCompile(`<rect [^>]*width="([0-9.]+)"`).FindAllStringSubmatch(svg, -1)
	if len(widths) != 3 || strings.Contains(svg, "log scale") {
		t.Fatalf("bars: %v\n%s", widths, svg)
	}
	b, _ := strconv.ParseFloat(widths[1][1], 64)
	c, _ := strconv.ParseFloat(widths[2][1], 64)
	if ratio := c / b; ratio < 14.5 || ratio > 15.5 {
		t.Errorf("a bar of 30 is %.1f times a bar of 2, want 15", ratio)
	}
}
