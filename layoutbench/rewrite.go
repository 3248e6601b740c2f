package layoutbench

import (
	"context"
	"hash/fnv"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"golang.org/x/sync/errgroup"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/models"
	"github.com/treeport/treeport/transform"
)

// A change to the tree, and what it rewrites: the items of every affected
// node are built before and after with Layout.Items and compared by primary
// key and content. puts are the new or changed items, deletes the keys that
// disappear, and wcu what DynamoDB bills the writes (itemWCU). Records are
// built with stand-in attributes the size of the node's own attributes
// (pad), so that the items have their sizes, and the write units theirs,
// without the data: a node's attributes are the same before and after a
// move or a delete, so they never make an item differ.
type change struct {
	puts, deletes int64
	wcu           int64
}

// padAttr is the stand-in attribute's name; no layout names an attribute
// so, and no input can (a control character).
const padAttr = "\x01"

// pad returns the stand-in attributes of a node whose own attributes are
// attrBytes in size, built of c. copyBytes of them are those a closure
// ancestor row copies when --closure-copy names some (copied is then
// layouts.CopiedName, else ""): they stand under the name copied, so that
// the ancestor rows copy them and have their sizes, and the rest under
// padAttr, which no row but the node's own holds. Without copied, all of
// them stand under padAttr, which closure's ancestor rows copy with
// --closure-copy all and leave out with none, as they do the real ones.
func pad(attrBytes, copyBytes int, copied string, c byte) transform.Attrs {
	var out transform.Attrs
	put := func(name string, size int) {
		if size <= 0 {
			return
		}
		if out == nil {
			out = transform.Attrs{}
		}
		out[name] = &types.AttributeValueMemberS{Value: strings.Repeat(string(c), max(0, size-len(name)))}
	}
	if copied != "" && copyBytes > 0 {
		copyBytes = min(copyBytes, attrBytes)
		put(copied, copyBytes)
		attrBytes -= copyBytes
	}
	put(padAttr, attrBytes)
	return out
}

// itemWCU is what DynamoDB bills to turn item old into item new (nil: no
// item) on a table of this spec: a delete as a write of the old item
// (layouts.WriteUnits), a put by layouts.ReplaceUnits (the table write at
// the larger of the two items, and in each index what the put does to the
// copy it keeps).
func itemWCU(spec layouts.TableSpec, old, new layouts.Item) int64 {
	if new == nil {
		return int64(layouts.WriteUnits(spec, old))
	}
	return int64(layouts.ReplaceUnits(spec, old, new))
}

func (c change) items() int64 { return c.puts + c.deletes }

// moveTarget picks where a sampled node moves: a node at its parent's
// depth other than its parent (so that the subtree keeps its depths), else
// one at its own depth other than itself, else its grandparent; -1 for a
// root, which has nowhere to go. byDepth lists the accepted nodes of each
// depth. The pick is a function of the seed and the node.
func moveTarget(f *transform.Forest, byDepth [][]int32, x int32, seed uint64) int32 {
	p := f.Parent(int(x))
	if p < 0 {
		return -1
	}
	h := fnv.New64a()
	h.Write([]byte(f.ID(int(x))))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	pick := func(cands []int32, not int32) int32 {
		if len(cands) < 2 {
			return -1
		}
		j := rng.IntN(len(cands))
		if cands[j] == not {
			j = (j + 1) % len(cands)
		}
		return cands[j]
	}
	if t := pick(byDepth[f.Depth(p)], int32(p)); t >= 0 {
		return t
	}
	if t := pick(byDepth[f.Depth(int(x))], x); t >= 0 {
		return t
	}
	return int32(f.Parent(p)) // -1 for a parent that is a root
}

// subtree returns x and its descendants, breadth first.
func subtree(f *transform.Forest, x int32) []int32 {
	out := []int32{x}
	for k := 0; k < len(out); k++ {
		out = append(out, f.Children(int(out[k]))...)
	}
	return out
}

