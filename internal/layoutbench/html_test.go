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
	charts := len(metrics(rep)) + 2 // and the two curves
	if got := strings.Count(dom, "<svg"); got != charts || charts < 10 {
		t.Errorf("the rendered page has %d charts, want %d (one per metric and two curves)", got, charts)
	}
	best := rep.Ranking[0]
	for _, want := range []string{"Recommendation", "For this workload: <span class=\"pick\">" + best.Layout + "</span>", htmlEscape(marginText(rep)),
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
	vals = map[string]float64{"a": 1, "b": 2, "c": 1000}
	if !strings.Contains(draw(true), "(log scale)") {
		t.Error("an outlier 1000 times the least does not switch to a log scale")
	}
}
