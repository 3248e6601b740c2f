package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

func writerFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "concurrency", Value: 8, Usage: "BatchWriteItem calls in flight", Category: catWrite},
		&cli.Float64Flag{Name: "max-wcu", Usage: "cap the write rate at this many WCU per second (default: no cap; the rate still backs off on throttling)", Category: catWrite},
		&cli.Int64Flag{Name: "wcu", Usage: "with --create-table: provisioned write capacity (default: on-demand)", Category: catWrite},
		&cli.Int64Flag{Name: "rcu", Usage: "with --create-table: provisioned read capacity (default: on-demand)", Category: catWrite},
		&cli.StringFlag{Name: "dead-letter", Usage: "DynamoDB JSON `FILE` for items DynamoDB rejects; the run then exits 1 (without it, such an item stops the run)", Category: catWrite},
		&cli.StringFlag{Name: "checkpoint", Usage: "save acknowledged progress to `FILE`; a rerun with the same input and flags resumes from it", Category: catWrite},
		&cli.BoolFlag{Name: "no-progress", Usage: "no progress bar, even on a terminal", Category: catWrite},
	}
}

// billing is the capacity a new table gets: provisioned when --wcu or --rcu
// is set (then both must be), on-demand otherwise.
func billing(c *cli.Context) (importer.Billing, error) {
	wcu, rcu := c.Int64("wcu"), c.Int64("rcu")
	if wcu == 0 && rcu == 0 {
		return importer.Billing{}, nil
	}
	if wcu <= 0 || rcu <= 0 {
		return importer.Billing{}, usagef("provisioned capacity needs both --wcu and --rcu above 0 (got --wcu %d --rcu %d); leave both out for on-demand", wcu, rcu)
	}
	return importer.Billing{Provisioned: true, WCU: wcu, RCU: rcu}, nil
}

func awsOptions(c *cli.Context) ddb.AWSOptions {
	return ddb.AWSOptions{
		EndpointURL: c.String("endpoint-url"),
		Region:      c.String("region"),
		Profile:     c.String("profile"),
		MaxConns:    max(64, 2*c.Int("concurrency")),
	}
}

// prepareTable creates the table (--create-table) or checks that the existing
// one has the layout's keys and indexes, before anything is written.
func prepareTable(ctx context.Context, c *cli.Context, client *dynamodb.Client, table string, spec layouts.TableSpec) error {
	if c.Bool("create-table") {
		// An existing table is checked instead of created.
		b, err := billing(c)
		if err != nil {
			return err
		}
		return importer.CreateTable(ctx, client, table, spec, b)
	}
	err := importer.CheckTable(ctx, client, table, spec)
	if errors.Is(err, importer.ErrTableNotFound) {
		return fmt.Errorf("%w (add --create-table to create it)", err)
	}
	return err
}

// checkpointInterval bounds how often the checkpoint is synced to disk; what
// a crash loses on top of the batches in flight is at most this long's
// worth of acknowledged writes.
const checkpointInterval = 200 * time.Millisecond

