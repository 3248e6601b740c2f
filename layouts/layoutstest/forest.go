package layoutstest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// Forest is a test forest: its nodes as the layouts take them, and their
// Stats as the forest builder computes them, built here independently.
type Forest struct {
	Nodes   []*transform.Node
	Stats   []transform.Stats
	Parents []int // index of each node's parent, -1 for a root
}

// NewForest builds a forest from parent indexes; parents[i] < i, or -1.
func NewForest(ids []string, parents []int, attrs []transform.Attrs) *Forest {
	n := len(ids)
	f := &Forest{Nodes: make([]*transform.Node, n), Stats: make([]transform.Stats, n), Parents: parents}
	root := make([]int, n)
	roots := 0
	for i := range n {
		node := &transform.Node{Record: transform.Record{ID: ids[i], Attrs: attrs[i]}}
		s := &f.Stats[i]
		s.ID = ids[i]
		s.AttrBytes = transform.AttrsSize(attrs[i])
		if p := parents[i]; p >= 0 {
			pn := f.Nodes[p]
			node.Parent = pn.ID
			node.Depth = pn.Depth + 1
			node.Path = append(append([]string(nil), pn.Path...), ids[i])
			root[i] = root[p]
			s.ParentID = pn.ID
			s.PathBytes = f.Stats[p].PathBytes + len(ids[i])
			s.MaxAncestorIDBytes = max(f.Stats[p].MaxAncestorIDBytes, len(pn.ID))
			f.Stats[p].Children++
		} else {
			node.Path = []string{ids[i]}
			root[i] = i
			roots++
			s.PathBytes = len(ids[i])
		}
		s.Depth = node.Depth
		s.RootID = ids[root[i]]
		f.Nodes[i] = node
	}
	treeSize := make([]int, n)
	for i := n - 1; i >= 0; i-- {
		f.Stats[i].Subtree++
		if p := parents[i]; p >= 0 {
			f.Stats[p].Subtree += f.Stats[i].Subtree
		}
		treeSize[root[i]]++
	}
	for i := range n {
		f.Stats[i].TreeSize = treeSize[root[i]]
		f.Stats[i].Roots = roots
	}
	return f
}

// StatsFor returns node i's Stats with CopyBytes filled in for layout l.
func (f *Forest) StatsFor(l layouts.Layout, i int) *transform.Stats {
	s := f.Stats[i]
	s.CopyBytes = layouts.CopyBytes(l, f.Nodes[i].Attrs)
	return &s
}

// Descendants returns, for node i, its descendants' indexes and their
// distance below it.
func (f *Forest) Descendants(i int) map[int]int {
	out := map[int]int{}
	for j := range f.Nodes {
		d := 0
		for k := j; k >= 0; k = f.Parents[k] {
			if k == i && j != i {
				out[j] = d
				break
			}
			d++
		}
	}
	return out
}

// SpecialIDs are ids that break naive code: separators of CSV and JSON,
// quotes, spaces, non-ASCII, and CM2 beside CM20.
var SpecialIDs = []string{
	"CM1", "CM2", "CM20", "CM200", "CM3", "a b", " lead", "trail ", `qu"ote`, "it's", "com,ma",
	"semi;colon", `back\slash`, "tab\tx", "new\nline", "😀", "emoji😀🌳", "naïve", "日本語", "Ω",
	"#", "a#1", "0", "-1", "null", "{}", "<tag>", "%s", "\u00a0nbsp",
}

// idRunes are what random ids are made of. None is a delimiter the variants
// use: '|', '¦' and '/'.
var idRunes = []rune("abcXYZ019 _-.,;:'\"\\#@!?()[]{}<>=+*&^%$~`éüßñΩж中文😀🌳\t")

// RandomID is a random id not in used, which it is added to.
func RandomID(rng *rand.Rand, used map[string]bool) string {
	for {
		var id string
		if rng.IntN(3) == 0 {
			id = SpecialIDs[rng.IntN(len(SpecialIDs))]
		} else {
			var b strings.Builder
			for range 1 + rng.IntN(12) {
				b.WriteRune(idRunes[rng.IntN(len(idRunes))])
			}
			id = b.String()
		}
		if !used[id] {
			used[id] = true
			return id
		}
	}
}

