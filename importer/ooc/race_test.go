//go:build race

package ooc_test

// raceScale divides the sizes of the slowest out-of-core tests under the
// race detector, which makes the passes some ten times slower (the suite
// runs under it): each test says why its smaller size still takes the same
// path (spilled sorts, doubling rounds, keys over the limits).
const raceScale = 4
