package refresh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/internal/itemdigest"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/refresh/opsfile"
	"github.com/treeport/treeport/transform"
)

// ErrEdit marks an edit that cannot be carried out: a node that is not in
// the table, a move under the node's own subtree, the delete of a root that
// still has children, a bad attribute. Nothing is written when an edit of a
// file fails.
var ErrEdit = errors.New("refresh: edit refused")

// Edit kinds, as the ops file names them.
const (
	EditMove   = opsfile.Move
	EditDelete = opsfile.Delete
	EditSet    = opsfile.Set
)

// Edit is one tree edit of an ops file (refresh/opsfile).
type Edit = opsfile.Edit

// errorf is an error about the edit e: where it is, what it is.
func errorf(e *Edit, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s %q: %s", ErrEdit, e.Where(), e.Op, e.ID, fmt.Sprintf(format, args...))
}

// ReadEdits reads an ops file (opsfile.Read); a line that is not an edit
// is an ErrEdit naming the file and line.
func ReadEdits(path string) ([]Edit, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readEdits(f, path)
}

func readEdits(r io.Reader, file string) ([]Edit, error) {
	edits, err := opsfile.Read(r, file)
	var le *opsfile.LineError
	if errors.As(err, &le) {
		return nil, fmt.Errorf("%w: %w", ErrEdit, err)
	}
	return edits, err
}

// vnode is a node as the editor knows it: as it is in the table (orig…) and
// as the edits so far leave it.
type vnode struct {
	origParent string
	origAttrs  transform.Attrs
	parent     string
	attrs      transform.Attrs
	deleted    bool
	// subtree: every node of the node's subtree is known.
	subtree bool
}

// Editor carries out tree edits on a table with the fewest item writes: it
// reads only the nodes the edits touch (the layout's own queries: a node
// and its ancestors, a moved or deleted node's subtree), applies the edits
// to them in memory, in order, and then compares the items of every node
// whose path or attributes changed, before and after. Items whose key stays
// and whose value changes are put; keys that go are deleted; new keys are
// put. An edit that cannot be carried out fails the whole set before
// anything is written.
type Editor struct {
	client exporter.QueryAPI
	table  string
	l      layouts.Layout
	spec   layouts.TableSpec
	nodes  map[string]*vnode
	kids   map[string]map[string]bool
	// Read is what the queries cost.
	Read exporter.Stats
	// Located counts the prefix nodes whose path had to be found with a
	// Scan (the prefix layout's keys are paths, not ids).
	Located int
}

// NewEditor returns an editor of the table.
func NewEditor(client exporter.QueryAPI, table string, l layouts.Layout) (*Editor, error) {
	return &Editor{client: client, table: table, l: l, spec: l.Table(),
		nodes: map[string]*vnode{}, kids: map[string]map[string]bool{}}, nil
}

// EditCount is what one edit did.
type EditCount struct {
	Edit *Edit
	// Nodes is the number of nodes whose place or attributes the edit
	// changed (a move: the subtree; a delete: the node and its subtree,
	// which moves up a level; a set: the node).
	Nodes int
}

// Apply carries out the edits in order, in memory, reading what they need
// from the table.
func (ed *Editor) Apply(ctx context.Context, edits []Edit) ([]EditCount, error) {
	counts := make([]EditCount, 0, len(edits))
	for k := range edits {
		e := &edits[k]
		n, err := ed.apply(ctx, e)
		if err != nil {
			return counts, err
		}
		counts = append(counts, EditCount{Edit: e, Nodes: n})
	}
	return counts, nil
}