// bruteForceNodes is the largest subtree whose every node is diffed. Above
// it, each relative depth below the changed node is diffed on one node and
// counted for all the nodes at that relative depth: a layout's items depend
// on a node's place only through its path (the ids from its root), and a
// change gives every node at one relative depth the same new ancestors, so
// they change alike. TestRewriteClasses holds this against diffing every
// node, for every layout.
var bruteForceNodes = 20000

// affected returns the nodes to diff, each with the number of nodes it
// stands for.
func affected(f *transform.Forest, x int32) ([]int32, []int64) {
	nodes := subtree(f, x)
	if len(nodes) <= bruteForceNodes {
		return nodes, nil
	}
	// Breadth first: each level starts after the previous one ends.
	var reps []int32
	var counts []int64
	for k, y := range nodes {
		if k == 0 || f.Depth(int(y)) != f.Depth(int(nodes[k-1])) {
			reps = append(reps, y)
			counts = append(counts, 0)
		}
		counts[len(counts)-1]++
	}
	return reps, counts
}

// rewrite counts what a change does to the nodes given, in parallel. after
// builds node y's place after the change into n (using path as its
// buffer) and reports whether the node still exists.
func rewrite(ctx context.Context, l layouts.Layout, f *transform.Forest, nodes []int32, weights []int64,
	after func(y int32, before, n *transform.Node, path []string) ([]string, bool)) (change, error) {
	// The nodes' attribute sizes, read before the workers start: Stats is
	// not safe for concurrent use (it builds the child counts once).
	attrBytes := make([]int, len(nodes))
	copyBytes := make([]int, len(nodes))
	var st transform.Stats
	for k, y := range nodes {
		f.Stats(int(y), &st)
		attrBytes[k], copyBytes[k] = st.AttrBytes, st.CopyBytes
	}
	copied := layouts.CopiedName(l)
	spec := l.Table()
	pathIDs, delim := layouts.PathIDs(l), l.Delimiter()
	implicit := layouts.ImplicitInner(l)
	workers := max(1, min(runtime.GOMAXPROCS(0), len(nodes)/256+1))
	var mu sync.Mutex
	var total change
	g, gctx := errgroup.WithContext(ctx)
	chunk := (len(nodes) + workers - 1) / workers
	for w := range workers {
		lo, hi := min(len(nodes), w*chunk), min(len(nodes), (w+1)*chunk)
		part := nodes[lo:hi]
		g.Go(func() error {
			var c change
			var before, aft transform.Node
			var pb, pa []string
			old := map[string]layouts.Item{}
			for k, y := range part {
				if k&1023 == 0 {
					if err := gctx.Err(); err != nil {
						return err
					}
				}
				pb = f.AppendPath(pb[:0], int(y))
				before = transform.Node{Record: transform.Record{ID: f.ID(int(y)), Attrs: pad(attrBytes[lo+k], copyBytes[lo+k], copied, 'x')}, Depth: len(pb) - 1, Path: pb}
				if p := f.Parent(int(y)); p >= 0 {
					before.Parent = f.ID(p)
				}
				before.Inner = implicit && f.HasChildren(int(y))
				clear(old)
				if err := l.Items(&before, func(it layouts.Item) { old[layouts.KeyOf(spec, it)] = it }); err != nil {
					return err
				}
				n := int64(1)
				if weights != nil {
					n = weights[lo+k]
				}
				var exists bool
				pa, exists = after(y, &before, &aft, pa[:0])
				if exists && pathIDs {
					renamePath(&aft, delim)
				}
				aft.Inner = before.Inner
				if exists {
					if aft.Attrs == nil {
						aft.Attrs = before.Attrs
					}
					if err := l.Items(&aft, func(it layouts.Item) {
						key := layouts.KeyOf(spec, it)
						prev, ok := old[key]
						if !ok || !sameItem(prev, it) {
							c.puts += n
							c.wcu += n * itemWCU(spec, prev, it)
						}
						delete(old, key)
					}); err != nil {
						return err
					}
				}
				c.deletes += n * int64(len(old))
				for _, it := range old {
					c.wcu += n * itemWCU(spec, it, nil)
				}
			}
			mu.Lock()
			total.puts += c.puts
			total.deletes += c.deletes
			total.wcu += c.wcu
			mu.Unlock()
			return nil
		})
	}
	return total, g.Wait()
}

