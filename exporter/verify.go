package exporter

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records/infile"
	"github.com/treeport/treeport/transform"
)

// DefaultMaxExamples is how many examples of each kind of difference a Diff
// keeps when VerifyOptions.MaxExamples is 0.
const DefaultMaxExamples = 10

// VerifyOptions say what to compare: the records of the input file In,
// read as import reads them, with the table Table of layout Layout.
type VerifyOptions struct {
	Layout layouts.Layout
	Client ScanAPI
	Table  string
	Scan   ScanOptions

	// In names the file, for the Diff. Records reads its records; the
	// caller opens it (records.OpenSource) and closes it.
	In      string
	Records RecordSource
	// Unit is what a place in In is counted in, for messages: "row" for
	// Parquet, "" (lines) for the others.
	Unit string

	// MaxExamples is how many examples of each kind of difference to keep
	// (DefaultMaxExamples); the counts are always complete.
	MaxExamples int

	// OutOfCore, when set, holds the comparison to a memory budget: a
	// file and a table that do not fit in it are compared out of core,
	// with the same result (verify_ooc.go).
	OutOfCore *VerifyOutOfCore
}

// Diff is what Verify found. The examples of each kind are the first in id
// order.
type Diff struct {
	File, Table           string
	FileNodes, TableNodes int
	// Missing: in the file, not in the table. Extra: in the table, not in
	// the file (a second node of the same id in a table counts here too).
	// Moved: in both, with another parent. Changed: in both, with an
	// attribute that is missing, extra, of another type or of another
	// value; numbers compare by value (DynamoDB keeps 1.50 as 1.5) and sets
	// without order.
	Missing, Extra, Moved, Changed DiffSet
	// Dangling: the links of the table (a layout that writes links,
	// layouts.Links) whose target is not a node of the table, whatever
	// the file says.
	Dangling DiffSet
	// Read is what scanning the table cost.
	Read Stats
}

// DiffSet is one kind of difference: how many nodes have it, and the first
// examples.
type DiffSet struct {
	Count    int
	Examples []NodeDiff
}

// NodeDiff is one node that differs.
type NodeDiff struct {
	ID string
	// FileParent and TableParent are the node's parents ("" for a root) on
	// each side, when it is on that side.
	FileParent, TableParent string
	// Attrs are the attributes that differ (Changed only), by name.
	Attrs []AttrDiff
	// LinkTo is the id a dangling link links to (Dangling only).
	LinkTo string
}

// AttrDiff is one attribute that differs. File or Table is nil where the
// attribute is absent.
type AttrDiff struct {
	Name        string
	File, Table types.AttributeValue
}

// Kind says how the attribute differs: "missing from the table", "not in
// the file", "type" or "value".
func (a AttrDiff) Kind() string {
	switch {
	case a.Table == nil:
		return "missing from the table"
	case a.File == nil:
		return "not in the file"
	case ddbjson.TypeName(a.File) != ddbjson.TypeName(a.Table):
		return "type"
	}
	return "value"
}

// Differences is the number of nodes that differ, counted once per kind.
func (d *Diff) Differences() int {
	return d.Missing.Count + d.Extra.Count + d.Moved.Count + d.Changed.Count + d.Dangling.Count
}

// RecordSource is what Verify reads a file's records from: Next returns
// each record, a *transform.RowError for a row that cannot be read, and
// io.EOF at the end. records.Source satisfies it.
type RecordSource interface {
	Next(ctx context.Context) (*transform.Record, error)
}

