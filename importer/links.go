package importer

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/treeport/treeport/importer/ooclinks"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

// readLinks reads the input again for its links, when layout l writes
// them (layouts.Links) and some record has transform.LinkAttr: it keeps
// each good link's target in in.links, for Emit, and returns each bad
// link's node with its problem, for CheckLayout to reject:
//
//   - link_to that is not a string;
//   - a link to itself;
//   - a link to an id that is not in the input, or whose record was
//     rejected already: the link's row holds its target's key, its path,
//     which only the target's place in the input gives;
//   - a cycle of links (a → b → a), each link of it, with its ids.
//
// A link may have attributes and children of its own, as dynamotree's
// tables allow: they are written as any node's. A chain of links (a → b,
// b a link to c) is written as it is.
func (in *Input) readLinks(l layouts.Layout) (map[int32]error, error) {
	in.links = nil
	if !layouts.Links(l) || !in.HasAttr(transform.LinkAttr) {
		return nil, nil
	}
	src, err := records.OpenSource(in.Opts.Path, in.Opts.Source)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	f := in.Forest
	bad := map[int32]error{}
	links := map[int32]int32{}
	for {
		rec, err := src.Next(context.Background())
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
		i := f.Lookup(rec.ID)
		if file, line, _ := f.Location(max(i, 0)); i < 0 || f.Rejected(i) || file != rec.File || line != rec.Line {
			continue // a duplicate id, or rejected: its first record's reason
		}
		s, ok := v.(*types.AttributeValueMemberS)
		switch {
		case !ok || s == nil:
			bad[int32(i)] = fmt.Errorf("%w: %s is %s, want the id of the node it links to (a string)", transform.ErrLink, transform.LinkAttr, ddbjson.TypeName(v))
		case s.Value == rec.ID:
			bad[int32(i)] = fmt.Errorf("%w: %s %q: the node links to itself", transform.ErrLink, transform.LinkAttr, s.Value)
		default:
			t := f.Lookup(s.Value)
			switch {
			case t < 0:
				bad[int32(i)] = fmt.Errorf("%w: %s %q is not an id of the input; a link's row holds its target's key, its path, so the target must be in the input", transform.ErrLink, transform.LinkAttr, s.Value)
			case f.Rejected(t):
				bad[int32(i)] = fmt.Errorf("%w: %s %q: the target was rejected (%s)", transform.ErrLink, transform.LinkAttr, s.Value, placeOf(f, t))
			default:
				links[int32(i)] = int32(t)
			}
		}
	}
	for i, err := range ooclinks.Cycles(func(i int32) string { return f.ID(int(i)) }, links) {
		bad[i] = err
		delete(links, i)
	}
	// A link to a link that is bad is bad too, down every chain.
	ooclinks.BadChains(links, func(i int32) bool { _, ok := bad[i]; return ok }, func(i, t int32) {
		bad[i] = ooclinks.BadChainError(f.ID(int(t)))
	})
	in.links = links
	return bad, nil
}

// linkPath appends to dst the path of node i's link target, or returns
// nil when node i is not a link.
func (in *Input) linkPath(dst []string, i int) []string {
	t, ok := in.links[int32(i)]
	if !ok {
		return nil
	}
	return in.Forest.AppendPath(dst[:0], int(t))
}

// rejectLinksToRejected rejects, after the layout's checks, each link
// whose target they rejected (a key too long, a reserved attribute name),
// down every chain of links, so that no link is written to a key that is
// not: it matters under --on-invalid=skip, which writes the rest.
func (in *Input) rejectLinksToRejected() []*transform.RowError {
	f := in.Forest
	var problems []*transform.RowError
	for {
		errs := map[int]error{}
		for i, t := range in.links {
			if f.Rejected(int(t)) && !f.Rejected(int(i)) {
				errs[int(i)] = fmt.Errorf("%w: %s %q: the target was rejected (%s)", transform.ErrLink, transform.LinkAttr, f.ID(int(t)), placeOf(f, int(t)))
			}
		}
		if len(errs) == 0 {
			break
		}
		problems = append(problems, f.RejectMore(errs)...)
	}
	for i := range in.links {
		if f.Rejected(int(i)) {
			delete(in.links, i)
		}
	}
	return problems
}

// placeOf says where node i's record is, for a message that points at its
// problem: "file:line", or "file (row N)" for Parquet.
func placeOf(f *transform.Forest, i int) string {
	file, line, unit := f.Location(i)
	if unit == "row" {
		return fmt.Sprintf("see %s (row %d)", file, line)
	}
	return fmt.Sprintf("see %s:%d", file, line)
}
