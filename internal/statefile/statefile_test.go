//go:build unix

package statefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenAndCreateRefuse(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	any := func([]byte) bool { return true }
	tests := []struct {
		name  string
		make  func(path string) error
		why   string
		owner bool // needs root, to give the file to another user
	}{
		{"symbolic link", func(p string) error { return os.Symlink(target, p) }, "symbolic link", false},
		{"hard link", func(p string) error { return os.Link(target, p) }, "2 links", false},
		{"directory", func(p string) error { return os.Mkdir(p, 0o700) }, "not a regular file", false},
		{"fifo", func(p string) error { return mkfifo(p) }, "not a regular file", false},
		{"another user's", func(p string) error {
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				return err
			}
			return os.Chown(p, 12345, 12345)
		}, "owned by user 12345", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.owner && os.Getuid() != 0 {
				t.Skip("giving a file to another user needs root")
			}
			path := filepath.Join(t.TempDir(), "state")
			if err := tt.make(path); err != nil {
				t.Fatal(err)
			}
			if f, err := Open(path, os.O_RDWR); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.why) || !strings.Contains(err.Error(), path) {
				t.Errorf("Open = %v, want a refusal naming %s and saying %q", err, path, tt.why)
				if f != nil {
					f.Close()
				}
			}
			if f, err := Create(path, 0o600, any); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.why) {
				t.Errorf("Create = %v, want a refusal saying %q", err, tt.why)
				if f != nil {
					f.Close()
				}
			}
			if b, err := os.ReadFile(target); err != nil || string(b) != "keep" {
				t.Errorf("the target holds %q (%v)", b, err)
			}
		})
	}
}

func TestCreateReplacesOnlyItsOwnKind(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	mine := func(head []byte) bool { return strings.HasPrefix(string(head), "STATE") }
	if err := os.WriteFile(path, []byte("user's notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(path, 0o600, mine); !errors.Is(err, ErrRefused) {
		t.Errorf("Create over a file of another kind = %v, want a refusal", err)
	}
	if err := os.WriteFile(path, []byte("STATE of an earlier run"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path, 0o600, mine)
	if err != nil {
		t.Fatalf("Create over an earlier state file: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("made a file of %d bytes, mode %v; want empty, 0600", fi.Size(), fi.Mode().Perm())
	}
	if _, err := Open(filepath.Join(dir, "none"), os.O_RDONLY); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a missing file = %v, want fs.ErrNotExist", err)
	}
}

func TestCreateTempForModes(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.csv")
	if err := os.WriteFile(out, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	os.Chmod(out, 0o640)
	f, err := CreateTempFor(out)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	fi, _ := f.Stat()
	if fi.Mode().Perm() != 0o640 || filepath.Dir(f.Name()) != dir {
		t.Errorf("temporary file %s mode %v, want 0640 beside %s", f.Name(), fi.Mode().Perm(), out)
	}
}

// TestCreateOutputRefusesLinks: an output (rejects, dead-letter, report,
// plan file) is never written through a symbolic link at its name, created
// or appended to; its target stays as it was. A plain file there is
// truncated or appended to, as os.Create and O_APPEND do.
func TestCreateOutputRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious.txt")
	const content = "the user's own data"
	if err := os.WriteFile(target, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "rejects.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	opens := map[string]func(string) (*os.File, error){"CreateOutput": CreateOutput, "AppendOutput": AppendOutput,
		"WriteOutput": func(p string) (*os.File, error) { return nil, WriteOutput(p, []byte("x")) }}
	for name, open := range opens {
		f, err := open(link)
		if f != nil {
			f.Close()
		}
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("%s through a link: %v; want it refused, naming %s", name, err, link)
		}
		if got, _ := os.ReadFile(target); string(got) != content {
			t.Errorf("%s: the link's target holds %q, want %q", name, got, content)
		}
	}
	if err := CheckOutput(link); !errors.Is(err, ErrRefused) {
		t.Errorf("CheckOutput(link) = %v, want it refused", err)
	}
	plain := filepath.Join(dir, "report.json")
	if err := WriteOutput(plain, []byte("first")); err != nil {
		t.Fatal(err)
	}
	f, err := AppendOutput(plain)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(" second")
	f.Close()
	if got, _ := os.ReadFile(plain); string(got) != "first second" {
		t.Errorf("a plain file appended to holds %q", got)
	}
	if err := CheckOutput(plain); err != nil {
		t.Errorf("CheckOutput(a plain file) = %v", err)
	}
}

// WritePrivate leaves a private file with the new content over the old
// one (even one anybody could read), and no temporary file beside it.
func TestWritePrivate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ck.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WritePrivate(path, []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "new\n" {
		t.Fatalf("read %q, %v; want %q", b, err, "new\n")
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the directory, want the state file alone", len(entries))
	}
	if err := WritePrivate(filepath.Join(dir, "missing", "ck.json"), nil); err == nil {
		t.Error("a state file in a missing directory was written")
	}
}
