package transform

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
func m(a Attrs) types.AttributeValue  { return &types.AttributeValueMemberM{Value: a} }
func l(e ...types.AttributeValue) types.AttributeValue {
	return &types.AttributeValueMemberL{Value: e}
}

// nest is v inside depth lists.
func nest(depth int, v types.AttributeValue) types.AttributeValue {
	for range depth {
		v = l(v)
	}
	return v
}

// TestCheckAttrs holds one case for each rule DynamoDB applies to an
// attribute (its developer guide, "Supported data types and naming rules"
// and "Constraints"), on either side of each limit.
func TestCheckAttrs(t *testing.T) {
	tests := []struct {
		name  string
		attrs Attrs
		err   string // "" for valid
	}{
		{"every type", Attrs{"s": s(""), "n": n("-1.5E3"), "b": &types.AttributeValueMemberB{Value: []byte{}},
			"t": &types.AttributeValueMemberBOOL{Value: true}, "z": &types.AttributeValueMemberNULL{Value: true},
			"l": l(), "m": m(Attrs{}), "ss": &types.AttributeValueMemberSS{Value: []string{"a", "", "A"}},
			"ns": &types.AttributeValueMemberNS{Value: []string{"1", "1.5", "-1", "10"}},
			"bs": &types.AttributeValueMemberBS{Value: [][]byte{{1}, {1, 0}, {}}}}, ""},
		{"name of 65,535 bytes", Attrs{strings.Repeat("x", 65535): s("v")}, ""},
		{"name of 65,536 bytes", Attrs{strings.Repeat("x", 65536): s("v")}, `the attribute name "xxxx`},
		{"name of 65,536 bytes in a map", Attrs{"m": m(Attrs{strings.Repeat("x", 65536): s("v")})}, "attribute m: in a map, the attribute name"},
		{"empty name", Attrs{"": s("v")}, "an attribute name is empty"},
		{"name not UTF-8", Attrs{"a\xff": s("v")}, "is not valid UTF-8"},
		{"empty map key", Attrs{"m": m(Attrs{"": n("1")})}, "attribute m: a map has an empty key"},
		{"empty map key in a list", Attrs{"l": l(n("1"), m(Attrs{"": n("1")}))}, "attribute l[1]: a map has an empty key"},
		{"empty map key deep", Attrs{"m": m(Attrs{"a b": m(Attrs{"": n("1")})})}, `attribute m."a b": a map has an empty key`},
		{"string not UTF-8", Attrs{"s": s("\xff")}, "attribute s: the string is not valid UTF-8"},
		{"38 digits", Attrs{"n": n(strings.Repeat("9", 38))}, ""},
		{"39 digits", Attrs{"n": n(strings.Repeat("9", 39))}, "has 39 significant digits"},
		{"largest number", Attrs{"n": n("9.9999999999999999999999999999999999999E+125")}, ""},
		{"over the largest number", Attrs{"n": n("1E+126")}, "larger than DynamoDB's largest number"},
		{"smallest number", Attrs{"n": n("-1E-130")}, ""},
		{"under the smallest number", Attrs{"n": n("1E-131")}, "closer to zero than DynamoDB's smallest number"},
		{"not a number", Attrs{"n": n("1x")}, "not a DynamoDB number"},
		{"number in a set", Attrs{"ns": &types.AttributeValueMemberNS{Value: []string{"1", "NaN"}}}, "attribute ns[1]: not a DynamoDB number"},
		{"empty SS", Attrs{"ss": &types.AttributeValueMemberSS{}}, "SS is empty"},
		{"empty NS", Attrs{"ns": &types.AttributeValueMemberNS{}}, "NS is empty"},
		{"empty BS", Attrs{"bs": &types.AttributeValueMemberBS{}}, "BS is empty"},
		{"SS twice", Attrs{"ss": &types.AttributeValueMemberSS{Value: []string{"a", "b", "a"}}}, `attribute ss: SS holds "a" twice (members 0 and 2)`},
		{"NS twice by value", Attrs{"ns": &types.AttributeValueMemberNS{Value: []string{"1", "1.0"}}}, `NS holds "1" and "1.0", equal by value, twice`},
		{"NS twice by exponent", Attrs{"ns": &types.AttributeValueMemberNS{Value: []string{"150", "+1.5e2"}}}, "equal by value"},
		{"NS zeros", Attrs{"ns": &types.AttributeValueMemberNS{Value: []string{"0", "-0.0"}}}, "equal by value"},
		{"BS twice", Attrs{"bs": &types.AttributeValueMemberBS{Value: [][]byte{{1, 2}, {3}, {1, 2}}}}, "BS holds the same bytes twice (members 0 and 2)"},
		{"a large set twice", Attrs{"ss": &types.AttributeValueMemberSS{Value: strings.Split("a b c d e f g h i j k l m n o p q r s t c", " ")}}, `"c" twice (members 2 and 20)`},
		{"NULL false", Attrs{"z": &types.AttributeValueMemberNULL{Value: false}}, "NULL is false"},
		{"nesting of 32 levels", Attrs{"l": nest(31, n("1"))}, ""},
		{"nesting of 33 levels", Attrs{"l": nest(32, n("1"))}, "nest deeper than DynamoDB's 32 levels"},
		{"the first problem by name", Attrs{"b": n("x"), "a": n("y")}, "attribute a:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckAttrs(tt.attrs)
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrAttrValue) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("CheckAttrs: %v, want ErrAttrValue saying %q", err, tt.err)
			}
		})
	}
}

func TestNumberKey(t *testing.T) {
	same := [][]string{{"1", "1.0", "+1", "10E-1", "0.1e1", "001.000"}, {"0", "-0", "0.000", "0E5"}, {"-2.5", "-25e-1"}, {".5", "0.5", "5E-1"}}
	for _, group := range same {
		for _, x := range group[1:] {
			if numberKey(x) != numberKey(group[0]) {
				t.Errorf("numberKey(%q) = %q, numberKey(%q) = %q: want equal", x, numberKey(x), group[0], numberKey(group[0]))
			}
		}
	}
	differ := []string{"1", "-1", "10", "0.1", "11", "1.1", "0"}
	for i, a := range differ {
		for _, b := range differ[i+1:] {
			if numberKey(a) == numberKey(b) {
				t.Errorf("numberKey(%q) = numberKey(%q) = %q", a, b, numberKey(a))
			}
		}
	}
}
