// Package layoutbench compares treeport's table layouts on the user's own
// data: what each stores, what loading it costs, how its partitions are
// loaded, what the tree queries read, what moving or deleting a node
// rewrites, and what all of that costs at the user's scale. It ranks the
// layouts for a read mix and renders the result as a terminal table,
// Markdown, JSON and a self-contained HTML page.
//
// Offline, everything comes from the input file: the items are built and
// measured as they stream by, and the queries' costs are computed from the
// requests each layout sends (the exporter's) and the items' sizes. Online,
// each layout is also loaded into a fresh table with treeport's own writer,
// the sample's queries are sent with exporter.Query and timed, and the
// tables are deleted again.
package layoutbench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/ddbtable"
	"github.com/treeport/treeport/internal/pricing"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// Client is the part of the DynamoDB client an online run uses: creating,
// loading, querying and deleting its tables. *dynamodb.Client satisfies it.
type Client interface {
	ddbtable.TableAPI
	ddbwrite.BatchWriter
	exporter.QueryAPI
	DeleteTable(ctx context.Context, in *dynamodb.DeleteTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error)
}

var _ Client = (*dynamodb.Client)(nil)

// Options say what to compare and how.
type Options struct {
	// Layouts are the layouts to compare, in report order.
	Layouts []layouts.Layout
	// Sample is how many nodes the per-node measures use (DefaultSample).
	Sample int
	// Seed picks the sample and the move targets.
	Seed uint64
	// Mix is the read mix the costs and the ranking weigh (ParseMix).
	Mix []MixEntry
	// Workload is the reads, writes, moves and deletes a month, and the
	// months, the ranking prices (DefaultWorkload when zero).
	Workload Workload
	// Scale is the number of nodes the costs are projected to; 0 means the
	// dataset's own.
	Scale int64
	// Prices is the price list (pricing.Default).
	Prices pricing.Prices

	// Client, when set, makes the run online: each layout is loaded into a
	// fresh table, queried and the table deleted. Nil: offline.
	Client Client
	// Endpoint names the server in the report.
	Endpoint string
	// TablePrefix starts the tables' names ("treeport-bench"); a layout
	// name and a random suffix follow.
	TablePrefix string
	// KeepTables leaves the tables in place after an online run.
	KeepTables bool
	// Concurrency is the writer's BatchWriteItem calls in flight (8).
	Concurrency int
	// Log, when set, receives a line on each step.
	Log func(format string, args ...any)

	// trace, in tests, sees each measured query next to its estimate.
	trace func(layout, id, kind string, est, got cost)
}

// DefaultSample is the sample size when none is given.
const DefaultSample = 100

