package refresh

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/streams"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/testserver/faultproxy"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// syncBuffer is a log shared by the follower and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// liveSource is a source table with a stream, and the test's model of its
// forest.
type liveSource struct {
	t      *testing.T
	client *dynamodb.Client
	table  string
	l      layouts.Layout
	f      *tree
	mu     sync.Mutex // f
}

func newLiveSource(t *testing.T, client *dynamodb.Client, l layouts.Layout, r *rand.Rand, nodes int) *liveSource {
	t.Helper()
	src := &liveSource{t: t, client: client, table: ddblocal.NewTable(t, client, l.Table()), l: l, f: randomTree(r, nodes)}
	sc, err := streams.NewClient(context.Background(), ddb.AWSOptions{EndpointURL: ddblocal.Endpoint(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.Enable(context.Background(), client, sc, src.table, time.Minute); err != nil {
		t.Fatal(err)
	}
	problems := func(p []*transform.RowError, _ int) {
		for _, e := range p {
			t.Logf("snapshot problem: %v", e)
		}
	}
	if _, err := Apply(context.Background(), ApplyOptions{Target: Target{Client: client, Table: src.table, Layout: l}, Input: snapshotOf(t, r, src.f, nil), OnProblems: problems}); err != nil {
		t.Fatal(err)
	}
	return src
}

// first is the first node of the model (in ids' order) that ok takes; the
// test fails when none does.
func (src *liveSource) first(t *testing.T, what string, ok func(id string) bool) string {
	t.Helper()
	for _, id := range src.f.ids() {
		if ok(id) {
			return id
		}
	}
	t.Fatalf("the random tree has no %s", what)
	return ""
}

// leaf is the first leaf of the model that has a parent.
func (src *liveSource) leaf(t *testing.T) string {
	t.Helper()
	return src.first(t, "leaf with a parent", func(id string) bool { return src.f.parent[id] != "" && len(src.f.children(id)) == 0 })
}

// items are the layout's items of one node of the model.
func (src *liveSource) items(id string) []layouts.Item {
	var path []string
	for p := id; p != ""; p = src.f.parent[p] {
		path = append([]string{p}, path...)
	}
	n := transform.Node{Record: transform.Record{ID: id, Parent: src.f.parent[id], Attrs: src.f.attrs[id]}, Depth: len(path) - 1, Path: path}
	var out []layouts.Item
	if err := src.l.Items(&n, func(it layouts.Item) { out = append(out, it) }); err != nil {
		src.t.Fatal(err)
	}
	return out
}

// put writes item into A with a raw PutItem, as an application would.
func (src *liveSource) put(t *testing.T, item layouts.Item) {
	t.Helper()
	if _, err := src.client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &src.table, Item: item}); err != nil {
		t.Fatal(err)
	}
}

// mutate changes the source once, the way an application would: a tree
// edit with treeport's editor (a move, a delete, a set), or raw PutItem,
// UpdateItem and DeleteItem calls of the layout's items (a new leaf, a
// changed attribute, a removed leaf).
func (src *liveSource) mutate(ctx context.Context, r *rand.Rand) error {
	src.mu.Lock()
	defer src.mu.Unlock()
	f := src.f
	ids := f.ids()
	switch k := r.IntN(6); k {
	case 0, 1, 2: // a tree edit
		e := randomEdit(r, f)
		ops := filepath.Join(src.t.TempDir(), "ops.jsonl")
		var line string
		switch e.Op {
		case EditMove:
			line = fmt.Sprintf(`{"op":"move","id":%q,"parent":%q}`, e.ID, e.Parent)
		case EditDelete:
			line = fmt.Sprintf(`{"op":"delete","id":%q}`, e.ID)
		default:
			line = fmt.Sprintf(`{"op":"set","id":%q,"attributes":{"size":%s,"note":"edited"}}`, e.ID, e.Attrs["size"].(*types.AttributeValueMemberN).Value)
			e.Remove = nil
		}
		if err := os.WriteFile(ops, []byte(line+"\n"), 0o644); err != nil {
			return err
		}
		if _, err := EditTable(ctx, EditTableOptions{Client: src.client, Table: src.table, Layout: src.l, Ops: ops}); err != nil {
			return fmt.Errorf("edit %s: %w", line, err)
		}
		f.applyEdit(e)
	case 3: // raw puts of a new leaf
		id := newID(r)
		f.parent[id] = ids[r.IntN(len(ids))]
		f.attrs[id] = randomAttrs(r, id)
		for _, it := range src.items(id) {
			if _, err := src.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &src.table, Item: it}); err != nil {
				return err
			}
		}
	case 4: // a raw update of a node's attribute, on every item that copies it
		id := ids[r.IntN(len(ids))]
		v := fmt.Sprint(r.IntN(1000))
		f.attrs[id]["note"] = s(v)
		for _, it := range src.items(id) {
			if it["note"] == nil {
				continue
			}
			_, err := src.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &src.table, Key: keyItem(src.l.Table(), it),
				UpdateExpression:          aws.String("SET #n = :v"),
				ExpressionAttributeNames:  map[string]string{"#n": "note"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":v": s(v)}})
			if err != nil {
				return err
			}
		}
	default: // raw deletes of a leaf
		var leaves []string
		for _, id := range ids {
			if len(f.children(id)) == 0 {
				leaves = append(leaves, id)
			}
		}
		if len(leaves) < 2 {
			return nil
		}
		id := leaves[r.IntN(len(leaves))]
		for _, it := range src.items(id) {
			if _, err := src.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &src.table, Key: keyItem(src.l.Table(), it)}); err != nil {
				return err
			}
		}
		delete(f.parent, id)
		delete(f.attrs, id)
	}
	return nil
}

