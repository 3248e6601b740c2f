package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/testserver/faultproxy"
	"github.com/treeport/treeport/layouts"
)

// planOps reads a plan file's operations as sorted lines (kind, reason,
// id, WCU, the item or key, and the items a delete waits for under
// --shard, canonical), and fails when a put comes
// after a delete.
func planOps(t *testing.T, path string) []string {
	t.Helper()
	var p planFile
	if err := json.Unmarshal([]byte(readFile(t, path)), &p); err != nil {
		t.Fatalf("%s is not valid JSON: %v", path, err)
	}
	var out []string
	deleting := false
	for i, op := range p.Operations {
		raw := op.Item
		if op.Op == "delete" {
			raw = op.Key
			deleting = true
		} else if deleting {
			t.Errorf("%s: operation %d is a put after a delete", path, i)
		}
		item, err := ddbjson.DecodeItem(raw)
		if err != nil {
			t.Fatal(err)
		}
		var after []string
		for _, raw := range op.After {
			it, err := ddbjson.DecodeItem(raw)
			if err != nil {
				t.Fatal(err)
			}
			after = append(after, string(ddbjson.AppendItem(nil, normalizeItem(it))))
		}
		slices.Sort(after)
		line := strings.Join([]string{op.Op, op.Reason, op.ID, strconv.FormatInt(op.WCU, 10), string(ddbjson.AppendItem(nil, normalizeItem(item)))}, " ")
		if len(after) > 0 {
			line += " after " + strings.Join(after, " ")
		}
		out = append(out, line)
	}
	slices.Sort(out)
	return out
}

// samePlans plans the snapshot in memory and out of core (forced, in a
// 1 MiB budget) and fails unless both print the same summary (--json,
// byte for byte) and write the same operations; it returns the summary.
// The out-of-core run leaves nothing in its --tmp-dir.
func samePlans(t *testing.T, env []string, args ...string) planSummary {
	t.Helper()
	return sameShardPlans(t, env, ddbwrite.Shard{}, args...)
}

// sameShardPlans is samePlans for the copy s of a plan under --shard (in
// args), whose plan files carry the shard in their names.
func sameShardPlans(t *testing.T, env []string, s ddbwrite.Shard, args ...string) planSummary {
	t.Helper()
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	memOut, oocOut := filepath.Join(dir, "mem.plan.json"), filepath.Join(dir, "ooc.plan.json")
	memJSON, stderr, code := run(t, env, append([]string{"plan", "--json", "--out", memOut}, args...)...)
	if code != 0 {
		t.Fatalf("plan in memory: exit %d\n%s", code, stderr)
	}
	oocJSON, stderr, code := run(t, env, append(append([]string{"plan", "--json", "--out", oocOut}, args...), oocArgs(tmp)...)...)
	if code != 0 || !strings.Contains(stderr, "planned out of core") {
		t.Fatalf("plan out of core: exit %d, and planned out of core?\n%s", code, stderr)
	}
	if memJSON != oocJSON {
		t.Errorf("summaries differ:\n in memory   %s\n out of core %s", memJSON, oocJSON)
	}
	mem, ooc := planOps(t, s.FileName(memOut)), planOps(t, s.FileName(oocOut))
	if !slices.Equal(mem, ooc) {
		t.Errorf("operations differ:\n in memory   %s\n out of core %s", strings.Join(mem, "\n             "), strings.Join(ooc, "\n             "))
	}
	emptyDir(t, tmp)
	return parseSummary(t, memJSON)
}

