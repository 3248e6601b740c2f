package refresh

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/itemdigest"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/models"
)

// checkTargets reads, with consistent BatchGetItem, the table's items
// under the keys that ops write, and refuses (an error matching
// importer.ErrInvalid, exit 2) when one of them is another entity's
// (models.Foreign) or does not read as part of a node of l: writes
// computed from nodes (an edit, a followed record) reach keys they never
// read, and treeport never changes or deletes such an item. It names
// the first key and what is wrong.
func checkTargets(ctx context.Context, client exporter.QueryAPI, table string, l layouts.Layout, ops []Op) error {
	op, item, why, err := badTarget(ctx, client, table, l, ops)
	if err != nil || op == nil {
		return err
	}
	return invalidf("table %s: the item %s %v; treeport never changes or deletes such an item: move or delete it, or fix the %s; nothing was written",
		table, ddb.KeyString(item, l.Table().KeyNames()...), why, layoutWord(l))
}

// badTarget is checkTargets' reading: the first operation whose key holds
// an item that is not part of a node of l, that item, and what is wrong
// with it (nil op: none).
func badTarget(ctx context.Context, client exporter.QueryAPI, table string, l layouts.Layout, ops []Op) (*Op, layouts.Item, error, error) {
	spec := l.Table()
	seen := make(map[string]int, len(ops))
	var keys []map[string]types.AttributeValue
	for i, op := range ops {
		key := map[string]types.AttributeValue{spec.PK.Name: op.Item[spec.PK.Name]}
		if spec.SK != nil {
			key[spec.SK.Name] = op.Item[spec.SK.Name]
		}
		if k := itemdigest.KeyOf(spec, key); !has(seen, k) {
			seen[k] = i
			keys = append(keys, key)
		}
	}
	for start := 0; start < len(keys); start += exporter.MaxBatchGetKeys {
		pending := keys[start:min(start+exporter.MaxBatchGetKeys, len(keys))]
		for fails := 0; len(pending) > 0; fails++ {
			out, err := client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
				table: {Keys: pending, ConsistentRead: aws.Bool(true)},
			}})
			if err != nil {
				return nil, nil, nil, fmt.Errorf("table %s: reading the items the writes would change: %w", table, err)
			}
			for _, item := range out.Responses[table] {
				if why := targetItem(l, item); why != nil {
					return &ops[seen[itemdigest.KeyOf(spec, item)]], item, why, nil
				}
			}
			pending = out.UnprocessedKeys[table].Keys
			if len(pending) > 0 {
				if fails >= 10 {
					return nil, nil, nil, fmt.Errorf("table %s: reading the items the writes would change: %d keys left unprocessed", table, len(pending))
				}
				select {
				case <-ctx.Done():
					return nil, nil, nil, ctx.Err()
				case <-time.After(time.Duration(50<<fails) * time.Millisecond):
				}
			}
		}
	}
	return nil, nil, nil, nil
}

func has(m map[string]int, k string) bool { _, ok := m[k]; return ok }

// targetItem says what is wrong with an item a write would change or
// delete, nil when it is part of a node of l.
func targetItem(l layouts.Layout, item layouts.Item) error {
	if models.Foreign(l, layouts.MapView(item)) {
		return fmt.Errorf("is another entity's (it does not carry the model's type field)")
	}
	if _, err := readsAsNode(l, item); err != nil {
		return fmt.Errorf("does not read as a node of %s (%v)", l.Name(), err)
	}
	return nil
}
