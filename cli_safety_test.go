package main

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/testserver/faultproxy"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/layouts/layoutstest"
	"github.com/treeport/treeport/models"
)

// Issue 24, part A: never destroy what you cannot read. The tables here
// are built by hand (raw PutItem of the design's own rows), and the tests
// look at them byte for byte.

const (
	s3PrefixModel = "testdata/safety/s3-prefix-untyped.json"
	storesModel   = "testdata/safety/stores-tree-untyped.json"
)

// s3Objects is an S3 inventory of n objects, as a table keyed bucket/key
// holds it.
func s3Objects(n int) []layouts.Item {
	var items []layouts.Item
	for i := range n {
		items = append(items, layouts.Item{
			"bucket": s("photos-prod"), "key": s(fmt.Sprintf("2024/%02d/img%03d.jpg", i%12+1, i)),
			"size": &types.AttributeValueMemberN{Value: fmt.Sprint(1000 + 37*i)}, "etag": s(fmt.Sprintf("\"%08x\"", i*2654435761)),
			"storage_class": s("STANDARD"),
		})
	}
	return items
}

func s3Table() handModel {
	return handModel{create: func(name string) *dynamodb.CreateTableInput {
		return &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
			AttributeDefinitions: defs("bucket", "key"), KeySchema: keySchema("bucket", "key")}
	}}
}

// stores are Alex DeBrie's store locations: table key StoreNumber, GSI
// StoreLocationIndex on Country and StateCityPostcode.
func stores(n int) []layouts.Item {
	cities := []string{"WA#SEATTLE#98101", "WA#SPOKANE#99201", "OR#PORTLAND#97201", "CA#OAKLAND#94607", "NY#BROOKLYN#11201"}
	var items []layouts.Item
	for i := range n {
		items = append(items, layouts.Item{
			"StoreNumber": s(fmt.Sprint(1001 + i)), "Country": s("USA"), "StateCityPostcode": s(cities[i%len(cities)]),
			"Address": s(fmt.Sprintf("%d Pine St", 100+i)), "Phone": s(fmt.Sprintf("206-555-%04d", i)),
		})
	}
	return items
}

func storesTable() handModel {
	return handModel{create: func(name string) *dynamodb.CreateTableInput {
		return &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
			AttributeDefinitions: defs("StoreNumber", "Country", "StateCityPostcode"), KeySchema: keySchema("StoreNumber", ""),
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{gsi("StoreLocationIndex", "Country", "StateCityPostcode", types.ProjectionTypeAll)}}
	}}
}

