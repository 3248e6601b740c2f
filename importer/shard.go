package importer

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
	"hash/fnv"
	"strconv"
	"strings"
)

// Shard selects the part of the items one of several copies of a job writes:
// the items whose partition key hashes to K, counted from 0, out of Of. The
// zero Shard, and any with Of <= 1, owns everything.
type Shard struct {
	K, Of int
}

// ParseShard reads "k/N", as a Kubernetes Indexed Job's completion index and
// completions give them.
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	ks, ns, ok := strings.Cut(s, "/")
	k, err1 := strconv.Atoi(ks)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil || n < 1 || k < 0 || k >= n {
		return Shard{}, fmt.Errorf("importer: --shard %q: want k/N with 0 <= k < N, e.g. --shard 0/4", s)
	}
	return Shard{K: k, Of: n}, nil
}

// Owns reports whether the item with this partition key value is this
// shard's to write.
func (s Shard) Owns(key string) bool {
	if s.Of <= 1 {
		return true
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	return h.Sum64()%uint64(s.Of) == uint64(s.K)
}

func (s Shard) String() string {
	if s.Of <= 1 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.K, s.Of)
}

// partitionKey is the text of the item's partition key value: what --shard
// hashes, so that all the items of one partition go to one copy of the job.
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
