//go:build !race

package importer

// raceScale divides the sizes of the slowest out-of-core tests under the
// race detector (race_test.go); without it they run at full size.
const raceScale = 1
