package transform

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
)

// DynamoDB's limits on names, from its developer guide ("Supported data
// types and naming rules"): an attribute name is at least one character and
// less than 64 KB; the names of key attributes (of the table and of its
// indexes) are 255 bytes at most.
const (
	MaxAttrNameBytes    = 64<<10 - 1
	MaxKeyAttrNameBytes = 255
)

// MaxNesting is how deeply lists and maps may nest in an item: DynamoDB's
// 32 levels, counted as the decoders count them (a top-level list or map is
// the first level).
const MaxNesting = ddbjson.MaxDepth

// ErrAttrValue is wrapped by CheckAttrs's errors: an attribute that
// DynamoDB would refuse (its name, or its value).
var ErrAttrValue = errors.New("transform: attribute DynamoDB does not accept")

// CheckAttrs checks a record's attributes against every rule DynamoDB
// applies to an attribute, so that a service write is never the first to
// find one: names of 1 to MaxAttrNameBytes bytes of UTF-8, at the top level
// and as map keys at any depth; strings of valid UTF-8; numbers DynamoDB
// can hold (38 significant digits, 1E-130 to 9.99…E+125); sets that are not
// empty and hold each member once (numbers compared by value, so "1" and
// "1.0" are the same member); NULL true; lists and maps nested at most
// MaxNesting deep. It returns nil when every attribute is fine, and
// otherwise the first problem, by name, wrapping ErrAttrValue and saying
// which attribute (tags[2].name) it is in. The item's size and its keys are
// the layout's to check (layouts.Check).
func CheckAttrs(attrs Attrs) error {
	var bad []string
	for name, v := range attrs {
		if checkName(name) != "" || checkValue(v, 0) != nil {
			bad = append(bad, name)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad) // the first by name, whatever the map's order
	return CheckAttr(bad[0], attrs[bad[0]])
}

// CheckAttr is CheckAttrs for one attribute.
func CheckAttr(name string, v types.AttributeValue) error {
	if msg := checkName(name); msg != "" {
		return fmt.Errorf("%w: %s", ErrAttrValue, msg)
	}
	if err := checkValue(v, 0); err != nil {
		return fmt.Errorf("%w: attribute %s: %s", ErrAttrValue, pathName(name)+err.path, err.msg)
	}
	return nil
}

// checkName says what is wrong with an attribute name, or "".
func checkName(name string) string {
	switch {
	case name == "":
		return "an attribute name is empty; DynamoDB needs at least one character"
	case len(name) > MaxAttrNameBytes:
		return fmt.Sprintf("the attribute name %s is over DynamoDB's limit of %d bytes (under 64 KB)", quoteID(name), MaxAttrNameBytes)
	case !utf8.ValidString(name):
		return fmt.Sprintf("the attribute name %s is not valid UTF-8", quoteID(name))
	}
	return ""
}

// valueError is a problem in a value, with the path to it below the
// attribute (such as [2].name), built on the way back up.
type valueError struct{ path, msg string }

func (e *valueError) under(p string) *valueError {
	e.path = p + e.path
	return e
}

func checkValue(v types.AttributeValue, depth int) *valueError {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		if !utf8.ValidString(v.Value) {
			return &valueError{msg: "the string is not valid UTF-8"}
		}
	case *types.AttributeValueMemberN:
		if err := ddbjson.CheckNumber(v.Value); err != nil {
			return &valueError{msg: strings.TrimPrefix(err.Error(), "ddbjson: ")}
		}
	case *types.AttributeValueMemberB, *types.AttributeValueMemberBOOL:
	case *types.AttributeValueMemberNULL:
		if !v.Value {
			return &valueError{msg: "NULL is false; DynamoDB's NULL is always true"}
		}
	case *types.AttributeValueMemberL:
		if depth+1 >= MaxNesting {
			return &valueError{msg: fmt.Sprintf("lists and maps nest deeper than DynamoDB's %d levels", MaxNesting)}
		}
		for i, e := range v.Value {
			if err := checkValue(e, depth+1); err != nil {
				return err.under("[" + strconv.Itoa(i) + "]")
			}
		}
	case *types.AttributeValueMemberM:
		if depth+1 >= MaxNesting {
			return &valueError{msg: fmt.Sprintf("lists and maps nest deeper than DynamoDB's %d levels", MaxNesting)}
		}
		var bad []string
		for k, e := range v.Value {
			if checkName(k) != "" || checkValue(e, depth+1) != nil {
				bad = append(bad, k)
			}
		}
		if len(bad) > 0 {
			slices.Sort(bad)
			k := bad[0]
			if k == "" {
				return &valueError{msg: "a map has an empty key; DynamoDB needs attribute names of at least one character"}
			}
			if msg := checkName(k); msg != "" {
				return &valueError{msg: "in a map, " + msg}
			}
			return checkValue(v.Value[k], depth+1).under("." + pathName(k))
		}
	case *types.AttributeValueMemberSS:
		if len(v.Value) == 0 {
			return &valueError{msg: "SS is empty; DynamoDB does not store empty sets"}
		}
		for i, s := range v.Value {
			if !utf8.ValidString(s) {
				return &valueError{path: "[" + strconv.Itoa(i) + "]", msg: "the string is not valid UTF-8"}
			}
		}
		if i, j := duplicate(len(v.Value), func(i int) string { return v.Value[i] }); i >= 0 {
			return setDup("SS", i, j, strconv.Quote(v.Value[i]))
		}
	case *types.AttributeValueMemberNS:
		if len(v.Value) == 0 {
			return &valueError{msg: "NS is empty; DynamoDB does not store empty sets"}
		}
		for i, s := range v.Value {
			if err := ddbjson.CheckNumber(s); err != nil {
				return &valueError{path: "[" + strconv.Itoa(i) + "]", msg: strings.TrimPrefix(err.Error(), "ddbjson: ")}
			}
		}
		if i, j := duplicate(len(v.Value), func(i int) string { return numberKey(v.Value[i]) }); i >= 0 {
			what := strconv.Quote(v.Value[i])
			if v.Value[j] != v.Value[i] {
				what += " and " + strconv.Quote(v.Value[j]) + ", equal by value,"
			}
			return setDup("NS", i, j, what)
		}
	case *types.AttributeValueMemberBS:
		if len(v.Value) == 0 {
			return &valueError{msg: "BS is empty; DynamoDB does not store empty sets"}
		}
		if i, j := duplicate(len(v.Value), func(i int) string { return string(v.Value[i]) }); i >= 0 {
			return setDup("BS", i, j, "the same bytes")
		}
	case nil:
		return &valueError{msg: "the value is missing"}
	default:
		return &valueError{msg: fmt.Sprintf("%T is not a DynamoDB type", v)}
	}
	return nil
}

