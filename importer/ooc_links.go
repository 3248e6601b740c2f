package importer

import (
	"context"
	"errors"
	"io"

	"github.com/treeport/treeport/importer/ooclinks"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

// The prefix layout's links (layouts.Links), each record's link_to, of an
// input read out of core are readLinks and rejectLinksToRejected done by
// sorts and merge joins (importer/ooclinks): no bound on their count.
//
// A link's problems are found after the passes that place its node and
// its target, but they are its node's problems in the layout's check,
// which rejects its subtree there: that subtree may hold another link's
// target, and so on. So the read runs again, the links found bad given to
// the check at once (readInput), until no round finds a new one:
//
//  1. the first round finds the problems readLinks finds, from what the
//     read itself rejected (a target not in the input, or rejected by it;
//     a link to itself, to a bad link, a cycle of links); with none, it
//     is also the round below;
//  2. each later round finds the links whose target its check rejected
//     (a key too long, a reserved attribute, below a bad link), as
//     rejectLinksToRejected does.
//
// An input whose links are all good is read once; one with bad links,
// twice, and once more for each step of a chain of rejections. The bad
// links and the good links to links are held in memory, in a twelfth of
// the budget (an input with more of them is refused, ErrUsage, with the
// --memory that holds them); a good link to a node that is no link is
// not.

// withLinks returns check with the links' problems of the round (a node's
// problem first, but after a record's reserved names, as checkLayout
// gives them), reading the input again for its links in the first round.
func (s *oocState) withLinks(ctx context.Context, in *Input, check oocChecker, perRecord bool) (oocChecker, error) {
	if s.links == nil {
		lk, err := in.readLinksOOC(ctx, s.opts)
		if err != nil || lk == nil {
			return check, err
		}
		s.links = lk
	}
	lk := s.links
	if !lk.Round() {
		return check, nil
	}
	// each is the problem check gives node id; a cycle's problem, which
	// its links share, given to the parent too goes with the parent
	// without a problem of its own, as transform.Forest.Check does.
	var each oocChecker
	if perRecord {
		each = func(id string, st *transform.Stats) error {
			if err := check(id, st); err != nil {
				return err
			}
			return lk.Err(id)
		}
	} else {
		each = func(id string, st *transform.Stats) error {
			if err := lk.Err(id); err != nil {
				return err
			}
			return check(id, st)
		}
	}
	return func(id string, st *transform.Stats) error {
		err := each(id, st)
		if err != nil && st.ParentID != "" && lk.Err(id) == err && lk.Err(st.ParentID) == err && each(st.ParentID, &transform.Stats{}) == err {
			return &sameAsParent{err}
		}
		return err
	}, nil
}

// sameAsParent is a node's problem that is its parent's very error: the
// node goes with its parent, without a problem of its own (see
// transform.Forest.Check; resolve).
type sameAsParent struct{ err error }

func (e *sameAsParent) Error() string { return e.err.Error() }
func (e *sameAsParent) Unwrap() error { return e.err }

// readLinksOOC reads the input again for its links (nil: it has none),
// into a temporary directory of their own, which the rounds share.
func (in *Input) readLinksOOC(ctx context.Context, o *OutOfCore) (*ooclinks.Links, error) {
	src, err := records.OpenSource(in.Opts.Path, in.Opts.Source)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	dir, err := o.SpillDir("links", "the out-of-core links", spillBytes(in.Opts.Path)/4, in.Opts.Path)
	if err != nil {
		return nil, err
	}
	lk := ooclinks.New(dir, o.sortBudget()/2, o.Memory/12)
	for k := 0; ; k++ {
		if k&4095 == 0 {
			if err := ctx.Err(); err != nil {
				lk.Close()
				return nil, err
			}
		}
		rec, err := src.Next(ctx)
		if err == io.EOF {
			break
		}
		var re *transform.RowError
		if errors.As(err, &re) {
			continue // rejected already, by ReadInput
		}
		if err == nil {
			if v, ok := rec.Attrs[transform.LinkAttr]; ok {
				err = lk.Add(rec.ID, v)
			}
		}
		if err != nil {
			lk.Close()
			return nil, err
		}
	}
	if err := lk.Done(); err != nil || lk.Count() == 0 {
		lk.Close()
		return nil, err
	}
	return lk, nil
}

// seenLink tells the links of node n, resolved by a round's passes.
func (s *oocState) seenLink(n *oocNode) error {
	return s.links.Seen(n.id, n.row, n.file, n.line, n.flags&fBuild != 0, n.flags&fRejected != 0, n.path)
}
