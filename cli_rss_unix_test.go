//go:build unix

package main

import (
	"os"
	"syscall"
)

// peakRSS is a finished process's peak resident memory in bytes (Linux
// gives it in KiB; 0 where the system does not say).
func peakRSS(ps *os.ProcessState) int64 {
	if u, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return int64(u.Maxrss) << 10
	}
	return 0
}
