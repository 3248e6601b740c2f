package ddbwrite

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/statefile"
)

// The held spool. A key over its partition's rate on average (one parent
// with a tenth of a forest's children, at 1,000 WCU/s a key) holds its
// items back longer and longer: kept in the writer's window, they would
// hold the watermark, fill the window, and stop every other key with them.
// So when the window is full and held items are in it, the writer moves
// them to the held spool, a file beside the checkpoint (PATH.held),
// appended before their sequence numbers are acknowledged: the watermark
// passes them, and the other keys flow. A killed process loses nothing it
// gave the system; for a crash of the machine, the spool is synced before
// a watermark past them goes to OnAck, which writes the journal and the
// checkpoint (in the ack loop, off the path of Write). The spooled items are
// read back a few at a time (at most WriterOptions.Window / 4 of them are
// in memory) and written at their key's pace. Each one's record is marked
// sent before its first call and done once written, in place and without a
// sync, as the checkpoint's journal is: a killed process loses none of it.
//
// A run that resumes writes first the spooled items of the run before that
// its watermark passed and that are not done, and voids the others (the
// input brings them again). Of those, the ones marked sent are all that
// it may write again (Checkpoint.RedoneAtMost). Without a checkpoint the
// spool is a temporary file. The spool is removed once all of it is
// written.
//
// The spool begins with a header line naming the run it belongs to (the
// head of statefile.Digest of the checkpoint's fingerprint), so that
// another file in its place is refused, never read or cut. A record is
// one line: its state (heldWaiting, heldSent, heldDone or heldVoid), the
// item's sequence number in 20 digits, 'p' for a put or 'd' for a delete,
// the head of the digest of what follows the state with the run's
// fingerprint (so that a record edited by hand, or another run's, is
// refused), and the item (or the key) in DynamoDB JSON:
//
//	treeport held spool 1 5d41402abc4b2a76
//	- 00000000000000001234 p 9f86d081884c7d65 {"Item":{"Id":{"S":"n01234"},...}}
//
// The spool holds items: it is made private (0600), as the checkpoint is.

// HeldPath is the held spool beside the checkpoint at path.
func HeldPath(path string) string { return path + ".held" }

// A held record's states.
const (
	heldWaiting = '-'
	heldSent    = 's' // sent at least once: maybe written
	heldDone    = 'd'
	heldVoid    = 'x' // not passed by the watermark when its run stopped
)

// heldHead is the length of a record's head: state, seq, kind, digest and
// spaces.
const heldHead = 1 + 1 + 20 + 1 + 1 + 1 + 16 + 1

// heldHeader is the spool's first line for the run with fingerprint fp.
func heldHeader(fp string) []byte {
	return fmt.Appendf(nil, "treeport held spool 1 %s\n", statefile.Digest("held spool", fp)[:16])
}

// heldSum is the digest of a record's seq, kind and item (line[2:] less
// the digest itself) for the run with fingerprint fp, cut to 16 digits.
func heldSum(fp string, seqKind, item []byte) string {
	return statefile.Digest("held record", fp, seqKind, item)[:16]
}

// heldRefused is the error of a spool that is not what treeport wrote.
func heldRefused(path string, why string) error {
	return &statefile.Error{Path: path, Why: why,
		Do: "its items may be needed: delete the checkpoint and every file beside it (CHECKPOINT.*) to write everything again"}
}

// heldCounts is what a held spool holds for a run resuming at a watermark.
type heldCounts struct {
	start   int64 // where its records begin (0: no whole header)
	end     int64 // the length of its header and whole records
	waiting int64 // records to write: not done, below the watermark
	sent    int64 // of those, the ones sent at least once
}

// scanHeld reads the spool f's records for a run resuming at watermark,
// and checks that they are the run's with fingerprint fp. With void, it
// marks void the records that are not done and at or past the watermark.
// A last record cut short (a crash while it was appended, before anything
// was acknowledged) is left out of end; so is a header cut short, with no
// record after it.
func scanHeld(f *os.File, fp string, watermark int64, void bool) (heldCounts, error) {
	var c heldCounts
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, 1<<62), 64<<10)
	header := heldHeader(fp)
	line, err := r.ReadBytes('\n')
	switch {
	case errors.Is(err, io.EOF) && bytes.HasPrefix(header, line):
		return c, nil // made, and killed before its header was whole
	case err != nil && !errors.Is(err, io.EOF):
		return c, err
	case !bytes.Equal(line, header):
		if bytes.HasPrefix(line, []byte("treeport held spool ")) {
			return c, heldRefused(f.Name(), "the held spool of another run")
		}
		return c, heldRefused(f.Name(), "not a held spool")
	}
	c.start, c.end = int64(len(line)), int64(len(line))
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return c, nil // a part line without its newline is cut short
		}
		if err != nil {
			return c, err
		}
		state, seq, _, _, perr := parseHeld(line, fp)
		if perr != nil {
			return c, heldRefused(f.Name(), fmt.Sprintf("record at byte %d: %v", c.end, perr))
		}
		switch {
		case state == heldDone || state == heldVoid:
		case seq < watermark:
			c.waiting++
			if state == heldSent {
				c.sent++
			}
		case void:
			if _, err := f.WriteAt([]byte{heldVoid}, c.end); err != nil {
				return c, err
			}
		}
		c.end += int64(len(line))
	}
}

