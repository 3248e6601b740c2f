//go:build unix

package statefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// noFollow is added to every open of a state file: O_NOFOLLOW, and
// O_NONBLOCK so that a FIFO planted there is refused by Check instead of
// blocking the open (regular files ignore it).
const noFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// outputNoFollow is added to the open of an output (CreateOutput): a FIFO
// or a device the user names (/dev/null) is written to as they ask.
const outputNoFollow = syscall.O_NOFOLLOW

// lstatOutput checks an output's name before its open; O_NOFOLLOW does
// that here.
func lstatOutput(string) error { return nil }

// refusedOpen says why an open failed on a path that holds something other
// than a regular file ("" for other errors): O_NOFOLLOW met a symbolic
// link, or the path is a directory.
func refusedOpen(err error) string {
	switch {
	case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EMLINK):
		return "a symbolic link"
	case errors.Is(err, syscall.EISDIR):
		return "not a regular file (a directory)"
	}
	return ""
}

func checkOwner(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		return &Error{Path: path, Why: fmt.Sprintf("owned by user %d, not by this user (%d)", st.Uid, uid)}
	}
	if st.Nlink != 1 {
		return &Error{Path: path, Why: fmt.Sprintf("a file with %d links (a hard link to another file?)", st.Nlink)}
	}
	return nil
}
