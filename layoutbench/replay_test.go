package layoutbench

import (
	"context"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/gen"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// replayer sends a layout's documented requests by hand, with the SDK and
// none of treeport's query code, and prices them by DynamoDB's documented
// rules: the consumed capacity DynamoDB Local reports, with every Query
// page that read nothing raised to half a unit, as DynamoDB bills it.
type replayer struct {
	t      *testing.T
	c      *dynamodb.Client
	table  string
	rcu    float64
	shards int
}

func (r *replayer) getItem(key map[string]types.AttributeValue) map[string]types.AttributeValue {
	out, err := r.c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(r.table), Key: key,
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	if err != nil {
		r.t.Fatal(err)
	}
	r.rcu += aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)
	return out.Item
}

func (r *replayer) query(index, cond string, values map[string]types.AttributeValue, names map[string]string, filter string) []map[string]types.AttributeValue {
	in := &dynamodb.QueryInput{TableName: aws.String(r.table), KeyConditionExpression: aws.String(cond),
		ExpressionAttributeValues: values, ExpressionAttributeNames: names, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}
	if index != "" {
		in.IndexName = aws.String(index)
	}
	if filter != "" {
		in.FilterExpression = aws.String(filter)
	}
	var items []map[string]types.AttributeValue
	for {
		out, err := r.c.Query(context.Background(), in)
		if err != nil {
			r.t.Fatal(err)
		}
		// An empty page: DynamoDB bills the minimum, DynamoDB Local 0.
		r.rcu += max(aws.ToFloat64(out.ConsumedCapacity.CapacityUnits), 0.5)
		items = append(items, out.Items...)
		if len(out.LastEvaluatedKey) == 0 {
			return items
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func (r *replayer) batchGet(keys []map[string]types.AttributeValue) []map[string]types.AttributeValue {
	var items []map[string]types.AttributeValue
	for len(keys) > 0 {
		n := min(len(keys), 100)
		req := map[string]types.KeysAndAttributes{r.table: {Keys: keys[:n]}}
		keys = keys[n:]
		for len(req) > 0 {
			out, err := r.c.BatchGetItem(context.Background(), &dynamodb.BatchGetItemInput{RequestItems: req, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
			if err != nil {
				r.t.Fatal(err)
			}
			for _, cc := range out.ConsumedCapacity {
				r.rcu += aws.ToFloat64(cc.CapacityUnits)
			}
			items = append(items, out.Responses[r.table]...)
			req = out.UnprocessedKeys
		}
	}
	return items
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func n(v int) types.AttributeValue { return &types.AttributeValueMemberN{Value: strconv.Itoa(v)} }

func str(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// replay prices one query about node id (its path from the root) on a
// table of the named layout, by the requests the README documents for it,
// given the id of a node known to be there.
func (r *replayer) replay(layout, kind, id string, path []string) float64 {
	r.rcu = 0
	band := 0 // 0: no bound
	if kind == KindDepth2 {
		band = 2
	}
	switch layout {
	case layouts.PathName, layouts.ShardedName:
		switch kind {
		case KindGet:
			r.getItem(map[string]types.AttributeValue{"Id": s(id)})
		case KindChildren:
			r.query("ByParent", "ParentId = :p", map[string]types.AttributeValue{":p": s(id)}, nil, "")
		case KindDescendants, KindDepth2:
			self := r.getItem(map[string]types.AttributeValue{"Id": s(id)}) // its Path
			p := str(self, "Path")
			root := strings.Split(p, "|")[0]
			depth := len(strings.Split(p, "|")) - 1
			trees := []string{root}
			if layout == layouts.ShardedName {
				trees = nil
				for k := 1; k <= r.shards; k++ {
					trees = append(trees, layouts.GraphID(root, k))
				}
			}
			key := "TreeId"
			if layout == layouts.ShardedName {
				key = "GraphId"
			}
			for _, tr := range trees {
				vals := map[string]types.AttributeValue{":t": s(tr), ":p": s(p + "|")}
				filter := ""
				names := map[string]string{"#t": key, "#p": "Path"}
				if band > 0 {
					filter = "#d BETWEEN :lo AND :hi"
					vals[":lo"], vals[":hi"] = n(depth+1), n(depth+band)
					names["#d"] = "Depth"
				}
				r.query("ByPath", "#t = :t AND begins_with(#p, :p)", vals, names, filter)
			}
		case KindAncestors:
			self := r.getItem(map[string]types.AttributeValue{"Id": s(id)})
			ids := strings.Split(str(self, "Path"), "|")
			var keys []map[string]types.AttributeValue
			for _, a := range ids[:len(ids)-1] {
				keys = append(keys, map[string]types.AttributeValue{"Id": s(a)})
			}
			r.batchGet(keys)
		}
	case layouts.ClosureName:
		byAnc := func(cond string, vals map[string]types.AttributeValue) {
			vals[":x"] = s(id)
			r.query("ByAncestor", "AncestorId = :x AND "+cond, vals, map[string]string{"#r": "RelativeDepth"}, "")
		}
		switch kind {
		case KindGet:
			r.getItem(map[string]types.AttributeValue{"Id": s(id), "RelativeDepth": n(0)})
		case KindChildren:
			byAnc("#r = :one", map[string]types.AttributeValue{":one": n(1)})
		case KindDescendants:
			byAnc("#r > :zero", map[string]types.AttributeValue{":zero": n(0)})
		case KindDepth2:
			byAnc("#r BETWEEN :one AND :two", map[string]types.AttributeValue{":one": n(1), ":two": n(2)})
		case KindAncestors:
			rows := r.query("", "Id = :x AND RelativeDepth > :zero", map[string]types.AttributeValue{":x": s(id), ":zero": n(0)}, nil, "")
			var keys []map[string]types.AttributeValue
			for _, row := range rows {
				keys = append(keys, map[string]types.AttributeValue{"Id": s(str(row, "AncestorId")), "RelativeDepth": n(0)})
			}
			r.batchGet(keys)
		}
	case layouts.PrefixName:
		const d = "¦"
		keyOf := func(ids []string) string { return d + strings.Join(ids, d) }
		object := func(ids []string) map[string]types.AttributeValue {
			return map[string]types.AttributeValue{"Key": s(keyOf(ids)), "Child": s(d)}
		}
		// Given the id, the path is learnt first, by the read of the
		// node's item, the price path pays for its own.
		r.getItem(object(path))
		switch kind {
		case KindChildren, KindDescendants, KindDepth2:
			levels := 1
			if kind == KindDescendants {
				levels = math.MaxInt
			} else if kind == KindDepth2 {
				levels = 2
			}
			level := [][]string{path}
			var want []map[string]types.AttributeValue
			for rd := 1; rd <= levels && len(level) > 0; rd++ {
				var next [][]string
				for _, p := range level {
					for _, row := range r.query("", "#k = :k", map[string]types.AttributeValue{":k": s(keyOf(p) + d)}, map[string]string{"#k": "Key"}, "") {
						c := append(append([]string{}, p...), str(row, "Child"))
						next = append(next, c)
						want = append(want, object(c))
					}
				}
				level = next
			}
			r.batchGet(want)
		case KindAncestors:
			var keys []map[string]types.AttributeValue
			for k := 1; k < len(path); k++ {
				keys = append(keys, object(path[:k]))
			}
			r.batchGet(keys)
		}
	case layouts.AdjacencyName:
		switch kind {
		case KindGet:
			r.getItem(map[string]types.AttributeValue{"Id": s(id)})
		case KindChildren, KindDescendants, KindDepth2:
			levels := map[string]int{KindChildren: 1, KindDepth2: 2, KindDescendants: math.MaxInt}[kind]
			level := []string{id}
			for rd := 1; rd <= levels && len(level) > 0; rd++ {
				var next []string
				for _, p := range level {
					for _, it := range r.query("ByParent", "ParentId = :p", map[string]types.AttributeValue{":p": s(p)}, nil, "") {
						next = append(next, str(it, "Id"))
					}
				}
				level = next
			}
		case KindAncestors:
			for cur := id; cur != ""; {
				cur = str(r.getItem(map[string]types.AttributeValue{"Id": s(cur)}), "ParentId")
			}
		}
	default:
		r.t.Fatalf("no documented requests for %s", layout)
	}
	return r.rcu
}

// TestBenchIsTheDocumentedPrice is the test: for a sample of nodes
// of two datasets (folders, and a generated 3,000-node tree), every
// layout's documented requests are replayed by hand against the tables
// bench loaded, with ReturnConsumedCapacity, priced by DynamoDB's
// documented rules (an empty Query at 0.5 RCU), and bench's figures, online
// and offline, are held to them within 1% per layout and query kind.
func TestBenchIsTheDocumentedPrice(t *testing.T) {
	ep := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, ep)
	generated := genInput(t, gen.Options{Nodes: 3000, Shape: gen.ShapeRandom, Seed: 5})
	for _, name := range []string{"folders", generated} {
		short := strings.TrimSuffix(filepath.Base(name), ".jsonl")
		t.Run(short, func(t *testing.T) {
			got := map[string]map[string]float64{} // layout/kind → Σ bench's RCU
			var ids []string
			seen := map[string]bool{}
			opts := Options{Layouts: allLayouts(t), Client: client, Endpoint: ep, TablePrefix: "tr-" + short + "-" + randomSuffix(),
				Sample: 15, Seed: 9, KeepTables: true,
				trace: func(layout, id, kind string, _, c cost) {
					k := layout + "/" + kind
					if got[k] == nil {
						got[k] = map[string]float64{}
					}
					got[k][id] = c.rcu
					if !seen[id] {
						seen[id] = true
						ids = append(ids, id)
					}
				}}
			rep, err := Run(context.Background(), readDataset(t, name), opts)
			if err != nil {
				t.Fatal(err)
			}
			in := readDataset(t, name)
			f := in.Forest
			defer func() {
				for _, r := range rep.Layouts {
					client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(r.Table)})
				}
			}()
			off := offline(t, readDataset(t, name), Options{Sample: 15, Seed: 9})
			weights := sampleOf(t, off, f, ids)
			for li, res := range rep.Layouts {
				rp := &replayer{t: t, c: client, table: res.Table, shards: layouts.DefaultShards}
				for _, kind := range Kinds {
					var want, online, wmean, wsum float64
					for k, id := range ids {
						w := rp.replay(res.Layout, kind, id, f.AppendPath(nil, f.Lookup(id)))
						g := got[res.Layout+"/"+kind][id]
						want += w
						online += g
						wmean += weights[k] * w
						wsum += weights[k]
						if math.Abs(g-w) > 1e-9 {
							t.Logf("%s %s of %q: bench %v RCU, the documented requests %v", res.Layout, kind, id, g, w)
						}
					}
					if math.Abs(online-want) > 0.01*want {
						t.Errorf("%s %s: bench (online) %v RCU over the sample, the documented requests %v", res.Layout, kind, online, want)
					}
					// Offline, the report's mean, each node weighed by the
					// nodes it stands for, against the replay's weighed alike.
					wmean /= wsum
					if o := off.Layouts[li].query(kind).RCU.Mean; math.Abs(o-wmean) > 0.01*wmean+1e-4 {
						t.Errorf("%s %s: bench (offline) %v RCU a query, the documented requests %v", res.Layout, kind, o, wmean)
					}
				}
			}
		})
	}
}

// sampleOf returns each sampled node's weight (the nodes of its depth band
// it stands for), in the order of ids, from the report's strata.
func sampleOf(t *testing.T, rep *Report, f interface {
	Depth(int) int
	Lookup(string) int
}, ids []string) []float64 {
	t.Helper()
	w := make([]float64, len(ids))
	for k, id := range ids {
		d := f.Depth(f.Lookup(id))
		for _, st := range rep.Sample.Strata {
			if d >= st.MinDepth && d <= st.MaxDepth && st.Sampled > 0 {
				w[k] = float64(st.Population) / float64(st.Sampled)
			}
		}
		if w[k] == 0 {
			t.Fatalf("no stratum holds %q (depth %d)", id, d)
		}
	}
	if len(ids) != rep.Sample.Nodes {
		t.Fatalf("%d nodes traced, the report samples %d", len(ids), rep.Sample.Nodes)
	}
	return w
}
