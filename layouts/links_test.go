package layouts_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// TestPrefixLinkRows writes a link as dynamotree's PutLink does (its
// object row holds the target's key under "¦", no link_to), with Items and
// with AppendItems alike, and reads the row back as the record it came
// from; with path ids, link_to is the target's path id.
func TestPrefixLinkRows(t *testing.T) {
	tests := []struct {
		name     string
		opts     layouts.Options
		node     transform.Node
		want     string // the object row, in DynamoDB JSON
		wantLink string // link_to read back
	}{
		{
			name: "ids",
			node: transform.Node{Record: transform.Record{ID: "short", Parent: "Links", Attrs: transform.Attrs{"link_to": str("n1"), "note": str("x")}},
				Depth: 1, Path: []string{"Links", "short"}, Link: []string{"Accounts", "123456", "n1"}},
			want:     `{"Child":{"S":"¦"},"Key":{"S":"¦Links¦short"},"note":{"S":"x"},"¦":{"S":"¦Accounts¦123456¦n1"}}`,
			wantLink: "n1",
		},
		{
			name: "path ids",
			opts: layouts.Options{PathIDs: true},
			node: transform.Node{Record: transform.Record{ID: "Links¦xyzpdq", Parent: "Links", Attrs: transform.Attrs{"link_to": str("Accounts¦123456¦Links¦xyzpdq")}},
				Depth: 1, Path: []string{"Links", "Links¦xyzpdq"}, Link: []string{"Accounts", "Accounts¦123456", "Accounts¦123456¦Links", "Accounts¦123456¦Links¦xyzpdq"}},
			want:     `{"Child":{"S":"¦"},"Key":{"S":"¦Links¦xyzpdq"},"¦":{"S":"¦Accounts¦123456¦Links¦xyzpdq"}}`,
			wantLink: "Accounts¦123456¦Links¦xyzpdq",
		},
		{
			name: "another delimiter: the attribute is named by it",
			opts: layouts.Options{Delimiter: "/"},
			node: transform.Node{Record: transform.Record{ID: "b", Parent: "a", Attrs: transform.Attrs{"link_to": str("c")}},
				Depth: 1, Path: []string{"a", "b"}, Link: []string{"a", "c"}},
			want:     `{"/":{"S":"/a/c"},"Child":{"S":"/"},"Key":{"S":"/a/b"}}`,
			wantLink: "c",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := layouts.New(layouts.PrefixName, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var items []layouts.Item
			if err := l.Items(&tt.node, func(it layouts.Item) { items = append(items, it) }); err != nil {
				t.Fatal(err)
			}
			if len(items) != 2 {
				t.Fatalf("%d items, want 2", len(items))
			}
			if got := string(ddbjson.AppendItem(nil, items[0])); got != tt.want {
				t.Errorf("object row:\n got  %s\n want %s", got, tt.want)
			}
			flat := layouts.FlatNode{ID: tt.node.ID, Parent: tt.node.Parent, Depth: tt.node.Depth, Path: tt.node.Path, Link: tt.node.Link}
			for k, v := range tt.node.Attrs {
				flat.Attrs = append(flat.Attrs, layouts.Attr{Name: k, Value: v})
			}
			var buf layouts.ItemBuffer
			var first string
			if err := l.AppendItems(&flat, &buf, func(attrs []layouts.Attr) {
				if first == "" {
					it := layouts.Item{}
					for _, a := range attrs {
						it[a.Name] = a.Value
					}
					first = string(ddbjson.AppendItem(nil, it))
				}
			}); err != nil {
				t.Fatal(err)
			}
			if first != tt.want {
				t.Errorf("AppendItems' object row:\n got  %s\n want %s", first, tt.want)
			}
			rec, ok, err := l.Node(items[0])
			if err != nil || !ok {
				t.Fatalf("Node: %v, %v", ok, err)
			}
			if rec.ID != tt.node.ID || rec.Parent != tt.node.Parent {
				t.Errorf("Node: id %q parent %q, want %q %q", rec.ID, rec.Parent, tt.node.ID, tt.node.Parent)
			}
			if got, ok := rec.Attrs["link_to"].(*types.AttributeValueMemberS); !ok || got.Value != tt.wantLink {
				t.Errorf("Node: link_to %v, want %q", rec.Attrs["link_to"], tt.wantLink)
			}
			if _, ok := rec.Attrs[l.Delimiter()]; ok {
				t.Errorf("Node kept the attribute %q: %v", l.Delimiter(), rec.Attrs)
			}
		})
	}
}

