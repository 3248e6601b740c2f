package commands

import (
	"bufio"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/treeport/treeport/internal/gen"
	"github.com/treeport/treeport/internal/statefile"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

func genCommand() *cli.Command {
	return &cli.Command{
		Name:      "gen",
		Usage:     "write a synthetic forest, reproducible by --seed",
		UsageText: "treeport gen --nodes N --shape balanced|random|deep|wide|forest --seed S --out FILE [--format csv|json|jsonl|parquet|ddbjson]",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "nodes", Value: 1000, Usage: "number of nodes"},
			&cli.StringFlag{Name: "shape", Value: "random", Usage: "balanced (fan-out --fanout), random (random recursive tree), deep (one chain), wide (one root), forest (many small trees)"},
			&cli.Int64Flag{Name: "seed", Value: 1, Usage: "random seed: the same seed gives the same forest"},
			&cli.IntFlag{Name: "fanout", Usage: "balanced: children per inner node (default 4, or what fits --depth)"},
			&cli.IntFlag{Name: "depth", Usage: "deep: chains of at most this many nodes; balanced without --fanout: levels below the root", DefaultText: "no bound"},
			&cli.IntFlag{Name: "trees", Usage: "split the nodes into this many trees", DefaultText: "one tree; for --shape forest, trees of random size 1..50"},
			&cli.BoolFlag{Name: "shuffle", Usage: "write the records in a random order (children often before parents)"},
			&cli.StringFlag{Name: "out", Usage: "output `FILE`", Required: true},
			&cli.StringFlag{Name: "format", Usage: "csv, json, jsonl, parquet or ddbjson (default: from the file name)"},
		},
		Action: runGen,
	}
}

func runGen(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	out := c.String("out")
	if err := noArgs(c); err != nil {
		return err
	}
	format := c.String("format")
	if format == "" {
		format = records.FormatFromPath(out)
	}
	if format == "" {
		return usagef("cannot tell the format of %q: give --format", out)
	}
	if err := records.CheckCompression(out, format); err != nil {
		return usagef("--out %v", err)
	}
	f, err := statefile.CreateOutput(out)
	if err != nil {
		return err
	}
	defer f.Close()
	zw, err := records.Compress(f, out)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(zw, 1<<20)
	rw, err := records.NewWriter(bw, records.WriterOptions{Format: format, Columns: gen.Columns()})
	if err != nil {
		return usagef("%v", err)
	}
	n := 0
	err = gen.Generate(gen.Options{
		Nodes: c.Int("nodes"), Shape: c.String("shape"), Seed: c.Int64("seed"),
		Fanout: c.Int("fanout"), Depth: c.Int("depth"), Trees: c.Int("trees"), Shuffle: c.Bool("shuffle"),
	}, func(r *transform.Record) error {
		n++
		return rw.Write(r)
	})
	if err != nil {
		return usagef("%v", err)
	}
	if err := rw.Close(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(c.App.ErrWriter, "wrote %s to %s\n", units.Count(int64(n), "node"), out)
	return nil
}
