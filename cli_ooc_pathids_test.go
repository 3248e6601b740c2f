package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/testserver/faultproxy"
	"github.com/treeport/treeport/internal/testserver/s3local"
	"github.com/treeport/treeport/layouts"
)

// genPathIDs writes a random forest of n nodes whose ids are path ids
// joined by delim, shuffled (children often before parents), a third of
// its nodes without attributes: implicit inner nodes under
// --implicit-inner when they have children.
func genPathIDs(t *testing.T, n int, delim string) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(n), 27))
	ids := make([]string, 0, n)
	var lines []string
	for i := range n {
		rec := map[string]any{"id": fmt.Sprintf("root%d", i)}
		if i > 0 && rng.IntN(30) != 0 {
			parent := ids[rng.IntN(i)]
			rec["id"], rec["parent_id"] = parent+delim+fmt.Sprintf("n%d", i), parent
		}
		if rng.IntN(3) != 0 {
			rec["size"] = rng.IntN(100000)
		}
		ids = append(ids, rec["id"].(string))
		b, _ := json.Marshal(rec)
		lines = append(lines, string(b))
	}
	rng.Shuffle(len(lines), func(a, b int) { lines[a], lines[b] = lines[b], lines[a] })
	in := filepath.Join(t.TempDir(), "paths.jsonl")
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return in
}

// pathIDsFlags are the flags of a layout with path ids, and implicit
// inner nodes when implicit.
func pathIDsFlags(implicit bool) []string {
	if implicit {
		return []string{"--path-ids", "--implicit-inner"}
	}
	return []string{"--path-ids"}
}

// TestOutOfCorePathIDsImportFiles: import --out of a shuffled forest of
// path ids, in every layout, with --path-ids and with --implicit-inner
// (where the layout takes it), writes byte for byte the same files out of
// core (in a 1 MiB budget) as in memory, and leaves nothing in --tmp-dir.
func TestOutOfCorePathIDsImportFiles(t *testing.T) {
	for _, name := range layouts.Names() {
		for _, implicit := range []bool{false, true} {
			if implicit && name == layouts.AdjacencyName {
				continue
			}
			t.Run(fmt.Sprintf("%s/implicit=%v", name, implicit), func(t *testing.T) {
				t.Parallel()
				l, err := layouts.New(name, layouts.Options{PathIDs: true})
				if err != nil {
					t.Fatal(err)
				}
				in := genPathIDs(t, 4000, l.Delimiter())
				dir, tmp := t.TempDir(), t.TempDir()
				args := append([]string{"import", "--in", in, "--layout", name, "--items-per-file", "3000"}, pathIDsFlags(implicit)...)
				if _, stderr, code := run(t, nil, append(args, "--out", filepath.Join(dir, "mem"))...); code != 0 {
					t.Fatalf("in memory: exit %d: %s", code, stderr)
				}
				if _, stderr, code := run(t, nil, append(append(args, "--out", filepath.Join(dir, "ooc")), oocArgs(tmp)...)...); code != 0 {
					t.Fatalf("out of core: exit %d: %s", code, stderr)
				}
				sameFiles(t, filepath.Join(dir, "mem"), filepath.Join(dir, "ooc"))
				emptyDir(t, tmp)
			})
		}
	}
}

