package layouts

import (
	"fmt"
	"sort"
	"strings"

	"github.com/treeport/treeport/transform"
)

// Path ids and implicit inner nodes (Options.PathIDs, Options.ImplicitInner;
// docs/LAYOUTS.md). With path ids a node's id is the names from its root
// to it joined by the layout's delimiter, so every id names its ancestors:
// an ancestor without an item of its own is still a node, read back
// without attributes.

// pathIDsDelimiter is the delimiter of closure and adjacency, which have
// none of their own: with PathIDs, the given one or DefaultPathDelimiter;
// without, none may be given.
func pathIDsDelimiter(layout string, opts Options) (string, error) {
	if !opts.PathIDs {
		if opts.Delimiter != "" {
			return "", fmt.Errorf("layouts: --delimiter %q: the %s layout has no delimiter but the one joining path ids; leave --delimiter out, or give --path-ids", opts.Delimiter, layout)
		}
		return "", nil
	}
	return delimiter(opts.Delimiter, DefaultPathDelimiter)
}

// PathIDs reports whether l's ids are path ids (Options.PathIDs, or a
// table model's "path_ids"). A layout tells by a method PathIDs() bool.
func PathIDs(l Reader) bool {
	p, ok := l.(interface{ PathIDs() bool })
	return ok && p.PathIDs()
}

// ImplicitInner reports whether l writes no item for an inner node
// without attributes (Options.ImplicitInner, or a table model's
// "implicit_inner"). A layout tells by a method ImplicitInner() bool.
func ImplicitInner(l Reader) bool {
	p, ok := l.(interface{ ImplicitInner() bool })
	return ok && p.ImplicitInner()
}

// ReadsImplicit reports whether reading a table of l infers the inner
// nodes that have no item from the ids of their descendants: with path
// ids, whose ids name their ancestors (ImplicitInner needs them).
func ReadsImplicit(l Reader) bool { return PathIDs(l) || ImplicitInner(l) }

// PathIDs reports whether the layout's ids are path ids.
func (b *base) PathIDs() bool { return b.pathIDs }

// ImplicitInner reports whether the layout writes no item for an inner
// node without attributes.
func (b *base) ImplicitInner() bool { return b.implicit }

// omits reports whether n gets no item of its own: an inner node without
// attributes, under ImplicitInner.
func (b *base) omits(n *transform.Node) bool { return b.implicit && n.Inner && len(n.Attrs) == 0 }

// omitsFlat is omits for a FlatNode.
func (b *base) omitsFlat(n *FlatNode) bool { return b.implicit && n.Inner && len(n.Attrs) == 0 }

// CheckPathID returns an error wrapping transform.ErrPathID when id is not
// a path id under delim whose parent is parent: a root's id holds no
// delimiter, another's is its parent's id, the delimiter and its name, and
// no name is empty (no leading, trailing or doubled delimiter). nil when
// it is one.
func CheckPathID(id, parent, delim string) error {
	if id == "" {
		return nil // the empty id has its own error
	}
	if strings.HasPrefix(id, delim) || strings.HasSuffix(id, delim) || strings.Contains(id, delim+delim) {
		return fmt.Errorf("%w: the path id %q has an empty name (a leading, trailing or doubled %q); every name between delimiters is needed",
			transform.ErrPathID, id, delim)
	}
	want := ""
	if i := strings.LastIndex(id, delim); i >= 0 {
		want = id[:i]
	}
	switch {
	case parent == want:
		return nil
	case want == "":
		return fmt.Errorf("%w: the path id %q has no %q, so it is a root's, but its parent is %q; a child's id is its parent's id, %q and its name",
			transform.ErrPathID, id, delim, parent, delim)
	case parent == "":
		return fmt.Errorf("%w: %q is a root, but a root's path id holds no %q; give it the parent %q, or an id without the delimiter",
			transform.ErrPathID, id, delim, want)
	}
	return fmt.Errorf("%w: the path id %q has the parent %q, but a path id's parent is the id without its last name, %q",
		transform.ErrPathID, id, parent, want)
}

// NameOf is the name of the node whose path id is id: its last segment.
func NameOf(id, delim string) string {
	if i := strings.LastIndex(id, delim); i >= 0 {
		return id[i+len(delim):]
	}
	return id
}

// checkPathIDs is checkDelims with path ids: the node's id is a path id of
// its parent, at its depth, under the root Path begins with.
func (b *base) checkPathIDs(n *transform.Node) error {
	if err := CheckPathID(n.ID, n.Parent, b.delim); err != nil {
		return fmt.Errorf("layouts: %s: %w", b.layout, err)
	}
	if strings.Count(n.ID, b.delim) != n.Depth || !strings.HasPrefix(n.ID, n.Path[0]) ||
		(n.Depth > 0 && !strings.HasPrefix(n.ID[len(n.Path[0]):], b.delim)) {
		return fmt.Errorf("layouts: %s: %w: %q is at depth %d under the root %q", b.layout, transform.ErrPathID, n.ID, n.Depth, n.Path[0])
	}
	return nil
}

