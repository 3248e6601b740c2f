package layouts

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/transform"
)

// Attr is one attribute of an item: its name and its value.
type Attr struct {
	Name  string
	Value types.AttributeValue
}

// FlatNode is a node as AppendItems takes it: transform.Node with the
// node's own attributes as a slice instead of a map.
type FlatNode struct {
	ID     string
	Parent string // "" for a root
	// Depth is 0 at a root; Path holds the ids from the root to the node,
	// both included, as in transform.Node.
	Depth int
	Path  []string
	// PathText, when not "", is the ids of Path joined by PathDelim,
	// exactly strings.Join(Path, PathDelim), which the caller had at hand:
	// a layout whose keys join Path by that delimiter takes it as it is
	// instead of joining Path again.
	//
	// Path may then be nil, for a layout of which TakesPathText says so
	// (path, sharded-path and prefix): they need no more when PathDelim is
	// theirs and the text shows that no id holds it. When they cannot
	// tell, AppendItems returns ErrPathNeeded having emitted nothing: call
	// it again with Path.
	PathText, PathDelim string
	// Attrs are the node's own attributes, each name at most once.
	Attrs []Attr
	// Inner says that the node has children (transform.Node.Inner).
	Inner bool

	// What SetPath set, to tell that it has not been changed since.
	set setPath
}

// setPath is where the strings SetPath gave a FlatNode are, and their
// lengths, when its text splits back into the node's path (text is 0
// otherwise). They are kept as numbers, which the garbage collector need
// not be told of: the strings themselves are the node's fields.
type setPath struct {
	text, id, parent, delim    uintptr
	ntext, nid, nparent, depth int
}

// SetPath sets n's ID, Parent, Depth, PathText and PathDelim to those of
// node i of the forest whose paths p joins, with the text in buf's memory,
// and Path to nil. It returns that memory, for the next call.
//
// The text is then known to be the node's path, joined from the forest's
// own ids: when p.Splits(i) (no id of the forest holds the delimiter), the
// path, sharded-path and prefix layouts take it as it is, without the
// checks of a PathText given by hand, for as long as these fields hold
// what SetPath set.
func (n *FlatNode) SetPath(p *transform.PathTexts, i int, buf []byte) []byte {
	f := p.Forest()
	buf = p.Append(buf[:0], i)
	n.ID, n.Parent, n.Depth, n.Path = f.ID(i), "", f.Depth(i), nil
	if q := f.Parent(i); q >= 0 {
		n.Parent = f.ID(q)
	}
	n.PathText, n.PathDelim = unsafe.String(unsafe.SliceData(buf), len(buf)), p.Delim()
	if len(buf) > 0 && p.Splits(i) {
		n.set = setPath{text: addr(n.PathText), id: addr(n.ID), parent: addr(n.Parent), delim: addr(n.PathDelim),
			ntext: len(n.PathText), nid: len(n.ID), nparent: len(n.Parent), depth: n.Depth}
	} else {
		n.set = setPath{}
	}
	return buf
}

// splits reports whether n's PathText is what SetPath set, for a forest
// whose ids do not hold delim, and the other fields are still as it set
// them.
func (n *FlatNode) splits(delim string) bool {
	s := &n.set
	return s.text != 0 && addr(n.PathText) == s.text && len(n.PathText) == s.ntext &&
		addr(n.ID) == s.id && len(n.ID) == s.nid && addr(n.Parent) == s.parent && len(n.Parent) == s.nparent &&
		n.Depth == s.depth && n.Path == nil && addr(n.PathDelim) == s.delim && len(n.PathDelim) == len(delim) &&
		(s.delim == addr(delim) || n.PathDelim == delim)
}

// addr is where s is in memory.
func addr(s string) uintptr { return uintptr(unsafe.Pointer(unsafe.StringData(s))) }

// joinedPath returns the ids of n.Path joined by delim: n.PathText when it
// is that, and otherwise the join appended to b.text.
func (b *ItemBuffer) joinedPath(n *FlatNode, delim string) string {
	if n.PathText != "" && n.PathDelim == delim {
		return n.PathText
	}
	return b.appendPath(n.Path, delim)
}

// ItemBuffer is the memory AppendItems builds items in: the attribute slice,
// the layout attributes' values and their text. It is reused from one item
// to the next, so that building an item allocates nothing. The zero value
// is ready to use. An ItemBuffer is not safe for concurrent use; give each
// goroutine its own.
type ItemBuffer struct {
	attrs []Attr
	text  []byte
	s     [4]types.AttributeValueMemberS
	n     types.AttributeValueMemberN
	// head is a path item: the layout attributes of headOf, pointing at
	// s and n, and then the node's own.
	head   []Attr
	headOf *pathLayout
}

