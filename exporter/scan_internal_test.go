package exporter

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

// pagedTable is a ScanAPI over items in memory: segment s of n holds the
// items whose index is s mod n, served pageSize at a time (Limit when the
// request sets one).
type pagedTable struct {
	items    []layouts.Item
	pageSize int
	fail     map[int]error // a segment that fails, with what
	requests atomic.Int64
	// itemBytes, when set, makes each page tell its consumed capacity
	// (eventually consistent: 8 KB a unit, rounded up), and limits
	// records each request's Limit (0: none).
	itemBytes int
	mu        sync.Mutex
	limits    []int32
}

func (p *pagedTable) Scan(ctx context.Context, in *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	p.requests.Add(1)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	seg, segs := 0, 1
	if in.Segment != nil {
		seg, segs = int(*in.Segment), int(*in.TotalSegments)
	}
	if err := p.fail[seg]; err != nil {
		return nil, err
	}
	size := p.pageSize
	if in.Limit != nil {
		size = int(*in.Limit)
	}
	start := 0
	if k, ok := in.ExclusiveStartKey["i"].(*types.AttributeValueMemberN); ok {
		start, _ = strconv.Atoi(k.Value)
		start++
	}
	out := &dynamodb.ScanOutput{}
	i := start
	for ; i < len(p.items) && len(out.Items) < size; i++ {
		if i%segs == seg {
			out.Items = append(out.Items, p.items[i])
		}
	}
	out.Count = int32(len(out.Items))
	out.ScannedCount = out.Count
	if p.itemBytes > 0 {
		units := float64((len(out.Items)*p.itemBytes+8191)/8192) / 1
		out.ConsumedCapacity = &types.ConsumedCapacity{CapacityUnits: &units}
		p.mu.Lock()
		p.limits = append(p.limits, aws.ToInt32(in.Limit))
		p.mu.Unlock()
	}
	if i < len(p.items) {
		out.LastEvaluatedKey = map[string]types.AttributeValue{"i": &types.AttributeValueMemberN{Value: strconv.Itoa(i - 1)}}
	}
	return out, nil
}

func numberedItems(n int) []layouts.Item {
	items := make([]layouts.Item, n)
	for i := range items {
		items[i] = layouts.Item{"n": &types.AttributeValueMemberN{Value: strconv.Itoa(i)}}
	}
	return items
}

func TestScanTable(t *testing.T) {
	errFn := errors.New("fn failed")
	tests := []struct {
		name     string
		items    int
		pageSize int
		segments int
		fail     map[int]error
		fn       func(items []layouts.Item) error // called after the items are counted
		wantErr  error
		// every item once, in chunks of at most scanChunk
		wantAll bool
	}{
		{name: "pages larger than a chunk", items: 3*scanChunk + 17, pageSize: 2*scanChunk + 5, segments: 2, wantAll: true},
		{name: "many small pages", items: 1000, pageSize: 7, segments: 5, wantAll: true},
		{name: "one segment", items: 50, pageSize: 1, segments: 1, wantAll: true},
		{name: "more segments than items", items: 3, pageSize: 10, segments: 8, wantAll: true},
		{name: "empty table", items: 0, pageSize: 10, segments: 3, wantAll: true},
		{
			name: "fn fails", items: 5000, pageSize: 10, segments: 4, wantErr: errFn,
			fn: func([]layouts.Item) error { return errFn },
		},
		{
			name: "fn stops early", items: 5000, pageSize: 10, segments: 4,
			fn: func([]layouts.Item) error { return errStop },
		},
		{
			name: "a segment fails", items: 5000, pageSize: 10, segments: 4, wantErr: errFn,
			fail: map[int]error{2: errFn},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := &pagedTable{items: numberedItems(tt.items), pageSize: tt.pageSize, fail: tt.fail}
			r := newReader(readerOptions{MaxRetries: 1})
			var mu sync.Mutex
			seen := make([]int, tt.items)
			var pages atomic.Int64
			err := scanTable(context.Background(), table, r, "t", ScanOptions{
				Segments: tt.segments,
				OnPage:   func(Stats) { pages.Add(1) },
			}, nil, func(items []layouts.Item) error {
				if len(items) == 0 || len(items) > scanChunk {
					return fmt.Errorf("a chunk of %d items", len(items))
				}
				mu.Lock()
				for _, it := range items {
					n, _ := strconv.Atoi(it["n"].(*types.AttributeValueMemberN).Value)
					seen[n]++
				}
				mu.Unlock()
				if tt.fn != nil {
					return tt.fn(items)
				}
				return nil
			})
			if !errors.Is(err, tt.wantErr) || (err != nil) != (tt.wantErr != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantAll {
				for n, c := range seen {
					if c != 1 {
						t.Fatalf("item %d seen %d times", n, c)
					}
				}
				if got := pages.Load(); got != table.requests.Load() {
					t.Errorf("OnPage called %d times for %d requests", got, table.requests.Load())
				}
			}
			if tt.fn != nil && table.requests.Load() > 4*int64(tt.segments)+8 {
				// fn fails on the first chunk: the segments stop within a
				// few pages, rather than reading all 500.
				t.Errorf("%d requests after fn failed on the first chunk", table.requests.Load())
			}
		})
	}
}

