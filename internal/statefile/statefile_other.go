//go:build !unix

package statefile

import (
	"io/fs"
	"os"
)

// Without O_NOFOLLOW, Open checks the path with Lstat first.
const noFollow = 0

func refusedOpen(error) string { return "" }

func checkOwner(path string, _ fs.FileInfo) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return &Error{Path: path, Why: "a symbolic link"}
	}
	return nil
}
