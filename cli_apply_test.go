package main

// End-to-end tests of apply (issue 6) against DynamoDB Local: what it prints,
// how it exits, and what the table holds afterwards, read back with Scan.

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/testserver/faultproxy"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
)

// TestApplyNoChangesWritesReport: an apply that finds nothing to do still
// writes its --report (a CI job reads it every night), and does not leave the
// report of an earlier run in place.
func TestApplyNoChangesWritesReport(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	typesFlag := fixtureTypes(t, "cars")
	l, _ := layouts.New("path", layouts.Options{})
	table := loadTable(t, env, client, "fixtures/cars.csv", typesFlag, l)
	report := filepath.Join(t.TempDir(), "report.json")
	stale := `{"plan":{"total":{"puts":999}},"writer":{"items":999}}`
	if err := os.WriteFile(report, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := run(t, env, "apply", "--in", "fixtures/cars.csv", "--types", typesFlag, "--layout", "path", "--table", table, "--report", report, "--no-progress")
	if code != 0 || !strings.Contains(stdout, "No changes") {
		t.Fatalf("apply: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("no report after an apply without changes: %v", err)
	}
	if string(b) == stale {
		t.Fatalf("apply without changes left the previous run's report in %s: %s", report, b)
	}
	rep := readReport(t, report)
	if rep.Writer.Items != 0 || rep.Plan.changes() != 0 || rep.Plan.TableNodes != 48 {
		t.Errorf("report of an apply without changes: %s", b)
	}
}

// TestApplyRefusesInvalidSnapshot: a snapshot with problems exits 2, names
// where the problem is, and writes nothing.
func TestApplyRefusesInvalidSnapshot(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	l, _ := layouts.New("path", layouts.Options{})
	table := loadTable(t, awsEnv(endpoint), client, "fixtures/cars.csv", fixtureTypes(t, "cars"), l)
	before := rawLines(t, client, table)
	proxy := newProxy(t, endpoint)
	env := awsEnv(proxy.URL())
	for _, tt := range []struct{ file, where string }{
		{"cycle.csv", "cycle.csv:3"},
		{"missing-parent.csv", "missing-parent.csv:3"},
		{"duplicate-id.csv", "duplicate-id.csv:5"},
		{"ragged.csv", "ragged.csv:3"},
		{"delimiter-in-id.csv", "delimiter-in-id.csv:3"},
	} {
		in := filepath.Join("fixtures", "bad", tt.file)
		for _, args := range [][]string{{"plan"}, {"apply", "--allow-mass-delete", "--no-progress"}} {
			_, stderr, code := run(t, env, append(args, "--in", in, "--layout", "path", "--table", table)...)
			if code != 2 || !strings.Contains(stderr, tt.where) {
				t.Errorf("%s %s: exit %d, want 2 naming %s:\n%s", args[0], tt.file, code, tt.where, stderr)
			}
		}
	}
	if c := proxy.Counts(); c.AcceptedItems != 0 {
		t.Errorf("%d items written for invalid snapshots", c.AcceptedItems)
	}
	if !slices.Equal(rawLines(t, client, table), before) {
		t.Error("the table changed")
	}
}

// TestApplyMassDeleteGuard: a snapshot cut to half its rows must not wipe
// half the table unless the user says so.
func TestApplyMassDeleteGuard(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	typesFlag := fixtureTypes(t, "cars")
	full := readCSVFile(t, "fixtures/cars.csv")
	cut := full.truncate(len(full.rows) / 2)
	if len(cut.rows) != len(full.rows)/2 {
		t.Fatalf("the first half of cars.csv is not a forest: %d rows left", len(cut.rows))
	}
	cutPath := cut.write(t, filepath.Join(t.TempDir(), "truncated.csv"))
	removed := len(full.rows) - len(cut.rows)
	// cars.csv gzipped and cut at 97% of its bytes, an empty file, and the
	// header alone.
	tmp := t.TempDir()
	var gz strings.Builder
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(readFile(t, "fixtures/cars.csv")))
	zw.Close()
	gzCut := filepath.Join(tmp, "cut.csv.gz")
	emptyJSONL := filepath.Join(tmp, "empty.jsonl")
	headerOnly := filepath.Join(tmp, "header.csv")
	for path, data := range map[string]string{gzCut: gz.String()[:gz.Len()*97/100], emptyJSONL: "", headerOnly: strings.Join(full.header, ",") + "\n"} {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{layouts.PathName, layouts.ClosureName} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, _ := layouts.New(name, layouts.Options{})
			spec := l.Table()
			env := awsEnv(endpoint)
			table := loadTable(t, env, client, "fixtures/cars.csv", typesFlag, l)
			before := rawLines(t, client, table)
			args := func(in string, extra ...string) []string {
				return append([]string{"apply", "--in", in, "--types", typesFlag, "--layout", name, "--table", table, "--no-progress"}, extra...)
			}

			stdout, stderr, code := run(t, env, "plan", "--in", cutPath, "--types", typesFlag, "--layout", name, "--table", table)
			if code != 0 || !strings.Contains(stdout, "WARNING") || !strings.Contains(stdout, "--allow-mass-delete") ||
				!strings.Contains(stdout, fmt.Sprintf("removes %d of the table's %d nodes", removed, len(full.rows))) {
				t.Errorf("plan of a truncated snapshot: exit %d, no clear warning:\n%s\n%s", code, stdout, stderr)
			}

			ck := filepath.Join(t.TempDir(), "ck.json")
			proxy := newProxy(t, endpoint)
			for _, extra := range [][]string{nil, {"--max-delete-ratio", "0.4"}, {"--checkpoint", ck}} {
				stdout, stderr, code := run(t, awsEnv(proxy.URL()), args(cutPath, extra...)...)
				if code != 2 || !strings.Contains(stderr, "--max-delete-ratio") || !strings.Contains(stderr, "--allow-mass-delete") ||
					!strings.Contains(stderr, "nothing was written") {
					t.Errorf("apply %v of a truncated snapshot: exit %d, want 2 naming the flags:\n%s\n%s", extra, code, stdout, stderr)
				}
			}
			if c := proxy.Counts(); c.AcceptedItems != 0 {
				t.Errorf("refused applies wrote %d items", c.AcceptedItems)
			}
			if !slices.Equal(rawLines(t, client, table), before) {
				t.Fatal("a refused apply changed the table")
			}
			for _, f := range []string{ck, ck + ".plan.json"} {
				if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a refused apply left %s behind (%v)", f, err)
				}
			}

			// Snapshots cut short in ways the guard alone would not see (a
			// gzip file missing its last 3%) or empty ones.
			for _, bad := range []string{gzCut, emptyJSONL, headerOnly} {
				a := args(bad)
				if bad == emptyJSONL {
					a = []string{"apply", "--in", bad, "--layout", name, "--table", table, "--no-progress"}
				}
				stdout, stderr, code := run(t, awsEnv(proxy.URL()), a...)
				if code != 2 {
					t.Errorf("apply of %s: exit %d, want 2:\n%s\n%s", filepath.Base(bad), code, stdout, stderr)
				}
			}
			if c := proxy.Counts(); c.AcceptedItems != 0 {
				t.Errorf("refused applies wrote %d items", c.AcceptedItems)
			}
			if !slices.Equal(rawLines(t, client, table), before) {
				t.Fatal("a refused apply changed the table")
			}

			if stdout, stderr, code := run(t, env, args(cutPath, "--max-delete-ratio", "0.9")...); code != 0 {
				t.Fatalf("apply --max-delete-ratio 0.9: exit %d:\n%s\n%s", code, stdout, stderr)
			}
			sameState(t, "after --max-delete-ratio 0.9", tableState(t, client, table, spec), wantState(t, cutPath, typesFlag, l))
			// The full snapshot puts the removed half back; then the
			// truncated one goes through with --allow-mass-delete.
			if stdout, stderr, code := run(t, env, args("fixtures/cars.csv")...); code != 0 {
				t.Fatalf("apply of the full snapshot: exit %d:\n%s\n%s", code, stdout, stderr)
			}
			sameState(t, "after the full snapshot", tableState(t, client, table, spec), wantState(t, "fixtures/cars.csv", typesFlag, l))
			if stdout, stderr, code := run(t, env, args(cutPath, "--allow-mass-delete")...); code != 0 {
				t.Fatalf("apply --allow-mass-delete: exit %d:\n%s\n%s", code, stdout, stderr)
			}
			sameState(t, "after --allow-mass-delete", tableState(t, client, table, spec), wantState(t, cutPath, typesFlag, l))
		})
	}
}

