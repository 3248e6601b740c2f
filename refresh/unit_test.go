package refresh

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/itemdigest"
	"github.com/treeport/treeport/layouts"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func TestPlanFileRoundTrip(t *testing.T) {
	ops := []Op{
		{Kind: Put, Reason: ReasonMoved, ID: "D", WCU: 3, Item: layouts.Item{"Id": s("D"), "Path": s("A|E|D"), "n": n("1.50")}},
		{Kind: Delete, Reason: ReasonRemoved, ID: "X \"q\"", WCU: 1, Item: layouts.Item{"Id": s("X \"q\""), "RelativeDepth": n("2")}},
	}
	var buf bytes.Buffer
	pw, err := NewPlanWriter(&buf, PlanHeader{Table: "T", Layout: "closure", Snapshot: "s.csv"})
	if err != nil {
		t.Fatal(err)
	}
	sum := &Summary{Table: "T", ByReason: map[Reason]*Count{}}
	for _, r := range Reasons {
		sum.ByReason[r] = &Count{}
	}
	for _, op := range ops {
		if err := pw.Write(op); err != nil {
			t.Fatal(err)
		}
		sum.Add(op)
	}
	if err := pw.Close(sum); err != nil {
		t.Fatal(err)
	}
	var got []Op
	h, s2, err := ReadPlan(bytes.NewReader(buf.Bytes()), func(op Op) error { got = append(got, op); return nil })
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if h.Table != "T" || h.Layout != "closure" || h.Version != PlanFileVersion {
		t.Errorf("header %+v", h)
	}
	if s2.Total.Puts != 1 || s2.Total.Deletes != 1 || s2.Total.WCU != 4 || s2.ByReason[ReasonMoved].Puts != 1 {
		t.Errorf("summary %+v", s2)
	}
	var d itemdigest.Digester
	if len(got) != len(ops) {
		t.Fatalf("read %d ops, wrote %d", len(got), len(ops))
	}
	for i := range ops {
		g, w := got[i], ops[i]
		if g.Kind != w.Kind || g.Reason != w.Reason || g.ID != w.ID || g.WCU != w.WCU || d.Item(g.Item) != d.Item(w.Item) {
			t.Errorf("op %d: got %+v, want %+v", i, g, w)
		}
	}
	// A file cut short is an error, not a shorter plan.
	cut := buf.Bytes()[:bytes.Index(buf.Bytes(), []byte(`"summary"`))]
	if _, _, err := ReadPlan(bytes.NewReader(cut), func(Op) error { return nil }); err == nil {
		t.Error("a plan cut before its summary was read without an error")
	}
}

func TestReadEditsErrors(t *testing.T) {
	good := "# moves\n{\"op\":\"move\",\"id\":\"D\",\"parent\":\"E\"}\n\n{\"op\":\"move\",\"id\":\"D\",\"parent\":null}\n" +
		"{\"op\":\"delete\",\"id\":\"X\"}\n{\"op\":\"set\",\"id\":\"Y\",\"attributes\":{\"n\":1.5,\"t\":[1,\"a\"]},\"remove\":[\"old\"]}\n"
	edits, err := readEdits(strings.NewReader(good), "ops.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(edits) != 4 || edits[0].Parent != "E" || edits[1].Parent != "" || edits[1].Line != 4 || edits[3].Line != 6 {
		t.Fatalf("edits %+v", edits)
	}
	if v, ok := edits[3].Attrs["n"].(*types.AttributeValueMemberN); !ok || v.Value != "1.5" {
		t.Errorf("set attributes %v", edits[3].Attrs)
	}
	for _, c := range []struct{ text, want string }{
		{`{"op":"move","id":"D"}`, "without a \"parent\""},
		{`{"op":"move","parent":"E"}`, "without an \"id\""},
		{`{"op":"copy","id":"D"}`, `op "copy"`},
		{`{"op":"delete","id":"D","parent":"E"}`, "only an id"},
		{`{"op":"set","id":"D"}`, "without \"attributes\""},
		{`{"op":"set","id":"D","attributes":{"a":1},"parent":"E"}`, "does not move"},
		{`{"op":"move","id":"D","parent":"E","extra":1}`, "unknown field"},
		{`{"op":"move","id":"D","parent":3}`, "string id or null"},
		{`not json`, "not an edit"},
	} {
		_, err := readEdits(strings.NewReader("{\"op\":\"delete\",\"id\":\"ok\"}\n"+c.text+"\n"), "ops.jsonl")
		if err == nil || !errors.Is(err, ErrEdit) || !strings.Contains(err.Error(), "ops.jsonl:2") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want ErrEdit at ops.jsonl:2 saying %q", c.text, err, c.want)
		}
	}
}
