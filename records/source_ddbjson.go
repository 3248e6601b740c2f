package records

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/treeport/treeport/records/ddbitems"
	"github.com/treeport/treeport/transform"
)

// ddbjsonSource reads records from DynamoDB JSON: each item is a node, with
// its id and parent (S or N) taken out of its attributes.
type ddbjsonSource struct {
	items *ddbitems.Reader
	opts  SourceOptions
}

var _ Source = (*ddbjsonSource)(nil)

func openDDBJSON(path string, opts SourceOptions) (Source, error) {
	items, err := ddbitems.Open(path)
	if err != nil {
		return nil, err
	}
	return &ddbjsonSource{items: items, opts: opts}, nil
}

// Next reads the next item as a record. A line that is not a DynamoDB JSON
// item, or whose id is neither S nor N, is a RowError; reading goes on.
func (s *ddbjsonSource) Next(ctx context.Context) (*transform.Record, error) {
	item, text, err := s.items.NextLine()
	var re *transform.RowError
	if err != nil && !errors.As(err, &re) {
		return nil, err
	}
	file, line := s.items.Pos()
	rec := &transform.Record{File: file, Line: line}
	if s.opts.KeepRaw && text != nil {
		rec.Raw = bytes.Clone(text)
	}
	if re != nil {
		salvageDDBIDs(text, rec, s.opts)
		re.ID = rec.ID
		return rec, re
	}
	rec.Attrs = item
	if err := takeIDs(rec, s.opts); err != nil {
		return rec, &transform.RowError{File: rec.File, Line: rec.Line, ID: rec.ID, Err: err}
	}
	return rec, nil
}

// salvageDDBIDs reads the id and the parent of a line that cannot be
// decoded, when encoding/json can read them.
func salvageDDBIDs(text []byte, rec *transform.Record, opts SourceOptions) {
	var line struct {
		Item map[string]map[string]json.RawMessage
	}
	if json.Unmarshal(text, &line) != nil || line.Item == nil {
		return
	}
	key := func(name string) string {
		for _, t := range []string{"S", "N"} {
			var s string
			if raw, ok := line.Item[name][t]; ok && json.Unmarshal(raw, &s) == nil {
				return s
			}
		}
		return ""
	}
	rec.ID = key(opts.idField())
	rec.Parent = key(opts.parentField())
}

func (s *ddbjsonSource) Close() error { return s.items.Close() }

// Records is the number of items an export's manifest-summary.json counts,
// for ReadInput to size the forest by; 0 when there is none.
func (s *ddbjsonSource) Records() int { return int(s.items.Count()) }
