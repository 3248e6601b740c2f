package itemdigest

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func TestDigestComparesByValue(t *testing.T) {
	var d Digester
	base := layouts.Item{
		"Id": s("A"), "size": n("1.50"), "tags": &types.AttributeValueMemberSS{Value: []string{"x", "y"}},
		"nums": &types.AttributeValueMemberNS{Value: []string{"1", "2.0"}},
		"m":    &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"a": n("10"), "b": &types.AttributeValueMemberNULL{Value: true}}},
		"l":    &types.AttributeValueMemberL{Value: []types.AttributeValue{s("p"), n("2")}},
		"bin":  &types.AttributeValueMemberB{Value: []byte{0, 1}},
		"ok":   &types.AttributeValueMemberBOOL{Value: true},
	}
	same := layouts.Item{
		"Id": s("A"), "size": n("1.5"), "tags": &types.AttributeValueMemberSS{Value: []string{"y", "x"}},
		"nums": &types.AttributeValueMemberNS{Value: []string{"2", "1e0"}},
		"m":    &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"b": &types.AttributeValueMemberNULL{Value: true}, "a": n("1e1")}},
		"l":    &types.AttributeValueMemberL{Value: []types.AttributeValue{s("p"), n("2.00")}},
		"bin":  &types.AttributeValueMemberB{Value: []byte{0, 1}},
		"ok":   &types.AttributeValueMemberBOOL{Value: true},
	}
	if d.Item(base) != d.Item(same) {
		t.Fatal("equal items (numbers by value, sets in any order) have different digests")
	}
	changes := map[string]types.AttributeValue{
		"size": n("1.51"),
		"tags": &types.AttributeValueMemberSS{Value: []string{"x"}},
		"l":    &types.AttributeValueMemberL{Value: []types.AttributeValue{n("2"), s("p")}}, // lists keep their order
		"bin":  &types.AttributeValueMemberB{Value: []byte{0, 2}},
		"ok":   &types.AttributeValueMemberBOOL{Value: false},
		"Id":   n("1"), // another type
		"new":  s(""),
	}
	for name, v := range changes {
		other := layouts.Item{}
		for k, v := range base {
			other[k] = v
		}
		other[name] = v
		if d.Item(other) == d.Item(base) {
			t.Errorf("changing %s to %v left the digest unchanged", name, v)
		}
	}
	// A string and a number of the same text differ; so do a missing and
	// an empty attribute.
	if d.Item(layouts.Item{"a": s("1")}) == d.Item(layouts.Item{"a": n("1")}) {
		t.Error("S 1 and N 1 have the same digest")
	}
	if d.Item(layouts.Item{}) == d.Item(layouts.Item{"a": s("")}) {
		t.Error("no attribute and an empty string have the same digest")
	}
	// Names and values cannot run into each other.
	if d.Item(layouts.Item{"ab": s("c")}) == d.Item(layouts.Item{"a": s("bc")}) {
		t.Error("ab=c and a=bc have the same digest")
	}
}

func TestKeyRoundTrip(t *testing.T) {
	for _, name := range layouts.Names() {
		l, err := layouts.New(name, layouts.Options{})
		if err != nil {
			t.Fatal(err)
		}
		spec := l.Table()
		item := layouts.Item{spec.PK.Name: s("a¦b|c\x00d 😀")}
		if spec.SK != nil {
			if spec.SK.Type == types.ScalarAttributeTypeN {
				item[spec.SK.Name] = n("12")
			} else {
				item[spec.SK.Name] = s("")
			}
		}
		k := KeyOf(spec, item)
		back, err := DecodeKey(spec, k)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var d Digester
		if d.Item(back) != d.Item(item) || len(back) != len(item) {
			t.Errorf("%s: key %v came back as %v", name, item, back)
		}
		if _, err := DecodeKey(spec, k[:len(k)-1]); err == nil {
			t.Errorf("%s: a truncated key decoded", name)
		}
	}
}
