package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

var (
	// wrongPlural is a count of one with a plural noun: "1 nodes".
	wrongPlural = regexp.MustCompile(`(^|[^\d.,$])1 (nodes|items|edits|shards|requests|records|trees|files|operations|puts|deletes|sampled nodes|layouts|problems|subtrees)\b`)
	// bareCount is a number of five digits or more written without
	// separators ("20000 nodes"), which a reader has to count: not a part
	// of a name, a date, a time, a fraction or a price's decimals.
	bareCount = regexp.MustCompile(`(^|[^\w.,$#:/-])\d{5,}($|[^\w.,:/-])`)
)

// A newcomer's walk through every command on a forest of one node, a
// snapshot of two and a generated forest of 12,345 nodes: what treeport
// prints for people (not the JSON lines of query, nor the progress lines
// that scripts read) says "1 node", not "1 nodes", writes a count of tens
// of thousands with separators, and tells no one to give --types "".
func TestOutputReadsRight(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	one := write("one.csv", "id,parent_id,n\nA,,1\n")
	two := write("two.csv", "id,parent_id,n\nA,,1\nB,A,2\n")
	ops := write("ops.jsonl", `{"op":"delete","id":"B"}`+"\n")
	big := filepath.Join(dir, "big.csv")
	t1, t2, t3 := ddblocal.TableName(t), ddblocal.TableName(t), ddblocal.TableName(t)
	for _, table := range []string{t1, t2, t3} {
		dropTableLater(t, client, table)
	}
	steps := [][]string{
		{"gen", "--nodes", "12345", "--seed", "3", "--out", big},
		{"import", "--in", one, "--types", "n:N", "--layout", "all", "--dry-run"},
		{"import", "--in", one, "--types", "n:N", "--layout", "closure", "--table", t1, "--create-table", "--no-progress"},
		{"query", "get", "--table", t1, "--layout", "closure", "--id", "A", "--stats"},
		{"export", "--table", t1, "--layout", "closure", "--out", filepath.Join(dir, "one-out.csv")},
		{"verify", "--in", one, "--types", "n:N", "--table", t1, "--layout", "closure"},
		{"plan", "--in", two, "--types", "n:N", "--table", t1, "--layout", "closure"},
		{"apply", "--in", two, "--types", "n:N", "--table", t1, "--layout", "closure", "--no-progress"},
		{"edit", "--ops", ops, "--table", t1, "--layout", "closure", "--no-progress"},
		{"migrate", "--from-table", t1, "--from-layout", "closure", "--to-table", t2, "--to-layout", "prefix", "--create-table", "--no-progress"},
		{"import", "--in", one, "--layout", "prefix", "--out", filepath.Join(dir, "one-files")},
		{"bench", "--in", one, "--offline", "--layouts", "path"},
		{"import", "--in", big, "--layout", "path", "--dry-run"},
		{"import", "--in", big, "--layout", "adjacency", "--table", t3, "--create-table", "--no-progress"},
		{"export", "--table", t3, "--layout", "adjacency", "--out", filepath.Join(dir, "big-out.csv")}, // read without types: all strings
		{"verify", "--in", big, "--table", t3, "--layout", "adjacency"},
		{"verify", "--in", filepath.Join(dir, "big-out.csv"), "--table", t3, "--layout", "adjacency"}, // its sidecar says: all strings
		{"plan", "--in", big, "--table", t3, "--layout", "adjacency"},
		{"import", "--in", big, "--layout", "closure", "--out", filepath.Join(dir, "big-files")},
		{"bench", "--in", big, "--offline", "--layouts", "path,adjacency", "--scale", "50000000"},
	}
	for _, args := range steps {
		stdout, stderr, code := run(t, env, args...)
		if code != 0 {
			t.Fatalf("treeport %s: exit %d:\n%s%s", strings.Join(args, " "), code, stdout, stderr)
		}
		if args[0] == "bench" && slices.Contains(args, "--scale") {
			// The terminal table puts this file's figures beside projected
			// ones, as the HTML report does: it says which are which.
			if !strings.Contains(stdout, "this file's (12,345 nodes)") || !strings.Contains(stdout, "projected to 50,000,000 nodes (--scale)") {
				t.Errorf("bench --scale: the table does not say which figures are this file's and which are projected:\n%s", stdout)
			}
		}
		for _, line := range strings.Split(stdout+stderr, "\n") {
			if strings.HasPrefix(line, "{") || writerLogLine.MatchString(line) {
				continue
			}
			if m := wrongPlural.FindString(line); m != "" {
				t.Errorf("treeport %s %s: %q in %q", args[0], args[1], strings.TrimSpace(m), line)
			}
			if strings.Contains(line, `--types ""`) {
				t.Errorf("treeport %s %s: an empty --types to give: %q", args[0], args[1], line)
			}
			if m := bareCount.FindString(line); m != "" {
				t.Errorf("treeport %s %s: a count without separators, %q in %q", args[0], args[1], strings.TrimSpace(m), line)
			}
		}
	}
}

// writerLogLine is the writer's log line without a terminal, which
// scripts and tests read: its counts stay bare.
var writerLogLine = regexp.MustCompile(`^treeport: \d+/\d+ items, `)

// A nightly refresh from a CSV file given without --types (and without the
// sidecar export writes) reads every value as a string: plan then counts
// every number of a typed table as a changed attribute, and apply would
// write them as strings. plan says why and how to give the types; with
// them, the same snapshot changes nothing and no hint is given.
func TestPlanOfUntypedCSVSaysSo(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	l, err := layouts.New("path", layouts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	types := fixtureTypes(t, "cars")
	table := loadTable(t, env, client, "fixtures/cars.csv", types, l)
	snap := filepath.Join(t.TempDir(), "nightly.csv")
	if err := os.WriteFile(snap, []byte(readFile(t, "fixtures/cars.csv")), 0o644); err != nil {
		t.Fatal(err)
	}
	common := []string{"plan", "--in", snap, "--table", table, "--layout", "path"}
	stdout, stderr, code := run(t, env, common...)
	if code != 0 || !strings.Contains(stdout, "changed attributes") {
		t.Fatalf("plan: exit %d:\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"hint: " + snap + " is CSV read without --types", "apply would write them as strings", "--types", snap + ".types"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("plan of an untyped CSV: stderr lacks %q:\n%s", want, stderr)
		}
	}
	stdout, stderr, code = run(t, env, append(common, "--types", types)...)
	if code != 0 || !strings.Contains(stdout, "No changes") || strings.Contains(stderr, "hint:") {
		t.Errorf("plan with --types: exit %d, want no changes and no hint:\n%s%s", code, stdout, stderr)
	}
}
