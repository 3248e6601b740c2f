package records

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
)

// maxDecimalDigits is the precision of the DECIMAL columns Parquet files get:
// DynamoDB's own limit of 38 significant digits, which 16 bytes hold.
const maxDecimalDigits = 38

// AppendPlainJSON appends v as plain JSON, the way SPEC §1 reads JSON back:
// S a string, N a number (its exact text), BOOL, NULL null, L and sets
// arrays, M an object with its keys in order, and B a base64 string.
func AppendPlainJSON(dst []byte, v types.AttributeValue) ([]byte, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return ddbjson.AppendString(dst, v.Value), nil
	case *types.AttributeValueMemberN:
		return appendJSONNumber(dst, v.Value)
	case *types.AttributeValueMemberBOOL:
		return strconv.AppendBool(dst, v.Value), nil
	case *types.AttributeValueMemberNULL:
		return append(dst, "null"...), nil
	case *types.AttributeValueMemberB:
		return appendBase64String(dst, v.Value), nil
	case *types.AttributeValueMemberL:
		dst = append(dst, '[')
		for i, e := range v.Value {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = AppendPlainJSON(dst, e); err != nil {
				return dst, fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return append(dst, ']'), nil
	case *types.AttributeValueMemberM:
		dst = append(dst, '{')
		for i, k := range sortedKeys(v.Value) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = ddbjson.AppendString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = AppendPlainJSON(dst, v.Value[k]); err != nil {
				return dst, fmt.Errorf(".%s: %w", k, err)
			}
		}
		return append(dst, '}'), nil
	case *types.AttributeValueMemberSS:
		dst = append(dst, '[')
		for i, s := range v.Value {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = ddbjson.AppendString(dst, s)
		}
		return append(dst, ']'), nil
	case *types.AttributeValueMemberNS:
		dst = append(dst, '[')
		for i, s := range v.Value {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendJSONNumber(dst, s); err != nil {
				return dst, fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return append(dst, ']'), nil
	case *types.AttributeValueMemberBS:
		dst = append(dst, '[')
		for i, b := range v.Value {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendBase64String(dst, b)
		}
		return append(dst, ']'), nil
	case nil:
		return dst, errors.New("no value (nil)")
	}
	return dst, fmt.Errorf("value of unknown type %T", v)
}

func appendBase64String(dst []byte, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// appendJSONNumber appends a DynamoDB number as a JSON number. Text that is
// already a valid JSON number is kept byte for byte; other decimal forms
// DynamoDB accepts (+5, .5, 5., 007) are rewritten to the same value.
func appendJSONNumber(dst []byte, s string) ([]byte, error) {
	if ddbjson.IsJSONNumber(s) {
		return append(dst, s...), nil
	}
	d, ok := parseDecimal(s)
	if !ok {
		return dst, fmt.Errorf("%q is not a number", s)
	}
	return append(dst, d.String()...), nil
}

// decimal is a parsed number: digits × 10^exp, with neither leading nor
// trailing zeros in digits ("" for zero, which is never negative).
type decimal struct {
	neg    bool
	digits string
	exp    int
}

// parseDecimal parses the decimal syntax DynamoDB accepts for numbers: an
// optional sign, digits with an optional point, and an optional exponent.
func parseDecimal(s string) (decimal, bool) {
	var d decimal
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		d.neg = s[i] == '-'
		i++
	}
	var mant strings.Builder
	point, n := -1, 0
	for ; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' {
			mant.WriteByte(c)
			n++
		} else if c == '.' && point < 0 {
			point = n
		} else {
			break
		}
	}
	if n == 0 {
		return d, false
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		start := i
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if n := len(s) - i; n == 0 || n > 6 {
			return d, false // no exponent digits, or an exponent no number has
		}
		for j := i; j < len(s); j++ {
			if s[j] < '0' || s[j] > '9' {
				return d, false
			}
		}
		exp, _ = strconv.Atoi(s[start:])
		i = len(s)
	}
	if i != len(s) {
		return d, false
	}
	digits := mant.String()
	if point >= 0 {
		exp -= n - point
	}
	trimmed := strings.TrimLeft(digits, "0")
	if trimmed == "" {
		return decimal{}, true
	}
	t := strings.TrimRight(trimmed, "0")
	exp += len(trimmed) - len(t)
	d.digits, d.exp = t, exp
	return d, true
}