// attrNames are user attribute names; none is a layout's, renamed or not.
var attrNames = []string{"name", "size", "tags", "meta", "flag", "nothing", "blob", "empty", "set", "nums",
	"bins", "Ünï", "with space", "with,comma", "id", "parent_id", "path", "x"}

var numbers = []string{"0", "1", "-1", "3.14", "-0.001", "1e10", "100", "12345678901234567890123456789012345678", "5E-3", "0.10"}

func randomValue(rng *rand.Rand, depth int, large bool) types.AttributeValue {
	kinds := 10
	if depth >= 2 {
		kinds = 7 // no more nesting
	}
	switch rng.IntN(kinds) {
	case 0:
		n := rng.IntN(20)
		if large && rng.IntN(3) == 0 {
			n = rng.IntN(3000)
		}
		return &types.AttributeValueMemberS{Value: RandomText(rng, n)}
	case 1:
		return &types.AttributeValueMemberN{Value: numbers[rng.IntN(len(numbers))]}
	case 2:
		b := make([]byte, rng.IntN(10))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return &types.AttributeValueMemberB{Value: b}
	case 3:
		return &types.AttributeValueMemberBOOL{Value: rng.IntN(2) == 0}
	case 4:
		return &types.AttributeValueMemberNULL{Value: true}
	case 5:
		return &types.AttributeValueMemberS{Value: ""}
	case 6:
		return &types.AttributeValueMemberSS{Value: []string{"a", RandomText(rng, 5)}}
	case 7:
		l := make([]types.AttributeValue, rng.IntN(4))
		for i := range l {
			l[i] = randomValue(rng, depth+1, large)
		}
		return &types.AttributeValueMemberL{Value: l}
	case 8:
		m := map[string]types.AttributeValue{}
		for range rng.IntN(4) {
			m[attrNames[rng.IntN(len(attrNames))]] = randomValue(rng, depth+1, large)
		}
		return &types.AttributeValueMemberM{Value: m}
	default:
		return &types.AttributeValueMemberNS{Value: []string{"1", "2.5"}}
	}
}

// RandomText is n random runes of the ids' alphabet.
func RandomText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteRune(idRunes[rng.IntN(len(idRunes))])
	}
	return b.String()
}

func randomAttrs(rng *rand.Rand, large bool) transform.Attrs {
	attrs := transform.Attrs{}
	for range rng.IntN(6) {
		attrs[attrNames[rng.IntN(len(attrNames))]] = randomValue(rng, 0, large)
	}
	return attrs
}

// RandomForest draws a forest of 1 to maxNodes nodes, in one of a few
// shapes: bushy, deep chains, wide fans, or many small trees.
func RandomForest(rng *rand.Rand, maxNodes int, large bool) *Forest {
	n := 1 + rng.IntN(maxNodes)
	shape := rng.IntN(4)
	used := map[string]bool{}
	ids := make([]string, n)
	parents := make([]int, n)
	attrs := make([]transform.Attrs, n)
	for i := range n {
		ids[i] = RandomID(rng, used)
		attrs[i] = randomAttrs(rng, large)
		switch {
		case i == 0:
			parents[i] = -1
		case shape == 0: // bushy
			parents[i] = rng.IntN(i+1) - 1
		case shape == 1: // deep
			parents[i] = i - 1
			if rng.IntN(8) == 0 {
				parents[i] = rng.IntN(i)
			}
		case shape == 2: // wide
			parents[i] = 0
		default: // many small trees
			parents[i] = rng.IntN(i+1) - 1
			if rng.IntN(3) == 0 {
				parents[i] = -1
			}
		}
	}
	return NewForest(ids, parents, attrs)
}

// SmallForest is the hand-written forest of the golden files:
// CM1{CM2{CM4{CM8}},CM20}, CM3, and Ω{"é 1", `q,"uote`}.
func SmallForest() *Forest {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	ids := []string{"CM1", "CM2", "CM4", "CM8", "CM20", "CM3", "Ω", "é 1", `q,"uote`}
	parents := []int{-1, 0, 1, 2, 0, -1, -1, 6, 6}
	attrs := []transform.Attrs{
		{"name": s("assembly"), "size": &types.AttributeValueMemberN{Value: "12.5"}},
		{"name": s("frame"), "tags": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("steel"), &types.AttributeValueMemberNULL{Value: true}}}},
		{"meta": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"ok": &types.AttributeValueMemberBOOL{Value: true}}}},
		{"blob": &types.AttributeValueMemberB{Value: []byte{0, 1, 2}}},
		{"empty": s("")},
		{},
		{"name": s("ωmega")},
		{"nums": &types.AttributeValueMemberNS{Value: []string{"1", "2"}}},
		{"set": &types.AttributeValueMemberSS{Value: []string{"a", "b"}}},
	}
	return NewForest(ids, parents, attrs)
}

