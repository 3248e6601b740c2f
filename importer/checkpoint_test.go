package importer

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckpointRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "import.ckpt")
	c := &Checkpoint{Fingerprint: "abc", Watermark: 1234, Table: "tree", Layout: "path"}
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	// Saving again replaces it, and leaves no temporary file behind.
	c.Watermark = 5000
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d files, want only the checkpoint", len(entries))
	}
	got, err := LoadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Watermark != 5000 || got.Fingerprint != "abc" || got.Version != CheckpointVersion || got.Table != "tree" || got.SavedAt.IsZero() {
		t.Errorf("loaded %+v", got)
	}
	if err := got.Match("abc"); err != nil {
		t.Errorf("Match same fingerprint: %v", err)
	}
	err = got.Match("other")
	if !errors.Is(err, ErrCheckpointMismatch) || !strings.Contains(err.Error(), "delete the checkpoint") {
		t.Errorf("Match other fingerprint = %v, want ErrCheckpointMismatch saying what to do", err)
	}
}

func TestLoadCheckpointErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name     string
		path     string
		notExist bool
		want     string
	}{
		{name: "missing", path: filepath.Join(dir, "none"), notExist: true},
		{name: "garbage", path: write("g", "{not json"), want: "not valid JSON"},
		{name: "future version", path: write("v", `{"version":99,"watermark":1}`), want: "version 99"},
		{name: "old version", path: write("o", `{"version":1,"watermark":5}`), want: "delete it"},
		{name: "no digest", path: write("n", `{"version":2,"watermark":5}`), want: "digest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadCheckpoint(tt.path)
			if err == nil {
				t.Fatal("want an error")
			}
			if tt.notExist != errors.Is(err, fs.ErrNotExist) {
				t.Errorf("error %v: fs.ErrNotExist = %v, want %v", err, !tt.notExist, tt.notExist)
			}
			if tt.want != "" && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to say %q", err, tt.want)
			}
		})
	}
}

func TestCheckpointSaveFailsCleanly(t *testing.T) {
	c := &Checkpoint{Fingerprint: "x"}
	err := c.Save(filepath.Join(t.TempDir(), "no", "such", "dir", "ckpt"))
	if err == nil || !strings.Contains(err.Error(), "saving checkpoint") {
		t.Errorf("Save into a missing directory = %v", err)
	}
}
