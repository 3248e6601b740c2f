package ooc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unsafe"

	"github.com/treeport/treeport/importer/emitbase"
	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/records/infile"
	"github.com/treeport/treeport/transform"
)

// oocEmitAttrs is EmitAttrs for an input read out of core: it reads the
// input again, joined row by row with the rows the passes resolved (sorted
// by row), and emits the same items, numbered the same, as an input read
// in memory does: to fn, valid during the call only, or, when keepFn is
// set, to it instead, as maps of their own (Emit).
func (in *input) oocEmitAttrs(ctx context.Context, opts emitbase.Options, keepFn func(seq int64, item layouts.Item) error, fn func(seq int64, item []layouts.Attr) error) (emitbase.Stats, error) {
	keep := keepFn != nil
	var st emitbase.Stats
	s := in.ooc
	runs := opts.Runs != nil && layouts.EmitsRuns(opts.Layout)
	if runs && (opts.Skip != 0 || opts.Shard.Of > 1 || keep || !s.opts.Plan) {
		return st, errors.New("importer: EmitOptions.Runs out of core without OutOfCore.Plan, or with Skip, Shard or Emit")
	}
	src, res, inner, err := in.oocEmitSources(opts)
	if err != nil {
		return st, err
	}
	defer src.Close()
	defer res.Close()
	defer inner.Close()
	links, err := s.links.Paths()
	if err != nil {
		return st, err
	}
	defer links.Close()
	next, row := emitbase.FlatNext(src, !keep)
	spec := opts.Layout.Table()
	var (
		node  layouts.FlatNode
		items layouts.ItemBuffer
		nums  = emitbase.Numbering{Opts: &opts, St: &st}
		ferr  error
		rn    resolvedNode
		text  []byte
		r     int64
	)
	emitRun := func(item []layouts.Attr, run int) {
		if ferr == nil {
			ferr = opts.Runs(int(r), item, run)
		}
	}
	// step numbers one more item, owned by this shard or not, and says
	// whether to pass it on; the context is looked at every 4,096 items.
	step := func(owned bool) (int64, bool) {
		if ferr != nil {
			return 0, false
		}
		if nums.Seq&4095 == 4095 {
			if ferr = ctx.Err(); ferr != nil {
				return 0, false
			}
		}
		return nums.Next(owned)
	}
	emit := func(item []layouts.Attr) {
		if n, ok := step(opts.Shard.Of <= 1 || opts.Shard.OwnsValue(emitbase.PartitionValue(spec, item))); ok {
			ferr = fn(n, item)
		}
	}
	emitMap := func(item layouts.Item) {
		if n, ok := step(opts.Shard.Of <= 1 || opts.Shard.OwnsValue(item[spec.PK.Name])); ok {
			ferr = keepFn(n, item)
		}
	}
	rejects := newRejectSink(opts.Rejects, &st)
	unit := unitOf(in.Opts)
	delim := opts.Layout.Delimiter()
	cur, more := res.Next()
	for r = 0; ; r++ {
		if r&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return st, err
			}
		}
		rec, err := next(ctx)
		if err == io.EOF {
			break
		}
		if err == nil {
			// The first read's limits (ReadInput): a record over one
			// was rejected there, with no resolved row.
			err = flatOverLimit(rec, row.Flat, unit)
		}
		if err != nil {
			if err := rejects.readError(err, rec); err != nil {
				return st, err
			}
			continue
		}
		if cur, more, err = resolvedRow(res, cur, more, r, rec); err != nil {
			return st, err
		}
		d := extsort.Dec{B: cur[8:], Share: !keep}
		flag := d.Flag()
		if flag == 1 {
			if err := rejects.add(emitbase.RejectLine(rec.File, rec.Line, unit, rec.ID, errors.New(d.S()), rec.Raw)); err != nil {
				return st, err
			}
			continue
		}
		st.Nodes++
		rn.get(s, &d)
		node = layouts.FlatNode{ID: rec.ID, Parent: rec.Parent, Depth: rn.depth, Attrs: row.Flat, Inner: (inner.Has(r) || flag == 2) && layouts.ImplicitInner(opts.Layout)}
		path, err := s.pathOf(rec, &rn, unit)
		if err != nil {
			return st, err
		}
		// Every node is told, whichever shard owns its items.
		if opts.Node != nil {
			if err := opts.Node(rec.ID, rec.Parent, node.Depth); err != nil {
				return st, err
			}
		}
		if k, ok := otherShardItems(opts, rn.depth, &node); ok {
			nums.Seq += int64(k) // numbered, not built
			continue
		}
		if runs {
			s.run.parent, s.run.ancestors = rec.Parent, int64(rn.pathBytes-len(rec.ID)+rn.esc)
			if err := layouts.AppendItemRuns(opts.Layout, &node, &items, emitRun); err != nil {
				return st, &transform.RowError{File: rec.File, Line: rec.Line, Unit: unit, ID: strings.Clone(rec.ID), Err: err}
			}
			if ferr != nil {
				return st, ferr
			}
			continue
		}
		text = setPath(&node, path, delim, text)
		if node.Link, err = links.Path(r, rec.ID); err != nil {
			return st, &transform.RowError{File: rec.File, Line: rec.Line, Unit: unit, ID: strings.Clone(rec.ID), Err: err}
		}
		var lerr error
		if keepFn != nil {
			// Emit's items are the caller's to keep: the layout builds
			// them as maps of their own, from the record as Next read it.
			full := transform.Node{Record: *rec, Depth: node.Depth, Path: path, Link: node.Link, Inner: node.Inner}
			full.Record.Raw = nil
			lerr = opts.Layout.Items(&full, emitMap)
		} else {
			lerr = opts.Layout.AppendItems(&node, &items, emit)
		}
		if lerr != nil {
			return st, &transform.RowError{File: rec.File, Line: rec.Line, Unit: unit, ID: strings.Clone(rec.ID), Err: lerr}
		}
		if ferr != nil {
			return st, ferr
		}
	}
	return st, res.Err()
}

