//go:build !race

package ooclinks

// raceScale divides the sizes of the slowest tests under the race
// detector (race_test.go); without it they run at full size.
const raceScale = 1
