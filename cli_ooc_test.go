package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/testserver/faultproxy"
	"github.com/treeport/treeport/internal/testserver/s3local"
	"github.com/treeport/treeport/layouts"
)

// oocArgs force the out-of-core passes on a small input, in a tiny budget
// and a tmp dir of the test's.
func oocArgs(tmp string) []string {
	return []string{"--force-out-of-core", "--memory", "1MiB", "--tmp-dir", tmp}
}

// emptyDir fails the test when dir holds anything: the passes' files
// must be gone.
func emptyDir(t *testing.T, dir string) {
	t.Helper()
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d files left in --tmp-dir %s (%s)", len(left), dir, left[0].Name())
	}
}

// genShuffled writes a random forest in a random order: children often
// come before their parents, which the passes must resolve.
func genShuffled(t *testing.T, nodes int, format string) string {
	t.Helper()
	in := filepath.Join(t.TempDir(), "in."+format)
	if _, stderr, code := run(t, nil, "gen", "--nodes", fmt.Sprint(nodes), "--shape", "random", "--trees", "3", "--shuffle", "--seed", "5", "--out", in); code != 0 {
		t.Fatalf("gen: %s", stderr)
	}
	return in
}

// sameFiles compares the import files of two runs: every data file byte
// for byte, and the JSON files but for the manifest's time.
func sameFiles(t *testing.T, want, got string) {
	t.Helper()
	created := regexp.MustCompile(`"created": "[^"]*"`)
	var n int
	filepath.WalkDir(want, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(want, p)
		a, _ := os.ReadFile(p)
		b, err := os.ReadFile(filepath.Join(got, rel))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		n++
		if !bytes.Equal(created.ReplaceAll(a, nil), created.ReplaceAll(b, nil)) {
			t.Errorf("%s differs out of core", rel)
		}
		return nil
	})
	if n < 3 {
		t.Fatalf("only %d files compared", n)
	}
}

// TestOutOfCoreImportFiles: import --out of every fixture and of a
// shuffled random forest, in every layout, writes byte for byte the same
// files out of core (in a 1 MiB budget) as in memory, and leaves nothing
// in --tmp-dir.
func TestOutOfCoreImportFiles(t *testing.T) {
	inputs := [][]string{
		{"fixtures/cars.csv", "--types", strings.TrimSpace(readFile(t, "fixtures/cars.types"))},
		{"fixtures/folders.json"},
		{"fixtures/org.parquet"},
		{genShuffled(t, 5000, "jsonl")},
	}
	for _, in := range inputs {
		for _, name := range layouts.Names() {
			t.Run(filepath.Base(in[0])+"/"+name, func(t *testing.T) {
				t.Parallel()
				dir, tmp := t.TempDir(), t.TempDir()
				args := append([]string{"import", "--in", in[0], "--layout", name, "--items-per-file", "3000"}, in[1:]...)
				if _, stderr, code := run(t, nil, append(args, "--out", filepath.Join(dir, "mem"))...); code != 0 {
					t.Fatalf("in memory: exit %d: %s", code, stderr)
				}
				if _, stderr, code := run(t, nil, append(append(args, "--out", filepath.Join(dir, "ooc")), oocArgs(tmp)...)...); code != 0 {
					t.Fatalf("out of core: exit %d: %s", code, stderr)
				}
				sameFiles(t, filepath.Join(dir, "mem"), filepath.Join(dir, "ooc"))
				emptyDir(t, tmp)
			})
		}
	}
}

// TestOutOfCoreImportS3: import --out s3:// out of core uploads the same
// items as the local files of an import in memory.
func TestOutOfCoreImportS3(t *testing.T) {
	s3ep := s3local.Endpoint(t)
	client := s3local.Client(t, s3ep)
	bucket := s3local.NewBucket(t, client)
	in := genShuffled(t, 3000, "csv")
	dir, tmp := t.TempDir(), t.TempDir()
	args := []string{"import", "--in", in, "--layout", "closure", "--items-per-file", "4000"}
	if _, stderr, code := run(t, nil, append(args, "--out", dir)...); code != 0 {
		t.Fatalf("in memory: exit %d: %s", code, stderr)
	}
	env := s3Env(s3ep, "http://127.0.0.1:1")
	if _, stderr, code := run(t, env, append(append(args, "--out", "s3://"+bucket+"/ooc"), oocArgs(tmp)...)...); code != 0 {
		t.Fatalf("out of core: exit %d: %s", code, stderr)
	}
	var want, got []string
	matches, _ := filepath.Glob(filepath.Join(dir, "data", "*.json.gz"))
	for _, p := range matches {
		b, _ := os.ReadFile(p)
		want = append(want, gunzipLines(t, b)...)
	}
	for _, k := range s3local.Keys(t, client, bucket, "ooc/data/") {
		got = append(got, gunzipLines(t, s3local.Get(t, client, bucket, k))...)
	}
	slices.Sort(want)
	slices.Sort(got)
	if len(want) < 3000 || !slices.Equal(got, want) {
		t.Errorf("%d items uploaded out of core, %d written in memory: not the same", len(got), len(want))
	}
	emptyDir(t, tmp)
}

