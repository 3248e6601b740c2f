package layouts_test

import (
	"errors"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/layouts/layoutstest"
)

// FuzzPathIDsNode feeds arbitrary items to Node of every layout with path
// ids (and with implicit inner nodes where the layout takes them): no
// panic, the item unchanged, an error that wraps ErrItem, and a record it
// reads always a path id of its parent (CheckPathID), which NodeOf and
// Owner agree with.
func FuzzPathIDsNode(f *testing.F) {
	var ls []layouts.Layout
	for _, v := range pathIDVariants {
		l, err := layouts.New(v.layout, v.opts)
		if err != nil {
			f.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		forest := layoutstest.PathIDForest(rng, layoutstest.SmallForest(), l.Delimiter(), v.opts.ImplicitInner)
		for _, n := range forest.Nodes {
			if err := l.Items(n, func(it layouts.Item) { f.Add(byte(len(ls)), itemToBytes(it)) }); err != nil {
				f.Fatal(err)
			}
		}
		ls = append(ls, l)
	}
	f.Fuzz(func(t *testing.T, variant byte, data []byte) {
		l := ls[int(variant)%len(ls)]
		item := itemFromBytes(data)
		before, shallow := canonicalItem(item), maps.Clone(item)
		rec, ok, err := l.Node(item)
		if after := canonicalItem(item); after != before || !maps.Equal(item, shallow) {
			t.Fatalf("Node changed the item:\n %s\nto %s", before, after)
		}
		view := layouts.MapView(item)
		isNode, owner := l.IsNode(view), l.Owner(view)
		nid, nparent, nok := l.NodeOf(view)
		if err != nil {
			if ok || !errors.Is(err, layouts.ErrItem) {
				t.Fatalf("Node = %v, %v: an error must wrap ErrItem and come with false", ok, err)
			}
			return
		}
		if !ok {
			return
		}
		if perr := layouts.CheckPathID(rec.ID, rec.Parent, l.Delimiter()); perr != nil || rec.ID == "" {
			t.Fatalf("Node read %q (parent %q), not a path id: %v: %s", rec.ID, rec.Parent, perr, before)
		}
		if !isNode || !nok || nid != rec.ID || nparent != rec.Parent || owner != rec.ID {
			t.Fatalf("Node = %q, %q; IsNode %v, NodeOf %q, %q, %v, Owner %q: %s", rec.ID, rec.Parent, isNode, nid, nparent, nok, owner, before)
		}
	})
}
