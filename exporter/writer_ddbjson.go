package exporter

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
	bw   *bufio.Writer
	opts WriterOptions
	item map[string]types.AttributeValue
	buf  []byte
}

var _ RecordWriter = (*ddbjsonWriter)(nil)

func newDDBJSONWriter(bw *bufio.Writer, opts WriterOptions) *ddbjsonWriter {
	return &ddbjsonWriter{bw: bw, opts: opts, item: map[string]types.AttributeValue{}}
}

func (w *ddbjsonWriter) Write(rec *transform.Record) error {
	if err := checkRecord(rec, &w.opts); err != nil {
		return err
	}
	for name, v := range rec.Attrs {
		if v == nil {
			return recordError(rec, name, fmt.Errorf("no value (nil)"))
		}
	}
	clear(w.item)
	for name, v := range rec.Attrs {
		w.item[name] = v
	}
	w.item[w.opts.IDField] = &types.AttributeValueMemberS{Value: rec.ID}
	if rec.Parent != "" {
		w.item[w.opts.ParentField] = &types.AttributeValueMemberS{Value: rec.Parent}
	}
	w.buf = ddbjson.AppendLine(w.buf[:0], w.item)
	if _, err := w.bw.Write(w.buf); err != nil {
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
