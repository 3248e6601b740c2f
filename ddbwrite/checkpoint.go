package ddbwrite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/treeport/treeport/internal/statefile"
)

// CheckpointVersion is the version of the checkpoint file format. Version 2
// added the digest.
const CheckpointVersion = 2

// ErrCheckpointMismatch marks a checkpoint written for another input or
// other flags.
var ErrCheckpointMismatch = errors.New("ddbwrite: checkpoint does not match this run")

// Checkpoint is the acknowledged progress of an import, saved to --checkpoint
// so that a rerun with the same input and flags resumes where it stopped.
type Checkpoint struct {
	Version int `json:"version"`
	// Fingerprint identifies the input and the flags (see Fingerprint);
	// the caller computes it.
	Fingerprint string `json:"fingerprint"`
	// Watermark is the number of items acknowledged in order: every item
	// numbered below it is in the table, in the dead-letter file, or in
	// the held spool beside the checkpoint (see heldSpool), which a run
	// that resumes writes first.
	Watermark int64 `json:"watermark"`
	// Done is set when the run finished; a rerun then has nothing to do.
	Done bool `json:"done,omitempty"`
	// Sent is one past the highest sequence number the run handed to
	// DynamoDB: the items from Watermark to Sent are all that it may have
	// written past the watermark, and a rerun writes them again.
	Sent int64 `json:"sent,omitempty"`
	// For people reading the file.
	Table   string    `json:"table,omitempty"`
	Layout  string    `json:"layout,omitempty"`
	SavedAt time.Time `json:"saved_at"`
	// Digest is statefile.Digest of the checkpoint's other fields and its
	// fingerprint: a checkpoint edited by hand, or another run's, is
	// refused.
	Digest string `json:"digest"`

	// held is what the held spool beside the file holds for a run that
	// resumes at Watermark.
	held heldCounts
}

// LoadCheckpoint reads a checkpoint file, with its journal and held spool.
// A missing file gives an error matching fs.ErrNotExist, which callers
// treat as "start from the beginning". A file that is not what treeport
// wrote (a symbolic link, another user's, edited by hand: see
// statefile) gives an error matching statefile.ErrRefused.
func LoadCheckpoint(path string) (*Checkpoint, error) {
	f, err := statefile.Open(path, os.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("reading checkpoint: %w", err)
	}
	// A checkpoint is a few hundred bytes: a large file is not one.
	data, err := statefile.ReadAll(f, 1<<20)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("reading checkpoint %s: %w", path, err)
	}
	var c Checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("checkpoint %s is not valid JSON (%v); delete it to start over", path, err)
	}
	if c.Version != CheckpointVersion {
		return nil, fmt.Errorf("checkpoint %s has version %d, this treeport reads version %d; delete it to start over", path, c.Version, CheckpointVersion)
	}
	if want, err := c.digest(); err != nil || c.Digest != want {
		return nil, &statefile.Error{Path: path, Why: "its digest does not match its content (edited by hand, or cut short)",
			Do: "delete it, and the files beside it (" + filepath.Base(path) + ".*), to start over"}
	}
	if c.Watermark < 0 || c.Sent < 0 {
		return nil, fmt.Errorf("checkpoint %s has a negative watermark %d or sent %d; delete it to start over", path, c.Watermark, c.Sent)
	}
	if err := c.readJournal(path); err != nil {
		return nil, err
	}
	if err := c.readHeld(path); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return &c, nil
}

// digest is the checkpoint's Digest, computed over its other fields.
func (c *Checkpoint) digest() (string, error) {
	d := *c
	d.Digest = ""
	b, err := json.Marshal(&d)
	if err != nil {
		return "", err
	}
	return statefile.Digest("checkpoint", c.Fingerprint, b), nil
}

