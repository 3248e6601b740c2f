package importer

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/treeport/treeport/layouts"
)

// The hottest partition key value of the table and of each index is named
// with its items, from the forest's skeleton: a wide root R (1,500
// children, one of which, C1, has 300 more) and a small tree S.
func TestPlanHotKeys(t *testing.T) {
	var b strings.Builder
	b.WriteString("id,parent_id\nR,\nS,\nS1,S\nS2,S1\n")
	for i := range 1500 {
		fmt.Fprintf(&b, "C%d,R\n", i)
	}
	for i := range 300 {
		fmt.Fprintf(&b, "G%d,C1\n", i)
	}
	in, err := ReadInput(context.Background(), InputOptions{Path: writeTemp(t, "wide.csv", []byte(b.String()))})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		layout string
		shards int
		want   []string // index/attr=value:items, the table first
	}{
		{"path", 0, []string{"/Id=R:1", "ByParent/ParentId=R:1500", "ByPath/TreeId=R:1801"}},
		{"sharded-path", 4, []string{"/Id=R:1", "ByParent/ParentId=R:1500", "ByPath/GraphId=R#1…R#4:451"}},
		{"closure", 0, []string{"/Id=G0:3", "ByAncestor/AncestorId=R:1801"}},
		{"prefix", 0, []string{"/Key=…¦R¦:1500"}},
		{"adjacency", 0, []string{"/Id=R:1", "ByParent/ParentId=R:1500"}},
	}
	for _, tc := range tests {
		t.Run(tc.layout, func(t *testing.T) {
			l, err := layouts.New(tc.layout, layouts.Options{Shards: tc.shards})
			if err != nil {
				t.Fatal(err)
			}
			p, problems := mustPlan(t, in, l)
			if len(problems) > 0 {
				t.Fatal(problems[0])
			}
			var got []string
			for _, h := range p.LoadTime.HotKeys {
				got = append(got, fmt.Sprintf("%s/%s=%s:%d", h.Index, h.Attr, h.Value, h.Items))
				// Every item is under 1 KB: one write unit a write.
				if h.WCU != h.Items || h.Seconds != float64(h.Items)/1000 {
					t.Errorf("%s: %d WCU, %g s for %d items", h.Where(), h.WCU, h.Seconds, h.Items)
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("hot keys\n%s\nwant\n%s", strings.Join(got, " "), strings.Join(tc.want, " "))
			}
		})
	}

	// path: ByPath's R takes 1.8 s alone, more than the whole load at the
	// default warm throughput; the line says so and how to spread it.
	l, _ := layouts.New("path", layouts.Options{})
	p, _ := mustPlan(t, in, l)
	lt := p.LoadTime
	if lt.BoundBy != "partition" || lt.MinSeconds != 1.801 ||
		lt.Advice != "ByPath's TreeId R takes 1,801 writes (1,801 WCU at 1,000 WCU/s a partition): at least 2 s; sharded-path with --shards 2 spreads it; --import-table (DynamoDB's import from S3) is not held to it" {
		t.Errorf("path: %+v", lt)
	}
	// Capped at 100 WCU/s, the cap bounds it and no hot key does.
	p.Project(l, 100)
	if lt := p.LoadTime; lt.BoundBy != "max_wcu" || lt.MinSeconds != float64(p.WCU)/100 || lt.Advice != "" {
		t.Errorf("path at 100 WCU/s: %+v", lt)
	}
}

// Project's bounds and its warm throughput suggestion, on plans of known
// counts: every item is one write unit, so the figures are exact.
func TestProjectLoadTime(t *testing.T) {
	l, _ := layouts.New("path", layouts.Options{})
	plan := func(items, stored, hot int64) *Plan {
		p := &Plan{Items: items, StoredItems: stored, WCU: stored}
		p.LoadTime.HotKeys = []HotKey{{Attr: "Id", Value: "a", Items: 1, WCU: 1, Seconds: 0.001},
			{Index: "ByPath", Attr: "TreeId", Value: "T1", Items: hot, WCU: hot, Seconds: float64(hot) / 1000}}
		return p
	}
	tests := []struct {
		name     string
		p        *Plan
		maxWCU   float64
		bound    string
		min      float64
		warm     float64
		suggest  int64
		advising bool
	}{
		// One tree of a million nodes: ByPath's TreeId takes 1,000 s.
		{"one large tree", plan(1_000_000, 2_000_000, 1_000_000), 0, "partition", 1000, 250, 0, true},
		// A forest of 20 million nodes in trees of 50: nothing is hot, a
		// new table's 4,000 WCU/s is the bound: 5,000 s.
		{"a forest, uncapped", plan(20_000_000, 40_000_000, 50), 0, "warm_throughput", 0.05, 5000, 0, false},
		// Capped at 40,000 WCU/s: 1,000 s, the table's share of the cap
		// 20,000 WCU/s, over a new table's 4,000: warm it.
		{"a forest, capped", plan(20_000_000, 40_000_000, 50), 40000, "warm_throughput", 1000, 5000, 20000, false},
		// The cap is the longest bound.
		{"capped low", plan(20_000_000, 40_000_000, 50), 2000, "max_wcu", 20000, 5000, 0, false},
		// A hot key of 3,000 s in a load of 6,000 s at 4,000 WCU/s: the
		// new table's warm throughput is the bound; warmed to the table's
		// 24,000,000 WCU over 3,000 s, 8,000 WCU/s, only the hot key is.
		{"a hot key under the warm bound", plan(24_000_000, 48_000_000, 3_000_000), 0, "warm_throughput", 3000, 6000, 8000, false},
		{"small", plan(46, 92, 46), 0, "partition", 0.046, 0.012, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.p.Project(l, tc.maxWCU)
			lt := tc.p.LoadTime
			if lt.BoundBy != tc.bound || lt.MinSeconds != tc.min || lt.WarmSeconds != tc.warm || lt.SuggestedWarmWCU != tc.suggest || (lt.Advice != "") != tc.advising {
				t.Errorf("got bound %s, min %g s, warm %g s, suggest %d, advice %q\nwant bound %s, min %g s, warm %g s, suggest %d, advice %v",
					lt.BoundBy, lt.MinSeconds, lt.WarmSeconds, lt.SuggestedWarmWCU, lt.Advice, tc.bound, tc.min, tc.warm, tc.suggest, tc.advising)
			}
		})
	}
}