// TestOutOfCorePathIDsTable: import --table out of core with implicit
// inner nodes (prefix: dynamotree's rows; path) writes the items an
// import in memory emits, killed at random points and resumed from its
// checkpoint.
func TestOutOfCorePathIDsTable(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	for _, name := range []string{"prefix", "path"} {
		t.Run(name, func(t *testing.T) {
			l, err := layouts.New(name, layouts.Options{PathIDs: true, ImplicitInner: true})
			if err != nil {
				t.Fatal(err)
			}
			in := genPathIDs(t, 2000, l.Delimiter())
			want := expectedItems(t, in, "", l)
			table := ddblocal.NewTable(t, client, l.Table())
			proxy, err := faultproxy.New(faultproxy.Config{Target: endpoint, Seed: 3, Lifetime: 5 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer proxy.Close()
			ck := filepath.Join(t.TempDir(), "ck.json")
			args := append(append([]string{"import", "--in", in, "--layout", name, "--table", table, "--checkpoint", ck,
				// 600 WCU/s: the writes take at least 3 s, so that the kills
				// (at most 1.5 s in) always come before the end.
				"--concurrency", "4", "--max-wcu", "600", "--no-progress"}, pathIDsFlags(true)...), oocArgs(t.TempDir())...) // SIGKILL leaves its files
			kills, _, _ := killRuns(t, args, proxy.URL(), 2, func(rng *rand.Rand) time.Duration {
				return time.Duration(300+rng.IntN(1200)) * time.Millisecond
			})
			if kills == 0 {
				t.Fatal("no run was killed: the test proves no resume")
			}
			diffLines(t, canonical(t, scanTable(t, client, table)), canonical(t, want))

		})
	}
}

// TestOutOfCoreImplicitDryRunMatchesInMemory: import --dry-run of a
// shuffled forest of path ids with implicit inner nodes, in every layout
// that takes them and in the models with path ids (and of the same forest
// with a node whose key is too long), prints out of core (forced, in a 1
// MiB budget) exactly what it prints in memory: stdout, with and without
// --json, stderr and the exit code; and leaves nothing in --tmp-dir.
func TestOutOfCoreImplicitDryRunMatchesInMemory(t *testing.T) {
	var targets [][]string
	for _, name := range []string{"prefix", "path", "sharded-path", "closure"} {
		targets = append(targets, append([]string{"--layout", name}, pathIDsFlags(true)...))
	}
	targets = append(targets, []string{"--model", "fixtures/models/s3-inventory.json", "--model-param", "bucket=b"}, []string{"--model", "fixtures/models/store-locations.json"})
	for _, tg := range targets {
		var delim string
		switch tg[1] {
		case "fixtures/models/s3-inventory.json":
			delim = "/"
		case "fixtures/models/store-locations.json":
			delim = "#"
		default:
			l, err := layouts.New(tg[1], layouts.Options{PathIDs: true, ImplicitInner: true})
			if err != nil {
				t.Fatal(err)
			}
			delim = l.Delimiter()
		}
		in := genPathIDs(t, 3000, delim)
		// A node whose key is too long: it and its subtree are rejected,
		// and its parent may be left without children.
		long := strings.Repeat("x", 2100)
		bad := filepath.Join(t.TempDir(), "bad.jsonl")
		lines := strings.Split(readFile(t, in), "\n")
		var parent string
		for _, line := range lines {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["parent_id"] != nil {
				parent = rec["id"].(string)
				break
			}
		}
		extra := fmt.Sprintf(`{"id":%q,"parent_id":%q}`+"\n"+`{"id":%q,"parent_id":%q}`+"\n",
			parent+delim+long, parent, parent+delim+long+delim+"below", parent+delim+long)
		if err := os.WriteFile(bad, []byte(extra+readFile(t, in)), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{in, bad} {
			for _, asJSON := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/json=%v", filepath.Base(tg[1]), filepath.Base(path), asJSON), func(t *testing.T) {
					args := append([]string{"--in", path}, tg...)
					if asJSON {
						args = append(args, "--json")
					}
					wantOut, wantErr, _ := sameDryRun(t, args)
					if !strings.Contains(wantOut, "nodes") {
						t.Errorf("no plan in memory:\n%s\n%s", wantOut, wantErr)
					}
					if (path == bad) != strings.Contains(wantErr, "too long") && (path == bad) != strings.Contains(wantErr, "limit") {
						t.Errorf("the long key's problem (bad input: %v):\n%s", path == bad, wantErr)
					}
				})
			}
		}
	}
}