func (ed *Editor) apply(ctx context.Context, e *Edit) (int, error) {
	switch e.Op {
	case EditMove:
		x, err := ed.ensureSubtree(ctx, e, e.ID)
		if err != nil {
			return 0, err
		}
		if e.Parent == x.parent {
			return 0, nil
		}
		for _, p := range []string{x.parent, e.Parent} {
			if err := ed.ensureParentKids(ctx, e, p); err != nil {
				return 0, err
			}
		}
		if e.Parent != "" {
			if _, err := ed.ensureNode(ctx, e, e.Parent); err != nil {
				return 0, err
			}
			for p := e.Parent; p != ""; p = ed.nodes[p].parent {
				if p == e.ID {
					if e.Parent == e.ID {
						return 0, errorf(e, "a node cannot be its own parent")
					}
					return 0, errorf(e, "%q is in the subtree of %q: a node cannot move under its own descendant", e.Parent, e.ID)
				}
			}
		}
		ed.setParent(e.ID, e.Parent)
		return ed.subtreeSize(e.ID), nil
	case EditDelete:
		x, err := ed.ensureSubtree(ctx, e, e.ID)
		if err != nil {
			return 0, err
		}
		if err := ed.ensureParentKids(ctx, e, x.parent); err != nil {
			return 0, err
		}
		kids := ed.children(e.ID)
		if x.parent == "" && len(kids) > 0 {
			return 0, errorf(e, "it is a root with %d children, which would have no parent to move up to; move or delete them first", len(kids))
		}
		n := ed.subtreeSize(e.ID)
		for _, c := range kids {
			ed.setParent(c, x.parent)
		}
		ed.setParent(e.ID, "")
		x.deleted = true
		return n, nil
	case EditSet:
		ensure := ed.ensureNode
		if layouts.ImplicitInner(ed.l) {
			// Whether the node has children decides whether it has an
			// item (an inner node without attributes has none).
			ensure = ed.ensureSubtree
		}
		x, err := ensure(ctx, e, e.ID)
		if err != nil {
			return 0, err
		}
		attrs := make(transform.Attrs, len(x.attrs)+len(e.Attrs))
		for k, v := range x.attrs {
			attrs[k] = v
		}
		for _, k := range e.Remove {
			delete(attrs, k)
		}
		for k, v := range e.Attrs {
			if err := layouts.CheckAttrName(ed.l, k); err != nil {
				return 0, errorf(e, "%v", err)
			}
			attrs[k] = v
		}
		x.attrs = attrs
		return 1, nil
	}
	return 0, errorf(e, "unknown op")
}

// node returns a known node that the edits have not deleted.
func (ed *Editor) node(e *Edit, id string) (*vnode, bool, error) {
	x, ok := ed.nodes[id]
	if ok && x.deleted {
		return nil, true, errorf(e, "node %q was deleted by an earlier edit", id)
	}
	return x, ok, nil
}

// ensureNode makes sure the node and its ancestors are known, reading them
// with one ancestors query.
func (ed *Editor) ensureNode(ctx context.Context, e *Edit, id string) (*vnode, error) {
	if x, ok, err := ed.node(e, id); ok || err != nil {
		return x, err
	}
	res, err := ed.query(ctx, exporter.QueryOptions{Kind: exporter.Ancestors, ID: id, MinDepth: 0, MaxDepth: exporter.NoMaxDepth})
	if errors.Is(err, exporter.ErrNotFound) {
		return nil, errorf(e, "node %q is not in table %s", id, ed.table)
	}
	if err != nil {
		return nil, err
	}
	ed.add(res)
	return ed.nodes[id], nil
}

// ensureParentKids makes sure, with implicit inner nodes, that every child
// of a node whose children an edit changes is known: whether it keeps
// one decides whether it has an item. Nothing for "" (no parent) or
// another layout.
func (ed *Editor) ensureParentKids(ctx context.Context, e *Edit, id string) error {
	if id == "" || !layouts.ImplicitInner(ed.l) {
		return nil
	}
	_, err := ed.ensureSubtree(ctx, e, id)
	return err
}

