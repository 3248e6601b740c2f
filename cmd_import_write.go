package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/layouts"
)

// settings are the flags that shape the items; they go into manifests and
// checkpoint fingerprints.
func settings(c *cli.Context, l layouts.Layout) map[string]any {
	s := map[string]any{"layout": l.Name()}
	for _, name := range []string{"format", "id-field", "parent-field", "csv-delimiter", "types", "delimiter", "shards", "closure-copy", "on-invalid", "shard", "table"} {
		if c.IsSet(name) || name == "id-field" || name == "parent-field" {
			s[name] = c.Value(name)
		}
	}
	if a := c.StringSlice("attr"); len(a) > 0 {
		s["attr"] = a
	}
	return s
}

func importToFiles(c *cli.Context, in *importer.Input, l layouts.Layout, emit importer.EmitOptions, started time.Time) error {
	table := c.String("table")
	if table == "" {
		table = "treeport-" + l.Name()
	}
	m, err := importer.WriteImportFiles(c.Context, in, importer.FilesOptions{
		Dir: c.String("out"), Table: table, ItemsPerFile: c.Int("items-per-file"),
		Emit: emit, Settings: settings(c, l),
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "wrote %d items of %d nodes (%s layout) in %d files to %s in %s\n",
		m.Items, m.Nodes, l.Name(), len(m.Files), c.String("out"), time.Since(started).Round(time.Millisecond))
	if m.Rejected > 0 {
		fmt.Fprintf(c.App.Writer, "%d records rejected: see %s\n", m.Rejected, c.String("rejects"))
	}
	return nil
}
