//go:build !unix

package benchmarks

import "time"

// cpuTime cannot be told on this platform: the per-CPU-second figures are
// left out.
func cpuTime() time.Duration { return 0 }
