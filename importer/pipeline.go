// Package importer is the import job: it reads an input through records
// (OpenSource), checks it and builds its forest (ReadInput), and writes the
// items of a layout to sinks: DynamoDB itself, or files for DynamoDB's
// import from S3.
package importer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unsafe"

	"github.com/treeport/treeport/importer/emitbase"
	"github.com/treeport/treeport/importer/ooc"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/models"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/records/infile"
	"github.com/treeport/treeport/transform"
)

// ErrInvalid is returned when the input has problems and nothing may be
// written. The problems themselves are in Input.Problems. It is
// infile.ErrInvalid, which the DynamoDB JSON item reader returns too.
var ErrInvalid = infile.ErrInvalid

// marked is err, which keeps its own message, classed as mark too
// (errors.Is): ErrInvalid.
type marked struct{ err, mark error }

func (e *marked) Error() string   { return e.err.Error() }
func (e *marked) Unwrap() []error { return []error{e.err, e.mark} }

// InputOptions say how to read and check an input.
type InputOptions struct {
	Path   string
	Source records.SourceOptions
	// ClosureCopy is what closure ancestor rows copy (nil: all; empty: none).
	ClosureCopy []string
	// SizeHint is the expected number of records; 0 lets ReadInput take
	// a Parquet file's count, or guess it from the size of a CSV or JSON
	// Lines file.
	SizeHint int
	// OnProgress, when set, is told every 65,536 records how many
	// ReadInput has read, for a progress line on a large input.
	OnProgress func(records int)
	// MaxProblems is how many problems of each check to keep (the first
	// ones found); the others are only counted (Input.MoreProblems), so
	// that a mistake repeated on millions of rows costs a count. 0 keeps
	// them all.
	MaxProblems int
	// OutOfCore, when set, holds the read to a memory budget: an input
	// whose forest would not fit is read out of core (see OutOfCore).
	OutOfCore *OutOfCore
}

// Input is an input read once and checked: the forest's skeleton, the
// problems found and what it takes to read the records again.
type Input struct {
	Opts     InputOptions
	Forest   *transform.Forest
	Records  int // rows read, bad ones included
	Problems []*transform.RowError
	// attrNames holds every attribute name seen, with the first place it
	// was seen, for the layouts' reserved-name checks.
	attrNames map[string]*transform.RowError
	// manyNames: the input has more than maxAttrNames attribute names,
	// and attrNames holds the first ones only (see CheckLayout).
	manyNames bool
	// links holds each link's node and its target's, for a layout that
	// writes links (readLinks, by the last CheckLayout).
	links map[int32]int32
	// ooc is the out-of-core state of an input read so (Forest is then
	// nil).
	ooc *ooc.State
}

// maxAttrNames bounds the attribute names an Input keeps, so that an input
// whose records each bring new ones costs bounded memory (some MB).
const maxAttrNames = 100_000

// addAttrName keeps the first place of the attribute name k, while it
// keeps fewer than maxAttrNames.
func (in *Input) addAttrName(k string, at *transform.RowError) {
	if _, ok := in.attrNames[k]; ok {
		return
	}
	if len(in.attrNames) >= maxAttrNames {
		in.manyNames = true
		return
	}
	in.attrNames[k] = at
}

// MoreProblems is how many problems were found beyond the ones returned
// (InputOptions.MaxProblems): by ReadInput, and by the last CheckLayout.
func (in *Input) MoreProblems() int {
	if in.ooc != nil {
		return in.ooc.MoreProblems()
	}
	return in.Forest.MoreProblems()
}

// HasAttr reports whether some record of the input has the attribute name.
func (in *Input) HasAttr(name string) bool {
	_, ok := in.attrNames[name]
	return ok || in.manyNames // with too many to keep, it may have it
}

// ReadInput reads the whole input once and builds its skeleton: ids,
// parents and attribute sizes, never the attribute values. The structural
// problems of SPEC §2 (bad rows, empty, duplicate and self-parent ids,
// missing parents, cycles) are in the returned Input; layout problems are
// added by CheckLayout.
//
// For a CSV input, this read checks every cell and measures the attributes
// without building them; other formats are read record by record.
func ReadInput(ctx context.Context, opts InputOptions) (*Input, error) {
	return readInput(ctx, opts, true)
}

