package ddbjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestDecodePlainObject(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want item
	}{
		{
			name: "every JSON type",
			in:   `{"s":"x","e":"","n":-1.50e+3,"t":true,"f":false,"z":null,"l":[1,"a",[]],"m":{"k":{}}}`,
			want: item{
				"s": &types.AttributeValueMemberS{Value: "x"},
				"e": &types.AttributeValueMemberS{Value: ""},
				"n": &types.AttributeValueMemberN{Value: "-1.50e+3"},
				"t": &types.AttributeValueMemberBOOL{Value: true},
				"f": &types.AttributeValueMemberBOOL{Value: false},
				"z": &types.AttributeValueMemberNULL{Value: true},
				"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{
					&types.AttributeValueMemberN{Value: "1"},
					&types.AttributeValueMemberS{Value: "a"},
					&types.AttributeValueMemberL{Value: []types.AttributeValue{}},
				}},
				"m": &types.AttributeValueMemberM{Value: item{"k": &types.AttributeValueMemberM{Value: item{}}}},
			},
		},
		{
			name: "big integer kept exactly",
			in:   `{"n":12345678901234567890123456789012345678}`,
			want: item{"n": &types.AttributeValueMemberN{Value: "12345678901234567890123456789012345678"}},
		},
		{
			name: "unicode",
			in:   "{\"имя\":\"😀\\u00e9\"}",
			want: item{"имя": &types.AttributeValueMemberS{Value: "😀é"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodePlainObject([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %s\nwant %s", AppendItem(nil, got), AppendItem(nil, tt.want))
			}
		})
	}
}

func TestDecodePlainErrors(t *testing.T) {
	tests := []struct {
		name, in, path, msg string
	}{
		{name: "not an object", in: `[1]`, msg: "want an object, found an array"},
		{name: "empty", in: ` `, msg: "empty input"},
		{name: "trailing comma", in: `{"a":1,}`, msg: "want a key in quotes"},
		{name: "leading zero", in: `{"a":01}`, path: "a", msg: `bad number "01": a leading zero`},
		{name: "bare point", in: `{"a":1.}`, path: "a", msg: "no digits after the decimal point"},
		{name: "too many digits", in: `{"a":{"b":[1234567890123456789012345678901234567890]}}`, path: "a.b[0]", msg: "39 significant digits"},
		{name: "too large", in: `{"a":1e400}`, path: "a", msg: "larger than DynamoDB's largest number"},
		{name: "duplicate key", in: `{"a":1,"a":2}`, msg: `key "a" appears twice`},
		{name: "NaN", in: `{"a":NaN}`, path: "a", msg: "want a JSON value, found 'N'"},
		{name: "single quotes", in: `{'a':1}`, msg: "want a key in quotes, found '\\''"},
		{name: "unclosed", in: `{"a":[1,2`, path: "a", msg: "found the end of the input"},
		{name: "two objects", in: `{"a":1}{"b":2}`, msg: "found an object after the value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodePlainObject([]byte(tt.in))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want *Error", err)
			}
			if !strings.Contains(e.Msg, tt.msg) || e.Path != tt.path {
				t.Errorf("got path %q message %q; want path %q message containing %q", e.Path, e.Msg, tt.path, tt.msg)
			}
		})
	}
}

// toPlain turns a decoded value back into what encoding/json with UseNumber
// would have produced, to compare the two decoders.
func toPlain(v types.AttributeValue) any {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return json.Number(v.Value)
	case *types.AttributeValueMemberBOOL:
		return v.Value
	case *types.AttributeValueMemberNULL:
		return nil
	case *types.AttributeValueMemberL:
		out := []any{}
		for _, e := range v.Value {
			out = append(out, toPlain(e))
		}
		return out
	case *types.AttributeValueMemberM:
		out := map[string]any{}
		for k, e := range v.Value {
			out[k] = toPlain(e)
		}
		return out
	}
	panic("unexpected type")
}

// FuzzDecodePlainValue checks the plain decoder against encoding/json: it
// never accepts what encoding/json rejects, and what it accepts means the same.
func FuzzDecodePlainValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e3,"x",true,false,null,{}]}`, `"\ud83d\ude00"`, `0`, `-0.0E-0`, `[]`, ` {"a" : { "b" : [ ] } } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := DecodePlainValue(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error of type %T", err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var want any
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if got := toPlain(v); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: got %#v, encoding/json %#v", data, got, want)
		}
	})
}
