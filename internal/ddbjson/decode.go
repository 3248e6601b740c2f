package ddbjson

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// MaxDepth is how deeply lists and maps may nest, DynamoDB's own limit.
const MaxDepth = 32

// Error is a problem in DynamoDB JSON input: what is wrong, the byte offset
// where it was found, and the attribute it was in.
type Error struct {
	Offset int    // 0-based byte offset in the decoded text
	Path   string // the attribute, such as tags[2].name; "" at the top level
	Msg    string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("ddbjson: byte %d: %s", e.Offset+1, e.Msg)
	}
	return fmt.Sprintf("ddbjson: byte %d, attribute %s: %s", e.Offset+1, e.Path, e.Msg)
}

// DecodeLine decodes one line of a DynamoDB export, {"Item":{...}}. A bare
// item object, without the Item wrapper, is accepted too; an object whose
// only key is "Item" is always read as the wrapper when it can be. Blank
// space around the object is ignored; anything else after it is an error.
// Errors are *Error.
func DecodeLine(line []byte) (map[string]types.AttributeValue, error) {
	d := decoder{data: line}
	item, err := d.wrapped()
	if err == nil {
		return item, nil
	}
	if d.sawWrapper {
		// Maybe an item with one attribute named Item.
		d2 := decoder{data: line}
		if item2, err2 := d2.topItem(); err2 == nil {
			return item2, nil
		}
		return nil, err
	}
	return nil, err
}

// DecodeItem decodes one DynamoDB JSON item object, {"id":{"S":"x"},...}.
// Errors are *Error.
func DecodeItem(data []byte) (map[string]types.AttributeValue, error) {
	d := decoder{data: data}
	return d.topItem()
}

type decoder struct {
	data       []byte
	pos        int
	sawWrapper bool
	str        StringReader

	// wire is set by an ItemReader: the text is what DynamoDB sent, so
	// numbers are taken as they are (DynamoDB checked them on write, and
	// the SDK does not check them either), names are interned, top-level
	// maps are made at the size of the last item, and S and N members come
	// from the slab.
	wire     bool
	names    map[string]string
	lastSize int
	slab     Slab
}

// ItemReader decodes the items of a larger document that DynamoDB itself
// wrote, such as the Items of a Scan response, one at a time and in place.
// It is the decoder of DecodeItem, made for speed on a page of items that
// repeat their names: names are interned, maps made at their size, and the
// members of S and N values allocated a batch at a time (see Slab). Lone
// surrogate escapes are an error, as are the forms DynamoDB never sends
// (NULL false, an empty set), so that a caller that must decode exactly as
// the SDK does can leave such a document to it; a name twice keeps its last
// value, as the SDK keeps it. Strings
// are copied: nothing refers to data afterwards. It is not safe for
// concurrent use.
type ItemReader struct {
	d decoder
}

// NewItemReader returns an ItemReader whose slab allocates slabSize members
// at a time.
func NewItemReader(slabSize int) *ItemReader {
	r := &ItemReader{}
	r.d.wire = true
	r.d.str.StrictSurrogates = true
	r.d.slab.Size = slabSize
	return r
}

// Item decodes the item object that starts at data[pos] and returns it with
// the offset just past it. Errors are *Error.
func (r *ItemReader) Item(data []byte, pos int) (map[string]types.AttributeValue, int, error) {
	r.d.data, r.d.pos = data, pos
	m, err := r.d.item(0)
	return m, r.d.pos, err
}

func (d *decoder) errorf(format string, args ...any) *Error {
	return &Error{Offset: d.pos, Msg: fmt.Sprintf(format, args...)}
}

// wrapped reads {"Item":{...}}, or a bare item when the first key is not Item.
func (d *decoder) wrapped() (map[string]types.AttributeValue, error) {
	d.skipSpace()
	start := d.pos
	if d.pos >= len(d.data) {
		return nil, d.errorf("empty input, want an item object")
	}
	if err := d.expect('{'); err != nil {
		return nil, err
	}
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '"' {
		key, err := d.rawString()
		if err != nil {
			return nil, err
		}
		if string(key) == "Item" {
			d.skipSpace()
			if err := d.expect(':'); err != nil {
				return nil, err
			}
			d.skipSpace()
			if d.pos < len(d.data) && d.data[d.pos] == '{' {
				d.sawWrapper = true
				item, err := d.item(0)
				if err != nil {
					return nil, err
				}
				d.skipSpace()
				if err := d.expect('}'); err != nil {
					if d.pos < len(d.data) && d.data[d.pos] == ',' {
						return nil, d.errorf(`a line holds only "Item"; found another key`)
					}
					return nil, err
				}
				return item, d.end()
			}
		}
	}
	d.pos = start
	return d.topItem()
}