// reset starts a new node: the text of the last one may be overwritten.
func (b *ItemBuffer) reset() { b.text = b.text[:0] }

// str returns the text appended to b.text since start, as a string that is
// valid until the next reset.
func (b *ItemBuffer) str(start int) string {
	t := b.text[start:]
	if len(t) == 0 {
		return ""
	}
	return unsafe.String(&t[0], len(t))
}

// appendPath appends the ids of path joined by delim to b.text and returns
// them as a string valid until the next reset. A path of one id is that id,
// without a copy.
func (b *ItemBuffer) appendPath(path []string, delim string) string {
	if len(path) == 1 {
		return path[0]
	}
	n := len(delim) * (len(path) - 1)
	for _, id := range path {
		n += len(id)
	}
	start := len(b.text)
	b.text = slices.Grow(b.text, n)[:start+n]
	t := b.text[start:]
	k := copy(t, path[0])
	if len(delim) == 1 {
		d := delim[0]
		for _, id := range path[1:] {
			t[k] = d
			k += 1 + copy(t[k+1:], id)
		}
	} else {
		for _, id := range path[1:] {
			k += copy(t[k:], delim)
			k += copy(t[k:], id)
		}
	}
	return b.str(start)
}

// appendInt appends n's decimal text and returns it, valid until the next
// reset.
func (b *ItemBuffer) appendInt(n int) string {
	if 0 <= n && n < 10 {
		return digits1[n : n+1] // a constant's piece: no copy, no allocation
	}
	if 10 <= n && n < 100 {
		return digits2[2*n-20 : 2*n-18]
	}
	start := len(b.text)
	b.text = strconv.AppendInt(b.text, int64(n), 10)
	return b.str(start)
}

const (
	digits1 = "0123456789"
	digits2 = "10111213141516171819202122232425262728293031323334353637383940414243444546474849" +
		"50515253545556575859606162636465666768697071727374757677787980818283848586878889" +
		"90919293949596979899"
)

// ItemOf returns the item the attributes make, as Items would give it: a
// fresh map. The values are copied, so the map stays valid after the
// ItemBuffer they came from is reused.
func ItemOf(attrs []Attr) Item {
	item := make(Item, len(attrs))
	for _, a := range attrs {
		item[a.Name] = CloneValue(a.Value)
	}
	return item
}

// CloneValue returns a deep copy of v, sharing no memory with it: the
// strings and byte slices are copied too. A nil slice or map stays nil.
func CloneValue(v types.AttributeValue) types.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return &types.AttributeValueMemberS{Value: strings.Clone(v.Value)}
	case *types.AttributeValueMemberN:
		return &types.AttributeValueMemberN{Value: strings.Clone(v.Value)}
	case *types.AttributeValueMemberB:
		return &types.AttributeValueMemberB{Value: cloneBytes(v.Value)}
	case *types.AttributeValueMemberBOOL:
		return &types.AttributeValueMemberBOOL{Value: v.Value}
	case *types.AttributeValueMemberNULL:
		return &types.AttributeValueMemberNULL{Value: v.Value}
	case *types.AttributeValueMemberSS:
		return &types.AttributeValueMemberSS{Value: cloneSlice(v.Value, strings.Clone)}
	case *types.AttributeValueMemberNS:
		return &types.AttributeValueMemberNS{Value: cloneSlice(v.Value, strings.Clone)}
	case *types.AttributeValueMemberBS:
		return &types.AttributeValueMemberBS{Value: cloneSlice(v.Value, cloneBytes)}
	case *types.AttributeValueMemberL:
		return &types.AttributeValueMemberL{Value: cloneSlice(v.Value, CloneValue)}
	case *types.AttributeValueMemberM:
		if v.Value == nil {
			return &types.AttributeValueMemberM{}
		}
		m := make(map[string]types.AttributeValue, len(v.Value))
		for k, e := range v.Value {
			m[strings.Clone(k)] = CloneValue(e)
		}
		return &types.AttributeValueMemberM{Value: m}
	}
	return v
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func cloneSlice[T any](s []T, clone func(T) T) []T {
	if s == nil {
		return nil
	}
	out := make([]T, len(s))
	for i, e := range s {
		out[i] = clone(e)
	}
	return out
}

// node is n as checkShape and checkDelims take it (without attributes).
func (n *FlatNode) node() transform.Node {
	return transform.Node{Record: transform.Record{ID: n.ID, Parent: n.Parent}, Depth: n.Depth, Path: n.Path, Inner: n.Inner}
}

