package layoutbench

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/gen"
	"github.com/treeport/treeport/internal/pricing"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

// readInput reads a CSV with its .types file, if there is one.
func readInput(t *testing.T, path string) *importer.Input {
	t.Helper()
	var src records.SourceOptions
	if types, err := os.ReadFile(strings.TrimSuffix(path, ".csv") + ".types"); err == nil {
		ty, err := records.ParseTypes(strings.TrimSpace(string(types)))
		if err != nil {
			t.Fatal(err)
		}
		src.Types = ty
	}
	in, err := importer.ReadInput(context.Background(), importer.InputOptions{Path: path, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Problems) > 0 {
		t.Fatalf("%s: %v", path, in.Problems[0])
	}
	return in
}

func readFixture(t *testing.T, name string) *importer.Input {
	return readInput(t, "../fixtures/"+name+".csv")
}

// readDataset reads a fixture by name, or a file by its path.
func readDataset(t *testing.T, name string) *importer.Input {
	if strings.ContainsRune(name, filepath.Separator) {
		return readInput(t, name)
	}
	return readFixture(t, name)
}

// genInput writes the tree of opts as JSON Lines, as treeport gen does,
// and returns the file's path.
func genInput(t *testing.T, opts gen.Options) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("gen-%s-%d.jsonl", opts.Shape, opts.Nodes))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	rw, err := records.NewWriter(bw, records.WriterOptions{Format: records.FormatFromPath(path), Columns: gen.Columns()})
	if err != nil {
		t.Fatal(err)
	}
	if err := gen.Generate(opts, rw.Write); err != nil {
		t.Fatal(err)
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	return path
}

