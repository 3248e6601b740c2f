package layouts

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/treeport/treeport/transform"
)

// The layout names, as the command line spells them.
const (
	PathName      = "path"
	ShardedName   = "sharded-path"
	ClosureName   = "closure"
	PrefixName    = "prefix"
	AdjacencyName = "adjacency"
)

// Defaults of Options.
const (
	// DefaultShards is the number of ByPath partitions per tree of the
	// sharded-path layout.
	DefaultShards = 4
	// DefaultPathDelimiter joins the ids of Path in path and sharded-path.
	DefaultPathDelimiter = "|"
	// DefaultPrefixDelimiter separates the ids of the prefix layout's Key.
	DefaultPrefixDelimiter = "¦"
)

// Names returns the layout names New accepts, in the order the documentation
// lists them.
func Names() []string {
	return []string{PathName, ShardedName, ClosureName, PrefixName, AdjacencyName}
}

// Options configure a layout. The zero value is every layout's default.
// Options that do not apply to a layout (Shards for path, ClosureCopy for
// prefix) are ignored, except a Delimiter for closure and adjacency, which
// have none.
type Options struct {
	// Attr renames the layout's attribute, key and index names, as
	// --attr OLD=NEW does (Id=ComponentId, ByPath=GSI2). OLD is the name the
	// SPEC gives; every OLD must be a name of the chosen layout.
	Attr map[string]string
	// Delimiter joins ids: one character, or "" for the layout's default,
	// "|" for path and sharded-path and "¦" for prefix.
	Delimiter string
	// Shards is the sharded-path layout's S; 0 means DefaultShards.
	Shards int
	// ClosureCopy picks the attributes a closure ancestor row copies from
	// its node: nil copies all, an empty non-nil slice copies none, and
	// otherwise the named attributes (when the node has them) are copied.
	ClosureCopy []string
	// PathIDs makes a node's id its path from its root: the names from the
	// root to the node joined by the delimiter (Accounts¦123456¦Links); its
	// name is the last segment and its parent's id the id without it. The
	// closure and adjacency layouts, which have no delimiter of their own,
	// join names with "|" (DefaultPathDelimiter) or --delimiter. See
	// docs/LAYOUTS.md.
	PathIDs bool
	// ImplicitInner gives a node without attributes that has children
	// (transform.Node.Inner) no item of its own (prefix: its listing row
	// only), and reads an ancestor that the keys of its descendants name
	// but that has no item as a node without attributes. New refuses it
	// where such a node could not be read back: closure and adjacency
	// without PathIDs.
	ImplicitInner bool
}

// New returns the layout called name. It fails, saying what to do, on an
// unknown layout, an --attr OLD the layout does not have, renames that give
// two attributes (or two indexes) one name, an invalid index name, a bad
// delimiter or a negative shard count.
func New(name string, opts Options) (Layout, error) {
	switch {
	case opts.ImplicitInner && name == AdjacencyName:
		return nil, fmt.Errorf("layouts: --implicit-inner: an adjacency table reaches a node's children only through its item's id (ByParent), so a node without an item would hide its subtree from queries; use path, sharded-path, prefix, or closure with --path-ids")
	case opts.ImplicitInner && !opts.PathIDs && name == ClosureName:
		return nil, fmt.Errorf("layouts: --implicit-inner: a closure table without --path-ids names no node's parent where the node has no row, so a node without an item could not be read back; give --path-ids too")
	case opts.ImplicitInner && !opts.PathIDs:
		return nil, fmt.Errorf("layouts: --implicit-inner: give --path-ids too: a node without an item is read back from the path ids of its descendants")
	}
	switch name {
	case PathName:
		return newPath(opts)
	case ShardedName:
		return newSharded(opts)
	case ClosureName:
		return newClosure(opts)
	case PrefixName:
		return newPrefix(opts)
	case AdjacencyName:
		return newAdjacency(opts)
	}
	return nil, fmt.Errorf("unknown layout %q: choose one of %s", name, strings.Join(Names(), ", "))
}

// ParseAttrRenames parses --attr flags, each "OLD=NEW", into the map
// Options.Attr takes. It fails on a flag without "=", an empty side, or an
// OLD given twice.
func ParseAttrRenames(flags []string) (map[string]string, error) {
	renames := make(map[string]string, len(flags))
	for _, f := range flags {
		old, to, ok := strings.Cut(f, "=")
		old, to = strings.TrimSpace(old), strings.TrimSpace(to)
		if !ok || old == "" || to == "" {
			return nil, fmt.Errorf("layouts: --attr %q: want OLD=NEW, for example --attr Id=ComponentId", f)
		}
		if prev, dup := renames[old]; dup && prev != to {
			return nil, fmt.Errorf("layouts: --attr renames %q twice (to %q and to %q); give it once", old, prev, to)
		}
		renames[old] = to
	}
	return renames, nil
}

