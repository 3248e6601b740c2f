package commands

import (
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/layouts"
)

// defaultMemory is --memory's default.
const defaultMemory = "1GiB"

// memoryBudget is --memory, at least minMemory.
func memoryBudget(c *cli.Context) (int64, error) {
	mem, err := parseSize(c.String("memory"))
	if err != nil {
		return 0, usagef("--memory: %v", err)
	}
	if mem < minMemory {
		return 0, usagef("--memory %s: give at least 1MiB", c.String("memory"))
	}
	return mem, nil
}

// memoryFlags are --memory and --tmp-dir.
func memoryFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "memory", Value: defaultMemory, Usage: "keep the job's memory under `SIZE` (512MiB, 1GiB, 4GiB, ...): an input (or, for plan, apply and export, a table) that does not fit is resolved out of core, in sorted passes over files in --tmp-dir", Category: catInput},
		&cli.StringFlag{Name: "tmp-dir", Usage: "where the out-of-core passes write their sorted runs (`DIR`; default: the system's temporary directory)", Category: catInput},
		// Tests force the out-of-core passes on small inputs with it.
		&cli.BoolFlag{Name: "force-out-of-core", Hidden: true},
	}
}

// parseSize reads a size: a number of bytes, or one with a unit (KiB,
// MiB, GiB, TiB; KB, MB, GB, TB are powers of 1000).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(strings.ToUpper(t), strings.ToUpper(u.suffix)) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	// NaN passes every comparison below, and int64(NaN) is whatever the
	// machine makes of it: refused by name, as the infinities are.
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) || n <= 0 {
		return 0, fmt.Errorf("%q is not a size: give a number of bytes above 0, or one such as 512MiB or 4GiB", s)
	}
	if n*float64(mult) > maxSize {
		return 0, fmt.Errorf("%q is over the largest size treeport takes, 4EiB: give one such as 512MiB or 4GiB", s)
	}
	return int64(n * float64(mult)), nil
}

// maxSize is the largest size parseSize reads (4 EiB): softLimit's and
// the passes' arithmetic on it stays in an int64.
const maxSize = 1 << 62

// minMemory is the least --memory: the passes' buffers and the reading
// and writing around them.
const minMemory = 1 << 20

// outOfCoreOptions reads --memory and --tmp-dir. The out-of-core passes
// check the input against one layout, the first of ls: a dry run of
// several layouts (--layout all) that does not fit reads the input again
// for each of the others (dryRunPlans).
func outOfCoreOptions(c *cli.Context, ls []layouts.Layout, dryRun bool, p *progress) (*importer.OutOfCore, error) {
	mem, err := memoryBudget(c)
	if err != nil {
		return nil, err
	}
	o := &importer.OutOfCore{Memory: mem, TmpDir: c.String("tmp-dir"), Layout: ls[0], Force: c.Bool("force-out-of-core"),
		OnPhase: p.phase, Warn: warner(c),
		OnStart: func() {
			// The passes' buffers are sized from the budget; the soft
			// limit makes the collector hold the heap well under it, for
			// what the heap does not count (stacks, the runtime's own,
			// pages not yet returned).
			debug.SetMemoryLimit(softLimit(mem))
		}}
	if dryRun {
		// A dry run out of core plans from the passes, which check the
		// input against one layout.
		o.Plan = true
	}
	return o, nil
}

// refreshOutOfCore is --memory and --tmp-dir for plan and apply: a
// snapshot or a table that does not fit in the budget is planned out of
// core, in sorted passes over files in --tmp-dir (docs/SCALING.md), under
// --shard and for tables with path ids too.
func refreshOutOfCore(c *cli.Context, l layouts.Layout, p *progress) (*importer.OutOfCore, error) {
	mem, err := memoryBudget(c)
	if err != nil {
		return nil, err
	}
	return &importer.OutOfCore{Memory: mem, TmpDir: c.String("tmp-dir"), Layout: l, Force: c.Bool("force-out-of-core"),
		OnPhase: p.phase, Warn: warner(c),
		OnStart: func() { debug.SetMemoryLimit(softLimit(mem)) }}, nil
}

// phase is the out-of-core passes' progress (OutOfCore.OnPhase): the
// import's, the plan's and migrate's, drawn and logged alike.
func (p *progress) phase(phase string, done, total int64) { p.step("out of core: "+phase, done, total) }

// warner writes OutOfCore.Warn's lines (the temporary folders a killed
// run left in --tmp-dir) to stderr.
func warner(c *cli.Context) func(string) {
	return func(s string) { fmt.Fprintf(c.App.ErrWriter, "treeport: %s\n", s) }
}

// softLimit is Go's soft memory limit for a --memory budget that a job
// keeps: three quarters of it, for what the heap does not count (stacks,
// the runtime's own, pages not yet returned), and 16 MiB more, the
// process's own floor (the SDK, the readers' and writers' buffers). A
// limit the live heap reaches makes the collector run back to back: a
// --memory 1MiB import, whose limit was 768 KiB, spent 2.6 times the CPU
// of one at 64MiB on the same input, most of it collecting.
// It is computed as mem/4*3, not mem*3/4: mem*3 overflows an int64 for a
// budget over 3 EiB, and a negative limit leaves Go's unchanged.
func softLimit(mem int64) int64 {
	if mem <= 0 {
		return math.MaxInt64
	}
	l := mem / 4 * 3
	if l > math.MaxInt64-16<<20 {
		return math.MaxInt64
	}
	return l + 16<<20
}
