package commands

import (
	"fmt"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"
)

// editDistance is the edit distance between a and b, counted in runes:
// insertions, deletions, substitutions and transpositions of two
// neighbours ("tabel" for "table") each cost one (Levenshtein's distance
// with Damerau's transposition, in its optimal-string-alignment form).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// nearest returns the candidate closest to word, if it is close enough to be
// what was meant: at most a third of the word's length away (and at least one
// edit allowed), or a candidate the word is a prefix of. Ties go to the
// first candidate.
func nearest(word string, candidates []string) (string, bool) {
	best, bestD := "", -1
	for _, c := range candidates {
		d := editDistance(strings.ToLower(word), strings.ToLower(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 {
		return "", false
	}
	limit := max(1, len([]rune(word))/3)
	if bestD <= limit {
		return best, true
	}
	for _, c := range candidates {
		if len(word) >= 3 && strings.HasPrefix(c, word) {
			return c, true
		}
	}
	return "", false
}

// didYouMean says " (did you mean X?)" when one of candidates is near word,
// or nothing.
func didYouMean(word string, candidates []string, prefix string) string {
	if c, ok := nearest(word, candidates); ok {
		return fmt.Sprintf(" (did you mean %s%s?)", prefix, c)
	}
	return ""
}

// commandNames lists the names (not the aliases, not help) of cmds.
func commandNames(cmds []*cli.Command) []string {
	var names []string
	for _, c := range cmds {
		if c.Name != "help" {
			names = append(names, c.Name)
		}
	}
	return names
}

// flagNames lists every name and alias of flags.
func flagNames(flags []cli.Flag) []string {
	var names []string
	for _, f := range flags {
		names = append(names, f.Names()...)
	}
	return names
}

// undefinedFlag matches the flag package's error for an unknown flag.
var undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)

// usageErrorFor returns the OnUsageError of the command called path
// ("import", "query descendants"): a usage error that names the command,
// and for a flag it does not know, the flag it has that is nearest, or
// the commands the flag belongs to when it is theirs.
func usageErrorFor(app *cli.App, path string, cmd *cli.Command) cli.OnUsageErrorFunc {
	return func(_ *cli.Context, err error, _ bool) error {
		m := undefinedFlag.FindStringSubmatch(err.Error())
		if m == nil {
			return fmt.Errorf("%w: %s: %v", errUsage, path, err)
		}
		name := m[1]
		if cmd != nil && len(cmd.Subcommands) > 0 && !hasFlag(cmd.Flags, name) {
			// query's flags follow its subcommand.
			for _, sub := range cmd.Subcommands {
				if hasFlag(sub.Flags, name) {
					return fmt.Errorf("%w: %s: --%s goes after the subcommand, as in 'treeport %s SUBCOMMAND --%s ...' (the subcommands are %s)",
						errUsage, path, name, path, name, strings.Join(commandNames(cmd.Subcommands), ", "))
				}
			}
		}
		var flags []cli.Flag
		if cmd != nil {
			flags = cmd.Flags
		}
		if cmd == nil || !hasFlag(flags, name) {
			if hint := didYouMean(name, flagNames(flags), "--"); hint != "" {
				return fmt.Errorf("%w: %s has no flag --%s%s", errUsage, path, name, hint)
			}
		}
		// A flag of other commands, given to this one.
		var owners []string
		for _, c := range app.Commands {
			if hasFlag(c.Flags, name) {
				owners = append(owners, c.Name)
			}
			for _, sub := range c.Subcommands {
				if hasFlag(sub.Flags, name) {
					owners = append(owners, c.Name+" "+sub.Name)
				}
			}
		}
		if len(owners) > 0 {
			where := "it"
			if cmd == nil {
				where = "the command"
			}
			return fmt.Errorf("%w: %s has no flag --%s: that is a flag of %s; give %s after %s",
				errUsage, path, name, strings.Join(owners, ", "), "--"+name, where)
		}
		return fmt.Errorf("%w: %s has no flag --%s", errUsage, path, name)
	}
}

func hasFlag(flags []cli.Flag, name string) bool {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return false
}

// listSubcommandFlags adds to the help of a command that only has
// subcommands (query) the flags they take, which its own help would not
// list: those of the subcommand with the most, the others' being a subset.
func listSubcommandFlags(c *cli.Command) {
	var widest *cli.Command
	for _, sub := range c.Subcommands {
		if widest == nil || len(sub.Flags) > len(widest.Flags) {
			widest = sub
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n\nFLAGS, after the subcommand (as in 'treeport %s %s --id X'; --min-depth and --max-depth\nfor descendants and ancestors only):\n", c.Name, widest.Name)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, f := range widest.Flags {
		fmt.Fprintf(tw, "%s\n", cli.FlagStringer(f))
	}
	tw.Flush()
	c.Description += strings.TrimRight(b.String(), "\n")
}

// unknownSubcommand is the Action of a command that only has subcommands:
// without an argument it shows its help, with a word that names none of
// them it is a usage error that suggests the nearest.
func unknownSubcommand(path string) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.NArg() == 0 {
			return cli.ShowSubcommandHelp(c)
		}
		word := c.Args().First()
		names := commandNames(c.Command.Subcommands)
		return usagef("%s has no subcommand %q%s; the subcommands are %s", path, word, didYouMean(word, names, ""), strings.Join(names, ", "))
	}
}

// helpHint names the command whose --help to read for the args given:
// "treeport query descendants --help", or "treeport COMMAND --help" when no
// command was named.
func helpHint(app *cli.App, args []string) string {
	path := []string{"treeport"}
	cmds := app.Commands
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		var found *cli.Command
		for _, c := range cmds {
			if c.HasName(a) {
				found = c
			}
		}
		if found == nil {
			continue // a flag's value
		}
		path = append(path, found.Name)
		cmds = found.Subcommands
		if len(cmds) == 0 {
			break
		}
	}
	if len(path) == 1 {
		path = append(path, "COMMAND")
	}
	return strings.Join(path, " ") + " --help"
}