// TestApplyBadInputExits2: an empty CSV file, and --types given for a
// format that has its own, are mistakes in the input or the command line
// (exit 2, as SPEC's exit codes say), not service errors (3); nothing is
// written.
func TestApplyBadInputExits2(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	l, _ := layouts.New("path", layouts.Options{})
	table := loadTable(t, awsEnv(endpoint), client, "fixtures/cars.csv", fixtureTypes(t, "cars"), l)
	before := rawLines(t, client, table)
	empty := filepath.Join(t.TempDir(), "snapshot.csv")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"plan"}, {"apply", "--no-progress"}} {
		_, stderr, code := run(t, awsEnv(endpoint), append(cmd, "--in", empty, "--layout", "path", "--table", table)...)
		if code != 2 || !strings.Contains(stderr, empty) {
			t.Errorf("%s of an empty CSV snapshot: exit %d, want 2 naming the file:\n%s", cmd[0], code, stderr)
		}
		_, stderr, code = run(t, awsEnv(endpoint), append(cmd, "--in", "fixtures/cars.json", "--types", "qty:N", "--layout", "path", "--table", table)...)
		if code != 2 || !strings.Contains(stderr, "--types") {
			t.Errorf("%s of a JSON snapshot with --types: exit %d, want 2:\n%s", cmd[0], code, stderr)
		}
	}
	if !slices.Equal(rawLines(t, client, table), before) {
		t.Error("the table changed")
	}
}

