package refresh

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strconv"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/statefile"
	"github.com/treeport/treeport/layouts"
)

// PlanFileVersion is the version of the plan file format.
const PlanFileVersion = 1

// PlanHeader is what a plan file says before its operations.
type PlanHeader struct {
	Version  int    `json:"version"`
	Table    string `json:"table"`
	Layout   string `json:"layout"`
	Snapshot string `json:"snapshot"`
	Shard    string `json:"shard,omitempty"`
	// Run identifies the run the plan belongs to (the checkpoint's
	// fingerprint; "" for a plan of its own): it is not written, but goes
	// into the digest (see VerifyPlanFile).
	Run string `json:"-"`
}

// A plan file is one JSON object, written as it goes: the header's fields,
// then "operations", an array with one operation a line, then "summary":
//
//	{"version":1,"table":"T","layout":"path","snapshot":"s.csv",
//	"operations":[
//	{"op":"put","reason":"moved","id":"D","wcu":3,"item":{"Id":{"S":"D"},…}},
//	{"op":"delete","reason":"removed","id":"X","wcu":3,"key":{"Id":{"S":"X"}}}
//	],
//	"summary":{…},
//	"digest":"<64 hex digits>"}
//
// Items and keys are DynamoDB JSON, so `jq` and the AWS CLI read them. The
// digest is statefile.Digest of every byte before `,\n"digest"` and of the
// header's Run: a plan edited by hand, or kept beside another run's
// checkpoint, does not match it (VerifyPlanFile).

// PlanWriter writes a plan file.
type PlanWriter struct {
	w   *bufio.Writer
	out io.Writer
	h   hash.Hash // every byte before the digest
	run string
	buf []byte
	n   int64
	err error
}

// NewPlanWriter starts a plan file with its header.
func NewPlanWriter(w io.Writer, h PlanHeader) (*PlanWriter, error) {
	h.Version = PlanFileVersion
	b, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	pw := &PlanWriter{out: w, h: sha256.New(), run: h.Run}
	pw.w = bufio.NewWriterSize(io.MultiWriter(w, pw.h), 256<<10)
	pw.w.Write(b[:len(b)-1]) // the header's fields, the object left open
	_, err = pw.w.WriteString(",\n\"operations\":[\n")
	return pw, err
}

// Write adds one operation.
func (pw *PlanWriter) Write(op Op) error {
	if pw.err != nil {
		return pw.err
	}
	b := pw.buf[:0]
	if pw.n > 0 {
		b = append(b, ",\n"...)
	}
	b = AppendOp(b, op)
	pw.buf = b
	pw.n++
	_, pw.err = pw.w.Write(b)
	return pw.err
}

