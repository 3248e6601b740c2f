package ooc

import (
	"context"
	"errors"
	"io"
	"strings"

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
// the check at once, until no round finds a new one:
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
// links' problems are not held in memory: byIDPass merges their file,
// sorted by id, with the nodes it sorts by id, and each node carries its
// link's problem (oocNode.link) through the passes to its check
// (checkNode).

// withLinks reads the input again for its links in the first round, and
// begins a round of them. check is returned as it is: checkNode gives a
// node its link's problem after its record's reserved names' (reserved,
// when the input has one) and before the layout's check, as checkLayout
// does.
func (s *State) withLinks(ctx context.Context, in *input, check, reserved oocChecker) (oocChecker, error) {
	if s.links == nil {
		lk, err := in.readLinksOOC(ctx, s.opts)
		if err != nil || lk == nil {
			return check, err
		}
		s.links = lk
	}
	s.reserved = reserved
	s.links.Round()
	return check, nil
}

// linkSame is the kind of a cycle's problem given to a node whose
// parent's check found that very problem (sameLink).
const linkSame = 's'

// linkOf is a node's link field of a problem and its kind ("": none).
func linkOf(msg string, kind byte) string {
	if msg == "" {
		return ""
	}
	return string(kind) + msg
}

// checkNode is check of node n with its link's problem, as the check of
// an input read in memory gives it: a cycle's problem, which its links
// share, given to the parent too goes with the parent without a problem
// of its own (sameAsParent; transform.Forest.Check).
func (s *State) checkNode(n *oocNode, check oocChecker, st *transform.Stats) error {
	n.byLink = false
	if n.link == "" {
		return check(n.id, st)
	}
	if s.reserved != nil {
		if err := s.reserved(n.id, st); err != nil {
			return err
		}
	}
	n.byLink = true
	err := ooclinks.Problem(strings.Clone(n.link[1:])) // n's strings may be a record's memory
	if n.link[0] == linkSame && st.ParentID != "" {
		return &sameAsParent{err}
	}
	return err
}

// sameLink marks c's link's problem when it is a cycle's whose problem
// its parent n's check found: c goes with n (checkNode).
func (s *State) sameLink(n, c *oocNode) {
	if c.link == "" || c.link[0] != ooclinks.Cycle && c.link[0] != linkSame {
		return
	}
	kind := byte(ooclinks.Cycle)
	if n.byLink && n.link != "" && n.link[0] != ooclinks.Plain && n.link[1:] == c.link[1:] {
		kind = linkSame
	}
	c.link = string(kind) + c.link[1:]
}

// sameAsParent is a node's problem that is its parent's very error: the
// node goes with its parent, without a problem of its own (see
// transform.Forest.Check; resolve).
type sameAsParent struct{ err error }

func (e *sameAsParent) Error() string { return e.err.Error() }
func (e *sameAsParent) Unwrap() error { return e.err }

// readLinksOOC reads the input again for its links (nil: it has none),
// into a temporary directory of their own, which the rounds share.
func (in *input) readLinksOOC(ctx context.Context, o *OutOfCore) (*ooclinks.Links, error) {
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
func (s *State) seenLink(n *oocNode) error {
	return s.links.Seen(n.id, n.row, n.file, n.line, n.flags&fBuild != 0, n.flags&fRejected != 0, n.path)
}