// renamePath gives a node moved with path ids (a move or a delete's
// children moving up) the ids of its new place: each id on its Path is
// the one above it, the delimiter and its name (its last segment).
func renamePath(n *transform.Node, delim string) {
	for i, id := range n.Path {
		name := layouts.NameOf(id, delim)
		if i > 0 {
			name = n.Path[i-1] + delim + name
		}
		n.Path[i] = name
	}
	n.ID, n.Parent = n.Path[len(n.Path)-1], ""
	if len(n.Path) > 1 {
		n.Parent = n.Path[len(n.Path)-2]
	}
}

// moveChange moves x's subtree under target.
func moveChange(ctx context.Context, l layouts.Layout, f *transform.Forest, x, target int32) (change, error) {
	var tp []string
	tp = f.AppendPath(tp, int(target))
	dx := f.Depth(int(x))
	nodes, weights := affected(f, x)
	return rewrite(ctx, l, f, nodes, weights, func(y int32, before, n *transform.Node, path []string) ([]string, bool) {
		path = append(append(path, tp...), before.Path[dx:]...)
		*n = transform.Node{Record: transform.Record{ID: f.ID(int(y))}, Depth: len(path) - 1, Path: path}
		if y == x {
			n.Parent = f.ID(int(target))
		} else {
			n.Parent = f.ID(f.Parent(int(y)))
		}
		return path, true
	})
}

// deleteChange deletes x; its children move up to its parent (they become
// roots when x is one).
func deleteChange(ctx context.Context, l layouts.Layout, f *transform.Forest, x int32) (change, error) {
	dx := f.Depth(int(x))
	newParent := ""
	if p := f.Parent(int(x)); p >= 0 {
		newParent = f.ID(p)
	}
	nodes, weights := affected(f, x)
	return rewrite(ctx, l, f, nodes, weights, func(y int32, before, n *transform.Node, path []string) ([]string, bool) {
		if y == x {
			return path, false
		}
		path = append(append(path, before.Path[:dx]...), before.Path[dx+1:]...)
		*n = transform.Node{Record: transform.Record{ID: f.ID(int(y))}, Depth: len(path) - 1, Path: path}
		if p := f.Parent(int(y)); int32(p) == x {
			n.Parent = newParent
		} else {
			n.Parent = f.ID(p)
		}
		return path, true
	})
}

// writeChange rewrites x's own attributes, the same sizes, new values: what
// an application's update of one node writes.
func writeChange(ctx context.Context, l layouts.Layout, f *transform.Forest, x int32) (change, error) {
	var st transform.Stats
	f.Stats(int(x), &st)
	if models.LeavesOnly(l) && st.Children > 0 {
		// Only the leaves have items (store-locations): an inner node
		// holds no attributes to write.
		return change{}, nil
	}
	// At least a byte of value, so that the update writes something.
	size := max(st.AttrBytes, len(padAttr)+1)
	copied := layouts.CopiedName(l)
	return rewrite(ctx, l, f, []int32{x}, nil, func(_ int32, before, n *transform.Node, path []string) ([]string, bool) {
		*n = *before
		n.Path = append(path, before.Path...)
		n.Attrs = pad(size, st.CopyBytes, copied, 'y')
		return n.Path, true
	})
}

// sameItem compares two items attribute by attribute.
func sameItem(a, b layouts.Item) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok || !exporter.SameValue(va, vb) {
			return false
		}
	}
	return true
}
