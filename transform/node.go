package transform

// Node is a record placed in its tree, as the layouts need it.
type Node struct {
	Record
	// Depth is 0 at a root.
	Depth int
	// Path holds the ids from the root to the node, both included, so
	// Path[0] is the tree id and Path[len(Path)-1] is the node's own id.
	Path []string
	// Inner says that the node has children. A layout with ImplicitInner
	// writes no item of its own for an inner node without attributes;
	// false (a caller that does not say) gives every node its items.
	Inner bool
}

// TreeID is the id of the node's root.
func (n *Node) TreeID() string { return n.Path[0] }

// Stats describes a node's place in its forest without its attributes' values,
// so that a layout can measure its items (sizes, keys, collections) without
// building them. Lengths are in bytes of UTF-8.
type Stats struct {
	ID       string
	ParentID string // "" for a root
	RootID   string
	Depth    int
	// PathBytes is the sum of the lengths of the ids from the root to the
	// node, both included (delimiters not counted).
	PathBytes int
	// MaxAncestorIDBytes is the length of the longest id strictly above the node.
	MaxAncestorIDBytes int
	// AttrBytes is the DynamoDB size of the node's own attributes (names and
	// values), as AttrsSize computes it.
	AttrBytes int
	// CopyBytes is the size of the attributes a closure ancestor row copies.
	CopyBytes int
	// Children is the number of children; Subtree counts the node and all its
	// descendants; TreeSize counts the nodes of its tree.
	Children int
	Subtree  int
	TreeSize int
	// Roots is the number of trees in the whole forest.
	Roots int
}