// TestOutOfCoreBadInput: every file of fixtures/bad, in every layout, with
// --on-invalid fail and skip: the exit code, what is printed and the
// rejects file are the same out of core as in memory.
func TestOutOfCoreBadInput(t *testing.T) {
	files, _ := filepath.Glob("fixtures/bad/*")
	if len(files) < 20 {
		t.Fatalf("%d bad fixtures", len(files))
	}
	times := regexp.MustCompile(`in [0-9.]+[mµ]?s\b`)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			for _, name := range layouts.Names() {
				for _, mode := range []string{"fail", "skip"} {
					var outs [2]string
					for k, extra := range [][]string{nil, oocArgs(t.TempDir())} {
						dir := t.TempDir()
						args := append([]string{"import", "--in", f, "--layout", name, "--out", filepath.Join(dir, "out"), "--on-invalid", mode, "--rejects", filepath.Join(dir, "rejects")}, extra...)
						stdout, stderr, code := run(t, nil, args...)
						rejects, _ := os.ReadFile(filepath.Join(dir, "rejects"))
						outs[k] = strings.ReplaceAll(fmt.Sprintf("exit %d\n%s\n%s\n%s", code, times.ReplaceAllString(stdout, ""), progressLine.ReplaceAllString(stderr, ""), rejects), dir, "DIR")
					}
					if outs[0] != outs[1] {
						t.Errorf("%s, --on-invalid %s: in memory:\n%s\nout of core:\n%s", name, mode, outs[0], outs[1])
					}
				}
			}
		})
	}
}

// TestOutOfCoreTable: import --table out of core, every layout, of a
// shuffled random forest: the table holds exactly the layout's items.
func TestOutOfCoreTable(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	in := genShuffled(t, 1500, "jsonl")
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, _ := layouts.New(name, layouts.Options{})
			table := ddblocal.TableName(t)
			t.Cleanup(func() {
				client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
			})
			tmp := t.TempDir()
			args := append([]string{"import", "--in", in, "--layout", name, "--table", table, "--create-table", "--concurrency", "4", "--no-progress"}, oocArgs(tmp)...)
			if _, stderr, code := run(t, awsEnv(endpoint), args...); code != 0 {
				t.Fatalf("exit %d:\n%s", code, stderr)
			}
			diffLines(t, canonical(t, scanTable(t, client, table)), canonical(t, expectedItems(t, in, "", l)))
			emptyDir(t, tmp)
		})
	}
}

