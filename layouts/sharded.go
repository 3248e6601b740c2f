package layouts

import (
	"fmt"
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
	l := &pathLayout{
		base: newBase(shardedSchema, names, delim, opts),
		id:   names["Id"], parent: names["ParentId"], tree: names["GraphId"],
		path: names["Path"], depth: names["Depth"],
		byParent: names["ByParent"], byPath: names["ByPath"],
		shards: shards,
	}
	l.rs = newReservedSet(&l.base)
	return l, nil
}

// Shard is the sharded-path k of a node: 1 + (the FNV-1a 64-bit hash of
// its id, mod shards). It depends on the id alone, so a second run writes the
// same items. shards must be at least 1.
func Shard(id string, shards int) int {
	// FNV-1a, as hash/fnv computes it, without its allocations.
	h := uint64(fnvOffset64)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= fnvPrime64
	}
	return 1 + int(h%uint64(shards))
}

// The FNV-1a 64-bit parameters of hash/fnv.
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// GraphID is the sharded-path layout's ByPath partition key of a node of
// tree root in shard k: "<root>#<k>". A descendants query reads k = 1 … S.
func GraphID(root string, k int) string { return root + "#" + strconv.Itoa(k) }
