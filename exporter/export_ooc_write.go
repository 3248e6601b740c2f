package exporter

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
)

// exportOOC is Export out of core, in a memory about opts.OutOfCore.Memory
// whatever the number of records: the records are read (from the table,
// the DynamoDB export, or recs, a subtree the queries read) into a spool
// of their bytes in the output format, a row each, and their ids and
// parents into sorts; oocOrder's passes give each row its place in
// SortRecords' order; an external sort by that place puts the spooled
// bytes in order, and the same records.Writer as in memory writes them.
// CSV and Parquet, which infer their columns from every record, see each
// record once as it is read (records.Inference) and are written with what
// they would have inferred. The output is the in-memory export's, byte
// for byte.
func exportOOC(ctx context.Context, opts ExportOptions, wopts records.WriterOptions, st ExportStats, need int64, of string) (ExportStats, error) {
	started := time.Now()
	o := opts.OutOfCore
	dir, err := o.oocDir(need, of)
	if err != nil {
		return st, err
	}
	defer dir.Close()
	if o.OnStart != nil {
		o.OnStart()
	}
	// An eighth of the budget a sort: the order's three and the implied
	// nodes' two fill at once while the table is read, beside the Scan's
	// pages, the spool's buffer and the collector's headroom.
	budget := int(max(o.Memory/8, 64<<10))
	sink := &oocSink{order: newOOCOrder(dir.Path, budget, o.phase), infer: records.NewInference(wopts.Format), newEncoder: records.EncoderFor(wopts)}
	defer sink.order.close()
	if sink.payload, err = extsort.NewSpool(dir.Path); err != nil {
		return st, err
	}
	defer sink.payload.Close()
	if opts.In == "" && layouts.ReadsImplicit(opts.Layout) {
		sink.implied = NewImpliedNodes(dir.Path, budget, opts.Layout.Delimiter())
		defer sink.implied.Close()
	}
	if opts.In != "" {
		st.Read.Items, err = readExportOOC(ctx, opts.In, opts.Layout, sink, o.phase)
	} else {
		sink.root = rootID(opts)
		scan := opts.Scan
		onPage := scan.OnPage
		scan.OnPage = func(s Stats) {
			if onPage != nil {
				onPage(s)
			}
			o.phase("reading the table (items)", s.Items, -1)
		}
		opts.Scan = scan
		var read Stats
		read, err = scanOOC(ctx, opts, sink)
		st.Read.Add(read) // after a subtree's query, what it read too
	}
	if err != nil {
		return st, err
	}
	if err := sink.addImplied(); err != nil {
		return st, err
	}
	var final *extsort.Sorter
	if sink.root != "" {
		final, st.Forest, err = orderSubtreeOOC(ctx, opts, sink)
	} else {
		final, err = orderOOC(ctx, sink)
		st.Forest = sink.order.check
	}
	if err != nil {
		return st, err
	}
	defer final.Close()
	if st.Nodes, err = writeOOC(ctx, opts, wopts, sink, final, &st); err != nil {
		return st, err
	}
	st.OutOfCore = true
	st.Took = time.Since(started)
	return st, nil
}

