package commands

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/models"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

const (
	catInput  = "Input"
	catLayout = "Layout"
	catAWS    = "AWS"
	catWrite  = "Writing"
	catValid  = "Validation"
)

func inputFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "in", Usage: "input `PATH`: a CSV, JSON, JSON Lines, Parquet or DynamoDB JSON file (gzip or zstd too), or an ExportTableToPointInTime directory", Category: catInput},
		&cli.StringFlag{Name: "format", Usage: "input format: csv, json, jsonl, parquet or ddbjson (default: from the file name)", Category: catInput},
		&cli.StringFlag{Name: "id-field", Value: "id", Usage: "the field holding a node's id", Category: catInput},
		&cli.StringFlag{Name: "parent-field", Value: "parent_id", Usage: "the field holding the parent's id (empty or absent: a root)", Category: catInput},
		&cli.StringFlag{Name: "csv-delimiter", Value: ",", Usage: "CSV field delimiter (one character; \\t for tab)", Category: catInput},
		&cli.StringFlag{Name: "types", Usage: "CSV column types, e.g. size:N,active:BOOL,tags:JSON (S, N, BOOL, JSON, B)", Category: catInput},
	}
}

func validationFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "on-invalid", Value: "fail", Usage: "fail: write nothing if any record is invalid; skip: write the valid trees, set the rest aside in --rejects", Category: catValid},
		&cli.StringFlag{Name: "rejects", Usage: "with --on-invalid=skip, the JSON Lines `FILE` that receives each rejected record with its reason", Category: catValid},
		&cli.IntFlag{Name: "max-errors", Value: 100, Usage: "how many problems to print", Category: catValid, Action: atLeastOne("max-errors")},
	}
}

func layoutFlags(allowAll bool) []cli.Flag {
	usage := "table layout: path, sharded-path, closure, prefix or adjacency"
	if allowAll {
		usage += " (or all, with --dry-run)"
	}
	return []cli.Flag{
		&cli.StringFlag{Name: "layout", Usage: usage, Category: catLayout},
		&cli.StringFlag{Name: "model", Usage: "a table model `FILE` (docs/MODELS.md) describing a table treeport did not design; instead of --layout", Category: catLayout},
		&cli.StringSliceFlag{Name: "attr", Usage: "rename a layout attribute, key or index: OLD=NEW (repeatable), e.g. --attr Id=ComponentId --attr ByPath=GSI2", Category: catLayout},
		&cli.StringFlag{Name: "delimiter", Usage: "path delimiter (default | for path layouts, ¦ for prefix)", Category: catLayout},
		&cli.IntFlag{Name: "shards", Value: 4, Usage: "sharded-path: number of GraphId shards per tree", Category: catLayout, Action: atLeastOne("shards")},
		&cli.StringFlag{Name: "closure-copy", Value: "all", Usage: "closure (or a closure model): what ancestor rows copy: all, none or a,b,c", Category: catLayout},
		&cli.BoolFlag{Name: "path-ids", Usage: "a node's id is its path from its root, names joined by the delimiter (Accounts¦123456¦Links; | for closure and adjacency); docs/LAYOUTS.md", Category: catLayout},
		&cli.BoolFlag{Name: "implicit-inner", Usage: "with --path-ids: a node without attributes that has children gets no item of its own (prefix: its listing row only); not for adjacency", Category: catLayout},
		modelParamFlag(),
	}
}

// modelParamFlag is --model-param, the values of the models' {param:NAME}.
func modelParamFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "model-param", Usage: "a value of the model's {param:NAME}, such as a tenant: NAME=VALUE (repeatable; for every model the command uses)", Category: catLayout}
}

// modelParams reads --model-param: NAME=VALUE each, a name once.
func modelParams(c *cli.Context) (map[string]string, error) {
	params := map[string]string{}
	for _, kv := range c.StringSlice("model-param") {
		name, value, ok := strings.Cut(kv, "=")
		switch {
		case !ok || name == "":
			return nil, usagef("--model-param %q: want NAME=VALUE, such as org=acme", kv)
		case value == "":
			return nil, usagef("--model-param %s=: give the parameter a value", name)
		}
		if old, dup := params[name]; dup && old != value {
			return nil, usagef("--model-param %s is given twice (%q and %q): give it once", name, old, value)
		}
		params[name] = value
	}
	return params, nil
}