// DDBJSON encodes an item as one line of DynamoDB JSON, attributes sorted,
// as DynamoDB's export to S3 writes it.
func DDBJSON(item layouts.Item) string {
	var b strings.Builder
	b.WriteString(`{"Item":`)
	writeMap(&b, item)
	b.WriteString("}")
	return b.String()
}

func writeMap(b *strings.Builder, m map[string]types.AttributeValue) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(b, k)
		b.WriteByte(':')
		writeValue(b, m[k])
	}
	b.WriteByte('}')
}

func writeString(b *strings.Builder, s string) {
	j, _ := json.Marshal(s)
	b.Write(j)
}

func writeValue(b *strings.Builder, v types.AttributeValue) {
	list := func(tag string, n int, elem func(int)) {
		fmt.Fprintf(b, `{"%s":[`, tag)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			elem(i)
		}
		b.WriteString("]}")
	}
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		b.WriteString(`{"S":`)
		writeString(b, v.Value)
		b.WriteByte('}')
	case *types.AttributeValueMemberN:
		b.WriteString(`{"N":`)
		writeString(b, v.Value)
		b.WriteByte('}')
	case *types.AttributeValueMemberB:
		fmt.Fprintf(b, `{"B":"%s"}`, base64.StdEncoding.EncodeToString(v.Value))
	case *types.AttributeValueMemberBOOL:
		fmt.Fprintf(b, `{"BOOL":%t}`, v.Value)
	case *types.AttributeValueMemberNULL:
		b.WriteString(`{"NULL":true}`)
	case *types.AttributeValueMemberSS:
		list("SS", len(v.Value), func(i int) { writeString(b, v.Value[i]) })
	case *types.AttributeValueMemberNS:
		list("NS", len(v.Value), func(i int) { writeString(b, v.Value[i]) })
	case *types.AttributeValueMemberBS:
		list("BS", len(v.Value), func(i int) { writeString(b, base64.StdEncoding.EncodeToString(v.Value[i])) })
	case *types.AttributeValueMemberL:
		list("L", len(v.Value), func(i int) { writeValue(b, v.Value[i]) })
	case *types.AttributeValueMemberM:
		b.WriteString(`{"M":`)
		writeMap(b, v.Value)
		b.WriteByte('}')
	default:
		fmt.Fprintf(b, `{"?":%q}`, fmt.Sprintf("%T", v))
	}
}

// keyText is a key value as Measure.Keys counts it: a string's or binary's
// bytes, a number's decimal text.
func keyText(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return v.Value
	case *types.AttributeValueMemberB:
		return string(v.Value)
	}
	return ""
}