// ensureSubtree makes sure the node, its ancestors and its whole current
// subtree are known.
func (ed *Editor) ensureSubtree(ctx context.Context, e *Edit, id string) (*vnode, error) {
	x, err := ed.ensureNode(ctx, e, id)
	if err != nil || x.subtree {
		return x, err
	}
	opts := exporter.QueryOptions{Kind: exporter.Descendants, ID: id, MinDepth: 1, MaxDepth: exporter.NoMaxDepth}
	if ed.l.PathKeyed() {
		opts.Path = ed.path(id, true)
	}
	res, err := ed.query(ctx, opts)
	if err != nil && !errors.Is(err, exporter.ErrNotFound) {
		return nil, err
	}
	ed.add(res)
	// Every node the table has below id is known now, and so is each of
	// their subtrees as the table has it.
	x.subtree = true
	for _, r := range res {
		ed.nodes[r.ID].subtree = true
	}
	// Nodes moved under id by earlier edits bring table subtrees of their
	// own.
	for _, c := range ed.descendants(id) {
		if n := ed.nodes[c]; !n.subtree {
			if _, err := ed.ensureSubtree(ctx, e, c); err != nil {
				return nil, err
			}
		}
	}
	return x, nil
}

func (ed *Editor) query(ctx context.Context, opts exporter.QueryOptions) ([]exporter.Result, error) {
	opts.ConsistentRead = true
	opts.OnLocate = func([]string, exporter.Stats) { ed.Located++ }
	res, st, err := exporter.Query(ctx, ed.client, ed.table, ed.l, opts)
	ed.Read.Add(st)
	return res, err
}

// add learns nodes from a query's results; what the edits already know of a
// node wins over the table.
func (ed *Editor) add(res []exporter.Result) {
	for _, r := range res {
		if _, ok := ed.nodes[r.ID]; ok {
			continue
		}
		ed.nodes[r.ID] = &vnode{origParent: r.Parent, origAttrs: r.Attrs, parent: r.Parent, attrs: r.Attrs}
		ed.link(r.ID, r.Parent)
	}
}

func (ed *Editor) link(id, parent string) {
	if parent == "" {
		return
	}
	k := ed.kids[parent]
	if k == nil {
		k = map[string]bool{}
		ed.kids[parent] = k
	}
	k[id] = true
}

func (ed *Editor) setParent(id, parent string) {
	x := ed.nodes[id]
	if x.parent != "" {
		delete(ed.kids[x.parent], id)
	}
	x.parent = parent
	ed.link(id, parent)
}

