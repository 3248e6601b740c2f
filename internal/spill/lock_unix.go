//go:build unix

package spill

import (
	"os"
	"syscall"
)

// lock takes an exclusive lock on f without waiting; false when another
// process holds it (or the file system has no locks).
func lock(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}

// noFollow makes an open of a symbolic link fail.
const noFollow = syscall.O_NOFOLLOW

// mine says whether this user owns the file.
func mine(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