// appendHeld appends a record for the run with fingerprint fp.
func appendHeld(buf []byte, fp string, state byte, seq int64, kind byte, item map[string]types.AttributeValue) []byte {
	buf = append(buf, state, ' ')
	start := len(buf)
	buf = fmt.Appendf(buf, "%020d", seq)
	buf = append(buf, ' ', kind)
	seqKind := len(buf)
	buf = append(buf, ' ')
	buf = append(buf, "0000000000000000 "...)
	at := len(buf)
	buf = ddbjson.AppendLine(buf, item)
	copy(buf[seqKind+1:], heldSum(fp, buf[start:seqKind], buf[at:len(buf)-1]))
	return buf
}

// parseHeld splits a record of the run with fingerprint fp, and checks
// its digest.
func parseHeld(line []byte, fp string) (state byte, seq int64, put bool, item []byte, err error) {
	if len(line) < heldHead+2 || line[len(line)-1] != '\n' || line[1] != ' ' || line[22] != ' ' || line[24] != ' ' || line[heldHead-1] != ' ' {
		return 0, 0, false, nil, errors.New("damaged")
	}
	switch line[0] {
	case heldWaiting, heldSent, heldDone, heldVoid:
	default:
		return 0, 0, false, nil, fmt.Errorf("unknown state %q", line[0])
	}
	seq, err = strconv.ParseInt(string(line[2:22]), 10, 64)
	if err != nil {
		return 0, 0, false, nil, err
	}
	switch line[23] {
	case 'p':
		put = true
	case 'd':
	default:
		return 0, 0, false, nil, fmt.Errorf("unknown kind %q", line[23])
	}
	item = line[heldHead:]
	if string(line[25:heldHead-1]) != heldSum(fp, line[2:24], item[:len(item)-1]) {
		return 0, 0, false, nil, errors.New("its digest does not match (edited by hand, or another run's)")
	}
	return line[0], seq, put, item, nil
}

// heldSpool is a writer's spool of held items. Its file is opened when a
// run resumes with one, or made when an item is first spooled. It is safe
// for concurrent use.
type heldSpool struct {
	mu    sync.Mutex
	path  string // "": a temporary file
	fp    string // the fingerprint of the run the spool belongs to
	f     *os.File
	end   int64 // the length of the records
	read  int64 // where the next record to read back starts
	mem   int   // spooled requests in memory (held or in flight)
	bound int   // at most this many are in memory
	dirty bool  // appended to since the last sync

	leaving  bool         // read nothing back: the records wait for another run
	left     atomic.Int64 // records not done yet
	spooled  atomic.Int64 // items this run spooled
	replayed int64        // records of an earlier run to write, when it began
	redo     int64        // of those, the ones it had sent
}

// openHeldSpool opens the spool at path for a run with fingerprint fp
// resuming at watermark, or prepares one that is made when needed. A file
// at path that is not this run's spool is refused (statefile.ErrRefused),
// never read or cut.
func openHeldSpool(path, fp string, watermark int64, bound int) (*heldSpool, error) {
	s := &heldSpool{path: path, fp: fp, bound: max(bound, MaxBatchItems)}
	if path == "" {
		return s, nil
	}
	f, err := statefile.Open(path, os.O_RDWR)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("held spool: %w", err)
	}
	c, err := scanHeld(f, fp, watermark, true)
	if err == nil && c.start == 0 {
		// No whole header: nothing was spooled. put makes it again.
		f.Close()
		return s, nil
	}
	if err == nil {
		err = f.Truncate(c.end)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("held spool: %w", err)
	}
	s.f, s.end, s.read = f, c.end, c.start
	s.replayed, s.redo = c.waiting, c.sent
	s.left.Store(c.waiting)
	return s, nil
}

