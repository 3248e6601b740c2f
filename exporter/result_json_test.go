package exporter_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/transform"
)

func TestAppendResultJSON(t *testing.T) {
	tests := []struct {
		name string
		r    exporter.Result
		want string
	}{
		{
			name: "root: no parent_id",
			r:    exporter.Result{ID: "CM1", Attrs: transform.Attrs{}},
			want: `{"id":"CM1","relative_depth":0,"attributes":{}}`,
		},
		{
			name: "read through a link: via_link",
			r:    exporter.Result{ID: "CM8", Parent: "CM4", Via: "L8", Attrs: transform.Attrs{"name": &types.AttributeValueMemberS{Value: "Piston"}}},
			want: `{"id":"CM8","parent_id":"CM4","relative_depth":0,"via_link":"L8","attributes":{"name":"Piston"}}`,
		},
		{
			name: "every type, names in order, numbers exact",
			r: exporter.Result{ID: "CM4", Parent: "CM2", RelativeDepth: 2, Attrs: transform.Attrs{
				"s":    &types.AttributeValueMemberS{Value: "Motor \"V8\" ¦ ü"},
				"n":    &types.AttributeValueMemberN{Value: "12345678901234567890.123456789"},
				"b":    &types.AttributeValueMemberB{Value: []byte{0, 255}},
				"t":    &types.AttributeValueMemberBOOL{Value: true},
				"null": &types.AttributeValueMemberNULL{Value: true},
				"l":    &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberN{Value: "1.5"}, &types.AttributeValueMemberS{Value: "x"}}},
				"m":    &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"z": &types.AttributeValueMemberBOOL{}, "a": &types.AttributeValueMemberNULL{Value: true}}},
				"ss":   &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
			}},
			want: `{"id":"CM4","parent_id":"CM2","relative_depth":2,"attributes":{"b":"AP8=","l":[1.5,"x"],"m":{"a":null,"z":false},"n":12345678901234567890.123456789,"null":null,"s":"Motor \"V8\" ¦ ü","ss":["a","b"],"t":true}}`,
		},
		{
			name: "number text DynamoDB accepts but JSON does not",
			r:    exporter.Result{ID: "x", Parent: "p", RelativeDepth: 1, Attrs: transform.Attrs{"n": &types.AttributeValueMemberN{Value: "+.50"}}},
			want: `{"id":"x","parent_id":"p","relative_depth":1,"attributes":{"n":0.5}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := exporter.AppendResultJSON(nil, tt.r)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	t.Run("error names the attribute", func(t *testing.T) {
		_, err := exporter.AppendResultJSON(nil, exporter.Result{ID: "x", Attrs: transform.Attrs{"bad": nil}})
		if err == nil || !strings.Contains(err.Error(), `"bad"`) || !strings.Contains(err.Error(), `"x"`) {
			t.Errorf("err = %v", err)
		}
	})
}

// plainOf is what a value becomes in plain JSON, read back: binary is a
// base64 string, sets are lists.
func plainOf(v types.AttributeValue) types.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberB:
		return &types.AttributeValueMemberS{Value: base64.StdEncoding.EncodeToString(v.Value)}
	case *types.AttributeValueMemberSS:
		l := make([]types.AttributeValue, len(v.Value))
		for i, s := range v.Value {
			l[i] = &types.AttributeValueMemberS{Value: s}
		}
		return &types.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberNS:
		l := make([]types.AttributeValue, len(v.Value))
		for i, s := range v.Value {
			l[i] = &types.AttributeValueMemberN{Value: s}
		}
		return &types.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberBS:
		l := make([]types.AttributeValue, len(v.Value))
		for i, b := range v.Value {
			l[i] = plainOf(&types.AttributeValueMemberB{Value: b})
		}
		return &types.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberL:
		l := make([]types.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = plainOf(e)
		}
		return &types.AttributeValueMemberL{Value: l}
	case *types.AttributeValueMemberM:
		m := make(map[string]types.AttributeValue, len(v.Value))
		for k, e := range v.Value {
			m[k] = plainOf(e)
		}
		return &types.AttributeValueMemberM{Value: m}
	}
	return v
}

// FuzzAppendResultJSON encodes any item a DynamoDB JSON line holds as a
// query result: the line is valid JSON, and reading it back gives the id,
// the parent, the depth and the attributes (as plain JSON types them).
func FuzzAppendResultJSON(f *testing.F) {
	f.Add(`{"Item":{"a":{"S":"x"},"n":{"N":"1.50"},"b":{"B":"AAE="}}}`, "CM2", "CM1", 3)
	f.Add(`{"Item":{"m":{"M":{"l":{"L":[{"NULL":true},{"BOOL":false},{"NS":["1","2e3"]}]}}}}}`, "\u2028\"", "", 0)
	f.Add(`{"Item":{"\u0000":{"SS":["\ud83d\ude00","<>&"]},"bs":{"BS":["AA=="]}}}`, "x", "y", -1)
	f.Fuzz(func(t *testing.T, line, id, parent string, depth int) {
		item, err := ddbjson.DecodeLine([]byte(line))
		if err != nil || id == "" {
			return
		}
		r := exporter.Result{ID: id, Parent: parent, RelativeDepth: depth, Attrs: item}
		out, err := exporter.AppendResultJSON(nil, r)
		if err != nil {
			t.Fatalf("AppendResultJSON(%s): %v", line, err)
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON %s", out)
		}
		var back struct {
			ID            *string         `json:"id"`
			Parent        *string         `json:"parent_id"`
			RelativeDepth *int            `json:"relative_depth"`
			Attributes    json.RawMessage `json:"attributes"`
		}
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatal(err)
		}
		if utf8.ValidString(id) && (back.ID == nil || *back.ID != id) {
			t.Fatalf("id %q came back as %v", id, back.ID)
		}
		if (back.Parent != nil) != (parent != "") {
			t.Fatalf("parent %q came back as %v", parent, back.Parent)
		}
		if back.RelativeDepth == nil || *back.RelativeDepth != depth {
			t.Fatalf("depth %d came back as %v", depth, back.RelativeDepth)
		}
		attrs, err := ddbjson.DecodePlainObject(back.Attributes)
		if err != nil {
			t.Fatalf("attributes %s: %v", back.Attributes, err)
		}
		for k, v := range item {
			if !exporter.SameValue(attrs[k], plainOf(v)) {
				t.Fatalf("attribute %q: %s came back as %s", k, ddbjson.AppendValue(nil, v), ddbjson.AppendValue(nil, attrs[k]))
			}
		}
		if len(attrs) != len(item) {
			t.Fatalf("%d attributes came back, want %d", len(attrs), len(item))
		}
	})
}