// writeText writes a file in dir and returns its path.
func writeText(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// contains fails unless every item's line is in the table's lines.
func containsAll(t *testing.T, what string, lines []string, items []layouts.Item) {
	t.Helper()
	have := map[string]bool{}
	for _, l := range lines {
		have[l] = true
	}
	missing := 0
	for _, l := range itemLines(items) {
		if !have[l] {
			if missing < 3 {
				t.Errorf("%s: the table lost or changed %s", what, l)
			}
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%s: %d of %d items lost or changed", what, missing, len(items))
	}
}

// The S3 inventory: a table keyed bucket/key holding 40 objects, and a
// prefix model with no type field. Before, plan printed "table 0 nodes in
// 40 items" and planned 40 deletes, which the mass-delete guard let
// through, and apply deleted them. Now plan and apply stop (exit 2),
// naming how many and the first keys; with --ignore-unparsable apply
// writes the tree beside them and leaves every object byte for byte.
func TestSafetyS3InventoryUntypedPrefixModel(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	objects := s3Objects(40)
	table := handTable(t, client, s3Table(), objects)
	small := writeText(t, t.TempDir(), "small.csv", "id,parent_id,name\nphotos,,Photos\n2024,photos,Year\njan,2024,January\n")
	common := []string{"--in", small, "--table", table, "--model", s3PrefixModel}

	for _, cmd := range [][]string{{"plan"}, {"apply", "--no-progress"}, {"apply", "--no-progress", "--allow-mass-delete"}} {
		stdout, stderr, code := run(t, env, append(cmd, common...)...)
		if code != 2 || !strings.Contains(stderr, "40 items do not read as nodes") || !strings.Contains(stderr, `"photos-prod"`) ||
			!strings.Contains(stderr, "--ignore-unparsable") || !strings.Contains(stderr, "no type field") {
			t.Fatalf("%s over 40 objects the model cannot read: exit %d, want 2 counting them, naming one and saying what to do:\n%s%s", cmd, code, stdout, stderr)
		}
		sameLines(t, strings.Join(cmd, " ")+" refused", rawLines(t, client, table), objects)
	}

	stdout, stderr, code := run(t, env, append([]string{"plan", "--ignore-unparsable"}, common...)...)
	if code != 0 || !strings.Contains(stdout, "40 items that do not read as nodes (left alone)") || !strings.Contains(stdout, "photos-prod") {
		t.Fatalf("plan --ignore-unparsable: exit %d, want 0 counting the 40 objects and naming one:\n%s%s", code, stdout, stderr)
	}
	if strings.Contains(stdout, "WARNING: the plan removes") {
		t.Errorf("plan --ignore-unparsable plans deletes:\n%s", stdout)
	}
	if stdout, stderr, code := run(t, env, append([]string{"apply", "--no-progress", "--ignore-unparsable"}, common...)...); code != 0 {
		t.Fatalf("apply --ignore-unparsable: exit %d\n%s%s", code, stdout, stderr)
	}
	lines := rawLines(t, client, table)
	containsAll(t, "apply --ignore-unparsable", lines, objects)
	if len(lines) != len(objects)+2*3 {
		t.Fatalf("apply --ignore-unparsable: %d items, want the 40 objects and the tree's 6 rows:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	// The snapshot shrinks to its root: the tree's rows go, the objects
	// stay.
	root := writeText(t, t.TempDir(), "root.csv", "id,parent_id,name\nphotos,,Photos\n")
	if stdout, stderr, code := run(t, env, "apply", "--no-progress", "--ignore-unparsable", "--allow-mass-delete", "--in", root, "--table", table, "--model", s3PrefixModel); code != 0 {
		t.Fatalf("apply of the root alone: exit %d\n%s%s", code, stdout, stderr)
	}
	lines = rawLines(t, client, table)
	containsAll(t, "apply of the root alone", lines, objects)
	if len(lines) != len(objects)+2 {
		t.Fatalf("after the apply of the root alone: %d items, want the 40 objects and the root's 2 rows:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}

// migrate --to-model into a table holding items the model cannot read
// deleted every one of them, exited 0 and printed "verified". Now it
// stops (exit 2) with nothing written; with --ignore-unparsable it copies
// the tree beside them and leaves them byte for byte.
func TestSafetyMigrateIntoTableOfUnreadableItems(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	src := ddblocal.TableName(t)
	dropTableLater(t, client, src)
	small := writeText(t, t.TempDir(), "small.csv", "id,parent_id,name\nphotos,,Photos\n2024,photos,Year\njan,2024,January\nfeb,2024,February\n")
	if stdout, stderr, code := run(t, env, "import", "--in", small, "--layout", "path", "--table", src, "--create-table", "--no-progress"); code != 0 {
		t.Fatalf("import the source: exit %d\n%s%s", code, stdout, stderr)
	}
	objects := s3Objects(40)
	dest := handTable(t, client, s3Table(), objects)
	args := []string{"migrate", "--from-table", src, "--from-layout", "path", "--to-table", dest, "--to-model", s3PrefixModel, "--no-progress"}
	stdout, stderr, code := run(t, env, args...)
	if code != 2 || !strings.Contains(stderr, "40 items do not read as nodes") || !strings.Contains(stderr, "--ignore-unparsable") {
		t.Fatalf("migrate into 40 objects the model cannot read: exit %d, want 2 naming them:\n%s%s", code, stdout, stderr)
	}
	sameLines(t, "migrate refused", rawLines(t, client, dest), objects)
	stdout, stderr, code = run(t, env, append(args, "--ignore-unparsable")...)
	if code != 0 || !strings.Contains(stdout+stderr, "verified") {
		t.Fatalf("migrate --ignore-unparsable: exit %d, want 0 and verified:\n%s%s", code, stdout, stderr)
	}
	lines := rawLines(t, client, dest)
	containsAll(t, "migrate --ignore-unparsable", lines, objects)
	if len(lines) != len(objects)+2*4 {
		t.Fatalf("migrate --ignore-unparsable: %d items, want the 40 objects and the tree's 8 rows", len(lines))
	}
}

// deleteCounter counts the DeleteRequests of the BatchWriteItem calls a
// proxy sees.
func deleteCounter() (func(op string, body []byte), *atomic.Int64) {
	var n atomic.Int64
	return func(op string, body []byte) {
		if op == "BatchWriteItem" {
			n.Add(int64(strings.Count(string(body), `"DeleteRequest"`)))
		}
	}, &n
}

// The store locations: a table of stores (StoreNumber; StoreLocationIndex
// on Country and StateCityPostcode = WA#SEATTLE#98101) that also holds a
// tree of a model without a type field. apply with a snapshot whose new
// node DynamoDB refuses used to send deletes before the puts were
// acknowledged: the run exited 3 with deletes done. Now the stores stop
// it unless --ignore-unparsable, and with it the refused put stops every
// delete: exit 3, no DeleteRequest sent, every store and every node still
// there; the same command rerun (without the fault) goes on from the
// checkpoint and leaves the table exact.
func TestSafetyStoresRefusedPutSendsNoDelete(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	all := stores(20)
	table := handTable(t, client, storesTable(), all)
	dir := t.TempDir()
	v1 := writeText(t, dir, "v1.csv", "id,parent_id,name\nUSA,,United States\nWA,USA,Washington\nSEA,WA,Seattle\nSPO,WA,Spokane\nOR,USA,Oregon\nPDX,OR,Portland\nEUG,OR,Eugene\n")
	if stdout, stderr, code := run(t, awsEnv(endpoint), "import", "--in", v1, "--model", storesModel, "--table", table, "--no-progress"); code != 0 {
		t.Fatalf("import the tree beside the stores: exit %d\n%s%s", code, stdout, stderr)
	}
	before := rawLines(t, client, table)
	// v2: Spokane goes, Portland moves under WA, and Tacoma is new; the
	// proxy refuses Tacoma's put as DynamoDB refuses an item it cannot
	// take.
	v2 := writeText(t, dir, "v2.csv", "id,parent_id,name,poison\nUSA,,United States,\nWA,USA,Washington,\nSEA,WA,Seattle,\nTAC,WA,Tacoma,x\nOR,USA,Oregon,\nPDX,WA,Portland,\nEUG,OR,Eugene,\n")
	count, deletes := deleteCounter()
	proxy, err := faultproxy.New(faultproxy.Config{Target: endpoint, Reject: "poison", OnRequest: count, Lifetime: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	ck := filepath.Join(dir, "ck.json")
	args := []string{"apply", "--in", v2, "--model", storesModel, "--table", table, "--checkpoint", ck, "--no-progress", "--allow-mass-delete"}

	stdout, stderr, code := run(t, awsEnv(proxy.URL()), args...)
	if code != 2 || !strings.Contains(stderr, "do not read as nodes") || !strings.Contains(stderr, `StoreNumber="10`) {
		t.Fatalf("apply over 20 stores the model cannot read: exit %d, want 2 naming stores:\n%s%s", code, stdout, stderr)
	}
	args = append(args, "--ignore-unparsable")
	stdout, stderr, code = run(t, awsEnv(proxy.URL()), args...)
	if code == 0 || proxy.Counts().Rejected == 0 {
		t.Fatalf("apply with a refused put: exit %d (%d batches refused), want non-zero:\n%s%s", code, proxy.Counts().Rejected, stdout, stderr)
	}
	if n := deletes.Load(); n != 0 {
		t.Fatalf("apply sent %d DeleteRequests although a put was refused:\n%s", n, stderr)
	}
	if !strings.Contains(stderr, "no delete was sent") {
		t.Errorf("the error does not say that no delete was sent:\n%s", stderr)
	}
	after := rawLines(t, client, table)
	for _, l := range before {
		if !slices.Contains(after, l) && !strings.Contains(l, "NODE#PDX") {
			t.Errorf("after the refused put the table lost or changed %s", l)
		}
	}
	containsAll(t, "after the refused put", after, all)

	// The rerun, without the fault: from the checkpoint to the end.
	stdout, stderr, code = run(t, awsEnv(endpoint), args...)
	if code != 0 || !strings.Contains(stderr, "resuming from checkpoint") {
		t.Fatalf("rerun: exit %d, want 0 resuming from the checkpoint:\n%s%s", code, stdout, stderr)
	}
	l, err := models.LoadModel(storesModel)
	if err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(all), expectedItems(t, v2, "", l)...)
	sameLines(t, "after the rerun", rawLines(t, client, table), want)
}

// faultTree is a tree of n nodes (N0 the root, Ni under N((i-1)/3)) as
// CSV, with the changes of a second snapshot when v2: three leaves gone,
// N4's subtree moved under N10, N7 renamed, and a new node NX, in the
// middle of the file, carrying mark = x.
func faultTree(n int, v2 bool) string {
	var b strings.Builder
	b.WriteString("id,parent_id,name,mark\n")
	for i := range n {
		id, parent, name := fmt.Sprintf("N%d", i), "", fmt.Sprintf("node %d", i)
		if i > 0 {
			parent = fmt.Sprintf("N%d", (i-1)/3)
		}
		if v2 {
			switch {
			case i >= n-3:
				continue
			case i == 4:
				parent = "N10"
			case i == 7:
				name = "renamed"
			case i == n/2:
				b.WriteString("NX,N2,new,x\n")
			}
		}
		fmt.Fprintf(&b, "%s,%s,%s,\n", id, parent, name)
	}
	return b.String()
}

// keysOf is the set of the table's keys.
func keysOf(t *testing.T, client *dynamodb.Client, table string, spec layouts.TableSpec) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	for _, it := range scanTable(t, client, table) {
		keys[layouts.KeyOf(spec, it)] = true
	}
	return keys
}

// A put that DynamoDB refuses (set aside in --dead-letter) or that fails
// (an error no retry mends), in the middle of an apply and of a migrate
// into a table that holds an older copy, for every layout: no
// DeleteRequest is sent, every key the table held is still there, the run
// exits non-zero; the same command rerun without the fault goes on from
// the checkpoint and leaves the table exact.
func TestSafetyFailedPutStopsDeletesEveryLayout(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	v1 := writeText(t, dir, "v1.csv", faultTree(60, false))
	v2 := writeText(t, dir, "v2.csv", faultTree(60, true))
	// migrate's source: v2 in the path layout.
	src := ddblocal.TableName(t)
	dropTableLater(t, client, src)
	if stdout, stderr, code := run(t, env, "import", "--in", v2, "--layout", "path", "--table", src, "--create-table", "--no-progress"); code != 0 {
		t.Fatalf("import the source: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, name := range []string{"path", "sharded-path", "closure", "prefix", "adjacency"} {
		for _, cmd := range []string{"apply", "migrate"} {
			for _, fault := range []string{"refused", "failed"} {
				t.Run(name+"/"+cmd+"/"+fault, func(t *testing.T) {
					l, err := layouts.New(name, layouts.Options{})
					if err != nil {
						t.Fatal(err)
					}
					table := ddblocal.NewTable(t, client, l.Table())
					if stdout, stderr, code := run(t, env, "import", "--in", v1, "--layout", name, "--table", table, "--no-progress"); code != 0 {
						t.Fatalf("import v1: exit %d\n%s%s", code, stdout, stderr)
					}
					before := keysOf(t, client, table, l.Table())
					count, deletes := deleteCounter()
					cfg := faultproxy.Config{Target: endpoint, OnRequest: count, Lifetime: 5 * time.Minute}
					ck := filepath.Join(t.TempDir(), "ck.json")
					args := []string{"--checkpoint", ck, "--no-progress", "--allow-mass-delete", "--concurrency", "2"}
					if fault == "refused" {
						cfg.Reject = "mark"
						args = append(args, "--dead-letter", filepath.Join(t.TempDir(), "dead.jsonl"))
					} else {
						cfg.FailItem = "mark"
					}
					if cmd == "apply" {
						args = append([]string{"apply", "--in", v2, "--layout", name, "--table", table}, args...)
					} else {
						args = append([]string{"migrate", "--from-table", src, "--from-layout", "path", "--to-table", table, "--to-layout", name}, args...)
					}
					proxy, err := faultproxy.New(cfg)
					if err != nil {
						t.Fatal(err)
					}
					defer proxy.Close()
					stdout, stderr, code := run(t, awsEnv(proxy.URL()), args...)
					if c := proxy.Counts(); code == 0 || c.Rejected+c.Failed == 0 {
						t.Fatalf("%s with a %s put: exit %d (%d refused, %d failed), want non-zero:\n%s%s", cmd, fault, code, c.Rejected, c.Failed, stdout, stderr)
					}
					if n := deletes.Load(); n != 0 {
						t.Fatalf("%s sent %d DeleteRequests after a %s put:\n%s", cmd, n, fault, stderr)
					}
					if !strings.Contains(stderr, "no delete was sent") {
						t.Errorf("the error does not say that no delete was sent:\n%s", stderr)
					}
					after := keysOf(t, client, table, l.Table())
					for k := range before {
						if !after[k] {
							t.Fatalf("after the %s put the table lost the item %s", fault, k)
						}
					}
					stdout, stderr, code = run(t, env, args...)
					if code != 0 || !strings.Contains(stderr, "resuming from checkpoint") {
						t.Fatalf("rerun without the fault: exit %d, want 0 resuming from the checkpoint:\n%s%s", code, stdout, stderr)
					}
					sameLines(t, "after the rerun", rawLines(t, client, table), expectedItems(t, v2, "", l))
				})
			}
		}
	}
}

// The trees of the property test: v1 imported, v2 applied over it, the
// edits made after, v3 migrated into it.
const (
	propV1 = "id,parent_id,name\nCM1,,Roadster\nCM2,CM1,Powertrain\nCM3,CM1,Chassis\nCM4,CM2,Engine\nCM8,CM4,Piston\nCM5,CM3,Frame\nCM6,CM5,Bolt\n"
	propV2 = "id,parent_id,name\nCM1,,Roadster\nCM2,CM1,Powertrain\nCM3,CM1,Chassis\nCM4,CM2,Engine V8\nCM8,CM4,Piston\nCM5,CM2,Frame\nCM7,CM3,Axle\n"
	propV3 = "id,parent_id,name\nCM1,,Roadster\nCM2,CM1,Powertrain\nCM3,CM1,Chassis\nCM4,CM3,Engine\nCM9,CM4,Valve\n"
	// The edits, on v2's tree.
	propEdits = `{"op":"move","id":"CM4","parent":"CM3"}` + "\n" + `{"op":"set","id":"CM2","attributes":{"name":"Drive"}}` + "\n" + `{"op":"delete","id":"CM8"}` + "\n"
)

// readsAsLayoutRow says whether an item would be one of the layout's in a
// table of l: not another entity's (a model's type field), and read back
// by the layout, as a node's own item or as another of its rows (a
// closure ancestor row, a prefix listing row: they name their node).
// The property test's foreign items are the ones it says no for: the
// definition of what treeport may change, written again here.
func readsAsLayoutRow(l layouts.Layout, item layouts.Item) bool {
	if models.Foreign(l, layouts.MapView(item)) {
		return false
	}
	_, _, err := l.Node(item)
	return err == nil
}

// foreignItems makes n random items for a table of l that are none of the
// tree's: other entities (other key values, sometimes in the tree's index
// partitions, another type), and near-nodes, the tree's own items with
// their key moved off the tree and an attribute dropped, retyped or the
// type field taken away. taken holds the keys the tree's items use.
func foreignItems(r *rand.Rand, l layouts.Layout, tree []layouts.Item, taken map[string]bool, n int) []layouts.Item {
	spec := l.Table()
	keyTypes := map[string]types.ScalarAttributeType{spec.PK.Name: spec.PK.Type}
	if spec.SK != nil {
		keyTypes[spec.SK.Name] = spec.SK.Type
	}
	for _, ix := range spec.Indexes {
		keyTypes[ix.PK.Name] = ix.PK.Type
		if ix.SK != nil {
			keyTypes[ix.SK.Name] = ix.SK.Type
		}
	}
	value := func(t types.ScalarAttributeType, prefix string) types.AttributeValue {
		if t == types.ScalarAttributeTypeN {
			return &types.AttributeValueMemberN{Value: fmt.Sprint(r.IntN(100000))}
		}
		return s(fmt.Sprintf("%s%d", prefix, r.IntN(100000)))
	}
	var out []layouts.Item
	for tries := 0; len(out) < n && tries < 50*n; tries++ {
		var item layouts.Item
		if r.IntN(2) == 0 {
			// Another entity: its own key values, user attributes, now
			// and then a type field of another value, and index keys
			// copied from the tree's items (it sits in their partitions).
			prefix := []string{"USER#", "ORDER#", "COMMENT#", "TENANT2#NODE#", ""}[r.IntN(5)]
			item = layouts.Item{spec.PK.Name: value(spec.PK.Type, prefix)}
			if spec.SK != nil {
				item[spec.SK.Name] = value(spec.SK.Type, prefix)
			}
			item["payload"] = s(fmt.Sprintf("entity %d", r.IntN(1000)))
			item["count"] = &types.AttributeValueMemberN{Value: fmt.Sprint(r.IntN(50))}
			item["flags"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberBOOL{Value: r.IntN(2) == 0}}}
			for _, name := range []string{"_type", "__edb_e__"} {
				if r.IntN(3) == 0 {
					item[name] = s("Other")
				}
			}
			src := tree[r.IntN(len(tree))]
			for name := range keyTypes {
				if v, ok := src[name]; ok && item[name] == nil && r.IntN(2) == 0 {
					item[name] = v
				}
			}
		} else {
			// A near-node: a tree item, off the tree's keys, misshapen.
			item = maps.Clone(tree[r.IntN(len(tree))])
			for _, k := range []*layouts.KeyAttr{&spec.PK, spec.SK} {
				if k == nil {
					continue
				}
				if v, ok := item[k.Name].(*types.AttributeValueMemberS); ok && r.IntN(2) == 0 {
					item[k.Name] = s(v.Value + fmt.Sprintf("~z%d", r.IntN(1000)))
				} else if k.Type == types.ScalarAttributeTypeN {
					item[k.Name] = &types.AttributeValueMemberN{Value: fmt.Sprint(900 + r.IntN(100))}
				}
			}
			var names []string
			for name := range item {
				if name != spec.PK.Name && (spec.SK == nil || name != spec.SK.Name) {
					names = append(names, name)
				}
			}
			slices.Sort(names)
			if len(names) > 0 {
				name := names[r.IntN(len(names))]
				switch _, isKey := keyTypes[name]; {
				case r.IntN(2) == 0 || isKey:
					delete(item, name)
				default:
					if _, isS := item[name].(*types.AttributeValueMemberS); isS {
						item[name] = &types.AttributeValueMemberN{Value: "7"}
					} else {
						item[name] = s("seven")
					}
				}
			}
		}
		k := layouts.KeyOf(spec, item)
		if taken[k] || readsAsLayoutRow(l, item) {
			continue
		}
		taken[k] = true
		out = append(out, item)
	}
	return out
}

// For every layout and every shipped model: a table holding random
// foreign items (other entities, other tenants, near-nodes with the right
// key attribute names and the wrong shapes) beside a tree. After plan,
// apply of a changed snapshot, edits, and a migrate into it, every foreign
// item is byte for byte what it was, and apply and migrate leave the rest
// of the table exactly the snapshot's items.
func TestSafetyForeignItemsSurviveEveryCommand(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	v1 := writeText(t, dir, "v1.csv", propV1)
	v2 := writeText(t, dir, "v2.csv", propV2)
	v3 := writeText(t, dir, "v3.csv", propV3)
	edits := writeText(t, dir, "edits.jsonl", propEdits)
	src := ddblocal.TableName(t)
	dropTableLater(t, client, src)
	if stdout, stderr, code := run(t, env, "import", "--in", v3, "--layout", "path", "--table", src, "--create-table", "--no-progress"); code != 0 {
		t.Fatalf("import the source: exit %d\n%s%s", code, stdout, stderr)
	}
	files, err := filepath.Glob("fixtures/models/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no shipped models (%v)", err)
	}
	targets := [][]string{{"--layout", "path"}, {"--layout", "sharded-path"}, {"--layout", "closure"}, {"--layout", "prefix"}, {"--layout", "adjacency"}}
	for _, m := range files {
		if pathIDModel(t, m) {
			// Its ids are paths, which these inputs' are not, and a move
			// renames a subtree: TestS3InventoryModel holds its other
			// bucket byte for byte through every command.
			continue
		}
		targets = append(targets, append([]string{"--model", m}, layoutstest.ModelParamFlags(t, m)...))
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for ti, target := range targets {
		t.Run(filepath.Base(target[1]), func(t *testing.T) {
			var l layouts.Layout
			var err error
			if target[0] == "--model" {
				l, err = models.LoadModelParams(target[1], layoutstest.ModelParams)
			} else {
				l, err = layouts.New(target[1], layouts.Options{})
			}
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(seed, uint64(ti)))
			table := ddblocal.TableName(t)
			dropTableLater(t, client, table)
			if stdout, stderr, code := run(t, env, append([]string{"import", "--in", v1, "--table", table, "--create-table", "--no-progress"}, target...)...); code != 0 {
				t.Fatalf("import v1: exit %d\n%s%s", code, stdout, stderr)
			}
			taken := map[string]bool{}
			var tree []layouts.Item
			for _, v := range []string{v1, v2, v3} {
				items := expectedItems(t, v, "", l)
				tree = append(tree, items...)
				for _, it := range items {
					taken[layouts.KeyOf(l.Table(), it)] = true
				}
			}
			foreign := foreignItems(r, l, tree, taken, 30)
			switch {
			case l.Name() == "adjacency":
				// Every item of an adjacency table is an Id and
				// attributes: a node. A table that holds other entities
				// needs a model with a type field (docs/MODELS.md).
				if len(foreign) > 0 {
					t.Fatalf("%d items of an adjacency table do not read as nodes, such as %s", len(foreign), ddbjson.AppendItem(nil, foreign[0]))
				}
			case len(foreign) < 10:
				t.Fatalf("only %d foreign items could be made: the test proves little", len(foreign))
			}
			putItems(t, client, table, foreign...)
			same := func(what string) []string {
				t.Helper()
				lines := rawLines(t, client, table)
				containsAll(t, what, lines, foreign)
				return lines
			}
			exact := func(what, snapshot string) {
				t.Helper()
				sameLines(t, what, same(what), append(slices.Clone(foreign), expectedItems(t, snapshot, "", l)...))
			}
			common := append([]string{"--table", table}, target...)
			steps := []struct {
				name  string
				args  []string
				codes []int // the exit codes it may end with
				want  string
			}{
				{"plan", append([]string{"plan", "--in", v2, "--ignore-unparsable"}, common...), []int{0}, ""},
				{"apply", append([]string{"apply", "--in", v2, "--ignore-unparsable", "--allow-mass-delete", "--no-progress"}, common...), []int{0}, v2},
				// edit reads only what its edits touch; a near-node in a
				// moved subtree makes it refuse (exit 2), which is safe too.
				{"edit", append([]string{"edit", "--ops", edits, "--no-progress"}, common...), []int{0, 2}, ""},
				{"migrate", append([]string{"migrate", "--from-table", src, "--from-layout", "path", "--to-table", table, "--ignore-unparsable", "--allow-mass-delete", "--no-progress"},
					migrateTarget(target)...), []int{0}, v3},
			}
			for _, st := range steps {
				stdout, stderr, code := run(t, env, st.args...)
				if !slices.Contains(st.codes, code) {
					t.Fatalf("%s: exit %d, want one of %v:\n%s%s", st.name, code, st.codes, stdout, stderr)
				}
				if st.want != "" {
					exact(st.name, st.want)
				} else {
					same(st.name)
				}
			}
		})
	}
}

// migrateTarget turns --layout L or --model M into migrate's --to-layout
// or --to-model; the flags after them (--model-param) go as they are.
func migrateTarget(target []string) []string {
	return append([]string{"--to-" + strings.TrimPrefix(target[0], "--"), target[1]}, target[2:]...)
}

// The mass-delete guard counts items too, against every item the table
// holds: in a closure table, removing a chain's three deepest nodes is 10%
// of the nodes (the guard's limit, which nodes alone let through) but 27
// of the table's 95 items. apply refuses it (exit 2, nothing written) and
// plan warns, both counting nodes and items; --allow-mass-delete lets it go.
func TestSafetyMassDeleteGuardCountsItems(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	tree := func(depth int) string {
		var b strings.Builder
		b.WriteString("id,parent_id\nR,\n")
		for i := 1; i <= 20; i++ {
			fmt.Fprintf(&b, "L%d,R\n", i)
		}
		parent := "R"
		for i := 1; i <= depth; i++ {
			fmt.Fprintf(&b, "D%d,%s\n", i, parent)
			parent = fmt.Sprintf("D%d", i)
		}
		return b.String()
	}
	dir := t.TempDir()
	full, cut := writeText(t, dir, "full.csv", tree(9)), writeText(t, dir, "cut.csv", tree(6))
	l, _ := layouts.New("closure", layouts.Options{})
	table := ddblocal.NewTable(t, client, l.Table())
	if stdout, stderr, code := run(t, env, "import", "--in", full, "--layout", "closure", "--table", table, "--no-progress"); code != 0 {
		t.Fatalf("import: exit %d\n%s%s", code, stdout, stderr)
	}
	before := rawLines(t, client, table)
	if len(before) != 95 {
		t.Fatalf("the table holds %d items, want 95", len(before))
	}
	stdout, stderr, code := run(t, env, "plan", "--in", cut, "--layout", "closure", "--table", table)
	if code != 0 || !strings.Contains(stdout, "WARNING: the plan removes 3 of the table's 30 nodes (deletes 27 of its 95 items)") {
		t.Fatalf("plan: exit %d, want a warning counting nodes and items:\n%s%s", code, stdout, stderr)
	}
	args := []string{"apply", "--in", cut, "--layout", "closure", "--table", table, "--no-progress"}
	stdout, stderr, code = run(t, env, args...)
	if code != 2 || !strings.Contains(stderr, "removes 3 of the table's 30 nodes (deletes 27 of its 95 items)") || !strings.Contains(stderr, "--allow-mass-delete") {
		t.Fatalf("apply: exit %d, want 2 counting nodes and items:\n%s%s", code, stdout, stderr)
	}
	if !slices.Equal(rawLines(t, client, table), before) {
		t.Fatal("the refused apply changed the table")
	}
	if stdout, stderr, code := run(t, env, append(args, "--allow-mass-delete")...); code != 0 {
		t.Fatalf("apply --allow-mass-delete: exit %d\n%s%s", code, stdout, stderr)
	}
	sameLines(t, "after apply --allow-mass-delete", rawLines(t, client, table), expectedItems(t, cut, "", l))
}

// migrate --follow into a table holding foreign items (as the property
// test makes them), for every layout but adjacency (which cannot hold
// one) and every shipped model: the copy and the stream's changes, moves
// included, leave every foreign item byte for byte, and the follower's
// verify finds the destination exact.
func TestSafetyFollowLeavesForeignItems(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	files, err := filepath.Glob("fixtures/models/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no shipped models (%v)", err)
	}
	targets := [][]string{{"--layout", "path"}, {"--layout", "sharded-path"}, {"--layout", "closure"}, {"--layout", "prefix"}}
	for _, m := range files {
		if pathIDModel(t, m) {
			// Its ids are paths, which these inputs' are not, and a move
			// renames a subtree: TestS3InventoryModel holds its other
			// bucket byte for byte through every command.
			continue
		}
		targets = append(targets, append([]string{"--model", m}, layoutstest.ModelParamFlags(t, m)...))
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	one := writeText(t, t.TempDir(), "one.csv", propV1)
	for ti, target := range targets {
		t.Run(filepath.Base(target[1]), func(t *testing.T) {
			var l layouts.Layout
			var err error
			if target[0] == "--model" {
				l, err = models.LoadModelParams(target[1], layoutstest.ModelParams)
			} else {
				l, err = layouts.New(target[1], layouts.Options{})
			}
			if err != nil {
				t.Fatal(err)
			}
			src := newAdjSource(t, client, 20, true)
			dest := ddblocal.TableName(t)
			dropTableLater(t, client, dest)
			if stdout, stderr, code := run(t, env, append([]string{"import", "--in", one, "--table", dest, "--create-table", "--no-progress"}, target...)...); code != 0 {
				t.Fatalf("create the destination: exit %d\n%s%s", code, stdout, stderr)
			}
			// The source's ids are N0, N1, …: the foreign items are made
			// off v1's tree, whose ids (CM…) the source never has.
			taken := map[string]bool{}
			tree := expectedItems(t, one, "", l)
			for _, it := range tree {
				taken[layouts.KeyOf(l.Table(), it)] = true
			}
			foreign := foreignItems(rand.New(rand.NewPCG(seed, uint64(ti))), l, tree, taken, 20)
			if len(foreign) < 5 {
				t.Fatalf("only %d foreign items could be made: the test proves little", len(foreign))
			}
			putItems(t, client, dest, foreign...)
			args := append([]string{"migrate", "--from-table", src.table, "--from-layout", "adjacency", "--to-table", dest,
				"--follow", "--follow-idle", "3s", "--checkpoint", filepath.Join(t.TempDir(), "ck.json"), "--endpoint-url", endpoint,
				"--no-progress", "--ignore-unparsable", "--allow-mass-delete"}, migrateTarget(target)...)
			cmd, out := startFollower(t, args)
			waitForOutput(t, cmd, out, "following the stream")
			stop := make(chan struct{})
			mutated := src.run(stop, seed+uint64(ti))
			time.Sleep(1500 * time.Millisecond)
			close(stop)
			if err := <-mutated; err != nil {
				t.Fatal(err)
			}
			followerExact(t, cmd, out)
			if n := recordsApplied(t, out.String()); n == 0 {
				t.Fatalf("the follower applied no stream record:\n%s", out)
			}
			containsAll(t, "after the follow", rawLines(t, client, dest), foreign)
		})
	}
}

// TestSafetyGuardCountsMoves: a snapshot that lost its parents keeps
// every node but makes each a root of its own. On a closure table that
// deletes every ancestor row, 78 of a 13-node chain's 91 items, and no node
// is removed: the mass-delete guard counts those deletes too, so apply
// refuses the plan (exit 2, nothing written) and plan warns.
func TestSafetyGuardCountsMoves(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	env := awsEnv(endpoint)
	client := ddblocal.Client(t, endpoint)
	dir := t.TempDir()
	chain, flat := "id,parent_id\n", "id,parent_id\n"
	for i := range 13 {
		parent := ""
		if i > 0 {
			parent = fmt.Sprintf("n%d", i-1)
		}
		chain += fmt.Sprintf("n%d,%s\n", i, parent)
		flat += fmt.Sprintf("n%d,\n", i) // the parents lost: every node a root
	}
	in, snap := filepath.Join(dir, "chain.csv"), filepath.Join(dir, "flat.csv")
	if err := os.WriteFile(in, []byte(chain), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(snap, []byte(flat), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := layouts.New("closure", layouts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	table := loadTable(t, env, client, in, "", l)
	before := tableState(t, client, table, l.Table())
	if len(before) != 91 {
		t.Fatalf("the chain's closure table holds %d items, want 91", len(before))
	}
	common := []string{"--in", snap, "--layout", "closure", "--table", table}
	stdout, stderr, code := run(t, env, append([]string{"plan"}, common...)...)
	if code != 0 || !strings.Contains(stdout, "WARNING: the plan removes 0 of the table's 13 nodes (deletes 78 of its 91 items)") {
		t.Errorf("plan: exit %d\n%s%s", code, stdout, stderr)
	}
	_, stderr, code = run(t, env, append([]string{"apply"}, common...)...)
	if code != 2 || !strings.Contains(stderr, "deletes 78 of its 91 items") || !strings.Contains(stderr, "--allow-mass-delete") {
		t.Errorf("apply: exit %d, want 2 naming the deletes:\n%s", code, stderr)
	}
	sameState(t, "after the refused apply", tableState(t, client, table, l.Table()), before)
	// Meant, it goes through.
	if _, stderr, code := run(t, env, append([]string{"apply", "--allow-mass-delete"}, common...)...); code != 0 {
		t.Fatalf("apply --allow-mass-delete: exit %d\n%s", code, stderr)
	}
	if after := tableState(t, client, table, l.Table()); len(after) != 13 {
		t.Errorf("after the meant apply: %d items, want 13 self rows", len(after))
	}
}