// Run measures every layout on the checked input and returns the report.
// The input must have been read with importer.ReadInput; Run checks it
// against each layout again (nodes a layout rejects are left out of its
// figures, and out of the sample for all). Online, the tables Run creates
// are deleted before it returns, also when ctx is cancelled (Ctrl-C),
// unless KeepTables; a cancelled run returns ctx's error.
func Run(ctx context.Context, in *importer.Input, opts Options) (*Report, error) {
	if len(opts.Layouts) == 0 {
		return nil, errors.New("layoutbench: no layouts to compare")
	}
	if opts.Sample <= 0 {
		opts.Sample = DefaultSample
	}
	if len(opts.Mix) == 0 {
		opts.Mix, _ = ParseMix(DefaultMix)
	}
	if opts.Workload == (Workload{}) {
		opts.Workload = DefaultWorkload
	}
	if err := opts.Workload.Check(); err != nil {
		return nil, fmt.Errorf("layoutbench: workload: %w", err)
	}
	if opts.Prices.AsOf == "" {
		opts.Prices = pricing.Default
	}
	if opts.TablePrefix == "" {
		opts.TablePrefix = "treeport-bench"
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 8
	}
	logf := opts.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	f := in.Forest

	// The sample is drawn among the nodes every layout accepts, so that
	// each layout answers for the same nodes.
	accepted := make([]bool, f.Len())
	for _, i := range f.Order() {
		accepted[i] = true
	}
	for _, l := range opts.Layouts {
		f.Reset()
		in.CheckLayout(l)
		for i := range accepted {
			if accepted[i] && f.Rejected(i) {
				accepted[i] = false
			}
		}
	}
	ok := func(i int32) bool { return accepted[i] }
	sample, strata := drawSample(f, ok, opts.Sample, opts.Seed)
	rep := &Report{
		SchemaVersion: SchemaVersion,
		Tool:          "treeport bench",
		Mode:          "offline",
		Input:         inputInfo(in, ok),
		ReadMix:       opts.Mix,
		Workload:      opts.Workload,
		Prices:        priceInfo(opts.Prices),
	}
	if opts.Client != nil {
		rep.Mode = "online"
		// The report is printed and shared: no password of the URL's.
		rep.Endpoint = ddb.RedactURL(opts.Endpoint)
	}
	rep.Sample = SampleInfo{Requested: opts.Sample, Nodes: len(sample), Seed: opts.Seed, Strata: strata}
	var st transform.Stats
	for _, x := range sample {
		f.Stats(int(x.node), &st)
		rep.Sample.Picked = append(rep.Sample.Picked, SampleID{ID: st.ID, Depth: st.Depth, Children: st.Children, Subtree: st.Subtree})
	}
	scale := opts.Scale
	if scale <= 0 {
		scale = rep.Input.Nodes
	}
	rep.Scale = ScaleInfo{Nodes: scale, Factor: 1, Method: "items, bytes and the load's write units grow with the node count; the trees stay as many and as deep and every fan-out grows alike, so a children or descendants query reads more, and a move or a delete rewrites more, along the cost each answer node (subtree node) adds across the sample"}
	if rep.Input.Nodes > 0 {
		rep.Scale.Factor = float64(scale) / float64(rep.Input.Nodes)
	}

	byDepth := make([][]int32, rep.Input.MaxDepth+1)
	for _, i := range f.Order() {
		if accepted[i] {
			byDepth[f.Depth(int(i))] = append(byDepth[f.Depth(int(i))], i)
		}
	}
	b := &bench{in: in, opts: opts, sample: sample, byDepth: byDepth, logf: logf}
	defer b.cleanup(ctx)
	pj := &projection{rep: rep, sample: sample, prices: opts.Prices, work: opts.Workload}
	for _, x := range sample {
		pj.shapes = append(pj.shapes, shapeOf(f, x.node))
	}
	for _, nodes := range byDepth {
		pj.levels = append(pj.levels, int64(len(nodes)))
	}
	for _, l := range opts.Layouts {
		res, err := b.layout(ctx, l)
		if err != nil {
			return nil, err
		}
		res.Cost = pj.cost(res, scale)
		rep.Layouts = append(rep.Layouts, res)
	}
	rep.Ranking = rank(rep)
	if len(rep.Ranking) > 1 {
		first, second := rep.Layouts[0], rep.Layouts[0]
		for _, r := range rep.Layouts {
			switch r.Layout {
			case rep.Ranking[0].Layout:
				first = r
			case rep.Ranking[1].Layout:
				second = r
			}
		}
		rep.Margin = 1
		if first.Cost.TotalUSD > 0 {
			rep.Margin = round(second.Cost.TotalUSD / first.Cost.TotalUSD)
		}
	}
	rep.BreakEvens = breakEvens(rep, opts.Prices)
	rep.Curves = pj.curves(rep)
	rep.Notes = notes(rep)
	return rep, nil
}

// bench holds a run's state.
type bench struct {
	in      *importer.Input
	opts    Options
	sample  []sampled
	byDepth [][]int32
	logf    func(string, ...any)
	tables  []string // created and not yet deleted
}

