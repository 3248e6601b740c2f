package ddbwrite

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/statefile"
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

// TestStateFilesEditedRefused: a checkpoint, its journal or a record of its
// held spool edited by hand (their digests no longer match), and a file
// that is not a spool put in the spool's place, are refused, named, and
// left as they are; a journal or a spool of another run is not taken for
// this one's.
func TestStateFilesEditedRefused(t *testing.T) {
	w := &DDBWriter{spec: testSpec}
	setup := func(t *testing.T) string {
		t.Helper()
		path := filepath.Join(t.TempDir(), "ck.json")
		c := &Checkpoint{Fingerprint: "fp-of-this-run", Watermark: 10, Sent: 12}
		if err := c.Save(path); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(journalPath(path), journalLine(c.Fingerprint, 20, 30), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := openHeldSpool(HeldPath(path), c.Fingerprint, 0, 4)
		if err != nil {
			t.Fatal(err)
		}
		var reqs []*request
		for seq := int64(3); seq < 6; seq++ {
			reqs = append(reqs, w.request(seq, hotItem(int(seq)), types.WriteRequest{PutRequest: &types.PutRequest{Item: hotItem(int(seq))}}))
		}
		if _, err := s.put(reqs); err != nil {
			t.Fatal(err)
		}
		s.f.Close()
		return path
	}
	replace := func(t *testing.T, path, old, new string) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), old) {
			t.Fatalf("%s holds no %q:\n%s", path, old, b)
		}
		if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("as written", func(t *testing.T) {
		path := setup(t)
		c, err := LoadCheckpoint(path)
		if err != nil {
			t.Fatal(err)
		}
		if c.Watermark != 20 || c.Sent != 30 || c.Held() != 3 {
			t.Errorf("loaded watermark %d, sent %d, %d held; want the journal's 20 and 30, and 3 held", c.Watermark, c.Sent, c.Held())
		}
	})
	for _, tc := range []struct {
		name, file, old, new string
	}{
		{"checkpoint watermark", "", `"watermark": 10`, `"watermark": 9999`},
		{"journal watermark", ".wm", "                   20 ", "                 9999 "},
		{"held record item", ".held", `"S":"n00004"`, `"S":"n99999"`},
		{"held record seq", ".held", "00000000000000000004", "00000000000000000007"},
		{"held spool of another run", ".held", "treeport held spool 1 ", "treeport held spool 1 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := setup(t)
			replace(t, path+tc.file, tc.old, tc.new)
			before, _ := os.ReadFile(path + tc.file)
			_, err := LoadCheckpoint(path)
			if !errors.Is(err, statefile.ErrRefused) || !strings.Contains(err.Error(), path+tc.file) {
				t.Errorf("LoadCheckpoint = %v, want a refusal naming %s", err, path+tc.file)
			}
			if tc.file == ".held" {
				if _, err := openHeldSpool(HeldPath(path), "fp-of-this-run", 10, 4); !errors.Is(err, statefile.ErrRefused) {
					t.Errorf("openHeldSpool = %v, want a refusal", err)
				}
			}
			if after, _ := os.ReadFile(path + tc.file); string(after) != string(before) {
				t.Errorf("the refused file was changed:\n%s\nnow:\n%s", before, after)
			}
		})
	}

	t.Run("a file that is no spool", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ck.json")
		const text = "not a spool, and no newline"
		if err := os.WriteFile(HeldPath(path), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := openHeldSpool(HeldPath(path), "fp", 0, 4); !errors.Is(err, statefile.ErrRefused) {
			t.Errorf("openHeldSpool = %v, want a refusal", err)
		}
		if b, _ := os.ReadFile(HeldPath(path)); string(b) != text {
			t.Errorf("the file now holds %q, want it untouched", b)
		}
	})

	t.Run("a journal of another run is passed over", func(t *testing.T) {
		path := setup(t)
		if err := os.WriteFile(journalPath(path), journalLine("another-run", 50, 60), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := LoadCheckpoint(path)
		if err != nil || c.Watermark != 10 {
			t.Errorf("LoadCheckpoint = %+v, %v; want the checkpoint's own watermark 10", c, err)
		}
	})

	t.Run("the spool is private", func(t *testing.T) {
		path := setup(t)
		fi, err := os.Stat(HeldPath(path))
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("held spool mode %#o, want 0600: it holds items", m)
		}
	})
}

// TestLoadCheckpointTooLarge: a checkpoint file of 256 MiB (sparse: a
// planted one costs no disk) is refused as not treeport's before it is
// read: the load allocates a few KiB, not the file.
func TestLoadCheckpointTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ck.json")
	if err := os.WriteFile(path, []byte(`{"version":2,`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 256<<20); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := LoadCheckpoint(path)
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("loading it allocated %d bytes", alloc)
	}
	if !errors.Is(err, statefile.ErrRefused) || !strings.Contains(err.Error(), path) {
		t.Errorf("LoadCheckpoint = %v; want a refusal naming %s", err, path)
	}
}
