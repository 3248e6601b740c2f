package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/treeport/treeport/layouts"
)

// writeCycles writes a CSV of a good tree and of 150 cycles of 2 to 60
// members (a cycle over 21 has its problem count the ids it leaves out),
// with trees below them at several depths holding ids with the path
// delimiter, ids over DynamoDB's key limits, duplicate ids and links
// (link_to) below the cycles: about 9,000 nodes in or below cycles,
// some 300 KB of the passes' records, well over what the import's
// passes read into memory in --memory 1MiB (64 KiB), so resolved by the
// sorted passes (importer/ooccycles).
func writeCycles(t *testing.T) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(27, 11))
	type row struct{ id, parent, link string }
	rows := []row{{"root", "", ""}}
	for k := range 40 {
		rows = append(rows, row{fmt.Sprintf("g%d", k), "root", ""})
	}
	var below []string
	for c := range 150 {
		n := []int{2, 3, 25, 60, 1 + rng.IntN(30)}[c%5]
		ids := make([]string, n)
		for k := range ids {
			ids[k] = fmt.Sprintf("c%d-%d", c, k)
		}
		for k, id := range ids {
			rows = append(rows, row{id, ids[(k+1)%n], ""})
		}
		for range 1 + rng.IntN(3) {
			prev := ids[rng.IntN(n)]
			for d := range 1 + rng.IntN(40) {
				id := fmt.Sprintf("b%d-%d-%d", c, len(rows), d)
				switch rng.IntN(40) {
				case 0:
					id = fmt.Sprintf("d|%d-%d", c, len(rows))
				case 1:
					id = fmt.Sprintf("long%d-%d-%s", c, len(rows), strings.Repeat("x", 1100))
				}
				link := ""
				if rng.IntN(8) == 0 {
					link = []string{"g3", "missing", ids[0], "root"}[rng.IntN(4)]
					if len(below) > 0 && rng.IntN(2) == 0 {
						link = below[rng.IntN(len(below))]
					}
				}
				rows = append(rows, row{id, prev, link})
				below = append(below, id)
				if rng.IntN(4) == 0 {
					rows = append(rows, row{id + "-leaf", id, ""})
				}
				prev = id
			}
		}
		if c%7 == 3 {
			rows = append(rows, row{ids[0], "g1", ""}) // a member's id twice
		}
		if c%9 == 4 {
			rows = append(rows, row{below[len(below)-1], ids[n-1], ""}) // a duplicate below
		}
	}
	rng.Shuffle(len(rows), func(a, b int) { rows[a], rows[b] = rows[b], rows[a] })
	var b bytes.Buffer
	b.WriteString("id,parent_id,link_to\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%s,%s,%s\n", r.id, r.parent, r.link)
	}
	in := filepath.Join(t.TempDir(), "cycles.csv")
	if err := os.WriteFile(in, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return in
}

