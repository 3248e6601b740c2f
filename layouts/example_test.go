package layouts_test

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// The items each layout writes for CM4, a child of CM2 in tree CM1.
func ExampleNew() {
	node := &transform.Node{
		Record: transform.Record{ID: "CM4", Parent: "CM2", Attrs: transform.Attrs{
			"name": &types.AttributeValueMemberS{Value: "gear"},
		}},
		Depth: 2,
		Path:  []string{"CM1", "CM2", "CM4"},
	}
	for _, name := range layouts.Names() {
		l, err := layouts.New(name, layouts.Options{})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(name + ":")
		err = l.Items(node, func(item layouts.Item) {
			var attrs []string
			for k, v := range item {
				switch v := v.(type) {
				case *types.AttributeValueMemberS:
					attrs = append(attrs, k+"="+v.Value)
				case *types.AttributeValueMemberN:
					attrs = append(attrs, k+"="+v.Value)
				}
			}
			sort.Strings(attrs)
			fmt.Println("  " + strings.Join(attrs, " "))
		})
		if err != nil {
			fmt.Println(err)
		}
	}
	// Output:
	// path:
	//   Depth=2 Id=CM4 ParentId=CM2 Path=CM1|CM2|CM4 TreeId=CM1 name=gear
	// sharded-path:
	//   Depth=2 GraphId=CM1#4 Id=CM4 ParentId=CM2 Path=CM1|CM2|CM4 name=gear
	// closure:
	//   AncestorId=CM4 Id=CM4 ParentId=CM2 RelativeDepth=0 name=gear
	//   AncestorId=CM2 Id=CM4 ParentId=CM2 RelativeDepth=1 name=gear
	//   AncestorId=CM1 Id=CM4 ParentId=CM2 RelativeDepth=2 name=gear
	// prefix:
	//   Child=¦ Key=¦CM1¦CM2¦CM4 name=gear
	//   Child=CM4 Key=¦CM1¦CM2¦
	// adjacency:
	//   Id=CM4 ParentId=CM2 name=gear
}

// Check reports a node whose keys DynamoDB would refuse, before anything is
// written.
func ExampleCheck() {
	l, err := layouts.New(layouts.PathName, layouts.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	s := &transform.Stats{ID: "a|b", RootID: "a|b", PathBytes: 3, Subtree: 1, TreeSize: 1, Roots: 1}
	fmt.Println(layouts.Check(l, s))
	// Output:
	// transform: id contains the layout's delimiter: the id contains "|", the delimiter of the path layout; remove it from the id, or choose another delimiter with --delimiter
}
