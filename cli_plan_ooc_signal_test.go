package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// signalDuring starts treeport with args and env, sends sig once a file
// matching pattern (below tmp) appears, a pass under way, and stderr
// holds say, and fails unless it stops within about a second with exit
// 130 and leaves tmp empty. It returns stderr.
func signalDuring(t *testing.T, env []string, sig syscall.Signal, tmp, pattern, say string, args ...string) string {
	t.Helper()
	r := startRun(t, env, args)
	r.until(t, fmt.Sprintf("%s and %q on stderr", pattern, say), func() bool {
		m, _ := filepath.Glob(filepath.Join(tmp, pattern))
		return len(m) > 0 && strings.Contains(r.stderr.String(), say)
	})
	r.stopsOn(t, sig, tmp)
	return r.stderr.String()
}

// TestPlanOutOfCoreSignal: SIGINT or SIGTERM during a pass of plan or
// apply out of core (the snapshot's passes, treeport-ooc-*, or the plan's
// own sorts, treeport-plan-*) stops it within about a second, exit 130,
// with its temporary files removed and nothing written.
func TestPlanOutOfCoreSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: generates and plans 300,000 nodes")
	}
	_, client, env := ddbLocal(t)
	path, _ := layouts.New("path", layouts.Options{})
	table := ddblocal.NewTable(t, client, path.Table())
	in := genShuffled(t, 300_000, "csv")
	// Without a terminal, the passes' progress is a log line every few
	// seconds: the snapshot's passes, then the plan's.
	for _, c := range []struct {
		name, cmd   string
		sig         syscall.Signal
		during, say string
	}{
		{"plan SIGINT in the snapshot's passes", "plan", syscall.SIGINT, "treeport-ooc-*/run-*", ""},
		{"plan SIGTERM in the plan's sorts", "plan", syscall.SIGTERM, "treeport-plan-*/run-*", "treeport: out of core: "},
		{"apply SIGTERM in the plan's sorts", "apply", syscall.SIGTERM, "treeport-plan-*/run-*", "treeport: out of core: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			args := append([]string{c.cmd, "--in", in, "--layout", "path", "--table", table}, oocArgs(tmp)...)
			stderr := signalDuring(t, env, c.sig, tmp, c.during, c.say, args...)
			t.Logf("stderr:\n%s", stderr)
			if items := scanTable(t, client, table); len(items) != 0 {
				t.Errorf("%d items written", len(items))
			}
		})
	}
}

// TestMigrateOutOfCoreSignal: SIGINT or SIGTERM while migrate out of core
// spills its source stops it within about a second, exit 130, with
// treeport-migrate-* removed.
func TestMigrateOutOfCoreSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: loads and migrates 30,000 nodes")
	}
	_, client, env := ddbLocal(t)
	path, _ := layouts.New("path", layouts.Options{})
	src := loadTable(t, env, client, genShuffled(t, 30_000, "jsonl"), "", path)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dst := ddblocal.TableName(t)
			dropTableLater(t, client, dst)
			tmp := t.TempDir()
			args := append([]string{"migrate", "--from-table", src, "--from-layout", "path", "--to-table", dst, "--to-layout", "closure",
				"--create-table", "--segments", "1", "--no-progress"}, oocArgs(tmp)...)
			signalDuring(t, env, sig, tmp, "treeport-migrate-*/source.ddb.json", "", args...)
		})
	}
}

// TestOutOfCoreSweepsKilledRun: a plan out of core killed with SIGKILL
// leaves its directories (nothing can remove them then); the next run in
// the same --tmp-dir removes them, once their lock is free, and says so.
func TestOutOfCoreSweepsKilledRun(t *testing.T) {
	_, client, env := ddbLocal(t)
	path, _ := layouts.New("path", layouts.Options{})
	table := ddblocal.NewTable(t, client, path.Table())
	in := genShuffled(t, 100_000, "csv")
	tmp := t.TempDir()
	r := startRun(t, env, append([]string{"plan", "--in", in, "--layout", "path", "--table", table}, oocArgs(tmp)...))
	r.until(t, "sorted run (treeport-ooc-*/run-*)", func() bool {
		m, _ := filepath.Glob(filepath.Join(tmp, "treeport-ooc-*/run-*"))
		return len(m) > 0
	})
	r.cmd.Process.Kill()
	<-r.done
	left, _ := filepath.Glob(filepath.Join(tmp, "treeport-*"))
	if len(left) == 0 {
		t.Fatal("SIGKILL left nothing: the test proves nothing")
	}
	// The lock is older than a run takes to take it (spill.lockGrace).
	old := time.Now().Add(-2 * time.Minute)
	for _, dir := range left {
		os.Chtimes(filepath.Join(dir, ".treeport-lock"), old, old)
	}
	_, stderr, code := run(t, env, append([]string{"plan", "--in", "fixtures/folders.json", "--layout", "path", "--table", table}, oocArgs(tmp)...)...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	for _, dir := range left {
		if !strings.Contains(stderr, "removed "+dir) {
			t.Errorf("not said removed: %s\n%s", dir, stderr)
		}
	}
	emptyDir(t, tmp)
}

// TestPlanOutOfCoreTmpDirUsage: plan and apply out of core refuse a
// --tmp-dir they cannot write (exit 2, with what to do), before the
// first pass and with nothing written.
func TestPlanOutOfCoreTmpDirUsage(t *testing.T) {
	_, client, env := ddbLocal(t)
	path, _ := layouts.New("path", layouts.Options{})
	table := ddblocal.NewTable(t, client, path.Table())
	file := filepath.Join(t.TempDir(), "a-file")
	os.WriteFile(file, nil, 0o644)
	for _, cmd := range []string{"plan", "apply"} {
		for _, tmp := range []string{file + "/sub", "/nonexistent/treeport"} {
			_, stderr, code := run(t, env, append([]string{cmd, "--in", "fixtures/folders.json", "--layout", "path", "--table", table}, oocArgs(tmp)...)...)
			if code != 2 || !strings.Contains(stderr, "--tmp-dir "+tmp) || !strings.Contains(stderr, "give a directory it can write") {
				t.Errorf("%s --tmp-dir %s: exit %d, want 2 and what to do:\n%s", cmd, tmp, code, stderr)
			}
		}
	}
	if items := scanTable(t, client, table); len(items) != 0 {
		t.Errorf("%d items written", len(items))
	}
}
