package ddbjson

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

type item = map[string]types.AttributeValue

func sampleItem() item {
	return item{
		"id":    &types.AttributeValueMemberS{Value: "CM1"},
		"size":  &types.AttributeValueMemberN{Value: "-12.50e3"},
		"blob":  &types.AttributeValueMemberB{Value: []byte{0, 1, 2, 0xff}},
		"ok":    &types.AttributeValueMemberBOOL{Value: true},
		"no":    &types.AttributeValueMemberBOOL{Value: false},
		"nil":   &types.AttributeValueMemberNULL{Value: true},
		"empty": &types.AttributeValueMemberS{Value: ""},
		"text":  &types.AttributeValueMemberS{Value: "quote \" back \\ nl \n tab \t ctl \x01 é 😀 \u2028"},
		"list": &types.AttributeValueMemberL{Value: []types.AttributeValue{
			&types.AttributeValueMemberS{Value: "a"},
			&types.AttributeValueMemberN{Value: "1"},
			&types.AttributeValueMemberL{Value: []types.AttributeValue{}},
		}},
		"map": &types.AttributeValueMemberM{Value: item{
			"z":          &types.AttributeValueMemberS{Value: "last"},
			"a":          &types.AttributeValueMemberM{Value: item{}},
			"with space": &types.AttributeValueMemberNULL{Value: true},
		}},
		"ss":   &types.AttributeValueMemberSS{Value: []string{"x", "y"}},
		"ns":   &types.AttributeValueMemberNS{Value: []string{"1", "2.5"}},
		"bs":   &types.AttributeValueMemberBS{Value: [][]byte{{1}, {}}},
		"ключ": &types.AttributeValueMemberS{Value: "значение"},
	}
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		item item
	}{
		{name: "every type", item: sampleItem()},
		{name: "empty item", item: item{}},
		{name: "attribute named Item", item: item{"Item": &types.AttributeValueMemberS{Value: "x"}}},
		{name: "attribute named Item of type M", item: item{"Item": &types.AttributeValueMemberM{Value: item{"M": &types.AttributeValueMemberM{Value: item{}}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := AppendLine(nil, tt.item)
			if !json.Valid(line) {
				t.Fatalf("AppendLine wrote invalid JSON: %s", line)
			}
			if line[len(line)-1] != '\n' || strings.Count(string(line), "\n") != 1 {
				t.Fatalf("AppendLine should write exactly one line: %q", line)
			}
			got, err := DecodeLine(line)
			if err != nil {
				t.Fatalf("DecodeLine(%s): %v", line, err)
			}
			if !reflect.DeepEqual(got, tt.item) {
				t.Errorf("round trip changed the item\n got %s\nwant %s", AppendItem(nil, got), AppendItem(nil, tt.item))
			}
			bare, err := DecodeItem(AppendItem(nil, tt.item))
			if err != nil {
				t.Fatalf("DecodeItem: %v", err)
			}
			if !reflect.DeepEqual(bare, tt.item) {
				t.Errorf("DecodeItem changed the item")
			}
		})
	}
}

// The SDK's own marshalling is the reference for what each type means:
// encoding/json of the plain Go value and our encoding must agree.
func TestAgreesWithSDK(t *testing.T) {
	in := map[string]any{
		"s": "text", "n": 42, "f": 1.5, "b": []byte("bin"), "t": true,
		"l": []any{"a", 2}, "m": map[string]any{"k": "v"}, "z": nil,
	}
	av, err := attributevalue.MarshalMap(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeItem(AppendItem(nil, av))
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := attributevalue.UnmarshalMap(got, &back); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"s": "text", "n": 42.0, "f": 1.5, "b": []byte("bin"), "t": true,
		"l": []any{"a", 2.0}, "m": map[string]any{"k": "v"}, "z": nil,
	}
	if !reflect.DeepEqual(back, want) {
		t.Errorf("got %#v\nwant %#v", back, want)
	}
}

func TestAppendItemExact(t *testing.T) {
	tests := []struct {
		name string
		item item
		want string
	}{
		{
			name: "sorted keys",
			item: item{"b": &types.AttributeValueMemberN{Value: "2"}, "a": &types.AttributeValueMemberS{Value: "x"}},
			want: `{"a":{"S":"x"},"b":{"N":"2"}}`,
		},
		{
			name: "escapes",
			item: item{"k\"": &types.AttributeValueMemberS{Value: "<\x00\x1f\\/>"}},
			want: `{"k\"":{"S":"<\u0000\u001f\\/>"}}`,
		},
		{
			name: "invalid UTF-8 becomes U+FFFD",
			item: item{"k": &types.AttributeValueMemberS{Value: "a\xffb"}},
			want: `{"k":{"S":"a\ufffdb"}}`,
		},
		{
			name: "binary is standard base64",
			item: item{"k": &types.AttributeValueMemberB{Value: []byte{0xfb, 0xff}}},
			want: `{"k":{"B":"+/8="}}`,
		},
		{
			name: "nil value is NULL",
			item: item{"k": nil},
			want: `{"k":{"NULL":true}}`,
		},
		{
			name: "nested map sorted",
			item: item{"m": &types.AttributeValueMemberM{Value: item{"y": &types.AttributeValueMemberBOOL{}, "x": &types.AttributeValueMemberNULL{Value: true}}}},
			want: `{"m":{"M":{"x":{"NULL":true},"y":{"BOOL":false}}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(AppendItem(nil, tt.item)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestAppendItemManyKeys(t *testing.T) {
	it := item{}
	for _, k := range strings.Split("q w e r t y u i o p a s d f g h j k l z x c v b n m", " ") {
		it[k] = &types.AttributeValueMemberS{Value: k}
	}
	got := string(AppendItem(nil, it))
	if !strings.HasPrefix(got, `{"a":{"S":"a"},"b":{"S":"b"},"c"`) || !strings.HasSuffix(got, `"z":{"S":"z"}}`) {
		t.Errorf("keys not sorted: %s", got)
	}
}

func TestDecodeLineForms(t *testing.T) {
	want := item{"id": &types.AttributeValueMemberS{Value: "x"}}
	tests := []struct {
		name string
		in   string
		want item
	}{
		{name: "export line", in: `{"Item":{"id":{"S":"x"}}}`, want: want},
		{name: "bare item", in: `{"id":{"S":"x"}}`, want: want},
		{name: "spaces and CRLF", in: " \t{ \"Item\" : { \"id\" : { \"S\" : \"x\" } } }\r\n", want: want},
		{name: "escaped key and tag", in: `{"Item":{"\u0069d":{"\u0053":"x"}}}`, want: want},
		{name: "surrogate pair", in: `{"id":{"S":"\ud83d\ude00"}}`, want: item{"id": &types.AttributeValueMemberS{Value: "😀"}}},
		{name: "lone surrogate", in: `{"id":{"S":"\ud83d!"}}`, want: item{"id": &types.AttributeValueMemberS{Value: "\ufffd!"}}},
		{name: "bare item with one attribute named Item", in: `{"Item":{"S":"v"}}`, want: item{"Item": &types.AttributeValueMemberS{Value: "v"}}},
		{name: "number text kept exactly", in: `{"n":{"N":"0001.500E+2"}}`, want: item{"n": &types.AttributeValueMemberN{Value: "0001.500E+2"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeLine([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %s, want %s", AppendItem(nil, got), AppendItem(nil, tt.want))
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		path string // the attribute the error names
		msg  string // part of the message
	}{
		{name: "empty", in: ``, msg: "empty input"},
		{name: "not an object", in: `[1]`, msg: `want '{', found an array`},
		{name: "trailing data", in: `{"Item":{}} x`, msg: `found 'x' after the item`},
		{name: "second top-level key", in: `{"Item":{},"Other":1}`, msg: `only "Item"`},
		{name: "untyped value", in: `{"a":"x"}`, path: "a", msg: `want a typed value`},
		{name: "empty typed value", in: `{"a":{}}`, path: "a", msg: "needs a type"},
		{name: "two types", in: `{"a":{"S":"x","N":"1"}}`, path: "a", msg: "exactly one type"},
		{name: "unknown type", in: `{"a":{"X":"x"}}`, path: "a", msg: `unknown type "X"`},
		{name: "S not a string", in: `{"a":{"S":1}}`, path: "a", msg: "S wants a string, found a number"},
		{name: "bare number", in: `{"a":{"N":1}}`, path: "a", msg: "written as a string"},
		{name: "bad number", in: `{"a":{"N":"1,5"}}`, path: "a", msg: `unexpected ','`},
		{name: "too many digits", in: `{"a":{"N":"123456789012345678901234567890123456789"}}`, path: "a", msg: "39 significant digits"},
		{name: "bad base64", in: `{"a":{"B":"!!"}}`, path: "a", msg: "not standard base64"},
		{name: "bad bool", in: `{"a":{"BOOL":"true"}}`, path: "a", msg: "BOOL wants true or false"},
		{name: "NULL false", in: `{"a":{"NULL":false}}`, path: "a", msg: "NULL wants true"},
		{name: "empty set", in: `{"a":{"SS":[]}}`, path: "a", msg: "empty sets"},
		{name: "NS element", in: `{"a":{"NS":["1","x"]}}`, path: "a[1]", msg: "no digits"},
		{name: "empty NS", in: `{"a":{"NS":[]}}`, path: "a", msg: "NS is empty"},
		{name: "empty BS", in: `{"a":{"BS":[]}}`, path: "a", msg: "BS is empty"},
		{name: "SS element", in: `{"a":{"SS":["x",2]}}`, path: "a[1]", msg: "SS wants strings, found a number"},
		{name: "BS element", in: `{"a":{"BS":["AA==","!!"]}}`, path: "a[1]", msg: "not standard base64"},
		{name: "nested path", in: `{"a b":{"M":{"c":{"L":[{"S":"x"},{"Q":1}]}}}}`, path: `"a b".c[1]`, msg: `unknown type "Q"`},
		{name: "duplicate attribute", in: `{"a":{"S":"x"},"a":{"S":"y"}}`, msg: `attribute "a" appears twice`},
		{name: "invalid UTF-8", in: "{\"a\":{\"S\":\"\xff\"}}", path: "a", msg: "invalid UTF-8"},
		{name: "raw control character", in: "{\"a\":{\"S\":\"\x01\"}}", path: "a", msg: "control character"},
		{name: "bad escape", in: `{"a":{"S":"\q"}}`, path: "a", msg: `bad escape`},
		{name: "unterminated", in: `{"a":{"S":"x`, path: "a", msg: "unterminated string"},
		{name: "truncated", in: `{"Item":{"a":{"S":"x"}`, msg: `found the end of the input`},
		{name: "too deep", in: `{"a":` + strings.Repeat(`{"L":[`, 40) + strings.Repeat(`]}`, 40) + `}`, msg: "nest deeper"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeLine([]byte(tt.in))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got error %v (%T), want *Error", err, err)
			}
			if !strings.Contains(e.Msg, tt.msg) {
				t.Errorf("message %q does not say %q", e.Msg, tt.msg)
			}
			if tt.path != "" && e.Path != tt.path {
				t.Errorf("path %q, want %q (error: %v)", e.Path, tt.path, err)
			}
			if e.Offset < 0 || e.Offset > len(tt.in) {
				t.Errorf("offset %d outside the input", e.Offset)
			}
		})
	}
}

func TestCheckNumber(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{name: "integer", in: "42", ok: true},
		{name: "negative", in: "-42", ok: true},
		{name: "plus", in: "+42", ok: true},
		{name: "fraction", in: "3.25", ok: true},
		{name: "leading point", in: ".5", ok: true},
		{name: "trailing point", in: "5.", ok: true},
		{name: "exponent", in: "6.02E23", ok: true},
		{name: "zero with huge exponent", in: "0e999999999999", ok: true},
		{name: "38 digits", in: "12345678901234567890123456789012345678", ok: true},
		{name: "38 digits with zeros around", in: "000123456789012345678901234567890123456780000", ok: true},
		{name: "39 digits", in: "123456789012345678901234567890123456789"},
		{name: "largest", in: "9.9999999999999999999999999999999999999E+125", ok: true},
		{name: "too large", in: "1E126"},
		{name: "smallest", in: "1E-130", ok: true},
		{name: "too small", in: "0.1E-130"},
		{name: "empty", in: ""},
		{name: "sign only", in: "-"},
		{name: "point only", in: "."},
		{name: "two points", in: "1.2.3"},
		{name: "exponent without digits", in: "1e"},
		{name: "space", in: " 1"},
		{name: "thousands separator", in: "1,000"},
		{name: "hex", in: "0x10"},
		{name: "NaN", in: "NaN"},
		{name: "Infinity", in: "Infinity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckNumber(tt.in)
			if (err == nil) != tt.ok {
				t.Errorf("CheckNumber(%q) = %v, want ok=%v", tt.in, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrNumber) {
				t.Errorf("error %v does not wrap ErrNumber", err)
			}
		})
	}
}

func FuzzDecodeLine(f *testing.F) {
	f.Add(AppendLine(nil, sampleItem()))
	f.Add([]byte(`{"Item":{"id":{"S":"x"},"n":{"N":"1"}}}`))
	f.Add([]byte(`{"id":{"S":"\ud83d\ude00 \u00e9"}}`))
	f.Add([]byte(`{"Item":{"S":"v"}}`))
	f.Add([]byte(`{"a":{"L":[{"M":{"b":{"BS":["AA=="]}}}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		first, err := DecodeLine(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		line := AppendLine(nil, first)
		if !json.Valid(line) {
			t.Fatalf("encoded invalid JSON: %q", line)
		}
		second, err := DecodeLine(line)
		if err != nil {
			t.Fatalf("re-decoding %q: %v", line, err)
		}
		if !reflect.DeepEqual(first, second) {
			t.Fatalf("round trip changed the item:\n%s\n%s", line, AppendLine(nil, second))
		}
	})
}

func BenchmarkAppendLine(b *testing.B) {
	it := item{
		"Id":       &types.AttributeValueMemberS{Value: "node-000123"},
		"ParentId": &types.AttributeValueMemberS{Value: "node-000045"},
		"TreeId":   &types.AttributeValueMemberS{Value: "node-000001"},
		"Path":     &types.AttributeValueMemberS{Value: "node-000001|node-000012|node-000045|node-000123"},
		"Depth":    &types.AttributeValueMemberN{Value: "3"},
		"name":     &types.AttributeValueMemberS{Value: "a file name.txt"},
		"size":     &types.AttributeValueMemberN{Value: "123456"},
		"created":  &types.AttributeValueMemberS{Value: "2024-01-02T03:04:05Z"},
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendLine(buf[:0], it)
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkDecodeLine(b *testing.B) {
	line := AppendLine(nil, item{
		"Id":      &types.AttributeValueMemberS{Value: "node-000123"},
		"Path":    &types.AttributeValueMemberS{Value: "node-000001|node-000012|node-000045|node-000123"},
		"Depth":   &types.AttributeValueMemberN{Value: "3"},
		"name":    &types.AttributeValueMemberS{Value: "a file name.txt"},
		"created": &types.AttributeValueMemberS{Value: "2024-01-02T03:04:05Z"},
	})
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeLine(line); err != nil {
			b.Fatal(err)
		}
	}
}

// AppendString must mean what encoding/json means: the string, with each
// byte of invalid UTF-8 read back as U+FFFD.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain ascii text here", "a\"b\\c\x00\x1f\x7f", "é😀\u2028", "ab\xffcdefghij\xc3", "12345678\"12345678\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ours := AppendString(nil, s)
		var got, want string
		if err := json.Unmarshal(ours, &got); err != nil {
			t.Fatalf("AppendString(%q) = %s, not a JSON string: %v", s, ours, err)
		}
		theirs, _ := json.Marshal(s)
		if err := json.Unmarshal(theirs, &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("AppendString(%q) reads back as %q, encoding/json as %q", s, got, want)
		}
	})
}