// TestMigrateOutOfCorePathIDs migrates tables with path ids whose inner
// nodes are implied (dynamotree's rows built by hand, and a generated
// forest imported with --implicit-inner) between layouts, once in memory
// and once out of core in a tiny forced budget: the spill adds the
// implied nodes as a Scan does, and the destinations are equal item for
// item, the spill gone from --tmp-dir.
func TestMigrateOutOfCorePathIDs(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	hand := prefixTable(t, client, dynamotreeRows())
	prefix, _ := layouts.New("prefix", layouts.Options{PathIDs: true, ImplicitInner: true})
	path, _ := layouts.New("path", layouts.Options{PathIDs: true, ImplicitInner: true, Delimiter: "¦"})
	in := genPathIDs(t, 1500, "¦")
	genPrefix := loadTable(t, env, client, in, "", prefix, "--path-ids", "--implicit-inner")
	genPath := loadTable(t, env, client, in, "", path, "--path-ids", "--implicit-inner", "--delimiter", "¦")
	for _, c := range []struct {
		name, from, fromLayout, to string
		args                       []string
	}{
		{"hand-built prefix to path", hand, "prefix", "path", []string{"--path-ids", "--implicit-inner", "--to-delimiter", "¦"}},
		{"hand-built prefix to closure", hand, "prefix", "closure", []string{"--path-ids", "--to-delimiter", "¦"}},
		{"generated prefix to sharded-path", genPrefix, "prefix", "sharded-path", []string{"--path-ids", "--implicit-inner", "--to-delimiter", "¦"}},
		{"generated path to prefix", genPath, "path", "prefix", []string{"--path-ids", "--implicit-inner", "--from-delimiter", "¦"}},
		{"generated path to adjacency", genPath, "path", "adjacency", []string{"--from-path-ids", "--from-implicit-inner", "--from-delimiter", "¦", "--to-path-ids", "--to-delimiter", "¦"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			migrate := func(extra ...string) ([]string, string) {
				dst := ddblocal.TableName(t)
				dropTableLater(t, client, dst)
				args := append(append([]string{"migrate", "--from-table", c.from, "--from-layout", c.fromLayout,
					"--to-table", dst, "--to-layout", c.to, "--create-table", "--no-progress"}, c.args...), extra...)
				stdout, stderr, code := run(t, env, args...)
				if code != 0 {
					t.Fatalf("%v: exit %d:\n%s\n%s", extra, code, stdout, stderr)
				}
				return canonical(t, scanTable(t, client, dst)), stderr
			}
			want, memErr := migrate()
			tmp := t.TempDir()
			got, oocErr := migrate(oocArgs(tmp)...)
			if strings.Contains(memErr, "out of core") || !strings.Contains(oocErr, "out of core") {
				t.Errorf("the runs did not take the paths asked for:\nin memory: %s\nout of core: %s", memErr, oocErr)
			}
			if len(want) == 0 {
				t.Fatal("the in-memory migrate wrote nothing")
			}
			diffLines(t, got, want)
			emptyDir(t, tmp)
		})
	}
}

// TestOutOfCorePathIDsImportS3: import --out s3:// out of core with
// implicit inner nodes (prefix) uploads the items an import in memory
// writes to local files.
func TestOutOfCorePathIDsImportS3(t *testing.T) {
	s3ep := s3local.Endpoint(t)
	client := s3local.Client(t, s3ep)
	bucket := s3local.NewBucket(t, client)
	in := genPathIDs(t, 3000, "¦")
	dir, tmp := t.TempDir(), t.TempDir()
	args := []string{"import", "--in", in, "--layout", "prefix", "--path-ids", "--implicit-inner", "--items-per-file", "4000"}
	if _, stderr, code := run(t, nil, append(args, "--out", dir)...); code != 0 {
		t.Fatalf("in memory: exit %d: %s", code, stderr)
	}
	if _, stderr, code := run(t, s3Env(s3ep, "http://127.0.0.1:1"), append(append(args, "--out", "s3://"+bucket+"/ooc"), oocArgs(tmp)...)...); code != 0 {
		t.Fatalf("out of core: exit %d: %s", code, stderr)
	}
	var want, got []string
	matches, _ := filepath.Glob(filepath.Join(dir, "data", "*.json.gz"))
	for _, p := range matches {
		b, _ := os.ReadFile(p)
		want = append(want, gunzipLines(t, b)...)
	}
	for _, k := range s3local.Keys(t, client, bucket, "ooc/data/") {
		got = append(got, gunzipLines(t, s3local.Get(t, client, bucket, k))...)
	}
	slices.Sort(want)
	slices.Sort(got)
	if len(want) < 3000 || !slices.Equal(got, want) {
		t.Errorf("%d items uploaded out of core, %d written in memory: not the same", len(got), len(want))
	}
	emptyDir(t, tmp)
}
