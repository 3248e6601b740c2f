package followstate

import (
	"fmt"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/transform"
)

// Node is a node as B holds it.
type Node struct {
	Parent string
	Digest uint64
	Inner  bool // it has children (nodeSide.Inner)
	attrs  []byte
	// pin is the node's path in B when its parents in B do not give it:
	// a held node whose ancestors' paths changed, or whose parent B no
	// longer holds (see Applied.Pin).
	pin []string
}

// Attrs are the attributes of B's node n (none after an error of the
// store's, which Err tells).
func (a *Applied) Attrs(n *Node) transform.Attrs {
	x, err := decodeAttrs(n.attrs)
	a.fail(err)
	return x
}

func (n *Node) encode() []byte {
	e := enc(nil).str(n.Parent).u64(n.Digest).flag(n.Inner).bytes(n.attrs).flag(n.pin != nil)
	if n.pin != nil {
		e = e.strs(n.pin)
	}
	return e
}

func decodeNode(b []byte) (*Node, error) {
	d := &dec{b: b}
	n := &Node{Parent: d.str(), Digest: d.u64(), Inner: d.flag(), attrs: d.bytes()}
	if d.flag() {
		n.pin = d.strs()
	}
	return n, d.err
}

// Applied is B's nodes as the follower wrote them. A node's path is not
// kept with it: it is found by walking its parents in B (a few reads a
// level, remembered until NewRound), so that the paths take room in
// proportion to the nodes, not to the sum of their depths.
type Applied struct {
	*state
	cache map[string]*Path
}

// Len is the number of B's nodes: the keys of its store, which holds
// nothing else.
func (a *Applied) Len() int64 { return a.s.Len() }

// Get is B's node id (nil when B does not hold it).
func (a *Applied) Get(id string) *Node {
	v, ok := a.get(keyOf('a', id))
	if !ok {
		return nil
	}
	n, err := decodeNode(v)
	a.fail(err)
	return n
}

// Put says B holds node id as given. Its path is its parent's and its id;
// a path it has otherwise is given by Pin after the round's puts.
func (a *Applied) Put(id, parent string, attrs transform.Attrs, digest uint64, inner bool) {
	a.put(id, &Node{Parent: parent, Digest: digest, Inner: inner, attrs: ddbjson.AppendItem(nil, attrs)})
}

func (a *Applied) put(id string, n *Node) {
	a.state.put(keyOf('a', id), n.encode())
}

// Delete says B no longer holds node id.
func (a *Applied) Delete(id string) {
	a.del(keyOf('a', id))
}

// NewRound forgets the paths found: B's nodes are about to change.
func (a *Applied) NewRound() { clear(a.cache) }

// Path is node id's path in B (nil when B does not hold it).
func (a *Applied) Path(id string) *Path {
	if p, ok := a.cache[id]; ok {
		return p
	}
	var chain []string // id and its ancestors up to the first one known
	var top *Path
	for cur := id; ; {
		if p, ok := a.cache[cur]; ok {
			top = p
			break
		}
		n := a.Get(cur)
		if n == nil {
			if cur != id {
				a.fail(fmt.Errorf("followstate: B's node %q names %q as its parent, which B does not hold", chain[len(chain)-1], cur))
			}
			return nil
		}
		if n.pin != nil {
			top = pathOf(n.pin)
			a.cache[cur] = top
			break
		}
		chain = append(chain, cur)
		if n.Parent == "" {
			break
		}
		if int64(len(chain)) > a.Len() {
			a.fail(fmt.Errorf("followstate: B's node %q is its own ancestor", id))
			return nil
		}
		cur = n.Parent
	}
	for i := len(chain) - 1; i >= 0; i-- {
		top = top.Child(chain[i])
		a.cache[chain[i]] = top
	}
	return top
}

// Pin makes sure node id's path in B is p: once a round's puts are made,
// a node whose path its parents no longer give (a held node, whose
// ancestors moved or went) keeps it as its own.
func (a *Applied) Pin(id string, p *Path) {
	if p == nil || a.Path(id).Equal(p) {
		return
	}
	n := a.Get(id)
	if n == nil {
		return
	}
	n.pin = p.IDs()
	a.state.put(keyOf('a', id), n.encode())
	clear(a.cache) // the paths below it change
}

// Path is a node's path from its root as a list shared with its
// ancestors' paths (the node's id first, then up): the paths of a tree take
// memory in proportion to its nodes, not to the sum of their depths. A Path
// is never changed once made.
type Path struct {
	id    string
	up    *Path
	depth int
}

func pathOf(ids []string) *Path {
	var p *Path
	for _, id := range ids {
		p = p.Child(id)
	}
	return p
}

// Child is the path of a child id of p's node (a root's when p is nil).
func (p *Path) Child(id string) *Path {
	if p == nil {
		return &Path{id: id}
	}
	return &Path{id: id, up: p, depth: p.depth + 1}
}

// Depth is the node's depth (0 for a root).
func (p *Path) Depth() int { return p.depth }

// IDs is the path, root first (nil for a nil p).
func (p *Path) IDs() []string {
	if p == nil {
		return nil
	}
	out := make([]string, p.depth+1)
	for q := p; q != nil; q = q.up {
		out[q.depth] = q.id
	}
	return out
}

// Equal says p and q hold the same ids.
func (p *Path) Equal(q *Path) bool {
	for ; p != q; p, q = p.up, q.up {
		if p == nil || q == nil || p.depth != q.depth || p.id != q.id {
			return false
		}
	}
	return true
}
