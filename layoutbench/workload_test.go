package layoutbench

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
)

// TestItemWCU holds the write units of one item's change to DynamoDB's
// rules: ceil(size / 1 KB) for the table, of the larger of the two sizes,
// and for each index the item is put in or deleted from; an index whose key
// changes takes two writes, a delete and a put.
func TestItemWCU(t *testing.T) {
	spec := layouts.TableSpec{PK: layouts.KeyAttr{Name: "Id"}, Indexes: []layouts.IndexSpec{
		{Name: "ByParent", PK: layouts.KeyAttr{Name: "ParentId"}, SK: &layouts.KeyAttr{Name: "Id"}},
	}}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	item := func(parent, pad string) layouts.Item {
		it := layouts.Item{"Id": s("X"), "pad": s(pad)}
		if parent != "" {
			it["ParentId"] = s(parent)
		}
		return it
	}
	big := strings.Repeat("x", 1500) // about 1.5 KB: 2 units
	for _, tc := range []struct {
		name     string
		old, new layouts.Item
		want     int64
	}{
		{"a new item in the index", nil, item("P", "a"), 1 + 1},
		{"a new item in no index", nil, item("", "a"), 1},
		{"a delete", item("P", "a"), nil, 1 + 1},
		{"an update, the index key kept", item("P", "a"), item("P", "b"), 1 + 1},
		{"the index key changes: a delete and a put", item("P", "a"), item("Q", "a"), 1 + 2},
		{"into the index", item("", "a"), item("Q", "a"), 1 + 1},
		{"out of the index", item("P", "a"), item("", "a"), 1 + 1},
		{"the larger size counts", item("P", "a"), item("P", big), 2 + 2},
		{"a large item moving index key", item("P", big), item("Q", "a"), 2 + 2 + 1},
	} {
		if got := itemWCU(spec, tc.old, tc.new); got != tc.want {
			t.Errorf("%s: %d WCU, want %d", tc.name, got, tc.want)
		}
	}
}

// TestWorkloadRanks: the ranking follows the whole workload. With reads
// alone the layout with the cheapest reads wins; with many moves a month,
// adjacency (a move rewrites one item) wins; every part adds up to the
// total; the break-even volume is where the two totals meet; the worst
// delete is one edit accepts.
func TestWorkloadRanks(t *testing.T) {
	reads := offline(t, readFixture(t, "org"), Options{Workload: Workload{ReadsPerMonth: 1e9, Months: 12}})
	moves := offline(t, readFixture(t, "org"), Options{Workload: Workload{ReadsPerMonth: 1, MovesPerMonth: 1e9, Months: 12}})
	cheapestReads := reads.Layouts[0]
	for _, r := range reads.Layouts {
		if r.Cost.ReadRCUPerOp < cheapestReads.Cost.ReadRCUPerOp {
			cheapestReads = r
		}
	}
	if reads.Ranking[0].Layout != cheapestReads.Layout {
		t.Errorf("a billion reads a month: %s ranks first, but %s reads cheapest (%v RCU)", reads.Ranking[0].Layout, cheapestReads.Layout, cheapestReads.Cost.ReadRCUPerOp)
	}
	if moves.Ranking[0].Layout != "adjacency" {
		t.Errorf("a billion moves a month: %s ranks first, want adjacency: %v", moves.Ranking[0].Layout, moves.Ranking)
	}
	for _, rep := range []*Report{reads, moves} {
		for _, r := range rep.Layouts {
			c := r.Cost
			if sum := c.LoadUSD + c.StorageUSD + c.ReadsUSD + c.WritesUSD + c.MovesUSD + c.DeletesUSD; math.Abs(sum-c.TotalUSD) > 1e-5 {
				t.Errorf("%s: the parts add up to %v, the total is %v", r.Layout, sum, c.TotalUSD)
			}
			if c.LoadUSD != min(c.LoadOnDemandUSD, c.LoadImportUSD) {
				t.Errorf("%s: load %v, want the cheaper of %v and %v", r.Layout, c.LoadUSD, c.LoadOnDemandUSD, c.LoadImportUSD)
			}
			if r.Rewrites.Move.MeanWCU < r.Rewrites.Move.MeanItems {
				t.Errorf("%s: a move writes %v items for %v WCU: each item is at least one unit", r.Layout, r.Rewrites.Move.MeanItems, r.Rewrites.Move.MeanWCU)
			}
			// org's root E001 has children: edit refuses to delete it.
			if r.Rewrites.Delete.WorstNode == "E001" {
				t.Errorf("%s: the worst delete is of the root with children, which edit refuses", r.Layout)
			}
		}
		if rep.Margin < 1 {
			t.Errorf("margin %v below 1", rep.Margin)
		}
	}
	// Path's ByParent index key (ParentId) changes for the moved node:
	// two index writes more than its items alone.
	p := layoutOf(t, moves, "path")
	if p.Rewrites.Move.MeanWCU <= p.Rewrites.Move.MeanItems*2 {
		t.Errorf("path: a move of %v items costs %v WCU; each item also rewrites ByPath, and the moved node's ByParent twice", p.Rewrites.Move.MeanItems, p.Rewrites.Move.MeanWCU)
	}
	for _, b := range reads.BreakEvens {
		x, y := layoutOf(t, reads, b.CheaperReads), layoutOf(t, reads, b.CheaperRest)
		at := func(r *Result, v float64) float64 {
			return r.Cost.TotalUSD - r.Cost.ReadsUSD + reads.Prices.OnDemandReadPerMillion/1e6*v*reads.Workload.Months*r.Cost.ReadRCUPerOp
		}
		v := b.ReadsPerMonth
		if d := at(x, v) - at(y, v); math.Abs(d) > 1e-3*at(x, v)+1e-6 {
			t.Errorf("break-even %+v: %s costs %v, %s %v there", b, x.Layout, at(x, v), y.Layout, at(y, v))
		}
		if at(x, 2*v) >= at(y, 2*v) {
			t.Errorf("break-even %+v: above it %s should cost less", b, x.Layout)
		}
	}
}

