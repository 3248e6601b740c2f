package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
)

// oocLinkInputs are inputs of the prefix layout's links, good and bad,
// each a JSON Lines text: every problem readLinks and
// rejectLinksToRejected find, and the cascades between them.
var oocLinkInputs = []struct{ name, jsonl string }{
	{"good chain and children", `{"id":"L1","parent_id":"r","link_to":"L2"}
{"id":"L2","parent_id":"r","link_to":"t","note":"second"}
{"id":"c","parent_id":"L2","size":3}
{"id":"r"}
{"id":"t","parent_id":"r","name":"target"}
{"id":"deep","parent_id":"c","link_to":"c"}
`},
	{"a link to itself", `{"id":"a"}
{"id":"b","parent_id":"a","link_to":"b"}
{"id":"c","parent_id":"b"}
{"id":"d","parent_id":"a","link_to":"c"}
`},
	{"a cycle of links", `{"id":"a"}
{"id":"d","parent_id":"a","link_to":"c"}
{"id":"b","parent_id":"a","link_to":"c"}
{"id":"c","parent_id":"a","link_to":"e"}
{"id":"e","parent_id":"a","link_to":"b"}
{"id":"f","parent_id":"a","link_to":"a"}
`},
	{"a cycle of links, parent and child", `{"id":"r"}
{"id":"a","parent_id":"r","link_to":"b"}
{"id":"b","parent_id":"a","link_to":"c"}
{"id":"c","parent_id":"b","link_to":"a"}
{"id":"k","parent_id":"r","Key":"x","link_to":"r"}
{"id":"k2","parent_id":"k","Key":"x"}
{"id":"t","parent_id":"r","link_to":"c"}
`},
	{"a link to an id not in the input", `{"id":"a"}
{"id":"b","parent_id":"a","link_to":"zz"}
{"id":"c","parent_id":"a","link_to":""}
`},
	{"link_to not a string", `{"id":"a"}
{"id":"b","parent_id":"a","link_to":5}
{"id":"c","parent_id":"a","link_to":{"id":"a"}}
{"id":"d","parent_id":"a","link_to":null}
`},
	{"a target the read rejected", `{"id":"a"}
{"id":"b","parent_id":"a","link_to":"m"}
{"id":"m","parent_id":"nowhere"}
{"id":"n","parent_id":"m"}
{"id":"p","parent_id":"a","link_to":"n"}
{"id":"q","parent_id":"a","link_to":"b"}
{"id":"x","parent_id":"a"}
{"id":"x","parent_id":"a"}
{"id":"y","parent_id":"a","link_to":"x"}
{"id":"z1","parent_id":"z2"}
{"id":"z2","parent_id":"z1"}
{"id":"w","parent_id":"a","link_to":"z1"}
`},
	{"a link the read rejected", `{"id":"a"}
{"id":"b","parent_id":"nowhere","link_to":"zz"}
{"id":"c","parent_id":"b","link_to":"a"}
{"id":"d","parent_id":"a","link_to":"c"}
`},
	{"a target the layout rejected", `{"id":"a"}
{"id":"b","parent_id":"a","link_to":"c"}
{"id":"c","parent_id":"a","Key":"reserved"}
{"id":"e","parent_id":"a","link_to":"b"}
{"id":"f","parent_id":"e"}
{"id":"g","parent_id":"a","link_to":"a"}
`},
	{"a target whose key is too long", `{"id":"a"}
{"id":"b","parent_id":"a","link_to":"` + strings.Repeat("k", 2100) + `"}
{"id":"` + strings.Repeat("k", 2100) + `","parent_id":"a"}
{"id":"c","parent_id":"a","link_to":"b"}
`},
	{"a subtree below a bad link holds targets", `{"id":"a"}
{"id":"e","parent_id":"a","link_to":"d"}
{"id":"b","parent_id":"a","link_to":"zz"}
{"id":"c","parent_id":"b"}
{"id":"d","parent_id":"a","link_to":"c"}
{"id":"g","parent_id":"a","link_to":"h"}
{"id":"h","parent_id":"e"}
{"id":"i","parent_id":"a","link_to":"a"}
{"id":"j","parent_id":"i","link_to":"d"}
`},
	{"a bad link with a reserved attribute", `{"id":"a"}
{"id":"b","parent_id":"a","link_to":"zz","Key":"reserved"}
{"id":"c","parent_id":"a","link_to":"b"}
`},
	{"duplicate links", `{"id":"a"}
{"id":"b","parent_id":"a","link_to":"a"}
{"id":"b","parent_id":"a","link_to":"zz"}
{"id":"c","parent_id":"a","link_to":"b"}
`},
	{"probe: a duplicate whose second record links", `{"id":"a"}
{"id":"b","parent_id":"a"}
{"id":"b","parent_id":"a","link_to":"zz"}
{"id":"c","parent_id":"a","link_to":"b"}
{"id":"d","parent_id":"a","link_to":"a"}
`},
	{"probe: a duplicate whose first record links", `{"id":"a"}
{"id":"b","parent_id":"a","link_to":"d"}
{"id":"b","parent_id":"a"}
{"id":"c","parent_id":"a","link_to":"b"}
{"id":"d","parent_id":"a"}
`},
	{"probe (good): ids that are prefixes of each other", `{"id":"a"}
{"id":"a\u0000","parent_id":"a","link_to":"a|"}
{"id":"a|","parent_id":"a","link_to":"a\u0000b"}
{"id":"a\u0000b","parent_id":"a"}
{"id":"\u00e9","parent_id":"a","link_to":"\ud83d\ude00"}
{"id":"\ud83d\ude00","parent_id":"\u00e9"}
{"id":"\u00ff","parent_id":"a","link_to":"a\u0000"}
`},
	{"probe: a link to its own descendant, to a root, to a node below a cycle of parents", `{"id":"a"}
{"id":"b","parent_id":"a","link_to":"c"}
{"id":"c","parent_id":"b"}
{"id":"d","parent_id":"a","link_to":"a"}
{"id":"p","parent_id":"q"}
{"id":"q","parent_id":"p"}
{"id":"r","parent_id":"q"}
{"id":"e","parent_id":"a","link_to":"r"}
{"id":"f","parent_id":"e","link_to":"b"}
`},
	{"probe: a chain of links to a missing target, under a cycle of links", `{"id":"a"}
{"id":"L1","parent_id":"a","link_to":"L2"}
{"id":"L2","parent_id":"a","link_to":"L3"}
{"id":"L3","parent_id":"a","link_to":"L4"}
{"id":"L4","parent_id":"a","link_to":"zz"}
{"id":"x","parent_id":"a","link_to":"y"}
{"id":"y","parent_id":"a","link_to":"x"}
{"id":"z","parent_id":"y","link_to":"L1"}
{"id":"w","parent_id":"z","name":"below"}
{"id":"v","parent_id":"a","link_to":"w"}
`},
}

