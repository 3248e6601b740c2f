package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// Two copies of a sharded load, given the same file names, each keep their
// own checkpoint, report and dead-letter file; together they fill the table
// exactly; a copy finds only its own checkpoint and refuses another shard's.
func TestShardedLoadKeepsFilesPerShard(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	in := genInput(t, 600)
	l, _ := layouts.New("closure", layouts.Options{})
	want := expectedItems(t, in, "", l)
	table := ddblocal.NewTable(t, client, l.Table())
	dir := t.TempDir()
	args := func(shard string) []string {
		return []string{"import", "--in", in, "--layout", "closure", "--table", table, "--shard", shard, "--no-progress",
			"--checkpoint", filepath.Join(dir, "ck.json"), "--report", filepath.Join(dir, "report.json"),
			"--dead-letter", filepath.Join(dir, "dead.json")}
	}
	env := awsEnv(endpoint)
	for _, shard := range []string{"0/2", "1/2"} {
		if _, stderr, code := run(t, env, args(shard)...); code != 0 {
			t.Fatalf("shard %s: exit %d: %s", shard, code, stderr)
		}
	}
	for _, name := range []string{"ck.shard-0-of-2.json", "ck.shard-1-of-2.json", "report.shard-0-of-2.json",
		"report.shard-1-of-2.json", "dead.shard-0-of-2.json", "dead.shard-1-of-2.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, name := range []string{"ck.json", "report.json", "dead.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s was written: a sharded copy must write its own", name)
		}
	}
	diffLines(t, canonical(t, scanTable(t, client, table)), canonical(t, want))

	stdout, stderr, code := run(t, env, args("1/2")...)
	if code != 0 || !strings.Contains(stdout, "ck.shard-1-of-2.json says this load finished already") {
		t.Errorf("shard 1/2 again: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// Shard 0's checkpoint where shard 1 looks for its own is refused.
	ck0, err := os.ReadFile(filepath.Join(dir, "ck.shard-0-of-2.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ck.shard-1-of-2.json"), ck0, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := run(t, env, args("1/2")...); code != 2 || !strings.Contains(stderr, "different input or different flags") {
		t.Errorf("shard 1/2 with shard 0's checkpoint: exit %d: %s", code, stderr)
	}
}
