package commands

import (
	"github.com/urfave/cli/v2"

	"github.com/treeport/treeport/importer"
)

func schemaCommand() *cli.Command {
	flags := append(layoutFlags(false),
		&cli.StringFlag{Name: "table", Usage: "table `NAME`", Required: true},
		&cli.Int64Flag{Name: "wcu", Usage: "provisioned write capacity (default: on-demand)"},
		&cli.Int64Flag{Name: "rcu", Usage: "provisioned read capacity (default: on-demand)"},
	)
	flags = append(flags, capacityFlags()...)
	return &cli.Command{
		Name:      "schema",
		Usage:     "print the CreateTable JSON of a layout, for aws dynamodb create-table --cli-input-json",
		UsageText: "treeport schema --layout L --table T",
		Flags:     flags,
		Action: func(c *cli.Context) error {
			ls, _, err := newLayouts(c, false)
			if err != nil {
				return err
			}
			bill, err := billing(c)
			if err != nil {
				return err
			}
			b, err := importer.SchemaJSON(c.String("table"), ls[0].Table(), bill)
			if err != nil {
				return err
			}
			_, err = c.App.Writer.Write(b)
			return err
		},
	}
}
