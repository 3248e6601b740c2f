package layouts_test

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/layouts/layoutstest"
	"github.com/treeport/treeport/models"
)

// The fuzz targets feed each layout's Node decoder arbitrary items, built
// from the fuzzer's bytes, under a variant of the layout's options that the
// fuzzer picks (fuzzVariants): it must never panic nor change the item,
// every error must wrap ErrItem, and a record it returns must be the node
// SPEC §3 "Rebuilding a tree from a table" reads from the item: its id and
// parent, and the item's attributes but the layout's.

func FuzzPathNode(f *testing.F)        { fuzzNode(f, layouts.PathName) }
func FuzzShardedPathNode(f *testing.F) { fuzzNode(f, layouts.ShardedName) }
func FuzzClosureNode(f *testing.F)     { fuzzNode(f, layouts.ClosureName) }
func FuzzPrefixNode(f *testing.F)      { fuzzNode(f, layouts.PrefixName) }
func FuzzAdjacencyNode(f *testing.F)   { fuzzNode(f, layouts.AdjacencyName) }

// fuzzVariant is one way of configuring a layout: its attribute names and
// its delimiter.
type fuzzVariant struct {
	// names maps each name the SPEC gives to the one the items carry.
	names map[string]string
	// delim is the delimiter the items use ("" for closure).
	delim string
	opts  layouts.Options
}

