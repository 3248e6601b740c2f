//go:build race

package ooclinks

// raceScale divides the sizes of the slowest tests under the race
// detector, which makes the sorts some ten times slower (the suite runs
// under it); each test says why its smaller size takes the same path.
const raceScale = 4
