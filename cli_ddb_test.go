package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/testserver/faultproxy"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
)

// awsEnv is what the CLI needs to talk to DynamoDB Local.
func awsEnv(endpoint string) []string {
	return []string{"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_REGION=us-east-1",
		"TREEPORT_ENDPOINT_URL=" + endpoint}
}

// expectedItems builds the items the layout should hold for an input, in
// process, through the same pipeline as the CLI but without DynamoDB.
func expectedItems(t *testing.T, in string, types string, l layouts.Layout) []layouts.Item {
	t.Helper()
	opts := records.SourceOptions{}
	if types != "" {
		tm, err := records.ParseTypes(types)
		if err != nil {
			t.Fatal(err)
		}
		opts.Types = tm
	}
	input, err := importer.ReadInput(context.Background(), importer.InputOptions{Path: in, Source: opts})
	if err != nil {
		t.Fatal(err)
	}
	if p := input.CheckLayout(l); len(p) > 0 {
		t.Fatalf("fixture %s invalid for %s: %v", in, l.Name(), p[0])
	}
	var items []layouts.Item
	if _, err := input.Emit(context.Background(), importer.EmitOptions{Layout: l}, func(_ int64, it layouts.Item) error {
		items = append(items, it)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return items
}

// scanTable reads a whole table.
func scanTable(t *testing.T, client *dynamodb.Client, table string) []layouts.Item {
	t.Helper()
	var items []layouts.Item
	p := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("scan %s: %v", table, err)
		}
		items = append(items, out.Items...)
	}
	return items
}

// canonical renders items as sorted DynamoDB JSON lines, with numbers in a
// canonical form, since DynamoDB normalizes the text of numbers ("1.50" is
// stored as "1.5").
func canonical(t *testing.T, items []layouts.Item) []string {
	t.Helper()
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, string(ddbjson.AppendItem(nil, normalizeItem(it))))
	}
	sort.Strings(out)
	return out
}

func normalizeItem(item layouts.Item) layouts.Item {
	n := make(layouts.Item, len(item))
	for k, v := range item {
		n[k] = normalizeValue(v)
	}
	return n
}

func normalizeValue(v types.AttributeValue) types.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberN:
		r, ok := new(big.Rat).SetString(v.Value)
		if !ok {
			return v
		}
		return &types.AttributeValueMemberN{Value: r.RatString()}
	case *types.AttributeValueMemberL:
		l := make([]types.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = normalizeValue(e)
		}
		return &types.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberM:
		return &types.AttributeValueMemberM{Value: normalizeItem(v.Value)}
	}
	return v
}

func diffLines(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("table has %d items, want %d", len(got), len(want))
	}
	gs := map[string]bool{}
	for _, g := range got {
		gs[g] = true
	}
	ws := map[string]bool{}
	shown := 0
	for _, w := range want {
		ws[w] = true
		if !gs[w] && shown < 3 {
			t.Errorf("missing item %s", w)
			shown++
		}
	}
	shown = 0
	for _, g := range got {
		if !ws[g] && shown < 3 {
			t.Errorf("unexpected item %s", g)
			shown++
		}
	}
}

// TestImportEveryLayoutEveryFixture loads every fixture in every layout with
// the CLI and checks that a Scan of the table equals the expected items
// exactly.
func TestImportEveryLayoutEveryFixture(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	for _, fx := range []string{"cars", "folders", "org"} {
		for _, format := range []string{"json", "csv", "parquet"} {
			for _, name := range layouts.Names() {
				t.Run(fx+"."+format+"/"+name, func(t *testing.T) {
					t.Parallel()
					in := filepath.Join("fixtures", fx+"."+format)
					typesFlag := ""
					if format == "csv" {
						b, err := os.ReadFile(filepath.Join("fixtures", fx+".types"))
						if err != nil {
							t.Fatal(err)
						}
						typesFlag = strings.TrimSpace(string(b))
					}
					l, err := layouts.New(name, layouts.Options{})
					if err != nil {
						t.Fatal(err)
					}
					table := ddblocal.TableName(t)
					t.Cleanup(func() {
						client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
					})
					args := []string{"import", "--in", in, "--layout", name, "--table", table, "--create-table", "--concurrency", "4"}
					if typesFlag != "" {
						args = append(args, "--types", typesFlag)
					}
					report := filepath.Join(t.TempDir(), "report.json")
					args = append(args, "--report", report)
					_, stderr, code := run(t, awsEnv(endpoint), args...)
					if code != 0 {
						t.Fatalf("exit %d:\n%s", code, stderr)
					}
					want := expectedItems(t, in, typesFlag, l)
					diffLines(t, canonical(t, scanTable(t, client, table)), canonical(t, want))

					var rep struct {
						Writer struct {
							Items       int64   `json:"items"`
							ConsumedWCU float64 `json:"consumed_wcu"`
							ComputedWCU int64   `json:"computed_wcu"`
						} `json:"writer"`
					}
					b, err := os.ReadFile(report)
					if err != nil {
						t.Fatal(err)
					}
					if err := json.Unmarshal(b, &rep); err != nil {
						t.Fatal(err)
					}
					if rep.Writer.Items != int64(len(want)) || rep.Writer.ConsumedWCU <= 0 {
						t.Errorf("report: %s", b)
					}
				})
			}
		}
	}
}