// TestScaleGrowsQueries: --scale grows the trees, so descendants read more
// a query and a move rewrites more; get and ancestors stay as they are.
func TestScaleGrowsQueries(t *testing.T) {
	own := offline(t, readFixture(t, "folders"), Options{Mix: []MixEntry{{Kind: KindDescendants, Share: 1}}})
	big := offline(t, readFixture(t, "folders"), Options{Mix: []MixEntry{{Kind: KindDescendants, Share: 1}}, Scale: 10_000_000})
	get := offline(t, readFixture(t, "folders"), Options{Mix: []MixEntry{{Kind: KindGet, Share: 1}}, Scale: 10_000_000})
	for i, r := range big.Layouts {
		o := own.Layouts[i]
		if r.Cost.ReadRCUPerOp < 100*o.Cost.ReadRCUPerOp {
			t.Errorf("%s: a descendants query costs %v RCU at 10^7 nodes, %v at 53: it must grow with the tree", r.Layout, r.Cost.ReadRCUPerOp, o.Cost.ReadRCUPerOp)
		}
		if r.Layout != "adjacency" && r.Cost.MoveWCU < 100*o.Cost.MoveWCU {
			t.Errorf("%s: a move costs %v WCU at 10^7 nodes, %v at 53", r.Layout, r.Cost.MoveWCU, o.Cost.MoveWCU)
		}
		if g := get.Layouts[i]; g.Cost.ReadRCUPerOp != o.query(KindGet).RCU.Mean {
			t.Errorf("%s: get costs %v at scale, %v here", r.Layout, g.Cost.ReadRCUPerOp, o.query(KindGet).RCU.Mean)
		}
	}
	// The growth gives the scale's node count, the depth kept.
	levels := []int64{2, 10, 40}
	g := growthTo(levels, 5200)
	if n := 2 + 10*g.w + 40*g.w*g.w; math.Abs(n-5200) > 1e-6*5200 {
		t.Errorf("growth %v gives %v nodes, want 5200", g.w, n)
	}
	if len(big.Curves.ByScale) != len(ScaleNodes) || len(big.Curves.ByReads) == 0 {
		t.Errorf("curves %+v", big.Curves)
	}
}

// TestWorkloadFile reads a --workload file; fields left out keep the
// defaults, and a bad one says which.
func TestWorkloadFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "w.json")
	os.WriteFile(good, []byte(`{"reads_per_month": 5e6, "moves_per_month": 300, "read_mix": "children=1"}`), 0o644)
	wf, err := ReadWorkload(good, DefaultWorkload)
	if err != nil || wf.ReadsPerMonth != 5e6 || wf.MovesPerMonth != 300 || wf.Months != DefaultWorkload.Months || wf.ReadMix != "children=1" {
		t.Errorf("%+v, %v", wf, err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"months": -1}`), 0o644)
	if _, err := ReadWorkload(bad, DefaultWorkload); err == nil || !strings.Contains(err.Error(), "months") {
		t.Errorf("err %v, want one about months", err)
	}
}

// TestTiesGoToTheFasterLoad: two layouts whose totals tie are ordered by the
// least time their load by writes takes on DynamoDB, and a load that one
// partition key value holds to minutes says so in its line.
func TestTiesGoToTheFasterLoad(t *testing.T) {
	slow := &Result{Layout: "aaa", Cost: Cost{TotalUSD: 1.000, LoadMethod: "on-demand writes"},
		Load: Load{MinSeconds: 1020, BoundBy: "partition"}}
	fast := &Result{Layout: "bbb", Cost: Cost{TotalUSD: 1.003, LoadMethod: "on-demand writes"},
		Load: Load{MinSeconds: 4, BoundBy: "warm_throughput"}}
	dear := &Result{Layout: "ccc", Cost: Cost{TotalUSD: 2, LoadMethod: "on-demand writes"}}
	rep := &Report{Layouts: []*Result{slow, fast, dear}}
	got := rank(rep)
	if got[0].Layout != "bbb" || got[1].Layout != "aaa" || got[0].Rank != 1 || got[1].Rank != 1 || got[2].Layout != "ccc" || got[2].Rank != 3 {
		t.Fatalf("ranking %+v: want bbb then aaa tied at 1, ccc third", got)
	}
	if !strings.Contains(slow.Why, "at least 17 min") {
		t.Errorf("the slow load's line does not give its time: %s", slow.Why)
	}
	if strings.Contains(fast.Why, "slow to load") {
		t.Errorf("the fast load's line calls it slow: %s", fast.Why)
	}
	// Loaded by ImportTable, the partition does not hold the load back.
	slow.Cost.LoadMethod = "ImportTable"
	if got := rank(rep); got[0].Layout != "aaa" {
		t.Errorf("with ImportTable the cheaper of the tie goes first: %+v", got)
	}
}
