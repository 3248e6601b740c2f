package followstate

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/itemdigest"
	"github.com/treeport/treeport/internal/streams"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// mapStore is a Store in a Go map, sorted on Ascend.
type mapStore map[string][]byte

func (m mapStore) Get(k []byte) ([]byte, bool, error) {
	v, ok := m[string(k)]
	return bytes.Clone(v), ok, nil
}
func (m mapStore) Put(k, v []byte) error { m[string(k)] = bytes.Clone(v); return nil }
func (m mapStore) Delete(k []byte) error { delete(m, string(k)); return nil }
func (m mapStore) Len() int64            { return int64(len(m)) }
func (m mapStore) Close() error          { clear(m); return nil }
func (m mapStore) Ascend(prefix []byte, fn func(k, v []byte) error) error {
	var keys []string
	for k := range m {
		if bytes.HasPrefix([]byte(k), prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := fn([]byte(k), m[k]); err != nil {
			return err
		}
	}
	return nil
}

// TestMirrorClaims: claims by key and by id, children in order, a
// removal still named as a parent kept (Gone) until nothing names it; ids
// with a length prefix, so that "a" and "a\x00b" do not mix.
func TestMirrorClaims(t *testing.T) {
	l, _ := layouts.New(layouts.AdjacencyName, layouts.Options{})
	s := mapStore{}
	m, _ := New(l, s, mapStore{})
	var items []layouts.Item
	emit := func(id, parent string) {
		n := transform.Node{Record: transform.Record{ID: id, Parent: parent, Attrs: transform.Attrs{"v": &types.AttributeValueMemberS{Value: id}}}}
		if parent != "" {
			n.Depth = 1
		}
		if err := l.Items(&n, func(it layouts.Item) { items = append(items, it) }); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range [][2]string{{"r", ""}, {"b", "r"}, {"a", "r"}, {"a\x00b", "r"}, {"c", "a"}} {
		emit(n[0], n[1])
	}
	keys := make([]string, len(items))
	for i, it := range items {
		keys[i] = string(rune('0' + i))
		if _, err := m.Item(keys[i], it, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.Children("r"); !slices.Equal(got, []string{"a", "a\x00b", "b"}) {
		t.Errorf("children of r: %q", got)
	}
	if got := m.Children("a"); !slices.Equal(got, []string{"c"}) {
		t.Errorf("children of a: %q", got)
	}
	c, present, conflict := m.Target("c")
	if !present || conflict || c.Parent != "a" || m.Attrs(c)["v"].(*types.AttributeValueMemberS).Value != "c" {
		t.Errorf("target c: %+v %v %v", c, present, conflict)
	}
	rec := &streams.Record{Shard: "s1", Seq: "42", Event: "REMOVE", Keys: layouts.Item{"PK": &types.AttributeValueMemberS{Value: "a"}}}
	ids, err := m.Item(keys[2], nil, rec) // a, while c names it
	if err != nil || !slices.Contains(ids, "a") {
		t.Fatalf("removing a: %q %v", ids, err)
	}
	if _, present, _ := m.Target("a"); present {
		t.Error("a is still present")
	}
	if g := m.Gone("a"); g == nil || g.Seq != "42" || g.Shard != "s1" {
		t.Errorf("gone a: %+v", g)
	}
	m.Prune()
	if m.Gone("a") == nil {
		t.Error("pruned while c names a")
	}
	if _, err := m.Item(keys[4], nil, rec); err != nil { // c
		t.Fatal(err)
	}
	m.Prune()
	if m.Gone("a") != nil || m.HasChildren("a") {
		t.Error("a's removal kept with nothing under it")
	}
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestAppliedPaths: B's paths walked from parents; a held node pinned to
// the path B holds keeps it when its ancestors move, and its subtree
// walks from it.
func TestAppliedPaths(t *testing.T) {
	l, _ := layouts.New(layouts.AdjacencyName, layouts.Options{})
	_, a := New(l, mapStore{}, mapStore{})
	for _, n := range [][2]string{{"r", ""}, {"s", ""}, {"x", "r"}, {"y", "x"}, {"z", "y"}} {
		a.Put(n[0], n[1], transform.Attrs{}, 0, false)
	}
	if got := a.Path("z").IDs(); !slices.Equal(got, []string{"r", "x", "y", "z"}) {
		t.Fatalf("path of z: %q", got)
	}
	held := a.Path("y")
	a.NewRound()
	a.Put("x", "s", transform.Attrs{}, 0, true) // x moves under s; y is held
	a.NewRound()
	a.Pin("x", (*Path)(nil).Child("s").Child("x"))
	a.Pin("y", held)
	if got := a.Path("x").IDs(); !slices.Equal(got, []string{"s", "x"}) {
		t.Errorf("path of x: %q", got)
	}
	if got := a.Path("z").IDs(); !slices.Equal(got, []string{"r", "x", "y", "z"}) {
		t.Errorf("path of z below the held y: %q", got)
	}
	a.Delete("x")
	a.NewRound()
	if got := a.Path("z").IDs(); !slices.Equal(got, []string{"r", "x", "y", "z"}) {
		t.Errorf("path of z once x is gone: %q", got)
	}
	a.Put("y", "s", transform.Attrs{}, 0, false) // y written again: no pin
	a.NewRound()
	if got := a.Path("z").IDs(); !slices.Equal(got, []string{"s", "y", "z"}) {
		t.Errorf("path of z after y's write: %q", got)
	}
	if a.Len() != 4 || a.Err() != nil {
		t.Errorf("%d nodes, err %v", a.Len(), a.Err())
	}
}

// TestMirrorNodesImplicit: the nodes of a copy are the claimed ones and,
// in a layout with path ids and implicit inner nodes, the ancestors their
// ids name that have no item, each once, with whether it has children.
func TestMirrorNodesImplicit(t *testing.T) {
	l, err := layouts.New(layouts.PathName, layouts.Options{PathIDs: true, ImplicitInner: true})
	if err != nil {
		t.Fatal(err)
	}
	d := l.Delimiter()
	m, _ := New(l, mapStore{}, mapStore{})
	emit := func(path ...string) {
		ids := make([]string, len(path))
		for i := range path {
			ids[i] = strings.Join(path[:i+1], d)
		}
		n := transform.Node{Record: transform.Record{ID: ids[len(ids)-1], Attrs: transform.Attrs{"v": &types.AttributeValueMemberS{Value: "x"}}}, Depth: len(ids) - 1, Path: ids}
		if len(ids) > 1 {
			n.Parent = ids[len(ids)-2]
		}
		var items []layouts.Item
		if err := l.Items(&n, func(it layouts.Item) { items = append(items, it) }); err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			if _, err := m.Item(itemdigest.KeyOf(l.Table(), it), it, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	emit("a", "b", "c")
	emit("a", "b", "e")
	emit("z")
	got := map[string]string{}
	m.Nodes(func(c *Claim, inner bool) {
		if _, dup := got[c.ID]; dup {
			t.Errorf("node %q twice", c.ID)
		}
		got[c.ID] = fmt.Sprintf("%s %v", c.Parent, inner)
	})
	want := map[string]string{"a": " true", "a" + d + "b": "a true", "a" + d + "b" + d + "c": "a" + d + "b false", "a" + d + "b" + d + "e": "a" + d + "b false", "z": " false"}
	if !maps.Equal(got, want) {
		t.Errorf("nodes %q, want %q", got, want)
	}
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
}
