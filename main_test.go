package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var treeportBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "treeport-bin")
	if err != nil {
		panic(err)
	}
	treeportBin = filepath.Join(dir, "treeport")
	cmd := exec.Command("go", "build", "-o", treeportBin, ".")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run runs treeport and returns its stdout, stderr and exit code.
func run(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(treeportBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// TestBadInputCorpus runs every file of fixtures/bad: each must exit 2, name
// the place and the id, and leave no output behind.
func TestBadInputCorpus(t *testing.T) {
	tests := []struct {
		name   string
		file   string
		args   []string
		where  string // file:line
		id     string
		reason string
	}{
		{name: "ragged CSV row", file: "ragged.csv", where: "ragged.csv:3", id: "B", reason: "field"},
		{name: "bad JSON", file: "bad-json.jsonl", where: "bad-json.jsonl:2", reason: "JSON"},
		{name: "wrong type for a typed column", file: "wrong-type.csv", args: []string{"--types", "size:N"}, where: "wrong-type.csv:3", id: "B", reason: "ten"},
		{name: "invalid UTF-8", file: "invalid-utf8.csv", where: "invalid-utf8.csv:3", reason: "UTF-8"},
		{name: "empty id", file: "empty-id.csv", where: "empty-id.csv:3", reason: "empty id"},
		{name: "duplicate id, both places", file: "duplicate-id.csv", where: "duplicate-id.csv:5", id: "B", reason: "duplicate-id.csv:3"},
		{name: "missing parent", file: "missing-parent.csv", where: "missing-parent.csv:3", id: "B", reason: `"Z"`},
		{name: "own parent", file: "self-parent.csv", where: "self-parent.csv:3", id: "B", reason: "own parent"},
		{name: "cycle with its ids", file: "cycle.csv", where: "cycle.csv:3", id: "B", reason: `"C"`},
		{name: "delimiter in id", file: "delimiter-in-id.csv", where: "delimiter-in-id.csv:3", id: "B|1", reason: "delimiter"},
		{name: "reserved attribute name", file: "reserved-attr.csv", where: "reserved-attr.csv:2", id: "A", reason: "--attr Path="},
		{name: "partition key too long", file: "partition-key-too-long.csv", where: "partition-key-too-long.csv:3", id: "KKKK", reason: "2049"},
		{name: "sort key (Path) too long", file: "sort-key-too-long.csv", where: "sort-key-too-long.csv:12", id: "010ppp", reason: "Path"},
		{name: "item over 400 KB", file: "item-too-large.csv.gz", where: "item-too-large.csv.gz:3", id: "B", reason: "400 KB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outDir := filepath.Join(t.TempDir(), "out")
			args := append([]string{"import", "--in", filepath.Join("fixtures", "bad", tt.file), "--layout", "path", "--out", outDir}, tt.args...)
			_, stderr, code := run(t, nil, args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr)
			}
			for _, want := range []string{tt.where, tt.id, tt.reason} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if _, err := os.Stat(outDir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("output directory was created (%v)", err)
			}
		})
	}
}