// AppendOp appends one operation as its JSON object.
func AppendOp(b []byte, op Op) []byte {
	b = append(b, `{"op":"`...)
	b = append(b, op.Kind...)
	b = append(b, `","reason":"`...)
	b = append(b, op.Reason...)
	b = append(b, `","id":`...)
	b = ddbjson.AppendString(b, op.ID)
	b = append(b, `,"wcu":`...)
	b = strconv.AppendInt(b, int64(op.WCU), 10)
	if op.Kind == Put {
		b = append(b, `,"item":`...)
	} else {
		b = append(b, `,"key":`...)
	}
	b = ddbjson.AppendItem(b, op.Item)
	if len(op.After) > 0 {
		b = append(b, `,"after":[`...)
		for i, it := range op.After {
			if i > 0 {
				b = append(b, ',')
			}
			b = ddbjson.AppendItem(b, it)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// Close ends the file with the summary and flushes it.
func (pw *PlanWriter) Close(s *Summary) error {
	if pw.err != nil {
		return pw.err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if pw.n > 0 {
		pw.w.WriteString("\n")
	}
	pw.w.WriteString("],\n\"summary\":")
	pw.w.Write(b)
	if err := pw.w.Flush(); err != nil {
		return err
	}
	_, err = io.WriteString(pw.out, planDigestHead+planDigest(pw.run, pw.h)+planDigestTail)
	return err
}

// The plan's last line is its digest: planDigestHead, 64 hex digits,
// planDigestTail.
const (
	planDigestHead = ",\n\"digest\":\""
	planDigestTail = "\"}\n"
	planTrailer    = len(planDigestHead) + 64 + len(planDigestTail)
)

// planDigest is the digest of a plan whose bytes before the digest went
// into h, for the run run.
func planDigest(run string, h hash.Hash) string {
	return statefile.Digest("plan", run, h.Sum(nil))
}

// VerifyPlanFile checks that the plan file f (at its start, read whole)
// ends with the digest of its content for the run run: a plan edited by
// hand, cut short, or written for another run gives an error matching
// statefile.ErrRefused. f is left at its start.
func VerifyPlanFile(f *os.File, run string) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	refuse := func(why string) error {
		return &statefile.Error{Path: f.Name(), Why: why,
			Do: "delete the checkpoint and the files beside it (CHECKPOINT.*) to plan again"}
	}
	if size < int64(planTrailer) {
		return refuse("no digest at its end (cut short, or not a plan)")
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, size-int64(planTrailer))); err != nil {
		return err
	}
	tail := make([]byte, planTrailer)
	if _, err := f.ReadAt(tail, size-int64(planTrailer)); err != nil {
		return err
	}
	if want := planDigestHead + planDigest(run, h) + planDigestTail; string(tail) != want {
		return refuse("its digest does not match its content (edited by hand, cut short, or another run's plan)")
	}
	_, err = f.Seek(0, io.SeekStart)
	return err
}

// opJSON is an operation as a plan file holds it.
type opJSON struct {
	Op     OpKind          `json:"op"`
	Reason Reason          `json:"reason"`
	ID     string          `json:"id"`
	WCU    int             `json:"wcu"`
	Item   json.RawMessage `json:"item"`
	Key    json.RawMessage `json:"key"`
	// After: another shard's puts this delete waits for (Op.After).
	After []json.RawMessage `json:"after,omitempty"`
}

// ReadPlan reads a plan file, calling fn with each operation in order, and
// returns its header and summary. A file that ends before its summary (a
// run that was killed while writing it) is an error.
func ReadPlan(r io.Reader, fn func(Op) error) (PlanHeader, *Summary, error) {
	var h PlanHeader
	var s *Summary
	dec := json.NewDecoder(bufio.NewReaderSize(r, 256<<10))
	bad := func(err error) (PlanHeader, *Summary, error) {
		return h, nil, fmt.Errorf("plan file: %w", err)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return bad(fmt.Errorf("not a plan (want a JSON object): %v", err))
	}
	n := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return bad(err)
		}
		name, _ := tok.(string)
		switch name {
		case "version":
			err = dec.Decode(&h.Version)
			if err == nil && h.Version != PlanFileVersion {
				err = fmt.Errorf("version %d; this treeport reads version %d", h.Version, PlanFileVersion)
			}
		case "table":
			err = dec.Decode(&h.Table)
		case "layout":
			err = dec.Decode(&h.Layout)
		case "snapshot":
			err = dec.Decode(&h.Snapshot)
		case "shard":
			err = dec.Decode(&h.Shard)
		case "summary":
			s = new(Summary)
			err = dec.Decode(s)
		case "operations":
			if tok, err = dec.Token(); err == nil && tok != json.Delim('[') {
				err = errors.New("operations is not an array")
			}
			for err == nil && dec.More() {
				n++
				var o opJSON
				if err = dec.Decode(&o); err != nil {
					break
				}
				var op Op
				if op, err = o.op(); err != nil {
					err = fmt.Errorf("operation %d: %w", n, err)
					break
				}
				err = fn(op)
			}
			if err == nil {
				_, err = dec.Token() // ]
			}
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return bad(err)
		}
	}
	if s == nil {
		return bad(errors.New("no summary: the file was cut short"))
	}
	return h, s, nil
}

func (o opJSON) op() (Op, error) {
	op := Op{Kind: o.Op, Reason: o.Reason, ID: o.ID, WCU: o.WCU}
	raw := o.Item
	switch o.Op {
	case Put:
	case Delete:
		raw = o.Key
	default:
		return op, fmt.Errorf("op %q: want put or delete", o.Op)
	}
	if len(raw) == 0 {
		return op, fmt.Errorf("%s of %q has no item", o.Op, o.ID)
	}
	item, err := ddbjson.DecodeItem(raw)
	if err != nil {
		return op, err
	}
	op.Item = layouts.Item(item)
	for _, raw := range o.After {
		it, err := ddbjson.DecodeItem(raw)
		if err != nil {
			return op, err
		}
		op.After = append(op.After, layouts.Item(it))
	}
	return op, nil
}
