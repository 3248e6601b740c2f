package spill

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSweep: a treeport directory whose lock nobody holds (its process
// gone) is removed and told; one a live Dir holds, and another program's
// (no lock file), are left, the latter named once it is a day old; a
// recent one without a lock is not named.
func TestSweep(t *testing.T) {
	tmp := t.TempDir()
	old := time.Now().Add(-2 * StaleAge)
	mkHost := func(name string, lock bool, host string, at time.Time) string {
		dir := filepath.Join(tmp, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "run-1"), []byte("x"), 0o600)
		if lock {
			os.WriteFile(filepath.Join(dir, LockName), []byte("host "+host+"\npid 1\n"), 0o600)
			os.Chtimes(filepath.Join(dir, LockName), at, at)
		}
		os.Chtimes(dir, at, at)
		return dir
	}
	mk := func(name string, lock bool, at time.Time) string { return mkHost(name, lock, hostname(), at) }
	dead := mk("treeport-plan-1", true, time.Now().Add(-2*lockGrace))
	fresh := mk("treeport-plan-2", true, time.Now()) // its maker locks it next
	foreign := mk("treeport-notes", false, old)
	recent := mk("treeport-other", false, time.Now())
	// A lock another host took, on a shared volume: its process may be
	// alive there whatever the lock here says.
	otherHost := mkHost("treeport-plan-3", true, hostname()+"-another", old)
	mine := mk("unrelated-dir", false, old)
	live, err := New(tmp, "ooc", "a test")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	os.Chtimes(filepath.Join(live.Path, LockName), old, old)
	var said []string
	Sweep(tmp, func(s string) { said = append(said, s) })
	for _, c := range []struct {
		dir  string
		gone bool
	}{{dead, true}, {fresh, false}, {foreign, false}, {recent, false}, {mine, false}, {live.Path, false}, {otherHost, false}} {
		if _, err := os.Stat(c.dir); os.IsNotExist(err) != c.gone {
			t.Errorf("%s: removed %v, want %v", filepath.Base(c.dir), os.IsNotExist(err), c.gone)
		}
	}
	text := strings.Join(said, "\n")
	if !strings.Contains(text, "removed "+dead) || !strings.Contains(text, foreign) || !strings.Contains(text, otherHost) || strings.Contains(text, recent) || strings.Contains(text, live.Path) || strings.Contains(text, mine) {
		t.Errorf("warnings:\n%s", text)
	}
	said = nil
	Sweep(tmp, func(s string) { said = append(said, s) })
	if len(said) != 0 {
		t.Errorf("a second sweep warned again: %q", said)
	}
	path := live.Path
	live.Close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("Close left %s", path)
	}
}

// TestSweepKilledProcess: the lock of a process killed with SIGKILL is
// free, and its directory swept up.
func TestSweepKilledProcess(t *testing.T) {
	if os.Getenv("SPILL_HOLD") != "" {
		d, err := New(os.Getenv("SPILL_HOLD"), "held", "a test")
		if err != nil {
			os.Exit(3)
		}
		os.WriteFile(filepath.Join(d.Path, "ready"), nil, 0o600)
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestSweepKilledProcess$")
	cmd.Env = append(os.Environ(), "SPILL_HOLD="+tmp)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var dir string
	for deadline := time.Now().Add(time.Minute); dir == ""; {
		m, _ := filepath.Glob(filepath.Join(tmp, "treeport-held-*", "ready"))
		if len(m) > 0 {
			dir = filepath.Dir(m[0])
		} else if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the child made no directory")
		}
		time.Sleep(10 * time.Millisecond)
	}
	old := time.Now().Add(-2 * lockGrace)
	os.Chtimes(filepath.Join(dir, LockName), old, old)
	Sweep(tmp, nil)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("a live process's directory was swept: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	Sweep(tmp, nil)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a killed process's directory was left: %v", err)
	}
}

// TestDistinct: the count is of distinct strings, in memory and past a
// small budget (spilled to runs on disk) alike.
func TestDistinct(t *testing.T) {
	for _, budget := range []int{1 << 30, 1} {
		dir := t.TempDir()
		d := NewDistinct(dir, budget)
		want := map[string]bool{}
		for k := range 100_000 {
			s := strings.Repeat("x", k%7) + string(rune('a'+k%1000%26)) + string(rune('a'+k%1000/26))
			want[s] = true
			if err := d.Add(s); err != nil {
				t.Fatal(err)
			}
		}
		n, err := d.Count()
		if err != nil || n != int64(len(want)) {
			t.Errorf("budget %d: %d distinct (%v), want %d", budget, n, err, len(want))
		}
		spilled, _ := os.ReadDir(dir)
		if budget == 1 && len(spilled) == 0 {
			t.Error("a budget of 1 byte spilled nothing")
		}
		d.Close()
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Errorf("budget %d: Close left %d files", budget, len(left))
		}
	}
}
