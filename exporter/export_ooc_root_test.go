package exporter_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// liveHeapPeak runs fn and returns the peak of the live heap (as of each
// collection) while it ran, above what was live before.
func liveHeapPeak(t *testing.T, fn func()) uint64 {
	t.Helper()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	base := m.HeapAlloc
	var (
		peak uint64
		stop = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	if peak < base {
		return 0
	}
	return peak - base
}

// TestExportRootOutOfCoreHeap: a subtree of 50,000 nodes (a random tree
// under R, a node below a root of the table, path layout) exported with
// --memory 1MiB, not forced, and Scan pages of 500 items: its query stops once what it read is over the
// budget, and the whole table's passes keep the subtree, with the live
// heap a small part of what the export in memory holds, and the same
// bytes. A subtree of 300 nodes beside it fits the budget: its query
// alone reads it, with no Scan.
func TestExportRootOutOfCoreHeap(t *testing.T) {
	const big, small = 50_000, 300
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	l := mustLayout(t, layouts.PathName, layouts.Options{})
	rng := rand.New(rand.NewPCG(27, 50))
	attrs := func(i int) transform.Attrs {
		return transform.Attrs{"name": &types.AttributeValueMemberS{Value: fmt.Sprintf("node %d of the tree", i)},
			"size": &types.AttributeValueMemberN{Value: fmt.Sprint(rng.IntN(1 << 20))}}
	}
	recs := []*transform.Record{{ID: "top", Attrs: attrs(0)}, {ID: "R", Parent: "top", Attrs: attrs(1)}, {ID: "S", Parent: "top", Attrs: attrs(2)}}
	for i := range big {
		parent := "R"
		if i > 0 && rng.IntN(100) > 0 {
			parent = fmt.Sprintf("r%05d", rng.IntN(i))
		}
		recs = append(recs, &transform.Record{ID: fmt.Sprintf("r%05d", i), Parent: parent, Attrs: attrs(i)})
	}
	for i := range small {
		parent := "S"
		if i > 0 {
			parent = fmt.Sprintf("s%03d", rng.IntN(i))
		}
		recs = append(recs, &transform.Record{ID: fmt.Sprintf("s%03d", i), Parent: parent, Attrs: attrs(i)})
	}
	client := localClient(t)
	table := loadTable(t, client, l, recs)
	out := t.TempDir()
	export := func(name, root string, ooc *exporter.ExportOutOfCore) (exporter.ExportStats, []byte) {
		t.Helper()
		path := filepath.Join(out, name)
		st, err := exporter.Export(context.Background(), exporter.ExportOptions{Layout: l, Client: client, Table: table,
			Root: root, Out: path, Scan: exporter.ScanOptions{Segments: 2, PageSize: 500}, OutOfCore: ooc})
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return st, b
	}
	tmp := t.TempDir()
	budget := &exporter.ExportOutOfCore{Memory: 1 << 20, TmpDir: tmp}

	var mem, ooc []byte
	var memSt, oocSt exporter.ExportStats
	memPeak := liveHeapPeak(t, func() { memSt, mem = export("mem.jsonl", "R", nil) })
	oocPeak := liveHeapPeak(t, func() { oocSt, ooc = export("ooc.jsonl", "R", budget) })
	t.Logf("subtree of %d: live heap in memory %.1f MB, out of core %.1f MB; reads %s", big+1, float64(memPeak)/1e6, float64(oocPeak)/1e6, oocSt.Read)
	if memSt.Nodes != big+1 || oocSt.Nodes != big+1 || memSt.OutOfCore || !oocSt.OutOfCore || !oocSt.SubtreeScanned {
		t.Errorf("nodes %d in memory (%v), %d out of core (%v, scanned %v)", memSt.Nodes, memSt.OutOfCore, oocSt.Nodes, oocSt.OutOfCore, oocSt.SubtreeScanned)
	}
	if len(mem) < big*40 || !bytes.Equal(mem, ooc) {
		t.Errorf("out of core: %d bytes, in memory %d, not the same", len(ooc), len(mem))
	}
	if fmt.Sprint(memSt.Forest) != fmt.Sprint(oocSt.Forest) || memSt.Forest.Orphans != 1 {
		t.Errorf("forest %+v, in memory %+v", oocSt.Forest, memSt.Forest)
	}
	// Out of core: the sorts' eighths of the budget, a Scan page of 500
	// items, and the query's last page (up to 1 MB, decoded) before it
	// stopped; in memory, every record.
	if oocPeak > 12<<20 || oocPeak*3 > memPeak {
		t.Errorf("live heap out of core %d bytes, in memory %d: want under 12 MiB and a third", oocPeak, memPeak)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("%d files left in the tmp dir", len(left))
	}

	st, b := export("small.jsonl", "S", budget)
	_, want := export("small-mem.jsonl", "S", nil)
	if st.OutOfCore || st.SubtreeScanned || st.Nodes != small+1 || st.Read.Items > 2*small || !bytes.Equal(b, want) {
		t.Errorf("a subtree within the budget: out of core %v, scanned %v, %d nodes, %d items read; same bytes %v",
			st.OutOfCore, st.SubtreeScanned, st.Nodes, st.Read.Items, bytes.Equal(b, want))
	}
}