// fuzzVariants returns the variants of a layout the fuzz targets try: the
// defaults, every attribute renamed, another delimiter, and the attribute
// names permuted among themselves (Id named ParentId, and so on) with a
// multi-byte delimiter.
func fuzzVariants(tb testing.TB, name string) []fuzzVariant {
	def, err := layouts.New(name, layouts.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	canon := def.Reserved()
	defDelim := def.Delimiter()
	hasDelim := defDelim != ""
	variant := func(rename func(i int) string, delim string) fuzzVariant {
		v := fuzzVariant{names: map[string]string{}, delim: defDelim}
		if rename != nil {
			v.opts.Attr = map[string]string{}
		}
		for i, c := range canon {
			v.names[c] = c
			if rename != nil {
				v.names[c] = rename(i)
				v.opts.Attr[c] = rename(i)
			}
		}
		if hasDelim && delim != "" {
			v.opts.Delimiter, v.delim = delim, delim
		}
		return v
	}
	return []fuzzVariant{
		variant(nil, ""),
		variant(func(i int) string { return "my" + canon[i] }, ""),
		variant(nil, "/"),
		variant(func(i int) string { return canon[len(canon)-1-i] }, "→"),
	}
}

func fuzzNode(f *testing.F, name string) {
	variants := fuzzVariants(f, name)
	ls := make([]layouts.Layout, len(variants))
	for v := range variants {
		l, err := layouts.New(name, variants[v].opts)
		if err != nil {
			f.Fatal(err)
		}
		ls[v] = l
		for _, n := range layoutstest.SmallForest().Nodes {
			if err := l.Items(n, func(it layouts.Item) { f.Add(byte(v), itemToBytes(it)) }); err != nil {
				f.Fatal(err)
			}
		}
	}
	f.Add(byte(0), []byte{})
	f.Add(byte(0), []byte{2, 'I', 'd', tagNil})
	f.Add(byte(0), []byte{2, 'I', 'd', tagNilS})
	f.Fuzz(func(t *testing.T, variant byte, data []byte) {
		v := int(variant) % len(variants)
		l, names := ls[v], variants[v].names
		item := itemFromBytes(data)
		before, shallow := canonicalItem(item), maps.Clone(item)
		rec, ok, err := l.Node(item)
		if after := canonicalItem(item); after != before || !maps.Equal(item, shallow) {
			t.Fatalf("Node changed the item:\n %s\nto %s", before, after)
		}
		// The reading side's quick looks take any item without a panic,
		// and agree with Node on an item it reads.
		view := layouts.MapView(item)
		isNode, owner := l.IsNode(view), l.Owner(view)
		nid, nparent, nok := l.NodeOf(view)
		if err == nil && ok && (!isNode || !nok || nid != rec.ID || nparent != rec.Parent || owner != rec.ID) {
			t.Fatalf("Node = %q, %q; IsNode %v, NodeOf %q, %q, %v, Owner %q: %s", rec.ID, rec.Parent, isNode, nid, nparent, nok, owner, before)
		}
		if err == nil && !ok && (isNode || nok) {
			t.Fatalf("Node says not a node; IsNode %v, NodeOf %v: %s", isNode, nok, before)
		}
		if err != nil {
			if ok || !errors.Is(err, layouts.ErrItem) {
				t.Fatalf("Node = %v, %v: an error must wrap ErrItem and come with false", ok, err)
			}
			return
		}
		if !ok {
			return
		}
		if rec.ID == "" {
			t.Fatalf("Node returned a record without an id from %s", before)
		}
		id, parent := nodeOf(t, name, names, variants[v].delim, item)
		if rec.ID != id || rec.Parent != parent {
			t.Fatalf("Node = id %q, parent %q; the item says id %q, parent %q: %s", rec.ID, rec.Parent, id, parent, before)
		}
		for k, v := range rec.Attrs {
			if slices.Contains(l.Reserved(), k) {
				t.Fatalf("Node kept layout attribute %q", k)
			}
			if item[k] != v {
				t.Fatalf("Node returned attribute %q that the item does not hold", k)
			}
		}
		for k := range item {
			if _, kept := rec.Attrs[k]; !kept && !slices.Contains(l.Reserved(), k) {
				t.Fatalf("Node dropped user attribute %q of %s", k, before)
			}
		}
	})
}

// nodeOf is the id and parent of the node an item the decoder took as a
// node stands for, read as SPEC §3 says, with the variant's names and
// delimiter.
func nodeOf(t *testing.T, layout string, names map[string]string, delim string, item layouts.Item) (id, parent string) {
	t.Helper()
	str := func(canon string) string {
		v, ok := item[names[canon]]
		if !ok {
			return ""
		}
		s, ok := v.(*types.AttributeValueMemberS)
		if !ok || s == nil {
			t.Fatalf("Node took an item whose %s is %T", names[canon], v)
		}
		return s.Value
	}
	switch layout {
	case layouts.PrefixName:
		// Object rows are the nodes: Key is delim c1 delim … delim ck.
		if child := str("Child"); child != delim {
			t.Fatalf("Node took the row with %s %q, not %q, for a node", names["Child"], child, delim)
		}
		parts := strings.Split(str("Key"), delim)
		if len(parts) < 2 || parts[0] != "" {
			t.Fatalf("Node took the row with %s %q, which does not start with %q, for a node", names["Key"], str("Key"), delim)
		}
		return parts[len(parts)-1], parts[len(parts)-2]
	case layouts.ClosureName:
		// The row at RelativeDepth 0 is the node.
		rd, ok := item[names["RelativeDepth"]].(*types.AttributeValueMemberN)
		if !ok || rd == nil {
			t.Fatalf("Node took a row without an N %s for a node", names["RelativeDepth"])
		}
		if f, err := strconv.ParseFloat(rd.Value, 64); err != nil || f != 0 {
			t.Fatalf("Node took the row with %s %q for a node", names["RelativeDepth"], rd.Value)
		}
	}
	return str("Id"), str("ParentId")
}

// canonicalItem encodes an item with its names sorted, telling apart every
// value an item can hold, typed nil pointers included (which ddbJSON
// cannot encode).
func canonicalItem(item layouts.Item) string {
	var b strings.Builder
	var value func(v types.AttributeValue)
	value = func(v types.AttributeValue) {
		if rv := reflect.ValueOf(v); !rv.IsValid() || rv.Kind() == reflect.Pointer && rv.IsNil() {
			fmt.Fprintf(&b, "%T(nil)", v)
			return
		}
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			fmt.Fprintf(&b, "S%q", v.Value)
		case *types.AttributeValueMemberN:
			fmt.Fprintf(&b, "N%q", v.Value)
		case *types.AttributeValueMemberB:
			fmt.Fprintf(&b, "B%q%t", v.Value, v.Value == nil)
		case *types.AttributeValueMemberBOOL:
			fmt.Fprintf(&b, "BOOL%t", v.Value)
		case *types.AttributeValueMemberNULL:
			fmt.Fprintf(&b, "NULL%t", v.Value)
		case *types.AttributeValueMemberSS:
			fmt.Fprintf(&b, "SS%q%t", v.Value, v.Value == nil)
		case *types.AttributeValueMemberNS:
			fmt.Fprintf(&b, "NS%q%t", v.Value, v.Value == nil)
		case *types.AttributeValueMemberBS:
			fmt.Fprintf(&b, "BS%q%t", v.Value, v.Value == nil)
		case *types.AttributeValueMemberL:
			fmt.Fprintf(&b, "L%t[", v.Value == nil)
			for _, e := range v.Value {
				value(e)
				b.WriteByte(',')
			}
			b.WriteByte(']')
		case *types.AttributeValueMemberM:
			fmt.Fprintf(&b, "M%t{", v.Value == nil)
			for _, k := range slices.Sorted(maps.Keys(v.Value)) {
				fmt.Fprintf(&b, "%q:", k)
				value(v.Value[k])
				b.WriteByte(',')
			}
			b.WriteByte('}')
		default:
			fmt.Fprintf(&b, "%T", v)
		}
	}
	b.WriteByte('{')
	for _, k := range slices.Sorted(maps.Keys(item)) {
		fmt.Fprintf(&b, "%q:", k)
		value(item[k])
		b.WriteByte(',')
	}
	b.WriteByte('}')
	return b.String()
}