// TestScanNodesEncodes: the records scanNodes encodes as it reads are the
// bytes a records.Writer writes for them, in every format that encodes.
func TestScanNodesEncodes(t *testing.T) {
	l, err := layouts.New(layouts.PathName, layouts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var items []layouts.Item
	for i := range 300 {
		n := &transform.Node{Record: transform.Record{ID: fmt.Sprint("n", i), Attrs: transform.Attrs{
			"name": &types.AttributeValueMemberS{Value: fmt.Sprintf("x\"%d", i)},
			"size": &types.AttributeValueMemberN{Value: strconv.Itoa(i * 7)},
		}}, Path: []string{fmt.Sprint("n", i)}}
		if i > 0 {
			n.Parent = "n0"
			n.Depth = 1
			n.Path = []string{"n0", n.ID}
		}
		if err := l.Items(n, func(it layouts.Item) { items = append(items, it) }); err != nil {
			t.Fatal(err)
		}
	}
	table := &pagedTable{items: items, pageSize: 40}
	for _, format := range []string{records.FormatJSON, records.FormatJSONL, records.FormatDDBJSON} {
		t.Run(format, func(t *testing.T) {
			wopts := records.WriterOptions{Format: format, ParentField: "up"}
			held, _, err := scanNodes(context.Background(), table, "t", l, ScanOptions{Segments: 3}, records.EncoderFor(wopts))
			if err != nil {
				t.Fatal(err)
			}
			recs, _, err := Scan(context.Background(), table, "t", l, ScanOptions{Segments: 2})
			if err != nil {
				t.Fatal(err)
			}
			if len(held.encs) != len(recs) || len(held.recs) != 0 {
				t.Fatalf("held %d encoded and %d records, want %d encoded", len(held.encs), len(held.recs), len(recs))
			}
			byID := map[string][]byte{}
			for i, id := range held.ids {
				byID[id] = held.encs[i]
			}
			for _, rec := range recs {
				var one []byte
				enc := records.EncoderFor(wopts)()
				one, err := enc.Encode(one, rec)
				if err != nil {
					t.Fatal(err)
				}
				if string(byID[rec.ID]) != string(one) {
					t.Fatalf("record %s: held %s, want %s", rec.ID, byID[rec.ID], one)
				}
			}
		})
	}
}

// TestForestOrderCheckMatchesWalk: the ForestCheck forestOrder derives from
// its walk is the one the walk over ids (checkForestByID) gives, on random
// records with orphans, cycles and self parents; with duplicate ids it is
// that walk's.
func TestForestOrderCheckMatchesWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for round := range 300 {
		n := 1 + rng.IntN(60)
		ids := make([]string, n)
		parents := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprint("r", i)
			if round%3 == 0 && rng.IntN(10) == 0 {
				ids[i] = fmt.Sprint("r", rng.IntN(i+1)) // a duplicate, now and then
			}
		}
		for i := range parents {
			switch k := rng.IntN(10); {
			case k == 0:
				parents[i] = ""
			case k == 1:
				parents[i] = "gone" + strconv.Itoa(i) // an orphan
			default:
				parents[i] = ids[rng.IntN(n)] // may close a cycle
			}
		}
		order, got := forestOrder(ids, parents)
		want := checkForestByID(ids, parents)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("round %d: ids %q parents %q:\ngot  %+v\nwant %+v", round, ids, parents, got, want)
		}
		sorted := slices.Clone(order)
		slices.Sort(sorted)
		for i, k := range sorted {
			if int(k) != i {
				t.Fatalf("round %d: the order is not a permutation: %v", round, order)
			}
		}
	}
}

var _ ScanAPI = (*pagedTable)(nil)

// TestScanPagesInMemory: with ScanOptions.Memory, each request's Limit
// keeps a page, decoded, within its share of the budget, learnt from the
// pages' consumed capacity; without it, or with a budget 1 MB pages fit
// in, there is no Limit. Every item is read once either way.
func TestScanPagesInMemory(t *testing.T) {
	const items, itemBytes, segments = 40_000, 400, 4
	for _, tc := range []struct {
		name      string
		memory    int64
		wantLimit bool
	}{
		{"no budget", 0, false},
		{"a budget 1 MB pages fit in", 4 << 30, false},
		{"a small budget", 4 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := &pagedTable{items: numberedItems(items), pageSize: 1 << 20 / itemBytes, itemBytes: itemBytes}
			var mu sync.Mutex
			seen := make([]int, items)
			err := scanTable(context.Background(), table, newReader(readerOptions{MaxRetries: 1}), "t",
				ScanOptions{Segments: segments, Memory: tc.memory}, nil, func(batch []layouts.Item) error {
					mu.Lock()
					defer mu.Unlock()
					for _, it := range batch {
						n, _ := strconv.Atoi(it["n"].(*types.AttributeValueMemberN).Value)
						seen[n]++
					}
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
			for n, c := range seen {
				if c != 1 {
					t.Fatalf("item %d seen %d times", n, c)
				}
			}
			workers := min(segments, runtime.GOMAXPROCS(0))
			perPage := tc.memory / int64(segments+3*workers)
			limited := 0
			for k, l := range table.limits {
				if l == 0 {
					continue
				}
				limited++
				// After each segment's first page, the limit comes from
				// the items' size as the pages told it (400 bytes, a bit
				// more with the rounding up of the units).
				if k >= segments && int64(l)*itemBytes*decodedPageFactor > perPage {
					t.Errorf("request %d: Limit %d, a page of %d bytes decoded in %d bytes a page", k, l, int64(l)*itemBytes*decodedPageFactor, perPage)
				}
			}
			if tc.wantLimit != (limited == len(table.limits)) || !tc.wantLimit && limited > 0 {
				t.Errorf("%d of %d requests limited, want all: %v", limited, len(table.limits), tc.wantLimit)
			}
			t.Logf("%d requests, %d limited", len(table.limits), limited)
		})
	}
}
