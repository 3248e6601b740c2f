// Package statefile opens and creates the state files treeport keeps
// beside a checkpoint (the checkpoint, its journal, the held spool, the
// plan of an apply) so that a file planted there cannot redirect them: a
// state file is created with O_EXCL and O_NOFOLLOW, and opened with
// O_NOFOLLOW, then checked to be a regular file owned by this user with
// one link. Anything else is refused with an Error, which matches
// ErrRefused. Its digests (Digest) tie a file's content to the run it
// belongs to, against edits and mix-ups.
package statefile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// ErrRefused is matched by every Error: a state file that is not what
// treeport wrote.
var ErrRefused = errors.New("statefile: refused")

// Error is a state file refused: where it is, what is wrong with it, and
// what to do.
type Error struct {
	Path string
	Why  string
	Do   string
}

func (e *Error) Error() string {
	do := e.Do
	if do == "" {
		do = "remove it (or give another --checkpoint) to start over"
	}
	return fmt.Sprintf("%s: %s: it is not a file treeport wrote; %s", e.Path, e.Why, do)
}

// Is makes an Error match ErrRefused.
func (e *Error) Is(target error) bool { return target == ErrRefused }

// Open opens the state file at path with flag (os.O_RDONLY or os.O_RDWR)
// without following a symbolic link, and checks it (see Check). A missing
// file gives an error matching fs.ErrNotExist.
func Open(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|noFollow, 0)
	if err != nil {
		if why := refusedOpen(err); why != "" {
			return nil, &Error{Path: path, Why: why}
		}
		return nil, err
	}
	if err := Check(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Create makes a new state file at path with perm (0o600 for a file that
// holds items), O_EXCL and O_NOFOLLOW, opened for reading and writing. A
// file already there is removed first when it passes Check and ours says
// its first bytes (up to 4 KB; nothing for an empty file) are a state file
// of this kind that an earlier run left; anything else is refused and left
// alone: a symbolic link, a directory, a device, a file of another user or
// with another link, a file of the user's own.
func Create(path string, perm fs.FileMode, ours func(head []byte) bool) (*os.File, error) {
	for range 2 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|noFollow, perm)
		if err == nil {
			// The umask may have taken bits off, never added any: perm is
			// what the file gets, so that a private file stays private.
			if err := f.Chmod(perm); err != nil {
				f.Close()
				return nil, err
			}
			return f, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		old, err := Open(path, os.O_RDONLY)
		if err != nil {
			return nil, err
		}
		head := make([]byte, 4096)
		n, err := io.ReadFull(old, head)
		old.Close()
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, err
		}
		if n > 0 && !ours(head[:n]) {
			return nil, &Error{Path: path, Why: "a file is there already",
				Do: "move it away, or give another --checkpoint"}
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	return nil, &Error{Path: path, Why: "it came back while it was being replaced"}
}

// Check refuses an open state file that is not a regular file owned by this
// user with one link.
func Check(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return checkInfo(f.Name(), fi)
}

func checkInfo(path string, fi fs.FileInfo) error {
	switch m := fi.Mode(); {
	case m&fs.ModeSymlink != 0:
		return &Error{Path: path, Why: "a symbolic link"}
	case !m.IsRegular():
		return &Error{Path: path, Why: fmt.Sprintf("not a regular file (%s)", m.Type())}
	}
	return checkOwner(path, fi)
}

// Digest is the hex SHA-256 of kind, the run's identity and content, each
// length-prefixed: it changes when a byte of the content does, and when the
// same content is taken for another kind of file or another run's. It is
// no signature: whoever can write the file can compute it again.
func Digest(kind, run string, content ...[]byte) string {
	h := sha256.New()
	for _, p := range append([][]byte{[]byte(kind), []byte(run)}, content...) {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ReadAll reads an open state file whole, when it is at most max bytes: a
// larger one (a sparse file of a terabyte planted as a checkpoint) is
// refused with an Error before a byte of it is read, so that reading it
// costs at most max bytes of memory.
func ReadAll(f *os.File, max int64) ([]byte, error) {
	refuse := func(n int64) error {
		return &Error{Path: f.Name(), Why: fmt.Sprintf("it holds %d bytes or more, and a state file of its kind at most %d", n, max)}
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, refuse(fi.Size())
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, refuse(max + 1) // it grew while it was read
	}
	return b, nil
}

// CreateTempFor makes the temporary file that is renamed over the output
// out once complete: in out's directory, with O_EXCL and O_NOFOLLOW, and
// the mode out will have: the mode of the file it replaces, or 0666 less
// the umask for a new one, as a plain create gives (os.CreateTemp would
// give 0600).
func CreateTempFor(out string) (*os.File, error) {
	dir, base := filepath.Split(out)
	if dir == "" {
		dir = "."
	}
	for range 100 {
		name := filepath.Join(dir, "."+base+"."+strconv.FormatUint(rand.Uint64(), 36)+".tmp")
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|noFollow, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(out); err == nil && fi.Mode().IsRegular() {
			if err := f.Chmod(fi.Mode().Perm()); err != nil {
				f.Close()
				os.Remove(name)
				return nil, err
			}
		}
		return f, nil
	}
	return nil, fmt.Errorf("%s: no free name for a temporary file beside it", out)
}

// WritePrivate writes a state file (a checkpoint): data goes to a private
// (0600) temporary file beside path, made with O_EXCL, synced, renamed over
// path, and the directory synced, so that a crash leaves either the old
// file or the new one, never a part of one.
func WritePrivate(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	// The rename is durable only once the directory is.
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("syncing %s: %w", dir, err)
		}
	}
	return nil
}

// CreateOutput creates the output file at path, or truncates the one
// there, for writing, as os.Create does (mode 0666 less the umask), but
// never through a symbolic link planted at its name: a link there is
// refused (an Error, matching ErrRefused) and its target left untouched.
// It is for the files treeport writes beside the user's (rejects,
// dead-letter, reports, plan files, column types).
func CreateOutput(path string) (*os.File, error) {
	return openOutput(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
}

// AppendOutput is CreateOutput for a file a resumed run appends to (the
// dead-letter file): it is created when missing and never truncated.
func AppendOutput(path string) (*os.File, error) {
	return openOutput(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND)
}

// WriteOutput is os.WriteFile(path, data, 0o666) through CreateOutput.
func WriteOutput(path string, data []byte) error {
	f, err := CreateOutput(path)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func openOutput(path string, flag int) (*os.File, error) {
	if err := lstatOutput(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, flag|outputNoFollow, 0o666)
	if err != nil {
		if why := refusedOpen(err); why == "a symbolic link" {
			return nil, outputLink(path)
		}
		return nil, err
	}
	return f, nil
}

// outputLink is the Error of a symbolic link at an output's name.
func outputLink(path string) error {
	return &Error{Path: path, Why: "a symbolic link", Do: "treeport does not write through a link at an output's name: remove it, or name the file the link points to"}
}

// CheckOutput refuses a symbolic link at an output's name, as
// CreateOutput will, so that a command can refuse it before it does any
// work; a missing file, or anything but a link, passes.
func CheckOutput(path string) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return outputLink(path)
	}
	return nil
}