// otherShardItems reports whether each of node's items (k of them, at
// depth) is keyed by its id, which another shard than opts's owns.
func otherShardItems(opts emitbase.Options, depth int, node *layouts.FlatNode) (k int, ok bool) {
	if opts.Shard.Of <= 1 || node.Inner {
		return 0, false
	}
	k, ok = layouts.NodeItems(opts.Layout, depth)
	return k, ok && !opts.Shard.Owns(node.ID)
}

// resolvedRow moves res, at cur (more: not at its end), to the resolved
// row of the input's row r, which the input read again gave as rec: a row
// the passes did not resolve means the input changed since.
func resolvedRow(res *extsort.Iter, cur []byte, more bool, r int64, rec *transform.Record) ([]byte, bool, error) {
	for more && extsort.RowOf(cur) < r {
		cur, more = res.Next()
	}
	if !more || extsort.RowOf(cur) != r {
		if err := res.Err(); err != nil {
			return cur, more, err
		}
		return cur, more, fmt.Errorf("importer: %s:%d: the row was not there when the input was first read (did the input change?)", rec.File, rec.Line)
	}
	return cur, more, nil
}

// oocEmitSources opens what oocEmitAttrs joins: the input, read again
// (with each record's raw text when rejects are written), the rows the
// passes resolved, sorted by row, and the rows of the nodes with children
// that could not be read. Each is the caller's to close.
func (in *input) oocEmitSources(opts emitbase.Options) (records.Source, *extsort.Iter, *extsort.RowCursor, error) {
	src, err := records.OpenSource(in.Opts.Path, emitbase.WithRaw(in.Opts.Source, opts.Rejects != nil))
	if err != nil {
		return nil, nil, nil, err
	}
	res, err := in.ooc.resolved.Sort()
	if err != nil {
		src.Close()
		return nil, nil, nil, err
	}
	inner, err := in.ooc.badInner.Cursor()
	if err != nil {
		res.Close()
		src.Close()
		return nil, nil, nil, err
	}
	return src, res, inner, nil
}

// rejectSink counts the rejected records of an emit, and writes each as a
// line of the rejects file when there is one.
type rejectSink struct {
	enc *json.Encoder // nil: no rejects file
	st  *emitbase.Stats
}

func newRejectSink(w io.Writer, st *emitbase.Stats) rejectSink {
	if w == nil {
		return rejectSink{st: st}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return rejectSink{enc: enc, st: st}
}

// add counts one more rejected record, and writes it.
func (s rejectSink) add(line emitbase.RejectRecord) error {
	s.st.Rejected++
	if s.enc == nil {
		return nil
	}
	return s.enc.Encode(line)
}

// readError files a record the read rejected (err a *transform.RowError;
// rec, when not nil, its record) as add does; another error is returned.
func (s rejectSink) readError(err error, rec *transform.Record) error {
	var re *transform.RowError
	if !errors.As(err, &re) {
		return err
	}
	var raw []byte
	if rec != nil {
		raw = rec.Raw
	}
	return s.add(emitbase.RejectLine(re.File, re.Line, re.Unit, re.ID, re, raw))
}

// pathOf is the path rn gives rec's items: none for a layout that takes
// no path (layouts.NeedsPath) or a dry run's runs (see keepPath), which
// then check that rec's parent is still the one the first read saw (the
// path would have told it to the layout).
func (s *State) pathOf(rec *transform.Record, rn *resolvedNode, unit string) ([]string, error) {
	if s.keepPath {
		return rn.path, nil
	}
	if rec.Parent != rn.parent {
		return nil, &transform.RowError{File: rec.File, Line: rec.Line, Unit: unit, ID: strings.Clone(rec.ID),
			Err: fmt.Errorf("parent %q is not %q, the one it had when the input was first read (did the input change?)", rec.Parent, rn.parent)}
	}
	return nil, nil
}

// setPath gives node its path, and the path's text joined by delim (a
// layout with a delimiter) built in text, which it returns for reuse: the
// node's PathText is text's memory.
func setPath(node *layouts.FlatNode, path []string, delim string, text []byte) []byte {
	node.Path = path
	if path == nil || delim == "" {
		return text
	}
	text = text[:0]
	for k, id := range path {
		if k > 0 {
			text = append(text, delim...)
		}
		text = append(text, id...)
	}
	node.PathText, node.PathDelim = unsafe.String(unsafe.SliceData(text), len(text)), delim
	return text
}

// flatOverLimit is the problem of a record whose attributes pass a limit
// ReadInput holds records to (infile.FieldOverLimit, RecordOverLimit); nil
// for one within them.
func flatOverLimit(rec *transform.Record, attrs []layouts.Attr, unit string) error {
	size := 0
	for _, a := range attrs {
		n := transform.ValueSize(a.Value)
		if n > infile.MaxFieldBytes {
			return infile.FieldOverLimit(rec.File, rec.Line, unit, rec.ID, a.Name, n)
		}
		size += len(a.Name) + n
	}
	if size > infile.MaxRecordBytes {
		return infile.RecordOverLimit(rec.File, rec.Line, unit, rec.ID, size)
	}
	return nil
}

// oocEmit is Emit for an input read out of core.
func (in *input) oocEmit(ctx context.Context, opts emitbase.Options, fn func(seq int64, item layouts.Item) error) (emitbase.Stats, error) {
	return in.oocEmitAttrs(ctx, opts, fn, nil)
}