// Verify compares the records of a file with the nodes of a table: nodes
// missing from the table, extra nodes in it, moved nodes (another parent)
// and changed attributes, compared with their DynamoDB types. The file is
// read whole, as import reads it; a row that cannot be read, a record over
// the limits every reader shares (infile.CheckLimits) or an id that appears
// twice in it is an error (a *transform.RowError) and nothing is compared. The table is read with a parallel Scan.
// With opts.OutOfCore, a file and a table that do not fit its budget are
// compared out of core instead, with the same result (VerifyOutOfCore).
func Verify(ctx context.Context, opts VerifyOptions) (*Diff, error) {
	keep := opts.MaxExamples
	if keep <= 0 {
		keep = DefaultMaxExamples
	}
	if ooc, items, size, err := verifyNeedsOOC(ctx, opts); err != nil {
		return nil, err
	} else if ooc {
		return verifyOOC(ctx, opts, keep, items, size)
	}
	file, err := readRecords(ctx, opts.Records, opts.Unit)
	if err != nil {
		return nil, err
	}
	tableRecs, st, err := Scan(ctx, opts.Client, opts.Table, opts.Layout, opts.Scan)
	if err != nil {
		return nil, err
	}
	d := &Diff{File: opts.In, Table: opts.Table, FileNodes: len(file), TableNodes: len(tableRecs), Read: st}
	table := make(map[string]*transform.Record, len(tableRecs))
	var extra []NodeDiff
	for _, r := range tableRecs {
		if _, dup := table[r.ID]; dup {
			extra = append(extra, NodeDiff{ID: r.ID, TableParent: r.Parent})
			continue
		}
		table[r.ID] = r
	}
	var missing, moved, changed []NodeDiff
	for id, f := range file {
		t, ok := table[id]
		if !ok {
			missing = append(missing, NodeDiff{ID: id, FileParent: f.Parent})
			continue
		}
		if f.Parent != t.Parent {
			moved = append(moved, NodeDiff{ID: id, FileParent: f.Parent, TableParent: t.Parent})
		}
		if attrs := diffAttrs(f.Attrs, t.Attrs); len(attrs) > 0 {
			changed = append(changed, NodeDiff{ID: id, FileParent: f.Parent, TableParent: t.Parent, Attrs: attrs})
		}
	}
	for id, t := range table {
		if _, ok := file[id]; !ok {
			extra = append(extra, NodeDiff{ID: id, TableParent: t.Parent})
		}
	}
	if layouts.Links(opts.Layout) {
		d.Dangling = diffSet(danglingLinks(tableRecs, table), keep)
	}
	d.Missing = diffSet(missing, keep)
	d.Extra = diffSet(extra, keep)
	d.Moved = diffSet(moved, keep)
	d.Changed = diffSet(changed, keep)
	return d, nil
}

// danglingLinks returns the links among recs whose target is not a node
// of the table (by id).
func danglingLinks(recs []*transform.Record, table map[string]*transform.Record) []NodeDiff {
	var out []NodeDiff
	for _, r := range recs {
		to, ok := r.Attrs[transform.LinkAttr].(*types.AttributeValueMemberS)
		if !ok {
			continue
		}
		if _, there := table[to.Value]; !there {
			out = append(out, NodeDiff{ID: r.ID, TableParent: r.Parent, LinkTo: to.Value})
		}
	}
	return out
}

func diffSet(all []NodeDiff, keep int) DiffSet {
	slices.SortFunc(all, func(a, b NodeDiff) int { return strings.Compare(a.ID, b.ID) })
	return DiffSet{Count: len(all), Examples: all[:min(keep, len(all))]}
}

// readRecords reads a whole input file into a map by id.
func readRecords(ctx context.Context, src RecordSource, unit string) (map[string]*transform.Record, error) {
	recs := map[string]*transform.Record{}
	for {
		rec, err := src.Next(ctx)
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return nil, err
		}
		if _, over := infile.CheckLimits(rec.Attrs, rec.File, rec.Line, unit, rec.ID); over != nil {
			return nil, over
		}
		if prev, dup := recs[rec.ID]; dup {
			return nil, &transform.RowError{File: rec.File, Line: rec.Line, ID: rec.ID,
				Err: fmt.Errorf("%w (first at line %d): a file with an id twice cannot be compared with a table", transform.ErrDuplicateID, prev.Line)}
		}
		recs[rec.ID] = rec
	}
}

