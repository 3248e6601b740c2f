package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// readChecked reads the input at path and checks it against the layout.
func readChecked(t *testing.T, path, layout string) (*Input, layouts.Layout, []*transform.RowError) {
	t.Helper()
	in, err := ReadInput(context.Background(), InputOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	l, err := layouts.New(layout, layouts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return in, l, in.CheckLayout(l)
}

// TestReservedAttrRejectsItsRecordsOnly: a reserved attribute name rejects
// the records that have it, each with its own problem, and their subtrees;
// skip mode emits the others, and every record is emitted or rejected.
func TestReservedAttrRejectsItsRecordsOnly(t *testing.T) {
	for _, tt := range []struct{ name, file, data, at string }{
		{"CSV", "in.csv", "id,parent_id,Path\nA,,\nB,A,y\nC,B,\nD,A,\nE,,\nF,E,z\n", "3 B,7 F"},
		{"JSON Lines", "in.jsonl", `{"id":"A"}` + "\n" + `{"id":"B","parent_id":"A","Path":"y"}` + "\n" + `{"id":"C","parent_id":"B"}` + "\n" +
			`{"id":"D","parent_id":"A"}` + "\n" + `{"id":"E"}` + "\n" + `{"id":"F","parent_id":"E","Path":"z","Depth":1}` + "\n", "2 B,6 F"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTemp(t, tt.file, []byte(tt.data))
			in, l, problems := readChecked(t, path, "path")
			var got []string
			for _, p := range problems {
				if !errors.Is(p, transform.ErrReservedAttr) {
					t.Errorf("problem %v is not ErrReservedAttr", p)
				}
				got = append(got, fmt.Sprintf("%d %s", p.Line, p.ID))
			}
			if strings.Join(got, ",") != tt.at {
				t.Errorf("problems at %v, want %s: %v", got, tt.at, problems)
			}
			if tt.name == "JSON Lines" && !strings.Contains(problems[1].Error(), `"Depth"`) {
				t.Errorf("F's problem does not name both of its reserved attributes: %v", problems[1])
			}
			var rejects bytes.Buffer
			st, err := in.Emit(context.Background(), EmitOptions{Layout: l, Rejects: &rejects}, func(int64, layouts.Item) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			if st.Nodes != 3 || st.Rejected != 3 || st.Nodes+st.Rejected != int64(in.Records) {
				t.Errorf("emitted %d nodes, rejected %d, of %d records; want 3 and 3", st.Nodes, st.Rejected, in.Records)
			}
			reasons := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(rejects.String()), "\n") {
				var r struct{ ID, Reason string }
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatal(err)
				}
				reasons[r.ID] = r.Reason
			}
			if !strings.Contains(reasons["B"], `"Path"`) || strings.Contains(reasons["B"], "ancestor") ||
				!strings.Contains(reasons["C"], `ancestor "B"`) || !strings.Contains(reasons["F"], `"Path"`) {
				t.Errorf("reasons: %v", reasons)
			}
		})
	}
}

// TestAttrRuleRejectsItsRecord: a record whose attribute DynamoDB would
// refuse is a problem at its place, rejected with its subtree, in every
// format that carries such values.
func TestAttrRuleRejectsItsRecord(t *testing.T) {
	tests := []struct{ name, file, data, want string }{
		{"SS twice", "in.ddbjson", `{"Item":{"id":{"S":"A"}}}` + "\n" + `{"Item":{"id":{"S":"B"},"parent_id":{"S":"A"},"s":{"SS":["x","x"]}}}` + "\n" + `{"Item":{"id":{"S":"C"},"parent_id":{"S":"B"}}}` + "\n", `SS holds "x" twice`},
		{"NS by value", "in.ddbjson", `{"Item":{"id":{"S":"A"}}}` + "\n" + `{"Item":{"id":{"S":"B"},"parent_id":{"S":"A"},"s":{"NS":["2","2.00"]}}}` + "\n" + `{"Item":{"id":{"S":"C"},"parent_id":{"S":"B"}}}` + "\n", "equal by value"},
		{"empty map key", "in.json", "[\n" + `{"id":"A"},` + "\n" + `{"id":"B","parent_id":"A","m":{"a":{"":1}}},` + "\n" + `{"id":"C","parent_id":"B"}]`, "attribute m.a: a map has an empty key"},
		{"CSV JSON cell", "in.csv", "id,parent_id,j\nA,,\nB,A,\"[{\"\"\"\":1}]\"\nC,B,\n", "attribute j[0]: a map has an empty key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTemp(t, tt.file, []byte(tt.data))
			opts := InputOptions{Path: path}
			if strings.HasSuffix(tt.file, ".csv") {
				opts.Source.Types = map[string]string{"j": "JSON"}
			}
			in, err := ReadInput(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			l, _ := layouts.New("path", layouts.Options{})
			problems := in.CheckLayout(l)
			line := 2
			if strings.HasSuffix(tt.file, ".csv") || strings.HasSuffix(tt.file, ".json") {
				line = 3 // after the header, or the array's opening line
			}
			if len(problems) != 1 || problems[0].Line != line || problems[0].ID != "B" || !strings.Contains(problems[0].Error(), tt.want) {
				t.Fatalf("problems %v, want one at line %d, id B, saying %q", problems, line, tt.want)
			}
			if f := in.Forest; f.RejectedCount() != 2 || f.Rejected(f.Lookup("A")) {
				t.Errorf("%d rejected; want B and C", f.RejectedCount())
			}
		})
	}
}

// TestCheckSize: a layout that writes a few items a node is not measured;
// one that writes more than MaxItemsPerNode a node is, and is refused past
// its limit unless told to go on.
func TestCheckSize(t *testing.T) {
	var chain strings.Builder
	chain.WriteString("id,parent_id\nN0,\n")
	for i := 1; i < 250; i++ {
		fmt.Fprintf(&chain, "N%d,N%d\n", i, i-1)
	}
	path := writeTemp(t, "chain.csv", []byte(chain.String()))
	const items = 250 * 251 / 2
	tests := []struct {
		layout string
		lim    SizeLimit
		size   int64 // 0: not measured
		err    bool
	}{
		{"prefix", SizeLimit{}, 0, false},
		{"prefix", SizeLimit{MaxItems: 400}, 500, true},
		{"closure", SizeLimit{}, items, true},
		{"closure", SizeLimit{MaxItems: items}, items, false},
		{"closure", SizeLimit{MaxItems: items - 1}, items, true},
		{"closure", SizeLimit{Yes: true}, items, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %+v", tt.layout, tt.lim), func(t *testing.T) {
			in, l, problems := readChecked(t, path, tt.layout)
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			size, err := CheckSize(context.Background(), in, l, tt.lim)
			if (err != nil) != tt.err || err != nil && (!errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrInvalid)) {
				t.Fatalf("CheckSize: %v, want an error: %v", err, tt.err)
			}
			if tt.size == 0 {
				if size != nil {
					t.Errorf("measured %v", size)
				}
				return
			}
			if size == nil || size.Items != tt.size || size.Nodes != 250 {
				t.Errorf("size %+v, want %d items of 250 nodes", size, tt.size)
			}
		})
	}
}
