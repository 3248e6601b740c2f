package layouts_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// The path layouts check a node's attribute names on the item they build:
// every layout attribute, renamed or not, on a root or below one, is
// refused with the name in the error, and nothing is emitted.
func TestPathItemsRefuseLayoutAttributeNames(t *testing.T) {
	renamed := map[string]string{"Id": "Key", "ParentId": "Up", "Depth": "Level"}
	for _, layout := range []string{layouts.PathName, layouts.ShardedName} {
		for _, opts := range []layouts.Options{{}, {Attr: renamed}} {
			l, err := layouts.New(layout, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range l.Reserved() {
				for _, path := range [][]string{{"a"}, {"a", "b"}, {"a", "b", "c"}} {
					t.Run(layout+"/"+name+"/"+strings.Join(path, "|"), func(t *testing.T) {
						n := &transform.Node{
							Record: transform.Record{ID: path[len(path)-1], Attrs: transform.Attrs{"name": sv("x"), name: sv("y")}},
							Depth:  len(path) - 1, Path: path,
						}
						if len(path) > 1 {
							n.Parent = path[len(path)-2]
						}
						emitted := 0
						err := l.Items(n, func(layouts.Item) { emitted++ })
						if !errors.Is(err, transform.ErrReservedAttr) || !strings.Contains(err.Error(), `"`+name+`"`) || emitted > 0 {
							t.Fatalf("error %v, %d items; want ErrReservedAttr naming %q and no item", err, emitted, name)
						}
					})
				}
			}
			// The same names are fine as values, and a node without them
			// gives its item.
			n := &transform.Node{Record: transform.Record{ID: "b", Parent: "a", Attrs: transform.Attrs{"note": sv("Id ParentId Depth")}}, Depth: 1, Path: []string{"a", "b"}}
			var items []layouts.Item
			if err := l.Items(n, func(it layouts.Item) { items = append(items, it) }); err != nil || len(items) != 1 || len(items[0]) != 6 {
				t.Errorf("%s %v: %v, %d items %v; want one item of 6 attributes", layout, opts.Attr, err, len(items), items)
			}
		}
	}
}
