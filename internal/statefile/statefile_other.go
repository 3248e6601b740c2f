//go:build !unix

package statefile

import (
	"io/fs"
	"os"
)

// Without O_NOFOLLOW, Open checks the path with Lstat first.
const noFollow = 0

const outputNoFollow = 0

// lstatOutput refuses a symbolic link at an output's name, which the open
// cannot refuse without O_NOFOLLOW.
func lstatOutput(path string) error { return CheckOutput(path) }

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
