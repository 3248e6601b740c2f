package ddbwrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/statefile"
	"github.com/treeport/treeport/layouts"
)

var (
	// ErrInterrupted ends a run stopped by its context (Ctrl-C) after the
	// writes in flight were acknowledged and the checkpoint, if any, saved.
	ErrInterrupted = errors.New("interrupted")
	// ErrUsage marks a run refused before it wrote anything, for a reason
	// its command line can change: a checkpoint of another input or other
	// flags, a plan that removes too much. Its text is the CLI's usage
	// prefix, which the CLI leaves out when it prints the error.
	ErrUsage = errors.New("usage")
)

// checkpointInterval bounds how often the checkpoint is synced to disk; what
// a crash loses on top of the batches in flight is at most this long's
// worth of acknowledged writes.
const checkpointInterval = 200 * time.Millisecond

// WriteOptions are the options of a write run that a job takes from its
// command line (--dead-letter, --concurrency, --max-wcu, the progress bar):
// each write job embeds them in its options and hands them to Run as they
// are.
type WriteOptions struct {
	// DeadLetter is the file for the items DynamoDB rejects ("": such an
	// item stops the run). With RunOptions.Resume, the file of the run this
	// one goes on from is appended to, and its items counted, since they
	// are behind the checkpoint and will not come again.
	DeadLetter string
	// Concurrency and MaxWCU are the writer's (WriterOptions).
	Concurrency int
	MaxWCU      float64
	// OnProgress, when set, is called every second or so while the writer
	// runs, and once at its end, from one goroutine at a time.
	OnProgress func(RunProgress)
}

// RunOptions configure Run: one resumable write run of numbered puts and
// deletes into one table.
type RunOptions struct {
	WriteOptions
	Client BatchWriter
	Table  string
	Spec   layouts.TableSpec
	// ConsumedCapacity is the writer's (WriterOptions).
	ConsumedCapacity bool
	// Limiter, when set, is the writer's shared rate limiter
	// (WriterOptions.Limiter).
	Limiter *ddb.WriteLimiter
	// Checkpoint, when set, is the run's checkpoint: the operations below
	// its Watermark were acknowledged by an earlier run and are passed
	// over. Run raises the watermark as the writer acknowledges, saves it to
	// CheckpointPath at most every 200 ms, and once more at the end, Done
	// when the run finished. The items held for a hot key that the
	// watermark passed before they were written wait in the held spool
	// beside it (CheckpointPath + ".held", see heldSpool): a run that
	// resumes writes them first.
	Checkpoint     *Checkpoint
	CheckpointPath string
	// Resume says the run goes on from an earlier one (see
	// WriteOptions.DeadLetter).
	Resume bool
	// Total is an estimate of all the operations, the skipped ones
	// included, for OnProgress.
	Total int64
}

// RunProgress is a running write's progress: the writer's, and where it
// stands against the whole run.
type RunProgress struct {
	Progress
	// Skipped were acknowledged by an earlier run and are not written
	// again (the ones its held spool gives back are in Items once
	// written); Total estimates all the operations, Skipped included.
	Skipped, Total int64
}

// Done is how many operations are done, the earlier runs' included.
func (p RunProgress) Done() int64 { return p.Skipped + p.Items + p.DeadLettered }

// RunResult is what a write run did.
type RunResult struct {
	Stats Stats
	// Skipped is how many operations an earlier run acknowledged and this
	// one did not write: the checkpoint's watermark when the run began,
	// less the held items it left in its spool (Stats.Replayed once
	// written).
	Skipped int64
	// RedoneAtMost bounds the operations this run wrote again that the run
	// it resumed may have written already (Checkpoint.RedoneAtMost): the
	// ones it had sent past its watermark, and the held ones it had sent
	// but not written. 0 for a run that did not resume.
	RedoneAtMost int64
	// PriorDeadLettered is how many items the dead-letter file held when
	// the run resumed.
	PriorDeadLettered int64
	// Interrupted says the context ended the run; Done that every
	// operation was acknowledged.
	Interrupted, Done bool
	// Watermark is the checkpoint's watermark as saved at the end (0
	// without a checkpoint).
	Watermark int64
}

// DeadLettered is how many items are in the dead-letter file: this run's
// and the run's it resumed.
func (r *RunResult) DeadLettered() int64 { return r.Stats.DeadLettered + r.PriorDeadLettered }

