package commands

import (
	"strings"
	"testing"
	"time"
)

// TestProgressStepLines: a stage's log line counts records with thousands
// separators, and a stage that counts bytes shows them as a size.
func TestProgressStepLines(t *testing.T) {
	for _, tc := range []struct {
		desc        string
		done, total int64
		want        string
	}{
		{"joining parents (records)", 1234567, 9876543, "joining parents (records): 1,234,567 of 9,876,543"},
		{"sorting by id (bytes spilled)", 3 << 30, -1, "sorting by id (bytes spilled): 3.0 GiB after"},
		{"writing the plan (bytes)", 512 << 20, 1 << 30, "writing the plan (bytes): 512.0 MiB of 1.0 GiB"},
	} {
		var log strings.Builder
		p := &progress{log: &log, started: time.Now().Add(-time.Minute)}
		p.step(tc.desc, tc.done, tc.total)
		if !strings.Contains(log.String(), tc.want) {
			t.Errorf("step(%q, %d, %d) logged %q, want it to hold %q", tc.desc, tc.done, tc.total, log.String(), tc.want)
		}
	}
}