// Implied returns the implicit inner nodes of a table: for each record
// (ids[i], parents[i]) whose parent is not among ids, the ancestors its
// path id names that are not among ids, each once, as records without
// attributes, sorted by id. It returns nil when l does not read implicit
// nodes (ReadsImplicit) or none is missing. With path ids an ancestor's
// id and parent follow from the id; a layout without path ids reads no
// implicit node.
func Implied(l Reader, ids, parents []string) []*transform.Record {
	if !PathIDs(l) {
		return nil
	}
	delim := delimOf(l)
	if delim == "" {
		return nil
	}
	present := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		present[id] = struct{}{}
	}
	added := map[string]string{}
	for _, p := range parents {
		for p != "" {
			if _, ok := present[p]; ok {
				break
			}
			if _, ok := added[p]; ok {
				break
			}
			up := ""
			if j := strings.LastIndex(p, delim); j >= 0 {
				up = p[:j]
			}
			added[p] = up
			p = up
		}
	}
	if len(added) == 0 {
		return nil
	}
	out := make([]*transform.Record, 0, len(added))
	for id, p := range added {
		out = append(out, &transform.Record{ID: id, Parent: p, Attrs: transform.Attrs{}})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out
}

// delimOf is the delimiter of l's path ids.
func delimOf(l Reader) string {
	d, ok := l.(interface{ Delimiter() string })
	if !ok {
		return ""
	}
	return d.Delimiter()
}

// appendViaItems is AppendItems through Items, for the path-id forms of
// the path and prefix layouts, whose keys are the id itself: the items are
// maps, turned into slices of attributes in b.
func appendViaItems(l Layout, n *FlatNode, b *ItemBuffer, emit func([]Attr)) error {
	if n.Path == nil {
		return ErrPathNeeded
	}
	node := n.node()
	node.Attrs = make(transform.Attrs, len(n.Attrs))
	for _, a := range n.Attrs {
		node.Attrs[a.Name] = a.Value
	}
	return l.Items(&node, func(it Item) {
		attrs := b.attrs[:0]
		for k, v := range it {
			attrs = append(attrs, Attr{k, v})
		}
		b.attrs = attrs
		emit(attrs)
	})
}

// measuresNoItem reports whether the node s describes gets no item of its
// own under ImplicitInner: it has children and no attributes.
func (b *base) measuresNoItem(s *transform.Stats) bool {
	return b.implicit && s.Children > 0 && s.AttrBytes == 0
}

// readPathID is Node's check, with path ids, that the item's id is a path
// id of its parent.
func (b *base) readPathID(r *reader, id, parent string) error {
	if !b.pathIDs {
		return nil
	}
	if err := CheckPathID(id, parent, b.delim); err != nil {
		return r.fail("%v; if the table uses another delimiter than %q, give it with --delimiter", err, b.delim)
	}
	return nil
}

// fillImplied adds to res, nodes found below the node anchor, the implicit
// inner nodes between anchor and them (which have no item to be found
// by), each at its distance below anchor, and keeps what q's band wants.
// res must hold every node below anchor whose item the table has, for the
// depths in question.
func fillImplied(l Reader, anchor string, res []Result, q *Request) []Result {
	delim := delimOf(l)
	ids := make([]string, 0, len(res)+1)
	parents := make([]string, 0, len(res)+1)
	ids, parents = append(ids, anchor), append(parents, "")
	for _, r := range res {
		ids, parents = append(ids, r.ID), append(parents, r.Parent)
	}
	base := strings.Count(anchor, delim)
	for _, rec := range Implied(l, ids, parents) {
		if strings.HasPrefix(rec.ID, anchor+delim) {
			res = append(res, Result{ID: rec.ID, Parent: rec.Parent, RelativeDepth: strings.Count(rec.ID, delim) - base, Attrs: transform.Attrs{}})
		}
	}
	out := res[:0]
	for _, r := range res {
		if q.InBand(r.RelativeDepth) {
			out = append(out, r)
		}
	}
	return out
}

// impliedResult is the node id names with path ids, as an implicit inner
// node rd levels from the queried one.
func impliedResult(id, delim string, rd int) Result {
	parent := ""
	if i := strings.LastIndex(id, delim); i >= 0 {
		parent = id[:i]
	}
	return Result{ID: id, Parent: parent, RelativeDepth: rd, Attrs: transform.Attrs{}}
}
