// Package spill is the temporary directory of a job's out-of-core passes
// (the import's, the plan's and apply's, migrate's): made in --tmp-dir,
// refused before the first pass when it cannot be written or has too
// little room for what the passes will write, and removed at the end, on
// an error or on Ctrl-C.
//
// A directory holds a lock file that its process keeps locked until it
// removes the directory or dies (the kernel drops the lock with the
// process, SIGKILL too). A later run that finds a treeport-* directory
// whose lock nobody holds, and whose lock file names this host, knows it
// is one of treeport's, left by a process that is gone, and removes it.
// One without a lock file (another program's, or a platform without
// locks), or whose lock names another host (a --tmp-dir on a volume that
// several machines share, whose file system may not carry their locks to
// each other), it never removes, and names in a warning when it is older
// than a day.
package spill

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/internal/units"
)

// LockName is the lock file in each directory New makes.
const LockName = ".treeport-lock"

// Prefix starts the name of every directory New makes.
const Prefix = "treeport-"

// StaleAge is how old a directory without a lock must be for Sweep to
// name it.
const StaleAge = 24 * time.Hour

// lockGrace is how old an unlocked lock file must be before Sweep reads
// it as a dead process's: New locks it right after it makes it.
const lockGrace = time.Minute

// ErrTmpDir is the error of a --tmp-dir that cannot be written or has too
// little room; the caller reads it as a usage error (exit 2).
var ErrTmpDir = errors.New("spill: --tmp-dir")

// Dir is a temporary directory of out-of-core passes. Close removes it;
// it is not safe for concurrent use.
type Dir struct {
	// Path is the directory.
	Path string
	tmp  string
	lock *os.File
}

// New makes a directory Prefix+name+"-*" in tmp ("": os.TempDir()) for
// the passes of what ("the plan out of core"), and locks it. A tmp that
// cannot be written is an ErrTmpDir that says what to do.
func New(tmp, name, what string) (*Dir, error) {
	if tmp == "" {
		tmp = os.TempDir()
	}
	dir, err := os.MkdirTemp(tmp, Prefix+name+"-*")
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v (%s writes its sorted runs there: give a directory it can write)", ErrTmpDir, tmp, err, what)
	}
	d := &Dir{Path: dir, tmp: tmp}
	if d.lock, err = os.OpenFile(filepath.Join(dir, LockName), os.O_CREATE|os.O_RDWR, 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w %s: %v (%s writes its sorted runs there: give a directory it can write)", ErrTmpDir, tmp, err, what)
	}
	// The host, for Sweep: a lock is only proof of a dead process on the
	// machine that took it.
	fmt.Fprintf(d.lock, "host %s\npid %d\n", hostname(), os.Getpid())
	if !lock(d.lock) {
		// No lock on this platform or file system: the directory is
		// removed at the end all the same, and never by another run.
		d.lock.Close()
		os.Remove(d.lock.Name())
		d.lock = nil
	}
	return d, nil
}

// FreeBytes is the room left in a directory's file system; false when it
// is not known. Tests set it to a full disk.
var FreeBytes = extsort.FreeBytes

// Room refuses, with an ErrTmpDir, a directory whose file system has less
// than need bytes free: the passes of what over of would need about need.
// The directory is then removed.
func (d *Dir) Room(need int64, what, of string) error {
	if free, ok := FreeBytes(d.Path); ok && free < need {
		d.Close()
		return fmt.Errorf("%w %s has %s free, and the passes of %s over %s need about %s; nothing was read: free some room, or give another --tmp-dir",
			ErrTmpDir, d.tmp, units.SizeText(free), what, of, units.SizeText(need))
	}
	return nil
}

// Close removes the directory and what is in it. A second call does
// nothing.
func (d *Dir) Close() error {
	if d == nil || d.Path == "" {
		return nil
	}
	err := os.RemoveAll(d.Path)
	if d.lock != nil {
		d.lock.Close() // after the removal: no other run reads it as dead meanwhile
		d.lock = nil
	}
	d.Path = ""
	return err
}

// swept keeps the directories Sweep has named in this process: a job
// that makes several directories warns of each once.
var swept sync.Map

// Sweep looks in tmp ("": os.TempDir()) for the directories a treeport
// left behind: it removes those whose lock file nobody holds (a run
// killed with SIGKILL; New's lock proves them treeport's, and their
// process gone), and names in a warning those without a lock file older
// than StaleAge, which it leaves. Each is told to warn once a process.
func Sweep(tmp string, warn func(string)) {
	if tmp == "" {
		tmp = os.TempDir()
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	var old []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), Prefix) {
			continue
		}
		path := filepath.Join(tmp, e.Name())
		if _, done := swept.Load(path); done {
			continue
		}
		switch dead, locked := deadLock(path); {
		case dead:
			swept.Store(path, true)
			if err := os.RemoveAll(path); err == nil && warn != nil {
				warn(fmt.Sprintf("removed %s, left by a treeport that was killed (its lock is free)", path))
			}
		case !locked:
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > StaleAge {
				swept.Store(path, true)
				old = append(old, fmt.Sprintf("%s (%s)", path, info.ModTime().UTC().Format(time.DateTime)))
			}
		}
	}
	if len(old) > 0 && warn != nil {
		warn(fmt.Sprintf("WARNING: %s in %s look left behind by an earlier run (no lock says whose: left alone): %s; remove them if no treeport uses them",
			units.Count(int64(len(old)), "temporary folder"), tmp, strings.Join(old, ", ")))
	}
}

// deadLock reads the lock file of the directory path: dead when it has one
// that names this host, that nobody holds and that is older than
// lockGrace; locked when it has one at all that names this host (another
// host's is neither: named when old, never removed). A lock file is only
// treeport's when it is a regular file of this user's, of at most
// maxLockSize bytes, opened without following a link: a planted one (a
// link, a sparse file of a terabyte, another user's) is neither, and its
// directory is never removed.
func deadLock(path string) (dead, locked bool) {
	name := filepath.Join(path, LockName)
	f, err := os.OpenFile(name, os.O_RDWR|noFollow, 0)
	if err != nil {
		return false, false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() || info.Size() > maxLockSize || !mine(info) {
		return false, false
	}
	b := make([]byte, maxLockSize)
	n, _ := io.ReadFull(f, b)
	if !strings.HasPrefix(string(b[:n]), "host "+hostname()+"\n") {
		return false, false
	}
	if time.Since(info.ModTime()) < lockGrace {
		return false, true
	}
	// Locked here, the directory is this process's to remove: a run that
	// is gone cannot take it back.
	return lock(f), true
}

// maxLockSize bounds a lock file Sweep reads: New writes a host's name
// (at most 255 bytes on Linux, 64 the usual) and a pid.
const maxLockSize = 4096

// hostname is this machine's name, or "" when it has none.
func hostname() string {
	h, _ := os.Hostname()
	return h
}