// readInput is ReadInput; fast=false reads with Next even from a
// records.SkeletonSource, so that tests can hold the two reads together.
func readInput(ctx context.Context, opts InputOptions, fast bool) (*Input, error) {
	in, err := readInputOnce(ctx, opts, fast)
	// An input read out of core whose links' problems reject more nodes
	// is read again with them (see importer/ooc/ooc_links.go).
	for err == nil && in.ooc != nil {
		o, again := in.ooc.Again()
		if !again {
			break
		}
		in.Close()
		opts.OutOfCore = o
		if in, err = readInputOnce(ctx, opts, fast); err != nil {
			o.CloseRound()
		}
	}
	return in, err
}

// readInputOnce is readInput, one round of it.
func readInputOnce(ctx context.Context, opts InputOptions, fast bool) (*Input, error) {
	src, err := records.OpenSource(opts.Path, opts.Source)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	var copySet map[string]bool
	if opts.ClosureCopy != nil {
		copySet = make(map[string]bool, len(opts.ClosureCopy))
		for _, a := range opts.ClosureCopy {
			copySet[a] = true
		}
	}
	hint := opts.SizeHint
	if c, ok := src.(records.CountedSource); ok && hint == 0 {
		hint = c.Records() // a Parquet footer's count
	}
	if hint == 0 {
		hint = estimateRecords(opts.Path, formatOf(opts))
	}
	in := &Input{Opts: opts, attrNames: map[string]*transform.RowError{}}
	var (
		b     skeletonSink
		inMem *transform.Builder
	)
	if o := opts.OutOfCore; o != nil && o.Needs(opts.Path, hint) {
		ob, err := ooc.NewBuilder(o, ooc.Origin{Path: opts.Path, Source: opts.Source}, opts.MaxProblems, copySet != nil)
		if err != nil {
			return nil, err
		}
		in.ooc = ob.State()
		b = ob
		// The temporary files go with a read that fails or is
		// interrupted; a finished one's, with Input.Close.
		defer func() {
			if !in.ooc.Ready() {
				in.ooc.Close()
			}
		}()
	} else {
		inMem = transform.NewBuilder(hint, copySet != nil)
		inMem.KeepProblems(opts.MaxProblems)
		b = inMem
	}
	unit := unitOf(opts)
	if sk, ok := src.(records.SkeletonSource); ok && fast {
		if err := in.readSkeleton(ctx, sk, b, unit, copySet); err != nil {
			return nil, err
		}
		return in, in.build(ctx, inMem, b)
	}
	for {
		if in.Records&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if in.Records&(1<<16-1) == 0 && in.Records > 0 && opts.OnProgress != nil {
				opts.OnProgress(in.Records)
			}
		}
		rec, err := src.Next(ctx)
		if err == io.EOF {
			break
		}
		var re *transform.RowError
		if errors.As(err, &re) && errors.Is(re, records.ErrRestUnreadable) {
			return nil, fmt.Errorf("%w: %w; nothing is written, whatever --on-invalid says, for the rows after it cannot be read", ErrInvalid, re)
		}
		if errors.As(err, &re) {
			in.Records++
			parent := ""
			if rec != nil {
				parent = rec.Parent
			}
			b.AddBad(re, parent)
			continue
		}
		if err != nil {
			return nil, err
		}
		in.Records++
		size := 0
		copyBytes := 0
		var over *transform.RowError
		for k, v := range rec.Attrs {
			n := transform.ValueSize(v)
			if n > infile.MaxFieldBytes {
				over = infile.FieldOverLimit(rec.File, rec.Line, unit, rec.ID, k, n)
				break
			}
			size += len(k) + n
			if copySet[k] {
				copyBytes += len(k) + n
			}
		}
		if over == nil && size > infile.MaxRecordBytes {
			over = infile.RecordOverLimit(rec.File, rec.Line, unit, rec.ID, size)
		}
		if over != nil {
			b.AddBad(over, rec.Parent)
			continue
		}
		for k := range rec.Attrs {
			if _, ok := in.attrNames[k]; !ok {
				in.addAttrName(k, &transform.RowError{File: rec.File, Line: rec.Line, Unit: unit, ID: rec.ID})
			}
		}
		if copySet == nil {
			copyBytes = size
		}
		b.Add(rec, unit, size, copyBytes)
	}
	return in, in.build(ctx, inMem, b)
}

