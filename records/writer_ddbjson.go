package records

import (
	"bufio"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/transform"
)

// ddbjsonWriter writes one {"Item":{...}} a line, the form DynamoDB's export
// to S3 writes, with the id and parent as S attributes. It streams.
type ddbjsonWriter struct {
	bw  *bufio.Writer
	enc ddbjsonEncoder
	buf []byte
}

var _ EncodedWriter = (*ddbjsonWriter)(nil)

func newDDBJSONWriter(bw *bufio.Writer, opts WriterOptions) *ddbjsonWriter {
	return &ddbjsonWriter{bw: bw, enc: ddbjsonEncoder{opts: opts}}
}

func (w *ddbjsonWriter) Write(rec *transform.Record) error {
	b, err := w.enc.Encode(w.buf[:0], rec)
	w.buf = b
	if err != nil {
		return err
	}
	return w.WriteEncoded(b)
}

// writeEncoded writes one line that a ddbjsonEncoder encoded.
func (w *ddbjsonWriter) WriteEncoded(b []byte) error {
	if _, err := w.bw.Write(b); err != nil {
		return fmt.Errorf("exporter: writing DynamoDB JSON: %w", err)
	}
	return nil
}

func (w *ddbjsonWriter) Close() error {
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("exporter: writing DynamoDB JSON: %w", err)
	}
	return nil
}

// ddbjsonEncoder encodes one record as a line of DynamoDB JSON, newline
// included. It keeps a scratch item between calls, so each goroutine needs
// its own.
type ddbjsonEncoder struct {
	opts WriterOptions
	item map[string]types.AttributeValue
}

var _ Encoder = (*ddbjsonEncoder)(nil)

func (e *ddbjsonEncoder) Encode(b []byte, rec *transform.Record) ([]byte, error) {
	if err := checkRecord(rec, &e.opts); err != nil {
		return b, err
	}
	for name, v := range rec.Attrs {
		if v == nil {
			return b, recordError(rec, name, fmt.Errorf("no value (nil)"))
		}
	}
	if e.item == nil {
		e.item = make(map[string]types.AttributeValue, len(rec.Attrs)+2)
	}
	clear(e.item)
	for name, v := range rec.Attrs {
		e.item[name] = v
	}
	e.item[e.opts.IDField] = &types.AttributeValueMemberS{Value: rec.ID}
	if rec.Parent != "" {
		e.item[e.opts.ParentField] = &types.AttributeValueMemberS{Value: rec.Parent}
	}
	return ddbjson.AppendLine(b, e.item), nil
}