// schema is a layout's canonical names: the attributes its items carry and
// the indexes of its table.
type schema struct {
	layout  string
	attrs   []string
	indexes []string
}

// maxAttrNameBytes is DynamoDB's limit on the name of a key attribute.
const maxAttrNameBytes = 255

// tableName is DynamoDB's rule for table and index names: 3 to 255
// characters, each a-z, A-Z, 0-9, '_', '-' or '.'. From "Supported data
// types and naming rules in Amazon DynamoDB", DynamoDB Developer Guide
// (HowItWorks.NamingRulesDataTypes).
var tableName = regexp.MustCompile(`^[A-Za-z0-9_.-]{3,255}$`)

// IsTableName reports whether DynamoDB accepts name as a table or index name.
func IsTableName(name string) bool { return tableName.MatchString(name) }

// resolve applies renames to the schema and returns canonical → actual
// names for every attribute and index.
func (sc schema) resolve(renames map[string]string) (map[string]string, error) {
	names := make(map[string]string, len(sc.attrs)+len(sc.indexes))
	for _, n := range sc.attrs {
		names[n] = n
	}
	for _, n := range sc.indexes {
		names[n] = n
	}
	olds := make([]string, 0, len(renames))
	for old := range renames {
		olds = append(olds, old)
	}
	sort.Strings(olds)
	for _, old := range olds {
		to := renames[old]
		if _, ok := names[old]; !ok {
			all := append(slices.Clone(sc.attrs), sc.indexes...)
			return nil, fmt.Errorf("layouts: --attr %s=%s: the %s layout has no attribute or index %q; its names are %s",
				old, to, sc.layout, old, strings.Join(all, ", "))
		}
		switch {
		case slices.Contains(sc.indexes, old):
			if !IsTableName(to) {
				return nil, fmt.Errorf("layouts: --attr %s=%s: an index name is 3 to 255 letters, digits, '_', '-' or '.'", old, to)
			}
		case to == "" || len(to) > maxAttrNameBytes || !utf8.ValidString(to):
			return nil, fmt.Errorf("layouts: --attr %s=%s: an attribute name is 1 to %d bytes of UTF-8", old, to, maxAttrNameBytes)
		}
		names[old] = to
	}
	for _, group := range [][]string{sc.attrs, sc.indexes} {
		seen := make(map[string]string, len(group))
		for _, canon := range group {
			actual := names[canon]
			if other, dup := seen[actual]; dup {
				return nil, fmt.Errorf("layouts: --attr renames give %s and %s of the %s layout the same name %q; pick distinct names",
					other, canon, sc.layout, actual)
			}
			seen[actual] = canon
		}
	}
	return names, nil
}

// base holds what every layout shares: its name, delimiter and attribute
// names after renames.
type base struct {
	layout string
	delim  string
	// attrs are the actual attribute names, in the schema's order; canon
	// maps each back to the name the SPEC gives it.
	attrs []string
	canon map[string]string
	// pathIDs and implicit are Options.PathIDs and Options.ImplicitInner.
	pathIDs, implicit bool
}

func newBase(sc schema, names map[string]string, delim string, opts Options) base {
	b := base{layout: sc.layout, delim: delim, canon: make(map[string]string, len(sc.attrs)),
		pathIDs: opts.PathIDs, implicit: opts.ImplicitInner}
	for _, c := range sc.attrs {
		b.attrs = append(b.attrs, names[c])
		b.canon[names[c]] = c
	}
	return b
}

// Name is the layout's word on the command line.
func (b *base) Name() string { return b.layout }

// Delimiter is the string that joins ids in the layout's keys; "" for closure.
func (b *base) Delimiter() string { return b.delim }

// Reserved returns the layout's attribute names after renames. A user
// attribute may not have one of these names; CheckAttrName also applies the
// prefix layout's rule on names starting with the delimiter.
func (b *base) Reserved() []string { return slices.Clone(b.attrs) }

func (b *base) layoutBase() *base { return b }

// checkNode is the guard Items runs before building items: a node whose
// Path does not match it, an id containing the delimiter, or a user
// attribute that would overwrite a layout attribute would give items that
// cannot be read back, so they fail here instead.
func (b *base) checkNode(n *transform.Node) error {
	if err := b.checkShape(n); err != nil {
		return err
	}
	if err := b.checkDelims(n); err != nil {
		return err
	}
	return b.checkAttrs(n)
}

