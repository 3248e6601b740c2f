package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/refresh"
	"github.com/treeport/treeport/transform"
)

// Every class of error ends with its exit code (SPEC §4), also when the jobs
// wrap it.
func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"success", nil, 0},
		{"differences", fmt.Errorf("%w: B does not match A", errDifferences), 1},
		{"usage", usagef("--in is required"), 2},
		{"checkpoint of another run", fmt.Errorf("%w: ck.json: %v", ddbwrite.ErrUsage, ddbwrite.ErrCheckpointMismatch), 2},
		{"invalid input", fmt.Errorf("%w: 3 problems", importer.ErrInvalid), 2},
		{"row error", &transform.RowError{File: "in.csv", Line: 2, Err: errors.New("bad")}, 2},
		{"missing file", fmt.Errorf("open: %w", os.ErrNotExist), 2},
		{"edit refused", fmt.Errorf("%w; nothing was written", refresh.ErrEdit), 2},
		{"table not found", ddb.ErrTableNotFound, 2},
		{"interrupted", ddbwrite.ErrInterrupted, 130},
		{"canceled", context.Canceled, 130},
		{"service", errors.New("connection refused"), 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExitCode(tt.err); got != tt.want {
				t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

// A usage error is printed without its "usage: " prefix, with a pointer to
// --help, and exits 2; the jobs' refusals read the same.
func TestMainPrintsUsageErrors(t *testing.T) {
	var stderr bytes.Buffer
	code := Main(context.Background(), []string{"treeport", "import", "--layout", "path"}, &stderr)
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	want := "treeport: --in is required\nRun 'treeport import --help' for the flags.\n"
	if stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	stderr.Reset()
	if code := Main(context.Background(), []string{"treeport", "bogus"}, &stderr); code != 2 || !strings.Contains(stderr.String(), `unknown command "bogus"`) {
		t.Errorf("unknown command: exit %d, stderr %q", code, stderr.String())
	}
}
