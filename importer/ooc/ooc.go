// Package ooc is the import of an input read out of core (OutOfCore): a
// few sequential passes over files of a temporary directory, with the
// forest never in memory. importer reads the input once, giving each row
// to a Builder; its State runs the passes (Build) and then answers
// importer's Input for that input: the problems found, the counts and the
// layout's measures, and the emit, which reads the input again (state.go
// is that seam). The prefix layout's links and the nodes in or below a
// cycle have passes of their own (importer/ooclinks, importer/ooccycles).
package ooc

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/importer/ooclinks"
	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/internal/spill"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records/infile"
	"github.com/treeport/treeport/transform"
)

// OutOfCore holds an import to a memory budget. An input whose forest
// fits in it is read in memory, as without a budget; a larger one is read
// out of core: a few sequential passes over files of a temporary directory
// (docs/SCALING.md, "Out of core"):
//
//  1. the skeleton read writes each row's id, parent and place to runs
//     sorted by id;
//  2. their merge finds the duplicate ids and sorts the nodes by parent;
//     a merge join with the ids finds the missing parents;
//  3. the roots are the first level; each level is merge-joined with the
//     nodes sorted by parent, which gives the next level its depths,
//     roots and path sizes (and paths, for a layout that needs them),
//     and checks each node against the layout as it is placed; what no
//     level reaches is in or below a cycle. After a few
//     levels that place few nodes (a deep tree, a chain), the depths of
//     the others are found by doubling (pointer jumping: log2(depth)
//     sorted passes), and each level then reads its own depth only;
//  4. the emit reads the input again, joined row by row with what the
//     levels resolved, sorted by row.
//
// The layout is checked in step 3, so an input read out of core is
// checked against Layout alone. The prefix layout's links are resolved
// by sorts and merge joins of their own (importer/ooclinks), and an input
// with bad links is read again until their rejections settle
// (ooc_links.go).
type OutOfCore struct {
	// Memory is the budget in bytes.
	Memory int64
	// TmpDir is where the temporary files go ("": os.TempDir()).
	TmpDir string
	// Layout is the layout the input is checked against.
	Layout layouts.Layout
	// Force reads out of core whatever the input's size (tests).
	Force bool
	// Plan keeps, for a dry run (PlanLayout), what it measures each node
	// by (its id, parent, root and path sizes), and ranks the nodes of an
	// input that lists a child before its parent in the order an
	// in-memory dry run measures them (keepRank). A dry run of a layout
	// sized in runs (closure) keeps no path.
	Plan bool
	// OnPhase, when set, is told how far each pass is: its name, and done
	// of total (bytes or records; total -1 when not known).
	OnPhase func(phase string, done, total int64)
	// Warn, when set, is told of what the passes' directory's sweep
	// removed or left (spill.Sweep).
	Warn func(string)
	// OnStart, when set, is called once an input is found to be read out
	// of core, before the first pass.
	OnStart func()
	// Refuse, when not "", refuses an input that would be read out of
	// core (ddbwrite.ErrUsage), with this reason: a job that holds the
	// whole forest in memory.
	Refuse string

	// links, in a round after the first of an input with links (see
	// ooc_links.go), are the links and their problems so far.
	links *ooclinks.Links
}

// Dir is where a run with o keeps its temporary files: TmpDir, or ""
// (the system's) for a nil o, as os.MkdirTemp and os.CreateTemp take it.
func (o *OutOfCore) Dir() string {
	if o == nil {
		return ""
	}
	return o.TmpDir
}

// sortBudget is what one external sort of the passes keeps in memory: a
// tenth of the budget. At most two are filling at once (a level's and the
// resolved rows'), beside the merge buffers, the reading and the writing
// of the input and the collector's headroom, and never less than
// minSortBudget. A sixth, as it was, put the live heap of a small budget
// at the soft memory limit (commands' softLimit), and the collector then
// ran back to back: 2M nodes in --memory 48MiB collected 1,259 times, a
// third of the CPU in write barriers and marking (benchmarks/README.md §4).
func (o *OutOfCore) sortBudget() int { return int(max(o.Memory/10, minSortBudget)) }

// minSortBudget is the least an external sort of the passes keeps in
// memory. A variable so that a test can lower it and have a small input's
// sorts merge runs from disk, as a large one's do at 1 MiB.
var minSortBudget int64 = 1 << 20

