package importer

import (
	"context"
	"fmt"

	"github.com/treeport/treeport/internal/pricing"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// KeyReport is the longest value of one key attribute of the table or of an
// index, against DynamoDB's limit.
type KeyReport struct {
	Index   string `json:"index"` // "" for the table
	Role    string `json:"role"`  // "partition" or "sort"
	Attr    string `json:"attribute"`
	Longest int    `json:"longest_bytes"`
	Limit   int    `json:"limit_bytes"`
}

// CollectionReport is the largest item collection (items sharing one
// partition key value) of the table or of an index.
type CollectionReport struct {
	Index string `json:"index"` // "" for the table
	Attr  string `json:"partition_key"`
	Items int64  `json:"items"`
}

// Plan is what loading an input into one layout would do, computed from
// the forest's skeleton without building a single item.
type Plan struct {
	Layout       string `json:"layout"`
	Nodes        int64  `json:"nodes"`
	Items        int64  `json:"items"`
	Bytes        int64  `json:"bytes"`
	MaxItemBytes int    `json:"max_item_bytes"`
	// StoredItems and StoredBytes are what storage is billed for: the
	// table's items and their copies in every index.
	StoredItems int64              `json:"stored_items"`
	StoredBytes int64              `json:"stored_bytes"`
	WCU         int64              `json:"wcu"`
	Keys        []KeyReport        `json:"keys"`
	Collections []CollectionReport `json:"largest_item_collections"`
	Rejected    int                `json:"rejected_nodes"`
	Problems    int                `json:"problems"`
	Cost        Cost               `json:"cost"`
	// LoadTime is the least time the load takes on DynamoDB, from its
	// per-partition limit (see Project; PlanLayout projects it uncapped).
	LoadTime LoadTime `json:"load_time"`
}

// Cost is the estimated price of loading, in US dollars.
type Cost struct {
	OnDemandWrites float64 `json:"on_demand_writes_usd"`
	// ImportTable bills the uncompressed DynamoDB JSON it reads: the
	// lines import --out writes, counted byte for byte
	// (Input.ImportSourceBytes).
	ImportTable     float64 `json:"import_table_usd"`
	ImportBytes     int64   `json:"import_source_bytes_estimate"`
	StorageMonth    float64 `json:"storage_usd_per_month"`
	Region          string  `json:"prices_region"`
	PricesAsOf      string  `json:"prices_as_of"`
	WritePerMillion float64 `json:"on_demand_write_usd_per_million"`
	ImportPerGB     float64 `json:"import_usd_per_gb"`
}

// PlanProgress is told how far PlanLayout has gone: what it does now
// ("measuring", "sizing the ImportTable source") and done of total (nodes,
// or items).
type PlanProgress func(stage string, done, total int64)

// PlanLayout checks the input against l and measures what loading it would
// do. It resets the forest's layout checks first, so that several layouts
// can be planned on one input. It stops with ctx's error once ctx ends;
// progress, when not nil, is told how far it is.
//
// An input read out of core is planned from its passes: they measured
// every valid node as they placed it (see OutOfCore), and the emit pass
// sizes the ImportTable source; no item is written anywhere. Its largest
// item collections are counted in passes of their own (collections), and
// under ImplicitInner, whose items depend on each node's valid children,
// the whole plan is measured there, from every node's subtree.
func PlanLayout(ctx context.Context, in *Input, l layouts.Layout, prices pricing.Prices, progress PlanProgress) (*Plan, []*transform.RowError, error) {
	var (
		problems []*transform.RowError
		m        *layouts.Measure
		err      error
	)
	if in.ooc != nil {
		problems = in.CheckLayout(l)
		if l != in.ooc.Layout() {
			return nil, problems, fmt.Errorf("importer: an input read out of core is planned in the %s layout only, not %s", in.ooc.Layout().Name(), l.Name())
		}
		c, err := in.ooc.Collections(ctx, l)
		if err != nil {
			return nil, problems, err
		}
		if layouts.ImplicitInner(l) {
			m = c // measured whole from the subtrees (subtrees)
		} else {
			whole := *in.ooc.Measure()
			whole.Collections, whole.Hot = c.Collections, c.Hot
			m = &whole
		}
	} else {
		in.Forest.Reset()
		problems = in.CheckLayout(l)
		if err := ctx.Err(); err != nil {
			return nil, problems, err
		}
		if m, err = measureValid(ctx, in, l, progress); err != nil {
			return nil, problems, err
		}
	}
	p := &Plan{
		Layout:       l.Name(),
		Nodes:        m.Nodes,
		Items:        m.Items,
		Bytes:        m.Bytes,
		MaxItemBytes: m.MaxItemBytes,
		StoredItems:  m.StoredItems(),
		StoredBytes:  m.StoredBytes(),
		WCU:          m.WCU,
		Rejected:     in.RejectedCount(),
		Problems:     len(problems),
	}
	spec := l.Table()
	addKey := func(slot int, index string, k *layouts.KeyAttr, limit int, role string) {
		if k == nil || slot >= len(m.Keys) {
			return
		}
		p.Keys = append(p.Keys, KeyReport{Index: index, Role: role, Attr: k.Name, Longest: max(m.Keys[slot], 0), Limit: limit})
	}
	addKey(0, "", &spec.PK, transform.MaxPartitionKeyBytes, "partition")
	addKey(1, "", spec.SK, transform.MaxSortKeyBytes, "sort")
	if len(m.Collections) > 0 {
		p.Collections = append(p.Collections, CollectionReport{Attr: spec.PK.Name, Items: m.Collections[0]})
	}
	for k, ix := range spec.Indexes {
		addKey(2+2*k, ix.Name, &ix.PK, transform.MaxPartitionKeyBytes, "partition")
		addKey(3+2*k, ix.Name, ix.SK, transform.MaxSortKeyBytes, "sort")
		if 1+k < len(m.Collections) {
			p.Collections = append(p.Collections, CollectionReport{Index: ix.Name, Attr: ix.PK.Name, Items: m.Collections[1+k]})
		}
	}
	// The DynamoDB JSON lines import --out writes, byte for byte.
	var sized func(items int64)
	if progress != nil {
		sized = func(items int64) { progress("sizing the ImportTable source", items, m.Items) }
	}
	importBytes, err := in.importSourceBytes(ctx, l, sized)
	if ctx.Err() != nil {
		return nil, problems, ctx.Err()
	}
	if err != nil {
		problems = append(problems, &transform.RowError{File: in.Opts.Path, Err: fmt.Errorf("reading the input again to size its ImportTable source: %w", err)})
	}
	p.Cost = Cost{
		OnDemandWrites:  prices.OnDemandWrites(m.WCU),
		ImportBytes:     importBytes,
		ImportTable:     prices.Import(importBytes),
		StorageMonth:    prices.StorageMonth(m.StoredBytes(), m.StoredItems()),
		Region:          prices.Region,
		PricesAsOf:      prices.AsOf,
		WritePerMillion: prices.OnDemandWritePerMillion,
		ImportPerGB:     prices.ImportPerGB,
	}
	p.LoadTime.HotKeys = measuredHotKeys(m, spec)
	p.Project(l, 0)
	return p, problems, nil
}

// validOnly holds the forest's counts without its rejected nodes: the
// forest's own (Stats) count every node read, and a plan measures only what
// would be written (a rejected node takes its subtree along, so a valid
// node's rejected children and descendants are left out of its counts).
type validOnly struct {
	subtree, children, root []int32
	roots                   int
}

// validCounts counts the valid nodes of f's subtrees; nil when no node is
// rejected and the forest's own counts hold.
func validCounts(f *transform.Forest) *validOnly {
	if f.RejectedCount() == 0 {
		return nil
	}
	n, order := f.Len(), f.Order()
	v := &validOnly{subtree: make([]int32, n), children: make([]int32, n), root: make([]int32, n)}
	for _, i := range order { // parents first
		if p := f.Parent(int(i)); p >= 0 {
			v.root[i] = v.root[p]
		} else {
			v.root[i] = i
		}
	}
	for k := len(order) - 1; k >= 0; k-- { // children first
		i := order[k]
		if f.Rejected(int(i)) {
			continue
		}
		v.subtree[i]++
		if p := f.Parent(int(i)); p >= 0 {
			v.subtree[p] += v.subtree[i]
			v.children[p]++
		} else {
			v.roots++
		}
	}
	return v
}

// fix puts the valid counts of node i into s.
func (v *validOnly) fix(i int32, s *transform.Stats) {
	s.Subtree = int(v.subtree[i])
	s.Children = int(v.children[i])
	s.TreeSize = int(v.subtree[v.root[i]])
	s.Roots = v.roots
}