// skeletonSink takes each row of the skeleton read: a transform.Builder,
// or the first pass of an out-of-core import (ooc.Builder).
type skeletonSink interface {
	Add(rec *transform.Record, unit string, attrBytes, copyBytes int)
	AddBad(err *transform.RowError, parent string)
}

// build ends the skeleton read: the Forest of an input in memory, or the
// out-of-core passes.
func (in *Input) build(ctx context.Context, inMem *transform.Builder, b skeletonSink) error {
	if inMem != nil {
		in.Forest, in.Problems = inMem.Build()
		return nil
	}
	var err error
	in.Problems, err = in.ooc.Build(ctx, b.(*ooc.Builder), in.attrNames, in.manyNames)
	return err
}

// ReadInput's loop is infile.CheckLimits, measuring the copied
// attributes on the way. The CSV source refuses a cell over the field
// limit itself, and the text sources a record over the record limit
// before they parse it; ReadInput holds every source's records to both
// limits, Parquet's too.

// readSkeleton is ReadInput's loop for a records.SkeletonSource.
func (in *Input) readSkeleton(ctx context.Context, src records.SkeletonSource, b skeletonSink, unit string, copySet map[string]bool) error {
	src.Skeleton(copySet)
	var row records.SkeletonRow
	for {
		if in.Records&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if in.Records&(1<<16-1) == 0 && in.Records > 0 && in.Opts.OnProgress != nil {
				in.Opts.OnProgress(in.Records)
			}
		}
		err := src.NextSkeleton(ctx, &row)
		if err == io.EOF {
			break
		}
		if err != nil {
			// re is declared here, for errors.As makes it escape: a good
			// row allocates nothing.
			var re *transform.RowError
			if !errors.As(err, &re) {
				return err
			}
			in.Records++
			b.AddBad(re, row.Parent)
			continue
		}
		in.Records++
		// Add keeps copies of the strings, which are the reader's.
		rec := transform.Record{ID: row.ID, Parent: row.Parent, File: row.File, Line: row.Line}
		b.Add(&rec, unit, row.AttrBytes, row.CopyBytes)
	}
	for _, a := range src.AttrsSeen() {
		if _, ok := in.attrNames[a.Name]; !ok {
			in.addAttrName(a.Name, &transform.RowError{File: a.File, Line: a.Line, Unit: unit, ID: a.ID})
		}
	}
	return nil
}

// unitOf is what a place in the input of opts counts: rows or lines.
func unitOf(opts InputOptions) string { return emitbase.UnitOf(opts.Path, opts.Source) }

// formatOf is the format the input of opts is read in.
func formatOf(opts InputOptions) string { return emitbase.FormatOf(opts.Path, opts.Source) }

// CheckLayout adds the problems the layout finds (delimiters in ids,
// reserved attribute names, keys over DynamoDB's limits, items over 400 KB)
// and marks the rejected nodes and their subtrees. It returns every problem
// of the input for that layout, in the order of their places (file, then
// line: Forest.SortProblems). Call Forest.Reset to check the same input
// against another layout.
func (in *Input) CheckLayout(l layouts.Layout) []*transform.RowError {
	if in.ooc != nil {
		return in.ooc.Problems(l, in.Problems)
	}
	problems := in.checkLayout(l)
	if more := in.rejectLinksToRejected(); len(more) > 0 {
		problems = append(problems, more...)
		in.Forest.SortProblems(problems)
	}
	return problems
}