// Str is the item's S attribute name, or "".
func Str(item layouts.Item, name string) string {
	if s, ok := item[name].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// Num is the item's N attribute name as an int, or -1.
func Num(item layouts.Item, name string) int {
	if n, ok := item[name].(*types.AttributeValueMemberN); ok {
		i, err := strconv.Atoi(n.Value)
		if err == nil {
			return i
		}
	}
	return -1
}

// MeasureItems measures built items the way Layout.Measure must predict.
func MeasureItems(spec layouts.TableSpec, items []layouts.Item) *layouts.Measure {
	n := 1 + len(spec.Indexes)
	m := &layouts.Measure{Keys: make([]int, 2*n), Collections: make([]int64, n)}
	groups := make([]map[string]int64, n)
	for i := range groups {
		groups[i] = map[string]int64{}
	}
	for _, item := range items {
		size := transform.ItemSize(item)
		m.Items++
		m.Bytes += int64(size)
		m.WCU += int64(transform.WCU(size) * (1 + layouts.IndexesOf(spec, item)))
		m.IndexItems += int64(layouts.IndexesOf(spec, item))
		for _, ix := range spec.Indexes {
			if _, ok := item[ix.PK.Name]; !ok {
				continue
			}
			if ix.SK != nil {
				if _, ok := item[ix.SK.Name]; !ok {
					continue
				}
			}
			m.IndexBytes += int64(layouts.IndexItemBytes(spec, ix, item, size))
		}
		m.MaxItemBytes = max(m.MaxItemBytes, size)
		keys := []*layouts.KeyAttr{&spec.PK, spec.SK}
		for _, ix := range spec.Indexes {
			keys = append(keys, &ix.PK, ix.SK)
		}
		for g := range n {
			pk, sk := keys[2*g], keys[2*g+1]
			if _, ok := item[pk.Name]; !ok {
				continue
			}
			if sk != nil {
				if _, ok := item[sk.Name]; !ok {
					continue
				}
				m.Keys[2*g+1] = max(m.Keys[2*g+1], len(keyText(item[sk.Name])))
			}
			pkText := keyText(item[pk.Name])
			m.Keys[2*g] = max(m.Keys[2*g], len(pkText))
			groups[g][pkText]++
			m.Collections[g] = max(m.Collections[g], groups[g][pkText])
		}
	}
	return m
}

// TransformForest builds f as a transform.Forest, its rows added in a
// shuffled order (children before their parents too), and returns it with
// the forest's index of each of f's nodes.
func TransformForest(t *testing.T, rng *rand.Rand, f *Forest) (*transform.Forest, []int) {
	t.Helper()
	b := transform.NewBuilder(0, false)
	for _, k := range rng.Perm(len(f.Nodes)) {
		n := f.Nodes[k]
		b.Add(&transform.Record{ID: n.ID, Parent: n.Parent, Line: k + 2}, "line", 0, 0)
	}
	// Two nodes in a cycle, which are not placed.
	b.Add(&transform.Record{ID: "cycle-a", Parent: "cycle-b", Line: 1}, "line", 0, 0)
	b.Add(&transform.Record{ID: "cycle-b", Parent: "cycle-a", Line: 1}, "line", 0, 0)
	tf, problems := b.Build()
	if len(problems) != 1 || !errors.Is(problems[0], transform.ErrCycle) {
		t.Fatalf("problems %v, want the cycle", problems)
	}
	at := make([]int, len(f.Nodes))
	for k, n := range f.Nodes {
		if at[k] = tf.Lookup(n.ID); at[k] < 0 {
			t.Fatalf("node %q is not in the forest", n.ID)
		}
	}
	return tf, at
}

// pathNames are the names of PathIDForest: few, so that they repeat under
// different parents, and none a delimiter the variants use.
var pathNames = []string{"Accounts", "123456", "Links", "xyzpdq", "a", "CM2", "CM20", "😀", "a b", "é"}

// PathIDForest is f with path ids: each node is given a name, unique
// among its siblings but repeated under other parents, and its id is its
// parent's id, delim and its name (a root's, its name). With implicit, about
// half the inner nodes lose their attributes, so that a layout with
// ImplicitInner writes no item for them. Every node's Inner says whether it
// has children.
func PathIDForest(rng *rand.Rand, f *Forest, delim string, implicit bool) *Forest {
	n := len(f.Nodes)
	ids := make([]string, n)
	attrs := make([]transform.Attrs, n)
	taken := map[string]bool{}
	inner := make([]bool, n)
	for _, p := range f.Parents {
		if p >= 0 {
			inner[p] = true
		}
	}
	for i, p := range f.Parents {
		prefix := ""
		if p >= 0 {
			prefix = ids[p] + delim
		}
		id := prefix + pathNames[rng.IntN(len(pathNames))]
		for k := 2; taken[id]; k++ {
			id = prefix + pathNames[rng.IntN(len(pathNames))] + strconv.Itoa(k)
		}
		taken[id] = true
		ids[i] = id
		attrs[i] = f.Nodes[i].Attrs
		if implicit && inner[i] && rng.IntN(2) == 0 {
			attrs[i] = transform.Attrs{}
		}
	}
	out := NewForest(ids, f.Parents, attrs)
	for i, node := range out.Nodes {
		node.Inner = inner[i]
	}
	return out
}