// Run writes what feed hands to the writer, from the checkpoint's watermark
// on: feed is told the writer and the number of the first operation to
// write (the ones below it were acknowledged already) and must number what
// it writes from 0, in the same order every run.
//
// Cancelling ctx stops feed (it is passed ctx); the operations handed to the
// writer are still written and acknowledged (the writer runs on a context
// that is never cancelled), so that the checkpoint is exact. The run then
// returns ErrInterrupted with its result. Otherwise the error is feed's or
// the writer's, with the result; the result is nil only when the run could
// not start or its checkpoint could not be saved. A caller whose writes
// must finish even on Ctrl-C passes context.WithoutCancel.
func Run(ctx context.Context, opts RunOptions, feed func(ctx context.Context, w *DDBWriter, skip int64) error) (*RunResult, error) {
	var skip int64
	if opts.Checkpoint != nil {
		skip = opts.Checkpoint.Watermark
	}
	deadLetter, prior, err := openDeadLetter(opts.DeadLetter, opts.Resume)
	if err != nil {
		return nil, err
	}
	var deadStart int64 // the dead-letter file's size before this run
	if deadLetter != nil {
		if deadStart, err = deadLetter.Seek(0, io.SeekEnd); err != nil {
			deadLetter.Close()
			return nil, err
		}
	}
	if deadLetter != nil {
		defer deadLetter.Close()
	}
	saver, err := newCheckpointSaver(opts.Checkpoint, opts.CheckpointPath)
	if err != nil {
		return nil, err
	}
	defer saver.close()
	var redone int64
	if opts.Checkpoint != nil && opts.Checkpoint.Sent > skip {
		redone = opts.Checkpoint.Sent - skip
	}
	wo := WriterOptions{
		Concurrency:      opts.Concurrency,
		MaxWCU:           opts.MaxWCU,
		Limiter:          opts.Limiter,
		StartSeq:         skip,
		ConsumedCapacity: opts.ConsumedCapacity,
		OnAck:            saver.ack,
	}
	if opts.Checkpoint != nil {
		wo.OnSend = saver.sent
		wo.HeldSpool = HeldPath(opts.CheckpointPath)
		wo.HeldRun = opts.Checkpoint.Fingerprint
	}
	// The held items of the run this one resumes are below its watermark,
	// but are written by this one.
	var spooled heldCounts
	if opts.Checkpoint != nil {
		spooled = opts.Checkpoint.held
	}
	if opts.OnProgress != nil {
		wo.OnProgress = func(p Progress) {
			opts.OnProgress(RunProgress{Progress: p, Skipped: skip - spooled.waiting, Total: opts.Total})
		}
	}
	if deadLetter != nil {
		wo.DeadLetter = deadLetter
	}
	w := NewDDBWriter(opts.Client, opts.Table, opts.Spec, wo)
	// Interrupted, while the input is read or after, the held items wait
	// in the spool for the run that resumes, instead of holding this one
	// at their keys' pace.
	closed, left := make(chan struct{}), make(chan error, 1)
	go func() {
		var err error
		if opts.Checkpoint != nil {
			select {
			case <-ctx.Done():
				err = w.leaveHeld()
			case <-closed:
			}
		}
		left <- err
	}()
	feedErr := feed(ctx, w, skip)
	stats, closeErr := w.Close(context.WithoutCancel(ctx))
	close(closed)
	if err := <-left; err != nil && closeErr == nil {
		closeErr = err
	}
	res := &RunResult{
		Stats: stats, Skipped: skip - w.spool.replayed, PriorDeadLettered: prior, RedoneAtMost: redone + w.spool.redo,
		Interrupted: errors.Is(feedErr, context.Canceled) || errors.Is(closeErr, context.Canceled) || stats.Held > 0 && ctx.Err() != nil,
		Done:        feedErr == nil && closeErr == nil && stats.Held == 0,
	}
	wm := stats.Watermark
	if first, ok := w.FirstDeadLettered(); ok && errors.Is(feedErr, ErrBarrierRefused) {
		// The refused items were acknowledged as set aside, but what
		// follows the barrier needs them in the table: the rerun goes on
		// from the first of them, and tries them again.
		wm = min(wm, first)
		saver.rewind(wm)
		if deadLetter != nil {
			// This run's refused items are all at or past first: the
			// rerun writes them again, and sets them aside again if
			// DynamoDB still refuses them.
			if err := deadLetter.Truncate(deadStart); err != nil {
				return nil, err
			}
		}
	}
	if err := saver.finish(wm, res.Done); err != nil {
		return nil, err
	}
	if opts.Checkpoint != nil {
		res.Watermark = opts.Checkpoint.Watermark
	}
	switch {
	case res.Interrupted:
		return res, ErrInterrupted
	case feedErr != nil:
		return res, feedErr
	}
	return res, closeErr
}