// TestPrefixLinkErrors: a link Items cannot write, and a link row Node
// cannot read, are errors that say why.
func TestPrefixLinkErrors(t *testing.T) {
	l, err := layouts.New(layouts.PrefixName, layouts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	node := func(link types.AttributeValue, target []string) *transform.Node {
		return &transform.Node{Record: transform.Record{ID: "b", Parent: "a", Attrs: transform.Attrs{"link_to": link}}, Depth: 1, Path: []string{"a", "b"}, Link: target}
	}
	for _, tt := range []struct {
		name string
		n    *transform.Node
		want string
	}{
		{"link_to a number", node(&types.AttributeValueMemberN{Value: "5"}, []string{"a", "c"}), "link_to is N"},
		{"no target path", node(str("c"), nil), `link_to "c": the target's path is not known here`},
		{"a target path of another id", node(str("c"), []string{"a", "d"}), `link_to "c": the target's path is not known here`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := l.Items(tt.n, func(layouts.Item) { t.Error("an item was emitted") })
			if !errors.Is(err, transform.ErrLink) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Items: %v, want ErrLink saying %q", err, tt.want)
			}
		})
	}
	row := func(extra layouts.Item) layouts.Item {
		it := layouts.Item{"Key": str("¦a¦b"), "Child": str("¦")}
		for k, v := range extra {
			it[k] = v
		}
		return it
	}
	for _, tt := range []struct {
		name string
		item layouts.Item
		want string
	}{
		{"target not a string", row(layouts.Item{"¦": &types.AttributeValueMemberN{Value: "1"}}), `is a link whose attribute "¦" is N`},
		{"target not a key", row(layouts.Item{"¦": str("a¦c")}), `is a link whose target "a¦c" is not a key`},
		{"target with an empty id", row(layouts.Item{"¦": str("¦a¦¦c")}), `is not a key`},
		{"a link with link_to too", row(layouts.Item{"¦": str("¦a¦c"), "link_to": str("c")}), `and has an attribute "link_to" too`},
		{"link_to on a row that is no link", row(layouts.Item{"link_to": str("c")}), `has an attribute "link_to", which the prefix layout reads as a link`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := l.Node(tt.item)
			if !errors.Is(err, layouts.ErrItem) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Node: %v, want ErrItem saying %q", err, tt.want)
			}
		})
	}
	if !layouts.Links(l) {
		t.Error("Links(prefix) is false")
	}
	// A table model's base keeps link_to as an attribute, both ways.
	base := layouts.WithoutLinks(l)
	if layouts.Links(base) {
		t.Error("Links(WithoutLinks(prefix)) is true")
	}
	var object layouts.Item
	if err := base.Items(node(str("c"), nil), func(it layouts.Item) {
		if object == nil {
			object = it
		}
	}); err != nil {
		t.Fatal(err)
	}
	if got, want := string(ddbjson.AppendItem(nil, object)), `{"Child":{"S":"¦"},"Key":{"S":"¦a¦b"},"link_to":{"S":"c"}}`; got != want {
		t.Errorf("WithoutLinks' object row:\n got  %s\n want %s", got, want)
	}
	if rec, ok, err := base.Node(object); err != nil || !ok || rec.Attrs["link_to"] == nil {
		t.Errorf("WithoutLinks' Node: %v %v %v", rec, ok, err)
	}
	// With path ids the target's key is its id: no path is needed.
	pl, err := layouts.New(layouts.PrefixName, layouts.Options{PathIDs: true})
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	n := &transform.Node{Record: transform.Record{ID: "a¦b", Parent: "a", Attrs: transform.Attrs{"link_to": str("a¦c")}}, Depth: 1, Path: []string{"a", "a¦b"}}
	if err := pl.Items(n, func(it layouts.Item) { rows = append(rows, string(ddbjson.AppendItem(nil, it))) }); err != nil {
		t.Fatal(err)
	}
	if want := `{"Child":{"S":"¦"},"Key":{"S":"¦a¦b"},"¦":{"S":"¦a¦c"}}`; len(rows) != 2 || rows[0] != want {
		t.Errorf("path ids without Link: %v, want %s first", rows, want)
	}
	n.Attrs["link_to"] = str("a¦¦c")
	if err := pl.Items(n, func(layouts.Item) {}); !errors.Is(err, transform.ErrLink) || !strings.Contains(err.Error(), "is not a path id") {
		t.Errorf("path ids, link_to a¦¦c: %v", err)
	}
	for _, name := range []string{layouts.PathName, layouts.ClosureName, layouts.AdjacencyName} {
		other, err := layouts.New(name, layouts.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if layouts.Links(other) {
			t.Errorf("Links(%s) is true: link_to is an attribute there", name)
		}
	}
}