// want is every item the destination's layout wants for the model.
func (src *liveSource) want(t *testing.T, to layouts.Layout) map[string]string {
	src.mu.Lock()
	defer src.mu.Unlock()
	r := rand.New(rand.NewPCG(1, 1))
	return wantItems(t, readSnapshot(t, snapshotOf(t, r, src.f, nil).Path, to, nil), to)
}

func followOptions(t *testing.T, client *dynamodb.Client, src *liveSource, to layouts.Layout, dest string, log *syncBuffer) MigrateOptions {
	t.Helper()
	sc, err := streams.NewClient(context.Background(), ddb.AWSOptions{EndpointURL: ddblocal.Endpoint(t)})
	if err != nil {
		t.Fatal(err)
	}
	return MigrateOptions{
		ApplyOptions: ApplyOptions{
			Target:      Target{Client: client, Table: dest, Layout: to, Scan: exporter.ScanOptions{Segments: 2}},
			Settings:    map[string]any{"command": "migrate", "to-layout": to.Name()},
			CreateTable: true, MaxDeleteRatio: 1, Log: log,
			Checkpoint: filepath.Join(t.TempDir(), "follow.ckpt"),
		},
		From: src.table, FromLayout: src.l,
		// A progress line every 100 ms: waitForRound's sign that the
		// follower has come round its loop.
		Follow: &FollowOptions{Streams: sc, Idle: 2 * time.Second, Poll: 200 * time.Millisecond, LogEvery: 100 * time.Millisecond},
	}
}

// startFollow starts a migrate --follow of src into a new table of layout
// to, idle after idle, in the background, and returns once it follows the
// stream: the table, the run's log, and a channel that gets its error when
// it ends, *res its result by then.
func startFollow(t *testing.T, client *dynamodb.Client, src *liveSource, to layouts.Layout, idle time.Duration, res **MigrateResult, adjust ...func(*MigrateOptions)) (string, *syncBuffer, <-chan error) {
	t.Helper()
	dest := ddblocal.TableName(t)
	t.Cleanup(func() { dropTable(t, client, dest) })
	log := &syncBuffer{}
	opts := followOptions(t, client, src, to, dest, log)
	opts.Follow.Idle = idle
	for _, fn := range adjust {
		fn(&opts)
	}
	done := make(chan error, 1)
	go func() {
		var err error
		*res, err = Migrate(context.Background(), opts)
		done <- err
	}()
	waitFor(t, log, "following the stream", 30*time.Second)
	return dest, log, done
}

// followOutOfCore makes a follow run out of core: its copy forced out of
// core in a 1 MiB budget, the follower's state in stores in a --tmp-dir
// that must be empty once the follow has ended.
func followOutOfCore(t *testing.T) func(*MigrateOptions) {
	tmp := t.TempDir()
	var passes atomic.Bool // the copy's out-of-core passes started
	t.Cleanup(func() {
		if left, _ := os.ReadDir(tmp); len(left) > 0 {
			t.Errorf("the follow left %d entries in its --tmp-dir, %s first", len(left), left[0].Name())
		}
		if !passes.Load() {
			t.Error("the copy did not run out of core")
		}
	})
	return func(o *MigrateOptions) {
		o.Input.OutOfCore = &importer.OutOfCore{Force: true, Memory: 1 << 20, TmpDir: tmp, Layout: o.Layout, OnStart: func() { passes.Store(true) }}
	}
}

