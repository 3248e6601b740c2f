package main

// migrate out of core (issue 27): a source whose forest does not fit
// --memory is spilled and imported by the out-of-core passes.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/testserver/faultproxy"
	"github.com/treeport/treeport/layouts"
)

// TestMigrateOutOfCoreMatchesInMemory migrates the typed cars table from
// path into every layout, and from every layout into closure, once in
// memory and once in a tiny forced budget: the destinations are equal
// item for item, and the spill is gone from --tmp-dir.
func TestMigrateOutOfCoreMatchesInMemory(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	typesFlag := fixtureTypes(t, "cars")
	const in = "fixtures/cars.csv"
	sources := map[string]string{}
	for _, name := range layouts.Names() {
		l, _ := layouts.New(name, layouts.Options{})
		sources[name] = loadTable(t, env, client, in, typesFlag, l)
	}
	type pair struct{ from, to string }
	var pairs []pair
	for _, name := range layouts.Names() {
		pairs = append(pairs, pair{layouts.PathName, name})
		if name != layouts.PathName {
			pairs = append(pairs, pair{name, layouts.ClosureName})
		}
	}
	for _, p := range pairs {
		t.Run(p.from+"-to-"+p.to, func(t *testing.T) {
			t.Parallel()
			migrate := func(extra ...string) ([]string, string) {
				dst := ddblocal.TableName(t)
				dropTableLater(t, client, dst)
				args := append([]string{"migrate", "--from-table", sources[p.from], "--from-layout", p.from,
					"--to-table", dst, "--to-layout", p.to, "--create-table", "--no-progress"}, extra...)
				stdout, stderr, code := run(t, env, args...)
				if code != 0 {
					t.Fatalf("%v: exit %d:\n%s\n%s", extra, code, stdout, stderr)
				}
				if !strings.Contains(stdout, "verified: ") {
					t.Errorf("%v: no verification:\n%s", extra, stdout)
				}
				return canonical(t, scanTable(t, client, dst)), stderr
			}
			want, memErr := migrate()
			tmp := t.TempDir()
			got, oocErr := migrate(oocArgs(tmp)...)
			if strings.Contains(memErr, "out of core") || !strings.Contains(oocErr, "out of core") {
				t.Errorf("the runs did not take the paths asked for:\nin memory: %s\nout of core: %s", memErr, oocErr)
			}
			if len(want) == 0 {
				t.Fatal("the in-memory migrate wrote nothing")
			}
			diffLines(t, got, want)
			emptyDir(t, tmp)
		})
	}
}

// TestMigrateOutOfCoreRefusals: out of core, migrate refuses a
// destination with an item that does not read as a node (as apply does),
// and needs a --tmp-dir it can write; each is refused (exit 2) with
// nothing written. (--shard: TestMigrateOutOfCoreSharded.)
func TestMigrateOutOfCoreRefusals(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	path, _ := layouts.New("path", layouts.Options{})
	closure, _ := layouts.New("closure", layouts.Options{})
	src := loadTable(t, env, client, "fixtures/folders.json", "", path)
	// A destination with an item treeport did not write.
	dst := ddblocal.NewTable(t, client, closure.Table())
	item := map[string]types.AttributeValue{}
	keys := []layouts.KeyAttr{closure.Table().PK}
	if sk := closure.Table().SK; sk != nil {
		keys = append(keys, *sk)
	}
	for _, k := range keys {
		item[k.Name] = &types.AttributeValueMemberS{Value: "hand-made"}
		if k.Type == types.ScalarAttributeTypeN {
			item[k.Name] = &types.AttributeValueMemberN{Value: "7"}
		}
	}
	putItems(t, client, dst, item)
	before := rawLines(t, client, dst)
	readonly := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(readonly, 0o500); err != nil {
		t.Fatal(err)
	}
	empty := ddblocal.NewTable(t, client, closure.Table())
	for _, c := range []struct {
		name, table string
		args        []string
		say         string
	}{
		// Refreshed out of core, as apply: an item that does not read
		// is never put over or deleted.
		{"not empty, an item that does not read", dst, oocArgs(t.TempDir()), "--ignore-unparsable"},
		{"tmp-dir", empty, oocArgs(filepath.Join(readonly, "sub")), "--tmp-dir"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"migrate", "--from-table", src, "--from-layout", "path", "--to-table", c.table, "--to-layout", "closure", "--no-progress"}, c.args...)
			_, stderr, code := run(t, env, args...)
			if code != 2 || !strings.Contains(stderr, c.say) {
				t.Errorf("exit %d, want 2 and %q:\n%s", code, c.say, stderr)
			}
		})
	}
	diffLines(t, rawLines(t, client, dst), before)
	if items := scanTable(t, client, empty); len(items) != 0 {
		t.Errorf("a refused migrate wrote %d items", len(items))
	}
}

