package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestEditDistance(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want int
	}{
		{"equal", "table", "table", 0},
		{"one substitution", "layuot", "layout", 2 - 1},
		{"transposition", "tabel", "table", 1},
		{"insertion", "descendents", "descendants", 1},
		{"empty", "", "abc", 3},
		{"runes, not bytes", "¦a", "|a", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := editDistance(tt.a, tt.b); got != tt.want {
				t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

// Every mistake in naming a command, a subcommand or a flag exits 2, names
// the command it was given to, suggests the nearest word, and points to the
// --help of the command the user was running.
func TestUsageErrorsNameTheCommandAndSuggest(t *testing.T) {
	tests := []struct {
		name string
		args []string
		say  []string
		help string
	}{
		{"a misspelt subcommand", []string{"query", "descendents", "--table", "T"},
			[]string{`query has no subcommand "descendents" (did you mean descendants?)`, "get, children, descendants, ancestors"}, "treeport query --help"},
		{"a flag before the subcommand", []string{"query", "--table", "T", "descendants", "--id", "X"},
			[]string{"query: --table goes after the subcommand", "treeport query SUBCOMMAND --table"}, "treeport query descendants --help"},
		{"a misspelt flag", []string{"import", "--in", "x.csv", "--tabel", "T"},
			[]string{"import has no flag --tabel (did you mean --table?)"}, "treeport import --help"},
		{"a misspelt flag of a subcommand", []string{"query", "children", "--layuot", "path"},
			[]string{"query children has no flag --layuot (did you mean --layout?)"}, "treeport query children --help"},
		{"a misspelt command", []string{"exprot", "--table", "T"},
			[]string{`unknown command "exprot" (did you mean export?)`}, "treeport COMMAND --help"},
		{"a flag of another command", []string{"gen", "--table", "T", "--out", "x"},
			[]string{"gen has no flag --table: that is a flag of import, export"}, "treeport gen --help"},
		{"a command's flag before the command", []string{"--layout", "path", "schema"},
			[]string{"treeport has no flag --layout: that is a flag of import", "give --layout after the command"}, "treeport schema --help"},
		{"a stray word after a subcommand", []string{"query", "children", "--table", "Tbl", "--layout", "path", "CM1"},
			[]string{`query children takes flags only, not the word "CM1"`, "(as in --id CM1)"}, "treeport query children --help"},
		{"a stray word", []string{"import", "parts.csv", "--layout", "path", "--dry-run"},
			[]string{`import takes flags only, not the word "parts.csv"`, "(as in --in parts.csv)"}, "treeport import --help"},
		{"a stray word of gen", []string{"gen", "--out", "x.csv", "extra"},
			[]string{`gen takes flags only, not the word "extra"`}, "treeport gen --help"},
		{"a stray word of schema", []string{"schema", "--layout", "path", "--table", "Tbl", "extra"},
			[]string{`schema takes flags only, not the word "extra"`}, "treeport schema --help"},
		{"nothing near", []string{"schema", "--zzzzzz"},
			[]string{"schema has no flag --zzzzzz"}, "treeport schema --help"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := Main(context.Background(), append([]string{"treeport"}, tt.args...), &stderr)
			if code != exitInvalid {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, exitInvalid, stderr.String())
			}
			for _, s := range tt.say {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr.String())
				}
			}
			if want := "Run '" + tt.help + "' for the flags."; !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
			}
			if strings.Contains(stderr.String(), "No help topic") || strings.Contains(stderr.String(), "flag provided but not defined") {
				t.Errorf("stderr has urfave/cli's own text:\n%s", stderr.String())
			}
		})
	}
	// A word far from every command is not given a suggestion.
	if _, ok := nearest("frobnicate", commandNames(App().Commands)); ok {
		t.Error("nearest suggested a command for frobnicate")
	}
}

// helpPages renders the --help of every command and subcommand, keyed by
// its path ("import", "query descendants"), with the flags it takes.
func helpPages(t *testing.T) map[string]struct {
	text  string
	flags []cli.Flag
} {
	t.Helper()
	pages := map[string]struct {
		text  string
		flags []cli.Flag
	}{}
	render := func(path string, flags []cli.Flag) {
		var stdout, stderr bytes.Buffer
		app := App()
		app.Writer, app.ErrWriter = &stdout, &stderr
		args := append([]string{"treeport"}, strings.Fields(path)...)
		if err := app.RunContext(context.Background(), append(args, "--help")); err != nil {
			t.Fatalf("%s --help: %v", path, err)
		}
		pages[path] = struct {
			text  string
			flags []cli.Flag
		}{stdout.String(), flags}
	}
	for _, c := range App().Commands {
		flags := c.Flags
		for _, sub := range c.Subcommands {
			render(c.Name+" "+sub.Name, sub.Flags)
			if len(sub.Flags) > len(flags) {
				flags = sub.Flags
			}
		}
		render(c.Name, flags)
	}
	return pages
}

