package commands

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/treeport/treeport/layouts"
)

// docExample is one treeport command line shown in the docs: the file and
// line it starts on, and its words (continuation lines joined, quotes
// removed).
type docExample struct {
	where string
	words []string
}

// inlineCommand is a `treeport ...` span of inline code in prose.
var inlineCommand = regexp.MustCompile("`((?:\\./)?treeport [^`]+)`")

// docExamples reads the treeport command lines of a Markdown file: every
// line of a code block (fenced, or indented four spaces) that calls
// treeport or ./treeport, and every inline code span that starts with it.
func docExamples(t *testing.T, path string) []docExample {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []docExample
	lines := strings.Split(string(b), "\n")
	fenced := false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		where := path + ":" + strconv.Itoa(i+1)
		if !fenced && !strings.HasPrefix(line, "    ") {
			for _, m := range inlineCommand.FindAllStringSubmatch(line, -1) {
				out = append(out, docExample{where, shellWords(m[1])})
			}
			continue
		}
		text := strings.TrimSpace(line)
		if !strings.HasPrefix(text, "treeport ") && !strings.HasPrefix(text, "./treeport ") {
			continue
		}
		for strings.HasSuffix(text, `\`) && i+1 < len(lines) {
			i++
			text = strings.TrimSuffix(text, `\`) + " " + strings.TrimSpace(lines[i])
		}
		if c := strings.Index(text, " #"); c >= 0 {
			text = text[:c]
		}
		out = append(out, docExample{where, shellWords(text)})
	}
	return out
}

// shellWords splits a command line as a shell would for these examples:
// on spaces outside quotes, quotes removed, a $(...) kept as one word.
func shellWords(s string) []string {
	var words []string
	var w strings.Builder
	in, depth, started := rune(0), 0, false
	for _, r := range s {
		switch {
		case in != 0 && r == in && depth == 0:
			in = 0
			continue
		case in == 0 && depth == 0 && (r == '"' || r == '\''):
			in, started = r, true
			continue
		case r == '(' && strings.HasSuffix(w.String(), "$"):
			depth++
		case r == ')' && depth > 0:
			depth--
		case r == ' ' && in == 0 && depth == 0:
			if started {
				words = append(words, w.String())
			}
			w.Reset()
			started = false
			continue
		}
		w.WriteRune(r)
		started = true
	}
	if started {
		words = append(words, w.String())
	}
	return words
}

// placeholders are the table names the docs use for "any table" in a
// command's shape (treeport migrate --from-table A ... --to-table B).
var placeholders = map[string]bool{"T": true, "A": true, "B": true, "TABLE": true}

// Every treeport command line in README.md and docs/*.md names a command
// treeport has, flags that command takes, layouts that exist, model files
// that ship, and table names DynamoDB accepts: a newcomer who copies one
// is not told that the example itself is wrong.
func TestDocExamplesAreCommandLines(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	bench, err := filepath.Glob(filepath.Join(root, "benchmarks", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(append(files, bench...), filepath.Join(root, "README.md"))
	commands := map[string]*cli.Command{}
	for _, c := range App().Commands {
		commands[c.Name] = c
	}
	layoutNames := map[string]bool{"all": true, "L": true, "L1": true, "L2": true}
	for _, n := range layouts.Names() {
		layoutNames[n] = true
	}
	seen := 0
	for _, f := range files {
		for _, ex := range docExamples(t, f) {
			seen++
			checkDocExample(t, root, ex, commands, layoutNames)
		}
	}
	t.Logf("%d command lines checked", seen)
	if seen < 30 {
		t.Fatalf("found %d treeport command lines in the docs; the reader is broken", seen)
	}
}

// checkDocExample checks one command line of the docs.
func checkDocExample(t *testing.T, root string, ex docExample, commands map[string]*cli.Command, layoutNames map[string]bool) {
	t.Helper()
	words := ex.words
	if len(words) < 2 || strings.HasPrefix(words[1], "-") || strings.ToUpper(words[1]) == words[1] {
		return // "treeport --help", "treeport COMMAND --help"
	}
	cmd, ok := commands[words[1]]
	if !ok {
		t.Errorf("%s: treeport has no command %q: %q", ex.where, words[1], strings.Join(words, " "))
		return
	}
	flags := cmd.Flags
	if len(cmd.Subcommands) > 0 && len(words) > 2 {
		// get|children|descendants|ancestors: the flags of any of them
		for _, alt := range strings.Split(words[2], "|") {
			for _, sub := range cmd.Subcommands {
				if sub.Name == alt {
					flags = append(flags[:len(flags):len(flags)], sub.Flags...)
				}
			}
		}
	}
	names := map[string]bool{"help": true}
	for _, f := range flags {
		for _, n := range f.Names() {
			names[n] = true
		}
	}
	for i, w := range words {
		w = strings.Trim(w, "[]()|")
		if !strings.HasPrefix(w, "--") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(w, "--"), "=")
		if !names[name] {
			t.Errorf("%s: %s takes no flag --%s: %q", ex.where, cmd.Name, name, strings.Join(words, " "))
			continue
		}
		if !hasValue && i+1 < len(words) {
			value = strings.Trim(words[i+1], "[]()|")
		}
		if value == "" || strings.ContainsAny(value, "$…") || value == "..." {
			continue
		}
		switch name {
		case "table", "from-table", "to-table", "bulk-put", "import-table":
			if !placeholders[value] && !layouts.IsTableName(value) {
				t.Errorf("%s: --%s %q is not a table name DynamoDB accepts (3 to 255 of a-z, A-Z, 0-9, _ - .): %q", ex.where, name, value, strings.Join(words, " "))
			}
		case "layout", "from-layout", "to-layout":
			if !layoutNames[value] {
				t.Errorf("%s: --%s %q is no layout: %q", ex.where, name, value, strings.Join(words, " "))
			}
		case "model", "from-model", "to-model":
			if strings.HasPrefix(value, "fixtures/") {
				if _, err := os.Stat(filepath.Join(root, value)); err != nil {
					t.Errorf("%s: --%s %s does not ship: %v", ex.where, name, value, err)
				}
			}
		}
	}
}