// bothWays runs test in memory and out of core (followOutOfCore).
func bothWays(t *testing.T, test func(t *testing.T, adjust func(*MigrateOptions))) {
	t.Run("in-memory", func(t *testing.T) { test(t, func(*MigrateOptions) {}) })
	t.Run("out-of-core", func(t *testing.T) { test(t, followOutOfCore(t)) })
}

// TestFollowCopyReadsConsistently: with --follow the copy reads A with
// consistent reads. A change made just before the stream position is not
// in the stream: an eventually consistent Scan that missed it would leave
// B behind for good. (DynamoDB Local is always consistent, so the test
// looks at the requests, through a proxy.)
func TestFollowCopyReadsConsistently(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	direct := ddblocal.Client(t, endpoint)
	lp, _ := layouts.New(layouts.PathName, layouts.Options{})
	src := newLiveSource(t, direct, lp, rand.New(rand.NewPCG(7, 7)), 40)
	var mu sync.Mutex
	scans := map[bool]int{} // of A, by ConsistentRead
	proxy, err := faultproxy.New(faultproxy.Config{Target: endpoint, Lifetime: 5 * time.Minute, OnRequest: func(op string, body []byte) {
		if op != "Scan" {
			return
		}
		var in struct {
			TableName      string
			ConsistentRead bool
		}
		if json.Unmarshal(body, &in) == nil && in.TableName == src.table {
			mu.Lock()
			scans[in.ConsistentRead]++
			mu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	client := ddblocal.Client(t, proxy.URL())
	dest := ddblocal.TableName(t)
	t.Cleanup(func() {
		direct.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(dest)})
	})
	log := &syncBuffer{}
	opts := followOptions(t, client, src, lp, dest, log)
	opts.Follow.Idle = time.Second
	res, err := Migrate(context.Background(), opts)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if !res.Exact() {
		t.Fatalf("not exact:\n%s", log.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if scans[false] > 0 || scans[true] == 0 {
		t.Errorf("Scans of A: %d eventually consistent, %d consistent; want them all consistent", scans[false], scans[true])
	}
}

// TestFollowEveryPair copies a live table of every layout into every other
// layout while a mutator changes it (tree edits with moves, raw puts,
// updates and deletes), from before the copy starts to after it ends: once
// the mutator stops and the follower goes idle, the destination holds
// exactly the items its layout wants for the mutator's final forest, and
// the follower's own verification says so.
func TestFollowEveryPair(t *testing.T) {
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	names := layouts.Names()
	k := 0
	for _, from := range names {
		for _, to := range names {
			if from == to {
				continue
			}
			k++
			seed := uint64(k)
			for _, ooc := range []bool{false, true} {
				name := from + "-to-" + to
				if ooc {
					if k%2 == 1 {
						continue // out of core, half the pairs: every layout both ways
					}
					name += "-out-of-core"
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					r := rand.New(rand.NewPCG(seed, 17))
					lf, err := layouts.New(from, layouts.Options{})
					if err != nil {
						t.Fatal(err)
					}
					lt, err := layouts.New(to, layouts.Options{})
					if err != nil {
						t.Fatal(err)
					}
					src := newLiveSource(t, client, lf, r, 12)
					dest := ddblocal.TableName(t)
					t.Cleanup(func() { dropTable(t, client, dest) })
					log := &syncBuffer{}
					opts := followOptions(t, client, src, lt, dest, log)
					if ooc {
						followOutOfCore(t)(&opts)
					}

					ctx, stop := context.WithCancel(context.Background())
					defer stop()
					mutated := make(chan error, 1)
					changed := make(chan struct{}) // closed after A's first change
					// The follow does not end idle before the mutator is
					// done, however long one of its changes takes.
					var done atomic.Bool
					opts.Follow.writing = func() bool { return !done.Load() }
					go func() {
						defer done.Store(true)
						// From before the copy until a second into the follow,
						// however slow the machine.
						mr := rand.New(rand.NewPCG(seed, 99))
						told := false // changed is closed (never reassigned: the test reads it)
						var deadline time.Time
						for ctx.Err() == nil && (deadline.IsZero() || time.Now().Before(deadline)) {
							if deadline.IsZero() && strings.Contains(log.String(), "following the stream") {
								deadline = time.Now().Add(time.Second)
							}
							err := src.mutate(ctx, mr)
							if !told {
								close(changed)
								told = true
							}
							if err != nil {
								mutated <- err
								return
							}
							time.Sleep(time.Duration(mr.IntN(60)) * time.Millisecond)
						}
						mutated <- nil
					}()
					<-changed // the copy starts while A changes
					res, err := Migrate(ctx, opts)
					stop() // ends a mutator that a failed Migrate left running
					merr := <-mutated
					if err != nil {
						t.Fatalf("%v (mutator: %v)\n%s", err, merr, log)
					}
					if merr != nil {
						t.Fatalf("mutator: %v", merr)
					}
					if res.Follow.Records == 0 {
						t.Errorf("no stream record was applied:\n%s", log)
					}
					if !res.Exact() {
						t.Errorf("the follower's verification: %d puts, %d deletes to go\n%s", res.Verify.Total.Puts, res.Verify.Total.Deletes, log)
					}
					got, want := tableItems(t, client, dest, lt.Table()), src.want(t, lt)
					if p, d := itemDiff(got, want); len(p)+len(d) > 0 {
						var detail string
						for _, k := range append(p, d...) {
							detail += fmt.Sprintf("%q:\n  holds %s\n  wants %s\n", k, got[k], want[k])
						}
						t.Errorf("the destination differs from the layout of the final forest: %d keys to put, %d to delete\n%s%s", len(p), len(d), detail, log)
					}
					if copied := strings.Contains(log.String(), "out of core"); copied != ooc {
						t.Errorf("the copy ran out of core: %v, want %v\n%s", copied, ooc, log)
					}
				})
			}
		}
	}
}

// TestFollowHoldsInvalidTrees: a record that leaves A outside a valid tree
// (a node whose parent does not exist, two nodes each other's parent) is
// reported with its sequence number and key, B keeps its last valid state
// for that subtree, and once A is valid again B follows it exactly.
func TestFollowHoldsInvalidTrees(t *testing.T) { bothWays(t, followHoldsInvalidTrees) }

func followHoldsInvalidTrees(t *testing.T, adjust func(*MigrateOptions)) {
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	lf, _ := layouts.New(layouts.AdjacencyName, layouts.Options{})
	lt, _ := layouts.New(layouts.PathName, layouts.Options{})
	r := rand.New(rand.NewPCG(3, 3))
	src := newLiveSource(t, client, lf, r, 6)
	var res *MigrateResult
	dest, log, done := startFollow(t, client, src, lt, 4*time.Second, &res, adjust)
	before := tableItems(t, client, dest, lt.Table())

	put := func(id, parent string) {
		t.Helper()
		item := layouts.Item{"Id": s(id), "size": n("1")}
		if parent != "" {
			item["ParentId"] = s(parent)
		}
		src.put(t, item)
	}
	// An orphan: its parent does not exist.
	put("orphan", "nowhere")
	// A cycle: two new nodes, each the other's parent.
	put("cyc1", "cyc2")
	put("cyc2", "cyc1")
	waitForRound(t, log, "its own ancestor")
	if got := tableItems(t, client, dest, lt.Table()); !maps.Equal(got, before) {
		t.Errorf("B changed while A was not a valid tree: %d items, had %d", len(got), len(before))
	}
	text := log.String()
	for _, want := range []string{`A is not a valid tree at record`, `the parent of node "orphan", "nowhere", does not exist`, `its own ancestor`, `key Id=`} {
		if !strings.Contains(text, want) {
			t.Errorf("the log does not say %q:\n%s", want, text)
		}
	}
	// A valid again: the parent arrives, the cycle is broken.
	put("nowhere", "")
	put("cyc1", "")
	followEnded(t, done, log)
	if !res.Exact() || res.Follow.Held != 0 || res.Follow.Invalid < 2 {
		t.Errorf("after A was valid again: exact %v, %d held, %d reported\n%s", res.Exact(), res.Follow.Held, res.Follow.Invalid, log)
	}
	got := tableItems(t, client, dest, lt.Table())
	if len(got) != len(before)+4 {
		t.Errorf("B holds %d items, want the %d of before and the 4 new nodes", len(got), len(before))
	}
}

// TestFollowReportsTheRemoval: a node removed from A while its children
// still name it leaves A without a valid tree there; the report names the
// REMOVE record that did it, for the removed node and for its children (it
// said "at the copy" before: the children's items came from the copy, and
// the removed node has no item left). A valid again, B is exact.
func TestFollowReportsTheRemoval(t *testing.T) {
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	lf, _ := layouts.New(layouts.AdjacencyName, layouts.Options{})
	lt, _ := layouts.New(layouts.ClosureName, layouts.Options{})
	r := rand.New(rand.NewPCG(4, 4))
	src := newLiveSource(t, client, lf, r, 12)
	parent := src.first(t, "a node with children", func(id string) bool { return len(src.f.children(id)) > 0 })
	items := src.items(parent)
	var res *MigrateResult
	_, log, done := startFollow(t, client, src, lt, 3*time.Second, &res)
	key := keyItem(lf.Table(), items[0])
	if _, err := client.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: &src.table, Key: key}); err != nil {
		t.Fatal(err)
	}
	waitForRound(t, log, "was removed while")
	// A valid again: the node is back.
	src.put(t, items[0])
	followEnded(t, done, log)
	var reports []string
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, "A is not a valid tree at") {
			reports = append(reports, line)
		}
	}
	if len(reports) < 2 {
		t.Errorf("%d reports, want one for the removed node and one for each child:\n%s", len(reports), log)
	}
	removal := fmt.Sprintf("REMOVE, key Id=%q)", parent)
	for _, line := range reports {
		if !strings.Contains(line, removal) {
			t.Errorf("the report does not name the record that removed %q (%s):\n%s", parent, removal, line)
		}
	}
	if !res.Exact() || res.Follow.Held != 0 {
		t.Errorf("after A was valid again: exact %v, %d held\n%s", res.Exact(), res.Follow.Held, log)
	}
}

