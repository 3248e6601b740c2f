package importer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

// oocLinks is readLinks and rejectLinksToRejected for an input read out
// of core: the prefix layout's links (layouts.Links), each record's
// link_to. It holds the links alone, never the forest: each link's id and
// target, and, for those nodes only, what the passes resolved of them (a
// target's path, for the link's row). It is held to a sixth of the
// budget; an input with more links than that is refused (ErrUsage), with
// the --memory that keeps them.
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
// twice, and once more for each step of a chain of rejections.
type oocLinks struct {
	budget, bytes int64
	links         map[string]*oocLink     // by the link's id
	nodes         map[string]*oocLinkNode // the links' nodes and their targets', by id
	// errs are the links' problems the check of a round gives their
	// nodes; first says whether the first round's (readLinks's) are
	// among them.
	errs  map[string]error
	first bool
	again bool // another round is needed
}

// oocLink is a link: its target's id, or its problem found as it is read
// (a link_to that is not a string, a link to itself).
type oocLink struct {
	target string
	err    error
}

// oocLinkNode is a link's node or a target, as a round's passes resolved
// it.
type oocLinkNode struct {
	target    bool  // some link's target: its path is kept
	seen      bool  // the passes resolved it: an id of the input
	row       int64 // its first record's row
	place     string
	build     bool     // rejected by the read (see fBuild)
	rejected  bool     // rejected, after the check
	path      []string // its path, when not rejected
	pathBytes int64
}

// oocLinkBytes is about what a link costs in memory, beside its ids and
// its target's path: two map entries and their records.
const oocLinkBytes = 240