// TestApplyInterruptResumes interrupts a checkpointed apply with SIGINT: it
// exits 130 with its checkpoint and plan saved; another snapshot is refused
// while the checkpoint is unfinished; the rerun goes on and the table ends
// exact.
func TestApplyInterruptResumes(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	in := genInput(t, 3000)
	l, _ := layouts.New("path", layouts.Options{})
	want := wantState(t, in, "", l)
	table := ddblocal.NewTable(t, client, l.Table())
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck.json")
	args := []string{"apply", "--in", in, "--layout", "path", "--table", table, "--checkpoint", ck, "--no-progress"}

	// Slow: each item costs 3 WCU (the table and two indexes), so 9000 WCU
	// at 1500 a second take about 6 s.
	// Interrupt once the checkpoint shows acknowledged writes.
	stderr, _ := interruptWhen(t, awsEnv(endpoint), append(args, "--max-wcu", "1500", "--concurrency", "2"), "progress in the checkpoint", checkpointMoved(ck))
	saved, err := ddbwrite.LoadCheckpoint(ck)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Done || saved.Watermark <= 0 || saved.Watermark >= int64(len(want)) {
		t.Fatalf("checkpoint after SIGINT: %+v (plan of %d puts)", saved, len(want))
	}
	if _, err := os.Stat(ck + ".plan.json"); err != nil {
		t.Fatalf("no plan beside the checkpoint: %v", err)
	}
	if !strings.Contains(stderr, "interrupted") {
		t.Errorf("stderr does not say it was interrupted:\n%s", stderr)
	}
	partial := rawLines(t, client, table)
	if int64(len(partial)) < saved.Watermark || len(partial) >= len(want) {
		t.Fatalf("table has %d items, checkpoint says %d acknowledged of %d", len(partial), saved.Watermark, len(want))
	}

	// Another snapshot while the checkpoint is unfinished.
	other := filepath.Join(dir, "other.jsonl")
	if _, stderr, code := run(t, nil, "gen", "--nodes", "50", "--shape", "random", "--seed", "9", "--out", other); code != 0 {
		t.Fatal(stderr)
	}
	_, msg, code := run(t, awsEnv(endpoint), "apply", "--in", other, "--layout", "path", "--table", table, "--checkpoint", ck, "--no-progress")
	if code != 2 || !strings.Contains(msg, ck) || !strings.Contains(msg, "unfinished") {
		t.Errorf("apply of another snapshot over an unfinished checkpoint: exit %d, want 2:\n%s", code, msg)
	}
	if !slices.Equal(rawLines(t, client, table), partial) {
		t.Fatal("the refused apply changed the table")
	}

	report := filepath.Join(dir, "report.json")
	stdout, msg, code := run(t, awsEnv(endpoint), append(args, "--report", report)...)
	if code != 0 {
		t.Fatalf("resume: exit %d:\n%s\n%s", code, stdout, msg)
	}
	if !strings.Contains(msg, "resuming from checkpoint") {
		t.Errorf("the rerun did not say it resumed:\n%s", msg)
	}
	sameState(t, "after the resumed apply", tableState(t, client, table, l.Table()), want)
	rep := readReport(t, report)
	if rep.Skipped < saved.Watermark || rep.Skipped+rep.Writer.Items != int64(len(want)) {
		t.Errorf("resumed report: %d skipped + %d written, want %d in all, at least %d skipped", rep.Skipped, rep.Writer.Items, len(want), saved.Watermark)
	}
	if c, err := ddbwrite.LoadCheckpoint(ck); err != nil || !c.Done {
		t.Errorf("checkpoint after the resumed apply: %+v, %v", c, err)
	}
	if _, err := os.Stat(ck + ".plan.json"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("plan file left after the apply finished (%v)", err)
	}
	// A finished checkpoint plans afresh: nothing to do.
	stdout, msg, code = run(t, awsEnv(endpoint), args...)
	if code != 0 || !strings.Contains(stdout, "No changes") {
		t.Errorf("apply after the finished checkpoint: exit %d:\n%s\n%s", code, stdout, msg)
	}
}

