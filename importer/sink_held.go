package importer

import (
	"bufio"
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
// A record is one line: its state (heldWaiting, heldSent, heldDone or
// heldVoid), the item's sequence number in 20 digits, 'p' for a put or 'd'
// for a delete, and the item (or the key) in DynamoDB JSON:
//
//	- 00000000000000001234 p {"Item":{"Id":{"S":"n01234"},...}}

// heldPath is the held spool beside the checkpoint at path.
func heldPath(path string) string { return path + ".held" }

// A held record's states.
const (
	heldWaiting = '-'
	heldSent    = 's' // sent at least once: maybe written
	heldDone    = 'd'
	heldVoid    = 'x' // not passed by the watermark when its run stopped
)

// heldHead is the length of a record's head: state, seq, kind and spaces.
const heldHead = 1 + 1 + 20 + 1 + 1 + 1

// heldCounts is what a held spool holds for a run resuming at a watermark.
type heldCounts struct {
	end     int64 // the length of its whole records
	waiting int64 // records to write: not done, below the watermark
	sent    int64 // of those, the ones sent at least once
}

// scanHeld reads the spool f's records for a run resuming at watermark.
// With void, it marks void the records that are not done and at or past
// the watermark. A last record cut short (a crash while it was appended,
// before anything was acknowledged) is left out of end.
func scanHeld(f *os.File, watermark int64, void bool) (heldCounts, error) {
	var c heldCounts
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, 1<<62), 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return c, nil // a part line without its newline is cut short
		}
		if err != nil {
			return c, err
		}
		state, seq, _, _, perr := parseHeld(line)
		if perr != nil {
			return c, fmt.Errorf("importer: held spool %s: record at byte %d: %w", f.Name(), c.end, perr)
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

// parseHeld splits a record.
func parseHeld(line []byte) (state byte, seq int64, put bool, item []byte, err error) {
	if len(line) < heldHead+2 || line[len(line)-1] != '\n' || line[1] != ' ' || line[22] != ' ' || line[24] != ' ' {
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
	return line[0], seq, put, line[heldHead:], nil
}

// heldSpool is a writer's spool of held items. Its file is opened when a
// run resumes with one, or made when an item is first spooled. It is safe
// for concurrent use.
type heldSpool struct {
	mu    sync.Mutex
	path  string // "": a temporary file
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

// openHeldSpool opens the spool at path for a run resuming at watermark,
// or prepares one that is made when needed.
func openHeldSpool(path string, watermark int64, bound int) (*heldSpool, error) {
	s := &heldSpool{path: path, bound: max(bound, MaxBatchItems)}
	if path == "" {
		return s, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("importer: held spool: %w", err)
	}
	c, err := scanHeld(f, watermark, true)
	if err == nil {
		err = f.Truncate(c.end)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("importer: held spool: %w", err)
	}
	s.f, s.end = f, c.end
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
			s.f, err = os.OpenFile(s.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		}
		if err != nil {
			return 0, fmt.Errorf("importer: held spool: %w", err)
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
		item := r.item
		if r.wr.PutRequest == nil {
			kind = 'd'
		}
		buf = append(buf, state, ' ')
		buf = fmt.Appendf(buf, "%020d", r.seqs[len(r.seqs)-1])
		buf = append(buf, ' ', kind, ' ')
		buf = ddbjson.AppendLine(buf, item)
	}
	if _, err := s.f.WriteAt(buf, s.end); err != nil {
		return 0, fmt.Errorf("importer: held spool %s: %w", s.f.Name(), err)
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
			return out, fmt.Errorf("importer: held spool %s: reading back at byte %d: %w", s.f.Name(), s.read, err)
		}
		off := s.read
		s.read += int64(len(line))
		state, seq, put, data, err := parseHeld(line)
		if err != nil {
			return out, fmt.Errorf("importer: held spool %s: record at byte %d: %w", s.f.Name(), off, err)
		}
		if state == heldDone || state == heldVoid {
			continue
		}
		item, err := ddbjson.DecodeLine(data)
		if err != nil {
			return out, fmt.Errorf("importer: held spool %s: record at byte %d: %w", s.f.Name(), off, err)
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
		return fmt.Errorf("importer: held spool %s: %w", f.Name(), err)
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
