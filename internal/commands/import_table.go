package commands

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/ddbtable"
	"github.com/treeport/treeport/internal/units"
)

func writerFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.IntFlag{Name: "concurrency", Value: 8, Usage: "BatchWriteItem calls in flight", Category: catWrite},
		&cli.Float64Flag{Name: "max-wcu", Usage: "cap the write rate at this many WCU per second (default: no cap; the rate still backs off on throttling)", Category: catWrite},
		&cli.Int64Flag{Name: "wcu", Usage: "with --create-table: provisioned write capacity (default: on-demand)", Category: catWrite},
		&cli.Int64Flag{Name: "rcu", Usage: "with --create-table: provisioned read capacity (default: on-demand)", Category: catWrite},
		&cli.StringFlag{Name: "dead-letter", Usage: "DynamoDB JSON `FILE` for items DynamoDB rejects; the run then exits 1 (without it, such an item stops the run)", Category: catWrite},
		&cli.StringFlag{Name: "checkpoint", Usage: "save acknowledged progress to `FILE`; a rerun with the same input and flags resumes from it", Category: catWrite},
		&cli.BoolFlag{Name: "no-progress", Usage: "no progress bar, even on a terminal", Category: catWrite},
	}, capacityFlags(true)...)
}

// capacityFlags are the flags that shape a new table's capacity beyond its
// billing mode, for every command that creates one.
//
// withCreate says the command creates the table with --create-table (import,
// apply, migrate); schema only prints the table, so its help does not name
// a flag it does not have.
func capacityFlags(withCreate bool) []cli.Flag {
	with, withOnDemand := "", "on-demand: "
	if withCreate {
		with, withOnDemand = "with --create-table: ", "with --create-table, on-demand: "
	}
	return []cli.Flag{
		&cli.Int64Flag{Name: "warm-wcu", Usage: with + "warm throughput, the writes a second the new table and each index serve at once; pre-warms it for a big load", DefaultText: fmt.Sprintf("none: DynamoDB's own %d, also the least it takes", ddbtable.DefaultWarmWCU), Category: catWrite},
		&cli.Int64Flag{Name: "warm-rcu", Usage: with + "warm throughput for reads", DefaultText: fmt.Sprintf("none: DynamoDB's own %d, also the least it takes", ddbtable.DefaultWarmRCU), Category: catWrite},
		&cli.Int64Flag{Name: "max-on-demand-wcu", Usage: withOnDemand + "the most write request units a second DynamoDB serves the table and each index (a cap on spend; above it, writes are throttled)", DefaultText: "no cap", Category: catWrite},
		&cli.Int64Flag{Name: "max-on-demand-rcu", Usage: withOnDemand + "the most read request units a second", DefaultText: "no cap", Category: catWrite},
	}
}

// capacityNames are capacityFlags' names.
var capacityNames = []string{"warm-wcu", "warm-rcu", "max-on-demand-wcu", "max-on-demand-rcu"}

// capacitySet lists the capacity flags given, as --NAME.
func capacitySet(c *cli.Context) []string {
	var set []string
	for _, name := range capacityNames {
		if c.IsSet(name) {
			set = append(set, "--"+name)
		}
	}
	return set
}

// newTableBilling is billing for the commands whose --create-table makes an
// on-demand table (apply, migrate): the capacity flags need --create-table.
func newTableBilling(c *cli.Context) (ddbtable.Billing, error) {
	if !c.Bool("create-table") {
		if set := capacitySet(c); len(set) > 0 {
			return ddbtable.Billing{}, usagef("%s shape a new table: give --create-table too", strings.Join(set, ", "))
		}
		return ddbtable.Billing{}, nil
	}
	return billing(c)
}

// billing is the capacity a new table gets: provisioned when --wcu or --rcu
// is set (then both must be), on-demand otherwise; with the warm throughput
// and on-demand ceilings asked for.
func billing(c *cli.Context) (ddbtable.Billing, error) {
	b := ddbtable.Billing{
		WarmWCU: c.Int64("warm-wcu"), WarmRCU: c.Int64("warm-rcu"),
		MaxOnDemandWCU: c.Int64("max-on-demand-wcu"), MaxOnDemandRCU: c.Int64("max-on-demand-rcu"),
	}
	wcu, rcu := c.Int64("wcu"), c.Int64("rcu")
	if wcu != 0 || rcu != 0 {
		if wcu <= 0 || rcu <= 0 {
			return b, usagef("provisioned capacity needs both --wcu and --rcu above 0 (got --wcu %d --rcu %d); leave both out for on-demand", wcu, rcu)
		}
		if c.IsSet("max-on-demand-wcu") || c.IsSet("max-on-demand-rcu") {
			return b, usagef("--max-on-demand-wcu and --max-on-demand-rcu cap an on-demand table; with provisioned --wcu/--rcu the provisioned capacity is the cap (leave one or the other out)")
		}
		b.Provisioned, b.WCU, b.RCU = true, wcu, rcu
	}
	for _, name := range capacityNames {
		if c.IsSet(name) && c.Int64(name) <= 0 {
			return b, usagef("--%s %d: want a number above 0", name, c.Int64(name))
		}
	}
	if err := b.Check(); err != nil {
		return b, usagef("%s", err)
	}
	return b, nil
}