// TestApplyTableChecks: a missing table is refused (apply says how to
// create it), --create-table creates and fills it, and a table of another
// layout is refused before anything is written.
func TestApplyTableChecks(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	typesFlag := fixtureTypes(t, "cars")
	const in = "fixtures/cars.csv"
	table := ddblocal.TableName(t)
	dropTableLater(t, client, table)
	common := []string{"--in", in, "--types", typesFlag, "--layout", "prefix", "--table", table}
	if _, stderr, code := run(t, env, append([]string{"plan"}, common...)...); code != 2 {
		t.Errorf("plan of a missing table: exit %d, want 2: %s", code, stderr)
	}
	if _, stderr, code := run(t, env, append([]string{"apply", "--no-progress"}, common...)...); code != 2 || !strings.Contains(stderr, "--create-table") {
		t.Errorf("apply to a missing table: exit %d, want 2 naming --create-table: %s", code, stderr)
	}
	if _, stderr, code := run(t, env, append([]string{"apply", "--create-table", "--no-progress"}, common...)...); code != 0 {
		t.Fatalf("apply --create-table: exit %d: %s", code, stderr)
	}
	prefix, _ := layouts.New("prefix", layouts.Options{})
	sameState(t, "after apply --create-table", tableState(t, client, table, prefix.Table()), wantState(t, in, typesFlag, prefix))
	before := rawLines(t, client, table)
	_, stderr, code := run(t, env, "apply", "--in", in, "--types", typesFlag, "--layout", "closure", "--table", table, "--no-progress")
	if code != 2 || !strings.Contains(stderr, "does not match") {
		t.Errorf("apply with the wrong layout: exit %d, want 2: %s", code, stderr)
	}
	if !slices.Equal(rawLines(t, client, table), before) {
		t.Error("apply with the wrong layout changed the table")
	}
}