// checkLayout is CheckLayout but for the links to nodes its checks
// rejected.
func (in *Input) checkLayout(l layouts.Layout) []*transform.RowError {
	problems := append([]*transform.RowError(nil), in.Problems...)
	// Links (layouts.Links): each bad one is its node's problem.
	linkErrs, err := in.readLinks(l)
	if err != nil {
		problems = append(problems, &transform.RowError{File: in.Opts.Path, Err: fmt.Errorf(
			"%w: reading the input again for its links failed: %v", transform.ErrLink, err)})
		in.Forest.Check(func(int, *transform.Stats) error { return transform.ErrLink })
		in.Forest.SortProblems(problems)
		return problems
	}
	if dups := in.sameLeafNames(l); len(dups) > 0 {
		if linkErrs == nil {
			linkErrs = map[int32]error{}
		}
		for i, e := range dups {
			if _, ok := linkErrs[i]; !ok {
				linkErrs[i] = e
			}
		}
	}
	withLinks := func(carriers map[int32]error) map[int32]error {
		for i, e := range linkErrs {
			if _, ok := carriers[i]; !ok {
				carriers[i] = e
			}
		}
		return carriers
	}
	// Reserved attribute names: one problem per name, where it is first seen.
	names := make([]string, 0, len(in.attrNames))
	for k := range in.attrNames {
		names = append(names, k)
	}
	sort.Strings(names)
	var badAttrs []string
	for _, k := range names {
		if err := layouts.CheckAttrName(l, k); err != nil {
			at := in.attrNames[k]
			problems = append(problems, &transform.RowError{File: at.File, Line: at.Line, Unit: at.Unit, ID: at.ID, Err: err})
			badAttrs = append(badAttrs, strings.TrimPrefix(err.Error(), transform.ErrReservedAttr.Error()+": "))
		}
	}
	if in.manyNames && len(badAttrs) == 0 {
		// Not every name was kept: the records are read again for the
		// ones the layout reserves.
		carriers, err := in.reservedCarriers(l)
		switch {
		case err != nil:
			problems = append(problems, &transform.RowError{File: in.Opts.Path, Err: fmt.Errorf(
				"%w: the input has over %d attribute names, and reading it again to check them against the layout failed: %v", transform.ErrReservedAttr, maxAttrNames, err)})
			in.Forest.Check(func(int, *transform.Stats) error { return transform.ErrReservedAttr })
			in.Forest.SortProblems(problems)
			return problems
		case len(carriers) > 0:
			carriers = withLinks(carriers)
			problems = problems[:len(in.Problems)]
			problems = append(problems, in.Forest.Check(carriersThenLayout(carriers, l))...)
			in.Forest.SortProblems(problems)
			return problems
		}
	}
	if len(badAttrs) > 0 {
		// Only the records that have a reserved name are rejected, each
		// with its own reason (and its subtree), so that skip mode writes
		// the others; the problems are theirs, not one a name.
		if carriers, err := in.reservedCarriers(l); err == nil {
			carriers = withLinks(carriers)
			problems = problems[:len(in.Problems)]
			problems = append(problems, in.Forest.Check(carriersThenLayout(carriers, l))...)
			in.Forest.SortProblems(problems)
			return problems
		}
		// The input could not be read again: no node is written, with
		// the reason that says which --attr.
		err := fmt.Errorf("%w: %s (no node of the input is written until it is renamed)", transform.ErrReservedAttr, strings.Join(badAttrs, "; "))
		in.Forest.Check(func(int, *transform.Stats) error { return err })
		in.Forest.SortProblems(problems)
		return problems
	}
	checker := layouts.NewChecker(l)
	if len(linkErrs) == 0 && checker.FitsAll(in.Forest.Bounds()) {
		// Every node fits: Check would find nothing, and reject nothing
		// that Build did not (it propagated its rejections).
		in.Forest.SortProblems(problems)
		return problems
	}
	problems = append(problems, in.Forest.Check(func(i int, s *transform.Stats) error {
		if err := linkErrs[int32(i)]; err != nil {
			return err
		}
		if checker.Fits(s) {
			return nil // what almost every node does, at a fraction of Check's cost
		}
		return checker.Check(s)
	})...)
	in.Forest.SortProblems(problems)
	return problems
}