// oocLinkErrBytes is what a bad link's problem costs beside its text.
const oocLinkErrBytes = 64

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
	for _, n := range lk.nodes {
		*n = oocLinkNode{target: n.target}
	}
	lk.again = false
	if len(lk.errs) == 0 {
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
			return lk.errs[id]
		}
	} else {
		each = func(id string, st *transform.Stats) error {
			if err := lk.errs[id]; err != nil {
				return err
			}
			return check(id, st)
		}
	}
	return func(id string, st *transform.Stats) error {
		err := each(id, st)
		if err != nil && st.ParentID != "" && lk.errs[id] == err && lk.errs[st.ParentID] == err && each(st.ParentID, &transform.Stats{}) == err {
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

// readLinksOOC reads the input again for its links (nil: it has none).
func (in *Input) readLinksOOC(ctx context.Context, o *OutOfCore) (*oocLinks, error) {
	src, err := records.OpenSource(in.Opts.Path, in.Opts.Source)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	lk := &oocLinks{budget: int64(o.sortBudget()), links: map[string]*oocLink{}, nodes: map[string]*oocLinkNode{}}
	over := 0 // the links, once they are over the budget
	for k := 0; ; k++ {
		if k&4095 == 0 {
			if err := ctx.Err(); err != nil {
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
		if err != nil {
			return nil, err
		}
		v, ok := rec.Attrs[transform.LinkAttr]
		if !ok {
			continue
		}
		if over > 0 {
			// Counted, for the refusal to say what they need.
			over++
			lk.bytes += int64(len(rec.ID)) + oocLinkBytes
			if s, ok := v.(*types.AttributeValueMemberS); ok && s != nil {
				lk.bytes += int64(len(s.Value))
			}
			continue
		}
		if _, ok := lk.links[rec.ID]; ok {
			continue // a duplicate id: rejected
		}
		id := strings.Clone(rec.ID)
		l := &oocLink{}
		s, ok := v.(*types.AttributeValueMemberS)
		switch {
		case !ok || s == nil:
			l.err = fmt.Errorf("%w: %s is %s, want the id of the node it links to (a string)", transform.ErrLink, transform.LinkAttr, ddbjson.TypeName(v))
		case s.Value == rec.ID:
			l.err = fmt.Errorf("%w: %s %q: the node links to itself", transform.ErrLink, transform.LinkAttr, s.Value)
		default:
			l.target = strings.Clone(s.Value)
			if lk.nodes[l.target] == nil {
				lk.nodes[l.target] = &oocLinkNode{}
				lk.bytes += int64(len(l.target))
			}
			lk.nodes[l.target].target = true
		}
		lk.links[id] = l
		if lk.nodes[id] == nil {
			lk.nodes[id] = &oocLinkNode{}
		}
		lk.bytes += int64(len(id)) + oocLinkBytes
		if lk.bytes > lk.budget {
			over = len(lk.links)
		}
	}
	if over > 0 {
		return nil, lk.refuse(in.Opts.Path, o, over)
	}
	if len(lk.links) == 0 {
		return nil, nil
	}
	return lk, nil
}

// fits refuses links that do not fit their part of the budget.
func (lk *oocLinks) fits(path string, o *OutOfCore) error {
	if lk.bytes <= lk.budget {
		return nil
	}
	return lk.refuse(path, o, len(lk.links))
}

// refuse is the usage error of n links that do not fit their part of the
// budget, which says the --memory they need at least.
func (lk *oocLinks) refuse(path string, o *OutOfCore, n int) error {
	return fmt.Errorf("%w: %s has more %s links than --memory %s holds out of core (%d links, about %d bytes each with their problems and targets' paths; "+
		"the links are held in a sixth of it): give --memory %s or more",
		ddbwrite.ErrUsage, path, transform.LinkAttr, units.SizeText(o.Memory), n, lk.bytes/int64(max(n, 1)), units.SizeText(6*lk.bytes+(1<<20)))
}

// seen records what the passes resolved of node n, when it is a link or a
// target.
func (lk *oocLinks) seen(s *oocState, n *oocNode) {
	ln := lk.nodes[n.id]
	if ln == nil {
		return
	}
	ln.seen, ln.row = true, n.row
	lk.bytes -= int64(len(ln.place))
	ln.place = "see " + s.place(n.file, n.line)
	lk.bytes += int64(len(ln.place))
	ln.build = n.flags&fBuild != 0
	ln.rejected = n.flags&fRejected != 0
	lk.bytes -= ln.pathBytes
	ln.path, ln.pathBytes = nil, 0
	if !ln.rejected && ln.target {
		ln.path = make([]string, len(n.path))
		for k, id := range n.path {
			ln.path[k] = strings.Clone(id)
			ln.pathBytes += int64(len(id)) + 16
		}
		lk.bytes += ln.pathBytes
	}
}

// settle ends a round's passes: it finds the links' problems the round
// tells, and whether another round must give them to the check.
func (lk *oocLinks) settle(path string, o *OutOfCore) error {
	if err := lk.fits(path, o); err != nil {
		return err
	}
	if !lk.first {
		lk.first = true
		if errs := lk.firstProblems(); len(errs) > 0 {
			lk.errs = errs
			for _, err := range errs {
				lk.bytes += int64(len(err.Error())) + oocLinkErrBytes
			}
			lk.again = true
			return lk.fits(path, o)
		}
	}
	// rejectLinksToRejected's: a good link not rejected, whose target is.
	for id, l := range lk.links {
		if l.err != nil || lk.errs[id] != nil {
			continue
		}
		n, t := lk.nodes[id], lk.nodes[l.target]
		if !n.seen || n.rejected || t == nil || !t.rejected {
			continue
		}
		if lk.errs == nil {
			lk.errs = map[string]error{}
		}
		lk.errs[id] = fmt.Errorf("%w: %s %q: the target was rejected (%s)", transform.ErrLink, transform.LinkAttr, l.target, t.place)
		lk.bytes += int64(len(lk.errs[id].Error())) + oocLinkErrBytes
		lk.again = true
	}
	return lk.fits(path, o)
}

// firstProblems is readLinks out of core: the problem of each link whose
// node the read did not reject.
func (lk *oocLinks) firstProblems() map[string]error {
	bad := map[string]error{}
	// The nodes in the order of the input, for linkCycles.
	var ids []string
	for id, n := range lk.nodes {
		if n.seen {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int { return int(lk.nodes[a].row - lk.nodes[b].row) })
	index := make(map[string]int32, len(ids))
	for k, id := range ids {
		index[id] = int32(k)
	}
	good := map[int32]int32{}
	for id, l := range lk.links {
		n := lk.nodes[id]
		if !n.seen || n.build {
			continue // rejected already: its first record's reason
		}
		if l.err != nil {
			bad[id] = l.err
			continue
		}
		t := lk.nodes[l.target]
		switch {
		case !t.seen:
			bad[id] = fmt.Errorf("%w: %s %q is not an id of the input; a link's row holds its target's key, its path, so the target must be in the input", transform.ErrLink, transform.LinkAttr, l.target)
		case t.build:
			bad[id] = fmt.Errorf("%w: %s %q: the target was rejected (%s)", transform.ErrLink, transform.LinkAttr, l.target, t.place)
		default:
			good[index[id]] = index[l.target]
		}
	}
	for i, err := range linkCycles(func(i int32) string { return ids[i] }, good) {
		bad[ids[i]] = err
		delete(good, i)
	}
	// A link to a link that is bad is bad too, down every chain.
	badChains(good, func(i int32) bool { _, ok := bad[ids[i]]; return ok }, func(i, t int32) {
		bad[ids[i]] = badChainError(ids[t])
	})
	return bad
}

// linkPath is the path of the target of node id's link, which the emit
// gives the row of a node that is not rejected: nil when it is no link.
func (lk *oocLinks) linkPath(id string) ([]string, error) {
	if lk == nil {
		return nil, nil
	}
	l, ok := lk.links[id]
	if !ok {
		return nil, nil
	}
	t := lk.nodes[l.target]
	if l.err != nil || lk.errs[id] != nil || t == nil || t.rejected || t.path == nil {
		// The checks rejected it: its row is not emitted.
		return nil, fmt.Errorf("importer: the link %q to %q was not resolved (did the input change?)", id, l.target)
	}
	return t.path, nil
}
