package exporter_test

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/treeport/treeport/exporter"
)

// sameOutOfCore verifies opts again out of core (forced, in a 1 MiB
// budget, with a fresh reader of the file) and fails unless the Diff is
// in's, the Scan's costs aside, and the sorts' files are gone.
func sameOutOfCore(t *testing.T, opts exporter.VerifyOptions, in *exporter.Diff) {
	t.Helper()
	tmp := t.TempDir()
	opts.OutOfCore = &exporter.VerifyOutOfCore{Memory: 1 << 20, TmpDir: tmp, Force: true}
	got, err := exporter.Verify(context.Background(), opts)
	if err != nil {
		t.Fatalf("out of core: %v", err)
	}
	a, b := *got, *in
	a.Read, b.Read = exporter.Stats{}, exporter.Stats{}
	if !reflect.DeepEqual(a, b) {
		var ga, gb strings.Builder
		got.WriteReport(&ga)
		in.WriteReport(&gb)
		t.Errorf("out of core:\n%s\nin memory:\n%s", ga.String(), gb.String())
	}
	emptyDirOf(t, tmp)
}

func emptyDirOf(t *testing.T, dir string) {
	t.Helper()
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d files left in %s", len(left), dir)
	}
}
