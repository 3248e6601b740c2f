package importer

import (
	"context"

	"github.com/treeport/treeport/layouts"
)

// ImportSourceBytes is what ImportTable would bill for loading the input
// into l: the bytes of the uncompressed DynamoDB JSON that import --out
// writes, one {"Item":{…}} line an item, newline included, every item of
// the nodes l accepts (check the forest against l first). ImportTable
// bills "the uncompressed object size in Amazon S3"
// (https://aws.amazon.com/dynamodb/pricing/on-demand/, "Import from S3"),
// and the files are gzip, so the line bytes, not the files' sizes, are the
// figure. It reads the input again, and encodes each item as the files'
// writer does (appendAttrsLine), so the two cannot drift apart.
func (in *Input) ImportSourceBytes(ctx context.Context, l layouts.Layout) (int64, error) {
	var buf []byte
	var n int64
	_, err := in.EmitAttrs(ctx, EmitOptions{Layout: l}, func(_ int64, item []layouts.Attr) error {
		buf = appendAttrsLine(buf[:0], item)
		n += int64(len(buf))
		return nil
	})
	return n, err
}
