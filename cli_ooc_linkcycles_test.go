package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// linkCycleInput is a JSON Lines input of the prefix layout, in random
// order, with cycles of links: one of 5,000 links (some of them parent
// and child, some with children of their own), 300 small ones, chains of
// links into them, beside bad links (to a missing id, to itself, not a
// string, one whose child is on a cycle) and good chains.
func linkCycleInput(rng *rand.Rand) string {
	var rows []string
	add := func(id, parent, to string) {
		row := fmt.Sprintf(`{"id":%q,"parent_id":%q`, id, parent)
		if to != "" {
			row += fmt.Sprintf(`,"link_to":%q`, to)
		}
		rows = append(rows, row+"}")
	}
	for k := range 100 {
		add(fmt.Sprintf("t%d", k), "r", "")
	}
	parent := func() string { return fmt.Sprintf("t%d", rng.IntN(100)) }
	const long = 5000
	for k := range long {
		p := parent()
		if k%7 == 3 {
			p = fmt.Sprintf("L%d", k-1) // a link of the cycle below another
		}
		add(fmt.Sprintf("L%d", k), p, fmt.Sprintf("L%d", (k+1)%long))
		if k%11 == 0 {
			add(fmt.Sprintf("L%d_leaf", k), fmt.Sprintf("L%d", k), "")
		}
	}
	for j := range 300 {
		n := 2 + rng.IntN(4)
		for k := range n {
			add(fmt.Sprintf("s%d_%d", j, k), parent(), fmt.Sprintf("s%d_%d", j, (k+1)%n))
		}
		// A chain into it, or into the long cycle.
		to := fmt.Sprintf("s%d_%d", j, rng.IntN(n))
		if j%10 == 0 {
			to = fmt.Sprintf("L%d", rng.IntN(long))
		}
		for k := range rng.IntN(5) {
			id := fmt.Sprintf("i%d_%d", j, k)
			add(id, parent(), to)
			to = id
		}
	}
	// Bad links, and cycles next to them.
	add("b0", "t0", "missing")
	add("b0_c0", "b0", "b0_c1") // a cycle below a bad link
	add("b0_c1", "t1", "b0_c0")
	add("b1", "t2", "b1")
	rows = append(rows, `{"id":"b2","parent_id":"t3","link_to":7}`)
	add("b3", "t4", "b0")
	add("b4", "t5", "s0_0") // a link to a cycle
	// Good chains.
	add("g0", "t6", "g1")
	add("g1", "t7", "t8")
	add("g2", "t9", "g0")
	rng.Shuffle(len(rows), func(a, b int) { rows[a], rows[b] = rows[b], rows[a] })
	return `{"id":"r"}` + "\n" + strings.Join(rows, "\n") + "\n"
}

// TestOutOfCoreLinkCycles: cycles of links, a long one (5,000 links), 300
// small ones, chains into them, beside bad links, are found out of core
// (by sorted passes, not read into memory) with the problems of the
// in-memory import, line for line (file, line, id, text), and the same
// exit code; each cycle's problem names its first 20 ids and counts the
// rest, so no line is long. Under --on-invalid=skip the files and the
// rejects are the same byte for byte; the dry run says the same.
func TestOutOfCoreLinkCycles(t *testing.T) {
	dir, tmp := t.TempDir(), t.TempDir()
	in := filepath.Join(dir, "cycles.jsonl")
	if err := os.WriteFile(in, []byte(linkCycleInput(rand.New(rand.NewPCG(27, 5)))), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"import", "--in", in, "--layout", "prefix", "--items-per-file", "500"}
	_, memErr, memCode := run(t, nil, append(args, "--out", filepath.Join(dir, "mem"))...)
	_, oocErr, oocCode := run(t, nil, append(append(args, "--out", filepath.Join(dir, "ooc")), oocArgs(tmp)...)...)
	if memCode != oocCode || memCode == 0 {
		t.Fatalf("exit %d out of core, %d in memory\n%.2000s\n%.2000s", oocCode, memCode, oocErr, memErr)
	}
	want, got := problemLines(memErr, in), problemLines(oocErr, in)
	if !slices.Equal(got, want) {
		k := 0
		for k < min(len(got), len(want)) && got[k] == want[k] {
			k++
		}
		t.Fatalf("%d problems out of core, %d in memory, not the same from %d:\n%s\n%s", len(got), len(want), k,
			got[min(k, len(got)-1)], want[min(k, len(want)-1)])
	}
	var longCycle, cycles int
	for _, line := range want {
		if len(line) > 800 {
			t.Fatalf("a problem of %d bytes: %.300s...", len(line), line)
		}
		if strings.Contains(line, "a cycle of links") {
			cycles++
			if strings.Contains(line, "… (4980 more)") {
				longCycle++
			}
		}
	}
	// Problems past the first ones are counted, not printed: some of the
	// long cycle's, and of the small cycles'.
	if cycles < 20 || longCycle == 0 || longCycle == cycles {
		t.Fatalf("in memory, %d cycles' problems, %d of the long one: the input is not what the test means\n%.3000s", cycles, longCycle, memErr)
	}
	dry := append(slices.Clone(args[1:]), "--on-invalid=skip", "--rejects", filepath.Join(dir, "dry-rejects"))
	if _, stderr, code := sameDryRun(t, dry); code != 0 {
		t.Errorf("dry run: exit %d in memory:\n%.2000s", code, stderr)
	}
	sameDryRun(t, args[1:])
	skip := append(slices.Clone(args), "--on-invalid=skip")
	memDir, oocDir := filepath.Join(dir, "skip-mem"), filepath.Join(dir, "skip-ooc")
	if _, stderr, code := run(t, nil, append(skip, "--out", memDir, "--rejects", memDir+"-rejects")...); code != 0 {
		t.Fatalf("in memory: exit %d\n%.2000s", code, stderr)
	}
	if _, stderr, code := run(t, nil, append(append(skip, "--out", oocDir, "--rejects", oocDir+"-rejects"), oocArgs(tmp)...)...); code != 0 {
		t.Fatalf("out of core: exit %d\n%.2000s", code, stderr)
	}
	sameFiles(t, memDir, oocDir)
	rejects := readFile(t, memDir+"-rejects")
	if got, want := readFile(t, oocDir+"-rejects"), rejects; got != want {
		t.Errorf("rejects out of core and in memory are not the same")
	}
	if n := strings.Count(rejects, "a cycle of links"); n < 5000 {
		t.Errorf("%d rejects of a cycle of links, want the 5,000 of the long one and more", n)
	}
	emptyDir(t, tmp)
}