// InMemoryNodeBytes is what a node of the forest costs in memory at the
// peak of an import in memory, with a margin: the skeleton's 62 bytes,
// the index and the collector's headroom (10M nodes peak at 0.70-0.81 GB
// of RSS; benchmarks/README.md §3, §4).
const InMemoryNodeBytes = 90

// Needs reports whether an input of about hint records (0: not known)
// at path is read out of core: the passes are forced, or its forest does
// not fit the budget.
func (o *OutOfCore) Needs(path string, hint int) bool {
	if o.Force {
		return true
	}
	if o.Memory <= 0 {
		return false
	}
	nodes := int64(hint)
	if nodes == 0 {
		// Not known (compressed, a JSON array, a directory): a record
		// takes 40 bytes at least.
		nodes = infile.Size(path) / 40
	}
	return nodes*InMemoryNodeBytes > o.Memory
}

// State is an input read out of core: its temporary directory, the
// rows resolved, sorted by row, and what the passes found.
type State struct {
	opts   *OutOfCore
	origin Origin
	dir    string
	spill  *spill.Dir
	ready  bool
	layout layouts.Layout
	files  []string
	units  []string

	keep             int
	build, missing   problemSet
	cycles, checked  problemSet
	resolved         *extsort.Sorter // by row: each good row's status, reason, depth and path
	badInner         *extsort.RowSet // the rows of the nodes that have children that could not be read
	nodes, rejected  int64
	roots            int
	measure          *layouts.Measure
	maxDepth, maxLen int
	re               extsort.Enc
	st               transform.Stats // resolve's, kept: one allocation, not one a node
	// notTopo: a node's parent came after it in the input, and an
	// in-memory forest of it is visited breadth first, not in row order.
	notTopo bool
	ranks   uint64 // the ranks given (keepRank)
	// links are the prefix layout's links, when the input has some;
	// reserved, when the input has an attribute name the layout
	// reserves, is the check of a record's reserved names, whose
	// problems come before its link's (checkNode).
	links    *ooclinks.Links
	reserved oocChecker
	// carriers are the ids of the records that carry a name the layout
	// reserves, when the input has one (ooc_reserved.go), while the
	// passes run.
	carriers *oocCarriers
	// keepPath: the nodes carry their paths, for a layout that builds
	// items from them (layouts.NeedsPath), but in a dry run of one whose
	// ImportTable source is sized in runs (layouts.EmitsRuns), which
	// takes the path's sizes alone.
	keepPath bool
	// run is the node whose runs the emit pass gives EmitOptions.Runs:
	// its parent, and its ancestors' ids' bytes in JSON strings.
	run struct {
		parent    string
		ancestors int64
	}
}

// close removes the temporary files.
func (s *State) close() {
	if s.resolved != nil {
		s.resolved.Close()
	}
	s.badInner.Close()
	s.links.Close()
	s.closeCarriers()
	s.spill.Close()
	s.dir = ""
}

// closeCarriers removes the files of the reserved names' carriers.
func (s *State) closeCarriers() {
	s.carriers.close()
	s.carriers = nil
}

func (s *State) moreProblems() int {
	return s.build.more + s.missing.more + s.cycles.more + s.checked.more
}

func (s *State) phase(name string, done, total int64) { s.opts.Phase(name, done, total) }

// Phase tells OnPhase, when it is set, how far a pass is.
func (o *OutOfCore) Phase(name string, done, total int64) {
	if o.OnPhase != nil {
		o.OnPhase(name, done, total)
	}
}

// SpillDir makes a temporary directory treeport-NAME-* in TmpDir for the
// passes of what (internal/spill), after removing what killed runs left
// there (and warning, through Warn, of folders it cannot tell are
// treeport's), and refuses (ErrUsage, nothing read) a TmpDir that cannot
// be written or has less room than need, the passes over of need.
func (o *OutOfCore) SpillDir(name, what string, need int64, of string) (*spill.Dir, error) {
	spill.Sweep(o.TmpDir, o.Warn)
	dir, err := spill.New(o.TmpDir, name, what)
	if err == nil {
		err = dir.Room(need, what, of)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ddbwrite.ErrUsage, err)
	}
	return dir, nil
}

// SpillBytes is about the most the out-of-core passes hold on disk at
// once for the input at path (the free room newState asks of TmpDir).
func SpillBytes(path string) int64 { return spillBytes(path) }

