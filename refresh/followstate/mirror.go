package followstate

import (
	"encoding/binary"
	"errors"
	"strings"
	"time"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/itemdigest"
	"github.com/treeport/treeport/internal/streams"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// Claim is what one item of A says of its node: a node's state as the item
// images in the stream give it.
type Claim struct {
	ID, Parent string
	Digest     uint64
	attrs      []byte // DynamoDB JSON
	// rec is the record that made the claim (appendRecord's; of none: the
	// copy), read only for reports (Mirror.Record).
	rec []byte
	// Bad: the key's item no longer reads as a node of A's layout (why);
	// the claim keeps the node's last state, and the node is held.
	Bad error
}

// Attrs are the attributes of c's node (none after an error of the
// store's, which Err tells).
func (m *Mirror) Attrs(c *Claim) transform.Attrs {
	a, err := decodeAttrs(c.attrs)
	m.fail(err)
	return a
}

// PutClaim says B holds the node as claim c gives it, with children or
// not (the copy's nodes).
func (a *Applied) PutClaim(c *Claim, inner bool) {
	a.put(c.ID, &Node{Parent: c.Parent, Digest: c.Digest, Inner: inner, attrs: c.attrs})
}

func decodeAttrs(b []byte) (transform.Attrs, error) {
	a, err := ddbjson.DecodeItem(b)
	if err != nil {
		err = errors.Join(errCorrupt, err)
	}
	if a == nil {
		a = transform.Attrs{}
	}
	return a, err
}

func (c *Claim) encode() []byte {
	e := enc(nil).str(c.ID).str(c.Parent).u64(c.Digest).bytes(c.attrs).flag(c.Bad != nil)
	if c.Bad != nil {
		e = e.str(c.Bad.Error())
	}
	if c.rec == nil {
		return appendRecord(e, nil)
	}
	return append(e, c.rec...)
}

func decodeClaim(b []byte) (*Claim, error) {
	d := &dec{b: b}
	c := &Claim{ID: d.str(), Parent: d.str(), Digest: d.u64(), attrs: d.bytes()}
	if d.flag() {
		c.Bad = errors.New(d.str())
	}
	c.rec, d.b = d.b, nil
	return c, d.err
}

// Record is the record that made claim c (nil: the copy).
func (m *Mirror) Record(c *Claim) *streams.Record {
	d := &dec{b: c.rec}
	r := readRecord(d)
	m.fail(d.err)
	return r
}

// appendRecord is where a record is in the stream, for reports: not its
// images.
func appendRecord(e enc, r *streams.Record) enc {
	e = e.flag(r != nil)
	if r == nil {
		return e
	}
	return e.str(r.Shard).str(r.Seq).str(r.Event).bytes(ddbjson.AppendItem(nil, r.Keys)).u64(uint64(r.Created.UnixNano()))
}

func readRecord(d *dec) *streams.Record {
	if !d.flag() {
		return nil
	}
	r := &streams.Record{Shard: d.str(), Seq: d.str(), Event: d.str()}
	keys := d.bytes()
	r.Created = time.Unix(0, int64(d.u64())).UTC()
	if d.err == nil {
		var err error
		if r.Keys, err = ddbjson.DecodeItem(keys); err != nil {
			d.err = errors.Join(errCorrupt, err)
		}
	}
	return r
}

// Mirror is A's forest as A's node items hold it, kept from the copy and
// the stream's item images: the state of every item, not its changes, so
// that a record read twice, or one older than the copy, does no harm (the
// newest record of every key comes last and wins).
type Mirror struct {
	*state
	l layouts.Layout
	// implicit: A's layout reads an ancestor that its descendants' path
	// ids name but that has no item as a node without attributes; the
	// links then hold every link of each claim's path up to its root, so
	// that such a node has children (and is present) as long as an item is
	// below it.
	implicit bool
	// Parents: B gives an inner node without attributes no item, so a
	// claim's coming or going changes its parent's items there too.
	Parents bool
	spec    layouts.TableSpec
	digests itemdigest.Digester
	empty   []byte // {} as DynamoDB JSON
}

// New is the follow's state: A's mirror for layout l in ms, and B's nodes
// in as (another store: B's nodes are seeded while the mirror is read).
func New(l layouts.Layout, ms, as Store) (*Mirror, *Applied) {
	m := &Mirror{state: &state{s: ms}, l: l, implicit: layouts.ReadsImplicit(l), spec: l.Table(), empty: ddbjson.AppendItem(nil, transform.Attrs{})}
	return m, &Applied{state: &state{s: as}, cache: map[string]*Path{}}
}

// Nodes calls fn with the claim of each node A's items make (Target's;
// the first claim where they disagree), and whether it has children: a
// copy's nodes, in no particular order. fn may read the mirror but not
// change it.
func (m *Mirror) Nodes(fn func(c *Claim, inner bool)) {
	last := ""
	each := func(id string) {
		if id == last {
			return
		}
		last = id
		if c, present, _ := m.Target(id); present {
			fn(c, m.HasChildren(id))
		}
	}
	idOf := func(k []byte) string {
		n, w := binary.Uvarint(k[1:])
		if w <= 0 || uint64(len(k)-1-w) < n {
			m.fail(errCorrupt)
			return ""
		}
		return string(k[1+w : 1+w+int(n)])
	}
	m.ascend([]byte{'i'}, func(k, _ []byte) error {
		each(idOf(k))
		return m.err
	})
	if m.implicit {
		// The nodes that path ids imply: parents with no item.
		last = ""
		m.ascend([]byte{'c'}, func(k, _ []byte) error {
			if id := idOf(k); id != "" && id != last && !m.any(key2('i', id, "")) {
				each(id)
			}
			return m.err
		})
	}
}

// Err is the first error of the store (or of a value it held), after which
// the state is not to be trusted.
func (st *state) Err() error { return st.err }

// Spec is A's table.
func (m *Mirror) Spec() layouts.TableSpec { return m.spec }

// Layout is A's layout.
func (m *Mirror) Layout() layouts.Layout { return m.l }

// Digest is the digest of attrs, as claims' and B's nodes' are made.
func (m *Mirror) Digest(attrs transform.Attrs) uint64 { return m.digests.Item(attrs) }

func (m *Mirror) claim(key string) *Claim {
	v, ok := m.get(keyOf('k', key))
	if !ok {
		return nil
	}
	c, err := decodeClaim(v)
	m.fail(err)
	return c
}

// Gone is the record that removed the last item of node id while some
// item still names it as its parent: where A stopped being a valid tree
// there, for reports (see Prune).
func (m *Mirror) Gone(id string) *streams.Record {
	v, ok := m.get(keyOf('g', id))
	if !ok {
		return nil
	}
	d := &dec{b: v}
	r := readRecord(d)
	m.fail(d.err)
	return r
}

// Prune forgets the removals that no item names as a parent any more.
func (m *Mirror) Prune() {
	var ids []string
	m.ascend([]byte{'g'}, func(k, _ []byte) error {
		ids = append(ids, string(k[1:]))
		return nil
	})
	for _, id := range ids {
		if !m.HasChildren(id) {
			m.del(keyOf('g', id))
		}
	}
}

func keyOf(tag byte, s string) []byte { return append([]byte{tag}, s...) }

// put makes c the claim of key, which has none (drop).
func (m *Mirror) put(key string, c *Claim) {
	m.state.put(keyOf('k', key), c.encode())
	m.del(keyOf('g', c.ID))
	m.state.put(key2('i', c.ID, key), nil)
	m.links(c, func(parent, child string) { m.count(parent, child, 1) })
}

// key2 is tag, a length-prefixed, then b.
func key2(tag byte, a, b string) []byte {
	k := binary.AppendUvarint([]byte{tag}, uint64(len(a)))
	return append(append(k, a...), b...)
}

// count adds d to the claims that link child to parent.
func (m *Mirror) count(parent, child string, d int64) {
	k := key2('c', parent, child)
	var n int64
	if v, ok := m.get(k); ok {
		x, _ := binary.Varint(v)
		n = x
	}
	if n += d; n <= 0 {
		m.del(k)
		return
	}
	m.state.put(k, binary.AppendVarint(nil, n))
}

// ImpliedParent is the parent a path id names: the id without its last
// name ("" for a root's).
func ImpliedParent(l layouts.Layout, id string) string {
	if i := strings.LastIndex(id, l.Delimiter()); i > 0 {
		return id[:i]
	}
	return ""
}

// links calls fn with the link from the claim's node to its parent, and,
// when A reads implicit nodes, each link above it that its path id names.
func (m *Mirror) links(c *Claim, fn func(parent, child string)) {
	fn(c.Parent, c.ID)
	for child := c.Parent; m.implicit && child != ""; {
		parent := ImpliedParent(m.l, child)
		fn(parent, child)
		child = parent
	}
}

// dropClaim forgets c, the claim of key; it returns the id it was about
// ("" when there was none).
func (m *Mirror) dropClaim(key string, c *Claim) string {
	if c == nil {
		return ""
	}
	m.del(keyOf('k', key))
	m.del(key2('i', c.ID, key))
	m.links(c, func(parent, child string) { m.count(parent, child, -1) })
	return c.ID
}

// Item takes an item image of A (the copy's or a record's) as the state
// of its key: a node item is a claim, anything else none. It returns the
// ids whose state it may have changed.
func (m *Mirror) Item(key string, item layouts.Item, rec *streams.Record) (ids []string, err error) {
	old := m.claim(key)
	var now *Claim // key's claim after
	defer func() {
		// The implicit nodes above a claim come and go with it; with
		// implicit inner nodes in B, its parent's items may change.
		for _, c := range []*Claim{old, now} {
			switch {
			case c == nil || c.Bad != nil:
			case m.implicit:
				m.links(c, func(parent, _ string) {
					if parent != "" {
						ids = append(ids, parent)
					}
				})
			case m.Parents && c.Parent != "":
				ids = append(ids, c.Parent)
			}
		}
	}()
	if old != nil {
		ids = append(ids, old.ID)
	}
	if item != nil && m.l.IsNode(layouts.MapView(item)) {
		r, ok, rerr := m.l.Node(item)
		switch {
		case rerr != nil && old != nil:
			// The key held a node: A is not a valid tree there until the
			// item reads again; the node keeps its last state, held.
			bad := *old
			bad.rec, bad.Bad = appendRecord(nil, rec), rerr
			now = &bad
		case rerr == nil && ok:
			now = &Claim{ID: r.ID, Parent: r.Parent, attrs: ddbjson.AppendItem(nil, r.Attrs), Digest: m.digests.Item(r.Attrs), rec: appendRecord(nil, rec)}
		}
		err = rerr
	}
	if old != nil && now != nil && old.ID == now.ID && old.Parent == now.Parent {
		// The same node in the same place: only the claim changes.
		m.state.put(keyOf('k', key), now.encode())
	} else {
		if id := m.dropClaim(key, old); id != "" && rec != nil && !m.any(key2('i', id, "")) {
			m.state.put(keyOf('g', id), appendRecord(nil, rec))
		}
		if now != nil {
			m.put(key, now)
		}
	}
	if now != nil && now.Bad == nil {
		ids = append(ids, now.ID)
	}
	return ids, err
}

// Claims are the claims of node id's items, in their keys' order.
func (m *Mirror) Claims(id string) []*Claim {
	var keys []string
	prefix := key2('i', id, "")
	m.ascend(prefix, func(k, _ []byte) error {
		keys = append(keys, string(k[len(prefix):]))
		return nil
	})
	out := make([]*Claim, 0, len(keys))
	for _, k := range keys {
		if c := m.claim(k); c != nil {
			out = append(out, c)
		}
	}
	return out
}

// Target is the state A gives the node: present or not, and whether its
// items disagree (two node items of one id with different parents or
// attributes, as in the middle of a prefix-layout move).
// An item that does not read as a node (Claim.Bad) is a conflict too, and
// is the claim returned.
func (m *Mirror) Target(id string) (c *Claim, present, conflict bool) {
	claims := m.Claims(id)
	if len(claims) == 0 && m.implicit && m.HasChildren(id) {
		// An implicit node: no item, named by the path ids below it.
		return &Claim{ID: id, Parent: ImpliedParent(m.l, id), attrs: m.empty, Digest: m.digests.Item(transform.Attrs{})}, true, false
	}
	for _, x := range claims {
		if x.Bad != nil {
			return x, true, true
		}
		if c == nil {
			c = x
			continue
		}
		if x.Parent != c.Parent || x.Digest != c.Digest {
			conflict = true
		}
	}
	return c, c != nil, conflict
}

// Children are the ids that some item of A places under id, sorted.
func (m *Mirror) Children(id string) []string {
	var out []string
	prefix := key2('c', id, "")
	m.ascend(prefix, func(k, _ []byte) error {
		out = append(out, string(k[len(prefix):]))
		return nil
	})
	return out
}

// HasChildren says whether some item of A places a node under id.
func (m *Mirror) HasChildren(id string) bool { return m.any(key2('c', id, "")) }