// TestApplyEditMigrateWithLayoutOptions runs apply, edit and migrate on
// tables written with renamed attributes, other delimiters, other shard
// counts and a closure that copies only some attributes.
func TestApplyEditMigrateWithLayoutOptions(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	typesFlag := fixtureTypes(t, "cars")
	_, snap := carsSnapshot(t)
	dir := t.TempDir()
	snapPath := snap.write(t, filepath.Join(dir, "snapshot.csv"))
	// The edit below moves CM17 back under CM15.
	edited := snap.clone()
	edited.set(t, "CM17", "parent_id", "CM15")
	editedPath := edited.write(t, filepath.Join(dir, "edited.csv"))
	closure, _ := layouts.New(layouts.ClosureName, layouts.Options{})
	for _, tt := range []struct {
		layout string
		flags  []string // pairs: flag, value
		opts   layouts.Options
	}{
		{layouts.PathName, []string{"--attr", "Id=NodeId", "--attr", "ParentId=Up", "--attr", "ByPath=GSI2", "--delimiter", "/"},
			layouts.Options{Attr: map[string]string{"Id": "NodeId", "ParentId": "Up", "ByPath": "GSI2"}, Delimiter: "/"}},
		{layouts.ShardedName, []string{"--shards", "3", "--attr", "GraphId=Graph", "--attr", "Depth=Level"},
			layouts.Options{Shards: 3, Attr: map[string]string{"GraphId": "Graph", "Depth": "Level"}}},
		{layouts.ClosureName, []string{"--attr", "Id=NodeId", "--attr", "RelativeDepth=Rd", "--attr", "ByAncestor=ByAnc", "--closure-copy", "name,part_no"},
			layouts.Options{Attr: map[string]string{"Id": "NodeId", "RelativeDepth": "Rd", "ByAncestor": "ByAnc"}, ClosureCopy: []string{"name", "part_no"}}},
		{layouts.PrefixName, []string{"--attr", "Key=PK", "--attr", "Child=SK", "--delimiter", "/"},
			layouts.Options{Attr: map[string]string{"Key": "PK", "Child": "SK"}, Delimiter: "/"}},
	} {
		t.Run(tt.layout, func(t *testing.T) {
			t.Parallel()
			l, err := layouts.New(tt.layout, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			spec := l.Table()
			table := loadTable(t, env, client, "fixtures/cars.csv", typesFlag, l, tt.flags...)
			sameState(t, "import", tableState(t, client, table, spec), wantState(t, "fixtures/cars.csv", typesFlag, l))
			common := append([]string{"--in", snapPath, "--types", typesFlag, "--layout", tt.layout, "--table", table}, tt.flags...)
			// The snapshot's moves are meant (the guard counts their deletes).
			if stdout, stderr, code := run(t, env, append([]string{"apply", "--allow-mass-delete", "--no-progress"}, common...)...); code != 0 {
				t.Fatalf("apply: exit %d:\n%s\n%s", code, stdout, stderr)
			}
			sameState(t, "after apply", tableState(t, client, table, spec), wantState(t, snapPath, typesFlag, l))
			if stdout, stderr, code := run(t, env, append([]string{"plan", "--detailed-exitcode"}, common...)...); code != 0 {
				t.Errorf("plan after apply: exit %d, want 0 (no changes):\n%s\n%s", code, stdout, stderr)
			}

			// edit: the dry run's plan file is what the edit then writes.
			ops := filepath.Join(t.TempDir(), "ops.jsonl")
			if err := os.WriteFile(ops, []byte(`{"op":"move","id":"CM17","parent":"CM15"}`+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			editArgs := append([]string{"edit", "--ops", ops, "--table", table, "--layout", tt.layout, "--no-progress"}, tt.flags...)
			out := filepath.Join(t.TempDir(), "edit-plan.json")
			before := tableState(t, client, table, spec)
			if stdout, stderr, code := run(t, env, append(editArgs, "--dry-run", "--out", out)...); code != 0 {
				t.Fatalf("edit --dry-run: exit %d:\n%s\n%s", code, stdout, stderr)
			}
			_, planPuts, planDels := readPlanFile(t, out, spec)
			if stdout, stderr, code := run(t, env, editArgs...); code != 0 {
				t.Fatalf("edit: exit %d:\n%s\n%s", code, stdout, stderr)
			}
			after := tableState(t, client, table, spec)
			sameState(t, "after edit", after, wantState(t, editedPath, typesFlag, l))
			puts, dels := diffStates(before, after)
			sameState(t, "edit's writes vs its plan file", puts, planPuts)
			if !maps.Equal(dels, planDels) {
				t.Errorf("edit deleted %d keys, its plan file %d", len(dels), len(planDels))
			}

			// migrate out of the table, with its options given as --from-*.
			var from []string
			for i := 0; i < len(tt.flags); i += 2 {
				from = append(from, "--from-"+strings.TrimPrefix(tt.flags[i], "--"), tt.flags[i+1])
			}
			dst := ddblocal.TableName(t)
			dropTableLater(t, client, dst)
			stdout, stderr, code := run(t, env, append([]string{"migrate", "--from-table", table, "--from-layout", tt.layout,
				"--to-table", dst, "--to-layout", "closure", "--create-table", "--no-progress"}, from...)...)
			if code != 0 || !strings.Contains(stdout, "verified") {
				t.Fatalf("migrate: exit %d:\n%s\n%s", code, stdout, stderr)
			}
			sameState(t, "migrated", tableState(t, client, dst, closure.Table()), wantState(t, editedPath, typesFlag, closure))
		})
	}
}

// TestApplyTypedValuesAreStable applies a DynamoDB JSON snapshot with every
// attribute type, numbers in non-canonical text and sets in any order: the
// table equals import of it, and a plan after the apply finds nothing to do
// (DynamoDB's normalized numbers and set order are not changes).
func TestApplyTypedValuesAreStable(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	snap := filepath.Join(t.TempDir(), "typed.ddbjson")
	lines := []string{
		`{"Item":{"id":{"S":"R"},"n":{"N":"1.50"},"big":{"N":"12345678901234567890.000"},"neg":{"N":"-0.0100"},"e":{"N":"1E+2"},"b":{"B":"AAEC"},"t":{"BOOL":true},"z":{"NULL":true}}}`,
		`{"Item":{"id":{"S":"K1"},"parent_id":{"S":"R"},"ss":{"SS":["b","a","c"]},"ns":{"NS":["3","1.50","-2","1E+1"]},"bs":{"BS":["Ag==","AQ=="]}}}`,
		`{"Item":{"id":{"S":"K2"},"parent_id":{"S":"K1"},"l":{"L":[{"N":"2.0"},{"S":"x"},{"M":{"q":{"N":"0.10"},"r":{"SS":["y","x"]}}}]},"m":{"M":{"a":{"N":"007"},"b":{"BOOL":false}}}}}`,
	}
	if err := os.WriteFile(snap, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, _ := layouts.New(name, layouts.Options{})
			table := ddblocal.NewTable(t, client, l.Table())
			common := []string{"--in", snap, "--format", "ddbjson", "--layout", name, "--table", table}
			if stdout, stderr, code := run(t, env, append([]string{"apply", "--no-progress"}, common...)...); code != 0 {
				t.Fatalf("apply: exit %d:\n%s\n%s", code, stdout, stderr)
			}
			got := canonical(t, sortSets(scanTable(t, client, table)))
			want := canonical(t, sortSets(expectedItems(t, snap, "", l)))
			if !slices.Equal(got, want) {
				diffLines(t, got, want)
			}
			stdout, stderr, code := run(t, env, append([]string{"plan", "--json", "--detailed-exitcode"}, common...)...)
			if code != 0 {
				t.Errorf("plan after apply: exit %d, want 0:\n%s\n%s", code, stdout, stderr)
			}
		})
	}
}

// sortSets gives items' sets one order, with their numbers normalized:
// DynamoDB keeps a set's elements in an order of its own.
func sortSets(items []layouts.Item) []layouts.Item {
	out := make([]layouts.Item, len(items))
	for i, it := range items {
		out[i] = sortSetsMap(it)
	}
	return out
}

func sortSetsMap(m map[string]types.AttributeValue) map[string]types.AttributeValue {
	n := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		n[k] = sortSetsValue(v)
	}
	return n
}