// layout measures one layout.
func (b *bench) layout(ctx context.Context, l layouts.Layout) (*Result, error) {
	in, f := b.in, b.in.Forest
	plan, _, err := importer.PlanLayout(ctx, in, l, b.opts.Prices, nil) // leaves the forest checked for l
	if err != nil {
		return nil, err
	}
	res := &Result{
		Layout: l.Name(), Rejected: f.RejectedCount(), Nodes: plan.Nodes,
		MaxItemBytes: plan.MaxItemBytes, ItemLimit: transform.MaxItemBytes,
		Load: Load{WCU: plan.WCU, MinSeconds: plan.LoadTime.MinSeconds, BoundBy: plan.LoadTime.BoundBy},
	}
	for _, k := range plan.Keys {
		res.Keys = append(res.Keys, KeyLength{Index: k.Index, Role: k.Role, Attr: k.Attr, Longest: k.Longest, Limit: k.Limit})
	}
	s := newSink(f, l, b.sample)

	// One pass over the input measures the items, and online writes them.
	emit := func(_ int64, item layouts.Item) error { return s.add(item) }
	var w *ddbwrite.DDBWriter
	var loadStart time.Time
	if b.opts.Client != nil {
		res.Table = fmt.Sprintf("%s-%s-%s", b.opts.TablePrefix, l.Name(), randomSuffix())
		b.logf("%s: creating table %s", l.Name(), res.Table)
		b.tables = append(b.tables, res.Table)
		if err := ddbtable.CreateTable(ctx, b.opts.Client, res.Table, l.Table(), ddbtable.Billing{}); err != nil {
			return nil, err
		}
		w = ddbwrite.NewDDBWriter(b.opts.Client, res.Table, l.Table(), ddbwrite.WriterOptions{
			Concurrency: b.opts.Concurrency, ConsumedCapacity: true,
		})
		emit = func(seq int64, item layouts.Item) error {
			if err := s.add(item); err != nil {
				return err
			}
			return w.Write(ctx, seq, item)
		}
		b.logf("%s: loading %s", l.Name(), units.Count(int64(plan.Items), "item"))
		loadStart = time.Now()
	} else {
		b.logf("%s: measuring %s", l.Name(), units.Count(int64(plan.Items), "item"))
	}
	_, err = in.Emit(ctx, importer.EmitOptions{Layout: l}, emit)
	if w != nil {
		st, cerr := w.Close(context.WithoutCancel(ctx))
		if err == nil {
			err = cerr
		}
		secs := time.Since(loadStart).Seconds()
		res.Load.Seconds = &secs
		res.Load.ConsumedWCU = &st.ConsumedWCU
		res.Load.ItemsWritten = st.Items
		res.Load.Throttles = st.Throttles
	}
	if err != nil {
		return nil, err
	}
	res.Items = s.storage[0].Items
	res.Bytes = s.storage[0].Bytes
	if res.Items != plan.Items {
		return nil, fmt.Errorf("layoutbench: %s: %d items streamed, but the layout's measure counts %d", l.Name(), res.Items, plan.Items)
	}
	res.MaxItemBytes = max(res.MaxItemBytes, s.maxItem)
	for _, st := range s.storage {
		st.BilledBytes = st.Bytes + st.Items*int64(b.opts.Prices.ItemOverheadBytes)
		res.StoredBytes += st.BilledBytes
		res.Storage = append(res.Storage, st)
	}
	res.Partitions = s.skew()

	// The queries: estimated always, measured online.
	est := make([]map[string]cost, len(b.sample))
	for k := range b.sample {
		est[k] = estimate(s, k)
	}
	got := est
	if b.opts.Client != nil {
		b.logf("%s: querying %s", l.Name(), units.Count(int64(len(b.sample)), "node"))
		measured, lat, err := b.query(ctx, l, res.Table, est)
		if err != nil {
			return nil, err
		}
		res.Queries = queryStats(b.sample, measured, lat, est)
		got = measured
	} else {
		res.Queries = queryStats(b.sample, est, nil, est)
	}
	res.perNode = perNode{rcu: map[string][]float64{}, req: map[string][]float64{}, fit: map[string][]float64{}}
	for _, kind := range Kinds {
		for k := range b.sample {
			c := got[k][kind]
			res.perNode.rcu[kind] = append(res.perNode.rcu[kind], c.rcu)
			res.perNode.fit[kind] = append(res.perNode.fit[kind], est[k][kind].smooth)
			res.perNode.req[kind] = append(res.perNode.req[kind], float64(got[k][kind].req))
		}
	}

	if b.opts.Client != nil && !b.opts.KeepTables {
		if err := b.drop(ctx, res.Table); err != nil {
			return nil, err
		}
	}
	b.logf("%s: rewriting %s", l.Name(), units.Count(int64(len(b.sample)), "sampled node"))
	if res.Rewrites, err = b.rewrites(ctx, l, &res.perNode); err != nil {
		return nil, err
	}
	res.importBytes = plan.Cost.ImportBytes
	return res, nil
}

