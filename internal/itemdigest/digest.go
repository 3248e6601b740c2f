// Package itemdigest compares DynamoDB items by value in a word each
// (Digester) and encodes their primary keys as strings (KeyOf, DecodeKey):
// what plan, apply, edit and follow hold of a table instead of its items;
// and compares the items a job wants with a table's, out of core (Diff).
package itemdigest

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"iter"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
)

// Digester hashes items and attribute sets by value, the way DynamoDB
// compares them: numbers by value ("1.50" is "1.5"), sets in any order, maps
// by key. Two items with the same digest are, short of a 64-bit collision,
// the same item, so a table can be compared with a snapshot holding one
// word per item instead of the item. Digests are only comparable within one
// process (the hash is seeded per process).
//
// A map (an item, or an M value) hashes each of its entries on its own and
// adds the hashes up, and a set does the same with its elements: the order
// of a Go map or of a DynamoDB set then never matters, and nothing needs
// sorting. A Digester is not safe for concurrent use; it reuses its buffers.
type Digester struct {
	bufs [][]byte // one per nesting level
}

// seed seeds every digest of the process.
var seed = maphash.MakeSeed()

// Item returns the digest of a whole item (or of a node's attributes).
func (d *Digester) Item(item map[string]types.AttributeValue) uint64 {
	return d.mapHash(item, 0)
}

// ItemAndAttrs returns, in one pass, the digest of a whole item and the
// digest of its attributes less the layout's own (reserved), which is what
// Item(record.Attrs) gives for the node the item holds.
func (d *Digester) ItemAndAttrs(item map[string]types.AttributeValue, reserved []string) (all, user uint64) {
	return d.entriesAndAttrs(maps.All(item), len(item), reserved)
}

// FlatAndAttrs is ItemAndAttrs of an item as EmitAttrs gives it.
func (d *Digester) FlatAndAttrs(item []layouts.Attr, reserved []string) (all, user uint64) {
	return d.entriesAndAttrs(func(yield func(string, types.AttributeValue) bool) {
		for _, a := range item {
			if !yield(a.Name, a.Value) {
				return
			}
		}
	}, len(item), reserved)
}

// entriesAndAttrs is ItemAndAttrs of the n entries of an item.
func (d *Digester) entriesAndAttrs(entries iter.Seq2[string, types.AttributeValue], size int, reserved []string) (all, user uint64) {
	var sumAll, sumUser uint64
	n := 0
	for k, v := range entries {
		h := d.entry(k, v, 0)
		sumAll += h
		if !slices.Contains(reserved, k) {
			sumUser += h
			n++
		}
	}
	return finish('M', size, sumAll), finish('M', n, sumUser)
}

func (d *Digester) mapHash(m map[string]types.AttributeValue, depth int) uint64 {
	var sum uint64
	for k, v := range m {
		sum += d.entry(k, v, depth)
	}
	return finish('M', len(m), sum)
}

// finish hashes a collection's tag, size and sum of element hashes.
func finish(tag byte, n int, sum uint64) uint64 {
	var a [17]byte
	a[0] = tag
	binary.LittleEndian.PutUint64(a[1:], uint64(n))
	binary.LittleEndian.PutUint64(a[9:], sum)
	return maphash.Bytes(seed, a[:])
}

func (d *Digester) buf(depth int) []byte {
	for len(d.bufs) <= depth {
		d.bufs = append(d.bufs, make([]byte, 0, 256))
	}
	return d.bufs[depth][:0]
}

// entry hashes one name and value of a map.
func (d *Digester) entry(k string, v types.AttributeValue, depth int) uint64 {
	b := appendBytes(d.buf(depth), k)
	b = d.appendValue(b, v, depth)
	d.bufs[depth] = b
	return maphash.Bytes(seed, b)
}

