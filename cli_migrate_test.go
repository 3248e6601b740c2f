package main

// End-to-end tests of migrate (issue 6) against DynamoDB Local: every layout
// pair, and a destination that is refused or resumed.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// ---- migrate ------------------------------------------------------------

// migrateVariant is a destination layout with its options, as flags and as
// layouts.Options.
type migrateVariant struct {
	flags []string
	opts  layouts.Options
}

// sameLayoutVariants gives each layout, migrated into itself, other names or
// another delimiter, so that the copy is not the source's bytes.
var sameLayoutVariants = map[string]migrateVariant{
	layouts.PathName: {[]string{"--to-delimiter", "/", "--to-attr", "Path=Route"},
		layouts.Options{Delimiter: "/", Attr: map[string]string{"Path": "Route"}}},
	layouts.ShardedName: {[]string{"--to-shards", "3", "--to-attr", "GraphId=Graph"},
		layouts.Options{Shards: 3, Attr: map[string]string{"GraphId": "Graph"}}},
	layouts.ClosureName: {[]string{"--to-attr", "RelativeDepth=Level", "--to-attr", "ByAncestor=ByAnc"},
		layouts.Options{Attr: map[string]string{"RelativeDepth": "Level", "ByAncestor": "ByAnc"}}},
	layouts.PrefixName: {[]string{"--to-delimiter", "/"}, layouts.Options{Delimiter: "/"}},
	layouts.AdjacencyName: {[]string{"--to-attr", "Id=NodeId", "--to-attr", "ByParent=GSI1"},
		layouts.Options{Attr: map[string]string{"Id": "NodeId", "ByParent": "GSI1"}}},
}

// TestMigrateEveryLayoutPair migrates the typed cars table from every layout
// into every layout: each copy is verified, equals import of the same data
// into the destination layout, and the source is not touched.
func TestMigrateEveryLayoutPair(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: migrates between every pair of layouts (62 s under -race)")
	}
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	typesFlag := fixtureTypes(t, "cars")
	const in = "fixtures/cars.csv"
	// One imported table per layout: the sources, and what each
	// destination must equal.
	sources := map[string]string{}
	imported := map[string][]string{}
	for _, name := range layouts.Names() {
		l, _ := layouts.New(name, layouts.Options{})
		sources[name] = loadTable(t, env, client, in, typesFlag, l)
		imported[name] = canonical(t, scanTable(t, client, sources[name]))
		diffLines(t, imported[name], canonical(t, expectedItems(t, in, typesFlag, l)))
	}
	t.Run("pairs", func(t *testing.T) {
		for _, from := range layouts.Names() {
			t.Run(from, func(t *testing.T) {
				t.Parallel()
				src := sources[from]
				before := rawLines(t, client, src)
				for _, to := range layouts.Names() {
					dst := ddblocal.TableName(t)
					dropTableLater(t, client, dst)
					args := []string{"migrate", "--from-table", src, "--from-layout", from, "--to-table", dst, "--to-layout", to, "--create-table", "--no-progress"}
					want := imported[to]
					if from == to {
						v := sameLayoutVariants[to]
						args = append(args, v.flags...)
						l, err := layouts.New(to, v.opts)
						if err != nil {
							t.Fatal(err)
						}
						want = canonical(t, expectedItems(t, in, typesFlag, l))
					}
					stdout, stderr, code := run(t, env, args...)
					if code != 0 || !strings.Contains(stdout, "verified") {
						t.Errorf("%s → %s: exit %d:\n%s\n%s", from, to, code, stdout, stderr)
						continue
					}
					got := canonical(t, scanTable(t, client, dst))
					if !slices.Equal(got, want) {
						t.Errorf("%s → %s: the copy differs from import into %s:", from, to, to)
						diffLines(t, got, want)
					}
				}
				if !slices.Equal(rawLines(t, client, src), before) {
					t.Errorf("migrating from %s changed the source table", from)
				}
				// The source as its own destination is refused.
				_, stderr, code := run(t, env, "migrate", "--from-table", src, "--from-layout", from, "--to-table", src, "--to-layout", layouts.ClosureName, "--no-progress")
				if code != 2 || !strings.Contains(stderr, "--from-table and --to-table") {
					t.Errorf("migrate into its own source: exit %d, want 2:\n%s", code, stderr)
				}
				if !slices.Equal(rawLines(t, client, src), before) {
					t.Errorf("migrate into its own source changed it")
				}
			})
		}
	})
}

