package ddbjson

import (
	"unicode/utf16"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// StringFault says why a JSON string could not be read.
type StringFault uint8

// The faults of a JSON string.
const (
	StringOK      StringFault = iota // a well-formed string
	NotAString                       // no opening quote
	Unterminated                     // no closing quote
	ControlChar                      // an unescaped byte below 0x20
	BadUTF8                          // invalid UTF-8
	BadEscape                        // a backslash before a letter JSON does not escape
	BadHex                           // a \u escape without four hex digits
	LoneSurrogate                    // half of a surrogate pair, with StrictSurrogates
)

// StringReader reads JSON strings out of a buffer, with one scratch buffer
// for the strings that have escapes. It is the string reading of both
// DynamoDB JSON decoders: this package's, which reports where a string goes
// wrong, and the exporter's fast Scan decoder, which leaves any body it
// cannot read to the SDK. The zero value is ready; it is not safe for
// concurrent use.
type StringReader struct {
	// StrictSurrogates makes a lone surrogate escape (\ud83d without its
	// other half) a fault. Without it the escape reads as U+FFFD, as
	// encoding/json reads it.
	StrictSurrogates bool

	scratch []byte
}

// Read reads the JSON string whose opening quote is data[pos]. It returns
// the string's text, which aliases data, or the reader's scratch space when
// the string has escapes, until the next Read; and the index just past the
// closing quote. A string that is not well-formed JSON returns its fault and
// the index where the fault is: the byte at fault, the backslash of a bad
// escape, or the end of the data.
func (r *StringReader) Read(data []byte, pos int) (text []byte, end int, fault StringFault) {
	if pos >= len(data) || data[pos] != '"' {
		return nil, pos, NotAString
	}
	start := pos + 1
	// Fast path: no escapes, printable ASCII or valid UTF-8.
	for i := start; i < len(data); {
		c := data[i]
		switch {
		case c == '"':
			return data[start:i], i + 1, StringOK
		case c == '\\':
			return r.escaped(data, start, i)
		case c < 0x20:
			return nil, i, ControlChar
		case c < utf8.RuneSelf:
			i++
		default:
			ch, size := utf8.DecodeRune(data[i:])
			if ch == utf8.RuneError && size == 1 {
				return nil, i, BadUTF8
			}
			i += size
		}
	}
	return nil, len(data), Unterminated
}

// escaped finishes a string that has escapes; i is the first backslash.
func (r *StringReader) escaped(data []byte, start, i int) ([]byte, int, StringFault) {
	buf := append(r.scratch[:0], data[start:i]...)
	for i < len(data) {
		c := data[i]
		switch {
		case c == '"':
			r.scratch = buf
			return buf, i + 1, StringOK
		case c == '\\':
			if i+1 >= len(data) {
				return nil, i, Unterminated
			}
			e := data[i+1]
			if u := unescape[e]; u != 0 {
				buf = append(buf, u)
				i += 2
				continue
			}
			if e != 'u' {
				return nil, i, BadEscape
			}
			ch, ok := hex4(data[i+2:])
			if !ok {
				return nil, i, BadHex
			}
			at := i
			i += 6
			if utf16.IsSurrogate(ch) {
				ch2, ok := rune(0), false
				if i+1 < len(data) && data[i] == '\\' && data[i+1] == 'u' {
					ch2, ok = hex4(data[i+2:])
				}
				if dec := utf16.DecodeRune(ch, ch2); ok && dec != utf8.RuneError {
					ch = dec
					i += 6
				} else if r.StrictSurrogates {
					return nil, at, LoneSurrogate
				} else {
					ch = utf8.RuneError // a lone surrogate, as encoding/json reads it
				}
			}
			buf = utf8.AppendRune(buf, ch)
		case c < 0x20:
			return nil, i, ControlChar
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			i++
		default:
			ch, size := utf8.DecodeRune(data[i:])
			if ch == utf8.RuneError && size == 1 {
				return nil, i, BadUTF8
			}
			buf = append(buf, data[i:i+size]...)
			i += size
		}
	}
	return nil, len(data), Unterminated
}

// unescape maps the letter of a one-letter escape (\n) to the byte it
// stands for, and every other byte to 0.
var unescape = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// hex4 reads four hex digits.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// Slab hands out the members of S and N values from arrays it allocates a
// batch at a time, so that a decoder pays one allocation a batch rather
// than one a value. Each member handed out is distinct, and the caller may
// keep it; a member kept keeps the memory of its whole batch alive. The
// zero value is ready; it is not safe for concurrent use.
type Slab struct {
	// Size is how many members one allocation holds (128 when 0).
	Size int

	ss []types.AttributeValueMemberS
	ns []types.AttributeValueMemberN
}

func (a *Slab) size() int {
	if a.Size > 0 {
		return a.Size
	}
	return 128
}

// S returns an S value holding v.
func (a *Slab) S(v string) *types.AttributeValueMemberS {
	if len(a.ss) == 0 {
		a.ss = make([]types.AttributeValueMemberS, a.size())
	}
	p := &a.ss[0]
	a.ss = a.ss[1:]
	p.Value = v
	return p
}

// N returns an N value holding v, which the caller has checked.
func (a *Slab) N(v string) *types.AttributeValueMemberN {
	if len(a.ns) == 0 {
		a.ns = make([]types.AttributeValueMemberN, a.size())
	}
	p := &a.ns[0]
	a.ns = a.ns[1:]
	p.Value = v
	return p
}