func awsOptions(c *cli.Context) ddb.AWSOptions {
	return ddb.AWSOptions{
		EndpointURL: c.String("endpoint-url"),
		Region:      c.String("region"),
		Profile:     c.String("profile"),
		MaxConns:    max(64, 2*c.Int("concurrency")),
	}
}

// writeOptions are the write run's flags, which import --table, apply,
// edit and migrate share.
func writeOptions(c *cli.Context) ddbwrite.WriteOptions {
	return ddbwrite.WriteOptions{
		DeadLetter: c.String("dead-letter"), Concurrency: c.Int("concurrency"), MaxWCU: c.Float64("max-wcu"),
	}
}

// importToTable is import --table: importer.LoadTable.
func importToTable(c *cli.Context, client *dynamodb.Client, in *importer.Input, emit importer.EmitOptions, started time.Time) error {
	table, l := c.String("table"), emit.Layout
	opts := importer.TableOptions{
		Table: table, Emit: emit, CreateTable: c.Bool("create-table"),
		Checkpoint: c.String("checkpoint"), Settings: settings(c, l),
		WriteOptions: writeOptions(c), Report: c.String("report"),
		Log: c.App.ErrWriter, Started: started,
	}
	if opts.CreateTable {
		b, err := billing(c)
		if err != nil {
			return err
		}
		opts.Billing = b
	}
	// Reading stops on Ctrl-C; writing what was read goes on until it is
	// acknowledged, so the checkpoint is exact: the client (made before
	// the input was read) is not cancelled with it.
	opts.Client = client
	prog := newProgress(c)
	opts.OnProgress = prog.update
	res, err := importer.LoadTable(c.Context, in, opts)
	prog.finish()
	if res == nil {
		return err
	}
	if res.AlreadyDone {
		fmt.Fprintf(c.App.Writer, "checkpoint %s says this load finished already; nothing to do (delete it to load again)\n", opts.Checkpoint)
		return nil
	}
	run := res.Run
	if errors.Is(err, ddbwrite.ErrInterrupted) {
		if opts.Checkpoint != "" {
			held := ""
			if n := run.Stats.Held; n > 0 {
				held = fmt.Sprintf(" (%s of them held for a hot key in %s.held: the run that resumes writes them first)", units.Thousands(n), opts.Checkpoint)
			}
			fmt.Fprintf(c.App.ErrWriter, "interrupted: %s acknowledged%s, checkpoint saved to %s\n", units.Count(run.Watermark, "item"), held, opts.Checkpoint)
		} else {
			fmt.Fprintf(c.App.ErrWriter, "interrupted after %s (no --checkpoint: a rerun starts over, overwriting the same items)\n", units.Count(run.Stats.Items, "item"))
		}
		return err
	}
	if err != nil {
		return err
	}
	stats, est := run.Stats, res.Emit
	fmt.Fprintf(c.App.Writer, "loaded %s of %s into %s (%s layout) in %s: %s, %s, %s\n",
		countOf(int(stats.Items), "item"), countOf(int(est.Nodes), "node"), table, l.Name(), res.Took.Round(time.Millisecond), wcuText(stats), units.Count(stats.Throttles, "throttle"), units.Count(stats.Retries, "retry"))
	if run.Skipped > 0 {
		fmt.Fprintf(c.App.Writer, "%s acknowledged by an earlier run and skipped\n", units.Count(run.Skipped, "item"))
	}
	if stats.Replayed > 0 {
		fmt.Fprintf(c.App.Writer, "%s held for a hot key by an earlier run written by this one (in the count above)\n", units.Count(stats.Replayed, "item"))
	}
	if est.Rejected > 0 {
		fmt.Fprintf(c.App.Writer, "%s rejected: see %s\n", countOf(int(est.Rejected), "record"), c.String("rejects"))
	}
	return deadLetterResult(c, run)
}