func (d *decoder) topItem() (map[string]types.AttributeValue, error) {
	d.skipSpace()
	if d.pos >= len(d.data) {
		return nil, d.errorf("empty input, want an item object")
	}
	item, err := d.item(0)
	if err != nil {
		return nil, err
	}
	return item, d.end()
}

func (d *decoder) end() error {
	d.skipSpace()
	if d.pos < len(d.data) {
		return d.errorf("found %s after the item; want one item a line", d.describe())
	}
	return nil
}

// item reads an object of attribute names to typed values.
func (d *decoder) item(depth int) (map[string]types.AttributeValue, error) {
	if err := d.expect('{'); err != nil {
		return nil, err
	}
	hint := 0
	if d.wire && depth == 0 {
		hint = d.lastSize
	}
	m := make(map[string]types.AttributeValue, hint)
	d.skipSpace()
	if d.peek() == '}' {
		d.pos++
		return m, nil
	}
	for {
		d.skipSpace()
		keyPos := d.pos
		name, err := d.name()
		if err != nil {
			return nil, err
		}
		if !d.wire { // DynamoDB's own text keeps the last, as the SDK does
			if _, dup := m[name]; dup {
				return nil, &Error{Offset: keyPos, Msg: fmt.Sprintf("attribute %q appears twice", name)}
			}
		}
		d.skipSpace()
		if err := d.expect(':'); err != nil {
			return nil, err
		}
		d.skipSpace()
		v, err := d.value(depth)
		if err != nil {
			return nil, prefix(err, pathName(name))
		}
		m[name] = v
		d.skipSpace()
		switch d.peek() {
		case ',':
			d.pos++
		case '}':
			d.pos++
			if depth == 0 {
				d.lastSize = len(m)
			}
			return m, nil
		default:
			return nil, d.errorf(`want "," or "}" after an attribute, found %s`, d.describe())
		}
	}
}

// value reads one typed value: an object with exactly one key, its type.
func (d *decoder) value(depth int) (types.AttributeValue, error) {
	if d.peek() != '{' {
		return nil, d.errorf(`want a typed value such as {"S":"text"}, found %s`, d.describe())
	}
	d.pos++
	d.skipSpace()
	if d.peek() == '}' {
		return nil, d.errorf("a typed value needs a type, such as S, N or M; found {}")
	}
	tagPos := d.pos
	tag, err := d.rawString()
	if err != nil {
		return nil, err
	}
	d.skipSpace()
	if err := d.expect(':'); err != nil {
		return nil, err
	}
	d.skipSpace()
	var v types.AttributeValue
	switch string(tag) {
	case "S":
		s, err := d.string()
		if err != nil {
			return nil, typeErr(err, "S", "a string")
		}
		if d.wire {
			v = d.slab.S(s)
		} else {
			v = &types.AttributeValueMemberS{Value: s}
		}
	case "N":
		s, err := d.number()
		if err != nil {
			return nil, err
		}
		if d.wire {
			v = d.slab.N(s)
		} else {
			v = &types.AttributeValueMemberN{Value: s}
		}
	case "B":
		b, err := d.binary()
		if err != nil {
			return nil, err
		}
		v = &types.AttributeValueMemberB{Value: b}
	case "BOOL":
		switch {
		case d.literal("true"):
			v = &types.AttributeValueMemberBOOL{Value: true}
		case d.literal("false"):
			v = &types.AttributeValueMemberBOOL{Value: false}
		default:
			return nil, d.errorf("BOOL wants true or false, found %s", d.describe())
		}
	case "NULL":
		if !d.literal("true") {
			return nil, d.errorf("NULL wants true, found %s", d.describe())
		}
		v = &types.AttributeValueMemberNULL{Value: true}
	case "L":
		if v, err = d.list(depth); err != nil {
			return nil, err
		}
	case "M":
		if v, err = d.mapValue(depth); err != nil {
			return nil, err
		}
	case "SS", "NS", "BS":
		if v, err = d.set(string(tag)); err != nil {
			return nil, err
		}
	default:
		return nil, &Error{Offset: tagPos, Msg: fmt.Sprintf("unknown type %q; want S, N, B, BOOL, NULL, L, M, SS, NS or BS", tag)}
	}
	d.skipSpace()
	switch d.peek() {
	case '}':
		d.pos++
		return v, nil
	case ',':
		return nil, d.errorf("a typed value holds exactly one type; found a second key")
	default:
		return nil, d.errorf(`want "}" after the value, found %s`, d.describe())
	}
}

