package commands

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
)

// queryCommand is "query" with one subcommand per kind, so that the flags
// may follow the kind: treeport query children --table T --id X.
func queryCommand() *cli.Command {
	usage := map[exporter.Kind]string{
		exporter.Get:         "the node itself (relative depth 0)",
		exporter.Children:    "its children (relative depth 1)",
		exporter.Descendants: "its subtree, counted down from it (default --min-depth 1)",
		exporter.Ancestors:   "the nodes above it, counted up from it (default --min-depth 1)",
	}
	cmd := &cli.Command{
		Name:      "query",
		Usage:     "ask a table about one node: get, children, descendants or ancestors",
		UsageText: "treeport query get|children|descendants|ancestors --table T --layout L --id ID [--min-depth A] [--max-depth B] [--stats]",
		Description: "Prints JSON Lines, one node a line, sorted by relative depth, then id:\n" +
			`  {"id":"CM4","parent_id":"CM2","relative_depth":1,"attributes":{"name":"Engine","qty":1}}` + "\n" +
			"parent_id is left out for a root. Attributes are plain JSON: numbers with their exact text,\n" +
			"binary as base64, NULL as null, sets as arrays. Each layout answers with its own requests:\n" +
			"  path          GetItem; children: Query ByParent; descendants: Query ByPath,\n" +
			"                begins_with(Path, path + |), a depth band filtered on Depth; ancestors: BatchGetItem\n" +
			"  sharded-path  as path; descendants query the tree's --shards GraphId partitions in parallel\n" +
			"  closure       children and descendants: Query ByAncestor on RelativeDepth; ancestors: Query the\n" +
			"                table, then BatchGetItem of the ancestors' own rows\n" +
			"  prefix        GetItem of the object row; children: Query the listing partition, then BatchGetItem;\n" +
			"                descendants: breadth-first listing Queries; ancestors: BatchGetItem\n" +
			"  adjacency     GetItem; children: Query ByParent; descendants: breadth-first ByParent Queries,\n" +
			"                a level's in parallel; ancestors: GetItem up the chain of ParentIds\n" +
			"The prefix layout's keys are paths, so a node is found by its path: give it with --path\n" +
			"(CM1¦CM2¦CM4). Without --path, one Scan of the table finds it first, which costs the table's size\n" +
			"in RCU; the path found is printed so that the next query can pass it.\n" +
			"A node that is not in the table exits 2; a leaf's children are no lines and exit 0.",
	}
	for _, k := range exporter.Kinds {
		band := ""
		if k == exporter.Descendants || k == exporter.Ancestors {
			band = " [--min-depth A] [--max-depth B]"
		}
		sub := &cli.Command{
			Name:      string(k),
			Usage:     usage[k],
			UsageText: fmt.Sprintf("treeport query %s --table T --layout L --id ID%s [--path P] [--stats]", k, band),
			Flags:     queryFlags(k),
			Action:    func(c *cli.Context) error { return runQuery(c, k) },
		}
		bindEnv(sub.Flags)
		cmd.Subcommands = append(cmd.Subcommands, sub)
	}
	return cmd
}

