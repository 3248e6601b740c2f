package refresh

import (
	"github.com/treeport/treeport/internal/diskmap"
	"github.com/treeport/treeport/refresh/followstate"
)

// newKVStore is a store of the follower's state: an ordered map that
// keeps about memory bytes in memory and the rest in sorted runs in dir
// (internal/diskmap); memory 0 never spills (the follow in memory).
func newKVStore(dir string, memory int64) (followstate.Store, error) {
	return diskmap.New(diskmap.Options{Dir: dir, Memory: memory})
}