// carriersThenLayout is the check of an input with an attribute name the
// layout reserves: a node's own problem (its reserved names, else its
// link's), else the layout's check (keys, items, delimiter), which the
// other nodes must pass as in an input without such a name (SPEC §2:
// every problem is reported; one not found here would stop the write of
// --on-invalid=skip instead of rejecting its node).
func carriersThenLayout(carriers map[int32]error, l layouts.Layout) func(int, *transform.Stats) error {
	checker := layouts.NewChecker(l)
	return func(i int, s *transform.Stats) error {
		if err := carriers[int32(i)]; err != nil {
			return err
		}
		if checker.Fits(s) {
			return nil
		}
		return checker.Check(s)
	}
}

// reservedCarriers reads the input again for the records that have an
// attribute the layout reserves, and returns each one's node with its own
// problem (every reserved name it has). Only an input with such a name
// pays for this read; the rows that cannot be read are rejected already.
func (in *Input) reservedCarriers(l layouts.Layout) (map[int32]error, error) {
	src, err := records.OpenSource(in.Opts.Path, in.Opts.Source)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	f := in.Forest
	carriers := map[int32]error{}
	var errs []error
	for {
		rec, err := src.Next(context.Background())
		if err == io.EOF {
			return carriers, nil
		}
		var re *transform.RowError
		if errors.As(err, &re) {
			continue
		}
		if err != nil {
			return nil, err
		}
		errs = errs[:0]
		for _, k := range slices.Sorted(maps.Keys(rec.Attrs)) {
			if err := layouts.CheckAttrName(l, k); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) == 0 {
			continue
		}
		i := f.Lookup(rec.ID)
		if i < 0 {
			continue
		}
		if _, ok := carriers[int32(i)]; ok {
			continue // a duplicate id: its first record's
		}
		if len(errs) == 1 {
			carriers[int32(i)] = errs[0]
		} else {
			carriers[int32(i)] = transform.Problems(slices.Clone(errs))
		}
	}
}

// EmitOptions say what to do with the items of a checked input
// (emitbase.Options: an input read out of core takes the same).
type EmitOptions = emitbase.Options

// EmitStats count what Emit did (emitbase.Stats).
type EmitStats = emitbase.Stats

// WriteRejects reads the input again and writes to w each record that the
// last CheckLayout (with l) rejected, and each row that could not be read,
// as it came in, with its place and reason and the layout's name: the
// rejects file of import, a line at a time, so that it costs no memory
// however many records it holds. It returns how many it wrote.
func (in *Input) WriteRejects(ctx context.Context, l layouts.Layout, w io.Writer) (int64, error) {
	src, err := records.OpenSource(in.Opts.Path, emitbase.WithRaw(in.Opts.Source, true))
	if err != nil {
		return 0, err
	}
	defer src.Close()
	var st EmitStats
	opts := EmitOptions{Layout: l, Rejects: w, RejectsLayout: l.Name()}
	err = in.scan(ctx, opts, &st, false, src.Next, func(*transform.Record, int) (error, error) { return nil, nil })
	return st.Rejected, err
}

// Emit reads the input a second time and calls fn with each item of every
// node that is not rejected, numbered from 0 in a deterministic order (the
// input's order; a node's items in the layout's order). Items numbered below
// opts.Skip are built but not passed on. Each item is a fresh map that fn
// may keep. An error from fn stops Emit and is returned.
func (in *Input) Emit(ctx context.Context, opts EmitOptions, fn func(seq int64, item layouts.Item) error) (EmitStats, error) {
	return in.emit(ctx, opts, fn, true)
}