func queryFlags(k exporter.Kind) []cli.Flag {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "id", Usage: "the node's `ID`", Category: catRead},
		&cli.StringFlag{Name: "path", Usage: "prefix layout: the ids from the root to the node joined by the delimiter (e.g. CM1¦CM2¦CM4); without it a Scan finds the node", Category: catRead},
	}
	if k == exporter.Get {
		flags = append(flags, &cli.BoolFlag{Name: "follow-links", Usage: "prefix layout: answer a link (dynamotree's symbolic link) with the node it links to, read through it once; the line says \"via_link\": the link's id", Category: catRead})
	}
	if k == exporter.Descendants || k == exporter.Ancestors {
		flags = append(flags,
			&cli.IntFlag{Name: "min-depth", Value: 1, Usage: "the smallest relative depth to print (0 includes the node itself)", Category: catRead},
			&cli.IntFlag{Name: "max-depth", Value: exporter.NoMaxDepth, Usage: "the largest relative depth to print (-1: no limit)", Category: catRead},
		)
	}
	flags = append(flags,
		&cli.BoolFlag{Name: "stats", Usage: "print on standard error the requests made, items read and RCU consumed", Category: catOutput},
		&cli.StringFlag{Name: "table", Usage: "the DynamoDB `TABLE` to read", Category: catRead},
		&cli.BoolFlag{Name: "consistent-read", Usage: "strongly consistent reads of the table (indexes are always eventually consistent)", Category: catRead},
		&cli.IntFlag{Name: "concurrency", Value: 8, Usage: "requests in flight (shards, listing queries, BatchGetItem calls)", Category: catRead},
	)
	flags = append(flags, layoutFlags(false)...)
	return append(flags, awsFlags()...)
}

func runQuery(c *cli.Context, kind exporter.Kind) error {
	if c.NArg() > 0 {
		return noArgs(c)
	}
	table, id := c.String("table"), c.String("id")
	if table == "" {
		return usagef("--table is required")
	}
	ls, _, err := newLayouts(c, false)
	if err != nil {
		return err
	}
	l := ls[0]
	if kind == exporter.Get && c.Bool("follow-links") && !layouts.Links(l) {
		return usagef("--follow-links: the %s layout has no links (only the prefix layout reads link_to as one; here it is an attribute)", l.Name())
	}
	path, err := parsePath(c, l, id)
	if err != nil {
		return err
	}
	if id == "" && len(path) == 0 {
		return usagef("--id is required")
	}
	if id == "" {
		id = path[len(path)-1]
	}
	if conc := c.Int("concurrency"); conc < 1 {
		return usagef("--concurrency %d: want 1 or more", conc)
	}
	minDepth, maxDepth := exporter.Band(kind)
	if kind == exporter.Descendants || kind == exporter.Ancestors {
		minDepth, maxDepth = c.Int("min-depth"), c.Int("max-depth")
		switch {
		case minDepth < 0:
			return usagef("--min-depth %d: want 0 or more", minDepth)
		case maxDepth < exporter.NoMaxDepth:
			return usagef("--max-depth %d: want 0 or more, or -1 for no limit", maxDepth)
		case maxDepth != exporter.NoMaxDepth && maxDepth < minDepth:
			return usagef("--max-depth %d is below --min-depth %d", maxDepth, minDepth)
		}
	}
	client, err := ddb.NewClient(c.Context, readAWSOptions(c, c.Int("concurrency")))
	if err != nil {
		return err
	}
	// A table of another layout (or model) is refused before a read.
	if err := checkReadTable(c.Context, client, table, l); err != nil {
		return err
	}
	stderr := c.App.ErrWriter
	opts := exporter.QueryOptions{
		Kind: kind, ID: id, Path: path, MinDepth: minDepth, MaxDepth: maxDepth,
		ConsistentRead: c.Bool("consistent-read"), Concurrency: c.Int("concurrency"),
		FollowLinks: kind == exporter.Get && c.Bool("follow-links"),
		OnLocate: func(found []string, cost exporter.Stats) {
			delim := l.Delimiter()
			fmt.Fprintf(stderr, "treeport: found %q at %s%s with a Scan of %s (%s); pass --path '%s' to skip the Scan\n",
				found[len(found)-1], delim, strings.Join(found, delim), table, cost, strings.Join(found, delim))
		},
	}
	res, st, err := exporter.Query(c.Context, client, table, l, opts)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(c.App.Writer)
	var line []byte
	for _, r := range res {
		if line, err = exporter.AppendResultJSON(line[:0], r); err != nil {
			return err
		}
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if c.Bool("stats") {
		fmt.Fprintf(stderr, "query %s %q (layout %s): %s; %s\n", kind, opts.ID, l.Name(), units.Count(int64(len(res)), "node"), st)
	}
	return nil
}
