//go:build !unix

package spill

import "os"

// lock is false where there is no flock: no directory is then ever read
// as a dead run's.
func lock(*os.File) bool { return false }

// noFollow is 0 where there is no O_NOFOLLOW: no lock is read there as a
// dead run's all the same (lock is false).
const noFollow = 0

// mine is true where there are no owners to compare.
func mine(os.FileInfo) bool { return true }
