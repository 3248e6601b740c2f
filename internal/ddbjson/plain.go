package ddbjson

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DecodePlainObject decodes a plain JSON object, {"id":"x","size":42}, into
// DynamoDB attributes: string→S, number→N (its exact text), true/false→BOOL,
// null→NULL, array→L, object→M. A number DynamoDB cannot hold (over 38
// significant digits, or out of its range), invalid UTF-8, a key that appears
// twice and nesting deeper than MaxDepth are errors. Errors are *Error.
//
// With an error, the map holds the object's members that were read before
// the problem (so that a caller can still name the record), or is nil.
func DecodePlainObject(data []byte) (map[string]types.AttributeValue, error) {
	d := decoder{data: data}
	d.skipSpace()
	if d.peek() != '{' {
		if d.pos >= len(d.data) {
			return nil, d.errorf("empty input, want an object")
		}
		return nil, d.errorf("want an object, found %s", d.describe())
	}
	m, err := d.plainObject(0)
	if err != nil {
		return m, err
	}
	return m, d.endPlain()
}

// DecodePlainValue decodes any plain JSON value with the rules of
// DecodePlainObject.
func DecodePlainValue(data []byte) (types.AttributeValue, error) {
	d := decoder{data: data}
	d.skipSpace()
	v, err := d.plainValue(0)
	if err != nil {
		return nil, err
	}
	return v, d.endPlain()
}

func (d *decoder) endPlain() error {
	d.skipSpace()
	if d.pos < len(d.data) {
		return d.errorf("found %s after the value; want one value", d.describe())
	}
	return nil
}

func (d *decoder) plainObject(depth int) (map[string]types.AttributeValue, error) {
	d.pos++ // '{'
	m := make(map[string]types.AttributeValue)
	d.skipSpace()
	if d.peek() == '}' {
		d.pos++
		return m, nil
	}
	for {
		d.skipSpace()
		keyPos := d.pos
		if d.peek() != '"' {
			return m, d.errorf("want a key in quotes, found %s", d.describe())
		}
		name, err := d.string()
		if err != nil {
			return m, err
		}
		if _, dup := m[name]; dup {
			return m, &Error{Offset: keyPos, Msg: fmt.Sprintf("key %q appears twice", name)}
		}
		d.skipSpace()
		if err := d.expect(':'); err != nil {
			return m, err
		}
		d.skipSpace()
		v, err := d.plainValue(depth)
		if err != nil {
			return m, prefix(err, pathName(name))
		}
		m[name] = v
		d.skipSpace()
		switch d.peek() {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return m, nil
		default:
			return m, d.errorf(`want "," or "}" after a value, found %s`, d.describe())
		}
	}
}

func (d *decoder) plainValue(depth int) (types.AttributeValue, error) {
	switch c := d.peek(); {
	case c == '"':
		s, err := d.string()
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberS{Value: s}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		s, err := d.jsonNumber()
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberN{Value: s}, nil
	case c == '{':
		if depth+1 >= MaxDepth {
			return nil, d.errorf("objects and arrays nest deeper than DynamoDB's %d levels", MaxDepth)
		}
		m, err := d.plainObject(depth + 1)
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	case c == '[':
		if depth+1 >= MaxDepth {
			return nil, d.errorf("objects and arrays nest deeper than DynamoDB's %d levels", MaxDepth)
		}
		list := []types.AttributeValue{}
		err := d.array("an array", func(i int) error {
			v, err := d.plainValue(depth + 1)
			if err != nil {
				return prefix(err, "["+strconv.Itoa(i)+"]")
			}
			list = append(list, v)
			return nil
		})
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberL{Value: list}, nil
	case d.literal("true"):
		return &types.AttributeValueMemberBOOL{Value: true}, nil
	case d.literal("false"):
		return &types.AttributeValueMemberBOOL{Value: false}, nil
	case d.literal("null"):
		return &types.AttributeValueMemberNULL{Value: true}, nil
	default:
		return nil, d.errorf("want a JSON value, found %s", d.describe())
	}
}

// jsonNumber reads a number with JSON's syntax and DynamoDB's limits, and
// returns its text exactly as written.
func (d *decoder) jsonNumber() (string, error) {
	start := d.pos
	i := d.pos
	data := d.data
	digits := func() bool {
		j := i
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		return i > j
	}
	bad := func(what string) (string, error) {
		end := i
		for end < len(data) && strings.IndexByte("+-.eE0123456789", data[end]) >= 0 {
			end++
		}
		d.pos = start
		return "", d.errorf("bad number %q: %s", data[start:end], what)
	}
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
		if i < len(data) && data[i] >= '0' && data[i] <= '9' {
			return bad("a leading zero")
		}
	case !digits():
		return bad("no digits")
	}
	if i < len(data) && data[i] == '.' {
		i++
		if !digits() {
			return bad("no digits after the decimal point")
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if !digits() {
			return bad("no digits in the exponent")
		}
	}
	s := string(data[start:i])
	if err := CheckNumber(s); err != nil {
		d.pos = start
		return "", d.errorf("%s", strings.TrimPrefix(err.Error(), "ddbjson: "))
	}
	d.pos = i
	return s, nil
}
