package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/treeport/treeport/internal/ddbtable"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/layouts/layoutstest"
	"github.com/treeport/treeport/models"
)

// TestDryRunBenchPlanAgree: the three commands that price a load give one
// answer for one input. For every fixture and layout, import --dry-run,
// bench --offline and plan against an empty table agree on the write units
// of the load, the items and bytes stored (table and indexes), what storing
// them costs a month and the bytes ImportTable would bill.
func TestDryRunBenchPlanAgree(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	for _, fx := range []string{"cars", "folders", "org"} {
		in := filepath.Join("fixtures", fx+".csv")
		types := fixtureTypes(t, fx)
		for _, name := range layouts.Names() {
			t.Run(fx+"/"+name, func(t *testing.T) {
				d := dryRunPlan(t, env, "--in", in, "--types", types, "--layout", name)
				bench := offlineBench(t, env, "--in", in, "--types", types, "--layouts", name)
				if len(bench) != 1 {
					t.Fatalf("bench reports %d layouts, want 1", len(bench))
				}
				b := bench[0]

				l, err := layouts.New(name, layouts.Options{})
				if err != nil {
					t.Fatal(err)
				}
				table := fmt.Sprintf("onetruth-%s-%s-%d", fx, name, time.Now().UnixNano())
				if err := ddbtable.CreateTable(context.Background(), client, table, l.Table(), ddbtable.Billing{}); err != nil {
					t.Fatal(err)
				}
				stdout, stderr, code := run(t, env, "plan", "--json", "--in", in, "--types", types, "--layout", name, "--table", table)
				if code != 0 {
					t.Fatalf("plan: exit %d: %s", code, stderr)
				}
				p := parseSummary(t, stdout)
				sameEstimates(t, d, b, p)
				if p.Total.Puts != b.Items || p.Total.Deletes != 0 {
					t.Errorf("plan puts %d and deletes %d; bench has %d items", p.Total.Puts, p.Total.Deletes, b.Items)
				}
				if d.Cost.ImportBytes != b.Cost.ImportBytes || d.Cost.ImportBytes <= 0 {
					t.Errorf("ImportTable source bytes: dry run %d, bench %d", d.Cost.ImportBytes, b.Cost.ImportBytes)
				}
			})
		}
	}
}

// dryPlan is what import --dry-run --json says of its one plan.
type dryPlan struct {
	WCU         int64 `json:"wcu"`
	Items       int64 `json:"items"`
	StoredItems int64 `json:"stored_items"`
	StoredBytes int64 `json:"stored_bytes"`
	Cost        struct {
		ImportBytes  int64   `json:"import_source_bytes_estimate"`
		StorageMonth float64 `json:"storage_usd_per_month"`
	} `json:"cost"`
}