// openDeadLetter opens the dead-letter file: a new one, or, when a run
// resumes, the earlier run's, appended to. It returns how many items the
// file holds already.
func openDeadLetter(path string, resume bool) (*os.File, int64, error) {
	if path == "" {
		return nil, 0, nil
	}
	if !resume {
		f, err := statefile.CreateOutput(path)
		return f, 0, err
	}
	f, err := statefile.AppendOutput(path) // an output, as os.Create makes it
	if err != nil {
		return nil, 0, err
	}
	var prior int64
	if data, err := os.ReadFile(f.Name()); err == nil {
		prior = int64(bytes.Count(data, []byte("\n")))
	}
	return f, prior, nil
}

// checkpointSaver keeps a checkpoint's watermark as the writer acknowledges
// items, and saves it at most every checkpointInterval; in between it
// writes every advance, and every batch sent, to the checkpoint's journal
// (see readJournal). A nil checkpoint saves nothing.
type checkpointSaver struct {
	mu      sync.Mutex
	ck      *Checkpoint
	path    string
	last    time.Time
	journal *os.File
}

func newCheckpointSaver(ck *Checkpoint, path string) (*checkpointSaver, error) {
	s := &checkpointSaver{ck: ck, path: path}
	if ck == nil {
		return s, nil
	}
	// Made anew (LoadCheckpoint took up what the last one said), never
	// through a link, and written at once, so that a crash before the
	// first advance finds what the checkpoint holds.
	f, err := statefile.Create(journalPath(path), 0o600, isJournal)
	if err != nil {
		return nil, fmt.Errorf("checkpoint journal: %w", err)
	}
	s.journal = f
	s.writeJournal()
	return s, nil
}

// ack is WriterOptions.OnAck.
func (s *checkpointSaver) ack(w int64) error { return s.save(w, false) }

// sent is WriterOptions.OnSend.
func (s *checkpointSaver) sent(next int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if next > s.ck.Sent {
		s.ck.Sent = next
		s.writeJournal()
	}
}

// writeJournal writes the watermark and Sent in place; s.mu is held. A
// failed write only costs more redo after a crash: the synced checkpoint
// still holds.
func (s *checkpointSaver) writeJournal() {
	if s.journal != nil {
		s.journal.WriteAt(journalLine(s.ck.Fingerprint, s.ck.Watermark, s.ck.Sent), 0)
	}
}

// save raises the watermark to w and saves it, now if force is set.
func (s *checkpointSaver) save(w int64, force bool) error {
	if s.ck == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w > s.ck.Watermark {
		s.ck.Watermark = w
		s.writeJournal()
	}
	if !force && time.Since(s.last) < checkpointInterval {
		return nil
	}
	s.last = time.Now()
	return s.ck.Save(s.path)
}

// finish saves the final watermark, and whether the run is done; the
// checkpoint then holds all the journal did, and the journal goes.
func (s *checkpointSaver) finish(w int64, done bool) error {
	if s.ck == nil {
		return nil
	}
	s.mu.Lock()
	s.ck.Done = done
	s.mu.Unlock()
	if err := s.save(w, true); err != nil {
		return err
	}
	s.close()
	os.Remove(journalPath(s.path))
	if done {
		os.Remove(HeldPath(s.path))
	}
	return nil
}

// rewind lowers the watermark to w (a run stopped at a barrier whose
// items were refused must write them again); finish saves it.
func (s *checkpointSaver) rewind(w int64) {
	if s.ck == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w < s.ck.Watermark {
		s.ck.Watermark = w
		s.writeJournal()
	}
}

// close closes the journal.
func (s *checkpointSaver) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.journal != nil {
		s.journal.Close()
		s.journal = nil
	}
}
