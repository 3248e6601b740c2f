// Package layouts turns nodes into the DynamoDB items of each table layout,
// and says how a table of each layout is read back: which items hold nodes,
// the requests of its queries, and what they cost. A layout is one file
// (path.go with sharded.go, closure.go, prefix.go, adjacency.go) holding
// both directions, registered in New. Writing is pure; a query sends its reads through the
// Reads it is given, and sends nothing else. docs/ADDING_A_LAYOUT.md says
// how to add a layout, and the conformance suite (conformance_test.go) runs
// every layout New knows.
package layouts

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/transform"
)

// Item is one DynamoDB item.
type Item = map[string]types.AttributeValue

// KeyAttr is one key attribute.
type KeyAttr struct {
	Name string
	Type types.ScalarAttributeType // S or N
}

// IndexSpec is a global secondary index. Every layout projects all
// attributes; a table model (package models) may project fewer.
type IndexSpec struct {
	Name string
	PK   KeyAttr
	SK   *KeyAttr
	// Projection is ALL when "" (every layout's); KEYS_ONLY or INCLUDE
	// NonKeyAttributes for a model's index.
	Projection       types.ProjectionType
	NonKeyAttributes []string
	// Sparse says that an item whose value of one of the index's keys
	// would be empty is written without that attribute, and so is not
	// in the index (a model's "sparse": true); otherwise such an item is
	// refused (CheckKeys). DynamoDB never sees an empty key either way.
	Sparse bool
}

// TableSpec is what a layout needs of a table: its keys and its indexes.
type TableSpec struct {
	PK      KeyAttr
	SK      *KeyAttr
	Indexes []IndexSpec
	// Signs are indexes that tell a table of another layout although it
	// has every key and index of this one (a path table has all of
	// adjacency's): its items hold that layout's attributes, which this
	// layout would read as the user's, and a refresh would then remove.
	// The table check refuses such a table (ddbtable.CheckTable).
	Signs []Sign
}

// Sign is another layout's index, known by its keys whatever its name,
// and the attributes that layout's items hold beside the user's.
type Sign struct {
	Layout string
	PK, SK KeyAttr
	Attrs  []string
}

// KeyNames are the names of the table's key attributes, the partition
// key's first: what ddb.KeyString shows of an item in a message.
func (s TableSpec) KeyNames() []string {
	if s.SK == nil {
		return []string{s.PK.Name}
	}
	return []string{s.PK.Name, s.SK.Name}
}

// Layout turns nodes into items and items back into nodes, and reads its
// tables (Reader). Implementations are safe for concurrent use.
type Layout interface {
	Reader

	// Name is the layout's word on the command line.
	Name() string
	// Table returns the keys and indexes, with the names renamed by --attr.
	Table() TableSpec
	// Items emits the node's items. The node and its Path are only valid
	// during the call; emit must copy what it keeps.
	Items(n *transform.Node, emit func(Item)) error
	// Node rebuilds the record an item holds. It returns false for an item
	// that is not a node (a prefix listing row, a closure ancestor row).
	Node(item Item) (transform.Record, bool, error)
	// AppendItems is Items for a caller that does not keep the items, such
	// as a file writer that encodes each one at once: it checks the node as
	// Items does and emits the same items in the same order, each as a
	// slice of attributes built in buf. The slice, the layout attributes'
	// values and their text are reused for the next item, so an item is
	// only valid during its call to emit; the node's own attribute values
	// are passed on as they are. Building an item allocates nothing once
	// buf has grown to the size the items need.
	AppendItems(n *FlatNode, buf *ItemBuffer, emit func(item []Attr)) error

	// Delimiter is the string that joins ids in the layout's keys (after
	// --delimiter); "" for closure, which has none.
	Delimiter() string
	// Reserved returns the layout's attribute names after renames: the
	// names a user attribute may not have. CheckAttrName applies the whole
	// rule, including the prefix layout's names starting with the delimiter.
	Reserved() []string
	// Measure adds to m what the node's items add up to (items, bytes, WCU,
	// the longest keys, the largest item collections), computed from its
	// Stats without building the items. m must come from NewMeasure(l).
	// Measure takes constant time per node (plus hashing the id for
	// sharded-path, and a loop past depth 16384 for closure); see each layout
	// for where it is an upper bound rather than exact.
	Measure(s *transform.Stats, m *Measure)
}