func setDup(typ string, i, j int, what string) *valueError {
	return &valueError{msg: fmt.Sprintf("%s holds %s twice (members %d and %d); the members of a DynamoDB set are distinct", typ, what, i, j)}
}

// duplicate returns the first two members of a set of n whose keys are
// equal, or -1, -1.
func duplicate(n int, key func(i int) string) (int, int) {
	if n < 2 {
		return -1, -1
	}
	if n <= 8 { // a few comparisons are cheaper than a map
		for j := 1; j < n; j++ {
			kj := key(j)
			for i := range j {
				if key(i) == kj {
					return i, j
				}
			}
		}
		return -1, -1
	}
	seen := make(map[string]int, n)
	for j := range n {
		k := key(j)
		if i, ok := seen[k]; ok {
			return i, j
		}
		seen[k] = j
	}
	return -1, -1
}

// numberKey is the same text for two numbers (which CheckNumber accepts)
// exactly when they are equal by value: the sign, the power of ten of the
// first significant digit and the significant digits, so that "1", "1.0",
// "10E-1" and "+1" have one key.
func numberKey(s string) string {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	exp := 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, _ = strconv.Atoi(s[i+1:])
		s = s[:i]
	}
	point := strings.IndexByte(s, '.')
	if point < 0 {
		point = len(s)
	}
	var digits []byte
	first := 0
	pos := 0 // the index of the digit among the digits
	for i := 0; i < len(s); i++ {
		if i == point {
			continue
		}
		c := s[i]
		if digits == nil && c == '0' {
			pos++
			continue
		}
		if digits == nil {
			first = point - 1 - pos + exp
		}
		digits = append(digits, c)
		pos++
	}
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	if len(digits) == 0 {
		return "0"
	}
	sign := "+"
	if neg {
		sign = "-"
	}
	return sign + strconv.Itoa(first) + ":" + string(digits)
}

// pathName writes an attribute name in a path: as it is when it is a plain
// word, quoted otherwise (and cut when it is long).
func pathName(name string) string {
	plain := name != "" && len(name) <= maxShownID
	for i := 0; plain && i < len(name); i++ {
		c := name[i]
		plain = c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	if plain {
		return name
	}
	return quoteID(name)
}