// TestOutOfCoreCyclesMatchInMemory: import of many cycles, long ones,
// and what hangs below them, out of core in --memory 1MiB (the nodes in
// or below cycles resolved by sorted passes), in every layout, says the
// same as in memory: under --on-invalid fail the exit code and every
// problem line; under skip the same files byte for byte and the same
// rejects, whole and in each --shard; and the dry run prints the same.
func TestOutOfCoreCyclesMatchInMemory(t *testing.T) {
	in := writeCycles(t)
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, tmp := t.TempDir(), t.TempDir()
			args := []string{"import", "--in", in, "--layout", name, "--items-per-file", "50", "--no-progress"}
			_, memErr, memCode := run(t, nil, append(args, "--out", filepath.Join(out, "mem"))...)
			_, oocErr, oocCode := run(t, nil, append(append(args, "--out", filepath.Join(out, "ooc")), oocArgs(tmp)...)...)
			if memCode != 2 || oocCode != memCode {
				t.Fatalf("exit %d out of core, %d in memory, want 2\n%s\n%s", oocCode, memCode, oocErr, memErr)
			}
			want, got := problemLines(memErr, in), problemLines(oocErr, in)
			if len(want) < 100 || !strings.Contains(strings.Join(want, "\n"), "more) → ") {
				t.Fatalf("only %d problems in memory, or no long cycle:\n%s", len(want), memErr)
			}
			if !slices.Equal(got, want) || progressLine.ReplaceAllString(oocErr, "") != progressLine.ReplaceAllString(memErr, "") {
				t.Errorf("out of core:\n%s\nin memory:\n%s", oocErr, memErr)
			}
			dry := append(slices.Clone(args[1:]), "--on-invalid=skip", "--rejects", filepath.Join(out, "dry-rejects"))
			if _, stderr, code := sameDryRun(t, dry); code != 0 {
				t.Errorf("dry run: exit %d in memory:\n%s", code, stderr)
			}
			shards := []string{""}
			if name == "path" || name == "prefix" {
				shards = append(shards, "0/2", "1/2")
			}
			for _, shard := range shards {
				skip := append(slices.Clone(args), "--on-invalid=skip")
				if shard != "" {
					skip = append(skip, "--shard", shard)
				}
				label := strings.ReplaceAll("skip"+shard, "/", "of")
				memDir, oocDir := filepath.Join(out, label+"-mem"), filepath.Join(out, label+"-ooc")
				_, memErr, code := run(t, nil, append(skip, "--out", memDir, "--rejects", memDir+"-rejects")...)
				if code != 0 {
					t.Fatalf("%s in memory: exit %d\n%s", label, code, memErr)
				}
				_, oocErr, code := run(t, nil, append(append(skip, "--out", oocDir, "--rejects", oocDir+"-rejects"), oocArgs(tmp)...)...)
				if code != 0 {
					t.Fatalf("%s out of core: exit %d\n%s", label, code, oocErr)
				}
				if progressLine.ReplaceAllString(strings.ReplaceAll(oocErr, oocDir, memDir), "") != progressLine.ReplaceAllString(memErr, "") {
					t.Errorf("%s: out of core:\n%s\nin memory:\n%s", label, oocErr, memErr)
				}
				sameFiles(t, memDir, oocDir)
				suffix := "" // a shard's rejects file is its own
				if shard != "" {
					suffix = ".shard-" + strings.Replace(shard, "/", "-of-", 1)
				}
				if got, want := readFile(t, oocDir+"-rejects"+suffix), readFile(t, memDir+"-rejects"+suffix); got != want || strings.Count(want, "\n") < 8000 {
					t.Errorf("%s: %d rejects out of core, %d in memory, not the same", label, strings.Count(got, "\n"), strings.Count(want, "\n"))
				}
			}
			emptyDir(t, tmp)
		})
	}
}

// writeOneCycle writes a CSV of a root and one cycle of cycle nodes with
// a chain of below/2 nodes and a bush of below/2 hanging below it.
func writeOneCycle(t *testing.T, cycle, below int) string {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("id,parent_id\nroot,\n")
	for k := range cycle {
		fmt.Fprintf(&b, "c%07d,c%07d\n", k, (k+1)%cycle)
	}
	for k := range below {
		parent := fmt.Sprintf("b%07d", k-1)
		switch {
		case k == 0:
			parent = fmt.Sprintf("c%07d", cycle/2)
		case k >= below/2:
			parent = fmt.Sprintf("b%07d", (k*7919)%k)
		}
		fmt.Fprintf(&b, "b%07d,%s\n", k, parent)
	}
	in := filepath.Join(t.TempDir(), "cycle.csv")
	if err := os.WriteFile(in, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return in
}

// TestOutOfCoreCyclePeakMemory: the peak resident memory of an import's
// dry run out of core in --memory 1MiB does not grow with a cycle and
// what hangs below it: one cycle of 200,000 nodes with 50,000 below
// adds a few MiB at most to one of 20,000 with 5,000 below (the pass
// that read them into memory held some 250 bytes a node: about 55 MB
// more; measured: 28 and 29 MiB with 300,000 and 100,000).
// The problem names the cycle's first 20 ids and counts the others.
func TestOutOfCoreCyclePeakMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a dry run of 250,000 nodes")
	}
	peak := func(in string) (string, int64) {
		args := []string{"import", "--in", in, "--layout", "adjacency", "--dry-run", "--no-progress", "--on-invalid=skip",
			"--tmp-dir", t.TempDir(), "--memory", "1MiB", "--force-out-of-core"}
		stdout, stderr, code, p := runPeak(t, args...)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, stderr)
		}
		return stdout + stderr, p
	}
	_, small := peak(writeOneCycle(t, 20_000, 5_000))
	out, large := peak(writeOneCycle(t, 200_000, 50_000))
	if !strings.Contains(out, `cycle: "c0000000" → "c0000001" → `) || !strings.Contains(out, "… (199980 more) → \"c0000000\"") ||
		!regexp.MustCompile(`(?m)^  adjacency .* 250,000$`).MatchString(out) {
		t.Errorf("the cycle and the nodes rejected are not reported as in memory:\n%s", out)
	}
	t.Logf("peak RSS, 25,000 then 250,000 nodes in or below a cycle: %d, %d MiB", small, large)
	if large-small > 8 {
		t.Errorf("the peak grew by %d MiB with 225,000 more nodes in or below a cycle; want a few MiB at most", large-small)
	}
}
