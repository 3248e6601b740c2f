package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// editPathIDs writes a snapshot of the JSON Lines forest in with path ids
// (delim) changed: every ninth leaf removed, the attributes of every
// fifth node changed (a node without attributes given one, another's
// taken away: an inner node then has no item under --implicit-inner),
// and a new child under each of the first few nodes and under implied,
// as an id it names (an inner node no item holds).
func editPathIDs(t *testing.T, in, delim, implied string) string {
	t.Helper()
	var recs []map[string]any
	parents := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, in)), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		recs = append(recs, rec)
		if p, _ := rec["parent_id"].(string); p != "" {
			parents[p] = true
		}
	}
	var lines []string
	add := func(rec map[string]any) {
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	for i, rec := range recs {
		id := rec["id"].(string)
		if i%9 == 4 && !parents[id] {
			continue
		}
		if i%5 == 0 {
			if len(rec) > 2 || (len(rec) == 2 && rec["parent_id"] == nil) {
				for k := range rec {
					if k != "id" && k != "parent_id" {
						delete(rec, k)
					}
				}
			} else {
				rec["size"] = i
			}
		}
		if i < 3 {
			add(map[string]any{"id": id + delim + "new", "parent_id": id, "size": i})
		}
		add(rec)
	}
	if implied != "" {
		add(map[string]any{"id": implied + delim + "new", "parent_id": implied, "url": "https://c.example/1"})
	}
	out := filepath.Join(t.TempDir(), "snap.jsonl")
	if err := os.WriteFile(out, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPlanOutOfCorePathIDs: tables whose ids are path ids and whose inner
// nodes are implied (dynamotree's rows built by hand, generated forests
// imported with --implicit-inner into prefix and path, and one under
// --shard) are planned out of core (forced, 1 MiB) as in memory, the
// table's implied nodes added as a Scan adds them; apply out of core then
// leaves a table that the plan in memory finds equal to the snapshot.
func TestPlanOutOfCorePathIDs(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	hand := prefixTable(t, client, dynamotreeRows())
	handExport := filepath.Join(t.TempDir(), "hand.jsonl")
	run1(t, env, "export", "--out", handExport, "--table", hand, "--layout", "prefix", "--path-ids")
	prefix, _ := layouts.New("prefix", layouts.Options{PathIDs: true, ImplicitInner: true})
	path, _ := layouts.New("path", layouts.Options{PathIDs: true, ImplicitInner: true, Delimiter: "¦"})
	in := genPathIDs(t, 1200, "¦")
	genPrefix := loadTable(t, env, client, in, "", prefix, "--path-ids", "--implicit-inner")
	genPath := loadTable(t, env, client, in, "", path, "--path-ids", "--implicit-inner", "--delimiter", "¦")
	genSnap := editPathIDs(t, in, "¦", "")
	for _, c := range []struct {
		name, table, snap string
		args              []string
	}{
		{"hand-built prefix", hand, editPathIDs(t, handExport, "¦", "Accounts¦654321¦Links"), []string{"--layout", "prefix", "--path-ids", "--implicit-inner"}},
		{"generated prefix", genPrefix, genSnap, []string{"--layout", "prefix", "--path-ids", "--implicit-inner"}},
		{"generated path", genPath, genSnap, []string{"--layout", "path", "--path-ids", "--implicit-inner", "--delimiter", "¦"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			common := append([]string{"--in", c.snap, "--table", c.table}, c.args...)
			sum := samePlans(t, env, common...)
			if sum.changes() == 0 || sum.ByReason["new"].Nodes == 0 || sum.ByReason["removed"].Nodes == 0 || sum.ChangedNodes == 0 {
				t.Fatalf("the plan tests nothing: %+v", sum)
			}
			if c.name == "generated prefix" {
				for k := range 2 {
					s := ddbwrite.Shard{K: k, Of: 2}
					sameShardPlans(t, env, s, append([]string{"--shard", s.String()}, common...)...)
				}
			}
			tmp := t.TempDir()
			if _, stderr, code := run(t, env, append(append([]string{"apply", "--no-progress", "--allow-mass-delete"}, common...), oocArgs(tmp)...)...); code != 0 {
				t.Fatalf("apply out of core: exit %d\n%s", code, stderr)
			}
			emptyDir(t, tmp)
			if s := parseSummary(t, run1(t, env, append([]string{"plan", "--json"}, common...)...)); s.changes() != 0 {
				t.Errorf("after apply out of core, the plan in memory still has %d changes: %+v", s.changes(), s)
			}
		})
	}
}

// TestMigrateOutOfCorePathIDsIntoNonEmpty: a migrate out of core from a
// path table with path ids into a prefix table with path ids and
// implicit inner nodes that holds an older copy (removed, changed and
// new nodes; inner nodes no item holds) refreshes it by the plan out of
// core, to exactly what the in-memory migrate makes of the same table.
func TestMigrateOutOfCorePathIDsIntoNonEmpty(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	prefix, _ := layouts.New("prefix", layouts.Options{PathIDs: true, ImplicitInner: true})
	path, _ := layouts.New("path", layouts.Options{PathIDs: true, ImplicitInner: true, Delimiter: "¦"})
	in := genPathIDs(t, 800, "¦")
	src := loadTable(t, env, client, in, "", path, "--path-ids", "--implicit-inner", "--delimiter", "¦")
	older := editPathIDs(t, in, "¦", "")
	var got [2][]string
	for i, extra := range [][]string{nil, oocArgs(t.TempDir())} {
		dst := loadTable(t, env, client, older, "", prefix, "--path-ids", "--implicit-inner")
		args := append([]string{"migrate", "--from-table", src, "--from-layout", "path", "--from-delimiter", "¦", "--to-table", dst, "--to-layout", "prefix",
			"--path-ids", "--implicit-inner", "--allow-mass-delete", "--no-progress"}, extra...)
		stdout, stderr, code := run(t, env, args...)
		if code != 0 || !strings.Contains(stdout, "verified: ") || (extra != nil) != strings.Contains(stdout+stderr, "out of core") {
			t.Fatalf("%v: exit %d:\n%s\n%s", extra, code, stdout, stderr)
		}
		got[i] = rawLines(t, client, dst)
	}
	if len(got[0]) == 0 {
		t.Fatal("the in-memory migrate left nothing")
	}
	diffLines(t, got[1], got[0])
}
