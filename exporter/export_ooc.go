package exporter

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/internal/spill"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/models"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/records/ddbitems"
	"github.com/treeport/treeport/records/infile"
	"github.com/treeport/treeport/transform"
)

// ExportOutOfCore is the export's memory budget (ExportOptions.OutOfCore):
// a table or DynamoDB export whose records do not fit in it is exported
// out of core, in sorted passes over files in TmpDir, to the same bytes as
// in memory (see exportOOC); a subtree whose query reads more than it, by
// the whole table's passes, keeping the subtree (orderSubtreeOOC).
type ExportOutOfCore struct {
	// Memory is the budget in bytes.
	Memory int64
	// TmpDir is where the passes' files go ("": os.TempDir()).
	TmpDir string
	// Force exports out of core whatever the size (tests).
	Force bool
	// OnPhase, when set, is told how far each pass is: its name, and done
	// of total (-1 when not known).
	OnPhase func(phase string, done, total int64)
	// Warn, when set, is told of what the sweep of TmpDir removed or left
	// (spill.Sweep).
	Warn func(string)
	// OnStart, when set, is called once the export is found to run out
	// of core, before the first pass.
	OnStart func()
}

// ExportRecordBytes is what a record costs the export in memory beside
// twice its item's size (its bytes held encoded, its id and parent, its
// place in the sort), with a margin: a table whose ItemCount times it
// (plus twice its TableSizeBytes) is over the budget is exported out of
// core.
const ExportRecordBytes = 300

func (o *ExportOutOfCore) phase(name string, done, total int64) {
	if o.OnPhase != nil {
		o.OnPhase(name, done, total)
	}
}

// tableOutOfCore says whether a table's export runs out of core, and the
// room its passes need in TmpDir: about four times the table's size and
// 200 bytes a record (the tour's rounds). A nil o never does; a table
// whose DescribeTable fails always does, with a warning.
func (o *ExportOutOfCore) tableOutOfCore(ctx context.Context, client any, table string) (bool, int64) {
	if o == nil {
		return false, 0
	}
	var items, size int64
	if dc, ok := client.(describeAPI); ok {
		out, err := dc.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			if _, code := ddb.Classify(err); code == "ResourceNotFoundException" {
				// No table: the Scan says so, as in memory.
				return false, 0
			}
			// A table of unknown size is not one that fits: the passes
			// out of core keep any table in the budget (the room in
			// TmpDir is then not checked before the first pass).
			if o.Warn != nil && ctx.Err() == nil {
				o.Warn(fmt.Sprintf("the size of table %s is not known (DescribeTable: %s): exporting it out of core, in --memory %s", table, ddb.CauseText(err), units.SizeText(o.Memory)))
			}
			return true, 0
		}
		items, size = aws.ToInt64(out.Table.ItemCount), aws.ToInt64(out.Table.TableSizeBytes)
	}
	return o.Force || items*ExportRecordBytes+2*size > o.Memory, 4*size + 200*items
}

// inOutOfCore is tableOutOfCore for a DynamoDB export (--in), sized by
// its files.
func (o *ExportOutOfCore) inOutOfCore(path string) (bool, int64) {
	if o == nil {
		return false, 0
	}
	size := exportInBytes(path)
	return o.Force || 2*size > o.Memory, 4 * size
}

// exportInBytes is the size of a DynamoDB export's files on disk, times
// four for the compressed ones.
func exportInBytes(path string) int64 {
	var n int64
	filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			size := info.Size()
			if strings.HasSuffix(p, ".gz") || strings.HasSuffix(p, ".zst") {
				size *= 4
			}
			n += size
		}
		return nil
	})
	return n
}

// oocSink takes the records as they are read: each gets the next row,
// its bytes (payload) go to a spool in row order, its id and parent to the
// order's sorts, and for csv and parquet what it says of the columns to
// the inference. It is safe for concurrent use.
type oocSink struct {
	mu      sync.Mutex
	order   *oocOrder
	payload *extsort.Spool
	implied *ImpliedNodes
	infer   *records.Inference
	// newEncoder encodes a record for json, jsonl and ddbjson; nil for
	// csv and parquet, whose records are kept as DynamoDB JSON (oocRecord).
	newEncoder func() records.Encoder
	rows       int64
	// root, for a subtree read with the whole table, is its root's id;
	// rootRows counts its records, rootRow and rootParent are the first
	// one's row and parent.
	root       string
	rootRows   int
	rootRow    int64
	rootParent string
}

// payloadOf appends a record's payload to dst: S(id), then its bytes in
// the output format, or S(parent) and its attributes in DynamoDB JSON.
func payloadOf(dst []byte, enc records.Encoder, rec *transform.Record) ([]byte, error) {
	e := extsort.Enc{B: dst}
	e.S(rec.ID)
	if enc != nil {
		return enc.Encode(e.B, rec)
	}
	e.S(rec.Parent)
	return ddbjson.AppendItem(e.B, rec.Attrs), nil
}

// oocRecord reads back a csv or parquet record's payload (after its id).
func oocRecord(id string, b []byte) (*transform.Record, error) {
	d := extsort.Dec{B: b}
	parent := d.S()
	attrs, err := ddbjson.DecodeItem(d.B)
	if err != nil {
		return nil, fmt.Errorf("exporter: reading back the spilled record %q: %w", id, err)
	}
	return &transform.Record{ID: id, Parent: parent, Attrs: attrs}, nil
}

