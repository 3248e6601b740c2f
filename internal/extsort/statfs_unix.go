//go:build unix

package extsort

import "syscall"

// FreeBytes is the room left for an unprivileged user in dir's file system.
func FreeBytes(dir string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
