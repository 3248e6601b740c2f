package main

// End-to-end tests of sharded apply and migrate (issue 7) against DynamoDB
// Local.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// ---- shards (issue 7) ---------------------------------------------------------

// TestShardedApplyWritesEachItemOnce runs apply as 4 shards one after the
// other, on a fresh table and then with the refreshed snapshot: the shards'
// plans are disjoint and cover the unsharded plan, their writes add up to
// it, and the table ends as the unsharded apply leaves it.
func TestShardedApplyWritesEachItemOnce(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	typesFlag := fixtureTypes(t, "cars")
	_, snap := carsSnapshot(t)
	snapPath := snap.write(t, filepath.Join(t.TempDir(), "snapshot.csv"))
	const in, N = "fixtures/cars.csv", 4
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, _ := layouts.New(name, layouts.Options{})
			spec := l.Table()
			table := ddblocal.NewTable(t, client, spec)
			dir := t.TempDir()
			common := func(snapshot string) []string {
				return []string{"--in", snapshot, "--types", typesFlag, "--layout", name, "--table", table}
			}
			for round, snapshot := range []string{in, snapPath} {
				before := tableState(t, client, table, spec)
				stdout, stderr, code := run(t, env, append([]string{"plan", "--json"}, common(snapshot)...)...)
				if code != 0 {
					t.Fatalf("plan: exit %d: %s", code, stderr)
				}
				whole := parseSummary(t, stdout)
				if whole.changes() == 0 {
					t.Fatalf("round %d: nothing to plan", round)
				}
				// The shards' plans split the whole plan's keys.
				out := filepath.Join(dir, fmt.Sprintf("plan%d.json", round))
				if _, stderr, code := run(t, env, append([]string{"plan", "--out", out}, common(snapshot)...)...); code != 0 {
					t.Fatalf("plan --out: exit %d: %s", code, stderr)
				}
				_, wholePuts, wholeDels := readPlanFile(t, out, spec)
				unionPuts, unionDels := map[string]string{}, map[string]bool{}
				for k := range N {
					shard := fmt.Sprintf("%d/%d", k, N)
					if _, stderr, code := run(t, env, append([]string{"plan", "--shard", shard, "--out", out}, common(snapshot)...)...); code != 0 {
						t.Fatalf("plan --shard %s: exit %d: %s", shard, code, stderr)
					}
					pf, puts, dels := readPlanFile(t, ddbwrite.Shard{K: k, Of: N}.FileName(out), spec)
					if pf.Shard != shard || pf.Summary.Shard != shard {
						t.Errorf("plan of shard %s says shard %q/%q", shard, pf.Shard, pf.Summary.Shard)
					}
					for key, v := range puts {
						if _, dup := unionPuts[key]; dup {
							t.Errorf("round %d: %q is put by two shards", round, key)
						}
						unionPuts[key] = v
					}
					for key := range dels {
						if unionDels[key] {
							t.Errorf("round %d: %q is deleted by two shards", round, key)
						}
						unionDels[key] = true
					}
				}
				sameState(t, "union of the shards' puts", unionPuts, wholePuts)
				if !maps.Equal(unionDels, wholeDels) {
					t.Errorf("round %d: the shards delete %d keys, the whole plan %d", round, len(unionDels), len(wholeDels))
				}

				// Apply the shards side by side, as their copies run: a
				// copy's deletes of moved nodes wait for the new items
				// other copies put (a prefix move changes a node's keys).
				var written, planned int64
				type result struct {
					stdout, stderr string
					code           int
				}
				results := make([]result, N)
				var wg sync.WaitGroup
				report := filepath.Join(dir, fmt.Sprintf("report%d.json", round))
				for k := range N {
					wg.Add(1)
					go func() {
						defer wg.Done()
						shard := ddbwrite.Shard{K: k, Of: N}
						stdout, stderr, code := run(t, env, append([]string{"apply", "--allow-mass-delete", "--shard", shard.String(), "--report", report, "--no-progress"}, common(snapshot)...)...)
						results[k] = result{stdout, stderr, code}
					}()
				}
				wg.Wait()
				for k := range N {
					shard := ddbwrite.Shard{K: k, Of: N}
					stdout, stderr, code := results[k].stdout, results[k].stderr, results[k].code
					if code != 0 {
						t.Fatalf("apply --shard %s: exit %d:\n%s\n%s", shard, code, stdout, stderr)
					}
					if _, err := os.Stat(shard.FileName(report)); errors.Is(err, os.ErrNotExist) && strings.Contains(stdout, "No changes") {
						continue // nothing for this shard (and no report: see TestApplyNoChangesWritesReport)
					}
					rep := readReport(t, shard.FileName(report))
					written += rep.Writer.Items
					planned += rep.Plan.changes()
					if rep.Plan.Shard != shard.String() || rep.Writer.Items != rep.Plan.changes() {
						t.Errorf("report of shard %s: shard %q, %d written, %d planned", shard, rep.Plan.Shard, rep.Writer.Items, rep.Plan.changes())
					}
				}
				if written != whole.changes() || planned != whole.changes() {
					t.Errorf("round %d: the shards planned %d and wrote %d items; the unsharded plan has %d", round, planned, written, whole.changes())
				}
				after := tableState(t, client, table, spec)
				sameState(t, fmt.Sprintf("round %d: after the shards", round), after, wantState(t, snapshot, typesFlag, l))
				gotPuts, gotDels := diffStates(before, after)
				sameState(t, "what the shards changed vs the unsharded plan", gotPuts, wholePuts)
				if !maps.Equal(gotDels, wholeDels) {
					t.Errorf("round %d: the shards deleted %d keys, the unsharded plan %d", round, len(gotDels), len(wholeDels))
				}
			}
		})
	}
}

