package ooclinks

import (
	"bytes"
	"strings"

	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/transform"
)

// The links found bad are not held in memory: their problems are a file
// sorted by the link's id (id, 0, kind, message), which the importer
// merges with its nodes as it sorts them by id, before a round's level
// passes (Problems), and Settle with the links, by id too.

// The kinds of a problem.
const (
	// Plain is a link's own problem.
	Plain = 'l'
	// Cycle is the problem of a link on a cycle of links, which the
	// cycle's links share: a node whose parent's check found that very
	// problem goes with its parent, without a problem of its own
	// (transform.Forest.Check).
	Cycle = 'c'
)

// Problem is a link's problem, as its message: it unwraps to
// transform.ErrLink, as the problems found in memory do.
type Problem string

func (p Problem) Error() string { return string(p) }

// Unwrap is transform.ErrLink.
func (p Problem) Unwrap() error { return transform.ErrLink }

// pendingRow marks a problem of a target the first round's check
// rejected: dropped when that round finds problems of its own (the next
// round finds it again, if it still is one).
const pendingRow = 1

func putProblem(e *extsort.Enc, id string, row int64, kind byte, msg string) {
	e.Reset()
	e.S(id)
	e.Row(row)
	e.Flag(kind)
	e.S(msg)
}

// Problems opens a cursor on the links' problems the check of the round
// gives their nodes, by id: nil when there are none. One cursor at a
// time: the next rewinds the file.
func (lk *Links) Problems() (*Problems, error) {
	if lk == nil || lk.problems == nil || lk.problems.Records == 0 {
		return nil, nil
	}
	if err := lk.problems.Rewind(); err != nil {
		return nil, err
	}
	p := &Problems{sp: lk.problems}
	p.cur, p.more = p.sp.Next()
	return p, nil
}

// Problems reads the links' problems in the order of their ids.
type Problems struct {
	sp   *extsort.Spool
	cur  []byte
	more bool
}

// At is the problem of node id's link ("": none) and its kind. The ids
// are asked in their order (extsort.CompareKeyRow's), each at most once.
func (p *Problems) At(id []byte) (msg string, kind byte) {
	if p == nil {
		return "", 0
	}
	for p.more && bytes.Compare(firstKey(p.cur), id) < 0 {
		p.cur, p.more = p.sp.Next()
	}
	if !p.more || !bytes.Equal(firstKey(p.cur), id) {
		return "", 0
	}
	d := extsort.Dec{B: p.cur}
	d.Bytes()
	d.Row()
	kind = d.Flag()
	return strings.Clone(d.S()), kind
}

// Err is the error that ended the reading, if any.
func (p *Problems) Err() error {
	if p == nil {
		return nil
	}
	return p.sp.Err()
}

// problemCount is the number of links with a problem the check gives
// their nodes in the round.
func (lk *Links) problemCount() int64 {
	if lk.problems == nil {
		return 0
	}
	return lk.problems.Records
}

// newProblems makes the problems of the next rounds from next: sorted by
// id, each id once, without those of pendingRow when drop says so.
func (lk *Links) newProblems(next *extsort.Sorter, drop bool) error {
	it, err := next.Sort()
	if err != nil {
		return err
	}
	defer it.Close()
	sp, err := extsort.NewSpool(lk.dir.Path)
	if err != nil {
		return err
	}
	var (
		last []byte
		have bool
	)
	for rec, ok := it.Next(); ok; rec, ok = it.Next() {
		if drop && extsort.RowAfterKey(rec) == pendingRow {
			continue
		}
		if id := firstKey(rec); !have || !bytes.Equal(id, last) {
			last, have = append(last[:0], id...), true
			if err := sp.Add(rec); err != nil {
				sp.Close()
				return err
			}
		}
	}
	if err := it.Err(); err != nil {
		sp.Close()
		return err
	}
	if lk.problems != nil {
		lk.problems.Close()
	}
	lk.problems = sp
	return nil
}
