package refresh

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// Table is what a plan needs to know of a table: a digest of every item (one
// word, its size and its index count, not the item), and the tree its nodes
// form (each node's parent and a digest of its attributes). It is read with
// one parallel Scan.
type Table struct {
	Name   string
	layout layouts.Layout
	spec   layouts.TableSpec
	fields layouts.Fields
	shard  importer.Shard

	items map[string]*tableItem
	nodes map[string]tableNode
	// Duplicates counts node items whose id another node item had already
	// (a table written by something else, or by hand); the plan deletes
	// the items that the snapshot does not want.
	Duplicates int
	// Items is every item read, this shard's or not.
	Items int64
	// Read is what the Scan cost.
	Read exporter.Stats
}

type tableItem struct {
	digest  uint64
	size    uint32
	indexes uint8
	seen    bool
}

type tableNode struct {
	parent string
	attrs  uint64
}

// ReadTableOptions say how to read a table for a plan.
type ReadTableOptions struct {
	Client exporter.ScanAPI
	Table  string
	Layout layouts.Layout
	Scan   exporter.ScanOptions
	// Shard, when Of > 1, keeps only the items whose partition key hashes
	// to this shard. The nodes are kept whole: the plan's classification
	// and the mass-delete guard look at the whole tree.
	Shard importer.Shard
}

// ReadTable scans a table and keeps what a plan compares with a snapshot.
// An item that does not fit the layout stops it with an error naming the
// item's key.
func ReadTable(ctx context.Context, opts ReadTableOptions) (*Table, error) {
	f, err := layouts.FieldsOf(opts.Layout)
	if err != nil {
		return nil, err
	}
	t := &Table{
		Name: opts.Table, layout: opts.Layout, spec: opts.Layout.Table(), fields: f, shard: opts.Shard,
		items: map[string]*tableItem{}, nodes: map[string]tableNode{},
	}
	var mu sync.Mutex
	type seenItem struct {
		key string
		it  tableItem
	}
	type seenNode struct {
		id string
		n  tableNode
	}
	st, err := exporter.ScanItems(ctx, opts.Client, opts.Table, opts.Scan, func(items []layouts.Item) error {
		var d digester
		its := make([]seenItem, 0, len(items))
		var nodes []seenNode
		for _, item := range items {
			rec, isNode, err := opts.Layout.Node(item)
			if err != nil {
				return fmt.Errorf("refresh: table %s: item %s: %w (is --layout %s right, with the --attr renames and --delimiter the table was written with?)",
					opts.Table, describeKey(t.spec, item), err, opts.Layout.Name())
			}
			if isNode {
				nodes = append(nodes, seenNode{rec.ID, tableNode{parent: rec.Parent, attrs: d.item(rec.Attrs)}})
			}
			if !opts.Shard.Owns(partitionKey(t.spec, item)) {
				continue
			}
			its = append(its, seenItem{keyOf(t.spec, item), tableItem{
				digest:  d.item(item),
				size:    uint32(transform.ItemSize(item)),
				indexes: uint8(layouts.IndexesOf(t.spec, item)),
			}})
		}
		mu.Lock()
		defer mu.Unlock()
		t.Items += int64(len(items))
		for _, s := range its {
			it := s.it
			t.items[s.key] = &it
		}
		for _, s := range nodes {
			if _, dup := t.nodes[s.id]; dup {
				t.Duplicates++
				continue
			}
			t.nodes[s.id] = s.n
		}
		return nil
	})
	t.Read = st
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Nodes is the number of nodes in the table.
func (t *Table) Nodes() int { return len(t.nodes) }

// partitionKey is the text of an item's partition key, as Shard.Owns hashes
// it (the importer hashes the same text).
func partitionKey(spec layouts.TableSpec, item layouts.Item) string {
	switch v := item[spec.PK.Name].(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return v.Value
	case *types.AttributeValueMemberB:
		return string(v.Value)
	}
	return ""
}

// owner is the id of the node an item (or an item's key) belongs to: the
// item's Id in the path layouts and closure; in prefix, the last id of an
// object row's Key, or a listing row's Child.
func owner(f layouts.Fields, item layouts.Item) string {
	str := func(name string) string {
		if s, ok := item[name].(*types.AttributeValueMemberS); ok {
			return s.Value
		}
		return ""
	}
	if f.Layout != layouts.PrefixName {
		return str(f.ID)
	}
	child := str(f.Child)
	if child != f.Delimiter {
		return child
	}
	key := str(f.Key)
	return key[strings.LastIndex(key, f.Delimiter)+len(f.Delimiter):]
}

// describeKey is an item's key for a message: Id="A", RelativeDepth=2.
func describeKey(spec layouts.TableSpec, item layouts.Item) string {
	part := func(name string) string {
		switch v := item[name].(type) {
		case *types.AttributeValueMemberS:
			return fmt.Sprintf("%s=%q", name, v.Value)
		case *types.AttributeValueMemberN:
			return fmt.Sprintf("%s=%s", name, v.Value)
		case nil:
			return name + " missing"
		default:
			return fmt.Sprintf("%s of type %T", name, v)
		}
	}
	s := part(spec.PK.Name)
	if spec.SK != nil {
		s += ", " + part(spec.SK.Name)
	}
	return s
}
