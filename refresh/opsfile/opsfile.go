// Package opsfile is the edit command's ops file: JSON Lines, one tree
// edit a line (a move, a delete or a set of attributes), read and checked
// line by line.
package opsfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/transform"
)

// Edit kinds, as the ops file names them.
const (
	Move   = "move"
	Delete = "delete"
	Set    = "set"
)

// Edit is one tree edit:
//
//	{"op":"move","id":"D","parent":"E"}       D moves under E, with its subtree ("parent":null or "": D becomes a root)
//	{"op":"delete","id":"D"}                  D goes; its children move up to D's parent
//	{"op":"set","id":"D","attributes":{"size":3},"remove":["tmp"]}
//
// Attributes are plain JSON values, read as the JSON input format reads them.
type Edit struct {
	Op     string
	ID     string
	Parent string // move: "" makes the node a root
	Attrs  transform.Attrs
	Remove []string
	// File and Line say where the edit came from.
	File string
	Line int
}

// Where is the edit's file and line ("edit N" without a file).
func (e *Edit) Where() string {
	if e.File == "" {
		return fmt.Sprintf("edit %d", e.Line)
	}
	return fmt.Sprintf("%s:%d", e.File, e.Line)
}

// LineError is a line of an ops file that is not an edit.
type LineError struct {
	File string
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Read reads an ops file, JSON Lines, one edit a line (blank lines and
// lines starting with # are skipped). A line that is not an edit is a
// *LineError; nothing is returned then.
func Read(r io.Reader, file string) ([]Edit, error) {
	var edits []Edit
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		e, err := parseEdit(text)
		if err != nil {
			return nil, &LineError{File: file, Line: line, Err: err}
		}
		e.File, e.Line = file, line
		edits = append(edits, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", file, line+1, err)
	}
	return edits, nil
}

func parseEdit(text []byte) (Edit, error) {
	var raw struct {
		Op     string          `json:"op"`
		ID     *string         `json:"id"`
		Parent json.RawMessage `json:"parent"`
		Attrs  json.RawMessage `json:"attributes"`
		Remove []string        `json:"remove"`
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return Edit{}, fmt.Errorf("not an edit: %v (want e.g. {\"op\":\"move\",\"id\":\"D\",\"parent\":\"E\"})", err)
	}
	if raw.ID == nil || *raw.ID == "" {
		return Edit{}, fmt.Errorf("%s without an \"id\"", raw.Op)
	}
	e := Edit{Op: raw.Op, ID: *raw.ID}
	switch raw.Op {
	case Move:
		if len(raw.Parent) == 0 {
			return e, errors.New("move without a \"parent\" (null or \"\" makes the node a root)")
		}
		if string(raw.Parent) != "null" {
			if err := json.Unmarshal(raw.Parent, &e.Parent); err != nil {
				return e, fmt.Errorf("move: \"parent\" must be a string id or null: %v", err)
			}
		}
		if raw.Attrs != nil || raw.Remove != nil {
			return e, errors.New("move takes no attributes; give a set edit of its own")
		}
	case Delete:
		if raw.Parent != nil || raw.Attrs != nil || raw.Remove != nil {
			return e, errors.New("delete takes only an id")
		}
	case Set:
		if raw.Parent != nil {
			return e, errors.New("set does not move; give a move edit of its own")
		}
		if len(raw.Attrs) == 0 && len(raw.Remove) == 0 {
			return e, errors.New("set without \"attributes\" or \"remove\"")
		}
		if len(raw.Attrs) > 0 {
			attrs, err := ddbjson.DecodePlainObject(raw.Attrs)
			if err != nil {
				return e, fmt.Errorf("set: \"attributes\": %v", err)
			}
			e.Attrs = attrs
		}
		e.Remove = raw.Remove
	default:
		return e, fmt.Errorf("op %q: want move, delete or set", raw.Op)
	}
	return e, nil
}
