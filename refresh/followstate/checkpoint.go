package followstate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/internal/statefile"
	"github.com/treeport/treeport/internal/streams"
)

// Checkpoint is what --checkpoint holds for migrate --follow: the
// stream position up to which every record was applied to B.
type Checkpoint struct {
	Kind     string           `json:"kind"`
	From     string           `json:"from_table"`
	To       string           `json:"to_table"`
	Settings string           `json:"settings"`
	SavedAt  time.Time        `json:"saved_at"`
	Records  int64            `json:"records_applied"`
	Position streams.Position `json:"position"`
	// Digest is statefile.Digest of the other fields: a checkpoint edited
	// by hand is refused.
	Digest string `json:"digest,omitempty"`
}

// CheckpointKind is a follow checkpoint's Kind.
const CheckpointKind = "treeport migrate --follow"

// SettingsDigest identifies the flags that shape B's items.
func SettingsDigest(settings map[string]any) string {
	b, _ := json.Marshal(settings) // maps marshal in key order
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// digest is the checkpoint's Digest, computed over its other fields; its
// run is its tables and settings.
func (c *Checkpoint) digest() string {
	d := *c
	d.Digest = ""
	b, _ := json.Marshal(&d)
	return statefile.Digest("follow checkpoint", c.From+"\x00"+c.To+"\x00"+c.Settings, b)
}

// Seal sets Digest from the other fields, as Save does.
func (c *Checkpoint) Seal() { c.Digest = c.digest() }

// Save writes the checkpoint atomically and durably, private (0600), as
// statefile.WritePrivate does.
func (c *Checkpoint) Save(path string) error {
	if path == "" {
		return nil
	}
	c.SavedAt = time.Now().UTC()
	c.Seal()
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return statefile.WritePrivate(path, append(b, '\n'))
}

// MaxCheckpointSize bounds the follow checkpoint LoadCheckpoint reads: a
// stream position of 300,000 shards (about 200 bytes each in JSON), far
// more than a stream keeps in its 24 hours.
const MaxCheckpointSize = 64 << 20

// LoadCheckpoint reads a follow checkpoint: nil when there is none,
// an ErrUsage when it is another run's, or not a file treeport wrote.
func LoadCheckpoint(path string, ck *Checkpoint) (*Checkpoint, error) {
	if path == "" {
		return nil, nil
	}
	f, err := statefile.Open(path, os.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ddbwrite.ErrUsage, err)
	}
	b, err := statefile.ReadAll(f, MaxCheckpointSize)
	f.Close()
	if errors.Is(err, statefile.ErrRefused) {
		return nil, fmt.Errorf("%w: %w", ddbwrite.ErrUsage, err)
	}
	if err != nil {
		return nil, err
	}
	var saved Checkpoint
	if err := json.Unmarshal(b, &saved); err != nil || saved.Kind != CheckpointKind {
		return nil, fmt.Errorf("%w: %s is not a checkpoint of migrate --follow (delete it, or give another --checkpoint)", ddbwrite.ErrUsage, path)
	}
	if saved.Digest != saved.digest() {
		return nil, fmt.Errorf("%w: %w", ddbwrite.ErrUsage, &statefile.Error{Path: path,
			Why: "its digest does not match its content (edited by hand)", Do: "delete it to copy and follow from the start"})
	}
	if saved.From != ck.From || saved.To != ck.To || saved.Settings != ck.Settings {
		return nil, fmt.Errorf("%w: %s belongs to a follow of %s into %s with other flags: give the same flags, or delete the checkpoint to start over",
			ddbwrite.ErrUsage, path, saved.From, saved.To)
	}
	return &saved, nil
}