// TestMigrateOutOfCoreKillAndResume kills migrates out of core with
// SIGKILL at random points (the spill, the passes, the writes) and runs
// the same command again: the last one finishes from the checkpoint and
// the destination is exactly the in-memory migrate's.
func TestMigrateOutOfCoreKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: kills and resumes a migrate")
	}
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	proxy, err := faultproxy.New(faultproxy.Config{Target: endpoint, Seed: 1, Lifetime: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	path, _ := layouts.New("path", layouts.Options{})
	src := loadTable(t, env, client, genShuffled(t, 3000, "jsonl"), "", path)
	memDst := ddblocal.TableName(t)
	dropTableLater(t, client, memDst)
	if _, stderr, code := run(t, env, "migrate", "--from-table", src, "--from-layout", "path", "--to-table", memDst, "--to-layout", "closure", "--create-table", "--no-progress"); code != 0 {
		t.Fatalf("in memory: exit %d: %s", code, stderr)
	}
	want := canonical(t, scanTable(t, client, memDst))
	dst := ddblocal.TableName(t)
	dropTableLater(t, client, dst)
	ck := filepath.Join(t.TempDir(), "ck.json")
	tmp := t.TempDir()
	args := append([]string{"migrate", "--from-table", src, "--from-layout", "path", "--to-table", dst, "--to-layout", "closure", "--create-table",
		"--checkpoint", ck, "--concurrency", "4", "--max-wcu", "4000", "--no-progress"}, oocArgs(tmp)...)
	kills, _, outs := killRuns(t, args, proxy.URL(), 4, func(rng *rand.Rand) time.Duration {
		return time.Duration(300+rng.IntN(1500)) * time.Millisecond
	})
	if kills == 0 {
		t.Fatal("no run was killed: the test proves nothing")
	}
	if last := outs[len(outs)-1]; !strings.Contains(last, "resuming from checkpoint") {
		t.Errorf("the last run did not resume:\n%s", last)
	}
	diffLines(t, canonical(t, scanTable(t, client, dst)), want)
	t.Logf("%d kills; %s", kills, fmt.Sprint(proxy.Counts().AcceptedItems))
}

// TestMigrateOutOfCoreIntoNonEmpty: a destination that holds an older
// copy (nodes the source no longer has, moved and changed ones) is
// refreshed out of core to exactly what the in-memory migrate makes of
// the same destination, and verified; run again with its finished
// checkpoint, it refreshes afresh and finds nothing to do.
func TestMigrateOutOfCoreIntoNonEmpty(t *testing.T) {
	_, client, env := ddbLocal(t)
	typesFlag, baseFile, snapFile := carsSnapshotFiles(t)
	path, _ := layouts.New("path", layouts.Options{})
	closure, _ := layouts.New("closure", layouts.Options{})
	src := loadTable(t, env, client, snapFile, typesFlag, path)
	inMemory := loadTable(t, env, client, baseFile, typesFlag, closure)
	outOfCore := loadTable(t, env, client, baseFile, typesFlag, closure)
	tmp := t.TempDir()
	ck := filepath.Join(t.TempDir(), "ck.json")
	// The run out of core twice, with a checkpoint: the second finds the
	// first's finished and refreshes the copy afresh (nothing to do).
	for _, c := range []struct {
		table string
		extra []string
	}{{inMemory, nil}, {outOfCore, append(oocArgs(tmp), "--checkpoint", ck)}, {outOfCore, append(oocArgs(tmp), "--checkpoint", ck)}} {
		args := append([]string{"migrate", "--from-table", src, "--from-layout", "path", "--to-table", c.table, "--to-layout", "closure",
			"--allow-mass-delete", "--no-progress"}, c.extra...)
		stdout, stderr, code := run(t, env, args...)
		if code != 0 || !strings.Contains(stdout, "verified: ") {
			t.Fatalf("%v: exit %d:\n%s\n%s", c.extra, code, stdout, stderr)
		}
	}
	emptyDir(t, tmp)
	diffLines(t, rawLines(t, client, outOfCore), rawLines(t, client, inMemory))
	sameState(t, "out of core", tableState(t, client, outOfCore, closure.Table()), wantState(t, snapFile, typesFlag, closure))
}

// TestMigrateOutOfCoreSharded: migrate out of core (forced, 1 MiB) in 3
// copies, one after the other (the first puts into the empty
// destination, the others refresh a destination that holds the first's
// items, planned out of core under --shard) and side by side, into an
// empty prefix table and into a closure table that holds an older copy:
// each copy verifies its shard, and the destinations end as the in-memory
// unsharded migrate leaves them.
func TestMigrateOutOfCoreSharded(t *testing.T) {
	_, client, env := ddbLocal(t)
	typesFlag, baseFile, snapFile := carsSnapshotFiles(t)
	path, _ := layouts.New("path", layouts.Options{})
	src := loadTable(t, env, client, snapFile, typesFlag, path)
	const N = 3
	for _, to := range []string{"prefix", "closure"} {
		l, _ := layouts.New(to, layouts.Options{})
		fresh := func() string {
			if to == "prefix" {
				return ddblocal.NewTable(t, client, l.Table())
			}
			return loadTable(t, env, client, baseFile, typesFlag, l)
		}
		migrate := func(table string, k int) []string {
			return append([]string{"migrate", "--from-table", src, "--from-layout", "path", "--to-table", table, "--to-layout", to,
				"--allow-mass-delete", "--no-progress", "--shard", fmt.Sprintf("%d/%d", k, N)}, oocArgs(t.TempDir())...)
		}
		want := fresh()
		if stdout, stderr, code := run(t, env, "migrate", "--from-table", src, "--from-layout", "path", "--to-table", want, "--to-layout", to,
			"--allow-mass-delete", "--no-progress"); code != 0 || !strings.Contains(stdout, "verified: ") {
			t.Fatalf("in memory into %s: exit %d:\n%s\n%s", to, code, stdout, stderr)
		}
		t.Run(to+" one after the other", func(t *testing.T) {
			table := fresh()
			for k := range N {
				stdout, stderr, code := run(t, env, migrate(table, k)...)
				if code != 0 || !strings.Contains(stdout, fmt.Sprintf("(shard %d/%d)", k, N)) || !strings.Contains(stderr+stdout, "out of core") {
					t.Fatalf("copy %d: exit %d:\n%s\n%s", k, code, stdout, stderr)
				}
			}
			diffLines(t, rawLines(t, client, table), rawLines(t, client, want))
		})
		t.Run(to+" side by side", func(t *testing.T) {
			table := fresh()
			var argss [][]string
			for k := range N {
				argss = append(argss, migrate(table, k))
			}
			stdouts, stderrs, codes := runAll(t, env, argss)
			for k := range N {
				if codes[k] != 0 || !strings.Contains(stdouts[k], "verified: ") {
					t.Errorf("copy %d: exit %d:\n%s\n%s", k, codes[k], stdouts[k], stderrs[k])
				}
			}
			diffLines(t, rawLines(t, client, table), rawLines(t, client, want))
		})
	}
}

// TestMigrateInMemoryCountsTheSnapshot: a source whose ItemCount fits
// --memory is copied in memory even when its snapshot file is large
// (nodes with attributes of kilobytes): the read of the snapshot takes
// the nodes the copy counted, not a guess from the file's size (40 bytes
// a record), which refused it ("its forest does not" fit). The copy is
// the one a large budget makes.
func TestMigrateInMemoryCountsTheSnapshot(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	path, _ := layouts.New("path", layouts.Options{})
	blob := strings.Repeat("x", 3000)
	lines := []string{`{"id":"root","parent_id":"","blob":"` + blob + `"}`}
	for k := range 1500 {
		lines = append(lines, fmt.Sprintf(`{"id":"n%d","parent_id":"%s","blob":"%s"}`, k, []string{"root", fmt.Sprintf("n%d", k/2)}[min(k, 1)], blob))
	}
	src := loadTable(t, env, client, writeLines(t, filepath.Join(t.TempDir(), "big.jsonl"), lines), "", path)
	var want []string
	for _, mem := range []string{"64GiB", "2MiB"} {
		dst := ddblocal.NewTable(t, client, path.Table())
		tmp := t.TempDir()
		_, stderr, code := run(t, env, "migrate", "--from-table", src, "--from-layout", "path", "--to-table", dst, "--to-layout", "path",
			"--memory", mem, "--tmp-dir", tmp, "--no-progress")
		if code != 0 {
			t.Fatalf("--memory %s: exit %d\n%s", mem, code, stderr)
		}
		if strings.Contains(stderr, "out of core") {
			t.Errorf("--memory %s: the copy went out of core, want in memory (1,501 nodes fit 2 MiB)\n%s", mem, stderr)
		}
		emptyDir(t, tmp)
		got := rawLines(t, client, dst)
		if want == nil {
			want = got
		} else if !slices.Equal(got, want) {
			t.Errorf("--memory %s: %d items, want the %d of --memory 64GiB", mem, len(got), len(want))
		}
	}
}
