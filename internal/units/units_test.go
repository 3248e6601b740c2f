package units

import "testing"

func TestDurationText(t *testing.T) {
	for secs, want := range map[float64]string{0.2: "under 1 s", 45: "45 s", 1000: "17 min", 9000: "2.5 h", 5 * 86400: "5.0 days"} {
		if got := DurationText(secs); got != want {
			t.Errorf("DurationText(%g) = %q, want %q", secs, got, want)
		}
	}
	if got := Thousands(1234567); got != "1,234,567" {
		t.Errorf("Thousands = %s", got)
	}
}

func TestSizeText(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536 << 20: "1.5 GiB"} {
		if got := SizeText(n); got != want {
			t.Errorf("SizeText(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCount(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		noun string
		want string
	}{{0, "item", "0 items"}, {1, "node", "1 node"}, {2, "sampled node", "2 sampled nodes"}, {12345, "node", "12,345 nodes"}, {-1, "item", "-1 items"},
		{2, "retry", "2 retries"}, {1, "retry", "1 retry"}, {3, "key", "3 keys"}, {2, "day", "2 days"}} {
		if got := Count(tt.n, tt.noun); got != tt.want {
			t.Errorf("Count(%d, %q) = %q, want %q", tt.n, tt.noun, got, tt.want)
		}
	}
}
