package ddbwrite

import (
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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
		return Shard{}, fmt.Errorf("ddbwrite: --shard %q: want k/N with 0 <= k < N, e.g. --shard 0/4", s)
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

// String is "k/N", as --shard takes it, or "" for the whole.
func (s Shard) String() string {
	if s.Of <= 1 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.K, s.Of)
}

// Name is "shard-k-of-N", the part of a file or object name that keeps one
// shard's outputs apart from the others', or "" for the whole.
func (s Shard) Name() string {
	if s.Of <= 1 {
		return ""
	}
	return fmt.Sprintf("shard-%d-of-%d", s.K, s.Of)
}

// FileName inserts the shard's Name before the extension of path
// ("ck.json" becomes "ck.shard-1-of-4.json"), so that N copies of a job
// given the same file name each write their own file. For the whole, and
// for an empty path, it returns path unchanged.
func (s Shard) FileName(path string) string {
	if s.Of <= 1 || path == "" || path == "-" {
		return path
	}
	dir, base := filepath.Split(path)
	stem, ext := base, ""
	// Keep compound extensions (.json.gz) together; a leading dot is not
	// an extension.
	if i := strings.Index(base[min(1, len(base)):], "."); i >= 0 {
		stem, ext = base[:i+1], base[i+1:]
	}
	return dir + stem + "." + s.Name() + ext
}

// OwnsValue reports whether the item whose partition key has this value is
// this shard's to write. The text of the value is what is hashed, so all
// the items of one partition go to one copy of the job.
func (s Shard) OwnsValue(v types.AttributeValue) bool {
	if s.Of <= 1 {
		return true
	}
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return s.Owns(v.Value)
	case *types.AttributeValueMemberN:
		return s.Owns(v.Value)
	case *types.AttributeValueMemberB:
		return s.Owns(string(v.Value))
	}
	return s.Owns("")
}
