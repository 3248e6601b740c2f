//go:build !race

package diskmap

const raceScale = 1