// checkShape is checkNode's check of the id, the Path and the parent.
func (b *base) checkShape(n *transform.Node) error {
	if n.ID == "" {
		return fmt.Errorf("layouts: %s: a node has an empty id", b.layout)
	}
	if n.Path == nil && !b.needsPath() {
		// The adjacency layout reads no path: a node may come without
		// one (NeedsPath), its depth and parent agreeing.
		if n.Depth < 0 || (n.Depth == 0) != (n.Parent == "") {
			return fmt.Errorf("layouts: %s: node %q at depth %d has parent %q", b.layout, n.ID, n.Depth, n.Parent)
		}
		return nil
	}
	if n.Depth < 0 || len(n.Path) != n.Depth+1 || n.Path[len(n.Path)-1] != n.ID {
		return fmt.Errorf("layouts: %s: node %q: Path %q does not end with the node at depth %d", b.layout, n.ID, n.Path, n.Depth)
	}
	if parent := ""; n.Depth > 0 {
		parent = n.Path[n.Depth-1]
		if n.Parent != parent {
			return fmt.Errorf("layouts: %s: node %q: parent %q is not %q, the id before it in its Path", b.layout, n.ID, n.Parent, parent)
		}
	} else if n.Parent != "" {
		return fmt.Errorf("layouts: %s: node %q is at depth 0 but has parent %q", b.layout, n.ID, n.Parent)
	}
	return nil
}

// needsPath is false for the adjacency layout without path ids, whose
// items are built from a node's id, parent and attributes alone.
func (b *base) needsPath() bool { return b.layout != AdjacencyName || b.pathIDs }

// NeedsPath reports whether l builds a node's items from the ids of its
// path (FlatNode.Path or PathText, transform.Node.Path). The adjacency
// layout (without path ids) does not: it takes a node with Path nil, its
// ID, Parent and Depth alone, so that the path need not be found at all.
func NeedsPath(l Layout) bool {
	a, ok := l.(*adjacencyLayout)
	return !ok || a.needsPath()
}

// NodeItems reports, for a layout every item of whose nodes has the node's
// id as its partition key value (path, sharded-path, closure, adjacency:
// all but prefix; without path ids or
// implicit inner nodes, which leave nodes out), how many items a valid
// node at depth writes: a shard (--shard k/N) that does not own the id
// can pass over them without building them. ok is false for another
// layout.
func NodeItems(l Layout, depth int) (items int, ok bool) {
	switch l := l.(type) {
	case *adjacencyLayout:
		return 1, !l.pathIDs && !l.implicit
	case *pathLayout: // path, sharded-path
		return 1, !l.pathIDs && !l.implicit
	case *closureLayout:
		return depth + 1, !l.pathIDs && !l.implicit
	}
	return 0, false
}

// checkDelims is checkNode's check that no id on the Path holds the
// delimiter.
func (b *base) checkDelims(n *transform.Node) error {
	if b.pathIDs {
		return b.checkPathIDs(n)
	}
	if b.delim != "" {
		for _, id := range n.Path {
			if strings.Contains(id, b.delim) {
				return fmt.Errorf("%w: id %q (on the path of %q) contains %q, the delimiter of the %s layout",
					transform.ErrDelimiter, id, n.ID, b.delim, b.layout)
			}
		}
	}
	return nil
}

// checkAttrs is checkNode's check of the user attributes' names.
func (b *base) checkAttrs(n *transform.Node) error {
	for _, a := range b.attrs {
		if _, ok := n.Attrs[a]; ok {
			return fmt.Errorf("layouts: node %q: %w", n.ID, b.attrNameError(a))
		}
	}
	if b.layout == PrefixName {
		for a := range n.Attrs {
			if strings.HasPrefix(a, b.delim) {
				return fmt.Errorf("layouts: node %q: %w", n.ID, b.attrNameError(a))
			}
		}
	}
	return nil
}

// attrNameError explains why a user attribute may not be called name, or
// returns nil when it may.
func (b *base) attrNameError(name string) error {
	if canon, ok := b.canon[name]; ok {
		if canon != name {
			return fmt.Errorf("%w: attribute %q is a layout attribute of %s (%s, renamed by --attr %s=%s); rename the layout's with --attr %s=NEWNAME",
				transform.ErrReservedAttr, name, b.layout, canon, canon, name, canon)
		}
		return fmt.Errorf("%w: attribute %q is a layout attribute of %s; rename the layout's with --attr %s=NEWNAME",
			transform.ErrReservedAttr, name, b.layout, canon)
	}
	if b.layout == PrefixName && strings.HasPrefix(name, b.delim) {
		return fmt.Errorf("%w: attribute %q starts with %q, the delimiter of the prefix layout; rename the attribute in the input, or choose another delimiter with --delimiter",
			transform.ErrReservedAttr, name, b.delim)
	}
	return nil
}

// delimiter resolves Options.Delimiter against a layout's default.
func delimiter(given, def string) (string, error) {
	if given == "" {
		return def, nil
	}
	// One character, because with more an id could end with the start of
	// the delimiter, and two different paths could join to the same text.
	if r, size := utf8.DecodeRuneInString(given); r == utf8.RuneError || size != len(given) {
		return "", fmt.Errorf("layouts: --delimiter %q: give one character (default %q)", given, def)
	}
	return given, nil
}
