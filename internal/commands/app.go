// Package commands is treeport's command line: one function per command
// returning its *cli.Command, whose Action turns the flags into a package's
// Options, makes one call, prints the result and returns an error that
// ExitCode maps to the exit code. The jobs themselves (loading, planning,
// applying, migrating, editing) are the importer's and refresh's functions.
package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/aws/smithy-go"
	"github.com/urfave/cli/v2"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/importer/importfiles"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/ddbtable"
	"github.com/treeport/treeport/internal/statefile"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/models"
	"github.com/treeport/treeport/refresh"
	"github.com/treeport/treeport/transform"
)

// Exit codes (SPEC §4).
const (
	exitOK          = 0
	exitDifferences = 1 // verify/plan differences, or dead-lettered items
	exitInvalid     = 2 // invalid input or usage; nothing was written
	exitService     = 3 // a service or infrastructure failure
	exitInterrupted = 130
)

// errUsage marks a mistake in the command line. It is ddbwrite.ErrUsage,
// which the jobs return for a run the command line can change (a checkpoint
// of another run, a plan that removes too much).
var errUsage = ddbwrite.ErrUsage

// errDifferences ends a command that finished, but found differences or set
// items aside; the details were printed already.
var errDifferences = errors.New("finished with differences")

// errInterrupted ends a command stopped by Ctrl-C after it saved its
// progress; it is the jobs' ddbwrite.ErrInterrupted.
var errInterrupted = ddbwrite.ErrInterrupted

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

// App is treeport's command line.
func App() *cli.App {
	app := &cli.App{
		Name:  "treeport",
		Usage: "move trees into and out of Amazon DynamoDB",
		Description: "treeport loads adjacency lists (CSV, JSON, Parquet, DynamoDB JSON) into one of five\n" +
			"DynamoDB layouts (path, sharded-path, closure, prefix, adjacency), or into the files DynamoDB's\n" +
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
				word, names := c.Args().First(), commandNames(c.App.Commands)
				return usagef("unknown command %q%s; the commands are %s", word, didYouMean(word, names, ""), strings.Join(names, ", "))
			}
			return cli.ShowAppHelp(c)
		},
		Version:              version(),
		HideHelpCommand:      true,
		EnableBashCompletion: true,
		ExitErrHandler:       func(*cli.Context, error) {}, // exit codes are ours
	}
	app.OnUsageError = usageErrorFor(app, "treeport", nil)
	for _, c := range app.Commands {
		c.OnUsageError = usageErrorFor(app, c.Name, c)
		c.Before = checkNames
		if len(c.Subcommands) > 0 && c.Action == nil {
			c.Action = unknownSubcommand(c.Name)
		}
		for _, sub := range c.Subcommands {
			sub.Before = checkNames
			sub.OnUsageError = usageErrorFor(app, c.Name+" "+sub.Name, sub)
		}
		bindEnv(c.Flags)
		oneDefault(c.Flags)
		for _, sub := range c.Subcommands {
			oneDefault(sub.Flags)
		}
		if len(c.Subcommands) > 0 {
			listSubcommandFlags(c)
		}
	}
	return app
}

// version is what --version prints: the module's version (a go install of
// a tag) or "(devel)", with the commit built and whether the tree had
// changes, so that a bug report says which code ran.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", with uncommitted changes"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += " (commit " + rev + modified + ")"
	}
	return v + ", " + info.GoVersion
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

// Main runs the command line args (args[0] is the program) and returns the
// exit code. An error is printed on stderr, with a pointer to --help for a
// usage error; differences were printed by the command already.
func Main(ctx context.Context, args []string, stderr io.Writer) int {
	app := App()
	err := requiredFlags(app.RunContext(ctx, args))
	code := ExitCode(err)
	if err != nil && !errors.Is(err, errDifferences) {
		msg := userMessage(err)
		if code == exitInterrupted && !errors.Is(err, errInterrupted) {
			// A bare context.Canceled says nothing to a user.
			msg = "interrupted (SIGINT or SIGTERM): stopped before the end; run it again to finish (a --checkpoint resumes a table load; an --out directory must be emptied first)"
		}
		fmt.Fprintf(stderr, "treeport: %s%s\n", msg, diskFullHint(err))
		if code == exitInvalid && errors.Is(err, errUsage) && !errors.Is(err, statefile.ErrRefused) {
			fmt.Fprintf(stderr, "Run '%s' for the flags.\n", helpHint(app, args[1:]))
		}
	}
	return code
}

