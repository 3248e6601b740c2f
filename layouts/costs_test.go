package layouts_test

import (
	"testing"

	"github.com/treeport/treeport/layouts"
)

// TestQueryPrice holds the price of a Query page to DynamoDB's documented
// rules: a Query that finds nothing is billed the minimum of its read type
// (half a unit eventually consistent, one strongly consistent), not the 0
// DynamoDB Local reports; otherwise half a unit (one) per started 4 KB.
func TestQueryPrice(t *testing.T) {
	tests := []struct {
		name       string
		bytes      int64
		consistent bool
		want       float64
	}{
		{"an empty Query", 0, false, 0.5},
		{"an empty strongly consistent Query", 0, true, 1},
		{"one small item", 100, false, 0.5},
		{"4 KB", 4096, false, 0.5},
		{"a byte over 4 KB", 4097, false, 1},
		{"a byte over 4 KB, strongly consistent", 4097, true, 2},
		{"1 MB", 1 << 20, false, 128},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := layouts.QueryPageRCU(tt.bytes, tt.consistent); got != tt.want {
				t.Errorf("QueryPageRCU(%d, %v) = %v, want %v", tt.bytes, tt.consistent, got, tt.want)
			}
		})
	}
	if layouts.MinReadRCU(false) != 0.5 || layouts.MinReadRCU(true) != 1 {
		t.Errorf("MinReadRCU: %v eventually consistent, %v strongly; want 0.5 and 1", layouts.MinReadRCU(false), layouts.MinReadRCU(true))
	}
}