// TestOutOfCoreKillAndResume kills imports out of core with SIGKILL at
// random points (in the passes or in the writes) and resumes them from
// their checkpoint: the items are numbered in the input's order whatever
// the passes, so the table ends exact and the work redone stays within
// the writer's window a kill.
func TestOutOfCoreKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: kills and resumes a load")
	}
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	proxy, err := faultproxy.New(faultproxy.Config{Target: endpoint, Seed: 1, Lifetime: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	in := genShuffled(t, 3000, "jsonl")
	l, _ := layouts.New("closure", layouts.Options{})
	want := expectedItems(t, in, "", l)
	table := ddblocal.NewTable(t, client, l.Table())
	ck := filepath.Join(t.TempDir(), "ck.json")
	const concurrency = 4
	args := append([]string{"import", "--in", in, "--layout", "closure", "--table", table, "--checkpoint", ck,
		"--concurrency", fmt.Sprint(concurrency), "--max-wcu", "4000", "--no-progress"}, oocArgs(t.TempDir())...)
	kills, atMost, _ := killRuns(t, args, proxy.URL(), 4, func(rng *rand.Rand) time.Duration {
		return time.Duration(300+rng.IntN(1500)) * time.Millisecond
	})
	if kills == 0 {
		t.Fatal("no run was killed: the test proves nothing")
	}
	diffLines(t, canonical(t, scanTable(t, client, table)), canonical(t, want))
	redone := proxy.Counts().AcceptedItems - int64(len(want))
	bound := int64(kills) * int64(2*(concurrency+concurrency+1)*25)
	t.Logf("%d kills: %d items redone (bound %d; the runs said at most %d)", kills, redone, bound, atMost)
	if redone > bound || redone > atMost {
		t.Errorf("redone %d items after %d kills: over the bound %d or what the runs said, %d", redone, kills, bound, atMost)
	}
}

// TestOutOfCoreSignal: SIGINT or SIGTERM in the middle of the passes stops
// the import within about a second (exit 130) and removes the temporary
// files.
func TestOutOfCoreSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: generates and sorts 300,000 nodes")
	}
	in := genShuffled(t, 300_000, "csv")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			r := startRun(t, nil, append([]string{"import", "--in", in, "--layout", "path", "--out", filepath.Join(t.TempDir(), "out")}, oocArgs(tmp)...))
			// Signalled once the passes have written sorted runs.
			r.until(t, "2 sorted runs", func() bool { return runs(tmp) >= 2 })
			r.stopsOn(t, sig, tmp)
		})
	}
}

// runs counts the sorted runs and spools in the passes' directories below
// tmp (not their lock file).
func runs(tmp string) int {
	m, _ := filepath.Glob(filepath.Join(tmp, "treeport-ooc-*", "run-*"))
	s, _ := filepath.Glob(filepath.Join(tmp, "treeport-ooc-*", "spool-*"))
	return len(m) + len(s)
}

// TestOutOfCoreUsage: a --tmp-dir that cannot be written and a bad
// --memory exit 2 with what to do.
func TestOutOfCoreUsage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	os.WriteFile(file, nil, 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"tmp dir under a file", []string{"--out", t.TempDir() + "/o", "--force-out-of-core", "--tmp-dir", file + "/sub"}, "--tmp-dir"},
		{"tmp dir missing", []string{"--out", t.TempDir() + "/o", "--force-out-of-core", "--tmp-dir", "/nonexistent/treeport"}, "give a directory it can write"},
		{"memory not a size", []string{"--out", t.TempDir() + "/o", "--memory", "lots"}, "is not a size"},
		{"memory too small", []string{"--out", t.TempDir() + "/o", "--memory", "1000"}, "at least 1MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"import", "--in", "fixtures/folders.json"}
			if !slices.Contains(tc.args, "--layout") {
				args = append(args, "--layout", "path")
			}
			_, stderr, code := run(t, nil, append(args, tc.args...)...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want 2 and %q:\n%s", code, tc.want, stderr)
			}
		})
	}
}

// TestInMemoryJobsRefuseOverBudget: no job is refused over --memory any
// more: migrate --follow, the last one that held its forest in memory,
// copies out of core and keeps its state in stores that spill (issue 27).
// The dry run of one layout is not refused: it runs out of core;
// plan and apply run out of core (TestPlanOutOfCoreMatchesInMemory),
// under --shard (TestPlanOutOfCoreSharded) and with path ids
// (TestPlanOutOfCorePathIDs) too.
func TestInMemoryJobsRefuseOverBudget(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	l, _ := layouts.New("path", layouts.Options{})
	table := ddblocal.NewTable(t, client, l.Table())
	env := awsEnv(endpoint)
	if _, stderr, code := run(t, env, "import", "--in", "fixtures/folders.json", "--layout", "path", "--table", table, "--no-progress"); code != 0 {
		t.Fatalf("import: exit %d: %s", code, stderr)
	}
	before := canonical(t, scanTable(t, client, table))
	// migrate --follow is no longer refused: its copy runs out of core
	// and its state spills to --tmp-dir (TestFollowKilledAndResumed), and
	// leaves nothing there.
	t.Run("migrate --follow", func(t *testing.T) {
		tmp := t.TempDir()
		t.Cleanup(func() {
			client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table + "-to")})
		})
		stdout, stderr, code := run(t, env, "migrate", "--from-table", table, "--from-layout", "path", "--to-table", table+"-to", "--to-layout", "closure", "--create-table",
			"--follow", "--enable-stream", "--follow-idle", "2s", "--checkpoint", filepath.Join(t.TempDir(), "ck.json"), "--force-out-of-core", "--memory", "1MiB", "--tmp-dir", tmp)
		if code != 0 || !strings.Contains(stdout, "verify: exact") || !strings.Contains(stderr, "out of core") {
			t.Errorf("exit %d, want 0, out of core and exact:\n%s\n%s", code, stdout, stderr)
		}
		emptyDir(t, tmp)
	})
	t.Run("dry run", func(t *testing.T) {
		tmp := t.TempDir()
		stdout, stderr, code := run(t, env, append([]string{"import", "--in", "fixtures/folders.csv", "--layout", "path", "--dry-run", "--no-progress"}, oocArgs(tmp)...)...)
		if code != 0 || !strings.Contains(stdout, "nothing was written") {
			t.Errorf("exit %d, want 0 and the plan:\n%s\n%s", code, stdout, stderr)
		}
		emptyDir(t, tmp)
	})
	diffLines(t, canonical(t, scanTable(t, client, table)), before)
}