// add takes records a worker rebuilt: encoded outside the lock, numbered
// and spooled under it.
func (s *oocSink) add(recs []transform.Record) error {
	var enc records.Encoder
	if s.newEncoder != nil {
		enc = s.newEncoder()
	}
	var buf []byte
	ends := make([]int, 0, len(recs))
	for i := range recs {
		var err error
		if buf, err = payloadOf(buf, enc, &recs[i]); err != nil {
			return err
		}
		ends = append(ends, len(buf))
	}
	if s.infer != nil && s.root == "" { // a subtree's are seen as it is kept
		ptrs := make([]*transform.Record, len(recs))
		for i := range recs {
			ptrs[i] = &recs[i]
		}
		s.infer.Observe(ptrs...)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	start := 0
	for i, end := range ends {
		if err := s.payload.Add(buf[start:end]); err != nil {
			return err
		}
		start = end
		parent := recs[i].Parent
		if s.root != "" && recs[i].ID == s.root {
			// A subtree's root starts a tree of the order's, so that
			// the tour reaches it, and all below it, whatever is above.
			if s.rootRows++; s.rootRows == 1 {
				s.rootRow, s.rootParent, parent = s.rows, parent, ""
			}
		}
		if err := s.order.add(s.rows, recs[i].ID, parent); err != nil {
			return err
		}
		s.rows++
		if s.implied != nil {
			if err := s.implied.Add(recs[i].ID, recs[i].Parent); err != nil {
				return err
			}
		}
	}
	return nil
}

// addImplied adds the inner nodes a layout with path ids implies, as a
// Scan in memory does (heldNodes.addImplied): records without attributes.
func (s *oocSink) addImplied() error {
	if s.implied == nil {
		return nil
	}
	im := s.implied
	s.implied = nil
	var batch []transform.Record
	_, err := im.Each(func(id, parent string) error {
		batch = append(batch, transform.Record{ID: id, Parent: parent, Attrs: transform.Attrs{}})
		if len(batch) < scanChunk {
			return nil
		}
		err := s.add(batch)
		batch = batch[:0]
		return err
	})
	if err == nil && len(batch) > 0 {
		err = s.add(batch)
	}
	return err
}

// scanOOC reads a table's nodes into the sink, as scanNodes does into
// memory.
func scanOOC(ctx context.Context, opts ExportOptions, sink *oocSink) (Stats, error) {
	l, table := opts.Layout, opts.Table
	scan := opts.Scan
	if scan.Memory == 0 && opts.OutOfCore != nil {
		scan.Memory = PagesMemory(opts.OutOfCore.Memory)
	}
	r := newReader(readerOptions{MaxRCU: scan.MaxRCU, MaxRetries: scan.MaxRetries})
	filter := l.NodeFilter()
	if scan.Partition == nil {
		scan.Partition = models.Partition(l)
	}
	var mu sync.Mutex
	var unparsable int64
	var unparsableKey string
	err := scanTable(ctx, opts.Client, r, table, scan, filter, func(items []layouts.Item) error {
		recs := make([]transform.Record, 0, len(items))
		bad, badKey, err := pageNodes(table, l, items, func(rec *transform.Record) error {
			recs = append(recs, *rec)
			return nil
		})
		if err != nil {
			return err
		}
		mu.Lock()
		unparsable += bad
		if unparsableKey == "" {
			unparsableKey = badKey
		}
		mu.Unlock()
		return sink.add(recs)
	})
	st := r.snapshot()
	st.Unparsable, st.UnparsableKey = unparsable, unparsableKey
	if err != nil {
		return st, err
	}
	if sink.rows == 0 && st.Items > 0 {
		return st, noNodes(table, st.Items, l, filter)
	}
	return st, nil
}

// readExportOOC reads a DynamoDB export's nodes into the sink, as
// readExport does into memory.
func readExportOOC(ctx context.Context, path string, l layouts.Layout, sink *oocSink, phase func(string, int64, int64)) (int64, error) {
	src, err := ddbitems.Open(path)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	var items int64
	spec := l.Table()
	batch := make([]transform.Record, 0, scanChunk)
	for {
		item, file, line, err := src.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return items, err
		}
		if items++; items%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return items, err
			}
			phase("reading the export (items)", items, -1)
		}
		if _, over := infile.CheckLimits(item, file, line, "", ""); over != nil {
			return items, over
		}
		rec, ok, err := l.Node(item)
		if err != nil {
			return items, itemError(fmt.Sprintf("%s:%d", file, line), spec, item, l, err)
		}
		if !ok {
			continue
		}
		rec.File, rec.Line = file, line
		if batch = append(batch, rec); len(batch) == scanChunk {
			if err := sink.add(batch); err != nil {
				return items, err
			}
			batch = batch[:0]
		}
	}
	return items, sink.add(batch)
}

// oocDir makes the passes' directory and checks its room (a usage error,
// exit 2, when it is short or cannot be written).
func (o *ExportOutOfCore) oocDir(need int64, of string) (*spill.Dir, error) {
	spill.Sweep(o.TmpDir, o.Warn)
	dir, err := spill.New(o.TmpDir, "export", "the export out of core")
	if err == nil {
		err = dir.Room(need, "the export out of core", of)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ddbwrite.ErrUsage, err)
	}
	return dir, nil
}
