// Command treeport moves trees (adjacency lists) into and out of Amazon
// DynamoDB, in the layout of your choice: materialized path, sharded path,
// closure or prefix rows.
//
// main.go is wiring only: flags become Options structs, a package's function
// does the work, and exitCode is the one place that maps errors to exit codes.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"
)

// Exit codes (SPEC §4).
const (
	exitOK          = 0
	exitDifferences = 1 // verify/plan differences, or dead-lettered items
	exitInvalid     = 2 // invalid input or usage; nothing was written
	exitService     = 3 // a service or infrastructure failure
	exitInterrupted = 130
)

// errUsage marks a mistake in the command line.
var errUsage = errors.New("usage")

// errDifferences ends a command that finished, but found differences or set
// items aside; the details were printed already.
var errDifferences = errors.New("finished with differences")

// errInterrupted ends a command stopped by Ctrl-C after it saved its progress.
var errInterrupted = errors.New("interrupted")

// requiredFlags marks urfave/cli's error for a required flag left out as a
// usage error: the library neither exports it nor passes it to
// OnUsageError, so its message is the only way to tell it.
func requiredFlags(err error) error {
	if err == nil || errors.Is(err, errUsage) {
		return err
	}
	if msg := err.Error(); strings.HasPrefix(msg, "Required flag ") || strings.HasPrefix(msg, "Required flags ") {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return err
}

func usagef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}

func newApp() *cli.App {
	app := &cli.App{
		Name:  "treeport",
		Usage: "move trees into and out of Amazon DynamoDB",
		Description: "treeport loads adjacency lists (CSV, JSON, Parquet, DynamoDB JSON) into one of four\n" +
			"DynamoDB layouts (path, sharded-path, closure, prefix), or into the files DynamoDB's\n" +
			"import from S3 reads, exports them back, answers tree queries and verifies round trips.\n" +
			"Every flag can also be set from TREEPORT_<FLAG> (e.g. TREEPORT_MAX_WCU=500).",
		Commands: []*cli.Command{
			importCommand(),
			exportCommand(),
			queryCommand(),
			verifyCommand(),
			planCommand(),
			applyCommand(),
			editCommand(),
			migrateCommand(),
			schemaCommand(),
			genCommand(),
			benchCommand(),
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 && c.Args().First() != "help" {
				names := make([]string, 0, len(c.App.Commands))
				for _, cmd := range c.App.Commands {
					names = append(names, cmd.Name)
				}
				return usagef("unknown command %q; the commands are %s", c.Args().First(), strings.Join(names, ", "))
			}
			return cli.ShowAppHelp(c)
		},
		HideHelpCommand:      true,
		EnableBashCompletion: true,
		ExitErrHandler:       func(*cli.Context, error) {}, // exit codes are ours
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return fmt.Errorf("%w: %v", errUsage, err)
		},
	}
	for _, c := range app.Commands {
		c.OnUsageError = app.OnUsageError
		bindEnv(c.Flags)
	}
	return app
}

// bindEnv lets every flag be set from TREEPORT_<FLAG>, dashes as underscores.
func bindEnv(flags []cli.Flag) {
	for _, f := range flags {
		name := f.Names()[0]
		env := "TREEPORT_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		switch f := f.(type) {
		case *cli.StringFlag:
			f.EnvVars = append(f.EnvVars, env)
		case *cli.IntFlag:
			f.EnvVars = append(f.EnvVars, env)
		case *cli.Int64Flag:
			f.EnvVars = append(f.EnvVars, env)
		case *cli.Float64Flag:
			f.EnvVars = append(f.EnvVars, env)
		case *cli.BoolFlag:
			f.EnvVars = append(f.EnvVars, env)
		case *cli.StringSliceFlag:
			f.EnvVars = append(f.EnvVars, env)
		case *cli.DurationFlag:
			f.EnvVars = append(f.EnvVars, env)
		}
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// TREEPORT_CPUPROFILE=FILE writes a pprof CPU profile of the run, for
	// looking into where a slow run spends its time.
	if p := os.Getenv("TREEPORT_CPUPROFILE"); p != "" {
		if f, err := os.Create(p); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer f.Close()
			}
		}
	}
	err := requiredFlags(newApp().RunContext(ctx, os.Args))
	pprof.StopCPUProfile()
	stop()
	code := exitCode(err)
	if err != nil && !errors.Is(err, errDifferences) {
		msg := err.Error()
		msg = strings.TrimPrefix(msg, "usage: ")
		fmt.Fprintf(os.Stderr, "treeport: %s\n", msg)
		if code == exitInvalid && errors.Is(err, errUsage) {
			fmt.Fprintln(os.Stderr, "Run 'treeport COMMAND --help' for the flags.")
		}
	}
	os.Exit(code)
}
