package layouts

import (
	"strconv"
	"testing"

	"github.com/treeport/treeport/transform"
)

// TestNumberSize: the formatting-free sizes agree with transform.NumberSize
// of the decimal text, and the max and sums with brute force.
func TestNumberSize(t *testing.T) {
	maxNS, sum := 0, int64(0)
	for r := 0; r <= numberSizeTable+2000; r++ {
		if got, want := numberSize(r), transform.NumberSize(strconv.Itoa(r)); got != want {
			t.Fatalf("numberSize(%d) = %d, want %d", r, got, want)
		}
		if got, want := digits(r), len(strconv.Itoa(r)); got != want {
			t.Fatalf("digits(%d) = %d, want %d", r, got, want)
		}
		sum += int64(numberSize(r))
		if got := sumNumberSize(r); got != sum {
			t.Fatalf("sumNumberSize(%d) = %d, want %d", r, got, sum)
		}
		if got := int64(numberSize(0)) + sumNumberSizeFrom1(r); got != sum {
			t.Fatalf("counted sum to %d = %d, want %d", r, got, sum)
		}
		if r >= 1 {
			maxNS = max(maxNS, numberSize(r))
			if got := maxNumberSize(r); got != maxNS {
				t.Fatalf("maxNumberSize(%d) = %d, want %d", r, got, maxNS)
			}
		}
	}
}

// TestSumNumberSizeDeep: past the table, the counted sum agrees with
// adding numberSize one by one, across the powers of ten where the number
// of digits changes (a 100,000-deep chain's dry run measures these).
func TestSumNumberSizeDeep(t *testing.T) {
	sum := sumNumberSize(numberSizeTable - 1)
	for r := numberSizeTable; r <= 1_100_000; r++ {
		sum += int64(numberSize(r))
		if r%997 == 0 || r%10_000 <= 1 || r%10_000 == 9_999 {
			if got := sumNumberSize(r); got != sum {
				t.Fatalf("sumNumberSize(%d) = %d, want %d", r, got, sum)
			}
		}
	}
}

// TestShard pins the sharded-path k of a few ids to FNV-1a 64 values
// computed outside Go.
func TestShard(t *testing.T) {
	tests := []struct {
		id       string
		by4, by7 int
	}{
		{"CM1", 1, 1}, {"CM2", 2, 3}, {"CM20", 4, 4}, {"CM3", 3, 7}, {"CM4", 4, 6},
		{"CM8", 4, 1}, {"Ω", 1, 6}, {"é 1", 3, 1}, {`q,"uote`, 2, 6},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			if got := Shard(tt.id, 4); got != tt.by4 {
				t.Errorf("Shard(%q, 4) = %d, want %d", tt.id, got, tt.by4)
			}
			if got := Shard(tt.id, 7); got != tt.by7 {
				t.Errorf("Shard(%q, 7) = %d, want %d", tt.id, got, tt.by7)
			}
			if got := Shard(tt.id, 1); got != 1 {
				t.Errorf("Shard(%q, 1) = %d, want 1", tt.id, got)
			}
		})
	}
}
