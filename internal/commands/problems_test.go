package commands

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/treeport/treeport/transform"
)

// TestProblemLinesNameNoPackage: a problem line gives the place, the id
// and the reason, without the package name the reason's sentinel starts
// with; an id or a file that looks like one is printed as it is.
func TestProblemLinesNameNoPackage(t *testing.T) {
	tests := []struct {
		name    string
		problem *transform.RowError
		want    string
	}{
		{name: "missing parent", problem: &transform.RowError{File: "in.csv", Line: 3, ID: "B", Err: fmt.Errorf("%w: parent %q", transform.ErrMissingParent, "Z")},
			want: `in.csv:3: id "B": parent not in input: parent "Z"` + "\n"},
		{name: "cycle", problem: &transform.RowError{File: "in.csv", Line: 2, ID: "A", Err: transform.ErrCycle},
			want: `in.csv:2: id "A": cycle` + "\n"},
		{name: "an id that looks like a package", problem: &transform.RowError{File: "importer: x.csv", Line: 2, ID: "layouts: A", Err: transform.ErrCycle},
			want: `importer: x.csv:2: id "layouts: A": cycle` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			printProblems(&buf, []*transform.RowError{tt.problem}, 10, 0)
			if got := buf.String(); got != tt.want {
				t.Errorf("printed %q, want %q", got, tt.want)
			}
		})
	}
}