// checkModelParams refuses a --model-param that none of the command's
// models names (a misspelling, or a parameter of another model), and
// --model-param without a model.
func checkModelParams(c *cli.Context, ls ...layouts.Layout) error {
	params, err := modelParams(c)
	if err != nil {
		return err
	}
	var named []string
	for _, l := range ls {
		named = append(named, models.Params(l)...)
	}
	slices.Sort(named)
	named = slices.Compact(named)
	for _, name := range slices.Sorted(maps.Keys(params)) {
		if slices.Contains(named, name) {
			continue
		}
		if len(named) == 0 {
			return usagef("--model-param %s: no model of this command names a parameter ({param:NAME}); remove it", name)
		}
		return usagef("--model-param %s: no model of this command names {param:%s}%s; they name {param:%s}", name, name, didYouMean(name, named, ""), strings.Join(named, "}, {param:"))
	}
	return nil
}

func awsFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "endpoint-url", Usage: "DynamoDB endpoint (e.g. http://localhost:8000 for DynamoDB Local)", Category: catAWS},
		&cli.StringFlag{Name: "region", Usage: "AWS region (default: from the SDK's configuration)", Category: catAWS},
		&cli.StringFlag{Name: "profile", Usage: "AWS shared config profile", Category: catAWS},
	}
}

// sourceOptions turns the input flags into records.SourceOptions.
func sourceOptions(c *cli.Context) (records.SourceOptions, error) {
	o := records.SourceOptions{
		Format:      c.String("format"),
		IDField:     c.String("id-field"),
		ParentField: c.String("parent-field"),
	}
	switch d := c.String("csv-delimiter"); d {
	case `\t`, "tab":
		o.CSVDelimiter = '\t'
	default:
		r := []rune(d)
		if len(r) != 1 {
			return o, usagef("--csv-delimiter %q: want one character", d)
		}
		o.CSVDelimiter = r[0]
	}
	t, from := c.String("types"), "--types"
	if !c.IsSet("types") {
		side, text, err := typesSidecar(c.String("in"), o.Format)
		if err != nil {
			return o, err
		}
		if side != "" {
			t, from = text, side
			if t == "" {
				fmt.Fprintf(c.App.ErrWriter, "reading every column of %s as a string, as %s says; give --types to read them otherwise\n", c.String("in"), side)
			} else {
				fmt.Fprintf(c.App.ErrWriter, "reading the column types of %s from %s (--types %q); give --types to read them otherwise\n", c.String("in"), side, t)
			}
		}
	}
	if t != "" {
		types, err := records.ParseTypes(t)
		if err != nil {
			return o, usagef("%s: %v", from, err)
		}
		o.Types = types
	}
	return o, nil
}

// typesSidecar returns the sidecar file that export wrote beside the CSV
// file in (records.TypesPath) and the --types it holds, or "" when in is
// not CSV or has none.
func typesSidecar(in, format string) (string, string, error) {
	if in == "" || format == "" && records.FormatFromPath(in) != records.FormatCSV || format != "" && format != records.FormatCSV {
		return "", "", nil
	}
	side := records.TypesPath(in)
	b, err := os.ReadFile(side)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	return side, strings.TrimSpace(string(b)), nil
}

// atLeastOne refuses a value below 1 for an integer flag that counts.
func atLeastOne(name string) func(*cli.Context, int) error {
	return func(_ *cli.Context, n int) error {
		if n < 1 {
			return usagef("--%s %d: want 1 or more", name, n)
		}
		return nil
	}
}

// layoutOptions turns the layout flags into layouts.Options.
func layoutOptions(c *cli.Context) (layouts.Options, error) {
	renames, err := layouts.ParseAttrRenames(c.StringSlice("attr"))
	if err != nil {
		return layouts.Options{}, usagef("%v", err)
	}
	o := layouts.Options{
		Attr:          renames,
		Delimiter:     c.String("delimiter"),
		Shards:        c.Int("shards"),
		PathIDs:       c.Bool("path-ids"),
		ImplicitInner: c.Bool("implicit-inner"),
	}
	o.ClosureCopy = closureCopy(c.String("closure-copy"))
	return o, nil
}