// TestImportRefusesWrongSchema checks that a table whose keys are not the
// layout's is refused before any write, with exit 2.
func TestImportRefusesWrongSchema(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	closure, _ := layouts.New("closure", layouts.Options{})
	table := ddblocal.NewTable(t, client, closure.Table())
	_, stderr, code := run(t, awsEnv(endpoint), "import", "--in", "fixtures/cars.json", "--layout", "path", "--table", table)
	if code != 2 {
		t.Fatalf("exit %d, want 2:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "does not match") {
		t.Errorf("stderr does not say what is wrong:\n%s", stderr)
	}
	if items := scanTable(t, client, table); len(items) != 0 {
		t.Errorf("%d items were written", len(items))
	}
}

// genInput writes a gen forest for the resume tests.
func genInput(t *testing.T, nodes int) string {
	t.Helper()
	in := filepath.Join(t.TempDir(), "in.jsonl")
	if _, stderr, code := run(t, nil, "gen", "--nodes", fmt.Sprint(nodes), "--shape", "random", "--seed", "3", "--out", in); code != 0 {
		t.Fatalf("gen: %s", stderr)
	}
	return in
}

// TestKillAndResume kills imports with SIGKILL at random points and resumes
// them from their checkpoint: the table ends exact, and the work redone is
// bounded by the writer's in-flight window.
func TestKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: kills and resumes a load many times (42 s under -race)")
	}
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	proxy, err := faultproxy.New(faultproxy.Config{Target: endpoint, Seed: 1, Lifetime: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	const nodes = 3500
	in := genInput(t, nodes)
	l, _ := layouts.New("closure", layouts.Options{})
	want := expectedItems(t, in, "", l)
	table := ddblocal.NewTable(t, client, l.Table())
	ck := filepath.Join(t.TempDir(), "ck.json")
	const concurrency = 4
	args := []string{"import", "--in", in, "--layout", "closure", "--table", table, "--checkpoint", ck,
		"--concurrency", fmt.Sprint(concurrency), "--max-wcu", "4000", "--no-progress"}
	report := filepath.Join(t.TempDir(), "report.json")
	args = append(args, "--report", report)
	kills, atMost, _ := killRuns(t, args, proxy.URL(), 5, func(rng *rand.Rand) time.Duration {
		return time.Duration(400+rng.IntN(1500)) * time.Millisecond
	})
	if kills == 0 {
		t.Fatal("no run was killed: the test proves nothing (make the load slower)")
	}
	diffLines(t, canonical(t, scanTable(t, client, table)), canonical(t, want))
	// Redone work: every accepted item beyond the table's is a rewrite. The
	// checkpoint's journal holds every advance of the watermark, so a kill
	// loses no acknowledged progress: each may redo only the items in the
	// writer's window (2 × (workers + buffered batches + 1) × 25), and what
	// the resumed runs said they may write again bounds what they did.
	c := proxy.Counts()
	redone := c.AcceptedItems - int64(len(want))
	window := int64(2 * (concurrency + concurrency + 1) * 25)
	bound := int64(kills) * window
	t.Logf("%d kills, %d items accepted for %d in the table: %d redone (bound %d; the runs said at most %d)", kills, c.AcceptedItems, len(want), redone, bound, atMost)
	if redone > bound {
		t.Errorf("redone %d items after %d kills, more than the bound %d", redone, kills, bound)
	}
	if redone > atMost {
		t.Errorf("redone %d items, but the resumed runs said at most %d", redone, atMost)
	}
	var rep struct {
		Redone *int64 `json:"items_redone_at_most"`
	}
	if err := json.Unmarshal([]byte(readFile(t, report)), &rep); err != nil || rep.Redone == nil || *rep.Redone > window {
		t.Errorf("report: items_redone_at_most %v (%v), want at most %d", rep.Redone, err, window)
	}
}

// killRuns runs the CLI with args against endpoint: killed runs with
// SIGKILL after a random time (killAfter), then one left to finish. It
// returns the kills, the sum of what the resumed runs said they may write
// again, and what each run wrote to stderr.
func killRuns(t *testing.T, args []string, endpoint string, killed int, killAfter func(*rand.Rand) time.Duration) (int, int64, []string) {
	t.Helper()
	return killRunsFrom(t, args, endpoint, killed, killAfter, "", nil)
}

// killRunsFrom is killRuns whose first run, when first is not nil, is
// killed as soon as first holds of what it wrote to stderr (asked every
// 5 ms), not after a random time: a point the test must kill at, which a
// timer misses on a loaded machine (too early) or a fast one (too late).
// The test fails when that run ends before; waitingFor says what first
// waits for.
func killRunsFrom(t *testing.T, args []string, endpoint string, killed int, killAfter func(*rand.Rand) time.Duration,
	waitingFor string, first func(stderr string) bool) (int, int64, []string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	kills := 0
	finished := false
	atMost := int64(0) // what the resumed runs said they may write again
	sayRe := regexp.MustCompile(`at most (\d+) items are written again`)
	var outs []string
	for attempt := 0; attempt <= killed && !finished; attempt++ {
		r := startRun(t, awsEnv(endpoint), args)
		var kill <-chan time.Time
		switch {
		case attempt == 0 && first != nil:
			r.until(t, waitingFor, func() bool { return first(r.stderr.String()) })
			kill = time.After(0)
		case attempt < killed:
			kill = time.After(killAfter(rng))
		}
		select {
		case err := <-r.done:
			if err != nil {
				t.Fatalf("run %d: %v\n%s", attempt, err, r.stderr.String())
			}
			finished = true
		case <-kill:
			r.cmd.Process.Signal(syscall.SIGKILL)
			<-r.done
			kills++
		}
		out := r.stderr.String()
		outs = append(outs, out)
		if m := sayRe.FindStringSubmatch(out); m != nil {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			atMost += n
		}
	}
	return kills, atMost, outs
}

// TestKillAndResumeHeldItems kills imports while items held for a hot key
// wait in the held spool, and resumes them. In closure, one random tree's
// root is the AncestorId of a row of every node, and its first children of
// many more: through a proxy that gives each key 100 WCU/s, those keys
// need more than that on average, and their held items move to the spool
// (PATH.held) so that the other keys flow. Every kill must lose none of
// them, and the runs must write again no more than they say.
func TestKillAndResumeHeldItems(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: kills and resumes a hot-key load (13 s under -race)")
	}
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	l, _ := layouts.New("closure", layouts.Options{})
	table := ddblocal.NewTable(t, client, l.Table())
	proxy, err := faultproxy.New(faultproxy.Config{Target: endpoint, Operations: []string{"BatchWriteItem"},
		Spec: map[string]layouts.TableSpec{table: l.Table()}, PartitionWCU: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	const nodes = 1200
	in := genInput(t, nodes)
	want := expectedItems(t, in, "", l)
	ck := filepath.Join(t.TempDir(), "ck.json")
	const concurrency = 4
	args := []string{"import", "--in", in, "--layout", "closure", "--table", table, "--checkpoint", ck,
		"--concurrency", fmt.Sprint(concurrency), "--no-progress"}
	// The progress lines say how many items wait, apart from the done.
	lineRe := regexp.MustCompile(`(?m)^treeport: ([\d,]+)/[\d,]+ items, .*, ([\d,]+) held for a hot key, ETA`)
	// The first run is killed once a progress line says items are held
	// (so the spool has some), the others after a random time: killed
	// only at random, all five runs of a loaded machine once died before
	// their first such line (printed every 5 s), and the last finished
	// too soon to print one.
	kills, atMost, outs := killRunsFrom(t, args, proxy.URL(), 5, func(rng *rand.Rand) time.Duration {
		return time.Duration(1000+rng.IntN(2000)) * time.Millisecond
	}, "a progress line with items held for a hot key", func(stderr string) bool {
		for _, m := range lineRe.FindAllStringSubmatch(stderr, -1) {
			if m[2] != "0" {
				return true
			}
		}
		return false
	})
	// The resumed runs that found held items in the spool say so.
	heldRe := regexp.MustCompile(`(\d+) of them were held for a hot key and not written yet`)
	spooled := 0
	for _, out := range outs {
		if m := heldRe.FindStringSubmatch(out); m != nil {
			spooled++
			t.Logf("a resumed run: %s", m[0])
		}
	}
	if kills == 0 || spooled == 0 {
		t.Fatalf("%d runs killed, %d with items in the held spool: the test proves nothing", kills, spooled)
	}
	lines := 0
	for _, out := range outs {
		for _, m := range lineRe.FindAllStringSubmatch(out, -1) {
			lines++
			done, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
			held, _ := strconv.Atoi(strings.ReplaceAll(m[2], ",", ""))
			if done+held > len(want) {
				t.Errorf("progress line %q: %d done and %d held, of %d items", m[0], done, held, len(want))
			}
		}
	}
	if lines == 0 {
		t.Errorf("no progress line said how many items were held for a hot key:\n%s", strings.Join(outs, "\n"))
	}
	if _, err := os.Stat(ck + ".held"); !os.IsNotExist(err) {
		t.Errorf("the held spool is still there after the run finished (%v)", err)
	}
	diffLines(t, canonical(t, scanTable(t, client, table)), canonical(t, want))
	c := proxy.Counts()
	redone := c.AcceptedItems - int64(len(want))
	window := int64(2 * (concurrency + concurrency + 1) * 25)
	bound := int64(kills) * (window + window/4)
	t.Logf("%d kills (%d with held items spooled), %d items accepted for %d in the table: %d redone (bound %d; the runs said at most %d); %d key-range refusals",
		kills, spooled, c.AcceptedItems, len(want), redone, bound, atMost, c.KeyRangeItems)
	if redone > bound {
		t.Errorf("redone %d items after %d kills, more than the bound %d", redone, kills, bound)
	}
	if redone > atMost {
		t.Errorf("redone %d items, but the resumed runs said at most %d", redone, atMost)
	}
}

// TestInterruptLeavesHeldItems: Ctrl-C while items wait for a hot key in
// the held spool does not wait for the key's pace: the run exits 130 soon,
// says how many items the spool keeps, and the rerun writes them first and
// finishes the table exactly, with the spool gone.
func TestInterruptLeavesHeldItems(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a hot key paced at its partition rate (25 s under -race)")
	}
	// The root's ByAncestor partition takes about a seventh of the items:
	// at 100 WCU/s a loaded machine never made it hot (no throttle,
	// nothing held); at 50 it does.
	const hotRate = 50
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	l, _ := layouts.New("closure", layouts.Options{})
	table := ddblocal.NewTable(t, client, l.Table())
	proxy, err := faultproxy.New(faultproxy.Config{Target: endpoint, Operations: []string{"BatchWriteItem"},
		Spec: map[string]layouts.TableSpec{table: l.Table()}, PartitionWCU: hotRate})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	in := genInput(t, 1200)
	want := expectedItems(t, in, "", l)
	ck := filepath.Join(t.TempDir(), "ck.json")
	args := []string{"import", "--in", in, "--layout", "closure", "--table", table, "--checkpoint", ck, "--concurrency", "4", "--no-progress"}
	// Interrupt once items wait in the held spool, which the writer makes
	// when the hot key's items would fill its window: a fixed 2.5 s was
	// too early on a loaded machine (no throttle yet, nothing held), and
	// the test failed 3 times in 3 there.
	stderr, took := interruptWhen(t, awsEnv(proxy.URL()), args, "item held for the hot key in "+ck+".held", func(string) bool {
		fi, err := os.Stat(ck + ".held")
		return err == nil && fi.Size() > 0
	})
	m := regexp.MustCompile(`\((\d+) of them held for a hot key in (\S+): the run that resumes writes them first\)`).FindStringSubmatch(stderr)
	if m == nil || m[2] != ck+".held" {
		t.Fatalf("the interrupted run does not say it left items in the held spool:\n%s", stderr)
	}
	left, _ := strconv.Atoi(m[1])
	// The spooled items go at hotRate WCU/s at most; waiting for them
	// would take left/hotRate seconds.
	t.Logf("stopped %v after SIGINT, %d items left in the spool", took.Round(time.Millisecond), left)
	if took > 2*time.Second && took > time.Duration(left)*time.Second/(2*hotRate) {
		t.Errorf("the run took %v to stop: it wrote the spooled items instead of leaving them", took)
	}
	saved, err := ddbwrite.LoadCheckpoint(ck)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Held() != int64(left) {
		t.Errorf("the checkpoint's spool holds %d items, the run said %d", saved.Held(), left)
	}
	out, msg, code := run(t, awsEnv(proxy.URL()), args...)
	if code != 0 {
		t.Fatalf("resume: exit %d:\n%s", code, msg)
	}
	if !strings.Contains(msg, fmt.Sprintf("%d of them were held for a hot key and not written yet", left)) {
		t.Errorf("the resumed run does not say it writes the held items first:\n%s", msg)
	}
	// The counts add up: what this run wrote (the held items included)
	// and what it skipped are every item, once.
	var wrote, skipped, replayed int
	for _, f := range []struct {
		re string
		n  *int
	}{{`loaded ([\d,]+) items?`, &wrote}, {`([\d,]+) items? acknowledged by an earlier run and skipped`, &skipped},
		{`([\d,]+) items? held for a hot key by an earlier run written by this one`, &replayed}} {
		if m := regexp.MustCompile(f.re).FindStringSubmatch(out); m != nil {
			*f.n, _ = strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
		}
	}
	if wrote+skipped != len(want) || replayed != left {
		t.Errorf("the rerun says it wrote %d items (%d of them held) and skipped %d; want %d in all, %d held:\n%s", wrote, replayed, skipped, len(want), left, out)
	}
	if _, err := os.Stat(ck + ".held"); !os.IsNotExist(err) {
		t.Errorf("the held spool is still there after the run finished (%v)", err)
	}
	diffLines(t, canonical(t, scanTable(t, client, table)), canonical(t, want))
}

// TestInterruptSavesCheckpoint sends SIGINT: the run exits 130 with its
// checkpoint saved, and a rerun finishes the table exactly.
func TestInterruptSavesCheckpoint(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	in := genInput(t, 4000)
	l, _ := layouts.New("path", layouts.Options{})
	want := expectedItems(t, in, "", l)
	table := ddblocal.NewTable(t, client, l.Table())
	ck := filepath.Join(t.TempDir(), "ck.json")
	args := []string{"import", "--in", in, "--layout", "path", "--table", table, "--checkpoint", ck, "--max-wcu", "3000", "--no-progress"}
	interruptWhen(t, awsEnv(endpoint), args, "progress in the checkpoint", checkpointMoved(ck))
	saved, err := ddbwrite.LoadCheckpoint(ck)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Done || saved.Watermark <= 0 || saved.Watermark >= int64(len(want)) {
		t.Fatalf("checkpoint after SIGINT: %+v (of %d items)", saved, len(want))
	}
	// What the checkpoint says is acknowledged is in the table.
	if got := len(scanTable(t, client, table)); int64(got) < saved.Watermark {
		t.Fatalf("table has %d items, checkpoint says %d acknowledged", got, saved.Watermark)
	}
	// A different input is refused with a clear message.
	other := genInput(t, 10)
	_, msg, code := run(t, awsEnv(endpoint), "import", "--in", other, "--layout", "path", "--table", table, "--checkpoint", ck)
	if code != 2 || !strings.Contains(msg, "different input or different flags") {
		t.Fatalf("resume with another input: exit %d:\n%s", code, msg)
	}
	_, msg, code = run(t, awsEnv(endpoint), append(args[:len(args)-3], "--no-progress")...)
	if code != 0 {
		t.Fatalf("resume: exit %d:\n%s", code, msg)
	}
	if !strings.Contains(msg, "resuming from checkpoint") {
		t.Errorf("resume did not say it resumed:\n%s", msg)
	}
	diffLines(t, canonical(t, scanTable(t, client, table)), canonical(t, want))
}

// TestNoProgressKeepsLogLines: without a terminal, --no-progress drops the
// bar only: the log line that says how a write goes still comes (SPEC §5:
// "without a terminal, a plain log line every few seconds"), so that a CI
// log is not silent for minutes.
func TestNoProgressKeepsLogLines(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	in := genInput(t, 500)
	l, _ := layouts.New("path", layouts.Options{})
	table := ddblocal.NewTable(t, client, l.Table())
	_, stderr, code := run(t, awsEnv(endpoint), "import", "--in", in, "--layout", "path", "--table", table, "--no-progress")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	if !regexp.MustCompile(`(?m)^treeport: [\d,]+/[\d,]+ items, [\d,]+ items/s, [\d,]+ WCU/s`).MatchString(stderr) {
		t.Errorf("no progress log line with --no-progress:\n%s", stderr)
	}
}
