//go:build race

package diskmap

// raceScale divides the tests' sizes under the race detector, which is
// about ten times slower: the suite runs under it.
const raceScale = 4