// emit is Emit; fast=false reads with Next even from a records.ReuseSource.
func (in *Input) emit(ctx context.Context, opts EmitOptions, fn func(seq int64, item layouts.Item) error, fast bool) (EmitStats, error) {
	if in.ooc != nil {
		return in.ooc.Emit(ctx, opts, fn)
	}
	var st EmitStats
	src, err := records.OpenSource(in.Opts.Path, emitbase.WithRaw(in.Opts.Source, opts.Rejects != nil))
	if err != nil {
		return st, err
	}
	defer src.Close()
	spec := opts.Layout.Table()
	var (
		node transform.Node
		nums = emitbase.Numbering{Opts: &opts, St: &st}
		ferr error
		buf  transform.Record
	)
	next := src.Next
	if rs, ok := src.(records.ReuseSource); ok && fast {
		next = func(ctx context.Context) (*transform.Record, error) {
			err := rs.NextReuse(ctx, &buf)
			return &buf, err
		}
	}
	emit := func(item layouts.Item) {
		if ferr != nil {
			return
		}
		// A node may have many items (closure: depth + 1): the context is
		// looked at between items too, not only between rows.
		if nums.Seq&4095 == 4095 {
			if ferr = ctx.Err(); ferr != nil {
				return
			}
		}
		if s, ok := nums.Next(opts.Shard.Of <= 1 || opts.Shard.OwnsValue(item[spec.PK.Name])); ok {
			ferr = fn(s, item)
		}
	}
	var path []string
	inner := layouts.ImplicitInner(opts.Layout)
	err = in.scan(ctx, opts, &st, true, next, func(rec *transform.Record, i int) (error, error) {
		node.Record = *rec
		node.Record.Raw = nil
		node.Depth = in.Forest.Depth(i)
		path = in.Forest.AppendPath(path[:0], i)
		node.Path = path
		node.Link = in.linkPath(node.Link, i)
		node.Inner = inner && in.Forest.HasChildren(i)
		return opts.Layout.Items(&node, emit), ferr
	})
	return st, err
}

// EmitAttrs is Emit for a caller that uses each item at once, such as a
// file writer that encodes it: it emits the same items, numbered the same,
// with the same stats, but each item is a slice of attributes built in
// memory reused for the next item (see Layout.AppendItems), valid only
// during the call to fn; fn must copy what it keeps. Reading a CSV input
// this way allocates nothing per row.
func (in *Input) EmitAttrs(ctx context.Context, opts EmitOptions, fn func(seq int64, item []layouts.Attr) error) (EmitStats, error) {
	return in.emitAttrs(ctx, opts, fn, true)
}

