//go:build unix

package benchmarks

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system) the process has used so far,
// or 0 where it cannot be told. Benchmarks report work per CPU second
// besides per second, because on a shared machine the wall clock also
// counts the time other processes held the cores.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
