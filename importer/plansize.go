package importer

import (
	"context"
	"errors"
	"fmt"

	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// MaxItemsPerNode is how many items a node of the input, on average, a
// load may write before it asks to be let go on (SizeLimit): 100, far above
// the one or two items a node of the path, sharded-path, prefix and
// adjacency layouts, and what the closure layout writes at an average
// depth of 99. A deep
// input in the closure layout writes depth + 1 items a node, which for a
// chain of 100,000 nodes is 5,000,050,000 items, hundreds of gigabytes:
// that is not started without a word.
const MaxItemsPerNode = 100

// ErrTooLarge is returned by CheckSize for a load over its limit. It is
// also ErrInvalid (errors.Is): nothing has been written.
var ErrTooLarge = errors.New("importer: the load is over its size limit")

// SizeLimit says how large a load may be.
type SizeLimit struct {
	// MaxItems is the most items the load may write; 0 means
	// MaxItemsPerNode times the input's valid nodes.
	MaxItems int64
	// Yes lets the load go on whatever its size.
	Yes bool
}

// Size is what loading a checked input's valid nodes in a layout writes.
type Size struct {
	Layout       string
	Nodes, Items int64
	Bytes        int64
	Limit        int64 // the limit it was held against; 0 with SizeLimit.Yes
}

func (s *Size) String() string {
	return fmt.Sprintf("the %s layout writes %d items (%s) for %d nodes", s.Layout, s.Items, units.SizeText(s.Bytes), s.Nodes)
}

// CheckSize measures the load of a checked input (CheckLayout first) in
// layout l, when it may be large, and holds it against lim. It returns nil
// and no error for a load that is small for sure: the items of the deepest
// node, times the nodes, are within MaxItemsPerNode a node, and no
// MaxItems is given. That costs nothing for the layouts that write a fixed
// number of items a node. Otherwise it measures every valid node (as a dry
// run does, without building an item) and returns the size, with an error
// wrapping ErrTooLarge and ErrInvalid when it is over the limit and lim.Yes
// is not set.
func CheckSize(ctx context.Context, in *Input, l layouts.Layout, lim SizeLimit) (*Size, error) {
	var (
		valid int64
		depth int
		path  int
	)
	if s := in.ooc; s != nil {
		valid, depth, path = s.Bounds()
	} else {
		f := in.Forest
		b := f.Bounds()
		valid, depth, path = int64(f.Len()-f.RejectedCount()), b.Depth, b.PathBytes
	}
	if lim.MaxItems <= 0 && !lim.Yes {
		m := layouts.NewMeasure(l)
		l.Measure(&transform.Stats{ID: "x", RootID: "x", Depth: depth, PathBytes: max(path, depth+1),
			MaxAncestorIDBytes: 1, Subtree: 1, TreeSize: 1, Roots: 1}, m)
		if m.Items <= MaxItemsPerNode {
			return nil, nil
		}
	}
	var m *layouts.Measure
	if in.ooc != nil {
		// The passes measured every valid node as they placed it.
		m = in.ooc.Measure()
	} else {
		var err error
		if m, err = measureValid(ctx, in, l, nil); err != nil {
			return nil, err
		}
	}
	s := &Size{Layout: l.Name(), Nodes: m.Nodes, Items: m.Items, Bytes: m.Bytes}
	if lim.Yes {
		return s, nil
	}
	s.Limit = lim.MaxItems
	how := "--max-items"
	if s.Limit <= 0 {
		s.Limit = MaxItemsPerNode * max(valid, 1)
		how = fmt.Sprintf("%d items a node of the input", MaxItemsPerNode)
	}
	if s.Items <= s.Limit {
		return s, nil
	}
	return s, &marked{fmt.Errorf("%w: %s, over the limit of %d items (%s); nothing was written. "+
		"A layout that writes fewer items a node costs less (path, sharded-path, prefix and adjacency write one or two), as does copying no attributes to closure's ancestor rows (--closure-copy none); "+
		"to write it all the same, raise the limit with --max-items N or lift it with --yes",
		ErrTooLarge, s, s.Limit, how), ErrInvalid}
}

// measureValid measures the items of the forest's valid nodes in l, as
// the forest's checks left them. It stops with ctx's error once ctx ends,
// and tells progress (when not nil) how many nodes it has looked at.
func measureValid(ctx context.Context, in *Input, l layouts.Layout, progress PlanProgress) (*layouts.Measure, error) {
	m := layouts.NewMeasure(l)
	f := in.Forest
	var s transform.Stats
	valid := validCounts(f)
	order := f.Order()
	for k, i := range order {
		if k&(1<<14-1) == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if progress != nil && k > 0 {
				progress("measuring", int64(k), int64(len(order)))
			}
		}
		if f.Rejected(int(i)) {
			continue
		}
		f.Stats(int(i), &s)
		if valid != nil {
			valid.fix(i, &s)
		}
		l.Measure(&s, m)
	}
	return m, nil
}