// dryRunPlan runs import --dry-run --json with args and returns its plan.
func dryRunPlan(t *testing.T, env []string, args ...string) dryPlan {
	t.Helper()
	stdout, stderr, code := run(t, env, append([]string{"import", "--dry-run", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("dry run: exit %d: %s", code, stderr)
	}
	var dry struct {
		Plans []dryPlan `json:"plans"`
	}
	if err := json.Unmarshal([]byte(stdout), &dry); err != nil || len(dry.Plans) != 1 {
		t.Fatalf("dry run JSON: %v\n%s", err, stdout)
	}
	return dry.Plans[0]
}

// benchLayout is one layout of bench's JSON report.
type benchLayout struct {
	Layout  string              `json:"layout"`
	Items   int64               `json:"items"`
	Load    struct{ WCU int64 } `json:"load"`
	Storage []struct {
		Items, Bytes int64
	} `json:"storage"`
	Cost struct {
		ImportBytes  int64   `json:"import_source_bytes"`
		StorageMonth float64 `json:"storage_usd_per_month"`
	} `json:"cost"`
}

// offlineBench runs bench --offline with args and returns its report's
// layouts.
func offlineBench(t *testing.T, env []string, args ...string) []benchLayout {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bench.json")
	if _, stderr, code := run(t, env, append([]string{"bench", "--offline", "--out", out}, args...)...); code != 0 {
		t.Fatalf("bench: exit %d: %s", code, stderr)
	}
	var rep struct {
		Layouts []benchLayout `json:"layouts"`
	}
	if err := json.Unmarshal([]byte(readFile(t, out)), &rep); err != nil {
		t.Fatalf("bench JSON: %v", err)
	}
	return rep.Layouts
}

// sameEstimates wants the dry run, the bench and the plan to agree on the
// write units to load, and the dry run and the bench on the items and
// bytes stored and what storing them costs a month.
func sameEstimates(t *testing.T, d dryPlan, b benchLayout, p planSummary) {
	t.Helper()
	if d.WCU != b.Load.WCU || d.WCU != p.Total.WCU {
		t.Errorf("WCU to load: dry run %d, bench %d, plan %d", d.WCU, b.Load.WCU, p.Total.WCU)
	}
	var items, bytes int64
	for _, s := range b.Storage {
		items += s.Items
		bytes += s.Bytes
	}
	if d.StoredItems != items || d.StoredBytes != bytes {
		t.Errorf("stored: dry run %d items, %d bytes; bench %d items, %d bytes", d.StoredItems, d.StoredBytes, items, bytes)
	}
	if math.Abs(d.Cost.StorageMonth-b.Cost.StorageMonth) > 1e-6 {
		t.Errorf("storage a month: dry run $%v, bench $%v", d.Cost.StorageMonth, b.Cost.StorageMonth)
	}
}

// modelRun is a shipped model (the closure model also with a
// --closure-copy) on a fixture.
type modelRun struct {
	fx, in, types string
	name, model   string   // the model's name and file
	flags         []string // --model FILE [--closure-copy C]
}

// eachModelRun runs fn as a subtest for each fixture and each shipped
// model, and for the closure model with each of copies as --closure-copy
// too; but not for a model whose delimiter the fixture's ids hold.
// pathIDModel reports whether the model file's ids are path ids.
func pathIDModel(t *testing.T, file string) bool {
	t.Helper()
	l, err := models.LoadModelParams(file, layoutstest.ModelParams)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return layouts.PathIDs(l)
}

func eachModelRun(t *testing.T, copies []string, fn func(t *testing.T, r modelRun)) {
	t.Helper()
	files, err := filepath.Glob("fixtures/models/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no shipped models: %v", err)
	}
	type run1 struct{ model, copy string }
	var runs []run1
	for _, f := range files {
		runs = append(runs, run1{f, ""})
	}
	for _, c := range copies {
		runs = append(runs, run1{"fixtures/models/closure-single-table.json", c})
	}
	for _, fx := range []string{"cars", "folders", "org"} {
		in := filepath.Join("fixtures", fx+".csv")
		types := fixtureTypes(t, fx)
		for k, r := range runs {
			name := strings.TrimSuffix(filepath.Base(r.model), ".json")
			if fx == "folders" && (name == "wadsworth-path" || name == "prefix-directories") {
				continue // its delimiter, /, is in the folders' ids
			}
			if pathIDModel(t, r.model) && (fx != "folders" || name == "store-locations") {
				// Its ids are paths: the folders' are, joined by / as
				// s3-inventory's; the others' are not, and no fixture is
				// a tree of stores (TestStoreLocationsModel has one).
				continue
			}
			flags := append([]string{"--model", r.model}, layoutstest.ModelParamFlags(t, r.model)...)
			if r.copy != "" {
				flags = append(flags, "--closure-copy", r.copy)
			}
			t.Run(fmt.Sprintf("%s/%s/%d", fx, name, k), func(t *testing.T) {
				fn(t, modelRun{fx: fx, in: in, types: types, name: name, model: r.model, flags: flags})
			})
		}
	}
}

// TestDryRunBenchPlanAgreeModels is TestDryRunBenchPlanAgree for every
// shipped model, and for the closure model with each --closure-copy: the
// dry run, bench --offline and plan against an empty table of the model
// agree on the write units, the items and bytes stored and what storing
// them costs; and the plan's items are the ones an import writes.
func TestDryRunBenchPlanAgreeModels(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	eachModelRun(t, []string{"none", "name,size_bytes,qty,title"}, func(t *testing.T, r modelRun) {
		in, types, name, fx, m := r.in, r.types, r.name, r.fx, r.flags
		d := dryRunPlan(t, env, append([]string{"--in", in, "--types", types}, m...)...)
		bench := offlineBench(t, env, append([]string{"--in", in, "--types", types}, m...)...)
		i := slices.IndexFunc(bench, func(l benchLayout) bool { return l.Layout == "model-"+name })
		if i < 0 {
			t.Fatalf("bench reports no model-%s", name)
		}
		b := bench[i]
		l, err := models.LoadModelParams(r.model, layoutstest.ModelParams)
		if err != nil {
			t.Fatal(err)
		}
		table := fmt.Sprintf("onetruth-%s-%s-%d", fx, name, time.Now().UnixNano())
		if err := ddbtable.CreateTable(context.Background(), client, table, l.Table(), ddbtable.Billing{}); err != nil {
			t.Fatal(err)
		}
		dropTableLater(t, client, table)
		stdout, stderr, code := run(t, env, append([]string{"plan", "--json", "--in", in, "--types", types, "--table", table}, m...)...)
		if code != 0 {
			t.Fatalf("plan: exit %d: %s", code, stderr)
		}
		p := parseSummary(t, stdout)
		sameEstimates(t, d, b, p)
		if p.Total.Puts != b.Items || p.Total.Deletes != 0 || d.Items != b.Items {
			t.Errorf("plan puts %d and deletes %d; bench has %d items, the dry run %d", p.Total.Puts, p.Total.Deletes, b.Items, d.Items)
		}
	})
}

// TestBenchModelsEstimateIsBilled: bench online, against DynamoDB Local,
// of every shipped model (and the closure model with --closure-copy none
// and some) on each fixture: each query kind's cost model (the estimate
// the offline bench and the ranking use) equals, on the sampled nodes,
// the read units the requests sent were billed. A Query of an index that
// projects fewer attributes reads, and is billed for, the index's copies.
func TestBenchModelsEstimateIsBilled(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: benches every shipped model on DynamoDB Local (28 s under -race)")
	}
	endpoint := ddblocal.Endpoint(t)
	env := awsEnv(endpoint)
	eachModelRun(t, []string{"none", "name,title"}, func(t *testing.T, r modelRun) {
		in, types := r.in, r.types
		out := filepath.Join(t.TempDir(), "bench.json")
		args := append([]string{"bench", "--in", in, "--types", types, "--layouts", "", "--sample", "25",
			"--endpoint-url", endpoint, "--out", out}, r.flags...)
		if _, stderr, code := run(t, env, args...); code != 0 {
			t.Fatalf("bench: exit %d: %s", code, stderr)
		}
		var rep struct {
			Layouts []struct {
				Layout  string `json:"layout"`
				Queries []struct {
					Kind   string  `json:"kind"`
					Source string  `json:"source"`
					Est    float64 `json:"estimated_rcu_mean"`
					RCU    struct {
						Mean float64 `json:"mean"`
					} `json:"rcu"`
				} `json:"queries"`
			} `json:"layouts"`
		}
		if err := json.Unmarshal([]byte(readFile(t, out)), &rep); err != nil || len(rep.Layouts) != 1 {
			t.Fatalf("bench JSON: %v (%d layouts)", err, len(rep.Layouts))
		}
		qs := rep.Layouts[0].Queries
		if len(qs) != 5 {
			t.Fatalf("%d query kinds, want 5", len(qs))
		}
		for _, q := range qs {
			if q.Source != "measured" || math.Abs(q.RCU.Mean-q.Est) > 1e-9 {
				t.Errorf("%s %s: billed %v RCU a query (%s), the cost model %v", rep.Layouts[0].Layout, q.Kind, q.RCU.Mean, q.Source, q.Est)
			}
		}
	})
}