func appendBytes[T string | []byte](b []byte, s T) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func (d *Digester) appendValue(b []byte, v types.AttributeValue, depth int) []byte {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return appendBytes(append(b, 'S'), v.Value)
	case *types.AttributeValueMemberN:
		return layouts.AppendNumber(b, v.Value)
	case *types.AttributeValueMemberB:
		return appendBytes(append(b, 'B'), v.Value)
	case *types.AttributeValueMemberBOOL:
		if v.Value {
			return append(b, 'T')
		}
		return append(b, 'F')
	case *types.AttributeValueMemberNULL:
		return append(b, 'Z')
	case *types.AttributeValueMemberSS:
		var sum uint64
		for _, e := range v.Value {
			sum += maphash.String(seed, e)
		}
		return binary.LittleEndian.AppendUint64(append(b, 's'), finish('s', len(v.Value), sum))
	case *types.AttributeValueMemberNS:
		var sum uint64
		for _, e := range v.Value {
			t := layouts.AppendNumber(d.buf(depth+1), e)
			d.bufs[depth+1] = t
			sum += maphash.Bytes(seed, t)
		}
		return binary.LittleEndian.AppendUint64(append(b, 'n'), finish('n', len(v.Value), sum))
	case *types.AttributeValueMemberBS:
		var sum uint64
		for _, e := range v.Value {
			sum += maphash.Bytes(seed, e)
		}
		return binary.LittleEndian.AppendUint64(append(b, 'b'), finish('b', len(v.Value), sum))
	case *types.AttributeValueMemberL:
		b = append(b, 'L')
		b = binary.AppendUvarint(b, uint64(len(v.Value)))
		for _, e := range v.Value {
			b = d.appendValue(b, e, depth)
		}
		return b
	case *types.AttributeValueMemberM:
		return binary.LittleEndian.AppendUint64(append(b, 'M'), d.mapHash(v.Value, depth+1))
	case nil:
		return append(b, '0')
	}
	// An unknown member type: its Go text keeps it apart from the others.
	return appendBytes(append(b, '?'), fmt.Sprintf("%#v", v))
}

// KeyOf encodes an item's primary key (its partition key, then its sort key)
// as a string that DecodeKey turns back into the key attributes. The values
// are kept as they are: the layouts write keys as DynamoDB returns them (S
// ids and paths, and closure's RelativeDepth as a plain integer).
func KeyOf(spec layouts.TableSpec, item map[string]types.AttributeValue) string {
	return string(AppendKey(nil, spec, MapView(item)))
}

// AppendKey appends KeyOf's encoding to b.
func AppendKey[V itemView](b []byte, spec layouts.TableSpec, item V) []byte {
	b = appendKeyPart(b, item.get(spec.PK.Name))
	if spec.SK != nil {
		b = appendKeyPart(b, item.get(spec.SK.Name))
	}
	return b
}

// itemView reads an item's attributes by name, in either of the forms
// items come in: a map, or the attribute slice of EmitAttrs.
type itemView interface {
	get(name string) types.AttributeValue
}

// MapView is an item as a map.
type MapView map[string]types.AttributeValue

func (m MapView) get(name string) types.AttributeValue { return m[name] }

// FlatView is an item as EmitAttrs gives it (a few attributes: a look at
// each is as quick as a map's hashing).
type FlatView []layouts.Attr

func (f FlatView) get(name string) types.AttributeValue {
	for _, a := range f {
		if a.Name == name {
			return a.Value
		}
	}
	return nil
}

func appendKeyPart(b []byte, v types.AttributeValue) []byte {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return appendBytes(append(b, 'S'), v.Value)
	case *types.AttributeValueMemberN:
		return appendBytes(append(b, 'N'), v.Value)
	case *types.AttributeValueMemberB:
		return appendBytes(append(b, 'B'), v.Value)
	}
	return append(b, '0')
}

// DecodeKey turns a KeyOf string back into the key attributes.
func DecodeKey(spec layouts.TableSpec, k string) (map[string]types.AttributeValue, error) {
	item := make(map[string]types.AttributeValue, 2)
	rest, err := decodeKeyPart(item, spec.PK.Name, k)
	if err == nil && spec.SK != nil {
		rest, err = decodeKeyPart(item, spec.SK.Name, rest)
	}
	if err == nil && rest != "" {
		err = fmt.Errorf("itemdigest: %d bytes left over", len(rest))
	}
	if err != nil {
		return nil, fmt.Errorf("itemdigest: bad key encoding %q: %w", k, err)
	}
	return item, nil
}

func decodeKeyPart(item map[string]types.AttributeValue, name, k string) (string, error) {
	if k == "" {
		return "", fmt.Errorf("missing %s", name)
	}
	tag := k[0]
	if tag == '0' {
		return k[1:], nil
	}
	n, w := binary.Uvarint([]byte(k[1:min(len(k), 11)]))
	if w <= 0 || uint64(len(k)-1-w) < n {
		return "", fmt.Errorf("truncated %s", name)
	}
	s := k[1+w : 1+w+int(n)]
	switch tag {
	case 'S':
		item[name] = &types.AttributeValueMemberS{Value: s}
	case 'N':
		item[name] = &types.AttributeValueMemberN{Value: s}
	case 'B':
		item[name] = &types.AttributeValueMemberB{Value: []byte(s)}
	default:
		return "", fmt.Errorf("type tag %q of %s", tag, name)
	}
	return k[1+w+int(n):], nil
}