func sortSetsValue(v types.AttributeValue) types.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberSS:
		return &types.AttributeValueMemberSS{Value: slices.Sorted(slices.Values(v.Value))}
	case *types.AttributeValueMemberNS:
		var ns []string
		for _, e := range v.Value {
			ns = append(ns, normalizeValue(&types.AttributeValueMemberN{Value: e}).(*types.AttributeValueMemberN).Value)
		}
		return &types.AttributeValueMemberNS{Value: slices.Sorted(slices.Values(ns))}
	case *types.AttributeValueMemberBS:
		bs := slices.Clone(v.Value)
		slices.SortFunc(bs, func(a, b []byte) int { return strings.Compare(string(a), string(b)) })
		return &types.AttributeValueMemberBS{Value: bs}
	case *types.AttributeValueMemberL:
		l := make([]types.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = sortSetsValue(e)
		}
		return &types.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberM:
		return &types.AttributeValueMemberM{Value: sortSetsMap(v.Value)}
	}
	return v
}

// TestApplyRandomSnapshotSequence applies a sequence of random snapshots in
// every layout: after each apply the table equals import of the snapshot,
// the items written are the plan's, and a second plan finds nothing to do.
func TestApplyRandomSnapshotSequence(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	dir := t.TempDir()
	first := filepath.Join(dir, "round0.csv")
	if _, stderr, code := run(t, nil, "gen", "--nodes", "200", "--shape", "random", "--seed", "11", "--out", first); code != 0 {
		t.Fatal(stderr)
	}
	// The same snapshots for every layout.
	snaps := []string{first}
	c := readCSVFile(t, first)
	rng := rand.New(rand.NewPCG(11, 6))
	for round := 1; round <= 3; round++ {
		c = mutate(c, rng, round, 6)
		snaps = append(snaps, c.write(t, filepath.Join(dir, fmt.Sprintf("round%d.csv", round))))
	}
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, _ := layouts.New(name, layouts.Options{})
			spec := l.Table()
			table := ddblocal.NewTable(t, client, spec)
			proxy := newProxy(t, endpoint)
			env := awsEnv(proxy.URL())
			tmp := t.TempDir()
			var accepted int64
			for round, snap := range snaps {
				common := []string{"--in", snap, "--layout", name, "--table", table}
				before := tableState(t, client, table, spec)
				out := filepath.Join(tmp, fmt.Sprintf("plan%d.json", round))
				if _, stderr, code := run(t, env, append([]string{"plan", "--out", out}, common...)...); code != 0 {
					t.Fatalf("round %d: plan: exit %d: %s", round, code, stderr)
				}
				pf, planPuts, planDels := readPlanFile(t, out, spec)
				// A random snapshot may move or remove much of a small
				// tree, meant: the guard is not what this test checks.
				if _, stderr, code := run(t, env, append([]string{"apply", "--allow-mass-delete", "--no-progress"}, common...)...); code != 0 {
					t.Fatalf("round %d: apply: exit %d: %s", round, code, stderr)
				}
				c := proxy.Counts()
				if c.AcceptedItems-accepted != pf.Summary.changes() {
					t.Errorf("round %d: apply wrote %d items, the plan has %d operations", round, c.AcceptedItems-accepted, pf.Summary.changes())
				}
				accepted = c.AcceptedItems
				after := tableState(t, client, table, spec)
				sameState(t, fmt.Sprintf("round %d: table vs import of the snapshot", round), after, wantState(t, snap, "", l))
				puts, dels := diffStates(before, after)
				sameState(t, fmt.Sprintf("round %d: changed items vs the plan's puts", round), puts, planPuts)
				if !maps.Equal(dels, planDels) {
					t.Errorf("round %d: %d keys deleted, the plan deletes %d", round, len(dels), len(planDels))
				}
				if round > 0 && pf.Summary.MovedSubtrees == 0 {
					t.Errorf("round %d: no moves planned: the snapshot sequence tests less than it should", round)
				}
				if stdout, stderr, code := run(t, env, append([]string{"plan", "--detailed-exitcode"}, common...)...); code != 0 {
					t.Errorf("round %d: plan after apply: exit %d, want 0:\n%s\n%s", round, code, stdout, stderr)
				}
				if c := proxy.Counts(); c.AcceptedItems != accepted {
					t.Errorf("round %d: plan wrote %d items", round, c.AcceptedItems-accepted)
				}
			}
		})
	}
}

