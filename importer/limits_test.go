package importer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

func itoa(n int) string { return strconv.Itoa(n) }

// TestManyAttrNamesBounded: an input whose every record brings a new
// attribute name keeps maxAttrNames of them, not one a record, and a
// layout's reserved name first seen past them is still found (by reading
// the input again), at its record.
func TestManyAttrNamesBounded(t *testing.T) {
	const n = maxAttrNames + 20_000
	var b strings.Builder
	b.WriteString(`{"id":"r"}` + "\n")
	for k := range n {
		b.WriteString(`{"id":"n` + itoa(k) + `","parent_id":"r","a` + itoa(k) + `":1}` + "\n")
	}
	b.WriteString(`{"id":"z","parent_id":"r","Path":"x"}` + "\n")
	path := filepath.Join(t.TempDir(), "names.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := ReadInput(context.Background(), InputOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.attrNames) > maxAttrNames || !in.manyNames {
		t.Errorf("kept %d attribute names of %d (more: %v); want at most %d", len(in.attrNames), n+1, in.manyNames, maxAttrNames)
	}
	l, err := layouts.New(layouts.PathName, layouts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	problems := in.CheckLayout(l)
	if len(problems) != 1 || problems[0].ID != "z" || problems[0].Line != n+2 || !errors.Is(problems[0], transform.ErrReservedAttr) {
		t.Fatalf("problems %v; want z's reserved name Path, at line %d", problems, n+2)
	}
	if z := in.Forest.Lookup("z"); !in.Forest.Rejected(z) || in.Forest.Rejected(in.Forest.Lookup("n5")) {
		t.Errorf("z rejected: %v, n5 rejected: %v; want z only", in.Forest.Rejected(z), in.Forest.Rejected(in.Forest.Lookup("n5")))
	}
}

// TestZstdWindowOverLimitIsNotEmpty: a CSV file compressed with a zstd
// window over infile.MaxZstdWindow is refused with that limit, not called
// empty (its first bytes could not be decompressed).
func TestZstdWindowOverLimitIsNotEmpty(t *testing.T) {
	data := []byte("id,parent_id\na,\n")
	frame := append([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, (30 - 10) << 3}, byte(1|len(data)<<3), 0, 0)
	path := filepath.Join(t.TempDir(), "in.csv.zst")
	if err := os.WriteFile(path, append(frame, data...), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadInput(context.Background(), InputOptions{Path: path})
	if err == nil || strings.Contains(err.Error(), "empty") || !strings.Contains(err.Error(), "32 MiB") || !errors.Is(err, ErrInvalid) && !errors.Is(err, transform.ErrParse) {
		t.Errorf("ReadInput: %v; want the window limit, not an empty file", err)
	}
}