// TestShardedMigrate migrates in 3 shards: each verifies its shard, and the
// destination ends equal to an unsharded migration's.
func TestShardedMigrate(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	typesFlag := fixtureTypes(t, "cars")
	closure, _ := layouts.New(layouts.ClosureName, layouts.Options{})
	src := loadTable(t, env, client, "fixtures/cars.csv", typesFlag, closure)
	before := rawLines(t, client, src)
	migrate := func(dst string, extra ...string) (string, string, int) {
		return run(t, env, append([]string{"migrate", "--from-table", src, "--from-layout", "closure", "--to-table", dst,
			"--to-layout", "prefix", "--create-table", "--no-progress"}, extra...)...)
	}
	whole := ddblocal.TableName(t)
	dropTableLater(t, client, whole)
	if stdout, stderr, code := migrate(whole); code != 0 || !strings.Contains(stdout, "verified") {
		t.Fatalf("unsharded migrate: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	want := canonical(t, scanTable(t, client, whole))

	const N = 3
	sharded := ddblocal.TableName(t)
	dropTableLater(t, client, sharded)
	report := filepath.Join(t.TempDir(), "report.json")
	var written int64
	for k := range N {
		shard := ddbwrite.Shard{K: k, Of: N}
		stdout, stderr, code := migrate(sharded, "--shard", shard.String(), "--report", report)
		if code != 0 || !strings.Contains(stdout, "verified") || !strings.Contains(stdout, "(shard "+shard.String()+")") {
			t.Fatalf("migrate --shard %s: exit %d:\n%s\n%s", shard, code, stdout, stderr)
		}
		rep := readReport(t, shard.FileName(report))
		written += rep.Writer.Items
		n := int64(len(scanTable(t, client, sharded)))
		if rep.Writer.Items <= 0 || (k < N-1 && n >= int64(len(want))) || n != written {
			t.Errorf("after shard %s: %d items written by it, %d in all, the table holds %d of %d", shard, rep.Writer.Items, written, n, len(want))
		}
	}
	if written != int64(len(want)) {
		t.Errorf("the shards wrote %d items, the unsharded migrate %d", written, len(want))
	}
	diffLines(t, canonical(t, scanTable(t, client, sharded)), want)
	if !slices.Equal(rawLines(t, client, src), before) {
		t.Error("the source table changed")
	}
}

// runAll runs several treeport commands at the same time, as N copies of a
// sharded job run side by side, and returns their stdout, stderr and exit
// codes.
func runAll(t *testing.T, env []string, argss [][]string) (stdouts, stderrs []string, codes []int) {
	t.Helper()
	cmds := make([]*exec.Cmd, len(argss))
	outs := make([]*strings.Builder, len(argss))
	errs := make([]*strings.Builder, len(argss))
	for i, args := range argss {
		cmd := exec.Command(treeportBin, args...)
		cmd.Env = append(os.Environ(), env...)
		outs[i], errs[i] = &strings.Builder{}, &strings.Builder{}
		cmd.Stdout, cmd.Stderr = outs[i], errs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	for i, cmd := range cmds {
		err := cmd.Wait()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		stdouts, stderrs, codes = append(stdouts, outs[i].String()), append(stderrs, errs[i].String()), append(codes, cmd.ProcessState.ExitCode())
	}
	return stdouts, stderrs, codes
}

// TestShardsSideBySide runs the copies of sharded apply and migrate at the
// same time, as issue 7 means them to run (an Indexed Job, a matrix), all
// given the same file names: the tables end exact.
func TestShardsSideBySide(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	typesFlag := fixtureTypes(t, "cars")
	_, snap := carsSnapshot(t)
	dir := t.TempDir()
	snapPath := snap.write(t, filepath.Join(dir, "snapshot.csv"))
	const N = 3
	prefix, _ := layouts.New(layouts.PrefixName, layouts.Options{})
	closure, _ := layouts.New(layouts.ClosureName, layouts.Options{})

	table := loadTable(t, env, client, "fixtures/cars.csv", typesFlag, prefix)
	var argss [][]string
	for k := range N {
		// The snapshot's moves are meant (the guard counts their deletes).
		argss = append(argss, []string{"apply", "--allow-mass-delete", "--in", snapPath, "--types", typesFlag, "--layout", "prefix", "--table", table,
			"--shard", fmt.Sprintf("%d/%d", k, N), "--checkpoint", filepath.Join(dir, "apply-ck.json"), "--no-progress"})
	}
	stdouts, stderrs, codes := runAll(t, env, argss)
	for k := range N {
		if codes[k] != 0 {
			t.Errorf("apply --shard %d/%d: exit %d:\n%s\n%s", k, N, codes[k], stdouts[k], stderrs[k])
		}
	}
	sameState(t, "after the apply shards", tableState(t, client, table, prefix.Table()), wantState(t, snapPath, typesFlag, prefix))

	// migrate, each copy keeping its snapshot of the source in the same
	// --snapshot file name.
	dst := ddblocal.TableName(t)
	dropTableLater(t, client, dst)
	if _, err := client.CreateTable(context.Background(), ddblocal.CreateTableInput(dst, closure.Table())); err != nil {
		t.Fatal(err)
	}
	argss = nil
	for k := range N {
		argss = append(argss, []string{"migrate", "--from-table", table, "--from-layout", "prefix", "--to-table", dst, "--to-layout", "closure",
			"--shard", fmt.Sprintf("%d/%d", k, N), "--snapshot", filepath.Join(dir, "source.ddbjson"),
			"--checkpoint", filepath.Join(dir, "migrate-ck.json"), "--no-progress"})
	}
	stdouts, stderrs, codes = runAll(t, env, argss)
	for k := range N {
		if codes[k] != 0 || !strings.Contains(stdouts[k], "verified") {
			t.Errorf("migrate --shard %d/%d: exit %d:\n%s\n%s", k, N, codes[k], stdouts[k], stderrs[k])
		}
	}
	sameState(t, "after the migrate shards", tableState(t, client, dst, closure.Table()), wantState(t, snapPath, typesFlag, closure))
}
