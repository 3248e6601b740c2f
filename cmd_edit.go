package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/refresh"
)

func editCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "ops", Usage: "the edits, JSON Lines `FILE`: {\"op\":\"move\",\"id\":…,\"parent\":…}, {\"op\":\"delete\",\"id\":…}, {\"op\":\"set\",\"id\":…,\"attributes\":{…},\"remove\":[…]}", Category: catInput},
		&cli.StringFlag{Name: "table", Usage: "the DynamoDB `TABLE` to edit", Category: catWrite},
		&cli.BoolFlag{Name: "dry-run", Usage: "read what the edits touch and print the writes they take; write nothing", Category: catWrite},
		&cli.StringFlag{Name: "out", Usage: "write the item-level plan of the edits (every put and delete, DynamoDB JSON) to `FILE`", Category: catOutput},
	}
	flags = append(flags, layoutFlags(false)...)
	for _, f := range writerFlags() {
		switch f.Names()[0] {
		case "concurrency", "max-wcu", "dead-letter", "no-progress":
			flags = append(flags, f)
		}
	}
	flags = append(flags, awsFlags()...)
	return &cli.Command{
		Name:      "edit",
		Usage:     "move, delete and update nodes of a table, with the fewest item writes the layout allows",
		UsageText: "treeport edit --ops FILE --table T --layout L [--dry-run]",
		Description: "Each line of --ops is one edit, carried out in order:\n" +
			"  {\"op\":\"move\",\"id\":\"D\",\"parent\":\"E\"}   D moves under E with its whole subtree (null: D becomes a root);\n" +
			"                                       a move under D's own subtree is refused\n" +
			"  {\"op\":\"delete\",\"id\":\"D\"}              D goes, its children move up to D's parent; a root that still\n" +
			"                                       has children cannot be deleted\n" +
			"  {\"op\":\"set\",\"id\":\"D\",\"attributes\":{\"size\":3},\"remove\":[\"tmp\"]}\n" +
			"                                       updates every copy of D (closure keeps one per ancestor)\n" +
			"treeport reads only what the edits touch, with the layout's own queries (the prefix layout finds a\n" +
			"node by id with a Scan), applies all the edits in memory, then writes only the items whose key or\n" +
			"value changed. An edit that cannot be carried out stops the run before anything is written (exit 2).",
		Flags:  flags,
		Action: runEdit,
	}
}

func runEdit(c *cli.Context) error {
	started := time.Now()
	if c.NArg() > 0 {
		return usagef("unexpected arguments %q", c.Args().Slice())
	}
	opsPath, table := c.String("ops"), c.String("table")
	switch {
	case opsPath == "":
		return usagef("--ops is required: the JSON Lines file of edits")
	case table == "":
		return usagef("--table is required")
	}
	ls, _, err := newLayouts(c, false)
	if err != nil {
		return err
	}
	l := ls[0]
	edits, err := refresh.ReadEdits(opsPath)
	if err != nil {
		return err
	}
	client, err := ddb.NewClient(context.WithoutCancel(c.Context), awsOptions(c))
	if err != nil {
		return err
	}
	if err := importer.CheckTable(c.Context, client, table, l.Table()); err != nil {
		return err
	}
	ed, err := refresh.NewEditor(client, table, l)
	if err != nil {
		return err
	}
	counts, err := ed.Apply(c.Context, edits)
	if err != nil {
		return fmt.Errorf("%w; nothing was written", err)
	}
	ops, err := ed.Ops()
	if err != nil {
		return fmt.Errorf("%w; nothing was written", err)
	}
	for _, n := range counts {
		fmt.Fprintln(c.App.Writer, n.Describe())
	}
	var puts, dels, wcu int64
	for _, op := range ops {
		if op.Kind == refresh.Put {
			puts++
		} else {
			dels++
		}
		wcu += int64(op.WCU)
	}
	fmt.Fprintf(c.App.Writer, "%d edits: %d puts and %d deletes, %d WCU (%s layout)\n", len(edits), puts, dels, wcu, l.Name())
	fmt.Fprintf(c.App.ErrWriter, "read table %s: %s\n", table, ed.Read)
	if ed.Located > 0 {
		fmt.Fprintf(c.App.ErrWriter, "note: %d nodes were found with a Scan of the whole table (the prefix layout's keys are paths)\n", ed.Located)
	}
	if p := c.String("out"); p != "" {
		if err := writeOpsFile(p, refresh.PlanHeader{Table: table, Layout: l.Name(), Snapshot: opsPath}, ops); err != nil {
			return err
		}
	}
	if c.Bool("dry-run") || len(ops) == 0 {
		return nil
	}

	opts := importer.WriterOptions{
		Concurrency: c.Int("concurrency"),
		MaxWCU:      c.Float64("max-wcu"),
		OnProgress:  newProgress(c, int64(len(ops)), 0).update,
	}
	if p := c.String("dead-letter"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		defer f.Close()
		opts.DeadLetter = f
	}
	// The edits were read and checked whole; their writes are finished
	// even on Ctrl-C, so that the table is never left between two trees.
	ctx := context.WithoutCancel(c.Context)
	w := importer.NewDDBWriter(client, table, l.Table(), opts)
	var werr error
	for seq, op := range ops {
		if op.Kind == refresh.Delete {
			werr = w.Delete(ctx, int64(seq), op.Item)
		} else {
			werr = w.Write(ctx, int64(seq), op.Item)
		}
		if werr != nil {
			break
		}
	}
	stats, err := w.Close(ctx)
	if werr == nil {
		werr = err
	}
	if werr != nil {
		return werr
	}
	fmt.Fprintf(c.App.Writer, "wrote %d items to %s in %s: %s, %d throttles, %d retries\n",
		stats.Items, table, time.Since(started).Round(time.Millisecond), wcuText(stats), stats.Throttles, stats.Retries)
	if stats.DeadLettered > 0 {
		fmt.Fprintf(c.App.ErrWriter, "%d items rejected by DynamoDB were set aside in %s\n", stats.DeadLettered, c.String("dead-letter"))
		return errDifferences
	}
	return nil
}

// writeOpsFile writes operations as a plan file.
func writeOpsFile(path string, h refresh.PlanHeader, ops []refresh.Op) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	pw, err := refresh.NewPlanWriter(f, h)
	if err != nil {
		return err
	}
	s := &refresh.Summary{Table: h.Table, Layout: h.Layout, ByReason: map[refresh.Reason]*refresh.Count{}}
	for _, r := range refresh.Reasons {
		s.ByReason[r] = &refresh.Count{}
	}
	for _, op := range ops {
		if err := pw.Write(op); err != nil {
			return err
		}
		s.Add(op)
	}
	if err := pw.Close(s); err != nil {
		return err
	}
	return f.Close()
}
