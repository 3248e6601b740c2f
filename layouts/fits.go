package layouts

import (
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
	if max(s.AttrBytes, s.CopyBytes) > transform.MaxItemBytes-fitsSlack {
		return false
	}
	switch l := c.l.(type) {
	case *pathLayout:
		// Path is the longest sort key, and holds every id on the path;
		// the tree's id is a partition key, with the shard after it.
		return s.PathBytes+s.Depth*len(l.delim) <= transform.MaxSortKeyBytes &&
			len(s.ParentID) <= transform.MaxPartitionKeyBytes &&
			len(s.RootID)+32 <= transform.MaxPartitionKeyBytes &&
			!strings.Contains(s.ID, l.delim)
	case *closureLayout:
		// The ids are partition keys (Id, AncestorId); RelativeDepth, a
		// sort key, has a few digits.
		return len(s.ID) <= transform.MaxPartitionKeyBytes &&
			s.MaxAncestorIDBytes <= transform.MaxPartitionKeyBytes &&
			len(s.ParentID) <= transform.MaxPartitionKeyBytes
	case *prefixLayout:
		// Key, a partition key, holds every id on the path and a delimiter
		// before each, and one more; Child, a sort key, the id.
		return s.PathBytes+(s.Depth+1)*len(l.delim) <= transform.MaxPartitionKeyBytes &&
			len(s.ID) <= transform.MaxSortKeyBytes &&
			len(l.delim) <= transform.MaxSortKeyBytes &&
			!strings.Contains(s.ID, l.delim)
	}
	return false
}
