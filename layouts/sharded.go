package layouts

import (
	"fmt"
	"hash/fnv"
	"strconv"
)

var shardedSchema = schema{
	layout:  ShardedName,
	attrs:   []string{"Id", "ParentId", "GraphId", "Path", "Depth"},
	indexes: []string{"ByParent", "ByPath"},
}

// newSharded returns the sharded-path layout: path's items with GraphId
// (<root id>#<k>) instead of TreeId as ByPath's partition key, so one large
// tree's index traffic spreads over S partitions.
func newSharded(opts Options) (*pathLayout, error) {
	shards := opts.Shards
	switch {
	case shards == 0:
		shards = DefaultShards
	case shards < 0:
		return nil, fmt.Errorf("layouts: --shards %d: the sharded-path layout needs at least 1 shard (default %d)", shards, DefaultShards)
	}
	names, err := shardedSchema.resolve(opts.Attr)
	if err != nil {
		return nil, err
	}
	delim, err := delimiter(opts.Delimiter, DefaultPathDelimiter)
	if err != nil {
		return nil, err
	}
	return &pathLayout{
		base: newBase(shardedSchema, names, delim),
		id:   names["Id"], parent: names["ParentId"], tree: names["GraphId"],
		path: names["Path"], depth: names["Depth"],
		byParent: names["ByParent"], byPath: names["ByPath"],
		shards: shards,
	}, nil
}

// Shard is the sharded-path k of a node: 1 + (the FNV-1a 64-bit hash of
// its id, mod shards). It depends on the id alone, so a second run writes the
// same items. shards must be at least 1.
func Shard(id string, shards int) int {
	h := fnv.New64a()
	h.Write([]byte(id))
	return 1 + int(h.Sum64()%uint64(shards))
}

// GraphID is the sharded-path layout's ByPath partition key of a node of
// tree root in shard k: "<root>#<k>". A descendants query reads k = 1 … S.
func GraphID(root string, k int) string { return root + "#" + strconv.Itoa(k) }