// The byte format the fuzz targets decode: entries of a name (a length byte,
// then bytes) and a value (a tag byte, then by tag a string, a byte, or a
// count and elements). Running out of bytes ends the item.
const (
	tagS = iota
	tagN
	tagB
	tagBOOL
	tagNULL
	tagL
	tagM
	tagSS
	tagNS
	tagBS
	tagNil  // a nil AttributeValue
	tagNilS // a typed nil *AttributeValueMemberS
	tagCount
)

type fuzzDecoder struct{ b []byte }

func (d *fuzzDecoder) byte() (byte, bool) {
	if len(d.b) == 0 {
		return 0, false
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c, true
}

func (d *fuzzDecoder) str() (string, bool) {
	n, ok := d.byte()
	if !ok {
		return "", false
	}
	k := min(int(n), len(d.b))
	s := string(d.b[:k])
	d.b = d.b[k:]
	return s, true
}

func (d *fuzzDecoder) strs() ([]string, bool) {
	n, ok := d.byte()
	var out []string
	for range n {
		s, ok := d.str()
		if !ok {
			break
		}
		out = append(out, s)
	}
	return out, ok
}

func (d *fuzzDecoder) value(depth int) (types.AttributeValue, bool) {
	tag, ok := d.byte()
	if !ok {
		return nil, false
	}
	switch tag % tagCount {
	case tagS:
		s, ok := d.str()
		return &types.AttributeValueMemberS{Value: s}, ok
	case tagN:
		s, ok := d.str()
		return &types.AttributeValueMemberN{Value: s}, ok
	case tagB:
		s, ok := d.str()
		return &types.AttributeValueMemberB{Value: []byte(s)}, ok
	case tagBOOL:
		c, ok := d.byte()
		return &types.AttributeValueMemberBOOL{Value: c%2 == 1}, ok
	case tagNULL:
		return &types.AttributeValueMemberNULL{Value: true}, true
	case tagL, tagM:
		n, ok := d.byte()
		l := &types.AttributeValueMemberL{}
		m := &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}
		for range n {
			if depth > 8 {
				break
			}
			var name string
			if tag%tagCount == tagM {
				if name, ok = d.str(); !ok {
					break
				}
			}
			v, ok := d.value(depth + 1)
			if !ok {
				break
			}
			l.Value = append(l.Value, v)
			m.Value[name] = v
		}
		if tag%tagCount == tagM {
			return m, ok
		}
		return l, ok
	case tagSS:
		s, ok := d.strs()
		return &types.AttributeValueMemberSS{Value: s}, ok
	case tagNS:
		s, ok := d.strs()
		return &types.AttributeValueMemberNS{Value: s}, ok
	case tagBS:
		s, ok := d.strs()
		bs := make([][]byte, len(s))
		for i := range s {
			bs[i] = []byte(s[i])
		}
		return &types.AttributeValueMemberBS{Value: bs}, ok
	case tagNil:
		return nil, true
	}
	return (*types.AttributeValueMemberS)(nil), true
}

func itemFromBytes(data []byte) layouts.Item {
	d := &fuzzDecoder{b: data}
	item := layouts.Item{}
	for {
		name, ok := d.str()
		if !ok {
			return item
		}
		v, ok := d.value(0)
		if !ok {
			return item
		}
		item[name] = v
	}
}

// itemToBytes encodes an item for itemFromBytes; the seeds are real items.
// Strings are cut at 255 bytes.
func itemToBytes(item layouts.Item) []byte {
	var b []byte
	str := func(s string) {
		s = s[:min(len(s), 255)]
		b = append(b, byte(len(s)))
		b = append(b, s...)
	}
	strs := func(ss []string) {
		b = append(b, byte(len(ss)))
		for _, s := range ss {
			str(s)
		}
	}
	var value func(v types.AttributeValue)
	value = func(v types.AttributeValue) {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			b = append(b, tagS)
			str(v.Value)
		case *types.AttributeValueMemberN:
			b = append(b, tagN)
			str(v.Value)
		case *types.AttributeValueMemberB:
			b = append(b, tagB)
			str(string(v.Value))
		case *types.AttributeValueMemberBOOL:
			b = append(b, tagBOOL, 0)
			if v.Value {
				b[len(b)-1] = 1
			}
		case *types.AttributeValueMemberNULL:
			b = append(b, tagNULL)
		case *types.AttributeValueMemberL:
			b = append(b, tagL, byte(len(v.Value)))
			for _, e := range v.Value {
				value(e)
			}
		case *types.AttributeValueMemberM:
			b = append(b, tagM, byte(len(v.Value)))
			for k, e := range v.Value {
				str(k)
				value(e)
			}
		case *types.AttributeValueMemberSS:
			b = append(b, tagSS)
			strs(v.Value)
		case *types.AttributeValueMemberNS:
			b = append(b, tagNS)
			strs(v.Value)
		case *types.AttributeValueMemberBS:
			b = append(b, tagBS, byte(len(v.Value)))
			for _, e := range v.Value {
				str(string(e))
			}
		default:
			b = append(b, tagNil)
		}
	}
	for k, v := range item {
		str(k)
		value(v)
	}
	return b
}