// writeLinkInputs writes oocLinkInputs to dir, one file each.
func writeLinkInputs(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	for k, tc := range oocLinkInputs {
		p := filepath.Join(dir, fmt.Sprintf("links%d.jsonl", k))
		if err := os.WriteFile(p, []byte(tc.jsonl), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// problemLines are the lines of stderr that name a place of the input.
func problemLines(stderr, in string) []string {
	var out []string
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, in+":") {
			out = append(out, line)
		}
	}
	return out
}

// TestOutOfCoreLinksMatchInMemory: import --out of the prefix layout's
// links, good and bad, out of core (in a 1 MiB budget) says the same
// problems, with the same exit code, as in memory; under
// --on-invalid=skip it writes the same files byte for byte and the same
// rejects; and with --shard, each shard's files are the same.
func TestOutOfCoreLinksMatchInMemory(t *testing.T) {
	dir := t.TempDir()
	for k, in := range writeLinkInputs(t, dir) {
		t.Run(oocLinkInputs[k].name, func(t *testing.T) {
			t.Parallel()
			out, tmp := t.TempDir(), t.TempDir()
			args := []string{"import", "--in", in, "--layout", "prefix", "--items-per-file", "5"}
			_, memErr, memCode := run(t, nil, append(args, "--out", filepath.Join(out, "mem"))...)
			_, oocErr, oocCode := run(t, nil, append(append(args, "--out", filepath.Join(out, "ooc")), oocArgs(tmp)...)...)
			if memCode != oocCode {
				t.Fatalf("exit %d out of core, %d in memory\n%s\n%s", oocCode, memCode, oocErr, memErr)
			}
			want, got := problemLines(memErr, in), problemLines(oocErr, in)
			if !slices.Equal(got, want) {
				t.Errorf("problems out of core:\n  %s\nin memory:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
			if memCode == 0 {
				sameFiles(t, filepath.Join(out, "mem"), filepath.Join(out, "ooc"))
			} else if _, err := os.Stat(filepath.Join(out, "ooc")); !os.IsNotExist(err) {
				t.Errorf("out of core, the output directory was created (%v)", err)
			}
			if oocCode == 0 && k != 0 && !strings.Contains(oocLinkInputs[k].name, "(good)") {
				t.Errorf("a bad input was imported")
			}
			// The dry run out of core reports the same.
			// (but for the timed progress lines, which a loaded machine
			// prints in one run and not the other).
			dry := append(slices.Clone(args[1:]), "--on-invalid=skip", "--rejects", filepath.Join(out, "dry-rejects"))
			if _, stderr, code := sameDryRun(t, dry); code != 0 {
				t.Errorf("dry run: exit %d in memory:\n%s", code, stderr)
			}
			for _, shard := range []string{"", "0/2", "1/2"} {
				skip := append(slices.Clone(args), "--on-invalid=skip")
				if shard != "" {
					skip = append(skip, "--shard", shard)
				}
				name := strings.ReplaceAll("skip"+shard, "/", "of")
				memDir, oocDir := filepath.Join(out, name+"-mem"), filepath.Join(out, name+"-ooc")
				if _, stderr, code := run(t, nil, append(skip, "--out", memDir, "--rejects", memDir+"-rejects")...); code != 0 {
					t.Fatalf("%s in memory: exit %d\n%s", name, code, stderr)
				}
				if _, stderr, code := run(t, nil, append(append(skip, "--out", oocDir, "--rejects", oocDir+"-rejects"), oocArgs(tmp)...)...); code != 0 {
					t.Fatalf("%s out of core: exit %d\n%s", name, code, stderr)
				}
				sameFiles(t, memDir, oocDir)
				suffix := "" // a shard's rejects file is its own
				if shard != "" {
					suffix = ".shard-" + strings.Replace(shard, "/", "-of-", 1)
				}
				if got, want := sortedLines(readFile(t, oocDir+"-rejects"+suffix)), sortedLines(readFile(t, memDir+"-rejects"+suffix)); !slices.Equal(got, want) {
					t.Errorf("%s: rejects out of core:\n  %s\nin memory:\n  %s", name, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
				}
			}
			emptyDir(t, tmp)
		})
	}
}

// TestOutOfCoreLinksTable: import --table of links out of core writes the
// same items as in memory, under --on-invalid=skip with links the checks
// reject down a chain.
func TestOutOfCoreLinksTable(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	paths := writeLinkInputs(t, dir)
	for _, k := range []int{0, 10} {
		in := paths[k]
		var items [2][]string
		for m, extra := range [][]string{nil, oocArgs(t.TempDir())} {
			table := ddblocal.TableName(t)
			dropTableLater(t, client, table)
			args := append([]string{"import", "--in", in, "--layout", "prefix", "--table", table, "--create-table", "--no-progress", "--on-invalid=skip", "--rejects", filepath.Join(dir, fmt.Sprint(k, m, "rejects"))}, extra...)
			if _, stderr, code := run(t, env, args...); code != 0 {
				t.Fatalf("%s: exit %d\n%s", oocLinkInputs[k].name, code, stderr)
			}
			for _, it := range rawLines(t, client, table) {
				items[m] = append(items[m], fmt.Sprint(it))
			}
			slices.Sort(items[m])
		}
		if len(items[0]) < 4 || !slices.Equal(items[0], items[1]) {
			t.Errorf("%s: table out of core:\n  %s\nin memory:\n  %s", oocLinkInputs[k].name, strings.Join(items[1], "\n  "), strings.Join(items[0], "\n  "))
		}
	}
	// plan and apply out of core: a link given another target is a change
	// of its row, planned as in memory and applied.
	table := ddblocal.TableName(t)
	dropTableLater(t, client, table)
	if _, stderr, code := run(t, env, "import", "--in", paths[0], "--layout", "prefix", "--table", table, "--create-table", "--no-progress"); code != 0 {
		t.Fatalf("import: exit %d\n%s", code, stderr)
	}
	moved := filepath.Join(dir, "moved.jsonl")
	if err := os.WriteFile(moved, []byte(strings.Replace(oocLinkInputs[0].jsonl, `"link_to":"t"`, `"link_to":"c"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := []string{"plan", "--in", moved, "--layout", "prefix", "--table", table}
	memPlan, _, memCode := run(t, env, plan...)
	oocPlan, stderr, oocCode := run(t, env, append(plan, oocArgs(t.TempDir())...)...)
	if memCode != 0 || oocCode != 0 || memPlan != oocPlan || !strings.Contains(memPlan, "changed attributes      1") {
		t.Fatalf("plan: exit %d out of core, %d in memory:\n%s%s\nin memory:\n%s", oocCode, memCode, oocPlan, stderr, memPlan)
	}
	if _, stderr, code := run(t, env, append([]string{"apply", "--in", moved, "--layout", "prefix", "--table", table, "--no-progress"}, oocArgs(t.TempDir())...)...); code != 0 {
		t.Fatalf("apply out of core: exit %d\n%s", code, stderr)
	}
	if stdout, stderr, code := run(t, env, plan...); code != 0 || !strings.Contains(stdout+stderr, "No changes") {
		t.Errorf("after the apply out of core, plan: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestOutOfCoreLinksPathIDs: with --path-ids, a link's target is a path
// id; out of core writes the same files and rejects as in memory.
func TestOutOfCoreLinksPathIDs(t *testing.T) {
	dir, tmp := t.TempDir(), t.TempDir()
	in := filepath.Join(dir, "pathids.jsonl")
	text := `{"id":"A"}
{"id":"A¦b","parent_id":"A","link_to":"A¦c¦d"}
{"id":"A¦c","parent_id":"A"}
{"id":"A¦c¦d","parent_id":"A¦c","x":1}
{"id":"A¦e","parent_id":"A","link_to":"A¦zz"}
{"id":"A¦e¦f","parent_id":"A¦e"}
{"id":"A¦g","parent_id":"A","link_to":"A¦e¦f"}
{"id":"A¦h","parent_id":"A","link_to":"A¦b"}
`
	if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"import", "--in", in, "--layout", "prefix", "--path-ids", "--on-invalid=skip"}
	for _, m := range []string{"mem", "ooc"} {
		a := append(slices.Clone(args), "--out", filepath.Join(dir, m), "--rejects", filepath.Join(dir, m+"-rejects"))
		if m == "ooc" {
			a = append(a, oocArgs(tmp)...)
		}
		if _, stderr, code := run(t, nil, a...); code != 0 {
			t.Fatalf("%s: exit %d\n%s", m, code, stderr)
		}
	}
	sameFiles(t, filepath.Join(dir, "mem"), filepath.Join(dir, "ooc"))
	got, want := sortedLines(readFile(t, filepath.Join(dir, "ooc-rejects"))), sortedLines(readFile(t, filepath.Join(dir, "mem-rejects")))
	if len(want) != 3 || !slices.Equal(got, want) {
		t.Errorf("rejects out of core:\n  %s\nin memory:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if items := importedItems(t, filepath.Join(dir, "ooc")); !slices.Contains(items, `{"Child":{"S":"¦"},"Key":{"S":"¦A¦h"},"¦":{"S":"¦A¦b"}}`) {
		t.Errorf("no link row of A¦h to A¦b:\n%s", strings.Join(items, "\n"))
	}
}
