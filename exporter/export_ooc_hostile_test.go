package exporter_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// TestExportRootOutOfCoreHostile: an adjacency table built by hand with
// raw PutItem (a random forest, an orphan, a cycle with a tree below it,
// a chain 3,000 deep) exported with --root in memory and forced out of
// core in 1 MiB, for roots in the cycle, below it, the orphan, the top of
// the chain, a node deep in it and an id that is not there: the same
// bytes, or the same kind of error, and nothing left in --tmp-dir.
func TestExportRootOutOfCoreHostile(t *testing.T) {
	l := mustLayout(t, layouts.AdjacencyName, layouts.Options{})
	client := localClient(t)
	table := ddblocal.NewTable(t, client, l.Table())
	ctx := context.Background()
	for _, it := range oocExportItems() {
		if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	out, tmp := t.TempDir(), t.TempDir()
	for _, root := range []string{"cyc-a", "cyc-c", "self", "orphan", "r1", "deep01500", "not-there"} {
		t.Run(root, func(t *testing.T) {
			export := func(name string, ooc *exporter.ExportOutOfCore) ([]byte, error) {
				path := filepath.Join(out, root+"."+name+".jsonl")
				_, err := exporter.Export(ctx, exporter.ExportOptions{Layout: l, Client: client, Table: table, Root: root, Out: path, OutOfCore: ooc})
				b, _ := os.ReadFile(path)
				return b, err
			}
			mem, merr := export("mem", nil)
			ooc, oerr := export("ooc", &exporter.ExportOutOfCore{Memory: 1 << 20, TmpDir: tmp, Force: true})
			if (merr == nil) != (oerr == nil) || merr != nil && errors.Unwrap(merr) == nil && merr.Error() != oerr.Error() {
				t.Errorf("in memory: %v; out of core: %v", merr, oerr)
			}
			if string(mem) != string(ooc) {
				t.Errorf("in memory %d bytes, out of core %d: not the same", len(mem), len(ooc))
			}
			t.Logf("%d bytes; errors %v / %v", len(mem), merr, oerr)
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("%d files left in --tmp-dir", len(left))
			}
		})
	}
}
