package followstate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/internal/statefile"
	"github.com/treeport/treeport/internal/streams"
)

// TestLoadCheckpointHostile: a checkpoint that is not this follow's is a
// usage error that says what it is and what to do, and reading it costs
// no more memory than a checkpoint's bound, whatever its size: a sparse
// file of 256 MiB, one cut short, another command's, another follow's,
// one with counts past any table, edited by hand.
func TestLoadCheckpointHostile(t *testing.T) {
	dir := t.TempDir()
	want := &Checkpoint{Kind: CheckpointKind, From: "TableA", To: "TableB", Settings: "s1"}
	valid := func(edit func(c *Checkpoint)) []byte {
		c := *want
		c.Records = 12
		c.Position = streams.Position{Stream: "arn:stream", Shards: []streams.ShardPos{{Shard: "shardId-1"}}}
		edit(&c)
		c.Seal()
		b, _ := json.Marshal(&c)
		return b
	}
	good := valid(func(*Checkpoint) {})
	huge := valid(func(c *Checkpoint) { c.Records = 1<<63 - 1 })
	for _, tc := range []struct {
		name    string
		content []byte
		sparse  int64
		err     string // "" for a checkpoint taken
	}{
		{"valid", good, 0, ""},
		{"a count past any table", huge, 0, ""},
		{"sparse 256 MiB", []byte(`{"kind":"treeport migrate --follow",`), 256 << 20, "at most"},
		{"cut short", good[:len(good)/2], 0, "not a checkpoint of migrate --follow"},
		{"an import's checkpoint", []byte(`{"version":2,"fingerprint":"x","watermark":5}`), 0, "not a checkpoint of migrate --follow"},
		{"another follow's tables", valid(func(c *Checkpoint) { c.To = "TableC" }), 0, "belongs to a follow of TableA into TableC"},
		{"other flags (another layout)", valid(func(c *Checkpoint) { c.Settings = "s2" }), 0, "with other flags"},
		{"edited by hand", []byte(strings.Replace(string(good), `"records_applied":12`, `"records_applied":13`, 1)), 0, "edited by hand"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".json")
			if err := os.WriteFile(path, tc.content, 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.sparse > 0 {
				if err := os.Truncate(path, tc.sparse); err != nil {
					t.Fatal(err)
				}
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			got, err := LoadCheckpoint(path, want)
			runtime.ReadMemStats(&after)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
				t.Errorf("reading it allocated %d bytes", alloc)
			}
			if tc.err == "" {
				if err != nil || got == nil || got.From != want.From {
					t.Fatalf("LoadCheckpoint = %v, %v", got, err)
				}
				return
			}
			if err == nil || !errors.Is(err, ddbwrite.ErrUsage) || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), path) {
				t.Fatalf("LoadCheckpoint = %v, %v; want a usage error naming %s with %q", got, err, path, tc.err)
			}
			if tc.sparse > 0 && !errors.Is(err, statefile.ErrRefused) {
				t.Errorf("a checkpoint too large: %v; want a statefile refusal", err)
			}
		})
	}
}
