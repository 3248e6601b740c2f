package layouts_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// TestNeedsPath: the adjacency layout builds the same items for a node
// given without its path (NeedsPath false) as with it, in Items and
// AppendItems, and still refuses a depth its parent does not agree with;
// every other layout needs the path, and refuses a node without one.
// NodeItems counts the items of the layouts keyed by the node's id.
func TestNeedsPath(t *testing.T) {
	node := transform.Node{Record: transform.Record{ID: "c", Parent: "b",
		Attrs: map[string]types.AttributeValue{"name": &types.AttributeValueMemberS{Value: "x"}}}, Depth: 2, Path: []string{"a", "b", "c"}}
	bare := node
	bare.Path = nil
	for _, name := range layouts.Names() {
		l, err := layouts.New(name, layouts.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var buf layouts.ItemBuffer
		want, err := appendAll(l, flatOf(&node), &buf)
		if err != nil {
			t.Fatal(err)
		}
		got, gotErr := appendAll(l, flatOf(&bare), &buf)
		kept, keptErr := itemsAll(l, &bare)
		if layouts.NeedsPath(l) != (name != layouts.AdjacencyName) {
			t.Errorf("%s: NeedsPath is %v", name, layouts.NeedsPath(l))
		}
		if layouts.NeedsPath(l) {
			if gotErr == nil || keptErr == nil {
				t.Errorf("%s: a node without its path is taken: %v, %v", name, gotErr, keptErr)
			}
		} else {
			if gotErr != nil || keptErr != nil {
				t.Fatalf("%s: %v, %v", name, gotErr, keptErr)
			}
			sameItems(t, name+" AppendItems without the path", got, want)
			sameItems(t, name+" Items without the path", kept, want)
			wrong := bare
			wrong.Depth = 0
			if _, err := itemsAll(l, &wrong); err == nil {
				t.Errorf("%s: a node at depth 0 with a parent is taken", name)
			}
		}
		n, ok := layouts.NodeItems(l, 2)
		switch name {
		case layouts.AdjacencyName, layouts.ClosureName, layouts.PathName, layouts.ShardedName:
			if !ok || n != len(want) {
				t.Errorf("%s: NodeItems %d, %v; the node writes %d items", name, n, ok, len(want))
			}
		default:
			if ok {
				t.Errorf("%s: NodeItems %d, true", name, n)
			}
		}
	}
}