// emitAttrs is EmitAttrs; fast=false reads with Next even from a
// records.FlatSource.
func (in *Input) emitAttrs(ctx context.Context, opts EmitOptions, fn func(seq int64, item []layouts.Attr) error, fast bool) (EmitStats, error) {
	if in.ooc != nil {
		return in.ooc.EmitAttrs(ctx, opts, fn)
	}
	var st EmitStats
	src, err := records.OpenSource(in.Opts.Path, emitbase.WithRaw(in.Opts.Source, opts.Rejects != nil))
	if err != nil {
		return st, err
	}
	defer src.Close()
	spec := opts.Layout.Table()
	var (
		node  layouts.FlatNode
		items layouts.ItemBuffer
		nums  = emitbase.Numbering{Opts: &opts, St: &st}
		ferr  error
	)
	next, row := emitbase.FlatNext(src, fast)
	emit := func(item []layouts.Attr) {
		if ferr != nil {
			return
		}
		// A node may have many items (closure: depth + 1): the context is
		// looked at between items too, not only between rows.
		if nums.Seq&4095 == 4095 {
			if ferr = ctx.Err(); ferr != nil {
				return
			}
		}
		if s, ok := nums.Next(opts.Shard.Of <= 1 || opts.Shard.OwnsValue(emitbase.PartitionValue(spec, item))); ok {
			ferr = fn(s, item)
		}
	}
	// The keys of the path and prefix layouts join the ids of the path,
	// and need no more of it: for a one-byte delimiter, they take the
	// joined text alone, which PathTexts makes from the kept text of an
	// ancestor near the node; for a longer one, the text and the ids. The
	// closure layout, and a layout of another package, take the ids.
	delim := opts.Layout.Delimiter()
	var (
		ids   []string
		text  []byte
		paths *transform.PathTexts
	)
	f := in.Forest
	runs := opts.Runs != nil && layouts.EmitsRuns(opts.Layout)
	if runs {
		if opts.Skip != 0 || opts.Shard.Of > 1 {
			return st, errors.New("importer: EmitOptions.Runs with Skip or Shard set")
		}
		// No path is built: a run stands for the ancestors' rows.
		cur := 0
		emitRun := func(item []layouts.Attr, run int) {
			if ferr == nil {
				ferr = opts.Runs(cur, item, run)
			}
		}
		err = in.scan(ctx, opts, &st, false, next, func(rec *transform.Record, i int) (error, error) {
			cur = i
			node = layouts.FlatNode{ID: rec.ID, Parent: rec.Parent, Depth: f.Depth(i), Attrs: row.Flat}
			return layouts.AppendItemRuns(opts.Layout, &node, &items, emitRun), ferr
		})
		return st, err
	}
	if len(delim) == 1 && layouts.TakesPathText(opts.Layout) {
		paths = f.NewPathTexts(delim, pathTextsBudget(f.Len()))
	}
	var link []string // a link's target's path, when the node is one
	warmed := 0       // the nodes below have had their paths read ahead
	inner := layouts.ImplicitInner(opts.Layout)
	needsPath := layouts.NeedsPath(opts.Layout) // adjacency: the walk up to the root is not taken
	err = in.scan(ctx, opts, &st, paths == nil && needsPath, next, func(rec *transform.Record, i int) (error, error) {
		if paths != nil {
			if i >= warmed || i < warmed-64 {
				paths.Warm(i, i+64)
				warmed = i + 64
			}
			// The forest's id, parent and path, which the layout takes
			// as they are when no id holds the delimiter. A row whose
			// parent is not the one the skeleton read found keeps its
			// own, and gets the layout's checks.
			text = node.SetPath(paths, i, text) // every field but Attrs
			if node.Parent != rec.Parent {
				node.ID, node.Parent = rec.ID, rec.Parent
			}
			node.Attrs = row.Flat
			node.Link = in.linkPath(link, i)
			node.Inner = inner && f.HasChildren(i)
			err := opts.Layout.AppendItems(&node, &items, emit)
			if err == nil || !errors.Is(err, layouts.ErrPathNeeded) {
				return err, ferr
			}
			// An id holds the delimiter, or the text cannot show that the
			// node is whole: the layout needs the ids, for its error or
			// its items.
			ids, text = f.AppendPathText(ids[:0], text[:0], i, delim)
			node = layouts.FlatNode{ID: rec.ID, Parent: rec.Parent, Depth: f.Depth(i), Attrs: row.Flat,
				PathText: unsafe.String(unsafe.SliceData(text), len(text)), PathDelim: delim}
		} else if delim != "" {
			node = layouts.FlatNode{ID: rec.ID, Parent: rec.Parent, Depth: f.Depth(i), Attrs: row.Flat}
			ids, text = f.AppendPathText(ids[:0], text[:0], i, delim)
			node.PathText, node.PathDelim = unsafe.String(unsafe.SliceData(text), len(text)), delim
		} else {
			node = layouts.FlatNode{ID: rec.ID, Parent: rec.Parent, Depth: f.Depth(i), Attrs: row.Flat}
			ids = nil
			if p := f.Parent(i); needsPath || p < 0 && rec.Parent != "" || p >= 0 && f.ID(p) != rec.Parent {
				// Without its path, a row whose parent is not the one
				// the skeleton read found gets it, for the layout's error.
				ids = f.AppendPath(ids[:0], i)
			}
		}
		node.Path = ids
		node.Link = in.linkPath(link, i)
		node.Inner = inner && f.HasChildren(i)
		return opts.Layout.AppendItems(&node, &items, emit), ferr
	})
	return st, err
}

// pathTextsBudget is how many bytes of joined paths EmitAttrs keeps for n
// nodes: 8 a node, at least 1 MB. Each lets the walks of its node's
// descendants stop there.
func pathTextsBudget(n int) int { return max(8*n, 1<<20) }