func allLayouts(t *testing.T) []layouts.Layout {
	t.Helper()
	var ls []layouts.Layout
	for _, n := range layouts.Names() {
		l, err := layouts.New(n, layouts.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	return ls
}

func offline(t *testing.T, in *importer.Input, opts Options) *Report {
	t.Helper()
	if opts.Layouts == nil {
		opts.Layouts = allLayouts(t)
	}
	rep, err := Run(context.Background(), in, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func layoutOf(t *testing.T, rep *Report, name string) *Result {
	t.Helper()
	for _, r := range rep.Layouts {
		if r.Layout == name {
			return r
		}
	}
	t.Fatalf("no %s in the report", name)
	return nil
}

func storageOf(t *testing.T, r *Result, index string) Storage {
	t.Helper()
	for _, s := range r.Storage {
		if s.Index == index {
			return s
		}
	}
	t.Fatalf("%s: no storage for %q", r.Layout, index)
	return Storage{}
}

func skewOf(t *testing.T, r *Result, index string) PartitionSkew {
	t.Helper()
	for _, s := range r.Partitions {
		if s.Index == index {
			return s
		}
	}
	t.Fatalf("%s: no partitions for %q", r.Layout, index)
	return PartitionSkew{}
}

// TestSmallTreeByHand holds the figures of a four-node tree (A; B and D
// under A; C under B; no attributes) to sizes worked out by hand from
// DynamoDB's rules: a string counts its name and its bytes, a number its
// name and (significant digits + 1) / 2 + 1, "¦" is two bytes of UTF-8.
func TestSmallTreeByHand(t *testing.T) {
	rep := offline(t, readInput(t, "testdata/small.csv"), Options{})

	// path: A = Id 3 + TreeId 7 + Path 5 + Depth 5 + 1 = 21; B = 3 +
	// ParentId 9 + 7 + Path "A|B" 7 + Depth 5 + 2 = 33; C = 3 + 9 + 7 + 9 +
	// 7 = 35; D = 33.
	p := layoutOf(t, rep, "path")
	if p.Items != 4 || p.Bytes != 122 || p.MaxItemBytes != 35 {
		t.Errorf("path: %d items, %d bytes, largest %d; want 4, 122, 35", p.Items, p.Bytes, p.MaxItemBytes)
	}
	// One WCU each, times 1 + its indexes: A is in ByPath only (no
	// ParentId), the others in both.
	if p.Load.WCU != 2+3+3+3 {
		t.Errorf("path WCU %d, want 11", p.Load.WCU)
	}
	if s := storageOf(t, p, "ByParent"); s.Items != 3 || s.Bytes != 101 || s.BilledBytes != 101+300 {
		t.Errorf("path ByParent %+v, want 3 items, 101 bytes, 401 billed", s)
	}
	if s := storageOf(t, p, "ByPath"); s.Items != 4 || s.Bytes != 122 {
		t.Errorf("path ByPath %+v, want 4 items, 122 bytes", s)
	}
	if want := int64(122+400)*2 + 101 + 300; p.StoredBytes != want {
		t.Errorf("path stored %d, want %d", p.StoredBytes, want)
	}
	bp := skewOf(t, p, "ByParent")
	if bp.Partitions != 2 || bp.ByItems[0] != (PartitionValue{Value: "A", Items: 2, Bytes: 66, Share: 2.0 / 3}) ||
		bp.ByItems[1] != (PartitionValue{Value: "B", Items: 1, Bytes: 35, Share: 1.0 / 3}) {
		t.Errorf("path ByParent partitions %+v", bp)
	}
	if s := skewOf(t, p, "ByPath"); s.Partitions != 1 || s.ByItems[0].Value != "A" || s.ByItems[0].Items != 4 || s.ByItems[0].Bytes != 122 {
		t.Errorf("path ByPath partitions %+v", s)
	}
	// The table's key is unique: four partitions of one item, the largest
	// by bytes first, ties by value.
	if s := skewOf(t, p, ""); s.Partitions != 4 || s.ByBytes[0].Value != "C" || s.ByItems[0].Value != "C" || s.ByItems[1].Value != "B" {
		t.Errorf("path table partitions %+v", s)
	}

	// closure: rows (X, r): Id 3 + RelativeDepth 13 + size(r) (0: 1; 1, 2:
	// 2) + AncestorId 11 + ParentId 9 (not on A's row). A0 28; B0 37, B1 38;
	// C0 37, C1 38, C2 38; D0 37, D1 38.
	c := layoutOf(t, rep, "closure")
	if c.Items != 8 || c.Bytes != 291 {
		t.Errorf("closure: %d items, %d bytes; want 8, 291", c.Items, c.Bytes)
	}
	if s := skewOf(t, c, "ByAncestor"); s.ByItems[0] != (PartitionValue{Value: "A", Items: 4, Bytes: 28 + 38 + 38 + 38, Share: 0.5}) {
		t.Errorf("closure ByAncestor hottest %+v", s.ByItems[0])
	}
	if s := skewOf(t, c, ""); s.ByItems[0].Value != "C" || s.ByItems[0].Items != 3 {
		t.Errorf("closure table hottest %+v, want C with 3 rows", s.ByItems[0])
	}

	// prefix: object rows Key 3 + "¦A"… + Child 5 + 2; listing rows Key 3 +
	// "¦A¦"… + Child 5 + 1: A 13 + 11, B 16 + 14, C 19 + 17, D 16 + 14.
	x := layoutOf(t, rep, "prefix")
	if x.Items != 8 || x.Bytes != 120 || x.Load.WCU != 8 {
		t.Errorf("prefix: %d items, %d bytes, %d WCU; want 8, 120, 8", x.Items, x.Bytes, x.Load.WCU)
	}
	if s := skewOf(t, x, ""); s.ByItems[0] != (PartitionValue{Value: "¦A¦", Items: 2, Bytes: 28, Share: 0.25}) {
		t.Errorf("prefix hottest %+v, want ¦A¦ with B's and D's listing rows", s.ByItems[0])
	}
}

// TestRewritesByHand: deleting B (C moves up to A) and moving C under D,
// counted by hand for each layout.
func TestRewritesByHand(t *testing.T) {
	in := readInput(t, "testdata/small.csv")
	f := in.Forest
	id := func(s string) int32 { return int32(f.Lookup(s)) }
	for _, tc := range []struct {
		layout             string
		delPuts, delDels   int64
		movePuts, moveDels int64
	}{
		// path: B goes; C gets a new Path, Depth and ParentId. Move: C's Path.
		{"path", 1, 1, 1, 0},
		{"sharded-path", 1, 1, 1, 0},
		// closure: B0 and B1 go; C0 (ParentId) and C1 (AncestorId A) change,
		// C2 goes. Move: C0 (ParentId), C1 (AncestorId D) and C2 (ParentId).
		{"closure", 2, 3, 3, 0},
		// prefix: B's two rows go; C's two rows get new keys. Move: the same
		// for C.
		{"prefix", 2, 4, 2, 2},
		// adjacency: B goes; C's ParentId changes. Move: C's ParentId.
		{"adjacency", 1, 1, 1, 0},
	} {
		t.Run(tc.layout, func(t *testing.T) {
			l, _ := layouts.New(tc.layout, layouts.Options{})
			d, err := deleteChange(context.Background(), l, f, id("B"))
			if err != nil {
				t.Fatal(err)
			}
			if d.puts != tc.delPuts || d.deletes != tc.delDels {
				t.Errorf("delete B: %d puts, %d deletes; want %d, %d", d.puts, d.deletes, tc.delPuts, tc.delDels)
			}
			byDepth := [][]int32{{id("A")}, {id("B"), id("D")}, {id("C")}}
			target := moveTarget(f, byDepth, id("C"), 1)
			if target != id("D") {
				t.Fatalf("C moves under %q, want D (the other node at B's depth)", f.ID(int(target)))
			}
			m, err := moveChange(context.Background(), l, f, id("C"), target)
			if err != nil {
				t.Fatal(err)
			}
			if m.puts != tc.movePuts || m.deletes != tc.moveDels {
				t.Errorf("move C under D: %d puts, %d deletes; want %d, %d", m.puts, m.deletes, tc.movePuts, tc.moveDels)
			}
		})
	}
	// A root has nowhere to go.
	if got := moveTarget(f, nil, id("A"), 1); got != -1 {
		t.Errorf("root A moves under %d", got)
	}
}

// TestRewriteClasses holds the shortcut for large subtrees (one node per
// relative depth, counted for all) to diffing every node, on random trees,
// for every layout, every node moved and deleted.
func TestRewriteClasses(t *testing.T) {
	for _, shape := range []string{gen.ShapeRandom, gen.ShapeForest, gen.ShapeBalanced} {
		b := transform.NewBuilder(0, false)
		err := gen.Generate(gen.Options{Nodes: 300, Shape: shape, Seed: 7}, func(r *transform.Record) error {
			b.Add(r, "line", 0, 0)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		f, problems := b.Build()
		if len(problems) > 0 {
			t.Fatal(problems[0])
		}
		byDepth := [][]int32{}
		for _, i := range f.Order() {
			d := f.Depth(int(i))
			for len(byDepth) <= d {
				byDepth = append(byDepth, nil)
			}
			byDepth[d] = append(byDepth[d], i)
		}
		for _, l := range allLayouts(t) {
			var brute, classes []change
			count := func(out *[]change) {
				for _, i := range f.Order() {
					if t := moveTarget(f, byDepth, i, 3); t >= 0 {
						c, err := moveChange(context.Background(), l, f, i, t)
						if err != nil {
							panic(err)
						}
						*out = append(*out, c)
					}
					c, err := deleteChange(context.Background(), l, f, i)
					if err != nil {
						panic(err)
					}
					*out = append(*out, c)
				}
			}
			count(&brute)
			saved := bruteForceNodes
			bruteForceNodes = 0
			count(&classes)
			bruteForceNodes = saved
			if !slices.Equal(brute, classes) {
				t.Errorf("%s, %s: counting by relative depth differs from diffing every node", shape, l.Name())
			}
		}
	}
}

// TestItemCountsFollowFormulas: on every fixture, path, sharded-path and
// adjacency have one item per node, closure Σ(depth + 1), prefix two per node; the
// indexes hold the items with their keys; the bytes and WCU agree with the
// layouts' own measure (the dry run's).
func TestItemCountsFollowFormulas(t *testing.T) {
	for _, name := range []string{"cars", "folders", "org"} {
		t.Run(name, func(t *testing.T) {
			in := readFixture(t, name)
			f := in.Forest
			var nodes, rows, roots int64
			for _, i := range f.Order() {
				nodes++
				rows += int64(f.Depth(int(i)) + 1)
				if f.Parent(int(i)) < 0 {
					roots++
				}
			}
			rep := offline(t, in, Options{})
			want := map[string]int64{"path": nodes, "sharded-path": nodes, "closure": rows, "prefix": 2 * nodes, "adjacency": nodes}
			for _, r := range rep.Layouts {
				if r.Items != want[r.Layout] || r.Nodes != nodes {
					t.Errorf("%s: %d items for %d nodes, want %d", r.Layout, r.Items, r.Nodes, want[r.Layout])
				}
				l, _ := layouts.New(r.Layout, layouts.Options{})
				plan, _ := mustPlan(t, in, l)
				if r.Bytes != plan.Bytes || r.Load.WCU != plan.WCU {
					t.Errorf("%s: %d bytes, %d WCU; the layout's measure says %d, %d", r.Layout, r.Bytes, r.Load.WCU, plan.Bytes, plan.WCU)
				}
			}
			for _, name := range []string{"path", "adjacency"} {
				if s := storageOf(t, layoutOf(t, rep, name), "ByParent"); s.Items != nodes-roots {
					t.Errorf("%s: ByParent holds %d items, want the %d non-roots", name, s.Items, nodes-roots)
				}
			}
			if s := storageOf(t, layoutOf(t, rep, "closure"), "ByAncestor"); s.Items != rows {
				t.Errorf("ByAncestor holds %d items, want every row (%d)", s.Items, rows)
			}
			// The hottest ByAncestor partition is a root's: every node of its
			// tree names it.
			top := skewOf(t, layoutOf(t, rep, "closure"), "ByAncestor").ByItems[0]
			if i := f.Lookup(top.Value); i < 0 || f.Parent(i) >= 0 {
				t.Errorf("hottest ByAncestor partition %q is not a root", top.Value)
			} else if top.Items != int64(treeSize(f, i)) {
				t.Errorf("hottest ByAncestor partition %q holds %d rows, its tree has %d nodes", top.Value, top.Items, treeSize(f, i))
			}
			if len(rep.Ranking) != len(layouts.Names()) || rep.Ranking[0].Layout != rep.Layouts[indexOfRank(rep, 1)].Layout {
				t.Errorf("ranking %+v", rep.Ranking)
			}
		})
	}
}

func treeSize(f *transform.Forest, i int) int {
	var s transform.Stats
	f.Stats(i, &s)
	return s.Subtree
}

func indexOfRank(rep *Report, rank int) int {
	for i, r := range rep.Layouts {
		if r.Rank == rank {
			return i
		}
	}
	return -1
}

// TestSample: the sample is a function of the seed, covers every depth,
// and its weights add up to the population.
func TestSample(t *testing.T) {
	in := readFixture(t, "folders")
	f := in.Forest
	all := func(int32) bool { return true }
	a, strata := drawSample(f, all, 10, 1)
	b, _ := drawSample(f, all, 10, 1)
	c, _ := drawSample(f, all, 10, 2)
	if !slices.Equal(a, b) {
		t.Error("the same seed gave two samples")
	}
	if slices.Equal(a, c) {
		t.Error("seeds 1 and 2 gave the same sample")
	}
	if len(a) != 10 {
		t.Fatalf("%d nodes sampled, want 10", len(a))
	}
	maxDepth := 0
	for _, i := range f.Order() {
		maxDepth = max(maxDepth, f.Depth(int(i)))
	}
	var total float64
	var pop int64
	covered := map[int]bool{}
	for _, x := range a {
		total += x.weight
	}
	for _, s := range strata {
		pop += s.Population
		if s.Sampled == 0 {
			t.Errorf("stratum %+v has no node", s)
		}
		for d := s.MinDepth; d <= s.MaxDepth; d++ {
			covered[d] = true
		}
	}
	if int64(total+0.5) != int64(f.Len()) || pop != int64(f.Len()) {
		t.Errorf("weights add up to %v, strata to %d, want %d", total, pop, f.Len())
	}
	if len(covered) != maxDepth+1 {
		t.Errorf("strata cover %d depths, want 0..%d", len(covered), maxDepth)
	}
	// A sample as large as the input takes every node once.
	whole, _ := drawSample(f, all, 1000, 1)
	if len(whole) != f.Len() {
		t.Errorf("sample of 1000 from %d nodes has %d", f.Len(), len(whole))
	}
}

func TestParseMix(t *testing.T) {
	mix, err := ParseMix(DefaultMix)
	if err != nil {
		t.Fatal(err)
	}
	want := []MixEntry{{KindGet, 0.1}, {KindChildren, 0.4}, {KindDescendants, 0.3}, {KindAncestors, 0.2}}
	if !slices.Equal(mix, want) {
		t.Errorf("%v, want %v", mix, want)
	}
	if mix, err := ParseMix("depth2=1"); err != nil || len(mix) != 1 || mix[0] != (MixEntry{KindDepth2, 1}) {
		t.Errorf("depth2=1: %v, %v", mix, err)
	}
	for _, bad := range []string{"", "get=0", "get", "scan=1", "get=-1", "get=x", "get=1,get=2"} {
		if _, err := ParseMix(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestCostsUseThePriceList: the projection is linear in --scale and the
// read cost follows the mix.
func TestCostsUseThePriceList(t *testing.T) {
	in := readFixture(t, "org")
	one := offline(t, in, Options{})
	const k = 100000
	ten := offline(t, in, Options{Scale: k * one.Input.Nodes, Mix: []MixEntry{{KindGet, 1}}})
	for i := range one.Layouts {
		a, b := one.Layouts[i], ten.Layouts[i]
		if got, want := b.Cost.LoadOnDemandUSD, money(pricing.Default.OnDemandWrites(k*a.Load.WCU)); got != want {
			t.Errorf("%s: load at ×%d %v, want %v", a.Layout, k, got, want)
		}
		storage := 0.0
		for _, s := range a.Storage {
			storage += pricing.Default.StorageMonth(k*s.Bytes, k*s.Items)
		}
		if got := b.Cost.StorageMonthUSD; got != money(storage) || got == 0 {
			t.Errorf("%s: storage at ×%d %v, want %v", a.Layout, k, got, money(storage))
		}
		// get only: every layout reads one small item, half an RCU.
		if b.Cost.ReadRCUPerOp != 0.5 || b.Cost.MillionReadsUSD != money(pricing.Default.OnDemandReads(0.5e6)) {
			t.Errorf("%s: a get-only mix costs %v RCU, $%v a million", a.Layout, b.Cost.ReadRCUPerOp, b.Cost.MillionReadsUSD)
		}
	}
	if one.Prices.AsOf == "" || !strings.Contains(strings.Join(one.Notes, " "), one.Prices.AsOf) {
		t.Error("the report does not give the prices' date")
	}
}

// The dry run and bench give one figure for storage: the table's items and
// their copies in every index, with DynamoDB's overhead an item in each, to
// the byte and so to the cent, on every fixture and layout.
func TestDryRunStorageIsBenchStorage(t *testing.T) {
	for _, name := range []string{"cars", "folders", "org"} {
		in := readFixture(t, name)
		rep := offline(t, in, Options{})
		for _, r := range rep.Layouts {
			l, err := layouts.New(r.Layout, layouts.Options{})
			if err != nil {
				t.Fatal(err)
			}
			plan, problems := mustPlan(t, in, l)
			if len(problems) > 0 {
				t.Fatalf("%s %s: %v", name, r.Layout, problems[0])
			}
			var items, bytes int64
			for _, s := range r.Storage {
				items += s.Items
				bytes += s.Bytes
			}
			if plan.StoredItems != items || plan.StoredBytes != bytes {
				t.Errorf("%s %s: dry run stores %d items, %d bytes; bench %d items, %d bytes (%+v)",
					name, r.Layout, plan.StoredItems, plan.StoredBytes, items, bytes, r.Storage)
			}
			if len(r.Storage) != 1+len(l.Table().Indexes) {
				t.Errorf("%s %s: bench reports %d storages, want the table and %d indexes", name, r.Layout, len(r.Storage), len(l.Table().Indexes))
			}
			if math.Abs(plan.Cost.StorageMonth-r.Cost.StorageMonthUSD) > 1e-6 {
				t.Errorf("%s %s: dry run's storage $%v a month, bench's $%v", name, r.Layout, plan.Cost.StorageMonth, r.Cost.StorageMonthUSD)
			}
		}
	}
}

// mustPlan is importer.PlanLayout at list prices, failing the test only
// when it cannot finish (its context never ends here).
func mustPlan(t *testing.T, in *importer.Input, l layouts.Layout) (*importer.Plan, []*transform.RowError) {
	t.Helper()
	p, problems, err := importer.PlanLayout(context.Background(), in, l, pricing.Default, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p, problems
}
