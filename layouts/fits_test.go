package layouts_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/layouts/layoutstest"
	"github.com/treeport/treeport/transform"
)

// TestFitsImpliesCheck: whenever Fits says a node fits, Check finds no
// problem, on random Stats around every limit, for every layout variant,
// with attribute names renamed to DynamoDB's longest; and Fits says so for
// the ordinary nodes of random forests.
func TestFitsImpliesCheck(t *testing.T) {
	long := func(c string) string { return strings.Repeat(c, 255) }
	all := append([]variant{}, variants...)
	all = append(all,
		variant{"path/long-names", layouts.PathName, layouts.Options{Attr: map[string]string{"Id": long("i"), "ParentId": long("p"), "TreeId": long("t"), "Path": long("a"), "Depth": long("d")}}},
		variant{"sharded-path/long-names", layouts.ShardedName, layouts.Options{Shards: 1 << 30, Attr: map[string]string{"Id": long("i"), "ParentId": long("p"), "GraphId": long("g"), "Path": long("a"), "Depth": long("d")}}},
		variant{"closure/long-names", layouts.ClosureName, layouts.Options{Attr: map[string]string{"Id": long("i"), "ParentId": long("p"), "AncestorId": long("a"), "RelativeDepth": long("r")}}},
		variant{"closure/copy-long-names", layouts.ClosureName, layouts.Options{ClosureCopy: []string{"x"}, Attr: map[string]string{"Id": long("i"), "ParentId": long("p"), "AncestorId": long("a"), "RelativeDepth": long("r")}}},
		variant{"prefix/long-names", layouts.PrefixName, layouts.Options{Attr: map[string]string{"Key": long("k"), "Child": long("c")}}},
		variant{"prefix/4-byte-delimiter", layouts.PrefixName, layouts.Options{Delimiter: "😀"}},
		variant{"adjacency/long-names", layouts.AdjacencyName, layouts.Options{Attr: map[string]string{"Id": long("i"), "ParentId": long("p")}}},
	)
	rng := rand.New(rand.NewPCG(9, 9))
	near := func(limit int) int {
		switch rng.IntN(4) {
		case 0:
			return rng.IntN(limit + 1)
		case 1:
			return max(1, limit-rng.IntN(40))
		case 2:
			return limit + rng.IntN(40) - 20
		}
		return 1 + rng.IntN(30)
	}
	for _, v := range all {
		l := v.new(t)
		c := layouts.NewChecker(l)
		fits := 0
		for range 20000 {
			depth := rng.IntN(3)
			if rng.IntN(4) == 0 {
				depth = rng.IntN(2000)
			}
			id := strings.Repeat("x", max(1, near([]int{1024, 2048, 32}[rng.IntN(3)])))
			if rng.IntN(50) == 0 && l.Delimiter() != "" {
				id = "a" + l.Delimiter() + "b"
			}
			s := transform.Stats{ID: id, Depth: depth, RootID: id, Roots: 1, TreeSize: 1, Subtree: 1}
			if depth > 0 {
				s.ParentID = strings.Repeat("p", max(1, near([]int{1024, 2048}[rng.IntN(2)])))
				s.RootID = strings.Repeat("r", max(1, near(2048)))
				s.MaxAncestorIDBytes = max(len(s.ParentID), len(s.RootID), near(2048))
				s.PathBytes = len(id) + len(s.ParentID) + len(s.RootID) + (depth-2)*rng.IntN(3)
				if depth == 1 {
					s.RootID = s.ParentID
					s.PathBytes = len(id) + len(s.ParentID)
				}
				s.TreeSize = depth + 1
			} else {
				s.PathBytes = len(id)
			}
			s.AttrBytes = near(transform.MaxItemBytes)
			s.CopyBytes = rng.IntN(s.AttrBytes + 1)
			if c.Fits(&s) {
				fits++
				if err := c.Check(&s); err != nil {
					t.Fatalf("%s: Fits says yes, Check says %v, for %+v", v.name, err, s)
				}
			}
		}
		if fits < 1000 {
			t.Errorf("%s: Fits said yes to %d of 20000 nodes only", v.name, fits)
		}
		f := layoutstest.RandomForest(rand.New(rand.NewPCG(1, 1)), 60, false)
		for i := range f.Nodes {
			s := f.StatsFor(l, i)
			if d := l.Delimiter(); d != "" && strings.Contains(s.ID, d) {
				continue // which Check refuses
			}
			if !c.Fits(s) {
				t.Errorf("%s: Fits says no to an ordinary node %+v", v.name, *s)
			}
		}
	}
}

// TestFitsAllImpliesFits: when FitsAll says a forest's bounds fit, Fits
// says yes to each of its nodes, and Check finds nothing; on random
// forests of long ids, deep paths, big attributes and ids holding a
// delimiter, for every layout variant. And it says yes to ordinary forests.
func TestFitsAllImpliesFits(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	all := append([]variant{}, variants...)
	all = append(all, variant{"prefix/4-byte-delimiter", layouts.PrefixName, layouts.Options{Delimiter: "😀"}})
	yes, no := map[string]int{}, map[string]int{}
	for seed := range 300 {
		b := transform.NewBuilder(0, true)
		n := 1 + rng.IntN(30)
		big := seed%3 == 0
		for i := range n {
			id := fmt.Sprintf("n%d", i)
			if big && rng.IntN(10) == 0 {
				id += strings.Repeat("x", rng.IntN(2100))
			}
			if big && rng.IntN(20) == 0 {
				id += []string{"#", "/", "😀", "|"}[rng.IntN(4)]
			}
			parent := ""
			if i > 0 {
				parent = fmt.Sprintf("n%d", rng.IntN(i))
			}
			attr := 10 + rng.IntN(100)
			if big && rng.IntN(10) == 0 {
				attr = transform.MaxItemBytes - rng.IntN(20000)
			}
			b.Add(&transform.Record{ID: id, Parent: parent, File: "in.csv", Line: i + 2}, "", attr, rng.IntN(attr+1))
		}
		f, _ := b.Build()
		for _, v := range all {
			l := v.new(t)
			c := layouts.NewChecker(l)
			if !c.FitsAll(f.Bounds()) {
				no[v.name]++
				continue
			}
			yes[v.name]++
			var s transform.Stats
			for i := range f.Len() {
				f.Stats(i, &s)
				if !c.Fits(&s) {
					t.Fatalf("%s seed %d: FitsAll says yes, Fits says no to %+v", v.name, seed, s)
				}
				if err := c.Check(&s); err != nil {
					t.Fatalf("%s seed %d: FitsAll says yes, Check says %v", v.name, seed, err)
				}
			}
		}
	}
	for _, v := range all {
		if yes[v.name] < 150 || no[v.name] < 20 {
			t.Errorf("%s: FitsAll said yes %d times and no %d times in 300 forests", v.name, yes[v.name], no[v.name])
		}
	}
}
