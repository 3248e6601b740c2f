// Package transform holds records and forests: the adjacency-list records a
// source reads, the validation of a forest, and the ids → paths and depths
// computation that every layout builds on. It is pure: no I/O, and no AWS type
// beyond DynamoDB's attribute values.
package transform

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attrs are a node's own attributes, typed as DynamoDB types them.
type Attrs = map[string]types.AttributeValue

// Record is one node as a source read it.
type Record struct {
	ID     string
	Parent string // "" for a root
	Attrs  Attrs

	// Where the record came from, for errors and the rejects file.
	File string
	Line int // 1-based line, or 1-based row for Parquet

	// Raw is the record as it came in (a CSV line, a JSON object, a Parquet
	// row rendered as JSON). Sources fill it only when asked to keep it.
	Raw []byte
}

// Sentinel errors that classify a problem in the input. A RowError wraps one
// of them (or a parse error) with its location.
var (
	ErrParse         = errors.New("transform: cannot parse row")
	ErrEmptyID       = errors.New("transform: empty id")
	ErrDuplicateID   = errors.New("transform: duplicate id")
	ErrMissingParent = errors.New("transform: parent not in input")
	ErrSelfParent    = errors.New("transform: node is its own parent")
	ErrCycle         = errors.New("transform: cycle")
	ErrDelimiter     = errors.New("transform: id contains the layout's delimiter")
	// ErrPathID is a path id (--path-ids) that is not its parent's id, the
	// delimiter and one name: an empty name, or another parent.
	ErrPathID       = errors.New("transform: id is not a path id")
	ErrReservedAttr = errors.New("transform: attribute name is a layout attribute")
	ErrKeyTooLong   = errors.New("transform: key over DynamoDB's limit")
	// ErrEmptyKey is a key attribute (the table's or an index's) whose
	// value would be an empty string or empty binary, which DynamoDB
	// refuses in a key.
	ErrEmptyKey     = errors.New("transform: empty key value")
	ErrItemTooLarge = errors.New("transform: item over 400 KB")
	ErrAncestor     = errors.New("transform: an ancestor was rejected")
)

// RowError is a problem with one record, with where it is.
type RowError struct {
	File string
	Line int    // 0 when the problem has no single line
	Unit string // "line" (default) or "row" (Parquet)
	ID   string
	Err  error
}

func (e *RowError) Error() string {
	loc := place(e.File, e.Line, e.Unit)
	if e.ID != "" {
		return fmt.Sprintf("%s: id %s: %v", loc, quoteID(e.ID), e.Err)
	}
	return fmt.Sprintf("%s: %v", loc, e.Err)
}

// place says where a record is, as a RowError does: "file:line", or
// "file (row N)" for a unit of "row" (Parquet), or the file alone when line
// is 0.
func place(file string, line int, unit string) string {
	switch {
	case line <= 0:
		return file
	case unit == "row" && file != "":
		return fmt.Sprintf("%s (row %d)", file, line)
	case file != "":
		return fmt.Sprintf("%s:%d", file, line)
	case unit == "":
		unit = "line"
	}
	return fmt.Sprintf("%s %d", unit, line)
}

// maxShownID is the most bytes of an id that an error message shows: an id
// of thousands of bytes (the one a key-length error is about) would bury
// the message, and the file and line already say which record it is.
const maxShownID = 64

// quoteID quotes id for a message, cut at maxShownID bytes (on a rune
// boundary) with its length said when it is longer.
func quoteID(id string) string {
	if len(id) <= maxShownID {
		return strconv.Quote(id)
	}
	cut := maxShownID
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(id[:cut]), len(id))
}

// Unwrap returns the cause.
func (e *RowError) Unwrap() error { return e.Err }