// query sends the sample's queries and checks their answers against the
// input.
func (b *bench) query(ctx context.Context, l layouts.Layout, table string, est []map[string]cost) ([]map[string]cost, []map[string]float64, error) {
	f := b.in.Forest
	out := make([]map[string]cost, len(b.sample))
	lat := make([]map[string]float64, len(b.sample))
	var path []string
	warm := true
	for k, x := range b.sample {
		out[k] = map[string]cost{}
		lat[k] = map[string]float64{}
		id := f.ID(int(x.node))
		path = f.AppendPath(path[:0], int(x.node))
		for _, kind := range Kinds {
			q := exporter.QueryOptions{ID: id, Path: path, MinDepth: 1, MaxDepth: exporter.NoMaxDepth, Known: true}
			switch kind {
			case KindGet:
				q.Kind = exporter.Get
			case KindChildren:
				q.Kind = exporter.Children
			case KindDescendants:
				q.Kind = exporter.Descendants
			case KindDepth2:
				q.Kind, q.MaxDepth = exporter.Descendants, 2
			case KindAncestors:
				q.Kind = exporter.Ancestors
			}
			if warm {
				// The first request of a client opens its connection:
				// not the layout's latency.
				if _, _, err := exporter.Query(ctx, b.opts.Client, table, l, q); err != nil {
					return nil, nil, fmt.Errorf("%s: warm-up %s query of %q: %w", l.Name(), kind, id, err)
				}
				warm = false
			}
			start := time.Now()
			var learn exporter.Stats
			if layouts.LearnsPath(l, q.Kind) {
				// Given the id, the query learns the node's path first, as
				// path does: the GetItem of the node's own item.
				get := q
				get.Kind, get.MinDepth, get.MaxDepth = exporter.Get, 0, 0
				var err error
				if _, learn, err = exporter.Query(ctx, b.opts.Client, table, l, get); err != nil {
					return nil, nil, fmt.Errorf("%s: the path of %q: %w", l.Name(), id, err)
				}
			}
			ans, st, err := exporter.Query(ctx, b.opts.Client, table, l, q)
			ms := float64(time.Since(start).Microseconds()) / 1000
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %s query of %q: %w", l.Name(), kind, id, err)
			}
			st.Add(learn)
			if want := est[k][kind].nodes; int64(len(ans)) != want {
				return nil, nil, fmt.Errorf("layoutbench: %s: the %s query of %q answered %d nodes, the input has %d: table %s does not hold what was loaded",
					l.Name(), kind, id, len(ans), want, table)
			}
			// A request the server failed (DynamoDB Local under load
			// sometimes answers 5xx or drops a connection) was retried
			// and is not the layout's cost. The requests are priced by
			// DynamoDB's documented rules (DynamoDB Local bills a Query
			// that finds nothing 0, DynamoDB the minimum); what the server
			// reported is kept next to it.
			out[k][kind] = cost{req: st.Requests - st.Failed, items: st.Items, rcu: st.PricedRCU, consumed: st.ConsumedRCU,
				empty: st.EmptyQueries, nodes: int64(len(ans))}
			if b.opts.trace != nil {
				b.opts.trace(l.Name(), id, kind, est[k][kind], out[k][kind])
			}
			lat[k][kind] = ms
		}
	}
	return out, lat, nil
}

// rewrites counts what moving, deleting and writing each sampled node
// rewrites, and keeps each one's WCU in pn (NaN where a change does not
// apply: a root is not moved; a root with children cannot be deleted, edit
// refuses it). With path ids no node is moved, nor an inner node deleted:
// either would change the ids of a subtree, a new subtree rather than a
// rewrite.
func (b *bench) rewrites(ctx context.Context, l layouts.Layout, pn *perNode) (Rewrites, error) {
	f := b.in.Forest
	var mv, del, wr wstats
	pathIDs := layouts.PathIDs(l)
	for _, x := range b.sample {
		id := f.ID(int(x.node))
		m, d := math.NaN(), math.NaN()
		if t := moveTarget(f, b.byDepth, x.node, b.opts.Seed); t >= 0 && !pathIDs {
			c, err := moveChange(ctx, l, f, x.node, t)
			if err != nil {
				return Rewrites{}, fmt.Errorf("%s: move %q: %w", l.Name(), id, err)
			}
			mv.add(c, x.weight, id)
			m = float64(c.wcu)
		}
		if leaf := len(f.Children(int(x.node))) == 0; leaf || (f.Parent(int(x.node)) >= 0 && !pathIDs) {
			c, err := deleteChange(ctx, l, f, x.node)
			if err != nil {
				return Rewrites{}, fmt.Errorf("%s: delete %q: %w", l.Name(), id, err)
			}
			del.add(c, x.weight, id)
			d = float64(c.wcu)
		}
		c, err := writeChange(ctx, l, f, x.node)
		if err != nil {
			return Rewrites{}, fmt.Errorf("%s: write %q: %w", l.Name(), id, err)
		}
		wr.add(c, x.weight, id)
		pn.move = append(pn.move, m)
		pn.del = append(pn.del, d)
		pn.update = append(pn.update, float64(c.wcu))
	}
	return Rewrites{Move: mv.stats(), Delete: del.stats(), Write: wr.stats()}, nil
}