// readHeld counts the records of the held spool beside the checkpoint at
// path (see heldSpool) that a run resuming at its watermark writes.
func (c *Checkpoint) readHeld(path string) error {
	if c.Done {
		return nil
	}
	f, err := statefile.Open(HeldPath(path), os.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	c.held, err = scanHeld(f, c.Fingerprint, c.Watermark, false)
	return err
}

// Held is how many items held for a hot key the run that saved the
// checkpoint left unwritten below its watermark, in its held spool: a run
// that resumes writes them first.
func (c *Checkpoint) Held() int64 { return c.held.waiting }

// RedoneAtMost bounds the items a run that resumes from the checkpoint
// writes again that the run that saved it may have written already: the
// ones it had sent past its watermark (Sent − Watermark), and the held
// ones in its spool that it had sent.
func (c *Checkpoint) RedoneAtMost() int64 {
	return max(c.Sent-c.Watermark, 0) + c.held.sent
}

// The checkpoint file is synced at most every 200 ms: a crash between two
// saves would redo what was acknowledged since the last one. Between saves,
// every advance of the watermark, and every batch sent, is also written in
// place to a small journal beside it (PATH.wm, one fixed-size line: the
// fingerprint's head, the watermark, Sent), without a sync: a killed
// process loses none of it (the system holds what it wrote), so a rerun
// after kill -9 redoes only the batches that were in flight or acknowledged
// out of order. After a crash of the machine itself the synced checkpoint
// still holds, with up to 200 ms more to redo. The journal is removed once
// the checkpoint is saved at the end of a run.

// journalPath is the journal beside the checkpoint at path.
func journalPath(path string) string { return path + ".wm" }

// journalLine is the journal's one line: the fingerprint's head, the
// watermark, Sent, and the head of their digest with the whole
// fingerprint, so that a line edited by hand, or another run's, is known.
func journalLine(fp string, watermark, sent int64) []byte {
	head := fp
	if len(head) > 16 {
		head = head[:16]
	}
	sum := journalSum(fp, watermark, sent)
	return fmt.Appendf(nil, "%-16s %20d %20d %s\n", head, watermark, sent, sum)
}

// journalSum is the digest of a journal line's figures, cut to 16 digits.
func journalSum(fp string, watermark, sent int64) string {
	return statefile.Digest("journal", fp, strconv.AppendInt(nil, watermark, 10), strconv.AppendInt(nil, sent, 10))[:16]
}

// isJournal says a file's first bytes are a journal's line, of any run.
func isJournal(head []byte) bool {
	var fp, sum string
	var wm, sent int64
	n, _ := fmt.Sscanf(string(head), "%s %d %d %s", &fp, &wm, &sent, &sum)
	return n == 4 && len(sum) == 16 && bytes.Count(head, []byte("\n")) <= 1
}

// readJournal takes up the journal beside the checkpoint at path, when it
// belongs to this checkpoint and is further on. A journal of another
// fingerprint (a checkpoint deleted to start over) is passed over; one
// whose digest does not match, or that is not a file treeport wrote, is
// refused.
func (c *Checkpoint) readJournal(path string) error {
	if c.Done {
		return nil
	}
	jp := journalPath(path)
	f, err := statefile.Open(jp, os.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	f.Close()
	if err != nil {
		return fmt.Errorf("reading checkpoint journal %s: %w", jp, err)
	}
	if len(data) == 0 {
		return nil // made, and killed before its first line
	}
	var head, sum string
	var wm, sent int64
	if _, err := fmt.Sscanf(string(data), "%s %d %d %s", &head, &wm, &sent, &sum); err != nil {
		return &statefile.Error{Path: jp, Why: "not a checkpoint journal", Do: "delete it to resume from the checkpoint's own watermark"}
	}
	if want := string(bytes.TrimSpace(journalLine(c.Fingerprint, 0, 0)[:16])); head != want {
		return nil
	}
	if wm < 0 || sent < 0 || sum != journalSum(c.Fingerprint, wm, sent) {
		return &statefile.Error{Path: jp, Why: "its digest does not match its figures (edited by hand)", Do: "delete it to resume from the checkpoint's own watermark"}
	}
	c.Watermark = max(c.Watermark, wm)
	c.Sent = max(c.Sent, sent)
	return nil
}

// Match returns nil when the checkpoint was written for the run with
// fingerprint fp, and an error matching ErrCheckpointMismatch otherwise.
func (c *Checkpoint) Match(fp string) error {
	if c.Fingerprint == fp {
		return nil
	}
	return fmt.Errorf("%w: it was written for a different input or different flags; "+
		"rerun with the same input and flags to resume, or delete the checkpoint file to start over", ErrCheckpointMismatch)
}

// Save writes the checkpoint atomically: to a temporary file in the same
// directory, synced, renamed over path, and the directory synced, so that a
// crash leaves either the old checkpoint or the new one. It sets Version,
// SavedAt and Digest. The file is private (0600): statefile.WritePrivate.
func (c *Checkpoint) Save(path string) error {
	c.Version = CheckpointVersion
	c.SavedAt = time.Now().UTC().Truncate(time.Millisecond)
	d, err := c.digest()
	if err != nil {
		return err
	}
	c.Digest = d
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if err := statefile.WritePrivate(path, data); err != nil {
		return fmt.Errorf("saving checkpoint %s: %w", path, err)
	}
	return nil
}
