package main

import (
	"encoding/json"
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

// writeReservedInput writes a JSON Lines forest of n records, most of
// which carry one or several of the names reserved, with duplicate ids
// (a carrier and not, two carriers).
func writeReservedInput(t *testing.T, n int, reserved []string, seed uint64) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 27))
	var b strings.Builder
	for i := range n + n/40 {
		rec := map[string]any{"id": fmt.Sprintf("n%d", i), "name": fmt.Sprint(rng.IntN(100))}
		if i >= n {
			rec["id"] = fmt.Sprintf("n%d", rng.IntN(n)) // a duplicate id
		}
		if i > 0 && rng.IntN(8) != 0 {
			rec["parent_id"] = fmt.Sprintf("n%d", rng.IntN(min(i, n)))
		}
		if k := rng.IntN(10); k < 7 {
			rec[reserved[rng.IntN(len(reserved))]] = "x"
			if k < 2 {
				rec[reserved[rng.IntN(len(reserved))]] = k
			}
		}
		line, _ := json.Marshal(rec)
		b.Write(line)
		b.WriteByte('\n')
	}
	in := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return in
}

// TestOutOfCoreReservedNames: an input whose records mostly carry the
// names a layout reserves (several some; duplicate ids), in every layout
// and with a renamed attribute (--attr), imported out of core in a 1 MiB
// budget (the carriers' map spills: TestOutOfCoreReservedCarriersSpill)
// and in memory: with --on-invalid fail and skip, the same exit code,
// output, problems (file, line, id, in order) and rejects, and under skip
// the same files byte for byte; the same dry run. Nothing is left in
// --tmp-dir.
func TestOutOfCoreReservedNames(t *testing.T) {
	times := regexp.MustCompile(`in [0-9.]+[mµ]?s\b`)
	type target struct {
		layout string
		attr   []string // --attr flags
	}
	var targets []target
	for _, name := range layouts.Names() {
		targets = append(targets, target{name, nil})
	}
	targets = append(targets, target{layouts.PathName, []string{"--attr", "ParentId=Up"}})
	for k, tg := range targets {
		t.Run(fmt.Sprintf("%s%v", tg.layout, tg.attr), func(t *testing.T) {
			t.Parallel()
			opts := layouts.Options{}
			if tg.attr != nil {
				old, new, _ := strings.Cut(tg.attr[1], "=")
				opts.Attr = map[string]string{old: new}
			}
			l, err := layouts.New(tg.layout, opts)
			if err != nil {
				t.Fatal(err)
			}
			reserved := slices.Clone(l.Reserved())
			if tg.layout == layouts.PrefixName {
				reserved = append(reserved, layouts.DefaultPrefixDelimiter+"starts")
			}
			if tg.attr != nil {
				reserved = append(reserved, "ParentId") // no longer the layout's: an attribute
			}
			in := writeReservedInput(t, 8000, reserved, uint64(k))
			common := append([]string{"--in", in, "--layout", tg.layout}, tg.attr...)
			for _, mode := range []string{"fail", "skip"} {
				var outs [2]string
				var dirs [2]string
				for j, ooc := range []bool{false, true} {
					dir := t.TempDir()
					args := append([]string{"import", "--no-progress", "--out", filepath.Join(dir, "out"), "--on-invalid", mode, "--rejects", filepath.Join(dir, "rejects")}, common...)
					tmp := t.TempDir()
					if ooc {
						args = append(args, oocArgs(tmp)...)
					}
					stdout, stderr, code := run(t, nil, args...)
					rejects, _ := os.ReadFile(filepath.Join(dir, "rejects"))
					outs[j] = strings.ReplaceAll(fmt.Sprintf("exit %d\n%s\n%s\n%s", code, times.ReplaceAllString(stdout, ""), progressLine.ReplaceAllString(stderr, ""), rejects), dir, "DIR")
					dirs[j] = filepath.Join(dir, "out")
					emptyDir(t, tmp)
					if !ooc && len(problemLines(stderr, in)) < 20 {
						t.Fatalf("--on-invalid %s: %d problems in memory: the reserved names are not found\n%s", mode, len(problemLines(stderr, in)), stderr)
					}
					if !ooc && mode == "skip" && (code != 0 || strings.Count(string(rejects), "\n") < 4000) {
						t.Fatalf("--on-invalid skip in memory: exit %d, %d rejects", code, strings.Count(string(rejects), "\n"))
					}
				}
				if outs[0] != outs[1] {
					t.Errorf("--on-invalid %s: in memory:\n%.3000s\nout of core:\n%.3000s", mode, outs[0], outs[1])
				}
				if mode == "skip" {
					sameFiles(t, dirs[0], dirs[1])
				}
			}
			for _, jsonOut := range []bool{false, true} {
				args := common
				if jsonOut {
					args = append(slices.Clone(common), "--json")
				}
				if _, stderr, code := sameDryRun(t, args); code == 0 || !strings.Contains(stderr, "is a layout attribute") {
					t.Errorf("the dry run in memory: exit %d, no reserved name found\n%.2000s", code, stderr)
				}
			}
		})
	}
}
