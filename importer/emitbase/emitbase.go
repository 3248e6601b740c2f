// Package emitbase is what the two emits of an input share: the one of an
// input read in memory (importer) and the one of an input read out of core
// (importer/ooc). Both take the same Options, count the same Stats, number
// their items the same way (Numbering) and write the same lines to a
// rejects file (RejectLine), so that an input gives the same items,
// numbered the same, and the same rejects, however it was read.
package emitbase

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

// Options say what to do with the items of a checked input
// (importer.EmitOptions).
type Options struct {
	Layout layouts.Layout
	// Skip is how many items to pass over first (a checkpoint's watermark).
	Skip int64
	// Shard, when Of > 1, keeps only the items whose partition key hashes to
	// shard K of Of.
	Shard ddbwrite.Shard
	// Rejects, when set, receives every rejected record as it came in, with
	// the reason, as JSON Lines.
	Rejects io.Writer
	// Runs, when set for a layout of which layouts.EmitsRuns holds, takes
	// EmitAttrs' items in runs (layouts.AppendItemRuns) instead of fn, with
	// the node's index in the forest: for sizing the items, not writing
	// them. They are not numbered, so Skip and Shard must be unset.
	Runs func(node int, item []layouts.Attr, run int) error
	// Node, when set, is called for each node that is not rejected, before
	// its items, with its id, its parent ("" for a root) and its depth,
	// valid during the call only. Only an input read out of core calls it
	// (the out-of-core plan's structure pass); an error from it stops the
	// emit.
	Node func(id, parent string, depth int) error
	// RejectsLayout, when set, names the layout in each line of Rejects
	// (importer.Input.WriteRejects sets it).
	RejectsLayout string
}

// Stats count what an emit did (importer.EmitStats).
type Stats struct {
	Nodes    int64 // nodes whose items were built
	Items    int64 // items that belong to this shard, skipped ones included
	Skipped  int64 // items passed over because of opts.Skip
	Rejected int64 // records left out
}

// Numbering numbers the items an emit builds, counting in St those of
// Opts.Shard and passing over the first Opts.Skip of them. Seq is the
// number the next item takes.
type Numbering struct {
	Opts *Options
	St   *Stats
	Seq  int64
}

// Next numbers one more item, which the shard owns or not, and reports
// whether it goes to the caller's fn.
func (n *Numbering) Next(owned bool) (int64, bool) {
	s := n.Seq
	n.Seq++
	if !owned {
		return s, false
	}
	n.St.Items++
	if s < n.Opts.Skip {
		n.St.Skipped++
		return s, false
	}
	return s, true
}

// PartitionValue is the value of the item's partition key attribute.
func PartitionValue(spec layouts.TableSpec, item []layouts.Attr) types.AttributeValue {
	for _, a := range item {
		if a.Name == spec.PK.Name {
			return a.Value
		}
	}
	return nil
}

// WithRaw is o, asking for each record's raw text when raw is set: an
// emit that writes rejects reads its input so.
func WithRaw(o records.SourceOptions, raw bool) records.SourceOptions {
	o.KeepRaw = raw
	return o
}

// UnitOf is what a place in the input at path, read with src, counts:
// "row" for Parquet, "line" for the others.
func UnitOf(path string, src records.SourceOptions) string {
	if FormatOf(path, src) == "parquet" {
		return "row"
	}
	return "line"
}

// FormatOf is the format the input at path is read in: src's, or the one
// its name says.
func FormatOf(path string, src records.SourceOptions) string {
	if src.Format != "" {
		return src.Format
	}
	return records.DetectFormat(path)
}

// JSONStringBytes is the length of s in a JSON string, as ddbjson writes
// it, without the quotes.
func JSONStringBytes(s string) int {
	var buf [64]byte
	return len(ddbjson.AppendString(buf[:0], s)) - 2
}

// RejectRecord is a line of a rejects file (SPEC): a record as it came
// in, where it was and why it was rejected.
type RejectRecord struct {
	Layout string          `json:"layout,omitempty"` // bench's: the layout that rejects it
	File   string          `json:"file"`
	Line   int             `json:"line,omitempty"`
	Row    int             `json:"row,omitempty"`
	ID     string          `json:"id,omitempty"`
	Reason string          `json:"reason"`
	Record json.RawMessage `json:"record,omitempty"`
	Text   string          `json:"text,omitempty"`
	// Bytes holds, in base64, a record that is not valid UTF-8, which
	// Text could not give back byte for byte.
	Bytes []byte `json:"bytes,omitempty"`
}

// RejectLine is the rejects file's line of the record at line (a row,
// when unit is "row") of file, with id, rejected for reason, raw its text
// as it came in (nil: not kept).
func RejectLine(file string, line int, unit, id string, reason error, raw []byte) RejectRecord {
	r := RejectRecord{File: file, ID: id, Reason: reasonText(reason)}
	if unit == "row" {
		r.Row = line
	} else {
		r.Line = line
	}
	if len(raw) > 0 {
		switch {
		case !utf8.Valid(raw):
			r.Bytes = raw // so that the rejects file is UTF-8 itself
		case json.Valid(raw):
			r.Record = raw
		default:
			r.Text = string(raw)
		}
	}
	return r
}

// reasonText is the cause without the location the reject line already has.
func reasonText(err error) string {
	var re *transform.RowError
	if errors.As(err, &re) && re.Err != nil {
		return re.Err.Error()
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

// FlatNext reads src's records with their attributes as a slice, through
// records.FlatSource when src is one and reuse allows it (its strings are
// then the reader's, valid until the next read).
func FlatNext(src records.Source, reuse bool) (func(context.Context) (*transform.Record, error), *records.FlatRecord) {
	row := &records.FlatRecord{}
	if fs, ok := src.(records.FlatSource); ok && reuse {
		return func(ctx context.Context) (*transform.Record, error) {
			err := fs.NextFlat(ctx, row)
			return &row.Record, err
		}, row
	}
	var attrs []layouts.Attr
	return func(ctx context.Context) (*transform.Record, error) {
		rec, err := src.Next(ctx)
		if rec == nil {
			return nil, err
		}
		row.Record = *rec
		attrs = attrs[:0]
		for k, v := range rec.Attrs {
			attrs = append(attrs, layouts.Attr{Name: k, Value: v})
		}
		row.Flat = attrs
		return &row.Record, err
	}, row
}