// TestPlanOutOfCoreMatchesInMemory: plan out of core (forced, in a 1 MiB
// budget) gives the in-memory plan's summary and operations in every
// layout, on a table with new, removed, moved (a subtree, and one made a
// root), changed and hand-edited nodes and an item that does not read as
// a node (--ignore-unparsable). Apply out of core then leaves the table
// equal to the snapshot, the unreadable item as it was.
func TestPlanOutOfCoreMatchesInMemory(t *testing.T) {
	_, client, env := ddbLocal(t)
	typesFlag, baseFile, snapFile := carsSnapshotFiles(t)
	for _, name := range []string{layouts.AdjacencyName, layouts.PathName, "sharded-path", layouts.ClosureName, "prefix"} {
		t.Run(name, func(t *testing.T) {
			l, err := layouts.New(name, layouts.Options{})
			if err != nil {
				t.Fatal(err)
			}
			table := loadTable(t, env, client, baseFile, typesFlag, l)
			spec := l.Table()
			// CM48 is in both, unchanged: its items edited by hand are a
			// repair (its TreeId or GraphId, a row that is not its own
			// deleted; adjacency has no item a repair can mend); a copy under another key with the
			// layout's own attributes (those no index keys) of the wrong
			// type does not read as a node (adjacency and prefix have none
			// such).
			indexKeys := map[string]bool{}
			for _, ix := range spec.Indexes {
				indexKeys[ix.PK.Name] = true
				if ix.SK != nil {
					indexKeys[ix.SK.Name] = true
				}
			}
			var unreadable layouts.Item
			repaired := false
			for _, it := range scanTable(t, client, table) {
				if l.Owner(layouts.MapView(it)) != "CM48" {
					continue
				}
				if !l.IsNode(layouts.MapView(it)) {
					// A row of CM48 that is not its own (closure's
					// ancestor row, prefix's listing row), gone: the
					// plan puts it back.
					key := layouts.Item{spec.PK.Name: it[spec.PK.Name]}
					if spec.SK != nil {
						key[spec.SK.Name] = it[spec.SK.Name]
					}
					if !repaired {
						deleteItem(t, client, table, key)
						repaired = true
					}
					continue
				}
				tampered := maps.Clone(it)
				for _, name := range []string{"TreeId", "GraphId"} {
					if _, ok := it[name]; ok {
						tampered[name] = &types.AttributeValueMemberS{Value: "tampered"}
						repaired = true
					}
				}
				putItems(t, client, table, tampered)
				bad := maps.Clone(it)
				pk := it[spec.PK.Name].(*types.AttributeValueMemberS).Value
				bad[spec.PK.Name] = &types.AttributeValueMemberS{Value: "zz/" + pk}
				for _, r := range l.Reserved() {
					if _, ok := it[r]; ok && !indexKeys[r] && r != spec.PK.Name && (spec.SK == nil || r != spec.SK.Name) {
						bad[r] = &types.AttributeValueMemberBOOL{Value: true}
						unreadable = bad
					}
				}
				if unreadable != nil {
					putItems(t, client, table, unreadable)
				}
			}
			if !repaired && name != layouts.AdjacencyName {
				t.Fatal("no item of CM48 to edit for a repair")
			}
			common := []string{"--in", snapFile, "--types", typesFlag, "--layout", name, "--table", table, "--ignore-unparsable"}
			sum := samePlans(t, env, common...)
			for _, r := range []string{"new", "removed", "moved", "changed", "repair"} {
				if c := sum.ByReason[r]; c.Puts+c.Deletes == 0 && (r != "repair" || name != layouts.AdjacencyName) {
					t.Errorf("the plan has no %s operation: the case tests nothing (%+v)", r, sum)
				}
			}
			if unreadable != nil && !strings.Contains(run1(t, env, append([]string{"plan"}, common...)...), "do not read as nodes") {
				t.Errorf("the table has no unreadable item")
			}
			tmp := t.TempDir()
			if _, stderr, code := run(t, env, append(append([]string{"apply", "--no-progress", "--allow-mass-delete"}, common...), oocArgs(tmp)...)...); code != 0 {
				t.Fatalf("apply out of core: exit %d\n%s", code, stderr)
			}
			emptyDir(t, tmp)
			got := tableState(t, client, table, spec)
			if unreadable != nil {
				k := keyText(spec, unreadable)
				if got[k] != string(ddbjson.AppendItem(nil, normalizeItem(unreadable))) {
					t.Errorf("the unreadable item %s was changed: %s", k, got[k])
				}
				delete(got, k)
			}
			sameState(t, "after apply out of core", got, wantState(t, snapFile, typesFlag, l))
		})
	}
}

