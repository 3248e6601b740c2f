package records

import (
	"context"
	"errors"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// The fast reads: interfaces that some sources implement besides Source, so
// that the import pipeline can read a large input with less work a row. A
// caller type-asserts for them and falls back to Next.

// CountedSource is a Source that knows how many records it holds, from the
// file's own count (a Parquet footer, an export's manifest), so that the
// caller can size the forest once.
type CountedSource interface {
	Source
	Records() int
}

// MaxCount bounds what a CountedSource counts, and any other guess that
// sizes a forest: past it, the forest grows as it reads.
const MaxCount = 1 << 27

// ErrRestUnreadable marks a RowError after which a source cannot read on
// (Parquet data that cannot be decoded): importer.ReadInput fails with it whatever
// --on-invalid says, for the rows after it would be lost without a trace.
var ErrRestUnreadable = errors.New("records: the rest of the input cannot be read")

// SkeletonSource is a Source that can read an input for its skeleton alone:
// it checks every row as Next does, with the same errors, but builds no
// attribute values, only their sizes. The CSV source is one; the import
// pipeline falls back to Next for the others.
type SkeletonSource interface {
	Source
	// Skeleton starts the read. copySet names the attributes a closure
	// ancestor row copies (nil: all of them).
	Skeleton(copySet map[string]bool)
	// NextSkeleton reads the next row into row, with Next's errors. The
	// strings of row are only valid until the next call; those of a
	// returned RowError are the caller's.
	NextSkeleton(ctx context.Context, row *SkeletonRow) error
	// AttrsSeen returns each attribute name seen in a good row, with the
	// first place it was seen.
	AttrsSeen() []AttrPlace
}

// SkeletonRow is what the skeleton read keeps of a row.
type SkeletonRow struct {
	ID, Parent string // valid until the next NextSkeleton
	File       string
	Line       int
	AttrBytes  int // transform.AttrsSize of the row's attributes
	CopyBytes  int // the part of AttrBytes a closure ancestor row copies
}

// AttrPlace is where an attribute name was first seen.
type AttrPlace struct {
	Name, File string
	Line       int
	ID         string
}

// ReuseSource is a Source that can read into the caller's record, reusing
// its Attrs map: importer's Emit gives each node's map to Layout.Items only for the
// call, so one map serves every row.
type ReuseSource interface {
	Source
	NextReuse(ctx context.Context, rec *transform.Record) error
}

// FlatSource is a Source that can read a row with its attributes as a
// slice, reusing the caller's record and the values: importer's EmitAttrs builds each
// node's items before it reads the next row.
type FlatSource interface {
	Source
	NextFlat(ctx context.Context, rec *FlatRecord) error
}

// FlatRecord is a row of the flat read: the record without its Attrs map,
// and the attributes as a slice.
type FlatRecord struct {
	transform.Record
	Flat []layouts.Attr
}

// marked is err, which keeps its own message, classed as mark too
// (errors.Is): infile.ErrInvalid, transform.ErrParse or ErrRestUnreadable.
type marked struct{ err, mark error }

func (e *marked) Error() string   { return e.err.Error() }
func (e *marked) Unwrap() []error { return []error{e.err, e.mark} }

var (
	_ CountedSource = (*parquetSource)(nil)
	_ CountedSource = (*ddbjsonSource)(nil)
)
