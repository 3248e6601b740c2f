package refresh

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/refresh/followstate"
)

// TestFollowStateSpills: the follower's state in stores of 1 MiB that
// spill to disk (internal/diskmap, as a follow out of core keeps it)
// gives every round the changes the stores in memory give, for a forest
// whose state is many times that budget; their runs are on disk while
// it follows, and the stores hold the same keys and values at the end.
func TestFollowStateSpills(t *testing.T) {
	const nodes, rounds = 12_000, 40
	lf, _ := layouts.New(layouts.AdjacencyName, layouts.Options{})
	lt, _ := layouts.New(layouts.PathName, layouts.Options{})
	r := rand.New(rand.NewPCG(7, 7))
	tr := randomTree(r, nodes)
	in := readSnapshot(t, snapshotOf(t, r, tr, nil).Path, lf, nil)
	newFollower := func() *follower {
		return &follower{opts: MigrateOptions{FromLayout: lf, ApplyOptions: ApplyOptions{Target: Target{Layout: lt}}}, log: io.Discard, res: &FollowResult{}}
	}
	mem := newFollower()
	if err := mem.seed(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	// The same state, copied into stores that spill past 1 MiB.
	dir := t.TempDir()
	disk := newFollower()
	for k, from := range mem.stores {
		d := filepath.Join(dir, []string{"source", "destination"}[k])
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		to, err := newKVStore(d, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		disk.stores = append(disk.stores, to)
		if err := from.Ascend(nil, func(key, value []byte) error { return to.Put(key, value) }); err != nil {
			t.Fatal(err)
		}
	}
	defer disk.closeState()
	for k := range mem.stores {
		n := 0
		if err := mem.stores[k].Ascend(nil, func(key, value []byte) error {
			n++
			v, ok, err := disk.stores[k].Get(key)
			if err != nil || !ok || !bytes.Equal(v, value) {
				t.Fatalf("store %d, key %q (%d): %v %v, %q against %q", k, key, n, ok, err, v, value)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		t.Logf("store %d: %d keys equal", k, n)
	}
	disk.m, disk.applied = followstate.New(lf, disk.stores[0], disk.stores[1])
	disk.m.Parents = mem.m.Parents
	disk.held = map[string]held{}

	mk := newRoundMaker(t, r, tr, lf)
	for k := range rounds {
		recs := mk.next(k)
		var got [2][]nodeChange
		for x, f := range []*follower{mem, disk} {
			f.applied.NewRound()
			changes, paths, _ := f.changes(f.affected(f.take(recs)))
			f.applyChanges(changes, paths, nil)
			if err := f.stateErr(); err != nil {
				t.Fatalf("round %d, %s: %v", k, []string{"in memory", "spilled"}[x], err)
			}
			got[x] = changes
		}
		if len(got[0]) == 0 || !reflect.DeepEqual(got[0], got[1]) {
			t.Fatalf("round %d: %d changes in memory, %d spilled; equal: %v", k, len(got[0]), len(got[1]), reflect.DeepEqual(got[0], got[1]))
		}
	}
	var files int
	var size int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files++
			if info, err := d.Info(); err == nil {
				size += info.Size()
			}
		}
		return nil
	})
	if files == 0 || size < 2<<20 {
		t.Errorf("the stores of 1 MiB hold %d files of %d bytes on disk: they did not spill", files, size)
	}
	for k := range mem.stores {
		var want, have [][2][]byte
		collect := func(out *[][2][]byte) func(key, value []byte) error {
			return func(key, value []byte) error {
				*out = append(*out, [2][]byte{bytes.Clone(key), bytes.Clone(value)})
				return nil
			}
		}
		if err := mem.stores[k].Ascend(nil, collect(&want)); err != nil {
			t.Fatal(err)
		}
		if err := disk.stores[k].Ascend(nil, collect(&have)); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(want, have) || int64(len(have)) != disk.stores[k].Len() {
			t.Errorf("store %d: %d keys in memory, %d spilled (Len %d)", k, len(want), len(have), disk.stores[k].Len())
		}
	}
	t.Logf("%d nodes, %d rounds: the spilled stores hold %d files, %d bytes", nodes, rounds, files, size)
}
