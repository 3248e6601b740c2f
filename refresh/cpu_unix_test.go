//go:build unix

package refresh

import "syscall"

// cpuSeconds is the CPU the process has used, user and system, in every
// thread (the garbage collector's too). runtime/metrics' CPU classes
// would not do: they are estimates brought up to date only by a
// collection, and read 0 across rounds that allocate little.
func cpuSeconds() float64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return float64(u.Utime.Nano()+u.Stime.Nano()) / 1e9
}