// TestFollowKeepsMaxWCU: the follow's writes keep to --max-wcu across its
// rounds (SPEC §5: one shared rate limiter, capped at --max-wcu). A round
// writes one poll's changes; before, each round made a new limiter, whose
// first batch went out at once, so a stream of small changes was written at
// the pace of the changes, however low the cap (30 rounds of 2 WCU at a cap
// of 20 WCU/s took 0.1 s, not 3).
func TestFollowKeepsMaxWCU(t *testing.T) {
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	lt, _ := layouts.New(layouts.PathName, layouts.Options{})
	dest := ddblocal.NewTable(t, client, lt.Table())
	const maxWCU, rounds = 20, 30
	f := &follower{opts: MigrateOptions{ApplyOptions: ApplyOptions{Target: Target{Client: client, Table: dest, Layout: lt}, WriteOptions: ddbwrite.WriteOptions{MaxWCU: maxWCU}}},
		log: io.Discard, res: &FollowResult{}}
	wcu := 0
	started := time.Now()
	for i := range rounds {
		// One root: its item in the table and in ByPath, 2 WCU.
		n := transform.Node{Record: transform.Record{ID: fmt.Sprintf("n%d", i), Attrs: transform.Attrs{"v": s("x")}}, Path: []string{fmt.Sprintf("n%d", i)}}
		var ops []Op
		if err := lt.Items(&n, func(it layouts.Item) {
			ops = append(ops, Op{Kind: Put, Item: it})
			wcu += transform.WCU(transform.ItemSize(it)) * (1 + layouts.IndexesOf(lt.Table(), it))
		}); err != nil {
			t.Fatal(err)
		}
		if err := f.write(context.Background(), ops); err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(started)
	// The last round's units are paid for by the writes after it.
	least := time.Duration(float64(wcu-wcu/rounds)/maxWCU*float64(time.Second)) - 100*time.Millisecond
	if took < least {
		t.Errorf("%d rounds wrote %d WCU in %s: over --max-wcu %d, which allows them in no less than %s",
			rounds, wcu, took.Round(time.Millisecond), maxWCU, least.Round(time.Millisecond))
	}
}

// TestFollowStreamReplaced: A's stream is disabled and a new one enabled
// while the follower runs. The old stream gets no more records; the
// follower says so and copies A again from the new stream, so B still
// follows A. Before, it read the old stream's closed shard to its end and
// then followed nothing ("0 records applied, lag 0s"), the new node never
// reaching B.
func TestFollowStreamReplaced(t *testing.T) {
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	lf, _ := layouts.New(layouts.AdjacencyName, layouts.Options{})
	lt, _ := layouts.New(layouts.PathName, layouts.Options{})
	r := rand.New(rand.NewPCG(8, 8))
	src := newLiveSource(t, client, lf, r, 6)
	var res *MigrateResult
	dest, log, done := startFollow(t, client, src, lt, 8*time.Second, &res)
	for _, on := range []bool{false, true} {
		spec := &types.StreamSpecification{StreamEnabled: aws.Bool(on)}
		if on {
			spec.StreamViewType = types.StreamViewTypeNewAndOldImages
		}
		if _, err := client.UpdateTable(context.Background(), &dynamodb.UpdateTableInput{TableName: &src.table, StreamSpecification: spec}); err != nil {
			t.Fatal(err)
		}
	}
	// A new node, in the new stream only.
	src.put(t, layouts.Item{"Id": s("new"), "size": n("1")})
	src.mu.Lock()
	src.f.parent["new"], src.f.attrs["new"] = "", transform.Attrs{"size": n("1")}
	src.mu.Unlock()
	followEnded(t, done, log)
	if !strings.Contains(log.String(), "was disabled") || res.Follow.Backfills != 2 {
		t.Errorf("the follower does not say the stream was disabled, or did not copy A again (%d copies):\n%s", res.Follow.Backfills, log)
	}
	if !res.Exact() {
		t.Errorf("B is not exact after the stream was replaced\n%s", log)
	}
	if p, d := itemDiff(tableItems(t, client, dest, lt.Table()), src.want(t, lt)); len(p)+len(d) > 0 {
		t.Errorf("B differs from A's forest: %d to put, %d to delete\n%s", len(p), len(d), log)
	}
}

// TestFollowHoldsUnparsableItems: a node's item in A rewritten so that it
// no longer reads as a node of A's layout (a path item whose Depth says
// root while it has a parent) leaves A without a valid tree there: it is
// reported, B keeps the node as it was, and once the item is right again B
// follows A exactly. Before, the follower took the node as gone and deleted
// it from B (a leaf; a node with children was held, as "removed").
func TestFollowHoldsUnparsableItems(t *testing.T) {
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	lf, _ := layouts.New(layouts.PathName, layouts.Options{})
	lt, _ := layouts.New(layouts.AdjacencyName, layouts.Options{})
	r := rand.New(rand.NewPCG(3, 3))
	src := newLiveSource(t, client, lf, r, 8)
	node := src.leaf(t)
	var res *MigrateResult
	dest, log, done := startFollow(t, client, src, lt, 3*time.Second, &res)
	before := tableItems(t, client, dest, lt.Table())
	good := src.items(node)[0]
	bad := maps.Clone(good)
	bad["Depth"] = n("0")
	src.put(t, bad)
	waitForRound(t, log, "does not fit")
	if got := tableItems(t, client, dest, lt.Table()); !maps.Equal(got, before) {
		p, d := itemDiff(before, got)
		t.Errorf("B changed while node %q's item in A did not fit the layout: %d keys put, %d deleted\n%s", node, len(p), len(d), log)
	}
	if !strings.Contains(log.String(), fmt.Sprintf("keeps the last valid state of node %q", node)) {
		t.Errorf("the log does not say B keeps node %q:\n%s", node, log)
	}
	src.put(t, good)
	followEnded(t, done, log)
	if !res.Exact() || res.Follow.Held != 0 {
		t.Errorf("after the item was right again: exact %v, %d held\n%s", res.Exact(), res.Follow.Held, log)
	}
}

// TestFollowIdleWithUnparsableItem: the follower goes idle while a node's
// item in A does not read as a node of A's layout: the verification's
// answer is that B is not exact (SourceInvalid), with the item named in the
// log, not an error; before, the verify's read of A failed with the
// layout's error, which the command line maps to exit 2 ("nothing was
// written") instead of 1.
func TestFollowIdleWithUnparsableItem(t *testing.T) {
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	lf, _ := layouts.New(layouts.PathName, layouts.Options{})
	lt, _ := layouts.New(layouts.AdjacencyName, layouts.Options{})
	r := rand.New(rand.NewPCG(3, 3))
	src := newLiveSource(t, client, lf, r, 8)
	leaf := src.leaf(t)
	var res *MigrateResult
	_, log, done := startFollow(t, client, src, lt, 2*time.Second, &res)
	bad := src.items(leaf)[0]
	bad["Depth"] = n("0")
	src.put(t, bad)
	err := <-done
	if err != nil || res == nil || res.Follow == nil {
		t.Fatalf("the follow ended with %v, want the verification's answer\n%s", err, log)
	}
	if !res.Follow.SourceInvalid || res.Exact() || res.Follow.Held != 1 {
		t.Errorf("source invalid %v, exact %v, %d held; want true, false, 1\n%s", res.Follow.SourceInvalid, res.Exact(), res.Follow.Held, log)
	}
	if text := log.String(); !strings.Contains(text, "verifying: ") || !strings.Contains(text, fmt.Sprintf("item Id=%q", leaf)) {
		t.Errorf("the log does not name the item that does not fit:\n%s", text)
	}
}

// TestFollowMemoryOfDeepTrees: what the follower keeps of B's nodes grows
// with the nodes, not with the sum of their depths. Before, every node held
// its path as a []string: 4,000 nodes about 1,000 deep took 17 KB a node
// (16 bytes an ancestor), where a shallow tree takes under 2 KB.
func TestFollowMemoryOfDeepTrees(t *testing.T) {
	lf, _ := layouts.New(layouts.AdjacencyName, layouts.Options{})
	const nodes = 4000
	r := rand.New(rand.NewPCG(1, 1))
	f := &tree{parent: map[string]string{}, attrs: map[string]transform.Attrs{}}
	var ids []string
	for i := range nodes {
		id := fmt.Sprintf("n%05d", i)
		if i > 0 {
			f.parent[id] = ids[max(0, i-1-r.IntN(3))] // a chain, nearly
		} else {
			f.parent[id] = ""
		}
		f.attrs[id] = transform.Attrs{"v": s("x")}
		ids = append(ids, id)
	}
	in := readSnapshot(t, snapshotOf(t, r, f, nil).Path, lf, nil)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	fo := &follower{opts: MigrateOptions{FromLayout: lf}, log: io.Discard, res: &FollowResult{}}
	if err := fo.seed(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	held := int64(heap()) - int64(before)
	runtime.KeepAlive(fo)
	depth := 0
	for _, id := range ids {
		depth += fo.applied.Path(id).Depth()
	}
	t.Logf("%d nodes, mean depth %d: the follower holds %d bytes a node", nodes, depth/nodes, held/nodes)
	if held/nodes > 4000 {
		t.Errorf("%d nodes, mean depth %d: the follower holds %d bytes a node, want under 4000", nodes, depth/nodes, held/nodes)
	}
	// The paths are the nodes' paths.
	for _, id := range []string{ids[0], ids[nodes/2], ids[nodes-1]} {
		var want []string
		for p := id; p != ""; p = f.parent[p] {
			want = append([]string{p}, want...)
		}
		if got := fo.applied.Path(id).IDs(); !slices.Equal(got, want) {
			t.Errorf("the path of %s: %d ids, want %d", id, len(got), len(want))
		}
	}
}

// TestFollowHoldsWhatBCannotHold: a change of A after which B's layout
// cannot hold a node (its Path over the 1,024 bytes of the ByPath index's
// sort key) is reported with the record, the node is held (B keeps its
// last state, here none) and the follow goes on; once A changes there, B
// follows it exactly. Before, the follower stopped with an error naming
// the node only, and stopped again at each rerun.
func TestFollowHoldsWhatBCannotHold(t *testing.T) {
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	lf, _ := layouts.New(layouts.AdjacencyName, layouts.Options{})
	lt, _ := layouts.New(layouts.PathName, layouts.Options{})
	r := rand.New(rand.NewPCG(3, 3))
	src := newLiveSource(t, client, lf, r, 6)
	var res *MigrateResult
	dest, log, done := startFollow(t, client, src, lt, 3*time.Second, &res)
	long := strings.Repeat("L", 600)
	// A root with a long id (B holds it), and a child whose Path is too
	// long for B.
	src.put(t, layouts.Item{"Id": s(long + "1"), "size": n("1")})
	src.put(t, layouts.Item{"Id": s(long + "2"), "ParentId": s(long + "1"), "size": n("1")})
	waitFor(t, log, "cannot hold", 30*time.Second)
	select {
	case err := <-done:
		t.Fatalf("the follow ended: %v\n%s", err, log)
	case <-time.After(500 * time.Millisecond):
	}
	if !strings.Contains(log.String(), fmt.Sprintf("INSERT, key Id=%q)", long+"2")) {
		t.Errorf("the report does not name the record of the node B cannot hold:\n%s", log)
	}
	// A changes there: the child becomes a root of its own.
	src.put(t, layouts.Item{"Id": s(long + "2"), "size": n("1")})
	src.mu.Lock()
	src.f.parent[long+"1"], src.f.attrs[long+"1"] = "", transform.Attrs{"size": n("1")}
	src.f.parent[long+"2"], src.f.attrs[long+"2"] = "", transform.Attrs{"size": n("1")}
	src.mu.Unlock()
	followEnded(t, done, log)
	if !res.Exact() || res.Follow.Held != 0 {
		t.Errorf("after A changed there: exact %v, %d held\n%s", res.Exact(), res.Follow.Held, log)
	}
	if p, d := itemDiff(tableItems(t, client, dest, lt.Table()), src.want(t, lt)); len(p)+len(d) > 0 {
		t.Errorf("B differs from A's forest: %d to put, %d to delete\n%s", len(p), len(d), log)
	}
}

// followEnded waits for the follow startFollow started to end, without
// an error.
func followEnded(t *testing.T, done <-chan error, log *syncBuffer) {
	t.Helper()
	if err := <-done; err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
}

func waitFor(t *testing.T, log *syncBuffer, text string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(log.String(), text) {
		if time.Now().After(deadline) {
			t.Fatalf("the log never said %q:\n%s", text, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// keyItem is the key attributes of an item.
func keyItem(spec layouts.TableSpec, it layouts.Item) layouts.Item {
	key := layouts.Item{spec.PK.Name: it[spec.PK.Name]}
	if spec.SK != nil {
		key[spec.SK.Name] = it[spec.SK.Name]
	}
	return key
}

// A checkpoint whose position is past the stream's 24 h retention, or names
// a shard the stream no longer has, is said so and A is copied again from a
// new position; B still ends exact.
func TestFollowLostPosition(t *testing.T) {
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	lf, _ := layouts.New(layouts.PathName, layouts.Options{})
	lt, _ := layouts.New(layouts.PrefixName, layouts.Options{})
	r := rand.New(rand.NewPCG(5, 5))
	src := newLiveSource(t, client, lf, r, 10)
	dest := ddblocal.TableName(t)
	t.Cleanup(func() { dropTable(t, client, dest) })
	log := &syncBuffer{}
	opts := followOptions(t, client, src, lt, dest, log)
	opts.Follow.Idle = time.Second
	if res, err := Migrate(context.Background(), opts); err != nil || !res.Exact() {
		t.Fatalf("first follow: %v\n%s", err, log)
	}
	rewrite := func(edit func(ck *followCheckpoint)) {
		t.Helper()
		b, err := os.ReadFile(opts.Checkpoint)
		if err != nil {
			t.Fatal(err)
		}
		var ck followCheckpoint
		if err := json.Unmarshal(b, &ck); err != nil {
			t.Fatal(err)
		}
		edit(&ck)
		ck.Seal() // a state treeport itself could be in
		b, _ = json.Marshal(ck)
		if err := os.WriteFile(opts.Checkpoint, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name, says string
		edit       func(ck *followCheckpoint)
		backfills  int
	}{
		{"older than the retention", "past the stream's 24 h retention", func(ck *followCheckpoint) { ck.SavedAt = time.Now().Add(-25 * time.Hour) }, 1},
		{"a shard that is gone", "the stream lost the follower's position", func(ck *followCheckpoint) {
			for i := range ck.Position.Shards {
				ck.Position.Shards[i].Shard += "-gone"
			}
		}, 2},
	} {
		rewrite(c.edit)
		if err := src.mutate(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		res, err := Migrate(context.Background(), opts)
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, log)
		}
		if !strings.Contains(log.String(), c.says) || res.Follow.Backfills != c.backfills || !res.Exact() {
			t.Errorf("%s: %d copies (want %d), exact %v; the log should say %q:\n%s", c.name, res.Follow.Backfills, c.backfills, res.Exact(), c.says, log)
		}
		if p, d := itemDiff(tableItems(t, client, dest, lt.Table()), src.want(t, lt)); len(p)+len(d) > 0 {
			t.Errorf("%s: B differs from the final forest: %d to put, %d to delete", c.name, len(p), len(d))
		}
	}
}

// waitForRound waits for a line that says text (30 s at most), then for
// a progress line after it: the follower writes one between two reads of
// the stream, so by then the round that said text is over, its writes (or
// its holding back) done. It replaces a fixed pause before checking that B did not change.
func waitForRound(t *testing.T, log *syncBuffer, text string) {
	t.Helper()
	waitFor(t, log, text, 30*time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, after, ok := strings.Cut(log.String(), text)
		if ok && strings.Contains(after, " applied (") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no progress line after %q in 30 s:\n%s", text, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
