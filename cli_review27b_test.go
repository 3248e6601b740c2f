package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReservedAttrKeepsLayoutChecks: an attribute the layout reserves on
// one node ("Path" in the path layout) no longer hides the layout's
// checks of the others (SPEC §2: every problem is reported). The check
// of an input with a reserved name was the reserved names' alone: an id
// with the delimiter, or one over the keys' limits, elsewhere in the
// input was no problem of the validation, and under --on-invalid=skip
// the write stopped at it (exit 2) instead of rejecting it. With the
// name, the problems are those without it and the carrier's, in memory
// and out of core alike, under fail and skip, with links too.
func TestReservedAttrKeepsLayoutChecks(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("L", 1100)
	write := func(name, path string) string {
		rows := []string{
			`{"id":"x|y","link_to":"r"}`, // a root with the delimiter, before the carrier
			`{"id":"r"}`,
			fmt.Sprintf(`{"id":"a","parent_id":"r"%s}`, path),
			`{"id":"a1","parent_id":"a"}`,
			`{"id":"z|z","parent_id":"r"}`,
			`{"id":"z1","parent_id":"z|z"}`,
			fmt.Sprintf(`{"id":%q,"parent_id":"r"}`, long),
			`{"id":"ok","parent_id":"r","link_to":"a1"}`,
			`{"id":"bad","parent_id":"r","link_to":"missing"}`,
		}
		in := filepath.Join(dir, name)
		if err := os.WriteFile(in, []byte(strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return in
	}
	plain, carrier := write("plain.jsonl", ""), write("carrier.jsonl", `,"Path":"mine"`)
	for _, mode := range []struct {
		name string
		args []string
	}{{"in memory", nil}, {"out of core", oocArgs(t.TempDir())}} {
		t.Run(mode.name, func(t *testing.T) {
			problems := func(in string) []string {
				args := append([]string{"import", "--in", in, "--layout", "path", "--dry-run", "--no-progress"}, mode.args...)
				_, stderr, code := run(t, nil, args...)
				if code != 2 {
					t.Fatalf("%s: exit %d, want 2\n%s", in, code, stderr)
				}
				lines := problemLines(stderr, in)
				for k, l := range lines {
					lines[k] = strings.TrimPrefix(l, in)
				}
				return lines
			}
			want := problems(plain)
			if len(want) < 3 {
				t.Fatalf("without the reserved name, %d problems: the input is not what the test means\n%s", len(want), want)
			}
			got := problems(carrier)
			var extra []string
			for _, l := range got {
				if !slices.Contains(want, l) {
					extra = append(extra, l)
				}
			}
			if len(extra) != 1 || !strings.HasPrefix(extra[0], `:3: id "a": attribute name is a layout attribute`) || len(got) != len(want)+1 {
				t.Errorf("with a reserved name on a, the problems:\n%s\nwithout it:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			out := t.TempDir()
			args := append([]string{"import", "--in", carrier, "--layout", "path", "--no-progress", "--on-invalid=skip",
				"--out", filepath.Join(out, "files"), "--rejects", filepath.Join(out, "rejects")}, mode.args...)
			_, stderr, code := run(t, nil, args...)
			rejects := readFile(t, filepath.Join(out, "rejects"))
			if code != 0 || strings.Count(rejects, "\n") != 6 {
				t.Errorf("skip: exit %d, %d rejects, want 0 and 6 (a, a1, x|y, z|z, z1 and the long id)\n%s\n%s", code, strings.Count(rejects, "\n"), stderr, rejects)
			}
		})
	}
	// The prefix layout's links: a carrier's reserved name before its
	// bad link, a bad link before the delimiter, the delimiter's
	// problem of a node with a good link, and a link to it rejected.
	links := filepath.Join(dir, "links.jsonl")
	rows := `{"id":"r"}
{"id":"a","parent_id":"r","Child":"v","link_to":"nope"}
{"id":"b¦c","parent_id":"r","link_to":"nope"}
{"id":"d¦e","parent_id":"r","link_to":"r"}
{"id":"f","parent_id":"r","link_to":"d¦e"}
`
	if err := os.WriteFile(links, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := sameDryRun(t, []string{"--in", links, "--layout", "prefix"})
	got := strings.Join(problemLines(stderr, links), "\n")
	for _, want := range []string{`:2: id "a": attribute name is a layout attribute`, `:3: id "b¦c": bad link: link_to "nope"`,
		`:4: id "d¦e": id contains the layout's delimiter`, `:5: id "f": bad link: link_to "d¦e": the target was rejected`} {
		if code != 2 || !strings.Contains(got, links+want) {
			t.Errorf("exit %d, want 2 and %s in:\n%s", code, want, stderr)
		}
	}
}
