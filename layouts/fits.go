package layouts

import (
	"math"
	"strings"

	"github.com/treeport/treeport/transform"
)

// fitsSlack bounds what a layout adds to a node's attributes in its
// largest item: its own attribute names (up to 5 of at most 255 bytes
// each), the ids it repeats (the node's, its parent's, an ancestor's or the
// root's: at most four, of at most 2048 bytes each once the keys fit), a
// Path or Key of at most 2048 bytes, a GraphId's shard and a depth.
const fitsSlack = 5*255 + 4*2048 + 2048 + 64

// Fits reports whether Check would find no problem with the node, from a
// few bounds that almost every node is well within: its keys are under
// DynamoDB's limits with room to spare, its attributes are smaller than
// an item by more than the layout's own attributes can take, and no id
// holds the delimiter. It is a fraction of Check's cost. A false answer
// says nothing: call Check then (TestFitsImpliesCheck holds the two
// together).
func (c *Checker) Fits(s *transform.Stats) bool {
	return c.fits(measures{
		attr: max(s.AttrBytes, s.CopyBytes), path: s.PathBytes, depth: s.Depth,
		id: len(s.ID), parent: len(s.ParentID), root: len(s.RootID), ancestor: s.MaxAncestorIDBytes,
	}, func(delim string) bool { return strings.Contains(s.ID, delim) })
}

// FitsAll reports whether every node within the bounds fits, as Fits
// would say of each: it takes each measure at its bound. A false answer
// says nothing: check the nodes one by one then.
func (c *Checker) FitsAll(b *transform.Bounds) bool {
	return b.PathBytes < math.MaxInt32 && c.fits(measures{
		attr: max(b.AttrBytes, b.CopyBytes), path: b.PathBytes, depth: b.Depth,
		id: b.IDBytes, parent: b.IDBytes, root: b.IDBytes, ancestor: b.IDBytes,
	}, b.IDsMayHold)
}

// measures are what fits looks at, of a node or at their bounds.
type measures struct {
	attr                       int // the larger of AttrBytes and CopyBytes
	path, depth                int
	id, parent, root, ancestor int // lengths
}

// fits is Fits on m; holds reports whether the id (or some id) holds the
// delimiter.
func (c *Checker) fits(m measures, holds func(delim string) bool) bool {
	if m.attr > transform.MaxItemBytes-fitsSlack || PathIDs(c.l) {
		// Path ids are checked one by one (CheckPathID).
		return false
	}
	switch l := c.l.(type) {
	case *pathLayout:
		// Path is the longest sort key, and holds every id on the path;
		// the tree's id is a partition key, with the shard after it.
		return m.path+m.depth*len(l.delim) <= transform.MaxSortKeyBytes &&
			m.parent <= transform.MaxPartitionKeyBytes &&
			m.root+32 <= transform.MaxPartitionKeyBytes &&
			!holds(l.delim)
	case *closureLayout:
		// The ids are partition keys (Id, AncestorId); RelativeDepth, a
		// sort key, has a few digits.
		return m.id <= transform.MaxPartitionKeyBytes &&
			m.ancestor <= transform.MaxPartitionKeyBytes &&
			m.parent <= transform.MaxPartitionKeyBytes
	case *prefixLayout:
		// Key, a partition key, holds every id on the path and a delimiter
		// before each, and one more; Child, a sort key, the id.
		return m.path+(m.depth+1)*len(l.delim) <= transform.MaxPartitionKeyBytes &&
			m.id <= transform.MaxSortKeyBytes &&
			len(l.delim) <= transform.MaxSortKeyBytes &&
			!holds(l.delim)
	case *adjacencyLayout:
		// Id is the table's partition key and ByParent's sort key;
		// ParentId is ByParent's partition key.
		return m.id <= transform.MaxSortKeyBytes &&
			m.parent <= transform.MaxPartitionKeyBytes
	}
	return false
}
