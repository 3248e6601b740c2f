package opsfile

import (
	"errors"
	"strings"
	"testing"
)

// TestRead: edits come with their lines, comments and blank lines
// skipped; a bad line is a *LineError naming the file and line, and
// nothing is returned. (refresh's TestReadEditsErrors checks each
// refusal's text.)
func TestRead(t *testing.T) {
	edits, err := Read(strings.NewReader("# a comment\n\n{\"op\":\"move\",\"id\":\"D\",\"parent\":null}\n{\"op\":\"delete\",\"id\":\"X\"}\n"), "ops.jsonl")
	if err != nil || len(edits) != 2 || edits[0].Line != 3 || edits[0].Parent != "" || edits[1].Op != Delete || edits[1].Where() != "ops.jsonl:4" {
		t.Fatalf("edits %+v, %v", edits, err)
	}
	edits, err = Read(strings.NewReader("{\"op\":\"delete\",\"id\":\"X\"}\n{\"op\":\"copy\",\"id\":\"D\"}\n"), "ops.jsonl")
	var le *LineError
	if !errors.As(err, &le) || le.File != "ops.jsonl" || le.Line != 2 || edits != nil || !strings.Contains(err.Error(), `ops.jsonl:2: op "copy"`) {
		t.Errorf("edits %v, err %v; want a LineError at ops.jsonl:2", edits, err)
	}
}
