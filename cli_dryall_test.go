package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOutOfCoreDryRunAllMatchesInMemory: import --dry-run --layout all of
// every fixture (fixtures/bad too), of generated forests (random and
// shuffled, a deep chain in random order, path ids with --path-ids), and
// of those with defects, prints out of core (forced, in a 1 MiB budget:
// each layout planned in passes of its own) exactly what it prints in
// memory: stdout, with and without --json, stderr and the exit code; and
// leaves nothing in --tmp-dir.
func TestOutOfCoreDryRunAllMatchesInMemory(t *testing.T) {
	inputs := [][]string{
		{"fixtures/cars.csv", "--types", strings.TrimSpace(readFile(t, "fixtures/cars.types"))},
		{genShuffled(t, 3000, "csv")},
		{genShaped(t, 2500, "deep", true)},
		{genShaped(t, 2000, "forest", false)},
		// The same delimiter for every layout: prefix's default is ¦.
		{genPathIDs(t, 2000, "|"), "--path-ids", "--delimiter", "|"},
		// Its ids with the other layouts' delimiter: every layout but
		// prefix rejects them.
		{genPathIDs(t, 500, "¦"), "--path-ids"},
	}
	// A random forest with defects: a missing parent, a cycle, a
	// duplicate id and a key over DynamoDB's limit, deep in the input.
	bad := filepath.Join(t.TempDir(), "defects.csv")
	lines := strings.Split(strings.TrimSuffix(readFile(t, genShuffled(t, 1500, "csv")), "\n"), "\n")
	var header []string
	header, lines = lines[:1], lines[1:]
	first := strings.SplitN(lines[0], ",", 2)[0]
	cols := strings.Count(header[0], ",")
	pad := strings.Repeat(",", cols-1)
	lines = append(lines[:700], append([]string{
		"orphan,nowhere" + pad, "cy1,cy2" + pad, "cy2,cy1" + pad, first + "," + pad,
		strings.Repeat("k", 1500) + "," + first + pad,
	}, lines[700:]...)...)
	if err := os.WriteFile(bad, []byte(strings.Join(append(header, lines...), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	inputs = append(inputs, []string{bad})
	inputs = withFixtures(t, inputs)
	for k, in := range inputs {
		for _, json := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d-%s/json=%v", k, filepath.Base(in[0]), json), func(t *testing.T) {
				t.Parallel()
				args := append([]string{"--in", in[0], "--layout", "all"}, in[1:]...)
				if json {
					args = append(args, "--json")
				}
				out, stderr, code := sameDryRun(t, args)
				if code == 0 || strings.HasPrefix(in[0], os.TempDir()) {
					for _, name := range []string{"path", "sharded-path", "closure", "prefix", "adjacency"} {
						if !strings.Contains(out, name) {
							t.Errorf("no plan of %s in memory: exit %d\n%s\n%s", name, code, out, stderr)
						}
					}
				}
				if in[0] == bad && !strings.Contains(stderr, "cycle") {
					t.Errorf("the defects are not reported:\n%s", stderr)
				}
			})
		}
	}
}

// genShaped writes a generated forest of gen's shape, shuffled (children
// often before their parents) when shuffle is set.
func genShaped(t *testing.T, nodes int, shape string, shuffle bool) string {
	t.Helper()
	in := filepath.Join(t.TempDir(), shape+".csv")
	args := []string{"gen", "--nodes", fmt.Sprint(nodes), "--shape", shape, "--seed", "7", "--out", in}
	if shuffle {
		args = append(args, "--shuffle")
	}
	if _, stderr, code := run(t, nil, args...); code != 0 {
		t.Fatalf("gen: %s", stderr)
	}
	return in
}

// TestOutOfCoreDryRunAllPeakMemory: the peak resident memory of a dry
// run of every layout out of core (in a forced 4 MiB budget) does not grow
// with the input: a forest ten times larger adds less than a few MiB to
// it (the process's own floor is most of it), where the same dry run in
// memory grows by the forest's skeleton; and both print the same plans.
func TestOutOfCoreDryRunAllPeakMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs dry runs of 220,000 nodes")
	}
	peak := func(in string, ooc bool) (string, int64) {
		args := []string{"import", "--in", in, "--layout", "all", "--dry-run", "--json", "--no-progress", "--tmp-dir", t.TempDir()}
		if ooc {
			args = append(args, "--memory", "4MiB", "--force-out-of-core")
		} else {
			args = append(args, "--memory", "64GiB")
		}
		out, stderr, code, p := runPeak(t, args...)
		if code != 0 || !strings.Contains(out, `"layout": "adjacency"`) {
			t.Fatalf("exit %d:\n%s\n%s", code, out, stderr)
		}
		return out, p
	}
	small, large := genShaped(t, 20_000, "random", false), genShaped(t, 220_000, "random", false)
	_, oocSmall := peak(small, true)
	oocPlans, oocLarge := peak(large, true)
	_, memSmall := peak(small, false)
	memPlans, memLarge := peak(large, false)
	if oocPlans != memPlans {
		t.Errorf("the plans out of core differ from those in memory:\n%s\n%s", oocPlans, memPlans)
	}
	t.Logf("peak RSS, 20,000 then 220,000 nodes: out of core %d, %d MiB; in memory %d, %d MiB", oocSmall, oocLarge, memSmall, memLarge)
	if grew := oocLarge - oocSmall; grew > 6 || 3*grew > memLarge-memSmall {
		t.Errorf("out of core, the peak grew by %d MiB with 200,000 more nodes (in memory: by %d MiB); want a few MiB at most", grew, memLarge-memSmall)
	}
}

// TestOutOfCoreDryRunAllSignal: SIGINT while a dry run of every layout
// out of core is in the passes of a layout after the first (a second
// temporary directory) stops it within a few seconds, exit 130, and
// leaves nothing in --tmp-dir.
func TestOutOfCoreDryRunAllSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: sorts 150,000 nodes")
	}
	in := genShuffled(t, 150_000, "csv")
	tmp := t.TempDir()
	r := startRun(t, nil, append([]string{"import", "--in", in, "--layout", "all", "--dry-run", "--no-progress"}, oocArgs(tmp)...))
	seen := map[string]bool{}
	r.until(t, "second layout's passes", func() bool {
		m, _ := filepath.Glob(filepath.Join(tmp, "treeport-ooc-*"))
		for _, d := range m {
			seen[d] = true
		}
		return len(seen) >= 2
	})
	r.stopsOn(t, syscall.SIGINT, tmp)
}
