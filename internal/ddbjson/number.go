package ddbjson

import (
	"errors"
	"fmt"
)

// Limits of a DynamoDB number.
const (
	MaxNumberDigits = 38   // significant digits
	MaxNumberExp    = 125  // largest power of ten: 9.99…E+125
	MinNumberExp    = -130 // smallest power of ten of a non-zero number: 1E-130
)

// ErrNumber is wrapped by every error CheckNumber returns.
var ErrNumber = errors.New("ddbjson: not a DynamoDB number")

// CheckNumber reports whether s is a number DynamoDB accepts: decimal
// syntax (an optional sign, digits with an optional fraction, an optional
// exponent, such as -12, 3.25, .5 or 6.02E23), at most 38 significant digits,
// and a magnitude between 1E-130 and 9.99…E+125 (or zero). The error wraps
// ErrNumber and says which rule s breaks.
func CheckNumber(s string) error {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	first, last := -1, -1 // positions of the first and last non-zero digits, counted in digits
	digits, point := 0, -1
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			if c != '0' {
				if first < 0 {
					first = digits
				}
				last = digits
			}
			digits++
		case c == '.' && point < 0:
			point = digits
		default:
			goto mantissaDone
		}
	}
mantissaDone:
	if digits == 0 {
		return fmt.Errorf("%w: %q has no digits", ErrNumber, s)
	}
	if point < 0 {
		point = digits
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		neg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			neg = s[i] == '-'
			i++
		}
		start := i
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			if exp < 1e6 { // far beyond any valid exponent; stop before overflow
				exp = exp*10 + int(s[i]-'0')
			}
		}
		if i == start {
			return fmt.Errorf("%w: %q has an exponent without digits", ErrNumber, s)
		}
		if neg {
			exp = -exp
		}
	}
	if i < len(s) {
		return fmt.Errorf("%w: %q has an unexpected %q at byte %d", ErrNumber, s, s[i], i)
	}
	if first < 0 {
		return nil // zero, whatever its exponent
	}
	if n := last - first + 1; n > MaxNumberDigits {
		return fmt.Errorf("%w: %q has %d significant digits, DynamoDB keeps at most %d", ErrNumber, s, n, MaxNumberDigits)
	}
	// The value is d.ddd × 10^e, d being the first non-zero digit.
	e := point - first - 1 + exp
	if e > MaxNumberExp {
		return fmt.Errorf("%w: %q is larger than DynamoDB's largest number, 9.9999999999999999999999999999999999999E+125", ErrNumber, s)
	}
	if e < MinNumberExp {
		return fmt.Errorf("%w: %q is closer to zero than DynamoDB's smallest number, 1E-130", ErrNumber, s)
	}
	return nil
}

// IsJSONNumber reports whether s matches JSON's number grammar,
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func IsJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - start
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}