// wstats averages changes with weights and keeps the worst.
type wstats struct {
	n                  int
	w, puts, dels, wcu float64
	worst, worstWCU    int64
	worstNode          string
	worstSet           bool
}

func (s *wstats) add(c change, w float64, id string) {
	s.n++
	s.w += w
	s.puts += w * float64(c.puts)
	s.dels += w * float64(c.deletes)
	s.wcu += w * float64(c.wcu)
	s.worst = max(s.worst, c.items())
	if !s.worstSet || c.wcu > s.worstWCU {
		s.worstWCU, s.worstNode, s.worstSet = c.wcu, id, true
	}
}

func (s *wstats) stats() RewriteStats {
	if s.n == 0 || s.w == 0 {
		return RewriteStats{}
	}
	return RewriteStats{
		Samples: s.n, MeanPuts: round(s.puts / s.w), MeanDeletes: round(s.dels / s.w),
		MeanItems: round((s.puts + s.dels) / s.w), WorstItems: s.worst,
		MeanWCU: round(s.wcu / s.w), WorstWCU: s.worstWCU, WorstNode: s.worstNode,
	}
}

// drop deletes a table Run created, even when ctx is cancelled.
func (b *bench) drop(ctx context.Context, table string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	b.logf("deleting table %s", table)
	_, err := b.opts.Client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	b.tables = slices.DeleteFunc(b.tables, func(t string) bool { return t == table })
	if err != nil {
		return fmt.Errorf("layoutbench: delete table %s: %w (delete it yourself)", table, err)
	}
	return nil
}

// cleanup deletes the tables an interrupted or failed run left.
func (b *bench) cleanup(ctx context.Context) {
	if b.opts.Client == nil || b.opts.KeepTables {
		return
	}
	for _, t := range slices.Clone(b.tables) {
		if err := b.drop(ctx, t); err != nil {
			b.logf("%v", err)
		}
	}
}

func randomSuffix() string {
	var buf [4]byte
	_, _ = rand.Read(buf[:])
	return hex.EncodeToString(buf[:])
}

// inputInfo describes the accepted part of the input.
func inputInfo(in *importer.Input, ok func(int32) bool) InputInfo {
	f := in.Forest
	info := InputInfo{Path: in.Opts.Path, Records: in.Records}
	var depths int64
	for _, i := range f.Order() {
		if !ok(i) {
			continue
		}
		info.Nodes++
		d := f.Depth(int(i))
		depths += int64(d)
		info.MaxDepth = max(info.MaxDepth, d)
		if d == 0 {
			info.Trees++
		}
		c := len(f.Children(int(i)))
		if c == 0 {
			info.Leaves++
		}
		info.MaxChildren = max(info.MaxChildren, c)
	}
	if info.Nodes > 0 {
		info.MeanDepth = math.Round(float64(depths)/float64(info.Nodes)*100) / 100
	}
	return info
}

func priceInfo(p pricing.Prices) PriceInfo {
	return PriceInfo{
		Region: p.Region, AsOf: p.AsOf,
		OnDemandWritePerMillion: p.OnDemandWritePerMillion, OnDemandReadPerMillion: p.OnDemandReadPerMillion,
		ImportPerGB: p.ImportPerGB, StoragePerGBMonth: p.StoragePerGBMonth, ItemOverheadBytes: p.ItemOverheadBytes,
	}
}