// countLines is the number of non-empty lines of a file (0 when it is
// missing).
func countLines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) != "" {
			n++
		}
	}
	return n
}

// TestApplyResumeKeepsDeadLetters: items DynamoDB rejected before an
// interrupt are below the checkpoint's watermark, so the resumed run skips
// them; the dead-letter file must still hold them when the apply ends, and
// the apply must say items were set aside (exit 1).
func TestApplyResumeKeepsDeadLetters(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	dir := t.TempDir()
	gen := filepath.Join(dir, "gen.jsonl")
	if _, stderr, code := run(t, nil, "gen", "--nodes", "3000", "--shape", "random", "--seed", "3", "--out", gen); code != 0 {
		t.Fatal(stderr)
	}
	// Every 60th node carries "bad"; between treeport and DynamoDB Local a
	// proxy refuses a batch holding such an item as DynamoDB refuses an
	// item it cannot take (a ValidationException). Validation cannot know
	// of it: only the writer meets it, and sets the item aside.
	lines := strings.Split(strings.TrimSpace(readFile(t, gen)), "\n")
	bad := 0
	for i := range lines {
		if i%60 == 59 {
			lines[i] = strings.TrimSuffix(lines[i], "}") + `,"bad":"x"}`
			bad++
		}
	}
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, _ := layouts.New("path", layouts.Options{})
	table := ddblocal.NewTable(t, client, l.Table())
	proxy, err := faultproxy.New(faultproxy.Config{Target: endpoint, Reject: "bad", Lifetime: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	endpoint = proxy.URL()
	ck, dl := filepath.Join(dir, "ck.json"), filepath.Join(dir, "dead.jsonl")
	args := []string{"apply", "--in", in, "--layout", "path", "--table", table, "--checkpoint", ck, "--dead-letter", dl, "--no-progress"}

	moved := checkpointMoved(ck)
	interruptWhen(t, awsEnv(endpoint), append(args, "--max-wcu", "1500", "--concurrency", "2"), "dead letters", func(stderr string) bool {
		return moved(stderr) && countLines(dl) >= 2
	})
	first := countLines(dl)
	if first == 0 || first >= bad {
		t.Fatalf("%d of %d rejected items dead-lettered before the interrupt: the test proves nothing", first, bad)
	}
	stdout, msg, code := run(t, awsEnv(endpoint), args...)
	if !strings.Contains(msg, "resuming from checkpoint") {
		t.Fatalf("the rerun did not resume: exit %d:\n%s\n%s", code, stdout, msg)
	}
	if n := int64(len(scanTable(t, client, table))); n != int64(len(lines)-bad) {
		t.Errorf("table holds %d items, want %d", n, len(lines)-bad)
	}
	if got := countLines(dl); got != bad {
		t.Errorf("after the resumed apply the dead-letter file holds %d items, want all %d rejected ones (%d were set aside before the interrupt)", got, bad, first)
	}
	if code != 1 {
		t.Errorf("resumed apply with rejected items: exit %d, want 1:\n%s\n%s", code, stdout, msg)
	}
}

// TestApplyWCUIsThePlans: plan says what writing the plan costs, apply says
// what the writes cost, and the two agree. The plan's figure is the one
// DynamoDB bills (the larger of the old and new item, twice on an index
// whose key changes, deletes on every index the old item was in): it is
// held to DynamoDB Local's ConsumedCapacity for a move, an attribute
// change, a new and a removed node in every layout.
func TestApplyWCUIsThePlans(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	env := awsEnv(endpoint)
	client := ddblocal.Client(t, endpoint)
	dir := t.TempDir()
	base := filepath.Join(dir, "base.csv")
	if _, stderr, code := run(t, nil, "gen", "--nodes", "40", "--shape", "balanced", "--fanout", "3", "--seed", "5", "--out", base); code != 0 {
		t.Fatalf("gen: %s", stderr)
	}
	snap := readCSVFile(t, base).clone()
	snap.row(t, "N3")[1] = "N2" // N3 moves, with its subtree, under N2
	snap.set(t, "N5", "name", "Renamed")
	snap.remove(t, "N40")
	snap.add(t, map[string]string{"id": "NEW", "parent_id": "N1", "name": "New"})
	in := snap.write(t, filepath.Join(dir, "snap.csv"))
	planWCU := regexp.MustCompile(`Writing the plan costs ([\d,]+) WCU`)
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			l, err := layouts.New(name, layouts.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, report := range []bool{false, true} {
				table := loadTable(t, env, client, base, "", l)
				common := []string{"--in", in, "--layout", name, "--table", table}
				stdout, stderr, code := run(t, env, append([]string{"plan"}, common...)...)
				m := planWCU.FindStringSubmatch(stdout)
				if code != 0 || m == nil {
					t.Fatalf("plan: exit %d\n%s%s", code, stdout, stderr)
				}
				// The snapshot's moves are meant (the guard counts their deletes).
				args := append([]string{"apply", "--allow-mass-delete", "--no-progress"}, common...)
				rep := filepath.Join(dir, name+"-report.json")
				if report {
					args = append(args, "--report", rep)
				}
				stdout, stderr, code = run(t, env, args...)
				if code != 0 {
					t.Fatalf("apply: exit %d\n%s%s", code, stdout, stderr)
				}
				if !report {
					if want := ": " + m[1] + " WCU, as planned,"; !strings.Contains(stdout, want) {
						t.Errorf("plan costs %s WCU; apply does not say %q:\n%s", m[1], want, stdout)
					}
					continue
				}
				var r struct {
					Writer struct {
						ConsumedWCU float64 `json:"consumed_wcu"`
					} `json:"writer"`
				}
				if err := json.Unmarshal([]byte(readFile(t, rep)), &r); err != nil {
					t.Fatal(err)
				}
				if got := units.Thousands(int64(r.Writer.ConsumedWCU)); got != m[1] || r.Writer.ConsumedWCU != math.Trunc(r.Writer.ConsumedWCU) {
					t.Errorf("DynamoDB Local consumed %s WCU; the plan said %s", got, m[1])
				}
				if want := m[1] + " WCU consumed,"; !strings.Contains(stdout, want) {
					t.Errorf("apply does not say %q:\n%s", want, stdout)
				}
			}
		})
	}
}
