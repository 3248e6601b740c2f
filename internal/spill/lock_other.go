//go:build !unix

package spill

import "os"

// lock is false where there is no flock: no directory is then ever read
// as a dead run's.
func lock(*os.File) bool { return false }
