//go:build linux

package importer

import (
	"os"
	"syscall"
	"time"
)

// changeTime is the time the file's inode last changed: any write, and any
// change of its times, sets it to the present, which no program can set
// otherwise. The zero time where the system does not tell.
func changeTime(info os.FileInfo) time.Time {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec))
	}
	return time.Time{}
}
