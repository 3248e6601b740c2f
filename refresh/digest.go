package refresh

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
)

// digester hashes items and attribute sets by value, the way DynamoDB
// compares them: numbers by value ("1.50" is "1.5"), sets in any order, maps
// by key. Two items with the same digest are, short of a 64-bit collision,
// the same item, so a table can be compared with a snapshot holding one
// word per item instead of the item. A digester is not safe for concurrent
// use; it reuses its buffers.
type digester struct {
	buf   []byte
	names []string
	elems [][]byte
}

// item returns the digest of a whole item (or of a node's attributes).
func (d *digester) item(item map[string]types.AttributeValue) uint64 {
	d.buf = d.appendMap(d.buf[:0], item)
	h := fnv.New64a()
	h.Write(d.buf)
	return h.Sum64()
}

func (d *digester) appendMap(b []byte, m map[string]types.AttributeValue) []byte {
	start := len(d.names)
	for k := range m {
		d.names = append(d.names, k)
	}
	names := d.names[start:]
	slices.Sort(names)
	b = append(b, 'M')
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, k := range names {
		b = appendBytes(b, k)
		b = d.appendValue(b, m[k])
	}
	d.names = d.names[:start]
	return b
}

func appendBytes[T string | []byte](b []byte, s T) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func (d *digester) appendValue(b []byte, v types.AttributeValue) []byte {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return appendBytes(append(b, 'S'), v.Value)
	case *types.AttributeValueMemberN:
		return appendBytes(append(b, 'N'), layouts.CanonicalNumber(v.Value))
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
		return d.appendSet(b, 's', len(v.Value), func(i int) string { return v.Value[i] })
	case *types.AttributeValueMemberNS:
		return d.appendSet(b, 'n', len(v.Value), func(i int) string { return layouts.CanonicalNumber(v.Value[i]) })
	case *types.AttributeValueMemberBS:
		return d.appendSet(b, 'b', len(v.Value), func(i int) string { return string(v.Value[i]) })
	case *types.AttributeValueMemberL:
		b = append(b, 'L')
		b = binary.AppendUvarint(b, uint64(len(v.Value)))
		for _, e := range v.Value {
			b = d.appendValue(b, e)
		}
		return b
	case *types.AttributeValueMemberM:
		return d.appendMap(b, v.Value)
	case nil:
		return append(b, '0')
	}
	// An unknown member type: its Go text keeps it apart from the others.
	return appendBytes(append(b, '?'), fmt.Sprintf("%#v", v))
}

// appendSet writes a set's elements in sorted order, so that a set compares
// equal to itself in any order.
func (d *digester) appendSet(b []byte, tag byte, n int, elem func(int) string) []byte {
	start := len(d.elems)
	for i := range n {
		d.elems = append(d.elems, []byte(elem(i)))
	}
	elems := d.elems[start:]
	slices.SortFunc(elems, func(x, y []byte) int { return compareBytes(x, y) })
	b = append(b, tag)
	b = binary.AppendUvarint(b, uint64(n))
	for _, e := range elems {
		b = appendBytes(b, e)
	}
	clear(elems)
	d.elems = d.elems[:start]
	return b
}

func compareBytes(x, y []byte) int {
	return slices.Compare(x, y)
}

// keyOf encodes an item's primary key (its partition key, then its sort key)
// as a string that decodeKey turns back into the key attributes. The values
// are kept as they are: the layouts write keys as DynamoDB returns them (S
// ids and paths, and closure's RelativeDepth as a plain integer).
func keyOf(spec layouts.TableSpec, item map[string]types.AttributeValue) string {
	var b []byte
	b = appendKeyPart(b, item[spec.PK.Name])
	if spec.SK != nil {
		b = appendKeyPart(b, item[spec.SK.Name])
	}
	return string(b)
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

// decodeKey turns a keyOf string back into the key attributes.
func decodeKey(spec layouts.TableSpec, k string) (map[string]types.AttributeValue, error) {
	item := make(map[string]types.AttributeValue, 2)
	rest, err := decodeKeyPart(item, spec.PK.Name, k)
	if err == nil && spec.SK != nil {
		rest, err = decodeKeyPart(item, spec.SK.Name, rest)
	}
	if err == nil && rest != "" {
		err = fmt.Errorf("refresh: %d bytes left over", len(rest))
	}
	if err != nil {
		return nil, fmt.Errorf("refresh: bad key encoding %q: %w", k, err)
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
