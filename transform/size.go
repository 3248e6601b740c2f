package transform

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// MaxItemBytes is DynamoDB's item size limit (400 KB).
const MaxItemBytes = 400 * 1024

// Key length limits of DynamoDB, in bytes.
const (
	MaxPartitionKeyBytes = 2048
	MaxSortKeyBytes      = 1024
)

// AttrsSize is the DynamoDB size of a set of attributes: for each, the length
// of its name plus the size of its value.
func AttrsSize(attrs Attrs) int {
	n := 0
	for k, v := range attrs {
		n += len(k) + ValueSize(v)
	}
	return n
}

// ValueSize is the size DynamoDB counts for one attribute value, following
// the rules in the DynamoDB developer guide ("Item sizes and formats"):
// strings and binaries by length, numbers by about one byte per two
// significant digits plus one, BOOL and NULL one byte, and lists and maps
// three bytes plus one byte per element plus their elements.
func ValueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return NumberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += NumberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + ValueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + ValueSize(e)
		}
		return n
	}
	return 0
}

// NumberSize is the size of a DynamoDB number: one byte per two significant
// digits, plus one.
func NumberSize(s string) int {
	s = strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	digits := 0
	lead := true
	trailingZeros := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			continue
		}
		if lead && c == '0' {
			continue
		}
		lead = false
		digits++
		if c == '0' {
			trailingZeros++
		} else {
			trailingZeros = 0
		}
	}
	digits -= trailingZeros
	if digits == 0 {
		return 1
	}
	return (digits+1)/2 + 1
}

// ItemSize is the DynamoDB size of an item.
func ItemSize(item map[string]types.AttributeValue) int { return AttrsSize(item) }

// WCU is the write capacity units one write of an item of the given size
// costs: one per started kilobyte.
func WCU(size int) int {
	if size <= 0 {
		return 1
	}
	return (size + 1023) / 1024
}
