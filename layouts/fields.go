package layouts

import "fmt"

// Fields are a layout's attribute and index names after --attr renames, with
// the settings that a reader of its tables needs (delimiter, shards, what the
// closure ancestor rows copy). The exporter builds its queries from them.
// A name the layout does not have is "".
type Fields struct {
	Layout    string
	Delimiter string // "" for closure

	// ID and Parent: path, sharded-path and closure.
	ID, Parent string
	// Tree is TreeId (path) or GraphId (sharded-path); Path and Depth as
	// their names say; ByParent and ByPath are the two indexes.
	Tree, Path, Depth string
	ByParent, ByPath  string
	// Shards is sharded-path's S; 0 for the other layouts.
	Shards int

	// RelativeDepth, Ancestor (AncestorId) and the index ByAncestor: closure.
	RelativeDepth, Ancestor, ByAncestor string
	// CopyAll: closure ancestor rows copy every attribute of their node, so
	// a ByAncestor row holds the whole node.
	CopyAll bool

	// Key and Child: prefix.
	Key, Child string
}

// FieldsOf returns the names and settings of a layout made by New. It fails
// for a Layout implemented outside this package.
func FieldsOf(l Layout) (Fields, error) {
	switch l := l.(type) {
	case *pathLayout:
		return Fields{
			Layout: l.layout, Delimiter: l.delim,
			ID: l.id, Parent: l.parent, Tree: l.tree, Path: l.path, Depth: l.depth,
			ByParent: l.byParent, ByPath: l.byPath, Shards: l.shards,
		}, nil
	case *closureLayout:
		return Fields{
			Layout: l.layout,
			ID:     l.id, Parent: l.parent, RelativeDepth: l.rd, Ancestor: l.anc,
			ByAncestor: l.byAncestor, CopyAll: l.copyAll,
		}, nil
	case *prefixLayout:
		return Fields{Layout: l.layout, Delimiter: l.delim, Key: l.key, Child: l.child}, nil
	}
	return Fields{}, fmt.Errorf("layouts: %T is not a layout of this package; make it with layouts.New", l)
}