// put appends the records of reqs, and returns how many of reqs, from the
// first, stay in memory; the others are read back later. Until put
// returns, none of reqs may be acknowledged; until sync returns after
// that, no watermark past them may be saved.
func (s *heldSpool) put(reqs []*request) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		var err error
		if s.path == "" {
			s.f, err = os.CreateTemp("", "treeport-held-*")
		} else {
			// Made anew, never through a link or over another file: an
			// earlier run's spool was opened by openHeldSpool.
			s.f, err = statefile.Create(s.path, 0o600, func(head []byte) bool {
				return bytes.HasPrefix(head, []byte("treeport held spool ")) || bytes.HasPrefix([]byte("treeport held spool "), head)
			})
		}
		if err == nil {
			h := heldHeader(s.fp)
			if _, err = s.f.WriteAt(h, 0); err != nil {
				s.f.Close()
				s.f = nil
			}
			s.read, s.end = int64(len(h)), int64(len(h))
		}
		if err != nil {
			return 0, fmt.Errorf("held spool: %w", err)
		}
	}
	var buf []byte
	offs := make([]int64, len(reqs))
	for i, r := range reqs {
		offs[i] = s.end + int64(len(buf))
		state, kind := byte(heldWaiting), byte('p')
		if r.sent {
			state = heldSent
		}
		if r.wr.PutRequest == nil {
			kind = 'd'
		}
		buf = appendHeld(buf, s.fp, state, r.seqs[len(r.seqs)-1], kind, r.item)
	}
	if _, err := s.f.WriteAt(buf, s.end); err != nil {
		return 0, fmt.Errorf("held spool %s: %w", s.f.Name(), err)
	}
	s.dirty = s.path != "" // a temporary spool is never read by another run
	caughtUp := s.read == s.end
	s.end += int64(len(buf))
	for i, r := range reqs {
		r.spooled = offs[i] + 1
	}
	s.left.Add(int64(len(reqs)))
	s.spooled.Add(int64(len(reqs)))
	kept := 0
	if caughtUp && !s.leaving {
		kept = min(len(reqs), s.bound-s.mem)
		s.mem += kept
		if kept == len(reqs) {
			s.read = s.end
		} else {
			s.read = offs[kept]
		}
	}
	return kept, nil
}

// readBack reads back spooled records while fewer than half the bound are
// in memory, and returns them as requests made by mk.
func (s *heldSpool) readBack(mk func(seq int64, item map[string]types.AttributeValue, put bool) *request) ([]*request, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil || s.leaving || s.read >= s.end || s.mem > s.bound/2 {
		return nil, nil
	}
	var out []*request
	r := bufio.NewReaderSize(io.NewSectionReader(s.f, s.read, s.end-s.read), 64<<10)
	for s.mem < s.bound && s.read < s.end {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return out, fmt.Errorf("held spool %s: reading back at byte %d: %w", s.f.Name(), s.read, err)
		}
		off := s.read
		s.read += int64(len(line))
		state, seq, put, data, err := parseHeld(line, s.fp)
		if err != nil {
			return out, heldRefused(s.f.Name(), fmt.Sprintf("record at byte %d: %v", off, err))
		}
		if state == heldDone || state == heldVoid {
			continue
		}
		item, err := ddbjson.DecodeLine(data)
		if err != nil {
			return out, fmt.Errorf("held spool %s: record at byte %d: %w", s.f.Name(), off, err)
		}
		q := mk(seq, item, put)
		q.spooled = off + 1
		q.sent = state == heldSent
		out = append(out, q)
		s.mem++
	}
	return out, nil
}

// sync syncs what was appended to the spool of a checkpoint.
func (s *heldSpool) sync() error {
	s.mu.Lock()
	if !s.dirty {
		s.mu.Unlock()
		return nil
	}
	s.dirty = false
	f := s.f
	s.mu.Unlock()
	// What is appended from now on is synced too, or marks the spool dirty
	// again.
	if err := f.Sync(); err != nil {
		return fmt.Errorf("held spool %s: %w", f.Name(), err)
	}
	return nil
}

// leave stops the reading back.
func (s *heldSpool) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leaving = true
}

// mark sets the state of r's record. A failed write only costs more redo
// after a crash, as the journal's.
func (s *heldSpool) mark(r *request, state byte) {
	s.f.WriteAt([]byte{state}, r.spooled-1)
}

// done marks r's record done.
func (s *heldSpool) done(r *request) {
	s.mark(r, heldDone)
	s.left.Add(-1)
	s.mu.Lock()
	s.mem--
	s.mu.Unlock()
}

// close closes the file, and removes it when every record is done or it
// is a temporary one.
func (s *heldSpool) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return
	}
	s.f.Close()
	if s.path == "" || s.left.Load() == 0 {
		os.Remove(s.f.Name())
	}
	s.f = nil
}

// heldAt is a held request with the time it may go.
func heldAt(reqs []*request, due time.Time) []heldReq {
	out := make([]heldReq, len(reqs))
	for i, r := range reqs {
		out[i] = heldReq{r: r, due: due}
	}
	return out
}