// problemSet keeps the first keep problems by row (all when keep is 0)
// and counts the others.
type problemSet struct {
	keep int
	ps   []rowProblem
	more int
}

type rowProblem struct {
	row int64
	p   *transform.RowError
}

func (s *problemSet) add(row int64, p *transform.RowError) {
	if s.keep > 0 && len(s.ps) >= s.keep {
		s.more++
		if row >= s.ps[len(s.ps)-1].row {
			return
		}
		s.ps = s.ps[:len(s.ps)-1]
	}
	k := len(s.ps)
	for k > 0 && s.ps[k-1].row > row {
		k--
	}
	s.ps = append(s.ps, rowProblem{})
	copy(s.ps[k+1:], s.ps[k:])
	s.ps[k] = rowProblem{row, p}
}

func (s *problemSet) list() []*transform.RowError {
	out := make([]*transform.RowError, len(s.ps))
	for k, p := range s.ps {
		out[k] = p.p
	}
	return out
}

// newState makes the temporary directory in o.TmpDir, and refuses a
// directory that cannot be written or has too little room for the passes.
func newState(o *OutOfCore, in Origin, keep int) (*State, error) {
	path := in.Path
	if o.Refuse != "" {
		return nil, fmt.Errorf("%w: %s", ddbwrite.ErrUsage, o.Refuse)
	}
	if o.OnStart != nil {
		o.OnStart()
	}
	dir, err := o.SpillDir("ooc", "the out-of-core import", spillBytes(path), path)
	if err != nil {
		return nil, err
	}
	if o.Layout == nil {
		dir.Close()
		return nil, errors.New("importer: OutOfCore.Layout is not set")
	}
	return &State{opts: o, origin: in, dir: dir.Path, spill: dir, layout: o.Layout, keep: keep,
		build: problemSet{keep: keep}, missing: problemSet{keep: keep}, cycles: problemSet{keep: keep}, checked: problemSet{keep: keep},
		measure: layouts.NewMeasure(o.Layout), links: o.links,
		keepPath: layouts.NeedsPath(o.Layout) && !(o.Plan && layouts.EmitsRuns(o.Layout))}, nil
}

// spillBytes is about the most the passes hold on disk at once for the
// input at path: its ids and parents twice over, and a path a node; five
// times its size bounds it for any input of fewer than a few hundred
// levels (a compressed input: fifteen). Measured on random trees of
// gen's CSV (benchmarks/README.md §4): 4.2 times at 10M nodes, 4.5 at
// 50M.
func spillBytes(path string) int64 {
	n := infile.Size(path)
	if f, err := os.Open(path); err == nil {
		var magic [4]byte
		f.Read(magic[:])
		f.Close()
		if magic[0] == 0x1f && magic[1] == 0x8b || string(magic[:]) == "\x28\xb5\x2f\xfd" || strings.HasSuffix(path, ".gz") {
			n *= 3
		}
	}
	return 5*n + 1<<20
}

// location files the file of a row, as transform.Builder does.
func (s *State) location(file, unit string) int {
	for k := len(s.files) - 1; k >= 0; k-- {
		if s.files[k] == file {
			return k
		}
	}
	if unit == "" {
		unit = "line"
	}
	s.files = append(s.files, file)
	s.units = append(s.units, unit)
	return len(s.files) - 1
}

// problems is CheckLayout for an input read out of core: the problems of
// the read and of the check against the layout the passes were given, in
// the order of their places.
func (s *State) problems(l layouts.Layout, read []*transform.RowError) []*transform.RowError {
	all := append(slices.Clone(read), s.checked.list()...)
	if l != s.layout {
		all = append(all, &transform.RowError{Err: fmt.Errorf("importer: an input read out of core is checked against the %s layout only, not %s", s.layout.Name(), l.Name())})
	}
	rank := make(map[string]int, len(s.files))
	for k, name := range s.files {
		if _, ok := rank[name]; !ok {
			rank[name] = k
		}
	}
	at := func(p *transform.RowError) int {
		if r, ok := rank[p.File]; ok {
			return r
		}
		return len(s.files)
	}
	slices.SortStableFunc(all, func(a, b *transform.RowError) int {
		return cmp.Or(cmp.Compare(at(a), at(b)), cmp.Compare(a.Line, b.Line))
	})
	return all
}