// children are the node's known children, sorted.
func (ed *Editor) children(id string) []string {
	var out []string
	for c := range ed.kids[id] {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// descendants are the node's known descendants, breadth-first.
func (ed *Editor) descendants(id string) []string {
	var out []string
	queue := ed.children(id)
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		out = append(out, c)
		queue = append(queue, ed.children(c)...)
	}
	return out
}

func (ed *Editor) subtreeSize(id string) int { return 1 + len(ed.descendants(id)) }

// path is the node's ids from its root to it, as the table has them (orig)
// or as the edits leave them.
func (ed *Editor) path(id string, orig bool) []string {
	var rev []string
	for p := id; p != ""; {
		rev = append(rev, p)
		x := ed.nodes[p]
		if orig {
			p = x.origParent
		} else {
			p = x.parent
		}
		if len(rev) > len(ed.nodes) {
			panic("refresh: cycle in the editor's tree")
		}
	}
	slices.Reverse(rev)
	return rev
}

// Ops returns the item writes that carry the edits out: for every node whose
// path or attributes changed, its items before and after are compared by
// key and value. Puts come first, then deletes, each in key order. A new
// item over DynamoDB's limits (a key grown past 2048 bytes by a move, an
// item past 400 KB by a set) is an error, and nothing should be written.
func (ed *Editor) Ops() ([]Op, error) {
	ids := make([]string, 0, len(ed.nodes))
	for id := range ed.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var d itemdigest.Digester
	var changes []nodeChange
	// With implicit inner nodes, whether a node has children (as the table
	// has it, and after the edits) decides whether it has an item.
	implicit := layouts.ImplicitInner(ed.l)
	origKids := map[string]int{}
	if implicit {
		for _, x := range ed.nodes {
			if x.origParent != "" {
				origKids[x.origParent]++
			}
		}
	}
	for _, id := range ids {
		x := ed.nodes[id]
		origPath, path := ed.path(id, true), []string(nil)
		if !x.deleted {
			path = ed.path(id, false)
		}
		inner, origInner := implicit && len(ed.children(id)) > 0, implicit && origKids[id] > 0
		if !x.deleted && slices.Equal(origPath, path) && d.Item(x.attrs) == d.Item(x.origAttrs) && inner == origInner {
			continue
		}
		c := nodeChange{ID: id, Before: nodeSide{Parent: x.origParent, Attrs: x.origAttrs, Path: origPath, Inner: origInner}}
		if !x.deleted {
			c.After = nodeSide{Parent: x.parent, Attrs: x.attrs, Path: path, Inner: inner}
		}
		changes = append(changes, c)
	}
	ops, err := diffItems(ed.l, changes)
	var ne *nodeItemError
	if errors.As(err, &ne) {
		when := "after the edits"
		if ne.Before {
			when = "as the table holds it"
		}
		return nil, fmt.Errorf("%w: node %q %s: %v", ErrEdit, ne.ID, when, ne.Err)
	}
	return ops, err
}

// nodeSide is a node as one side of a change has it: its parent, its
// attributes and its path from the root (nil: the node is absent).
type nodeSide struct {
	Parent string
	Attrs  transform.Attrs
	Path   []string
	// Inner: the node has children (transform.Node.Inner), so that a
	// layout with implicit inner nodes writes none for it without
	// attributes. Set by follow; edit leaves it false.
	Inner bool
}

// nodeChange is one node before and after a change.
type nodeChange struct {
	ID            string
	Before, After nodeSide
}

// nodeItemError is a node whose items after a change do not fit DynamoDB
// (a key grown past its limit, an item past 400 KB).
type nodeItemError struct {
	ID  string
	Err error
	// Before: the items of the node as the table holds it could not be
	// built (so neither could what to delete).
	Before bool
}

func (e *nodeItemError) Error() string { return fmt.Sprintf("node %q: %v", e.ID, e.Err) }
func (e *nodeItemError) Unwrap() error { return e.Err }

// diffItems returns the item writes that turn the layout's items of every
// change's Before nodes into its After nodes, compared by key and value:
// items whose key stays and whose value changes are put, keys that go are
// deleted, new keys are put. Puts come first, then deletes, each in key
// order, and no key comes twice. It is what a tree edit (Editor) and a
// followed stream (follow) write: a move rewrites the items of the moved
// subtree that the layout derives from the path, and no other.
func diffItems(l layouts.Layout, changes []nodeChange) ([]Op, error) {
	spec := l.Table()
	var d itemdigest.Digester
	type entry struct {
		item   layouts.Item
		c      *nodeChange
		digest uint64
	}
	before := map[string]entry{}
	after := map[string]entry{}
	collect := func(into map[string]entry, c *nodeChange, side nodeSide) error {
		n := transform.Node{Record: transform.Record{ID: c.ID, Parent: side.Parent, Attrs: side.Attrs}, Depth: len(side.Path) - 1, Path: side.Path, Inner: side.Inner}
		return l.Items(&n, func(item layouts.Item) {
			into[itemdigest.KeyOf(spec, item)] = entry{item: item, c: c, digest: d.Item(item)}
		})
	}
	for k := range changes {
		c := &changes[k]
		if c.Before.Path != nil {
			if err := collect(before, c, c.Before); err != nil {
				return nil, &nodeItemError{ID: c.ID, Err: err, Before: true}
			}
		}
		if c.After.Path != nil {
			if err := collect(after, c, c.After); err != nil {
				return nil, &nodeItemError{ID: c.ID, Err: err}
			}
		}
	}
	var puts, dels []string
	for k, a := range after {
		if b, ok := before[k]; !ok || b.digest != a.digest {
			if err := checkItem(spec, a.item); err != nil {
				return nil, &nodeItemError{ID: a.c.ID, Err: err}
			}
			puts = append(puts, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			dels = append(dels, k)
		}
	}
	slices.Sort(puts)
	slices.Sort(dels)
	ops := make([]Op, 0, len(puts)+len(dels))
	for _, k := range puts {
		a := after[k]
		reason := ReasonChanged
		switch {
		case a.c.Before.Path == nil:
			reason = ReasonNew
		case !slices.Equal(a.c.Before.Path, a.c.After.Path):
			reason = ReasonMoved
		}
		var old layouts.Item
		if b, ok := before[k]; ok {
			old = b.item
		}
		ops = append(ops, Op{Kind: Put, Reason: reason, ID: a.c.ID, Item: a.item,
			WCU: layouts.ReplaceUnits(spec, old, a.item)})
	}
	for _, k := range dels {
		b := before[k]
		reason := ReasonMoved
		if b.c.After.Path == nil {
			reason = ReasonRemoved
		}
		key, err := itemdigest.DecodeKey(spec, k)
		if err != nil {
			return nil, err
		}
		ops = append(ops, Op{Kind: Delete, Reason: reason, ID: b.c.ID, Item: key,
			WCU: layouts.WriteUnits(spec, b.item)})
	}
	return ops, nil
}

// checkItem checks an item against DynamoDB's limits: its size, and the
// length of its keys in the table and in each index.
func checkItem(spec layouts.TableSpec, item layouts.Item) error {
	if err := layouts.CheckKeys(spec, item); err != nil {
		return err
	}
	if size := transform.ItemSize(item); size > transform.MaxItemBytes {
		return fmt.Errorf("%w: %d bytes, over DynamoDB's %d", transform.ErrItemTooLarge, size, transform.MaxItemBytes)
	}
	keyLen := func(name string, limit int, kind string) error {
		if s, ok := item[name].(*types.AttributeValueMemberS); ok && len(s.Value) > limit {
			return fmt.Errorf("%w: %s key %s is %d bytes, over DynamoDB's %d (%s…)", transform.ErrKeyTooLong, kind, name, len(s.Value), limit, s.Value[:40])
		}
		return nil
	}
	check := func(pk layouts.KeyAttr, sk *layouts.KeyAttr) error {
		if err := keyLen(pk.Name, transform.MaxPartitionKeyBytes, "partition"); err != nil {
			return err
		}
		if sk != nil {
			return keyLen(sk.Name, transform.MaxSortKeyBytes, "sort")
		}
		return nil
	}
	if err := check(spec.PK, spec.SK); err != nil {
		return err
	}
	for _, ix := range spec.Indexes {
		if err := check(ix.PK, ix.SK); err != nil {
			return fmt.Errorf("index %s: %w", ix.Name, err)
		}
	}
	return nil
}

// moveVerb is "moves" for one node, "move" for any other count.
func moveVerb(n int) string {
	if n == 1 {
		return "moves"
	}
	return "move"
}

// Describe is one line about an edit's effect, for the command's output.
func (c EditCount) Describe() string {
	e := c.Edit
	switch e.Op {
	case EditMove:
		to := fmt.Sprintf("under %q", e.Parent)
		if e.Parent == "" {
			to = "to the top (a root)"
		}
		if c.Nodes == 0 {
			return fmt.Sprintf("%s: move %q %s: already there", e.Where(), e.ID, to)
		}
		return fmt.Sprintf("%s: move %q %s: %s %s", e.Where(), e.ID, to, units.Count(int64(c.Nodes), "node"), moveVerb(c.Nodes))
	case EditDelete:
		return fmt.Sprintf("%s: delete %q: %s %s up a level", e.Where(), e.ID, units.Count(int64(c.Nodes-1), "descendant"), moveVerb(c.Nodes-1))
	}
	var names []string
	for k := range e.Attrs {
		names = append(names, k)
	}
	slices.Sort(names)
	s := fmt.Sprintf("%s: set %q", e.Where(), e.ID)
	if len(names) > 0 {
		s += " " + strings.Join(names, ", ")
	}
	if len(e.Remove) > 0 {
		s += ", remove " + strings.Join(e.Remove, ", ")
	}
	return s
}
