package exporter_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

var queryCostsOut = flag.String("query-costs", "", "write the per-layout query costs of the fixtures, as Markdown, to this file")

// costQuery is one query of the cost table, about a node chosen per fixture.
type costQuery struct {
	label string
	q     func(node, deepest string) exporter.QueryOptions
	// requests returns the number of requests the query must take on a
	// layout, from the answer's size; -1 when it is not pinned down.
	requests func(layout string, answer, subtree int) int
}

var costQueries = []costQuery{
	{
		label:    "get N",
		q:        func(n, _ string) exporter.QueryOptions { return exporter.QueryOptions{Kind: exporter.Get, ID: n} },
		requests: func(string, int, int) int { return 1 },
	},
	{
		label: "children N",
		q:     func(n, _ string) exporter.QueryOptions { return exporter.QueryOptions{Kind: exporter.Children, ID: n} },
		requests: func(layout string, _, _ int) int {
			if layout == layouts.PrefixName {
				return 2 // the listing Query, one BatchGetItem
			}
			return 1
		},
	},
	{
		label: "descendants N",
		q: func(n, _ string) exporter.QueryOptions {
			return exporter.QueryOptions{Kind: exporter.Descendants, ID: n, MinDepth: 1, MaxDepth: exporter.NoMaxDepth}
		},
		requests: func(layout string, answer, subtree int) int {
			switch layout {
			case layouts.PathName:
				return 2 // GetItem for the Path, one Query
			case layouts.ShardedName:
				return 1 + layouts.DefaultShards
			case layouts.ClosureName:
				return 1
			case layouts.AdjacencyName:
				return subtree // a ByParent Query per node of the subtree, N's own included
			}
			// A listing Query per node of the subtree, BatchGetItem per 100.
			return subtree + (answer+99)/100
		},
	},
	{
		label: "descendants N, depth 2 only",
		q: func(n, _ string) exporter.QueryOptions {
			return exporter.QueryOptions{Kind: exporter.Descendants, ID: n, MinDepth: 2, MaxDepth: 2}
		},
		requests: func(layout string, _, _ int) int {
			switch layout {
			case layouts.PathName:
				return 2
			case layouts.ShardedName:
				return 1 + layouts.DefaultShards
			case layouts.ClosureName:
				return 1
			}
			return -1
		},
	},
	{
		label: "ancestors L",
		q: func(_, l string) exporter.QueryOptions {
			return exporter.QueryOptions{Kind: exporter.Ancestors, ID: l, MinDepth: 1, MaxDepth: exporter.NoMaxDepth}
		},
		requests: func(layout string, answer, _ int) int {
			switch layout {
			case layouts.PathName, layouts.ShardedName:
				return 2 // GetItem for the Path, one BatchGetItem
			case layouts.ClosureName:
				return 2 // one Query, one BatchGetItem
			case layouts.AdjacencyName:
				return 1 + answer // a GetItem a level, L's own first
			}
			return 1 // one BatchGetItem
		},
	},
}

