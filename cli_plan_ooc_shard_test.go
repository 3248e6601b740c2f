package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/layouts"
)

// TestPlanOutOfCoreSharded: under --shard k/3, each copy's plan out of
// core (forced, in a 1 MiB budget) gives the in-memory copy's summary and
// operations in every layout, the deletes of moved nodes with the other
// copies' items they wait for (prefix moves change keys: some must); the
// three copies' applies out of core, run side by side, leave the table
// equal to the snapshot.
func TestPlanOutOfCoreSharded(t *testing.T) {
	_, client, env := ddbLocal(t)
	typesFlag, baseFile, snapFile := carsSnapshotFiles(t)
	const N = 3
	for _, name := range []string{layouts.AdjacencyName, layouts.PathName, "sharded-path", layouts.ClosureName, layouts.PrefixName} {
		t.Run(name, func(t *testing.T) {
			l, err := layouts.New(name, layouts.Options{})
			if err != nil {
				t.Fatal(err)
			}
			table := loadTable(t, env, client, baseFile, typesFlag, l)
			common := []string{"--in", snapFile, "--types", typesFlag, "--layout", name, "--table", table}
			var changes int64
			waits := 0
			for k := range N {
				s := ddbwrite.Shard{K: k, Of: N}
				shard := []string{"--shard", s.String()}
				sum := sameShardPlans(t, env, s, append(shard, common...)...)
				changes += sum.changes()
				out := filepath.Join(t.TempDir(), "ooc.plan.json")
				run1(t, env, append(append(append([]string{"plan", "--out", out}, shard...), common...), oocArgs(t.TempDir())...)...)
				var p planFile
				if err := json.Unmarshal([]byte(readFile(t, s.FileName(out))), &p); err != nil {
					t.Fatal(err)
				}
				for _, op := range p.Operations {
					waits += len(op.After)
				}
			}
			if changes == 0 {
				t.Fatal("the copies plan nothing: the case tests nothing")
			}
			if name == layouts.PrefixName && waits == 0 {
				t.Error("no delete of a moved prefix node waits for another copy's items: Op.After is not tested")
			}
			var argss [][]string
			for k := range N {
				argss = append(argss, append(append([]string{"apply", "--allow-mass-delete", "--no-progress", "--shard", fmt.Sprintf("%d/%d", k, N),
					"--checkpoint", filepath.Join(t.TempDir(), "ck.json")}, common...), oocArgs(t.TempDir())...))
			}
			stdouts, stderrs, codes := runAll(t, env, argss)
			for k := range N {
				if codes[k] != 0 {
					t.Errorf("apply out of core --shard %d/%d: exit %d:\n%s\n%s", k, N, codes[k], stdouts[k], stderrs[k])
				}
			}
			sameState(t, "after the apply shards out of core", tableState(t, client, table, l.Table()), wantState(t, snapFile, typesFlag, l))
		})
	}
}
