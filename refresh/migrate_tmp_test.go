package refresh

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// TestMigrateSnapshotInTmpDir: migrate's snapshot of its source (a source
// that fits --memory) is made in --tmp-dir, not the system's temporary
// directory, which here does not exist, and so is the plan of its apply;
// nothing is left in --tmp-dir.
func TestMigrateSnapshotInTmpDir(t *testing.T) {
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	r := rand.New(rand.NewPCG(27, 3))
	l := newLayout(t, layoutCase{name: layouts.PathName})
	source := ddblocal.NewTable(t, client, l.Table())
	f := randomTree(r, 30)
	if _, err := Apply(context.Background(), ApplyOptions{Target: Target{Client: client, Table: source, Layout: l}, Input: snapshotOf(t, r, f, nil)}); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "gone"))
	dest := ddblocal.TableName(t)
	t.Cleanup(func() { dropTable(t, client, dest) })
	opts := MigrateOptions{
		ApplyOptions: ApplyOptions{Target: Target{Client: client, Table: dest, Layout: l},
			Settings: map[string]any{"command": "migrate"}, CreateTable: true},
		From: source, FromLayout: l,
	}
	opts.Input.OutOfCore = &importer.OutOfCore{Memory: 1 << 30, TmpDir: tmp, Layout: l}
	res, err := Migrate(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Exact() || res.Source.Nodes != 30 {
		t.Errorf("migrate: exact %v, %d nodes", res.Exact(), res.Source.Nodes)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("%d files left in --tmp-dir", len(left))
	}
}