// String writes the number in plain notation when that takes fewer than 40
// digits of padding, else in scientific notation; either is valid JSON.
func (d decimal) String() string {
	if d.digits == "" {
		return "0"
	}
	var b strings.Builder
	if d.neg {
		b.WriteByte('-')
	}
	switch {
	case d.exp >= 0 && d.exp < 40:
		b.WriteString(d.digits)
		b.WriteString(strings.Repeat("0", d.exp))
	case d.exp < 0 && -d.exp < len(d.digits):
		at := len(d.digits) + d.exp
		b.WriteString(d.digits[:at])
		b.WriteByte('.')
		b.WriteString(d.digits[at:])
	case d.exp < 0 && -d.exp-len(d.digits) < 40:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -d.exp-len(d.digits)))
		b.WriteString(d.digits)
	default:
		b.WriteString(d.digits[:1])
		if len(d.digits) > 1 {
			b.WriteByte('.')
			b.WriteString(d.digits[1:])
		}
		b.WriteByte('e')
		b.WriteString(strconv.Itoa(d.exp + len(d.digits) - 1))
	}
	return b.String()
}

// scale is the number of digits after the point the number needs.
func (d decimal) scale() int { return max(0, -d.exp) }

// intDigits is the number of digits before the point the number needs.
func (d decimal) intDigits() int { return max(0, len(d.digits)+d.exp) }

// int64 returns the number as an int64 when it is an integer that fits.
func (d decimal) int64() (int64, bool) {
	if d.digits == "" {
		return 0, true
	}
	if d.exp < 0 || len(d.digits)+d.exp > 19 {
		return 0, false
	}
	text := d.digits + strings.Repeat("0", d.exp)
	if d.neg {
		text = "-" + text
	}
	v, err := strconv.ParseInt(text, 10, 64)
	return v, err == nil
}

// float64 returns the number as a float64 when the float's shortest text is
// the same number, so that a reader that prints the float gets it back.
func (d decimal) float64() (float64, bool) {
	f, err := strconv.ParseFloat(d.String(), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	back, ok := parseDecimal(strconv.FormatFloat(f, 'g', -1, 64))
	return f, ok && back == d
}

// unscaled returns digits × 10^(exp+scale), the integer a DECIMAL(_, scale)
// column stores, when scale is at least the number's own scale.
func (d decimal) unscaled(scale int) *big.Int {
	v, _ := new(big.Int).SetString("0"+d.digits, 10)
	if shift := d.exp + scale; shift > 0 {
		v.Mul(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(shift)), nil))
	}
	if d.neg {
		v.Neg(v)
	}
	return v
}

// numStats gathers the Parquet number kind that holds every value of a
// column exactly.
type numStats struct {
	n                    int
	notInt64, notDouble  bool
	maxScale, maxIntDigs int
	notNumber            bool
}

func (s *numStats) add(text string) {
	s.n++
	d, ok := parseDecimal(text)
	if !ok {
		s.notNumber = true
		return
	}
	if _, ok := d.int64(); !ok {
		s.notInt64 = true
	}
	if !s.notDouble {
		if _, ok := d.float64(); !ok {
			s.notDouble = true
		}
	}
	s.maxScale = max(s.maxScale, d.scale())
	s.maxIntDigs = max(s.maxIntDigs, d.intDigits())
}

func (s *numStats) merge(o *numStats) {
	s.n += o.n
	s.notInt64 = s.notInt64 || o.notInt64
	s.notDouble = s.notDouble || o.notDouble
	s.notNumber = s.notNumber || o.notNumber
	s.maxScale = max(s.maxScale, o.maxScale)
	s.maxIntDigs = max(s.maxIntDigs, o.maxIntDigs)
}

// kind returns the narrowest kind that holds every value, and the scale of a
// decimal.
func (s *numStats) kind() (NumberKind, int) {
	switch {
	case s.notNumber:
		return NumberJSON, 0
	case !s.notInt64:
		return NumberInt64, 0
	case !s.notDouble:
		return NumberDouble, 0
	case s.maxIntDigs+s.maxScale <= maxDecimalDigits:
		return NumberDecimal, s.maxScale
	}
	return NumberJSON, 0
}