// TestQueryCosts runs the same queries on every layout for each fixture and
// checks the number of requests each layout's design calls for. With
// -query-costs FILE it writes the requests, items read and RCU (as DynamoDB
// bills them, DynamoDB Local's figure beside where it differs) as a
// Markdown table:
//
//	go test ./exporter -run TestQueryCosts -count=1 -query-costs ../benchmarks/QUERY_COSTS.md
func TestQueryCosts(t *testing.T) {
	client := localClient(t)
	fixtures := []struct{ name, node string }{{"cars", "CM2"}, {"folders", "home/zoe"}, {"org", "E003"}}
	var doc strings.Builder
	for _, fx := range fixtures {
		in, srcOpts := fixtureSource(t, fx.name, "json")
		recs := readFile(t, in, srcOpts)
		o := newOracle(recs)
		deepest := deepestOf(o, recs)
		subtree := len(o.answer(exporter.QueryOptions{Kind: exporter.Descendants, ID: fx.node, MinDepth: 0, MaxDepth: exporter.NoMaxDepth}))
		cells := map[string]map[string]exporter.Stats{} // label → layout → stats
		answers := map[string]int{}
		for _, name := range layouts.Names() {
			l := mustLayout(t, name, layouts.Options{})
			table := importFile(t, client, l, in, srcOpts)
			for _, cq := range costQueries {
				q := cq.q(fx.node, deepest)
				q.Path = o.path(q.ID)
				res, st, err := exporter.Query(context.Background(), client, table, l, q)
				if err != nil {
					t.Fatalf("%s %s: %s: %v", fx.name, name, cq.label, err)
				}
				if d := resultsDiff(res, o.answer(q)); d != "" {
					t.Errorf("%s %s: %s:\n%s", fx.name, name, cq.label, d)
				}
				// A request DynamoDB Local failed under load was retried:
				// it is not the query's cost.
				st.Requests -= st.Failed
				if want := cq.requests(name, len(res), subtree); want >= 0 && st.Requests != int64(want) {
					t.Errorf("%s %s: %s took %d requests, want %d", fx.name, name, cq.label, st.Requests, want)
				}
				if cells[cq.label] == nil {
					cells[cq.label] = map[string]exporter.Stats{}
				}
				cells[cq.label][name] = st
				answers[cq.label] = len(res)
			}
			if name == layouts.PrefixName {
				q := costQueries[2].q(fx.node, deepest)
				_, st, err := exporter.Query(context.Background(), client, table, l, q)
				if err != nil {
					t.Fatal(err)
				}
				cells["descendants N, no --path"] = map[string]exporter.Stats{name: st}
				answers["descendants N, no --path"] = answers[costQueries[2].label]
			}
		}
		fmt.Fprintf(&doc, "\n## %s (%d nodes): N = %s, L = %s (depth %d)\n\n", fx.name, len(recs), fx.node, deepest, len(o.path(deepest))-1)
		doc.WriteString("| query | nodes |")
		for _, name := range layouts.Names() {
			doc.WriteString(" " + name + " |")
		}
		doc.WriteString("\n|---|---:|" + strings.Repeat("---|", len(layouts.Names())) + "\n")
		labels := []string{}
		for _, cq := range costQueries {
			labels = append(labels, cq.label)
		}
		labels = append(labels, "descendants N, no --path")
		for _, label := range labels {
			fmt.Fprintf(&doc, "| %s | %d |", label, answers[label])
			for _, name := range layouts.Names() {
				st, ok := cells[label][name]
				if !ok {
					doc.WriteString(" — |")
					continue
				}
				local := ""
				if st.ConsumedRCU != st.PricedRCU {
					local = " (" + formatRCUForDoc(st.ConsumedRCU) + " on DynamoDB Local)"
				}
				fmt.Fprintf(&doc, " %d req, %d items, %s RCU%s |", st.Requests, st.Items, formatRCUForDoc(st.PricedRCU), local)
			}
			doc.WriteString("\n")
		}
	}
	if *queryCostsOut == "" {
		return
	}
	header := `# Query costs per layout

What one treeport query costs on each layout, for the fixtures: requests
sent, items DynamoDB read (a Query's ScannedCount, the items a GetItem or
BatchGetItem returned) and the read capacity DynamoDB bills them
(eventually consistent reads): what DynamoDB Local reported consumed
(ReturnConsumedCapacity TOTAL), with each Query that found nothing raised to
the 0.5 RCU DynamoDB bills it, and DynamoDB Local's own figure in brackets
where it differs. N is a node with a subtree, L the deepest node. The
prefix queries are given the node's path (--path), except the last row,
where a Scan of the table finds it first. These are treeport query's
requests, which check that a node whose answer is empty exists; bench
prices a node known to be there, and learns a prefix node's path with a
GetItem (see README.md, "How bench prices every layout's queries").

Produced against DynamoDB Local by:

    scripts/ddblocal.sh start && eval "$(scripts/ddblocal.sh env)"
    go test ./exporter -run TestQueryCosts -count=1 -query-costs ../benchmarks/QUERY_COSTS.md

The same test, without the flag, checks the request counts (the layouts'
designs fix them; only the prefix and adjacency layouts' grow with the
subtree, and adjacency's ancestors with the depth).

How to read it: a Query pays for the 4 KB units of all the items it reads
(filtered or not), so path's depth band reads the whole subtree and filters;
closure's ByAncestor answers a band from the index key alone. A BatchGetItem
pays at least 0.5 RCU per item. Prefix descendants take one listing Query per
node of the subtree, so their request count grows with it; so do adjacency's,
one ByParent Query per node (a leaf's comes back empty), whose ancestors take
a GetItem a level.
`
	if err := os.WriteFile(*queryCostsOut, []byte(header+doc.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func formatRCUForDoc(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.1f", v)
}

// deepestOf is the deepest node, the first in id order among equals.
func deepestOf(o *oracle, recs []*transform.Record) string {
	best := ""
	for _, r := range recs {
		if d, bd := len(o.path(r.ID)), len(o.path(best)); best == "" || d > bd || d == bd && r.ID < best {
			best = r.ID
		}
	}
	return best
}

// TestEmptyQueryPricedAtTheMinimum: a Query that finds nothing is priced
// as DynamoDB's Query reference bills it, the minimum of its read type: half
// a unit eventually consistent, one unit strongly consistent. DynamoDB Local
// reports it consumed 0; Stats keeps its figure next to the price, and says
// both.
func TestEmptyQueryPricedAtTheMinimum(t *testing.T) {
	client := localClient(t)
	in, srcOpts := fixtureSource(t, "cars", "json")
	l := mustLayout(t, layouts.ClosureName, layouts.Options{})
	table := importFile(t, client, l, in, srcOpts)
	tests := []struct {
		name     string
		q        exporter.QueryOptions
		requests int64
		want     float64 // the empty Query's minimum, plus the GetItem's RCU when there is one
		empty    float64 // the empty Query's minimum
	}{
		// Closure's descendants of a leaf: one Query of ByAncestor, then the
		// GetItem that tells a leaf from a missing node (half a unit).
		{"descendants of a leaf", exporter.QueryOptions{Kind: exporter.Descendants, ID: "CM7", MinDepth: 1, MaxDepth: exporter.NoMaxDepth}, 2, 1, 0.5},
		// Closure's ancestors of a root: one Query of the table, strongly
		// consistent here, then the GetItem that tells a root from a
		// missing node (one unit for a small item, strongly consistent).
		{"ancestors of a root, strongly consistent", exporter.QueryOptions{Kind: exporter.Ancestors, ID: "CM1", MinDepth: 1, MaxDepth: exporter.NoMaxDepth, ConsistentRead: true}, 2, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, st, err := exporter.Query(context.Background(), client, table, l, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != 0 || st.Requests-st.Failed != tt.requests || st.EmptyQueries != 1 {
				t.Fatalf("%d nodes, stats %+v; want %d requests, one of them a Query that read nothing", len(res), st, tt.requests)
			}
			if st.PricedRCU != tt.want {
				t.Errorf("priced %v RCU, want %v (consumed %v)", st.PricedRCU, tt.want, st.ConsumedRCU)
			}
			// DynamoDB bills the empty Query the minimum, DynamoDB Local 0.
			if st.ConsumedRCU != tt.want && st.ConsumedRCU != tt.want-tt.empty {
				t.Errorf("the server says %v RCU consumed", st.ConsumedRCU)
			}
			if line := st.String(); st.ConsumedRCU < st.PricedRCU && !strings.Contains(line, fmt.Sprintf("DynamoDB would bill %s RCU", formatRCUForDoc(tt.want))) {
				t.Errorf("Stats says %q", line)
			}
		})
	}
}
