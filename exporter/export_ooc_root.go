package exporter

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/internal/extsort"
)

// orderSubtreeOOC is orderOOC for a subtree whose query went over the
// budget (Export with Root): the whole table was read into the sink, and
// the tour of its forest, ranked as for the whole table, enters the
// subtree's records between entering its root and leaving it, in the
// order SortRecords gives the subtree alone (its root, an orphan there,
// starts the one tree; its children by id, and so on down). Only those
// records go to the final sort. The check is the subtree's, as the export
// in memory finds it: its root an orphan (unless it is a root of the
// table); none in a cycle, which the tour never enters; no id twice, as
// a table whose ids repeat is refused (a child's parent would be the
// first record of its id, wherever it is). A root in a cycle has its
// parent below it: an error, as the adjacency layout's query finds it.
//
// The subtree is found by the records' parents, as SortRecords orders
// them, where the query follows the layout's own keys (a path, an
// ancestor row): the same nodes in a table the layout wrote.
func orderSubtreeOOC(ctx context.Context, opts ExportOptions, sink *oocSink) (*extsort.Sorter, ForestCheck, error) {
	var check ForestCheck
	root := sink.root
	switch {
	case sink.rootRows == 0:
		// Gone since the query found it.
		return nil, check, &NotFoundError{Node: fmt.Sprintf("node %q", root), Table: opts.Table, Layout: opts.Layout.Name()}
	case sink.rootRows > 1:
		return nil, check, fmt.Errorf("%w: table %s has %d nodes with the id %q, the subtree's root: out of core the subtree is found by its records' parents' ids, which cannot tell them apart; export the whole table, or give a --memory that holds the subtree's records", ddbwrite.ErrUsage, opts.Table, sink.rootRows, root)
	}
	o := sink.order
	if err := o.resolve(ctx); err != nil {
		return nil, check, err
	}
	if o.check.Duplicates > 0 {
		// A child's parent is the first record of its id, wherever it
		// is: the subtree could lose a repeated id's children.
		return nil, check, fmt.Errorf("%w: table %s has %d nodes whose id another has too (%s): out of core the subtree of %q is found by its records' parents' ids, which cannot tell them apart; export the whole table, or give a --memory that holds the subtree's records", ddbwrite.ErrUsage, opts.Table, o.check.Duplicates, strings.Join(o.check.DuplicateIDs, ", "), root)
	}
	r, err := o.link(ctx)
	if err != nil {
		return nil, check, err
	}
	if r, err = o.rank(ctx, r); err != nil {
		return nil, check, err
	}
	defer r.close()
	// The places spool holds each record's distance in row order (noNext
	// for one on no tour), read again beside the payload once the root's
	// two distances are known.
	places, err := extsort.NewSpool(o.dir)
	if err != nil {
		return nil, check, err
	}
	defer places.Close()
	// The root starts a tree of the order (oocSink.add): it is on the
	// tour, and the nodes below it are, whatever is above it.
	var enter, leave uint64
	o.leaving = func(row int64, dist uint64, _ bool) {
		if row == sink.rootRow {
			leave = dist
		}
	}
	var buf []byte
	err = o.ranks(ctx, r, func(row int64, dist uint64, inCycle bool) error {
		if row%checkEvery == 0 {
			o.phase("placing the records", row, o.n)
		}
		if inCycle {
			dist = noNext
		}
		if row == sink.rootRow {
			enter = dist
		}
		buf = binary.BigEndian.AppendUint64(buf[:0], dist)
		return places.Add(buf)
	})
	o.leaving = nil
	if err != nil {
		return nil, check, err
	}
	if enter == noNext {
		return nil, check, fmt.Errorf("exporter: the out-of-core tour never reached the subtree's root %q (row %d)", root, sink.rootRow)
	}
	final, below, err := keepSubtree(ctx, o, sink, places, enter, leave)
	if err != nil {
		return nil, check, err
	}
	if below {
		final.Close()
		return nil, check, rootCycleError(opts, root)
	}
	if sink.rootParent != "" {
		check.Orphans, check.OrphanIDs = 1, []string{root}
	}
	return final, check, nil
}

// keepSubtree reads the places beside the spooled records, row by row,
// and sorts those the tour enters after the root's entering element
// (distance enter) and before its leaving one (leave) by their place; the
// columns of csv and parquet are inferred from them alone. below says
// the root's parent is among them: the root is below itself.
func keepSubtree(ctx context.Context, o *oocOrder, sink *oocSink, places *extsort.Spool, enter, leave uint64) (_ *extsort.Sorter, below bool, _ error) {
	if err := places.Rewind(); err != nil {
		return nil, false, err
	}
	if err := sink.payload.Rewind(); err != nil {
		return nil, false, err
	}
	final := extsort.New(o.dir, o.budget*2, compareFinal)
	final.Prefix = prefixFinal
	fail := func(err error) (*extsort.Sorter, bool, error) {
		final.Close()
		return nil, false, err
	}
	var buf []byte
	for row := int64(0); row < o.n; row++ {
		if row%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return fail(err)
			}
			o.phase("keeping the subtree", row, o.n)
		}
		pl, ok := places.Next()
		p, pok := sink.payload.Next()
		if !ok || !pok {
			return fail(fmt.Errorf("exporter: the out-of-core spools end at row %d of %d: %v", row, o.n, errorsJoin(places.Err(), sink.payload.Err())))
		}
		dist := binary.BigEndian.Uint64(pl)
		if dist == noNext || dist > enter || dist <= leave {
			continue
		}
		buf = binary.BigEndian.AppendUint64(append(buf[:0], 0), ^dist)
		if err := final.Add(append(buf, p...)); err != nil {
			return fail(err)
		}
		if sink.infer != nil {
			d := extsort.Dec{B: p}
			id := d.S()
			rec, err := oocRecord(id, d.B)
			if err != nil {
				return fail(err)
			}
			sink.infer.Observe(rec)
		}
		id := extsort.FirstKey(p)
		below = below || (sink.rootParent != "" && string(id) == sink.rootParent)
	}
	return final, below, nil
}

// rootCycleError says that a subtree's root is below itself: its parent
// is in its subtree, as the adjacency layout's query says it (which
// reads the subtree by parents too). The other layouts' queries follow
// their own keys (paths, ancestor rows), and the export in memory may
// then read a subtree where this one refuses.
func rootCycleError(opts ExportOptions, root string) error {
	parents := "parents"
	for _, ix := range opts.Layout.Table().Indexes {
		if ix.Name == "ByParent" {
			parents = ix.PK.Name
		}
	}
	return fmt.Errorf("%w: table %s: node %q is below itself: the %s of the table's items make a cycle", ErrInconsistent, opts.Table, root, parents)
}