// list reads the array of an L value, each element a typed value.
func (d *decoder) list(depth int) (types.AttributeValue, error) {
	if depth+1 >= MaxDepth {
		return nil, d.errorf("lists and maps nest deeper than DynamoDB's %d levels", MaxDepth)
	}
	var list []types.AttributeValue
	err := d.array("L", func(i int) error {
		e, err := d.value(depth + 1)
		if err != nil {
			return prefix(err, "["+strconv.Itoa(i)+"]")
		}
		list = append(list, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if list == nil {
		list = []types.AttributeValue{}
	}
	return &types.AttributeValueMemberL{Value: list}, nil
}

// mapValue reads the object of an M value, an item one level down.
func (d *decoder) mapValue(depth int) (types.AttributeValue, error) {
	if depth+1 >= MaxDepth {
		return nil, d.errorf("lists and maps nest deeper than DynamoDB's %d levels", MaxDepth)
	}
	if d.peek() != '{' {
		return nil, d.errorf("M wants an object of attributes, found %s", d.describe())
	}
	m, err := d.item(depth + 1)
	if err != nil {
		return nil, err
	}
	return &types.AttributeValueMemberM{Value: m}, nil
}

// set reads the array of an SS, NS or BS value; DynamoDB stores no empty
// set.
func (d *decoder) set(tag string) (types.AttributeValue, error) {
	switch tag {
	case "SS":
		set, err := setOf(d, tag, func() (string, error) {
			s, err := d.string()
			if err != nil {
				return "", typeErr(err, "SS", "strings")
			}
			return s, nil
		})
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberSS{Value: set}, nil
	case "NS":
		set, err := setOf(d, tag, d.number)
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberNS{Value: set}, nil
	case "BS":
		set, err := setOf(d, tag, d.binary)
		if err != nil {
			return nil, err
		}
		return &types.AttributeValueMemberBS{Value: set}, nil
	default:
		return nil, d.errorf("unknown set type %q", tag)
	}
}

// setOf reads the elements of a set of type tag with elem, an error naming
// the element's index; an empty set is an error.
func setOf[T any](d *decoder, tag string, elem func() (T, error)) ([]T, error) {
	var set []T
	err := d.array(tag, func(i int) error {
		e, err := elem()
		if err != nil {
			return prefix(err, "["+strconv.Itoa(i)+"]")
		}
		set = append(set, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(set) == 0 {
		return nil, d.errorf("%s is empty; DynamoDB does not store empty sets", tag)
	}
	return set, nil
}

// array reads a JSON array, calling elem for each element with the decoder
// on its first byte.
func (d *decoder) array(typ string, elem func(i int) error) error {
	if d.peek() != '[' {
		return d.errorf("%s wants an array, found %s", typ, d.describe())
	}
	d.pos++
	d.skipSpace()
	if d.peek() == ']' {
		d.pos++
		return nil
	}
	for i := 0; ; i++ {
		d.skipSpace()
		if err := elem(i); err != nil {
			return err
		}
		d.skipSpace()
		switch d.peek() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return nil
		default:
			return d.errorf(`want "," or "]" in %s, found %s`, typ, d.describe())
		}
	}
}

// number reads a number written as a JSON string, as DynamoDB JSON writes
// it, and checks it is one DynamoDB accepts.
func (d *decoder) number() (string, error) {
	pos := d.pos
	if c := d.peek(); c == '-' || (c >= '0' && c <= '9') {
		return "", d.errorf(`a number is written as a string in DynamoDB JSON, such as {"N":"42"}; found a bare JSON number`)
	}
	s, err := d.string()
	if err != nil {
		return "", typeErr(err, "N", "a string holding a number")
	}
	if d.wire {
		return s, nil
	}
	if err := CheckNumber(s); err != nil {
		return "", &Error{Offset: pos, Msg: strings.TrimPrefix(err.Error(), "ddbjson: ")}
	}
	return s, nil
}

// binary reads base64 (standard alphabet, padded) in a JSON string.
func (d *decoder) binary() ([]byte, error) {
	pos := d.pos
	raw, err := d.rawString()
	if err != nil {
		return nil, typeErr(err, "B", "a base64 string")
	}
	b, err := base64.StdEncoding.AppendDecode(make([]byte, 0, base64.StdEncoding.DecodedLen(len(raw))), raw)
	if err != nil {
		return nil, &Error{Offset: pos, Msg: fmt.Sprintf("binary value is not standard base64: %v", err)}
	}
	return b, nil
}

// typeErr rewords the error of a value that is not a string at all.
func typeErr(err error, typ, want string) error {
	if e, ok := err.(*Error); ok && strings.HasPrefix(e.Msg, "want a string") {
		e.Msg = fmt.Sprintf("%s wants %s, %s", typ, want, strings.TrimPrefix(e.Msg, "want a string, "))
	}
	return err
}

// name reads an attribute name; an ItemReader interns it, since every item
// of a page repeats the same names.
func (d *decoder) name() (string, error) {
	if !d.wire {
		return d.string()
	}
	raw, err := d.rawString()
	if err != nil {
		return "", err
	}
	if s, ok := d.names[string(raw)]; ok {
		return s, nil
	}
	s := string(raw)
	if d.names == nil {
		d.names = make(map[string]string)
	}
	if len(d.names) < 1024 {
		d.names[s] = s
	}
	return s, nil
}

// string reads a JSON string and returns it as a Go string.
func (d *decoder) string() (string, error) {
	b, err := d.rawString()
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// rawString reads a JSON string. The returned bytes alias the input or the
// decoder's scratch buffer; they are valid until the next call.
func (d *decoder) rawString() ([]byte, error) {
	if d.peek() != '"' {
		return nil, d.errorf("want a string, found %s", d.describe())
	}
	text, end, fault := d.str.Read(d.data, d.pos)
	d.pos = end
	switch fault {
	case StringOK:
		return text, nil
	case ControlChar:
		return nil, d.errorf("control character %#02x in a string; JSON needs it escaped", d.data[end])
	case BadUTF8:
		return nil, d.errorf("invalid UTF-8 in a string")
	case BadHex:
		return nil, d.errorf(`bad \u escape; want four hex digits`)
	case BadEscape:
		return nil, d.errorf("bad escape %q in a string", "\\"+string(rune(d.data[end+1])))
	}
	return nil, d.errorf("unterminated string")
}

func (d *decoder) literal(word string) bool {
	if len(d.data)-d.pos >= len(word) && string(d.data[d.pos:d.pos+len(word)]) == word {
		d.pos += len(word)
		return true
	}
	return false
}

func (d *decoder) expect(c byte) error {
	if d.peek() != c || d.pos >= len(d.data) {
		return d.errorf("want %q, found %s", c, d.describe())
	}
	d.pos++
	return nil
}

func (d *decoder) peek() byte {
	if d.pos < len(d.data) {
		return d.data[d.pos]
	}
	return 0
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// describe names what is at the current position, for error messages.
func (d *decoder) describe() string {
	if d.pos >= len(d.data) {
		return "the end of the input"
	}
	switch c := d.data[d.pos]; {
	case c == '"':
		return "a string"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	case bytes.HasPrefix(d.data[d.pos:], []byte("true")) || bytes.HasPrefix(d.data[d.pos:], []byte("false")):
		return "a boolean"
	case bytes.HasPrefix(d.data[d.pos:], []byte("null")):
		return "null"
	case c >= 0x20 && c < utf8.RuneSelf:
		return strconv.QuoteRune(rune(c))
	default:
		return fmt.Sprintf("byte %#02x", c)
	}
}

// prefix adds a path segment in front of an error's attribute path as the
// error travels up.
func prefix(err error, seg string) error {
	e, ok := err.(*Error)
	if !ok {
		return err
	}
	switch {
	case e.Path == "":
		e.Path = seg
	case strings.HasPrefix(e.Path, "["):
		e.Path = seg + e.Path
	default:
		e.Path = seg + "." + e.Path
	}
	return e
}

// pathName writes an attribute name for a path: as it is when it is a plain
// word, quoted otherwise.
func pathName(name string) string {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return strconv.Quote(name)
		}
	}
	if name == "" {
		return `""`
	}
	return name
}
