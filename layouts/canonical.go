package layouts

import (
	"encoding/binary"
	"strconv"
	"strings"
)

// CanonicalNumber returns text that is equal for two DynamoDB numbers exactly
// when they are equal by value, the way DynamoDB compares them. Text that is
// not a number is returned marked, so it never equals a number.
func CanonicalNumber(s string) string { return string(AppendNumber(nil, s)) }

// AppendNumber appends a DynamoDB number by value: its sign, the power of
// ten of its first significant digit and its significant digits, so that
// "1.50", "1.5" and "15e-1" append the same bytes. It allocates nothing.
// Text that is not a number is appended as itself, marked.
func AppendNumber(b []byte, s string) []byte {
	t := s
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	exp := 0
	if i := strings.IndexAny(t, "eE"); i >= 0 {
		e, err := strconv.Atoi(t[i+1:])
		if err != nil {
			return append(append(append(b, '?'), s...), 0)
		}
		exp, t = e, t[:i]
	}
	point := strings.IndexByte(t, '.')
	if point < 0 {
		point = len(t)
	}
	start := len(b)
	b = append(b, 'N', '+', 0, 0, 0, 0)
	first := -1 // the power of ten of the first significant digit
	digits := 0
	for i := 0; i < len(t); i++ {
		c := t[i]
		if i == point {
			continue
		}
		if c < '0' || c > '9' {
			return append(append(append(b[:start], '?'), s...), 0)
		}
		pos := i // the digit's index among the digits
		if i > point {
			pos--
		}
		if first < 0 {
			if c == '0' {
				continue
			}
			first = point - 1 - pos + exp
		}
		b = append(b, c)
		digits++
	}
	if digits == 0 && point == len(t) && len(t) == 0 {
		return append(append(append(b[:start], '?'), s...), 0)
	}
	// Trailing zeros are not significant.
	for len(b) > start+6 && b[len(b)-1] == '0' {
		b = b[:len(b)-1]
	}
	if len(b) == start+6 { // zero, of either sign
		return append(b[:start], 'N', '0', ';')
	}
	if neg {
		b[start+1] = '-'
	}
	binary.BigEndian.PutUint32(b[start+2:], uint32(int32(first)))
	return append(b, ';')
}
