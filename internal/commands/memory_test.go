package commands

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestParseSize: sizes read as bytes, and NaN, the infinities and sizes
// past 4 EiB refused with a message, never read as whatever int64(NaN)
// is on the machine.
func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     int64
		err      string // a part of the error; "" for none
	}{
		{"bytes", "1048576", 1 << 20, ""},
		{"MiB", "512MiB", 512 << 20, ""},
		{"lower case", "4gib", 4 << 30, ""},
		{"fraction", "1.5GiB", 3 << 29, ""},
		{"GB", "2GB", 2e9, ""},
		{"largest", "4096PiB", 0, "not a size"}, // no PiB unit
		{"4 EiB", "4194304TiB", 1 << 62, ""},
		{"NaN", "NaN", 0, "not a size"},
		{"nan MiB", "nan MiB", 0, "not a size"},
		{"Inf", "Inf", 0, "not a size"},
		{"+Inf GiB", "+InfGiB", 0, "not a size"},
		{"infinity", "infinity", 0, "not a size"},
		{"-Inf", "-Inf", 0, "not a size"},
		{"zero", "0", 0, "not a size"},
		{"negative", "-1MiB", 0, "not a size"},
		{"over 4 EiB", "4194305TiB", 0, "largest size"},
		{"1e400", "1e400", 0, "not a size"},
		{"empty", "", 0, "not a size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSize(tc.in)
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Fatalf("parseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("parseSize(%q) = %d, %v; want an error with %q", tc.in, got, err, tc.err)
			}
		})
	}
}

// TestMemoryNaNIsUsage: --memory NaN is a usage error (exit 2) that names
// the flag, for import and for migrate --follow alike.
func TestMemoryNaNIsUsage(t *testing.T) {
	for _, args := range [][]string{
		{"treeport", "import", "--memory", "NaN", "--layout", "adjacency", "--out", t.TempDir() + "/o.jsonl", "--in", "in.jsonl"},
		{"treeport", "migrate", "--follow", "--follow-idle", "1s", "--memory", "NaN", "--from-table", "srcA", "--to-table", "dstB", "--from-layout", "adjacency", "--to-layout", "adjacency", "--region", "us-east-1", "--endpoint-url", "http://127.0.0.1:1"},
	} {
		err := App().Run(args)
		if err == nil || !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--memory") {
			t.Errorf("%v: %v; want a usage error about --memory", args[1:], err)
		}
	}
}

// TestSoftLimit: three quarters of the budget and 16 MiB, never negative
// (a negative limit leaves Go's as it was) for the largest budgets.
func TestSoftLimit(t *testing.T) {
	for _, mem := range []int64{1 << 20, 1 << 30, 3 << 60, 1 << 62, math.MaxInt64} {
		got := softLimit(mem)
		if got <= 0 || got < mem/2 {
			t.Errorf("softLimit(%d) = %d", mem, got)
		}
	}
	if got := softLimit(1 << 30); got != 3<<28+16<<20 {
		t.Errorf("softLimit(1GiB) = %d", got)
	}
}