// progressLine is a progress log line (see progress.step).
var progressLine = regexp.MustCompile(`(?m)^treeport: [^\n]*: [\d,]+(\.\d+ [KMGT]iB| B)?( of [\d,]+[^\n]*)? after \d+[^\n]*\n`)

// sameDryRun runs import --dry-run args in memory and out of core (forced,
// in a 1 MiB budget), and fails the test unless both print the same
// stdout and stderr (but for the timed progress log lines) and exit the
// same, or the passes leave a file in their --tmp-dir. It returns the
// in-memory run's stdout, stderr and exit code.
func sameDryRun(t *testing.T, args []string) (string, string, int) {
	t.Helper()
	args = append([]string{"import", "--dry-run", "--no-progress"}, args...)
	tmp := t.TempDir()
	wantOut, wantErr, wantCode := run(t, nil, args...)
	gotOut, gotErr, gotCode := run(t, nil, append(args, oocArgs(tmp)...)...)
	wantErr, gotErr = progressLine.ReplaceAllString(wantErr, ""), progressLine.ReplaceAllString(gotErr, "")
	if gotOut != wantOut || gotErr != wantErr || gotCode != wantCode {
		t.Errorf("out of core: exit %d\n%s\n%s\nin memory: exit %d\n%s\n%s", gotCode, gotOut, gotErr, wantCode, wantOut, wantErr)
	}
	emptyDir(t, tmp)
	return wantOut, wantErr, wantCode
}

// withFixtures adds to inputs (each an --in and its flags) every fixture
// (fixtures/bad too; cars.csv, with its --types, is the caller's), and
// fails the test when they are too few to be the fixtures.
func withFixtures(t *testing.T, inputs [][]string) [][]string {
	t.Helper()
	for _, glob := range []string{"fixtures/*.csv", "fixtures/*.json", "fixtures/*.parquet", "fixtures/bad/*"} {
		m, _ := filepath.Glob(glob)
		for _, p := range m {
			switch filepath.Base(p) {
			case "cars.csv":
			case "wrong-type.csv":
				inputs = append(inputs, []string{p, "--types", "size:N"})
			default:
				inputs = append(inputs, []string{p})
			}
		}
	}
	if len(inputs) < 40 {
		t.Fatalf("only %d inputs", len(inputs))
	}
	return inputs
}

