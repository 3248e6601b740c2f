//go:build race

package ooccycles

// raceEnabled: the race detector makes the passes some ten times slower.
const raceEnabled = true
