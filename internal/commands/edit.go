package commands

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/units"
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
	if c.NArg() > 0 {
		return noArgs(c)
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
	opts := refresh.EditTableOptions{
		Table: table, Layout: l, Ops: opsPath, DryRun: c.Bool("dry-run"), Out: c.String("out"),
		WriteOptions: writeOptions(c),
		Log:          c.App.ErrWriter, Started: time.Now(),
	}
	if opts.Client, err = ddb.NewClient(context.WithoutCancel(c.Context), awsOptions(c)); err != nil {
		return err
	}
	prog := newProgress(c)
	opts.OnProgress = prog.update
	res, err := refresh.EditTable(c.Context, opts)
	prog.finish()
	if res == nil {
		return err
	}
	for _, n := range res.Counts {
		fmt.Fprintln(c.App.Writer, n.Describe())
	}
	fmt.Fprintf(c.App.Writer, "%s: %s and %s, %s WCU (%s layout)\n", units.Count(int64(res.Edits), "edit"), units.Count(int64(res.Puts), "put"), units.Count(int64(res.Deletes), "delete"), units.Thousands(int64(res.WCU)), l.Name())
	if err != nil || res.Run == nil {
		return err
	}
	stats := res.Run.Stats
	fmt.Fprintf(c.App.Writer, "wrote %s to %s in %s: %s, %d throttles, %d retries\n",
		units.Count(stats.Items, "item"), table, res.Took.Round(time.Millisecond), wcuText(stats), stats.Throttles, stats.Retries)
	return deadLetterResult(c, res.Run)
}
