package commands

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddbtable"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
)

func schemaCommand() *cli.Command {
	flags := append(layoutFlags(false),
		&cli.StringFlag{Name: "table", Usage: "table `NAME`", Required: true},
		&cli.StringFlag{Name: "format", Value: "json", Usage: "json (CreateTable JSON), workbench (a NoSQL Workbench data model) or cloudformation (an AWS::DynamoDB::Table resource)"},
		&cli.StringFlag{Name: "in", Usage: "workbench: take sample items from this input `PATH`"},
		&cli.IntFlag{Name: "sample", Value: 10, Usage: "workbench: how many items of --in to put in the model's TableData", Action: atLeastOne("sample")},
		&cli.StringFlag{Name: "id-field", Value: "id", Usage: "--in: the field holding a node's id"},
		&cli.StringFlag{Name: "parent-field", Value: "parent_id", Usage: "--in: the field holding the parent's id"},
		&cli.StringFlag{Name: "types", Usage: "--in: CSV column types, e.g. size:N,active:BOOL,tags:JSON"},
		&cli.Int64Flag{Name: "wcu", Usage: "provisioned write capacity (default: on-demand)"},
		&cli.Int64Flag{Name: "rcu", Usage: "provisioned read capacity (default: on-demand)"},
	)
	flags = append(flags, capacityFlags(false)...)
	return &cli.Command{
		Name:      "schema",
		Usage:     "print a layout's or model's table: CreateTable JSON, a NoSQL Workbench data model, or a CloudFormation resource",
		UsageText: "treeport schema (--layout L | --model FILE) --table T [--format json|workbench|cloudformation] [--in FILE --sample N]",
		Flags:     flags,
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			ls, _, err := newLayouts(c, false)
			if err != nil {
				return err
			}
			bill, err := billing(c)
			if err != nil {
				return err
			}
			var b []byte
			switch f := c.String("format"); f {
			case "json":
				b, err = ddbtable.SchemaJSON(c.String("table"), ls[0].Table(), bill)
			case "cloudformation":
				b, err = ddbtable.CloudFormation(c.String("table"), ls[0].Table(), bill)
			case "workbench":
				var items []layouts.Item
				if items, err = sampleItems(c, ls[0]); err != nil {
					return err
				}
				b, err = ddbtable.Workbench(ddbtable.WorkbenchOptions{Table: c.String("table"), Layout: ls[0], Items: items, Now: time.Now()})
			default:
				return usagef("--format %q: want json, workbench or cloudformation", f)
			}
			if err != nil {
				return err
			}
			_, err = c.App.Writer.Write(b)
			return err
		},
	}
}

// sampleItems are the first --sample items the layout writes for --in.
func sampleItems(c *cli.Context, l layouts.Layout) ([]layouts.Item, error) {
	path := c.String("in")
	if path == "" {
		return nil, nil
	}
	src := records.SourceOptions{IDField: c.String("id-field"), ParentField: c.String("parent-field"), CSVDelimiter: ','}
	if t := c.String("types"); t != "" {
		types, err := records.ParseTypes(t)
		if err != nil {
			return nil, usagef("--types: %v", err)
		}
		src.Types = types
	}
	in, err := importer.ReadInput(c.Context, importer.InputOptions{Path: path, Source: src, MaxProblems: 20})
	if err != nil {
		return nil, err
	}
	if problems := in.CheckLayout(l); len(problems) > 0 {
		printProblems(c.App.ErrWriter, problems, 20, in.MoreProblems())
		return nil, usagef("%s: %s for the %s layout", path, countProblems(len(problems)+in.MoreProblems()), l.Name())
	}
	n := c.Int("sample")
	var items []layouts.Item
	_, err = in.Emit(c.Context, importer.EmitOptions{Layout: l}, func(_ int64, it layouts.Item) error {
		if len(items) < n {
			items = append(items, it)
		}
		return nil
	})
	return items, err
}