var (
	flagMention  = regexp.MustCompile(`--([a-z][a-z0-9-]*)`)
	onePlural    = regexp.MustCompile(`\b1 (request|item|node|problem|operation|tree|layout)s\b`)
	exponent     = regexp.MustCompile(`\b\d+(\.\d+)?e[+-]?\d+\b`)
	aBeforeVowel = regexp.MustCompile(`\ba (ancestors|item|index|id|import|attribute|empty|element|object|other|update)\b`)
)

// TestHelpReadsRight walks the --help of every command and subcommand: one
// default a flag, no flag named that the command does not take, no "1
// requests" or "a ancestors", and the flags of query listed on its own page.
func TestHelpReadsRight(t *testing.T) {
	pages := helpPages(t)
	if len(pages) < 15 {
		t.Fatalf("%d help pages, want every command and subcommand", len(pages))
	}
	for path, p := range pages {
		if !strings.Contains(p.text, "--") {
			t.Errorf("%s --help lists no flags:\n%s", path, p.text)
		}
		names := map[string]bool{"help": true}
		for _, f := range p.flags {
			for _, n := range f.Names() {
				names[n] = true
			}
		}
		for _, f := range p.flags {
			line := cli.FlagStringer(f)
			if n := strings.Count(line, "default"); n > 1 {
				t.Errorf("%s --%s: %d defaults in %q", path, f.Names()[0], n, line)
			}
			if m := exponent.FindString(line); m != "" {
				t.Errorf("%s --%s: a number in exponent form, %q, in %q", path, f.Names()[0], m, line)
			}
			usage := line[strings.Index(line, "\t")+1:]
			for _, m := range flagMention.FindAllStringSubmatch(usage, -1) {
				if !names[m[1]] && !strings.HasPrefix(usage[strings.Index(usage, m[0]):], m[0]+"-") {
					t.Errorf("%s --%s mentions --%s, which %s does not take: %q", path, f.Names()[0], m[1], path, usage)
				}
			}
		}
		for _, re := range []*regexp.Regexp{onePlural, aBeforeVowel} {
			if m := re.FindString(p.text); m != "" {
				t.Errorf("%s --help: %q", path, m)
			}
		}
	}
	if q := pages["query"].text; !strings.Contains(q, "--table") || !strings.Contains(q, "--min-depth") {
		t.Errorf("query --help does not list its subcommands' flags:\n%s", q)
	}
}

// The package names that sentinels carry for errors.Is are not printed,
// at the start of a message or of a wrapped part; the rest is kept.
func TestUserMessageDropsPackageNames(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"at the start", errors.New("importer: no AWS region: give --region"), "no AWS region: give --region"},
		{"usage and a package", fmt.Errorf("%w: %v", errUsage, errors.New("layouts: unknown layout")), "unknown layout"},
		{"wrapped", fmt.Errorf("source: %w", errors.New("importer: table not found: \"T\"")), `source: table not found: "T"`},
		{"the ordered map out of core", fmt.Errorf("follow: %w", errors.New("diskmap: writing a run: no space left on device")), "follow: writing a run: no space left on device"},
		{"a word that is not a package", errors.New("gene: x: y"), "gene: x: y"},
		{"a package name inside a quoted id", errors.New(`id "importer: x" is bad`), `id "importer: x" is bad`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := userMessage(tt.err); got != tt.want {
				t.Errorf("userMessage(%q) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

// treeport --version says which treeport runs (a newcomer's first
// question, and a bug report's), exit 0.
func TestVersion(t *testing.T) {
	var stdout bytes.Buffer
	app := App()
	app.Writer = &stdout
	if err := app.RunContext(context.Background(), []string{"treeport", "--version"}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stdout.String(), "treeport version ") || !strings.Contains(stdout.String(), "go1.") {
		t.Errorf("--version printed %q", stdout.String())
	}
}
