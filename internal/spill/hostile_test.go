package spill

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestSweepHugeLockFile: a planted lock file of 256 MiB (sparse: it costs
// no disk) that starts as a dead run's is not read whole: the sweep
// allocates a few KiB, and leaves the directory (a lock file of that size
// is not one treeport wrote).
func TestSweepHugeLockFile(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "treeport-plan-9")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(dir, "users-file")
	os.WriteFile(keep, []byte("not treeport's"), 0o600)
	lockPath := filepath.Join(dir, LockName)
	f, err := os.Create(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("host " + hostname() + "\npid 1\n")
	if err := f.Truncate(256 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	old := time.Now().Add(-2 * lockGrace)
	os.Chtimes(lockPath, old, old)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	Sweep(tmp, nil)
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("the sweep allocated %d bytes for a lock file of 256 MiB", got)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("a directory with a lock file treeport did not write was swept: %v", err)
	}
}

// TestSweepPlantedSymlinks: a treeport-* symbolic link to a directory
// that looks like a dead run's is not followed (the directory and its
// files stay), and a lock file that is a symbolic link does not make its
// directory a dead run's.
func TestSweepPlantedSymlinks(t *testing.T) {
	tmp, elsewhere := t.TempDir(), t.TempDir()
	old := time.Now().Add(-2 * lockGrace)
	target := filepath.Join(elsewhere, "treeport-plan-1")
	os.Mkdir(target, 0o700)
	os.WriteFile(filepath.Join(target, LockName), []byte("host "+hostname()+"\npid 1\n"), 0o600)
	os.Chtimes(filepath.Join(target, LockName), old, old)
	os.WriteFile(filepath.Join(target, "data"), []byte("the user's"), 0o600)
	if err := os.Symlink(target, filepath.Join(tmp, "treeport-plan-1")); err != nil {
		t.Fatal(err)
	}
	// A directory whose lock is a link to a file that looks like one.
	linked := filepath.Join(tmp, "treeport-plan-2")
	os.Mkdir(linked, 0o700)
	os.WriteFile(filepath.Join(linked, "data"), []byte("the user's"), 0o600)
	os.Symlink(filepath.Join(target, LockName), filepath.Join(linked, LockName))
	Sweep(tmp, nil)
	for _, p := range []string{filepath.Join(target, "data"), filepath.Join(tmp, "treeport-plan-1"), filepath.Join(linked, "data")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestNewRefusesBadTmpDir: a --tmp-dir that is a symbolic link to
// /dev/zero or to a file of the user's, or a file, is an ErrTmpDir (exit
// 2) that says to give a directory, and the file is left as it was; a
// link to a directory is that directory.
func TestNewRefusesBadTmpDir(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "notes.txt")
	os.WriteFile(file, []byte("the user's notes"), 0o600)
	toFile, toZero, toDir := filepath.Join(tmp, "to-file"), filepath.Join(tmp, "to-zero"), filepath.Join(tmp, "to-dir")
	os.Symlink(file, toFile)
	os.Symlink("/dev/zero", toZero)
	dir := t.TempDir()
	os.Symlink(dir, toDir)
	for _, p := range []string{file, toFile, toZero} {
		d, err := New(p, "ooc", "the import out of core")
		if err == nil {
			d.Close()
			t.Errorf("--tmp-dir %s taken", p)
			continue
		}
		if !errors.Is(err, ErrTmpDir) || !strings.Contains(err.Error(), "give a directory") {
			t.Errorf("--tmp-dir %s: %v", p, err)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "the user's notes" {
		t.Errorf("the file behind --tmp-dir is now %q", b)
	}
	d, err := New(toDir, "ooc", "the import out of core")
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "treeport-ooc-*")); len(m) != 1 {
		t.Errorf("a link to a directory: %v", m)
	}
	d.Close()
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
		t.Errorf("Close left %v", m)
	}
}