// defaultInUsage matches a default a flag's usage states itself:
// "(default: no cap; ...)" or "(default 4, or what fits --depth)".
var defaultInUsage = regexp.MustCompile(`\s*\(default:? ([^()]*(?:\([^()]*\)[^()]*)*)\)`)

// oneDefault gives every flag one default in its help: a default its usage
// states in words moves to the flag's DefaultText, where urfave/cli would
// otherwise print the zero value beside it ("(default: no cap) (default:
// 0)").
func oneDefault(flags []cli.Flag) {
	for _, f := range flags {
		var usage, defText *string
		switch f := f.(type) {
		case *cli.StringFlag:
			usage, defText = &f.Usage, &f.DefaultText
		case *cli.IntFlag:
			usage, defText = &f.Usage, &f.DefaultText
		case *cli.Int64Flag:
			usage, defText = &f.Usage, &f.DefaultText
		case *cli.Float64Flag:
			usage, defText = &f.Usage, &f.DefaultText
		case *cli.BoolFlag:
			usage, defText = &f.Usage, &f.DefaultText
		case *cli.StringSliceFlag:
			usage, defText = &f.Usage, &f.DefaultText
		case *cli.DurationFlag:
			usage, defText = &f.Usage, &f.DefaultText
		default:
			continue
		}
		m := defaultInUsage.FindStringSubmatchIndex(*usage)
		if m == nil || *defText != "" {
			continue
		}
		*defText = (*usage)[m[2]:m[3]]
		*usage = (*usage)[:m[0]] + (*usage)[m[1]:]
	}
}

// valueFlag is the flag a stray word on a command's line most likely
// belongs to, for the hint of noArgs.
var valueFlag = map[string]string{"import": "--in", "verify": "--in", "plan": "--in", "apply": "--in", "bench": "--in",
	"query": "--id", "export": "--out", "edit": "--ops", "migrate": "--to-table"}

// noArgs refuses words on the command line that no flag takes (treeport
// takes flags only), naming the command and the flag the first word may
// have been meant for.
func noArgs(c *cli.Context) error {
	if c.NArg() == 0 {
		return nil
	}
	var path []string
	for _, ctx := range c.Lineage() {
		if ctx.Command != nil && ctx.Command.Name != "" && ctx.Command.Name != "treeport" {
			path = append([]string{ctx.Command.Name}, path...)
		}
	}
	if len(path) == 0 {
		path = []string{"treeport"}
	}
	words := c.Args().Slice()
	flag := valueFlag[path[0]]
	if flag == "" {
		flag = "--out"
	}
	rest := ""
	if len(words) > 1 {
		rest = fmt.Sprintf(" (and the %d words after it were not read as flags)", len(words)-1)
	}
	return usagef("%s takes flags only, not the word %q%s: a value goes after its flag (as in %s %s); quote a value that holds spaces",
		strings.Join(path, " "), words[0], rest, flag, words[0])
}
