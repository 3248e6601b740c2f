package layouts_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
)

// The fuzz targets feed each layout's Node decoder arbitrary items, built
// from the fuzzer's bytes: it must never panic, every error must wrap
// ErrItem, and a record it returns must have an id and no layout attribute.

func FuzzPathNode(f *testing.F)        { fuzzNode(f, layouts.PathName) }
func FuzzShardedPathNode(f *testing.F) { fuzzNode(f, layouts.ShardedName) }
func FuzzClosureNode(f *testing.F)     { fuzzNode(f, layouts.ClosureName) }
func FuzzPrefixNode(f *testing.F)      { fuzzNode(f, layouts.PrefixName) }

func fuzzNode(f *testing.F, name string) {
	l, err := layouts.New(name, layouts.Options{})
	if err != nil {
		f.Fatal(err)
	}
	forest := smallForest()
	for _, n := range forest.nodes {
		if err := l.Items(n, func(it layouts.Item) { f.Add(itemToBytes(it)) }); err != nil {
			f.Fatal(err)
		}
	}
	f.Add([]byte{})
	f.Add([]byte{2, 'I', 'd', tagNil})
	f.Add([]byte{2, 'I', 'd', tagNilS})
	f.Fuzz(func(t *testing.T, data []byte) {
		item := itemFromBytes(data)
		size := len(item)
		rec, ok, err := l.Node(item)
		if len(item) != size {
			t.Fatalf("Node changed the item")
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
			t.Fatalf("Node returned a record without an id from %s", ddbJSON(item))
		}
		for k, v := range rec.Attrs {
			if slices.Contains(l.Reserved(), k) {
				t.Fatalf("Node kept layout attribute %q", k)
			}
			if item[k] != v {
				t.Fatalf("Node returned attribute %q that the item does not hold", k)
			}
		}
	})
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
// fuzz targets start from real items.
func TestFuzzEncoding(t *testing.T) {
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			l, err := layouts.New(name, layouts.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range smallForest().nodes {
				err := l.Items(n, func(it layouts.Item) {
					if got := itemFromBytes(itemToBytes(it)); ddbJSON(got) != ddbJSON(it) {
						t.Fatalf("decoded %s, want %s", ddbJSON(got), ddbJSON(it))
					}
				})
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
