package refresh

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/itemdigest"
	"github.com/treeport/treeport/layouts"
)

// verifyContent verifies the out-of-core copy into an empty destination
// by content, in the budget: the items the layout wants for the input's
// nodes (this shard's, under --shard), emitted again, and the
// destination's items (those this copy owns), read with consistent reads,
// each go to an external sort by key with the item's digest in dir
// (itemdigest.Diff); their merge join counts the items missing, different
// and extra. The first few of each are named in opts.Log.
func verifyContent(ctx context.Context, opts MigrateOptions, in *importer.Input, dir string, want *Summary) (*Summary, error) {
	o := opts.Input.OutOfCore
	diff := itemdigest.NewDiff(dir, int(max(o.Memory/8, 1<<20)))
	defer diff.Close()
	spec := opts.Layout.Table()
	var (
		d   itemdigest.Digester
		key []byte
	)
	_, err := in.EmitAttrs(ctx, importer.EmitOptions{Layout: opts.Layout, Shard: opts.Shard}, func(_ int64, item []layouts.Attr) error {
		key = itemdigest.AppendKey(key[:0], spec, itemdigest.FlatView(item))
		all, _ := d.FlatAndAttrs(item, nil)
		return diff.Want(key, all)
	})
	if err != nil {
		return nil, err
	}
	var start map[string]types.AttributeValue
	for {
		out, err := opts.Client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(opts.Table), ConsistentRead: aws.Bool(true), ExclusiveStartKey: start})
		if err != nil {
			return nil, err
		}
		for _, item := range out.Items {
			if opts.Shard.Of > 1 && !opts.Shard.OwnsValue(item[spec.PK.Name]) {
				continue
			}
			key = itemdigest.AppendKey(key[:0], spec, itemdigest.MapView(item))
			if err := diff.Have(key, d.Item(item)); err != nil {
				return nil, err
			}
		}
		if start = out.LastEvaluatedKey; start == nil {
			break
		}
	}
	c, err := diff.Compare()
	if err != nil {
		return nil, err
	}
	s := &Summary{Table: want.Table, Layout: want.Layout, Shard: want.Shard, ByReason: map[Reason]*Count{},
		TableNodes: want.SnapshotNodes, TableItems: c.Held, SnapshotNodes: want.SnapshotNodes, SnapshotItems: c.Wanted}
	if opts.Shard.Of > 1 {
		s.TableShardItems = c.Held
	}
	for _, r := range Reasons {
		s.ByReason[r] = &Count{}
	}
	s.ByReason[ReasonNew].Puts, s.ByReason[ReasonChanged].Puts, s.ByReason[ReasonRemoved].Deletes = c.Missing, c.Different, c.Extra
	s.Total.Puts, s.Total.Deletes = c.Missing+c.Different, c.Extra
	if !c.Same() {
		s.TableNodes = 0
		for _, k := range []struct {
			what string
			keys []string
		}{{"missing", c.MissingKeys}, {"not the one written", c.DifferentKeys}, {"not written by this copy", c.ExtraKeys}} {
			if len(k.keys) > 0 {
				fmt.Fprintf(opts.Log, "verify: %s: items %s (the first few): %s\n", opts.Table, k.what, itemdigest.KeysText(spec, k.keys))
			}
		}
	}
	return s, nil
}