// run1 runs a command that must exit 0 and returns its stdout.
func run1(t *testing.T, env []string, args ...string) string {
	t.Helper()
	stdout, stderr, code := run(t, env, args...)
	if code != 0 {
		t.Fatalf("%s: exit %d\n%s", args[0], code, stderr)
	}
	return stdout
}

// TestPlanOutOfCoreModels: for the shipped models whose tables are built
// by hand here (with other entities' items in them), plan out of core
// equals the plan in memory, and apply out of core leaves the other
// entities as they were and the table equal to the snapshot.
func TestPlanOutOfCoreModels(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	// CM3 removed, CM8 renamed and moved under CM1, CM9 new under it.
	text := strings.Replace(strings.Replace(modelSeedCSV, "CM3,CM1,Chassis\n", "", 1), "CM8,CM4,Piston", "CM8,CM1,Piston ring", 1) + "CM9,CM8,Ring gap\n"
	snap := filepath.Join(dir, "snap.csv")
	if err := os.WriteFile(snap, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, h := range handModels {
		t.Run(filepath.Base(h.file), func(t *testing.T) {
			table := handTable(t, client, h, append(slices.Clone(h.nodes), h.foreign...))
			common := []string{"--in", snap, "--model", h.file, "--table", table}
			sum := samePlans(t, env, common...)
			if sum.TableOtherItems != int64(len(h.foreign)) || sum.ByReason["moved"].Nodes == 0 || sum.ByReason["new"].Puts == 0 || sum.ByReason["removed"].Deletes == 0 {
				t.Errorf("the plan tests nothing: %+v", sum)
			}
			before := foreignLines(t, client, table, h)
			tmp := t.TempDir()
			if _, stderr, code := run(t, env, append(append([]string{"apply", "--no-progress", "--allow-mass-delete"}, common...), oocArgs(tmp)...)...); code != 0 {
				t.Fatalf("apply out of core: exit %d\n%s", code, stderr)
			}
			emptyDir(t, tmp)
			if got := foreignLines(t, client, table, h); !slices.Equal(got, before) {
				t.Errorf("the other entities changed:\n got  %s\n want %s", got, before)
			}
			if s := parseSummary(t, run1(t, env, append([]string{"plan", "--json"}, common...)...)); s.changes() != 0 {
				t.Errorf("after apply out of core, the plan in memory still has %d changes", s.changes())
			}
		})
	}
}

// genForest writes a random forest of n nodes with the seed: two seeds
// give the same ids (N1...) in other trees, with other attributes.
func genForest(t *testing.T, n, seed int) string {
	t.Helper()
	in := filepath.Join(t.TempDir(), fmt.Sprintf("forest-%d.jsonl", seed))
	if _, stderr, code := run(t, nil, "gen", "--nodes", fmt.Sprint(n), "--shape", "random", "--trees", "3", "--shuffle", "--seed", fmt.Sprint(seed), "--out", in); code != 0 {
		t.Fatalf("gen: %s", stderr)
	}
	return in
}

// TestApplyOutOfCoreKillAndResume: a random forest's table refreshed from
// another forest over the same ids (most nodes moved and changed, some
// removed) is planned out of core as in memory, then applied out of core
// with a checkpoint, killed with SIGKILL at random points and resumed:
// the table ends equal to the snapshot.
func TestApplyOutOfCoreKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: kills and resumes an apply")
	}
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	proxy, err := faultproxy.New(faultproxy.Config{Target: endpoint, Seed: 1, Lifetime: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	base, snap := genForest(t, 2500, 5), genForest(t, 2000, 6)
	l, _ := layouts.New("closure", layouts.Options{})
	table := loadTable(t, env, client, base, "", l)
	common := []string{"--in", snap, "--layout", "closure", "--table", table}
	sum := samePlans(t, env, common...)
	if sum.MovedSubtrees == 0 || sum.ByReason["removed"].Nodes != 500 || sum.ChangedNodes == 0 {
		t.Fatalf("the plan tests nothing: %+v", sum)
	}
	tmp := t.TempDir()
	ck := filepath.Join(t.TempDir(), "ck.json")
	args := append(append([]string{"apply", "--checkpoint", ck, "--allow-mass-delete", "--concurrency", "4", "--max-wcu", "3000", "--no-progress"}, common...), oocArgs(tmp)...)
	kills, _, outs := killRuns(t, args, proxy.URL(), 3, func(rng *rand.Rand) time.Duration {
		return time.Duration(2500+rng.IntN(2500)) * time.Millisecond
	})
	if kills == 0 {
		t.Fatal("no run was killed: the test proves nothing")
	}
	if !strings.Contains(strings.Join(outs[1:], ""), "resuming from checkpoint") {
		t.Errorf("no run resumed from the checkpoint (every kill came before the plan was kept):\n%s", strings.Join(outs, "\n----\n"))
	}
	sameState(t, "after the kills", tableState(t, client, table, l.Table()), wantState(t, snap, "", l))
}

// TestPlanOutOfCoreDeepChain: in a chain of 600 nodes, N200 moved under
// N50 and N400 made a root: the levels of the moved subtrees are
// propagated one depth at a time out of core, as in memory (every node
// from N200 down moved, 401 of them).
func TestPlanOutOfCoreDeepChain(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	base := filepath.Join(t.TempDir(), "chain.jsonl")
	if _, stderr, code := run(t, nil, "gen", "--nodes", "600", "--shape", "deep", "--seed", "1", "--out", base); code != 0 {
		t.Fatalf("gen: %s", stderr)
	}
	text := readFile(t, base)
	text = strings.Replace(text, `"id":"N200","parent_id":"N199"`, `"id":"N200","parent_id":"N50"`, 1)
	text = strings.Replace(text, `"id":"N400","parent_id":"N399",`, `"id":"N400",`, 1)
	snap := filepath.Join(t.TempDir(), "snap.jsonl")
	if err := os.WriteFile(snap, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	l, _ := layouts.New(layouts.AdjacencyName, layouts.Options{})
	table := loadTable(t, env, client, base, "", l)
	sum := samePlans(t, env, "--in", snap, "--layout", l.Name(), "--table", table)
	if sum.MovedSubtrees != 2 || sum.ByReason["moved"].Nodes != 401 {
		t.Errorf("%d moved subtrees of %d nodes, want 2 of 401", sum.MovedSubtrees, sum.ByReason["moved"].Nodes)
	}
}

// TestPlanOutOfCoreChosenByItemCount: without --force-out-of-core, a
// table whose ItemCount (7,000 items, about 160 bytes each) does not fit
// --memory 1MiB is planned out of core, though the snapshot would fit,
// and says so; under the default budget the same plan is made in memory,
// with the same summary.
func TestPlanOutOfCoreChosenByItemCount(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	base, snap := genForest(t, 7000, 5), genForest(t, 7000, 6)
	l, _ := layouts.New(layouts.AdjacencyName, layouts.Options{})
	table := loadTable(t, env, client, base, "", l)
	args := []string{"plan", "--json", "--in", snap, "--layout", l.Name(), "--table", table}
	mem, memErr, code := run(t, env, args...)
	if code != 0 || strings.Contains(memErr, "planned out of core") {
		t.Fatalf("plan in the default budget: exit %d, want 0 in memory:\n%s", code, memErr)
	}
	tmp := t.TempDir()
	ooc, oocErr, code := run(t, env, append(args, "--memory", "1MiB", "--tmp-dir", tmp)...)
	if code != 0 || !strings.Contains(oocErr, "planned out of core") {
		t.Fatalf("plan in 1 MiB: exit %d, want 0 out of core:\n%s", code, oocErr)
	}
	if mem != ooc {
		t.Errorf("summaries differ:\n in memory   %s\n out of core %s", mem, ooc)
	}
	emptyDir(t, tmp)
}