// closureCopy reads --closure-copy: nil for all, empty for none, else the
// named attributes.
func closureCopy(cc string) []string {
	switch cc {
	case "all", "":
		return nil
	case "none":
		return []string{}
	}
	var names []string
	for _, a := range strings.Split(cc, ",") {
		if a = strings.TrimSpace(a); a != "" {
			names = append(names, a)
		}
	}
	return names
}

// newLayouts returns the named layout, or all four for "all", or the
// model of --model.
func newLayouts(c *cli.Context, allowAll bool) ([]layouts.Layout, layouts.Options, error) {
	name := c.String("layout")
	if file := c.String("model"); file != "" {
		l, err := loadModel(c, file, "", name)
		if err != nil {
			return nil, layouts.Options{}, err
		}
		if err := checkModelParams(c, l); err != nil {
			return nil, layouts.Options{}, err
		}
		return []layouts.Layout{l}, layouts.Options{ClosureCopy: layouts.ClosureCopy(l)}, nil
	}
	if err := checkModelParams(c); err != nil {
		return nil, layouts.Options{}, err
	}
	if name == "" {
		return nil, layouts.Options{}, usagef("--layout (or --model FILE) is required: one of %s", strings.Join(layouts.Names(), ", "))
	}
	opts, err := layoutOptions(c)
	if err != nil {
		return nil, opts, err
	}
	names := []string{name}
	if name == "all" {
		if !allowAll {
			return nil, opts, usagef("--layout all works only with --dry-run")
		}
		names = layouts.Names()
	}
	var ls []layouts.Layout
	for _, n := range names {
		l, err := layouts.New(n, opts)
		if err != nil {
			if !slices.Contains(layouts.Names(), n) {
				return nil, opts, usagef("--layout %q is not a layout%s: choose one of %s", n, didYouMean(n, layouts.Names(), ""), strings.Join(layouts.Names(), ", "))
			}
			return nil, opts, usagef("%v", err)
		}
		ls = append(ls, l)
	}
	return ls, opts, nil
}

// loadModel loads the table model of --<side->model, refusing it beside
// --layout and the layout flags a model holds itself.
func loadModel(c *cli.Context, file, side, layout string) (layouts.Layout, error) {
	if layout != "" {
		return nil, usagef("--%smodel and --%slayout: give one; a model names its base layout itself", side, side)
	}
	for _, f := range []string{"attr", "delimiter", "shards"} {
		if c.IsSet(side + f) {
			return nil, usagef("--%s%s does not go with --%smodel: the model file says its names, delimiter and shards (docs/MODELS.md)", side, f, side)
		}
	}
	params, err := modelParams(c)
	if err != nil {
		return nil, err
	}
	l, err := models.LoadModelParams(file, params)
	if err != nil {
		return nil, usagef("--%smodel: %v", side, err)
	}
	if c.IsSet(side + "closure-copy") {
		// What a closure model's ancestor rows copy: the flag, over the
		// model's closure_copy.
		if l, err = models.WithClosureCopy(l, closureCopy(c.String(side+"closure-copy"))); err != nil {
			return nil, usagef("--%sclosure-copy: %v", side, err)
		}
	}
	return l, nil
}

// printProblems prints up to max problems and a count of the rest: those
// past max, and the more that were only counted. A problem's reason is
// said without the package name its sentinel starts with, as userMessage
// says an error; the place and the id are printed as they are.
func printProblems(w io.Writer, problems []*transform.RowError, max, more int) {
	for k, p := range problems {
		if k == max {
			break
		}
		said := *p
		said.Err = errors.New(userMessage(p.Err))
		fmt.Fprintf(w, "%v\n", &said)
	}
	if rest := len(problems) - min(len(problems), max) + more; rest > 0 {
		fmt.Fprintf(w, "… and %s more (raise --max-errors to see them)\n", countProblems(rest))
	}
}

// countProblems says "1 problem" or "N problems".
func countProblems(n int) string { return countOf(n, "problem") }

// countOf says "1 thing" or "N things".
func countOf(n int, thing string) string { return units.Count(int64(n), thing) }
