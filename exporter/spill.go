package exporter

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/models"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

// SpillStats say what SpillNodes did.
type SpillStats struct {
	Nodes int64
	Read  Stats
	// Digest identifies the records written whatever their order: the
	// same table gives the same digest however its Scan's pages came.
	Digest string
}

// SpillNodes reads the nodes of table as Scan does and writes them to
// the file out (created) in wopts' format, in a fixed memory whatever the
// table's size: each page's records are encoded as it is rebuilt and
// handed to an external sort (budget bytes in memory, its runs in out's
// directory), which orders them by their bytes. The order is the same
// for the same table however the Scan's pages came, so that a run that
// resumes numbers the items as the one it goes on from. The out-of-core
// migrate feeds the file to the out-of-core import.
//
// A layout whose inner nodes are implied by path ids (layouts.ReadsImplicit)
// gets them as a Scan does (layouts.Implied): each id and every prefix
// of each parent go to two more sorts, and a merge join writes each
// prefix that is no id once, as a record without attributes (see
// ImpliedNodes).
func SpillNodes(ctx context.Context, client ScanAPI, table string, l layouts.Layout, opts ScanOptions, out string, wopts records.WriterOptions, budget int) (SpillStats, error) {
	var st SpillStats
	var implied *ImpliedNodes
	if layouts.ReadsImplicit(l) {
		implied = NewImpliedNodes(filepath.Dir(out), max(budget/4, 1<<20), l.Delimiter())
		defer implied.Close()
		budget = max(budget/2, 1<<20)
	}
	f, err := os.Create(out)
	if err != nil {
		return st, err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	rw, err := records.NewWriter(bw, wopts)
	if err != nil {
		return st, err
	}
	ew, ok := rw.(records.EncodedWriter)
	if !ok {
		return st, fmt.Errorf("exporter: the %s writer takes no encoded records", wopts.Format)
	}
	newEncoder := records.EncoderFor(wopts)
	sorter := extsort.New(filepath.Dir(out), budget, bytes.Compare)
	defer sorter.Close()
	r := newReader(readerOptions{MaxRCU: opts.MaxRCU, MaxRetries: opts.MaxRetries})
	filter := l.NodeFilter()
	if opts.Partition == nil {
		opts.Partition = models.Partition(l)
	}
	var mu sync.Mutex
	var sum [4]uint64 // the records' hashes, added: the order does not count
	var unparsable int64
	var unparsableKey string
	err = scanTable(ctx, client, r, table, opts, filter, func(items []layouts.Item) error {
		enc := newEncoder()
		var buf []byte
		var ends []int
		var local [4]uint64
		var recs [][2]string // with implied: each node's id and parent
		bad, badKey, err := pageNodes(table, l, items, func(rec *transform.Record) error {
			start := len(buf)
			var err error
			if buf, err = enc.Encode(buf, rec); err != nil {
				return err
			}
			ends = append(ends, len(buf))
			if implied != nil {
				recs = append(recs, [2]string{rec.ID, rec.Parent})
			}
			h := sha256.Sum256(buf[start:])
			for k := range local {
				local[k] += binary.LittleEndian.Uint64(h[8*k:])
			}
			return nil
		})
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if opts.OnItems != nil {
			if err := opts.OnItems(items); err != nil {
				return err
			}
		}
		start := 0
		for _, end := range ends {
			if err := sorter.Add(buf[start:end]); err != nil {
				return err
			}
			start = end
		}
		if err := implied.add(recs); err != nil {
			return err
		}
		st.Nodes += int64(len(ends))
		for k := range sum {
			sum[k] += local[k]
		}
		unparsable += bad
		if unparsableKey == "" {
			unparsableKey = badKey
		}
		return nil
	})
	st.Read = r.snapshot()
	st.Read.Unparsable, st.Read.UnparsableKey = unparsable, unparsableKey
	if err != nil {
		return st, err
	}
	if st.Nodes == 0 && st.Read.Items > 0 {
		return st, noNodes(table, st.Read.Items, l, filter)
	}
	n, err := implied.spill(newEncoder(), sorter)
	if err != nil {
		return st, err
	}
	st.Nodes += n
	it, err := sorter.Sort()
	if err != nil {
		return st, err
	}
	defer it.Close()
	for {
		rec, ok := it.Next()
		if !ok {
			break
		}
		if err := ew.WriteEncoded(rec); err != nil {
			return st, err
		}
	}
	if err := it.Err(); err != nil {
		return st, err
	}
	if err := rw.Close(); err != nil {
		return st, err
	}
	if err := bw.Flush(); err != nil {
		return st, err
	}
	if err := f.Close(); err != nil {
		return st, err
	}
	var d [32]byte
	for k, v := range sum {
		binary.LittleEndian.PutUint64(d[8*k:], v)
	}
	st.Digest = fmt.Sprintf("%d:%s", st.Nodes, hex.EncodeToString(d[:]))
	return st, nil
}