// scan is the loop of Emit and EmitAttrs. When warm, it reads the paths of
// the next nodes ahead for items (see WarmPaths). It reads every row with next,
// writes the rejected ones to opts.Rejects, and calls items for each node
// that is not rejected, with its index in the forest. items returns the
// layout's error for the node, and fn's error, which stops the loop as it
// is. The strings of next's records need only last until the following
// call.
func (in *Input) scan(ctx context.Context, opts EmitOptions, st *EmitStats, warm bool,
	next func(context.Context) (*transform.Record, error),
	items func(rec *transform.Record, node int) (layoutErr, fnErr error)) error {
	f := in.Forest
	unit := unitOf(in.Opts)
	var (
		rejects *json.Encoder
		guess   int // the node the next row most likely is: the one after the last
		warmed  int // the nodes below it have had their paths read ahead
	)
	if opts.Rejects != nil {
		rejects = json.NewEncoder(opts.Rejects)
		rejects.SetEscapeHTML(false)
	}
	for n := 0; ; n++ {
		if n&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		rec, err := next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			var re *transform.RowError // here, for it escapes
			if !errors.As(err, &re) {
				return err
			}
			st.Rejected++
			if rejects != nil {
				var raw []byte
				if rec != nil {
					raw = rec.Raw
				}
				line := emitbase.RejectLine(re.File, re.Line, re.Unit, re.ID, re, raw)
				line.Layout = opts.RejectsLayout
				if err := rejects.Encode(line); err != nil {
					return err
				}
			}
			continue
		}
		// Rows come in the order the skeleton was built in: the node after
		// the last one is the likely one, and an id comparison is cheaper
		// than a lookup.
		i := guess
		if i >= f.Len() || f.ID(i) != rec.ID {
			i = f.Lookup(rec.ID)
		}
		if i >= 0 {
			guess = i + 1
		}
		if i < 0 || f.Rejected(i) {
			st.Rejected++
			if rejects != nil {
				reason := error(transform.ErrEmptyID)
				if i >= 0 {
					reason = f.Reason(i)
				}
				line := emitbase.RejectLine(rec.File, rec.Line, unit, rec.ID, reason, rec.Raw)
				line.Layout = opts.RejectsLayout
				if err := rejects.Encode(line); err != nil {
					return err
				}
			}
			continue
		}
		st.Nodes++
		if warm && (i >= warmed || i < warmed-64) {
			// Every layout walks the node's path: read the paths of
			// the next nodes together (see WarmPaths).
			f.WarmPaths(i, i+64)
			warmed = i + 64
		}
		lerr, ferr := items(rec, i)
		if lerr != nil {
			// The record's strings may be the reader's: the error keeps copies.
			return &transform.RowError{File: rec.File, Line: rec.Line, Unit: unit, ID: strings.Clone(rec.ID), Err: lerr}
		}
		if ferr != nil {
			return ferr
		}
	}
	return nil
}

// Fingerprint hashes the input's bytes (every file of a directory, in name
// order) with the given settings, so that a checkpoint is only ever resumed
// with the same input and the same flags.
func Fingerprint(path string, settings any) (string, error) {
	h := sha256.New()
	settingsJSON, err := json.Marshal(settings)
	if err != nil {
		return "", err
	}
	h.Write(settingsJSON)
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(path, p)
		fmt.Fprintf(h, "\x00%s\x00", rel)
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(h, f)
		return err
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sameLeafNames finds, for a table model that keys a leaf by its name
// alone (models.LeavesOnly: store-locations' StoreNumber), each leaf whose
// name an earlier leaf has: both would be put under one key, the second
// over the first. Each is its node's problem.
func (in *Input) sameLeafNames(l layouts.Layout) map[int32]error {
	if !models.LeavesOnly(l) || in.Forest == nil {
		return nil
	}
	f := in.Forest
	first := map[string]int{}
	var errs map[int32]error
	for i := range f.Len() {
		if len(f.Children(i)) > 0 {
			continue
		}
		id := f.ID(i)
		name := layouts.NameOf(id, l.Delimiter())
		j, seen := first[name]
		if !seen {
			first[name] = i
			continue
		}
		if errs == nil {
			errs = map[int32]error{}
		}
		errs[int32(i)] = fmt.Errorf("%w: the leaf %q has the name %q of the leaf %q, and %s keys a leaf's item by its name alone: the second would be put over the first; give each leaf a name of its own",
			transform.ErrDuplicateID, id, name, f.ID(j), l.Name())
	}
	return errs
}