// TestOutOfCoreDryRunMatchesInMemory: import --dry-run of every fixture
// (fixtures/bad too) and of a shuffled random forest, in every layout,
// prints out of core (forced, in a 1 MiB budget) exactly what it prints in
// memory: stdout, with and without --json, stderr and the exit code; and
// leaves nothing in --tmp-dir.
func TestOutOfCoreDryRunMatchesInMemory(t *testing.T) {
	inputs := [][]string{
		{"fixtures/cars.csv", "--types", strings.TrimSpace(readFile(t, "fixtures/cars.types"))},
		{genShuffled(t, 3000, "csv")},
	}
	inputs = withFixtures(t, inputs)
	// The layouts, and the models (but those with path ids, whose inputs
	// are path ids: TestOutOfCoreImplicitDryRunMatchesInMemory) on two
	// inputs.
	type target struct{ name, flag string }
	var targets []target
	for _, name := range layouts.Names() {
		targets = append(targets, target{name, "--layout"})
	}
	models, _ := filepath.Glob("fixtures/models/*.json")
	for _, m := range models {
		if !strings.Contains(readFile(t, m), "path_ids") {
			targets = append(targets, target{m, "--model"})
		}
	}
	if len(targets) < 10 {
		t.Fatalf("only %d layouts and models", len(targets))
	}
	var problems atomic.Int64
	for _, in := range inputs {
		for _, tg := range targets {
			name := tg.name
			if tg.flag == "--model" && !slices.Contains([]string{"folders.json", "org.csv", "cycle.csv"}, filepath.Base(in[0])) {
				continue
			}
			for _, json := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/json=%v", filepath.Base(in[0]), filepath.Base(name), json), func(t *testing.T) {
					t.Parallel()
					args := append([]string{"--in", in[0], tg.flag, name}, in[1:]...)
					if json {
						args = append(args, "--json")
					}
					wantOut, wantErr, wantCode := sameDryRun(t, args)
					if wantCode == 0 && tg.flag == "--layout" && !strings.Contains(wantOut, name) {
						t.Errorf("no plan of %s in memory:\n%s", name, wantOut)
					}
					if wantErr != "" {
						problems.Add(1)
					}
				})
			}
		}
	}
	t.Cleanup(func() {
		if problems.Load() == 0 {
			t.Errorf("no dry run reported a problem: the bad fixtures were not planned")
		}
	})
}

// TestOutOfCoreImportS3StagesInTmpDir: import --out s3:// stages the
// files it uploads (the whole output) in --tmp-dir, not the system's
// temporary directory (here one that does not exist), and leaves nothing
// there.
func TestOutOfCoreImportS3StagesInTmpDir(t *testing.T) {
	s3ep := s3local.Endpoint(t)
	client := s3local.Client(t, s3ep)
	bucket := s3local.NewBucket(t, client)
	in := genShuffled(t, 500, "csv")
	tmp := t.TempDir()
	env := append(s3Env(s3ep, "http://127.0.0.1:1"), "TMPDIR="+filepath.Join(t.TempDir(), "gone"))
	args := []string{"import", "--in", in, "--layout", "path", "--out", "s3://" + bucket + "/staged", "--memory", "64MiB", "--tmp-dir", tmp}
	if _, stderr, code := run(t, env, args...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if keys := s3local.Keys(t, client, bucket, "staged/data/"); len(keys) == 0 {
		t.Error("nothing uploaded")
	}
	emptyDir(t, tmp)
}

// TestOutOfCoreWriteFailsMidPass: the passes' files cannot grow past
// 1 MB (a file size limit, as a disk that fills mid-pass: the write fails
// with EFBIG instead of ENOSPC): the dry run out of core fails with the
// file, why, and what to do, and leaves nothing in --tmp-dir; an import
// to --out that fails the same way writes no manifest.
func TestOutOfCoreWriteFailsMidPass(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to set a file size limit with")
	}
	in := genShuffled(t, 60000, "jsonl")
	tmp, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
	limited := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bash, append([]string{"-c", `trap "" XFSZ; ulimit -f 1000; exec "$0" "$@"`, treeportBin}, args...)...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("%v: %v; want a failure", args, err)
		}
		return errb.String(), ee.ExitCode()
	}
	stderr, code := limited("import", "--in", in, "--layout", "path", "--dry-run", "--force-out-of-core", "--memory", "8MiB", "--tmp-dir", tmp, "--no-progress")
	if code != 3 || !strings.Contains(stderr, tmp) || !strings.Contains(stderr, "file too large") || !strings.Contains(stderr, "free some room") {
		t.Errorf("dry run: exit %d: %s", code, stderr)
	}
	emptyDir(t, tmp)
	stderr, code = limited("import", "--in", in, "--layout", "closure", "--out", out, "--force-out-of-core", "--memory", "8MiB", "--tmp-dir", tmp, "--no-progress")
	if code != 3 || !strings.Contains(stderr, "free some room") {
		t.Errorf("import --out: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "manifest.json")); !os.IsNotExist(err) {
		t.Errorf("a manifest was written: %v", err)
	}
	emptyDir(t, tmp)
}