// diffAttrs returns the attributes that differ, by name.
func diffAttrs(file, table transform.Attrs) []AttrDiff {
	var out []AttrDiff
	for k, fv := range file {
		if tv, ok := table[k]; !ok || !SameValue(fv, tv) {
			out = append(out, AttrDiff{Name: k, File: fv, Table: table[k]})
		}
	}
	for k, tv := range table {
		if _, ok := file[k]; !ok {
			out = append(out, AttrDiff{Name: k, Table: tv})
		}
	}
	slices.SortFunc(out, func(a, b AttrDiff) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// SameValue reports whether two attribute values are the same to DynamoDB:
// the same type, numbers of the same value ("1.50" and "1.5"), binary and
// strings byte for byte, lists in order, maps by key, and sets (SS, NS, BS)
// with the same members in any order.
func SameValue(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		return ok && sameNumber(a.Value, b.Value)
	case *types.AttributeValueMemberB:
		b, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Equal(a.Value, b.Value)
	case *types.AttributeValueMemberBOOL:
		b, ok := b.(*types.AttributeValueMemberBOOL)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberNULL:
		_, ok := b.(*types.AttributeValueMemberNULL)
		return ok
	case *types.AttributeValueMemberL:
		b, ok := b.(*types.AttributeValueMemberL)
		return ok && slices.EqualFunc(a.Value, b.Value, SameValue)
	case *types.AttributeValueMemberM:
		b, ok := b.(*types.AttributeValueMemberM)
		if !ok || len(a.Value) != len(b.Value) {
			return false
		}
		for k, av := range a.Value {
			if bv, ok := b.Value[k]; !ok || !SameValue(av, bv) {
				return false
			}
		}
		return true
	case *types.AttributeValueMemberSS:
		b, ok := b.(*types.AttributeValueMemberSS)
		return ok && sameSet(a.Value, b.Value, func(s string) string { return s })
	case *types.AttributeValueMemberNS:
		b, ok := b.(*types.AttributeValueMemberNS)
		return ok && sameSet(a.Value, b.Value, layouts.CanonicalNumber)
	case *types.AttributeValueMemberBS:
		b, ok := b.(*types.AttributeValueMemberBS)
		return ok && sameSet(a.Value, b.Value, func(b []byte) string { return string(b) })
	}
	return false
}

// sameSet compares two sets by their members' canonical texts.
func sameSet[T any](a, b []T, key func(T) string) bool {
	if len(a) != len(b) {
		return false
	}
	ka := make([]string, len(a))
	kb := make([]string, len(b))
	for i := range a {
		ka[i], kb[i] = key(a[i]), key(b[i])
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(ka, kb)
}

// sameNumber compares two DynamoDB numbers by value; text that is not a
// number compares as text.
func sameNumber(a, b string) bool {
	return a == b || layouts.CanonicalNumber(a) == layouts.CanonicalNumber(b)
}

// WriteReport prints the diff for a person: a summary line, then each kind
// of difference with its count and examples, values in DynamoDB JSON so
// that their types show.
func (d *Diff) WriteReport(w io.Writer) error {
	var b strings.Builder
	n := d.Differences()
	fmt.Fprintf(&b, "verify: %s (%s) against table %s (%s): ", d.File, units.Count(int64(d.FileNodes), "node"), d.Table, units.Count(int64(d.TableNodes), "node"))
	if n == 0 {
		b.WriteString("identical\n")
	} else {
		fmt.Fprintf(&b, "%s\n", units.Count(int64(n), "difference"))
	}
	section := func(title string, s DiffSet, line func(NodeDiff)) {
		if s.Count == 0 {
			return
		}
		fmt.Fprintf(&b, "%s: %d\n", title, s.Count)
		for _, e := range s.Examples {
			line(e)
		}
		if s.Count > len(s.Examples) {
			fmt.Fprintf(&b, "  … and %d more\n", s.Count-len(s.Examples))
		}
	}
	parent := func(p string) string {
		if p == "" {
			return "none (a root)"
		}
		return fmt.Sprintf("%q", p)
	}
	section("missing from the table", d.Missing, func(e NodeDiff) {
		fmt.Fprintf(&b, "  %q (parent %s)\n", e.ID, parent(e.FileParent))
	})
	section("extra in the table", d.Extra, func(e NodeDiff) {
		fmt.Fprintf(&b, "  %q (parent %s)\n", e.ID, parent(e.TableParent))
	})
	section("moved (another parent)", d.Moved, func(e NodeDiff) {
		fmt.Fprintf(&b, "  %q: parent %s in the file, %s in the table\n", e.ID, parent(e.FileParent), parent(e.TableParent))
	})
	section("changed attributes", d.Changed, func(e NodeDiff) {
		for _, a := range e.Attrs {
			fmt.Fprintf(&b, "  %q: attribute %q: %s: %s in the file, %s in the table\n", e.ID, a.Name, a.Kind(), valueText(a.File), valueText(a.Table))
		}
	})
	section("links to a node not in the table", d.Dangling, func(e NodeDiff) {
		fmt.Fprintf(&b, "  %q (parent %s) links to %q, which is not in the table\n", e.ID, parent(e.TableParent), e.LinkTo)
	})
	_, err := io.WriteString(w, b.String())
	return err
}

// valueText is a value in DynamoDB JSON, or "absent".
func valueText(v types.AttributeValue) string {
	if v == nil {
		return "absent"
	}
	const most = 120
	s := string(ddbjson.AppendValue(nil, v))
	if len(s) > most {
		s = strings.ToValidUTF8(s[:most], "") + "…"
	}
	return s
}