func importToTable(c *cli.Context, in *importer.Input, l layouts.Layout, emit importer.EmitOptions, started time.Time) error {
	table := c.String("table")
	spec := l.Table()
	// Reading stops on Ctrl-C; writing what was read goes on until it is
	// acknowledged, so the checkpoint is exact.
	readCtx := c.Context
	writeCtx := context.WithoutCancel(c.Context)

	client, err := ddb.NewClient(writeCtx, awsOptions(c))
	if err != nil {
		return err
	}
	if err := prepareTable(readCtx, c, client, table, spec); err != nil {
		return err
	}

	var ck *importer.Checkpoint
	ckPath := c.String("checkpoint")
	if ckPath != "" {
		fp, err := importer.Fingerprint(in.Opts.Path, settings(c, l))
		if err != nil {
			return err
		}
		ck, err = importer.LoadCheckpoint(ckPath)
		switch {
		case errors.Is(err, os.ErrNotExist):
			ck = &importer.Checkpoint{Fingerprint: fp, Table: table, Layout: l.Name()}
		case err != nil:
			return fmt.Errorf("%w: %v", errUsage, err)
		default:
			if err := ck.Match(fp); err != nil {
				return fmt.Errorf("%w: %s: %v", errUsage, ckPath, err)
			}
			if ck.Done {
				fmt.Fprintf(c.App.Writer, "checkpoint %s says this load finished already; nothing to do (delete it to load again)\n", ckPath)
				return nil
			}
			fmt.Fprintf(c.App.ErrWriter, "resuming from checkpoint %s: %d items acknowledged\n", ckPath, ck.Watermark)
		}
		emit.Skip = ck.Watermark
	}

	deadLetter, priorDead, err := openDeadLetter(c.String("dead-letter"), emit.Skip > 0)
	if err != nil {
		return err
	}
	if deadLetter != nil {
		defer deadLetter.Close()
	}

	total := countItems(in, l)
	if emit.Shard.Of > 1 {
		// Partition keys hash evenly: a fair estimate of this shard's part.
		total /= int64(emit.Shard.Of)
	}
	prog := newProgress(c, total, emit.Skip)
	saver := &checkpointSaver{ck: ck, path: ckPath}
	opts := importer.WriterOptions{
		Concurrency: c.Int("concurrency"),
		MaxWCU:      c.Float64("max-wcu"),
		StartSeq:    emit.Skip,
		// DynamoDB's own count of consumed capacity is only needed for the report.
		ConsumedCapacity: c.String("report") != "",
		OnAck:            saver.ack,
		OnProgress:       prog.update,
	}
	if deadLetter != nil {
		opts.DeadLetter = deadLetter
	}
	w := importer.NewDDBWriter(client, table, spec, opts)
	est, emitErr := in.Emit(readCtx, emit, func(seq int64, item layouts.Item) error {
		return w.Write(readCtx, seq, item)
	})
	stats, closeErr := w.Close(writeCtx)
	prog.finish()
	interrupted := errors.Is(emitErr, context.Canceled) || errors.Is(closeErr, context.Canceled)
	if err := saver.finish(stats.Watermark, emitErr == nil && closeErr == nil); err != nil {
		return err
	}
	if p := c.String("report"); p != "" {
		if err := writeReport(p, l, table, est, stats, time.Since(started)); err != nil {
			return err
		}
	}
	if interrupted {
		if ck != nil {
			fmt.Fprintf(c.App.ErrWriter, "interrupted: %d items acknowledged, checkpoint saved to %s\n", ck.Watermark, ckPath)
		} else {
			fmt.Fprintf(c.App.ErrWriter, "interrupted after %d items (no --checkpoint: a rerun starts over, overwriting the same items)\n", stats.Items)
		}
		return errInterrupted
	}
	if emitErr != nil {
		return emitErr
	}
	if closeErr != nil {
		return closeErr
	}
	fmt.Fprintf(c.App.Writer, "loaded %s of %s into %s (%s layout) in %s: %s, %d throttles, %d retries\n",
		countOf(int(stats.Items), "item"), countOf(int(est.Nodes), "node"), table, l.Name(), time.Since(started).Round(time.Millisecond), wcuText(stats), stats.Throttles, stats.Retries)
	if est.Skipped > 0 {
		fmt.Fprintf(c.App.Writer, "%d items were acknowledged by an earlier run and skipped\n", est.Skipped)
	}
	if est.Rejected > 0 {
		fmt.Fprintf(c.App.Writer, "%s rejected: see %s\n", countOf(int(est.Rejected), "record"), c.String("rejects"))
	}
	return deadLetterResult(c, stats.DeadLettered, priorDead)
}