// deadLetterResult reports the items set aside, this run's and an earlier
// one's, and makes the run exit 1 when there are any.
func deadLetterResult(c *cli.Context, run *ddbwrite.RunResult) error {
	now, prior := run.Stats.DeadLettered, run.PriorDeadLettered
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

// wcuText is the write capacity a run used: DynamoDB's own figure when it
// was asked for (--report), treeport's count otherwise.
func wcuText(s ddbwrite.Stats) string {
	if s.ConsumedWCU > 0 {
		return units.Thousands(int64(math.Round(s.ConsumedWCU))) + " WCU consumed"
	}
	return units.Thousands(s.ComputedWCU) + " WCU"
}

// progress draws a bar on a terminal and logs a line every few seconds
// otherwise, or with --no-progress. The bar is made at the first update, when the run's total is
// known.
type progress struct {
	out     *os.File // the terminal, for a bar
	bar     *progressbar.ProgressBar
	log     io.Writer
	lastLog time.Time
	// For step: when the progress began, the stage the bar shows, and
	// when the stage the log lines tell of began (for its ETA).
	started  time.Time
	desc     string
	logDesc  string
	logSince time.Time
}

func newProgress(c *cli.Context) *progress {
	p := &progress{started: time.Now()}
	// --no-progress drops the bar, never the log lines: a run in CI says
	// how it goes every few seconds (SPEC §5).
	if f, ok := c.App.ErrWriter.(*os.File); ok && term.IsTerminal(int(f.Fd())) && !c.Bool("no-progress") {
		p.out = f
	} else {
		p.log = c.App.ErrWriter
	}
	return p
}

func (p *progress) update(pr ddbwrite.RunProgress) {
	if p.out != nil && p.bar != nil && p.desc != "" {
		// A stage's bar (step: the out-of-core passes of apply or
		// migrate) gives way to the writes'.
		_ = p.bar.Finish()
		p.bar, p.desc = nil, ""
	}
	if p.out != nil && p.bar == nil {
		p.bar = progressbar.NewOptions64(pr.Total,
			progressbar.OptionSetWriter(p.out),
			progressbar.OptionSetDescription("writing"),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("items"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		_ = p.bar.Set64(pr.Skipped)
	}
	done := pr.Done()
	secs := pr.Elapsed.Seconds()
	if secs <= 0 {
		secs = 1
	}
	held := "" // items the watermark passed that wait for their hot key
	if pr.Held > 0 {
		held = fmt.Sprintf(", %s held for a hot key", units.Thousands(pr.Held))
	}
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("writing (%.0f WCU/s, %s%s)", float64(pr.WCU)/secs, units.Count(pr.Throttles, "throttle"), held))
		_ = p.bar.Set64(done)
		return
	}
	if p.log != nil && time.Since(p.lastLog) >= 5*time.Second {
		p.lastLog = time.Now()
		rate := float64(pr.Items) / secs
		eta := "?"
		if rate > 0 {
			eta = time.Duration(float64(pr.Total-done) / rate * float64(time.Second)).Round(time.Second).String()
		}
		limit := "no limit yet" // the writers have met no capacity signal
		if pr.RateLimit > 0 {
			limit = fmt.Sprintf("limit %.0f WCU/s", pr.RateLimit)
		}
		fmt.Fprintf(p.log, "treeport: %s/%s items, %s items/s, %s WCU/s, %s, %s%s, ETA %s\n",
			units.Thousands(done), units.Thousands(pr.Total), units.Thousands(int64(rate)), units.Thousands(int64(float64(pr.WCU)/secs)),
			limit, units.Count(pr.Throttles, "throttle"), held, eta)
	}
}

// step shows how far a stage that writes nothing has gone (reading the
// input, a dry run's measuring): done of total, total < 0 when unknown.
// Like the writes' progress, it is a bar on a terminal and a log line
// every few seconds otherwise; a stage that ends within two seconds of
// the start says nothing.
func (p *progress) step(desc string, done, total int64) {
	if time.Since(p.started) < 2*time.Second {
		return
	}
	if p.out != nil {
		if p.bar == nil || p.desc != desc {
			if p.bar != nil {
				_ = p.bar.Finish()
			}
			p.desc = desc
			p.bar = progressbar.NewOptions64(total,
				progressbar.OptionSetWriter(p.out),
				progressbar.OptionSetDescription(desc),
				progressbar.OptionShowCount(),
				progressbar.OptionShowBytes(countsBytes(desc)),
				progressbar.OptionThrottle(200*time.Millisecond),
				progressbar.OptionClearOnFinish(),
			)
		}
		_ = p.bar.Set64(done)
		return
	}
	if p.log != nil && desc != p.logDesc {
		p.logDesc, p.logSince = desc, time.Now()
	}
	if p.log != nil && time.Since(p.lastLog) >= 5*time.Second {
		p.lastLog = time.Now()
		count := units.Thousands
		if countsBytes(desc) {
			count = units.SizeText
		}
		of := ""
		if total >= 0 {
			of = " of " + count(total)
			if in := time.Since(p.logSince); done > 0 && total > done && in > time.Second {
				of += fmt.Sprintf(", ETA %s", time.Duration(float64(in)*float64(total-done)/float64(done)).Round(time.Second))
			}
		}
		fmt.Fprintf(p.log, "treeport: %s: %s%s after %s\n", desc, count(done), of, time.Since(p.started).Round(time.Second))
	}
}

// countsBytes reports whether a stage named desc counts bytes ("sorting
// by id (bytes spilled)"), which are shown as sizes (1.2 GiB), not counts.
func countsBytes(desc string) bool { return strings.Contains(desc, "(bytes") }

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
