//go:build !unix

package refresh

import "runtime/metrics"

// cpuSeconds is an estimate of the CPU the process has used, brought up
// to date by each garbage collection (getrusage is unix's).
func cpuSeconds() float64 {
	s := []metrics.Sample{{Name: "/cpu/classes/total:cpu-seconds"}}
	metrics.Read(s)
	return s[0].Value.Float64()
}