// TestMigrateRefusesToWipeDestination: a destination holding other nodes
// would lose them all; migrate refuses unless told, like apply.
func TestMigrateRefusesToWipeDestination(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	closure, _ := layouts.New(layouts.ClosureName, layouts.Options{})
	prefix, _ := layouts.New(layouts.PrefixName, layouts.Options{})
	src := loadTable(t, env, client, "fixtures/cars.csv", fixtureTypes(t, "cars"), closure)
	dst := loadTable(t, env, client, "fixtures/folders.csv", fixtureTypes(t, "folders"), prefix)
	before := rawLines(t, client, dst)
	args := []string{"migrate", "--from-table", src, "--from-layout", "closure", "--to-table", dst, "--to-layout", "prefix", "--no-progress"}
	stdout, stderr, code := run(t, env, args...)
	if code != 2 || !strings.Contains(stderr, "--allow-mass-delete") || strings.Contains(stdout, "verified") {
		t.Errorf("migrate over another tree: exit %d, want 2 naming --allow-mass-delete:\n%s\n%s", code, stdout, stderr)
	}
	if !slices.Equal(rawLines(t, client, dst), before) {
		t.Fatal("the refused migrate changed the destination")
	}
	stdout, stderr, code = run(t, env, append(args, "--allow-mass-delete")...)
	if code != 0 || !strings.Contains(stdout, "verified") {
		t.Fatalf("migrate --allow-mass-delete: exit %d:\n%s\n%s", code, stdout, stderr)
	}
	sameState(t, "destination", tableState(t, client, dst, prefix.Table()), wantState(t, "fixtures/cars.csv", fixtureTypes(t, "cars"), prefix))
}

// TestMigrateInterruptResumes interrupts a checkpointed migrate: the rerun
// resumes, verifies, and the copy is exact; other destination options are
// refused while the checkpoint is unfinished.
func TestMigrateInterruptResumes(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	in := genInput(t, 600)
	path, _ := layouts.New(layouts.PathName, layouts.Options{})
	prefix, _ := layouts.New(layouts.PrefixName, layouts.Options{})
	src := loadTable(t, env, client, in, "", path)
	srcBefore := rawLines(t, client, src)
	dst := ddblocal.TableName(t)
	dropTableLater(t, client, dst)
	ck := filepath.Join(t.TempDir(), "ck.json")
	args := []string{"migrate", "--from-table", src, "--from-layout", "path", "--to-table", dst, "--to-layout", "prefix",
		"--create-table", "--checkpoint", ck, "--no-progress"}
	// 1200 items of 1 WCU at 150 a second: about 8 s.
	interruptWhen(t, env, append(args, "--max-wcu", "150", "--concurrency", "1"), "progress in the checkpoint", checkpointMoved(ck))
	if _, err := os.Stat(ck + ".plan.json"); err != nil {
		t.Fatalf("no plan beside the checkpoint: %v", err)
	}
	partial := rawLines(t, client, dst)
	if len(partial) == 0 || len(partial) >= 1200 {
		t.Fatalf("destination holds %d of 1200 items after the interrupt", len(partial))
	}
	_, msg, code := run(t, env, append(slices.Clone(args), "--to-delimiter", "/")...)
	if code != 2 || !strings.Contains(msg, "unfinished") {
		t.Errorf("migrate with other destination options over an unfinished checkpoint: exit %d, want 2:\n%s", code, msg)
	}
	if !slices.Equal(rawLines(t, client, dst), partial) {
		t.Fatal("the refused migrate changed the destination")
	}
	stdout, msg, code := run(t, env, args...)
	if code != 0 || !strings.Contains(stdout, "verified") || !strings.Contains(msg, "resuming from checkpoint") {
		t.Fatalf("resumed migrate: exit %d:\n%s\n%s", code, stdout, msg)
	}
	sameState(t, "destination", tableState(t, client, dst, prefix.Table()), wantState(t, in, "", prefix))
	if !slices.Equal(rawLines(t, client, src), srcBefore) {
		t.Error("the source table changed")
	}
}
