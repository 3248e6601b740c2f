package layoutbench

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
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
// screenshot is not blank, and the page holds a chart per metric and the
// recommendation, and fetches nothing.
func TestHTMLInChromium(t *testing.T) {
	browser := chromium(t)
	rep := offline(t, readFixture(t, "cars"), Options{})
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
	charts := len(metrics(rep))
	if got := strings.Count(dom, "<svg"); got != charts || charts < 10 {
		t.Errorf("the rendered page has %d charts, want %d (one per metric)", got, charts)
	}
	best := rep.Ranking[0]
	for _, want := range []string{"Recommendation", "For this read mix: <span class=\"pick\">" + best.Layout + "</span>", htmlEscape(best.Why), "Cost of a million reads of the mix", "<rect"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered page lacks %q", want)
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
