package transform

import (
	"fmt"
	"strings"
)

// The problems below are made the same way by the Forest and by an
// out-of-core import (importer), which finds them in sorted passes over
// files instead of in a Forest: one text for each, whichever found it.

// MissingParentError is the problem of a node whose parent is not in the
// input.
func MissingParentError(parent string) error {
	return fmt.Errorf("%w: parent %q", ErrMissingParent, parent)
}

// DuplicateAlsoAt is the problem of a second or later copy of an id whose
// first copy is at first (Place).
func DuplicateAlsoAt(first string) error {
	return fmt.Errorf("%w: also at %s", ErrDuplicateID, first)
}

// DuplicatePlaces is the reason of the first copy of a duplicate id: the
// places of its first copies (at most MaxDupPlaces of them, the first one
// the first copy's), of all copies in all.
func DuplicatePlaces(places []string, all int) error {
	places = places[:min(len(places), MaxDupPlaces)]
	if all > MaxDupPlaces {
		places = append(places, fmt.Sprintf("%d more places", all-MaxDupPlaces))
	}
	last := len(places) - 1
	return fmt.Errorf("%w: at %s and %s", ErrDuplicateID, strings.Join(places[:last], ", "), places[last])
}

// CycleError is the problem of a cycle whose ids, in the order of the
// walk up the parents that found it, are ids.
func CycleError(ids []string) error { return CycleErrorOf(ids, len(ids)) }

// CycleErrorOf is CycleError of a cycle of n ids whose first ones, in
// the order of the walk, are ids: the message names the first 20 and
// counts the others, so ids need hold no more than 20 of them.
func CycleErrorOf(ids []string, n int) error {
	return fmt.Errorf("%w: %s (each is an ancestor of itself: fix one parent)", ErrCycle, CycleList(ids, n))
}

// MaxCycleIDs is how many ids a cycle's problem names; the others are
// counted.
const MaxCycleIDs = 20

// CycleList is the ids of a cycle of n, its first ones given, as a
// problem lists them: the first MaxCycleIDs quoted, a count of the
// others, and the first again ("a" → "b" → … (5 more) → "a").
func CycleList(ids []string, n int) string {
	q := make([]string, 0, min(n, MaxCycleIDs)+2)
	for k := range min(n, MaxCycleIDs, len(ids)) {
		q = append(q, fmt.Sprintf("%q", ids[k]))
	}
	if n > MaxCycleIDs {
		q = append(q, fmt.Sprintf("… (%d more)", n-MaxCycleIDs))
	}
	q = append(q, fmt.Sprintf("%q", ids[0]))
	return strings.Join(q, " → ")
}

// AncestorReason is the reason of a node rejected with its ancestor id,
// whose own reason is err.
func AncestorReason(id string, err error) error {
	return fmt.Errorf("%w: ancestor %q: %v", ErrAncestor, id, err)
}

// Place says where a record is, as a RowError does: "file:line", or
// "file (row N)" for a unit of "row" (Parquet).
func Place(file string, line int, unit string) string { return place(file, line, unit) }

// MaxDupPlaces is the most places of one id that a duplicate's reason
// names.
const MaxDupPlaces = maxDupPlaces

// WithoutKeyLengths is err without its problems of keys over DynamoDB's
// limits (ErrKeyTooLong): what a check of a node whose path is not known
// keeps (see Forest.Check).
func WithoutKeyLengths(err error) error { return withoutKeyLengths(err) }

// SameProblem reports whether a node's check error err is its parent's,
// whose check error was parent, in the sense of Forest.Check: the node
// then goes with its parent without a problem of its own.
func SameProblem(err, parent error) bool {
	return sameError(err, parent) || longerKeys(err, parent)
}
