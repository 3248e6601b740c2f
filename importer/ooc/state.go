package ooc

import (
	"context"

	"github.com/treeport/treeport/importer/emitbase"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

// What importer sees of an input read out of core: importer reads the
// input once (its skeleton read), giving each row to a Builder; the
// Builder's State then runs the passes (Build), and afterwards answers
// importer's Input for that input: its problems and counts, its measures,
// and the emit, which reads the input again.

// Origin is the input the passes read again: its path and how it is read
// (importer's InputOptions.Path and Source).
type Origin struct {
	Path   string
	Source records.SourceOptions
}

// input is what the passes know of the input importer read: where it is,
// the attribute names its read saw (attrNames, manyNames: importer's
// Input's, for the layout's reserved names), and, once Build ran, the
// problems they found (Problems).
type input struct {
	Opts      Origin
	Problems  []*transform.RowError
	attrNames map[string]*transform.RowError
	manyNames bool
	ooc       *State
}

// HasAttr reports whether some record of the input has the attribute name
// (importer's Input.HasAttr).
func (in *input) HasAttr(name string) bool {
	_, ok := in.attrNames[name]
	return ok || in.manyNames // with too many to keep, it may have it
}

// unitOf is what a place in the input of o counts: rows or lines.
func unitOf(o Origin) string { return emitbase.UnitOf(o.Path, o.Source) }

// State is the Builder's input, read out of core.
func (b *Builder) State() *State { return b.ooc }

// Build runs the passes after the skeleton read (see OutOfCore), which
// gave b every row; attrNames are the attribute names the read saw, each
// with the first place it was seen (all of them unless manyNames: the
// read kept the first ones only). It returns the read's structural
// problems (bad rows, duplicate and missing parents, cycles); those of
// the layout's check are CheckLayout's (Problems).
func (s *State) Build(ctx context.Context, b *Builder, attrNames map[string]*transform.RowError, manyNames bool) ([]*transform.RowError, error) {
	in := &input{Opts: s.origin, attrNames: attrNames, manyNames: manyNames, ooc: s}
	err := in.buildOOC(ctx, b)
	if err == nil && testOnBuilt != nil {
		testOnBuilt(s)
	}
	return in.Problems, err
}

// testOnBuilt, when set, is told of each State whose passes finished (the
// tests' look at what they wrote).
var testOnBuilt func(s *State)

// Ready reports whether Build finished: the emit may run.
func (s *State) Ready() bool { return s.ready }

// Close removes the temporary files.
func (s *State) Close() { s.close() }

// Emit is importer's Input.Emit for an input read out of core.
func (s *State) Emit(ctx context.Context, opts emitbase.Options, fn func(seq int64, item layouts.Item) error) (emitbase.Stats, error) {
	return (&input{Opts: s.origin, ooc: s}).oocEmit(ctx, opts, fn)
}

// EmitAttrs is importer's Input.EmitAttrs for an input read out of core.
func (s *State) EmitAttrs(ctx context.Context, opts emitbase.Options, fn func(seq int64, item []layouts.Attr) error) (emitbase.Stats, error) {
	return (&input{Opts: s.origin, ooc: s}).oocEmitAttrs(ctx, opts, nil, fn)
}

// Problems is importer's Input.CheckLayout for an input read out of core:
// read, the problems of the read, and those of the check against the
// layout the passes were given (l must be it), in the order of their
// places.
func (s *State) Problems(l layouts.Layout, read []*transform.RowError) []*transform.RowError {
	return s.problems(l, read)
}

// MoreProblems is how many problems were found beyond the ones kept.
func (s *State) MoreProblems() int { return s.moreProblems() }

// Rejected is the number of rejected nodes, descendants included.
func (s *State) Rejected() int { return int(s.rejected) }

// Roots is the number of trees.
func (s *State) Roots() int { return s.roots }

// Bounds are the number of valid nodes, the deepest one's depth and the
// longest path's bytes.
func (s *State) Bounds() (valid int64, depth, pathBytes int) {
	return s.nodes - s.rejected, s.maxDepth, s.maxLen
}

// Layout is the layout the passes checked the input against.
func (s *State) Layout() layouts.Layout { return s.layout }

// Measure is what the passes measured of every valid node as they placed
// it, in Layout.
func (s *State) Measure() *layouts.Measure { return s.measure }

// Collections is the dry run's measure of the collections of l (Layout)
// that the passes do not measure as they place each node: their own
// passes (ooc_collections.go).
func (s *State) Collections(ctx context.Context, l layouts.Layout) (*layouts.Measure, error) {
	return s.collections(ctx, l)
}

// Run is the node of the latest item run EmitAttrs gave Options.Runs:
// its parent's id, and its ancestors' ids' bytes in JSON strings.
func (s *State) Run() (parent string, ancestors int64) { return s.run.parent, s.run.ancestors }

// Again reports whether the input must be read again: its links' problems
// reject more nodes (ooc_links.go). It returns the options of that round,
// which take over the links found so far (close them with CloseRound when
// the round does not run).
func (s *State) Again() (*OutOfCore, bool) {
	if s.links == nil || !s.links.Again {
		return nil, false
	}
	o := *s.opts
	o.links, o.OnStart = s.links, nil
	s.links = nil // the next round's
	return &o, true
}

// CloseRound removes the links that options made by Again carry, when
// their round failed.
func (o *OutOfCore) CloseRound() { o.links.Close() }
