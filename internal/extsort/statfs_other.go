//go:build !unix

package extsort

// FreeBytes is not known here: the passes fail when the disk is full.
func FreeBytes(string) (int64, bool) { return 0, false }
