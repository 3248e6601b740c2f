package exporter

import (
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/transform"
)

// TestDiffEncodedAttrs: attributes as the sorts of verify out of core hold
// them (DynamoDB JSON) differ exactly as the records' own do, for every
// type, numbers by value and sets in any order.
func TestDiffEncodedAttrs(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	base := transform.Attrs{
		"s": s("x"), "n": n("1.50"), "b": &types.AttributeValueMemberB{Value: []byte{0, 1, 2}},
		"bool": &types.AttributeValueMemberBOOL{Value: true}, "null": &types.AttributeValueMemberNULL{Value: true},
		"l":  &types.AttributeValueMemberL{Value: []types.AttributeValue{s("a"), n("2")}},
		"m":  &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": s("v")}},
		"ss": &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
		"ns": &types.AttributeValueMemberNS{Value: []string{"1", "20"}},
		"bs": &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2}}},
	}
	with := func(k string, v types.AttributeValue) transform.Attrs {
		out := transform.Attrs{}
		for name, val := range base {
			out[name] = val
		}
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name  string
		table transform.Attrs
		same  bool
	}{
		{"equal", base, true},
		{"a number by value", with("n", n("1.5")), true},
		{"sets in another order", with("ns", &types.AttributeValueMemberNS{Value: []string{"20", "1.0"}}), true},
		{"a string set in another order", with("ss", &types.AttributeValueMemberSS{Value: []string{"b", "a"}}), true},
		{"another type", with("n", s("1.5")), false},
		{"another binary", with("b", &types.AttributeValueMemberB{Value: []byte{0, 1, 3}}), false},
		{"a list in another order", with("l", &types.AttributeValueMemberL{Value: []types.AttributeValue{n("2"), s("a")}}), false},
		{"missing from the table", with("m", nil), false},
		{"not in the file", with("new", &types.AttributeValueMemberBOOL{Value: false}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := diffAttrs(base, tt.table)
			got, err := diffEncodedAttrs(ddbjson.AppendItem(nil, base), ddbjson.AppendItem(nil, tt.table))
			if err != nil {
				t.Fatal(err)
			}
			if (len(got) == 0) != tt.same || len(got) != len(want) {
				t.Fatalf("got %d differences, want %d (same: %v)", len(got), len(want), tt.same)
			}
			for i := range got {
				if got[i].Name != want[i].Name || got[i].Kind() != want[i].Kind() || valueText(got[i].File) != valueText(want[i].File) ||
					valueText(got[i].Table) != valueText(want[i].Table) {
					t.Errorf("difference %d: %+v, want %+v", i, got[i], want[i])
				}
			}
		})
	}
	if !reflect.DeepEqual(diffAttrs(base, base), []AttrDiff(nil)) {
		t.Errorf("a record differs from itself")
	}
}
