package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
)

// TestShippedModelsBadInput gives each shipped model, and dynamotree's
// README example, the bad input, against a hand-built table
// holding its nodes and other entities: a path id whose parent is not its
// prefix, a name containing the delimiter, a link to itself and a cycle
// of links, an implicit node given attributes the model cannot hold. Each
// import and apply exits 2 naming the file, line and id, and the table is
// not changed. (A parameter the model names but the command does not set:
// TestElectroDBModelBadParams.)
func TestShippedModelsBadInput(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	s3Nodes, s3Foreign := s3Hand(0)
	slTable := handTable(t, client, slHand, append(slNodes(), slForeign()...))
	s3Table := handTable(t, client, s3HandModel, append(s3Nodes, s3Foreign...))
	dtTable := prefixTable(t, client, readmeRows())
	sl := []string{"--table", slTable, "--model", slModel}
	s3 := []string{"--table", s3Table, "--model", s3Model, "--model-param", "bucket=" + s3Bucket}
	dt := []string{"--table", dtTable, "--layout", "prefix", "--path-ids", "--implicit-inner"}
	for _, c := range []struct {
		name, file, text string
		flags            []string
		want             []string
	}{
		{"store-locations: parent not the prefix", "a.jsonl", `{"id":"USA"}
{"id":"USA#WA","parent_id":"USA"}
{"id":"USA#OR","parent_id":"USA#WA"}
`, sl, []string{`a.jsonl:3: id "USA#OR"`, `"USA"`}},
		{"store-locations: a root holding the delimiter", "b.jsonl", `{"id":"USA#WA"}
`, sl, []string{`b.jsonl:1: id "USA#WA"`, "root"}},
		{"store-locations: a postcode given attributes", "c.jsonl", `{"id":"USA"}
{"id":"USA#WA","parent_id":"USA"}
{"id":"USA#WA#SEATTLE","parent_id":"USA#WA"}
{"id":"USA#WA#SEATTLE#98101","parent_id":"USA#WA#SEATTLE","Name":"Downtown"}
{"id":"USA#WA#SEATTLE#98101#1001","parent_id":"USA#WA#SEATTLE#98101","Name":"Pike Place"}
`, sl, []string{`c.jsonl:4: id "USA#WA#SEATTLE#98101"`, "cannot hold attributes"}},
		{"s3-inventory: parent not the prefix", "d.jsonl", `{"id":"photos"}
{"id":"videos/a.mp4","parent_id":"photos","size":1}
`, s3, []string{`d.jsonl:2: id "videos/a.mp4"`, `"videos"`}},
		{"s3-inventory: an empty name", "e.jsonl", `{"id":"photos"}
{"id":"photos//a.jpg","parent_id":"photos","size":1}
`, s3, []string{`e.jsonl:2: id "photos//a.jpg"`}},
		{"dynamotree: parent not the prefix", "g.jsonl", `{"id":"Accounts"}
{"id":"Accounts¦123456","parent_id":"Accounts"}
{"id":"Links¦x","parent_id":"Accounts¦123456"}
`, dt, []string{`g.jsonl:3: id "Links¦x"`}},
		{"dynamotree: a link to itself", "h.jsonl", `{"id":"Links"}
{"id":"Links¦self","parent_id":"Links","link_to":"Links¦self"}
`, dt, []string{`h.jsonl:2: id "Links¦self"`, "links to itself"}},
		{"dynamotree: a cycle of links", "i.jsonl", `{"id":"Links"}
{"id":"Links¦a","parent_id":"Links","link_to":"Links¦b"}
{"id":"Links¦b","parent_id":"Links","link_to":"Links¦a"}
`, dt, []string{`i.jsonl:2: id "Links¦a"`, `i.jsonl:3: id "Links¦b"`, "cycle of links"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := writeText(t, dir, c.file, c.text)
			table := c.flags[1]
			before := rawLines(t, client, table)
			for _, cmd := range []string{"import", "apply"} {
				args := append([]string{cmd, "--in", in, "--no-progress"}, c.flags...)
				if cmd == "apply" {
					args = append(args, "--allow-mass-delete")
				}
				stdout, stderr, code := run(t, env, args...)
				if code != 2 {
					t.Fatalf("%s: exit %d, want 2\n%s%s", cmd, code, stdout, stderr)
				}
				for _, w := range c.want {
					if !strings.Contains(stderr, w) {
						t.Errorf("%s: stderr does not say %q:\n%s", cmd, w, stderr)
					}
				}
				if got := rawLines(t, client, table); !slices.Equal(got, before) {
					t.Fatalf("%s: the refused input changed the table", cmd)
				}
			}
		})
	}

	// The ElectroDB model has no delimiter: an id holding "#" ends its
	// keys (sk, gsi1pk), so it reads back as it was written.
	t.Run("electrodb-employees: an id holding #", func(t *testing.T) {
		table := handTable(t, client, edbHand, edbForeign())
		in := writeText(t, dir, "f.csv", "id,parent_id,firstName\ne1,,Ada\ne4#2,e1,Alan\ne5,e4#2,Edsger\n")
		m := []string{"--table", table, "--model", edbModel, "--model-param", "org=acme"}
		if _, stderr, code := run(t, env, append([]string{"import", "--in", in, "--no-progress"}, m...)...); code != 0 {
			t.Fatalf("import: exit %d\n%s", code, stderr)
		}
		if stdout, stderr, code := run(t, env, append([]string{"verify", "--in", in}, m...)...); code != 0 {
			t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
		}
		if got := edbQueryIDs(t, env, append([]string{"children", "--id", "e4#2"}, m...)...); !slices.Equal(got, []string{"e5@1:Edsger"}) {
			t.Errorf("children of e4#2: %v", got)
		}
	})
}