// TestProjectedIndexWritesAreWhatDynamoDBBills: an index that projects
// less than the item (aws-components' GSI2, KEYS_ONLY) is billed by the
// size of its copy, not of the item: DynamoDB Local bills a 3 KB item's
// KEYS_ONLY copy 1 WCU. The dry run, plan and the writer's own count say
// what DynamoDB Local consumed, for a load of items over 1 KB, and for an
// apply that changes them, moves a subtree and removes a leaf. (They
// counted every index write at the item's size: 48 WCU more for the load.)
func TestProjectedIndexWritesAreWhatDynamoDBBills(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	env := awsEnv(endpoint)
	client := ddblocal.Client(t, endpoint)
	dir := t.TempDir()
	blob := strings.Repeat("x", 2500)
	var b strings.Builder
	b.WriteString("id,parent_id,note\n")
	for i := 1; i <= 24; i++ {
		parent := ""
		if i > 1 {
			parent = fmt.Sprintf("CM%d", i/2)
		}
		fmt.Fprintf(&b, "CM%d,%s,%s%d\n", i, parent, blob, i)
	}
	in := filepath.Join(dir, "big.csv")
	os.WriteFile(in, []byte(b.String()), 0o644)
	m := []string{"--model", "fixtures/models/aws-components.json"}

	stdout, stderr, code := run(t, nil, append([]string{"import", "--in", in, "--dry-run", "--json"}, m...)...)
	if code != 0 {
		t.Fatalf("dry run: exit %d: %s", code, stderr)
	}
	var dry struct {
		Plans []struct {
			WCU int64 `json:"wcu"`
		} `json:"plans"`
	}
	if err := json.Unmarshal([]byte(stdout), &dry); err != nil || len(dry.Plans) != 1 {
		t.Fatalf("dry run JSON: %v\n%s", err, stdout)
	}
	table := ddblocal.TableName(t)
	dropTableLater(t, client, table)
	tm := append([]string{"--table", table}, m...)
	report := filepath.Join(dir, "import.json")
	if _, stderr, code := run(t, env, append([]string{"import", "--in", in, "--create-table", "--report", report, "--no-progress"}, tm...)...); code != 0 {
		t.Fatalf("import: exit %d: %s", code, stderr)
	}
	var rep struct {
		Writer struct {
			ConsumedWCU float64 `json:"consumed_wcu"`
			ComputedWCU int64   `json:"computed_wcu"`
		} `json:"writer"`
	}
	if err := json.Unmarshal([]byte(readFile(t, report)), &rep); err != nil {
		t.Fatal(err)
	}
	if d := dry.Plans[0].WCU; float64(d) != rep.Writer.ConsumedWCU || d != rep.Writer.ComputedWCU {
		t.Errorf("load: dry run %d WCU, the writer %d; DynamoDB Local consumed %.0f", d, rep.Writer.ComputedWCU, rep.Writer.ConsumedWCU)
	}

	// Every note changes, CM2's subtree moves under CM3, CM24 goes.
	snap := strings.ReplaceAll(b.String(), blob, blob[:1800])
	snap = strings.Replace(snap, "CM2,CM1,", "CM2,CM3,", 1)
	snap = strings.Replace(snap, fmt.Sprintf("CM24,CM12,%s24\n", blob[:1800]), "", 1)
	snapPath := filepath.Join(dir, "snap.csv")
	os.WriteFile(snapPath, []byte(snap), 0o644)
	stdout, stderr, code = run(t, env, append([]string{"plan", "--json", "--in", snapPath}, tm...)...)
	if code != 0 {
		t.Fatalf("plan: exit %d: %s", code, stderr)
	}
	p := parseSummary(t, stdout)
	report = filepath.Join(dir, "apply.json")
	if _, stderr, code := run(t, env, append([]string{"apply", "--in", snapPath, "--report", report, "--no-progress"}, tm...)...); code != 0 {
		t.Fatalf("apply: exit %d: %s", code, stderr)
	}
	if err := json.Unmarshal([]byte(readFile(t, report)), &rep); err != nil {
		t.Fatal(err)
	}
	if p.Total.Deletes == 0 || float64(p.Total.WCU) != rep.Writer.ConsumedWCU {
		t.Errorf("apply: plan %d WCU (%d puts, %d deletes); DynamoDB Local consumed %.0f", p.Total.WCU, p.Total.Puts, p.Total.Deletes, rep.Writer.ConsumedWCU)
	}
}