// TestFuzzEncoding: the seeds decode to the items they came from, so the
// fuzz targets start from real items, in every variant.
func TestFuzzEncoding(t *testing.T) {
	for _, name := range layouts.Names() {
		for v, variant := range fuzzVariants(t, name) {
			t.Run(fmt.Sprintf("%s/%d", name, v), func(t *testing.T) {
				l, err := layouts.New(name, variant.opts)
				if err != nil {
					t.Fatal(err)
				}
				for _, n := range layoutstest.SmallForest().Nodes {
					err := l.Items(n, func(it layouts.Item) {
						if got := itemFromBytes(itemToBytes(it)); layoutstest.DDBJSON(got) != layoutstest.DDBJSON(it) {
							t.Fatalf("decoded %s, want %s", layoutstest.DDBJSON(got), layoutstest.DDBJSON(it))
						}
					})
					if err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}

// FuzzModelNode feeds a table model's Node decoder items whose model
// attributes hold arbitrary text, as the fuzzer's bytes give it, under the
// closure models and a path one: it must never panic nor change the item,
// every error must wrap ErrItem, and an item it reads as a node must be
// one IsNode and NodeOf say is, of the id and parent NodeOf gives and that
// Owner names.
func FuzzModelNode(f *testing.F) {
	var tables []layouts.Layout
	for _, name := range []string{"closure-n", "closure-keys-some", "closure-include-all", "path-include-own", "prefix-typed"} {
		l, err := models.ParseModel(name+".json", []byte(layoutstest.ModelVariants[name]))
		if err != nil {
			f.Fatal(err)
		}
		tables = append(tables, l)
	}
	for _, file := range []string{"../fixtures/models/closure-single-table.json", "../fixtures/models/single-table.json", "../fixtures/models/prefix-directories.json"} {
		l, err := models.LoadModel(file)
		if err != nil {
			f.Fatal(err)
		}
		tables = append(tables, l)
	}
	f.Add(uint8(0), "CM4\x00ANC#0000\x00ANC#CM4\x00CM2\x00TreeRow", uint8(0))
	f.Add(uint8(4), "NODE#CM4\x00ANC#0001\x00ANC#CM2\x00CM2\x00TreeRow", uint8(3))
	f.Add(uint8(1), "N#a\x00UP#00\x00A#a\x00p\x000\x00a~a\x00row", uint8(7))
	f.Add(uint8(2), "x\x000\x00x\x00\x00row", uint8(1))
	f.Add(uint8(7), "DIR#/a/b\x00ENTRY#/\x00Entry", uint8(0))
	f.Add(uint8(7), "DIR#/a/\x00ENTRY#b\x00Entry", uint8(0))
	f.Fuzz(func(t *testing.T, pick uint8, text string, mask uint8) {
		l := tables[int(pick)%len(tables)]
		parts := strings.Split(text, "\x00")
		item := layouts.Item{}
		for i, name := range l.Reserved() {
			if i >= len(parts) || mask&(1<<(i%8)) != 0 && i%3 == 2 {
				continue
			}
			var v types.AttributeValue = &types.AttributeValueMemberS{Value: parts[i]}
			if _, err := strconv.Atoi(parts[i]); err == nil && mask&1 != 0 {
				v = &types.AttributeValueMemberN{Value: parts[i]}
			}
			item[name] = v
		}
		before := layoutstest.DDBJSON(item)
		rec, ok, err := l.Node(item)
		if layoutstest.DDBJSON(item) != before {
			t.Fatalf("Node changed the item: %s, was %s", layoutstest.DDBJSON(item), before)
		}
		if err != nil {
			if !errors.Is(err, layouts.ErrItem) {
				t.Fatalf("Node(%s): %v, not an ErrItem", before, err)
			}
			return
		}
		view := layouts.MapView(item)
		id, parent, nodeOK := l.NodeOf(view)
		if ok != l.IsNode(view) || ok != nodeOK {
			t.Fatalf("Node(%s) says %v, IsNode %v, NodeOf %v", before, ok, l.IsNode(view), nodeOK)
		}
		if ok && (rec.ID != id || rec.Parent != parent || l.Owner(view) != id) {
			t.Fatalf("Node(%s) = %q<%q, NodeOf %q<%q, Owner %q", before, rec.ID, rec.Parent, id, parent, l.Owner(view))
		}
	})
}