// openDeadLetter opens the --dead-letter file: a new one, or, when a run
// resumes from a checkpoint, the earlier run's, appended to, since the items
// it set aside are behind the checkpoint and will not come again. It returns
// how many items the file holds already.
func openDeadLetter(path string, resume bool) (*os.File, int64, error) {
	if path == "" {
		return nil, 0, nil
	}
	if !resume {
		f, err := os.Create(path)
		return f, 0, err
	}
	var prior int64
	if data, err := os.ReadFile(path); err == nil {
		prior = int64(bytes.Count(data, []byte("\n")))
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	return f, prior, err
}

// deadLetterResult reports the items set aside, this run's and an earlier
// one's, and makes the run exit 1 when there are any.
func deadLetterResult(c *cli.Context, now, prior int64) error {
	if now+prior == 0 {
		return nil
	}
	if prior > 0 {
		fmt.Fprintf(c.App.ErrWriter, "%d items rejected by DynamoDB were set aside in %s (%d of them by the run this one resumed)\n", now+prior, c.String("dead-letter"), prior)
	} else {
		fmt.Fprintf(c.App.ErrWriter, "%d items rejected by DynamoDB were set aside in %s\n", now, c.String("dead-letter"))
	}
	return errDifferences
}

// checkpointSaver keeps a checkpoint's watermark as the writer acknowledges
// items, and saves it at most every checkpointInterval. A nil checkpoint
// saves nothing.
type checkpointSaver struct {
	mu   sync.Mutex
	ck   *importer.Checkpoint
	path string
	last time.Time
}

// ack is WriterOptions.OnAck.
func (s *checkpointSaver) ack(w int64) error { return s.save(w, false) }

// save raises the watermark to w and saves it, now if force is set.
func (s *checkpointSaver) save(w int64, force bool) error {
	if s.ck == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w > s.ck.Watermark {
		s.ck.Watermark = w
	}
	if !force && time.Since(s.last) < checkpointInterval {
		return nil
	}
	s.last = time.Now()
	return s.ck.Save(s.path)
}

// finish saves the final watermark, and whether the run is done.
func (s *checkpointSaver) finish(w int64, done bool) error {
	if s.ck == nil {
		return nil
	}
	s.mu.Lock()
	s.ck.Done = done
	s.mu.Unlock()
	return s.save(w, true)
}

// wcuText is the write capacity a run used: DynamoDB's own figure when it
// was asked for (--report), treeport's count otherwise.
func wcuText(s importer.Stats) string {
	if s.ConsumedWCU > 0 {
		return fmt.Sprintf("%.0f WCU consumed", s.ConsumedWCU)
	}
	return fmt.Sprintf("%d WCU", s.ComputedWCU)
}

// countItems is how many items the load writes, for the progress bar's ETA.
func countItems(in *importer.Input, l layouts.Layout) int64 {
	m := layouts.NewMeasure(l)
	var s transform.Stats
	f := in.Forest
	for _, i := range f.Order() {
		if !f.Rejected(int(i)) {
			f.Stats(int(i), &s)
			l.Measure(&s, m)
		}
	}
	return m.Items
}

type report struct {
	Layout  string         `json:"layout"`
	Table   string         `json:"table"`
	Nodes   int64          `json:"nodes"`
	Skipped int64          `json:"items_skipped_from_checkpoint"`
	Reject  int64          `json:"rejected_records"`
	Writer  importer.Stats `json:"writer"`
	Total   float64        `json:"duration_seconds"`
}

func writeReport(path string, l layouts.Layout, table string, est importer.EmitStats, st importer.Stats, d time.Duration) error {
	b, err := json.MarshalIndent(report{Layout: l.Name(), Table: table, Nodes: est.Nodes, Skipped: est.Skipped,
		Reject: est.Rejected, Writer: st, Total: d.Seconds()}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// progress draws a bar on a terminal and logs a line every few seconds
// otherwise.
type progress struct {
	bar     *progressbar.ProgressBar
	log     io.Writer
	total   int64
	skip    int64
	lastLog time.Time
}

func newProgress(c *cli.Context, total, skip int64) *progress {
	p := &progress{total: total, skip: skip}
	if f, ok := c.App.ErrWriter.(*os.File); ok && term.IsTerminal(int(f.Fd())) && !c.Bool("no-progress") {
		p.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(f),
			progressbar.OptionSetDescription("writing"),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("items"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		_ = p.bar.Set64(skip)
	} else if !c.Bool("no-progress") {
		p.log = c.App.ErrWriter
	}
	return p
}

func (p *progress) update(pr importer.Progress) {
	done := p.skip + pr.Items + pr.DeadLettered
	secs := pr.Elapsed.Seconds()
	if secs <= 0 {
		secs = 1
	}
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("writing (%.0f WCU/s, %d throttles)", float64(pr.WCU)/secs, pr.Throttles))
		_ = p.bar.Set64(done)
		return
	}
	if p.log != nil && time.Since(p.lastLog) >= 5*time.Second {
		p.lastLog = time.Now()
		rate := float64(pr.Items) / secs
		eta := "?"
		if rate > 0 {
			eta = time.Duration(float64(p.total-done) / rate * float64(time.Second)).Round(time.Second).String()
		}
		fmt.Fprintf(p.log, "treeport: %d/%d items, %.0f items/s, %.0f WCU/s, limit %.0f WCU/s, %d throttles, ETA %s\n",
			done, p.total, rate, float64(pr.WCU)/secs, pr.RateLimit, pr.Throttles, eta)
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
