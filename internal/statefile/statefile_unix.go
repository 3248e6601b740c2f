//go:build unix

package statefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

const noFollow = syscall.O_NOFOLLOW

// isLoop says an open with O_NOFOLLOW met a symbolic link.
func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK) }

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