// orderOOC runs oocOrder's passes over the sink's records and sorts their
// spooled bytes by the place they give: a record of the final sort is
// [class][place], then the spooled bytes; class 0 is a tree's record
// (place: the complement of its tour distance), class 1 one in or below
// a cycle (place: its row; sorted by id, then row).
func orderOOC(ctx context.Context, sink *oocSink) (*extsort.Sorter, error) {
	o := sink.order
	r, err := o.tourRanked(ctx)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if err := sink.payload.Rewind(); err != nil {
		return nil, err
	}
	final := extsort.New(o.dir, o.budget*2, compareFinal)
	final.Prefix = prefixFinal
	var buf []byte
	err = o.ranks(ctx, r, func(row int64, dist uint64, inCycle bool) error {
		if row%checkEvery == 0 {
			o.phase("sorting the records", row, o.n)
		}
		p, ok := sink.payload.Next()
		if !ok {
			return fmt.Errorf("exporter: the out-of-core spool ends at row %d of %d: %v", row, o.n, sink.payload.Err())
		}
		buf = buf[:0]
		if inCycle {
			buf = binary.BigEndian.AppendUint64(append(buf, 1), uint64(row))
			id := string(extsort.FirstKey(p))
			o.check.InCycles++
			o.check.CycleIDs = smallest(o.check.CycleIDs, id)
		} else {
			buf = binary.BigEndian.AppendUint64(append(buf, 0), ^dist)
		}
		return final.Add(append(buf, p...))
	})
	if err != nil {
		final.Close()
		return nil, err
	}
	if c := o.byIDCycles; c != nil {
		// Ids repeat: the records in cycles are counted by id, as the
		// export in memory counts them (checkForestByID).
		o.check.InCycles, o.check.CycleIDs = c.InCycles, c.CycleIDs
	}
	return final, nil
}

// tourRanked runs the order's passes: parents, siblings and the tour
// ranked by doubling (see oocOrder).
func (o *oocOrder) tourRanked(ctx context.Context) (*round, error) {
	if err := o.resolve(ctx); err != nil {
		return nil, err
	}
	r, err := o.link(ctx)
	if err != nil {
		return nil, err
	}
	return o.rank(ctx, r)
}

// compareFinal orders the final sort's records (see orderOOC).
func compareFinal(a, b []byte) int {
	if a[0] != b[0] {
		return cmp.Compare(a[0], b[0])
	}
	if a[0] == 1 {
		if c := bytes.Compare(extsort.FirstKey(a[9:]), extsort.FirstKey(b[9:])); c != 0 {
			return c
		}
	}
	return cmp.Compare(binary.BigEndian.Uint64(a[1:]), binary.BigEndian.Uint64(b[1:]))
}

// prefixFinal is compareFinal's Sorter.Prefix: the class in the top bit,
// then the place (trees) or the id's first bytes (cycles).
func prefixFinal(rec []byte) uint64 {
	if rec[0] == 0 {
		return binary.BigEndian.Uint64(rec[1:]) >> 1
	}
	return 1<<63 | extsort.PrefixKeyRow(rec[9:])>>1
}

// writeOOC writes the final sort's records to opts.Out with the writer
// Export uses, and the CSV's types sidecar; it returns how many.
func writeOOC(ctx context.Context, opts ExportOptions, wopts records.WriterOptions, sink *oocSink, final *extsort.Sorter, st *ExportStats) (int64, error) {
	it, err := final.Sort()
	if err != nil {
		return 0, err
	}
	defer it.Close()
	newWriter := records.NewWriter
	if sink.infer != nil {
		newWriter = sink.infer.NewWriter
	}
	var n int64
	var written records.Writer
	err = writeExportFileWith(opts.Out, opts.Stdout, wopts, newWriter, func(rw records.Writer) error {
		written = rw
		ew, encoded := rw.(records.EncodedWriter)
		if sink.newEncoder != nil && !encoded {
			return fmt.Errorf("exporter: the %s writer takes no encoded records", wopts.Format)
		}
		for {
			rec, ok := it.Next()
			if !ok {
				return it.Err()
			}
			if n++; n%checkEvery == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
				opts.OutOfCore.phase("writing", n, final.Records)
			}
			d := extsort.Dec{B: rec[9:]}
			id := d.S()
			if sink.newEncoder != nil {
				if err := ew.WriteEncoded(d.B); err != nil {
					return err
				}
				continue
			}
			r, err := oocRecord(id, d.B)
			if err != nil {
				return err
			}
			if err := rw.Write(r); err != nil {
				return err
			}
		}
	})
	if err != nil {
		return n, err
	}
	return n, writeTypesFile(st, opts.Out, written)
}