// diskFullHint is what to do about a write that failed for want of room
// (a full disk, or a file size limit): the files in the message are in
// --tmp-dir (the passes' runs and spools, staged uploads) or in --out.
func diskFullHint(err error) string {
	if !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EFBIG) && !errors.Is(err, syscall.EDQUOT) {
		return ""
	}
	return " (its disk is full, or the file is over a size limit: free some room, or give --tmp-dir or --out on another disk)"
}

// packagePrefix is the "importer: " a sentinel's text starts with, so that
// errors.Is and a log tell the package, at the start of the message or of
// one of its wrapped parts ("source: importer: table not found"); a user
// is not told it.
var packagePrefix = regexp.MustCompile(`(^|: )(?:(?:usage|importer|exporter|layouts|refresh|transform|gen|ddb|ddbtable|layoutbench|recordfile|infile|s3io|ddbjson|ddbitems|pricing|records|ddbwrite|models|statefile|streams|bulkjob|importfiles|ooc|ooclinks|ooccycles|extsort|itemdigest|spill|diskmap|followstate): )+`)

// userMessage is err's text as a user reads it: without the package names
// its sentinels start with.
func userMessage(err error) string {
	return packagePrefix.ReplaceAllString(err.Error(), "$1")
}

// ExitCode maps an error to treeport's exit codes. It is the only place that
// does.
func ExitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var apiErr smithy.APIError
	var rowErr *transform.RowError
	var svcErr *ddb.ServiceError
	switch {
	case errors.Is(err, errInterrupted):
		return exitInterrupted
	case errors.Is(err, errDifferences):
		return exitDifferences
	case errors.Is(err, errUsage), errors.Is(err, importer.ErrInvalid), errors.Is(err, importfiles.ErrOutputNotEmpty), errors.Is(err, ddbtable.ErrSchemaMismatch), errors.Is(err, ddb.ErrTableNotFound), errors.Is(err, refresh.ErrEdit),
		errors.Is(err, statefile.ErrRefused), errors.Is(err, layouts.ErrItem), errors.Is(err, models.ErrSparseMiss), errors.As(err, &rowErr), errors.Is(err, os.ErrNotExist), errors.Is(err, ddb.ErrAWSConfig):
		return exitInvalid
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.As(err, &svcErr) && svcErr.Code == "ResourceNotFoundException":
		// A table that is not there, found by a read: a mistake in
		// --table, --region or --endpoint-url, as import's check says.
		return exitInvalid
	case errors.Is(err, ddb.ErrService), errors.As(err, &apiErr):
		return exitService
	}
	return exitService
}

// tableFlags are the flags that name a DynamoDB table.
var tableFlags = []string{"table", "from-table", "to-table", "import-table", "bulk-put"}

// checkTableNames refuses a table name DynamoDB would refuse, before any
// call to the service: a usage error (exit 2), not a service failure.
// checkNames is every command's Before: its table names, and its outputs'
// names (checkOutputLinks).
func checkNames(c *cli.Context) error {
	if err := checkOutputLinks(c); err != nil {
		return err
	}
	return checkTableNames(c)
}

// checkOutputLinks refuses, before a command does anything, a symbolic link
// at the name of a file it would write beside the user's (rejects,
// dead-letter, report, a plan's or bench's --out, gen's): treeport never
// writes through one (statefile.CreateOutput refuses it at the open too).
// An export's --out is written to a temporary file renamed over the name,
// which replaces a link there and never writes through it.
func checkOutputLinks(c *cli.Context) error {
	var paths []string
	for _, name := range []string{"rejects", "dead-letter", "report"} {
		paths = append(paths, c.String(name))
	}
	switch c.Command.Name {
	case "plan", "edit", "gen":
		paths = append(paths, c.String("out"))
	case "bench":
		paths = append(paths, c.StringSlice("out")...)
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if err := statefile.CheckOutput(p); err != nil {
			return err
		}
	}
	return nil
}

func checkTableNames(c *cli.Context) error {
	for _, name := range tableFlags {
		if v := c.String(name); v != "" {
			if err := ddbtable.CheckTableName("--"+name, v); err != nil {
				return fmt.Errorf("%w: %v", errUsage, err)
			}
		}
	}
	return nil
}
