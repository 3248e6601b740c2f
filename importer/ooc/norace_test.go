//go:build !race

package ooc_test

// raceScale divides the sizes of the slowest out-of-core tests under the
// race detector (race_test.go); without it they run at full size.
const raceScale = 1
