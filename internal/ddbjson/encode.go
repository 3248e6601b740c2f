// Package ddbjson reads and writes DynamoDB JSON: the typed JSON form of an
// item ({"id":{"S":"x"},"size":{"N":"42"}}) that DynamoDB's export to S3
// writes and its import from S3 reads, one {"Item":{...}} object a line.
//
// The codec is written by hand for speed: it builds no intermediate values and
// uses no reflection. Numbers are kept as the exact text they were written in.
package ddbjson

import (
	"encoding/base64"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/treeport/treeport/internal/swar"
)

// AppendLine appends the item as one line of a DynamoDB export,
// {"Item":{...}} followed by a newline, and returns the extended buffer.
func AppendLine(dst []byte, item map[string]types.AttributeValue) []byte {
	dst = append(dst, `{"Item":`...)
	dst = AppendItem(dst, item)
	return append(dst, '}', '\n')
}

// AppendItem appends the item as a DynamoDB JSON object, attribute names in
// sorted order and no trailing newline, and returns the extended buffer.
// Map attributes (M) are sorted too, so equal items encode to equal bytes.
//
// Strings are escaped as JSON requires; a byte that is not valid UTF-8 is
// written as U+FFFD, as DynamoDB could not store it anyway. A nil value, or a
// value of a type DynamoDB does not define, is written as {"NULL":true}.
func AppendItem(dst []byte, item map[string]types.AttributeValue) []byte {
	return appendMap(dst, item)
}

// AppendValue appends one typed value, such as {"S":"x"}.
func AppendValue(dst []byte, v types.AttributeValue) []byte {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		dst = append(dst, `{"S":`...)
		dst = AppendString(dst, v.Value)
	case *types.AttributeValueMemberN:
		dst = append(dst, `{"N":`...)
		dst = AppendString(dst, v.Value)
	case *types.AttributeValueMemberB:
		dst = append(dst, `{"B":`...)
		dst = appendBase64(dst, v.Value)
	case *types.AttributeValueMemberBOOL:
		if v.Value {
			return append(dst, `{"BOOL":true}`...)
		}
		return append(dst, `{"BOOL":false}`...)
	case *types.AttributeValueMemberL:
		dst = appendArray(dst, `{"L":[`, v.Value, AppendValue)
	case *types.AttributeValueMemberM:
		dst = append(dst, `{"M":`...)
		dst = appendMap(dst, v.Value)
	case *types.AttributeValueMemberSS:
		dst = appendArray(dst, `{"SS":[`, v.Value, AppendString)
	case *types.AttributeValueMemberNS:
		dst = appendArray(dst, `{"NS":[`, v.Value, AppendString)
	case *types.AttributeValueMemberBS:
		dst = appendArray(dst, `{"BS":[`, v.Value, appendBase64)
	default: // NULL, nil, or a type this package does not know
		return append(dst, `{"NULL":true}`...)
	}
	return append(dst, '}')
}

// appendArray appends open, the elements written by appendElem and
// separated by commas, and the closing ']'.
func appendArray[T any](dst []byte, open string, elems []T, appendElem func([]byte, T) []byte) []byte {
	dst = append(dst, open...)
	for i, e := range elems {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendElem(dst, e)
	}
	return append(dst, ']')
}

// appendBase64 appends b as a JSON string of its standard base64.
func appendBase64(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

type attr struct {
	name  string
	value types.AttributeValue
}

func appendMap(dst []byte, m map[string]types.AttributeValue) []byte {
	// Most items have a handful of attributes: sort them in a buffer on the
	// stack instead of allocating one per item, and keep the values so that
	// no map lookup follows the sort.
	var buf [16]attr
	attrs := buf[:0]
	for k, v := range m {
		attrs = append(attrs, attr{k, v})
	}
	if len(attrs) > len(buf) {
		slices.SortFunc(attrs, func(a, b attr) int { return strings.Compare(a.name, b.name) })
	} else {
		// Insertion sort: fastest for the few attributes an item has.
		for i := 1; i < len(attrs); i++ {
			for j := i; j > 0 && attrs[j].name < attrs[j-1].name; j-- {
				attrs[j], attrs[j-1] = attrs[j-1], attrs[j]
			}
		}
	}
	dst = append(dst, '{')
	for i, a := range attrs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, a.name)
		dst = append(dst, ':')
		dst = AppendValue(dst, a.value)
	}
	return append(dst, '}')
}

// safe marks the ASCII bytes that a JSON string can hold as they are.
var safe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hex = "0123456789abcdef"

// AppendString appends s as a quoted JSON string. Invalid UTF-8 is written
// as U+FFFD.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Skip eight plain ASCII bytes at a time.
		for i+8 <= len(s) && plain8(s[i:i+8]) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// plain8 reports whether the eight bytes of s are ASCII that a JSON string
// holds as they are: no control character, quote, backslash or non-ASCII.
func plain8(s string) bool {
	x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	if x&swar.MSBs != 0 {
		return false
	}
	// With every byte below 0x80, b - n borrows into the high bit exactly
	// when b < n, and b^c is zero exactly when b == c.
	less := (x - swar.LSBs*0x20) & swar.MSBs
	q := x ^ (swar.LSBs * '"')
	bs := x ^ (swar.LSBs * '\\')
	return (less | ((q - swar.LSBs) &^ q & swar.MSBs) | ((bs - swar.LSBs) &^ bs & swar.MSBs)) == 0
}