// checkFlatAttrs is checkAttrs for a FlatNode: no user attribute may have a
// layout attribute's name, nor, for prefix, start with the delimiter. rs
// is the layout's reservedSet.
func (b *base) checkFlatAttrs(rs *reservedSet, n *FlatNode) error {
	for _, a := range n.Attrs {
		if rs.maybe(a.Name) && b.reservedName(a.Name) {
			return fmt.Errorf("layouts: node %q: %w", n.ID, b.attrNameError(a.Name))
		}
	}
	return nil
}

// reservedSet tells at a glance most names that are not reserved: by their
// first byte and their length. It has a bit for every name reservedName
// may hold reserved, and for a few more.
type reservedSet struct {
	byFirst [256]uint64 // bit len(name), or every bit for a name of 63 bytes or more
}

func newReservedSet(b *base) reservedSet {
	var rs reservedSet
	for _, r := range b.attrs {
		if len(r) < 63 {
			rs.byFirst[r[0]] |= 1 << len(r)
		} else {
			rs.byFirst[r[0]] = ^uint64(0)
		}
	}
	if b.layout == PrefixName {
		rs.byFirst[b.delim[0]] = ^uint64(0)
	}
	return rs
}

// maybe is false when reservedName(name) is false for sure.
func (rs *reservedSet) maybe(name string) bool {
	if len(name) == 0 {
		return true
	}
	return rs.byFirst[name[0]]&(1<<min(len(name), 63)) != 0
}

// reservedName reports whether a user attribute may not be called name:
// attrNameError's rule, without building the error.
func (b *base) reservedName(name string) bool {
	for _, r := range b.attrs {
		if len(r) == len(name) && r == name {
			return true
		}
	}
	return b.layout == PrefixName && strings.HasPrefix(name, b.delim)
}

// TakesPathText reports whether l builds its items from a FlatNode's
// PathText without its Path (see FlatNode). A Layout of another
// package is given the Path.
func TakesPathText(l Layout) bool {
	t, ok := l.(interface{ takesPathText() bool })
	return ok && t.takesPathText()
}

func (l *pathLayout) takesPathText() bool   { return !l.pathIDs }
func (l *prefixLayout) takesPathText() bool { return !l.pathIDs }

// textOnly reports whether n comes with its PathText and no Path.
func (n *FlatNode) textOnly() bool { return n.Path == nil && n.PathText != "" }

// ErrPathNeeded is AppendItems' answer to a FlatNode without Path that it
// cannot build the items of from PathText alone.
var ErrPathNeeded = errors.New("layouts: the node's Path is needed")

// checkText is checkShape and checkDelims for a FlatNode without Path, on
// its PathText, and returns the root's id, the text's first. It returns
// ErrPathNeeded unless the text is the layout's and holds exactly Depth
// delimiters (then no id holds one: each would add one more; and a
// delimiter, one character, is found only where it is), ends with ID, and
// has Parent before it, or none at a root.
func (b *base) checkText(n *FlatNode) (root string, err error) {
	t, d := n.PathText, b.delim
	if n.splits(d) {
		// SetPath's: the forest's ids, none holding d, joined by d.
		if n.Depth == 0 {
			return t, nil
		}
		if len(d) == 1 {
			return t[:strings.IndexByte(t, d[0])], nil
		}
		return t[:strings.Index(t, d)], nil
	}
	if n.ID == "" || n.PathDelim != d || d == "" || n.Depth < 0 || strings.Count(t, d) != n.Depth {
		return "", ErrPathNeeded
	}
	if n.Depth == 0 {
		if t != n.ID || n.Parent != "" {
			return "", ErrPathNeeded
		}
		return t, nil
	}
	// root d … d parent d id, where the parent is the root at depth 1.
	above := len(t) - len(n.ID) - len(d) // where the parent ends
	if above <= 0 || t[above:above+len(d)] != d || t[above+len(d):] != n.ID {
		return "", ErrPathNeeded
	}
	from := 0 // where the parent starts: after the delimiter before it, but for a root
	if len(d) == 1 {
		// The parent is short: a loop costs less than LastIndex's call.
		for i := above - 1; i >= 0; i-- {
			if t[i] == d[0] {
				from = i + 1
				break
			}
		}
	} else if i := strings.LastIndex(t[:above], d); i >= 0 {
		from = i + len(d)
	}
	if n.Parent == "" || t[from:above] != n.Parent {
		return "", ErrPathNeeded
	}
	return t[:strings.Index(t, d)], nil
}

// checkFlatNode is checkNode for a FlatNode.
func (b *base) checkFlatNode(rs *reservedSet, n *FlatNode) error {
	if n.textOnly() {
		if _, err := b.checkText(n); err != nil {
			return err
		}
		return b.checkFlatAttrs(rs, n)
	}
	node := n.node()
	if err := b.checkShape(&node); err != nil {
		return err
	}
	if err := b.checkDelims(&node); err != nil {
		return err
	}
	return b.checkFlatAttrs(rs, n)
}
