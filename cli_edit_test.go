package main

// End-to-end tests of edit (issue 6) against DynamoDB Local: the moves in
// every layout, and random sequences of them.

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
)

// ---- edit ---------------------------------------------------------------

// editTree is issue 6's tree A{B{D{G{I}},E},C{F{H}}}.
const editTree = "id,parent_id,name\n" +
	"A,,alpha\nB,A,beta\nC,A,gamma\nD,B,delta\nE,B,epsilon\nF,C,phi\nG,D,gee\nH,F,eta\nI,G,iota\n"

// TestEditMovesEveryLayout carries out issue 6's three moves as three edit
// runs in every layout, checks the descendants queries after each, and that
// the table then equals import of the edited tree with exactly the item
// writes that takes; refused edits, --dry-run and a bad ops line write
// nothing.
func TestEditMovesEveryLayout(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	tree := parseCSV(t, editTree)
	steps := []struct {
		name  string
		ops   string
		apply func(m treeModel)
		// issue 6's answers: id → descendants --min-depth 0.
		want map[string]string
	}{
		{"move D under E", `{"op":"move","id":"D","parent":"E"}`,
			func(m treeModel) { m.parent["D"] = "E" },
			map[string]string{"A": "A0 B1 C1 E2 F2 D3 H3 G4 I5", "B": "B0 E1 D2 G3 I4"}},
		{"move I under A", `{"op":"move","id":"I","parent":"A"}`,
			func(m treeModel) { m.parent["I"] = "A" },
			map[string]string{"A": "A0 B1 C1 I1 E2 F2 D3 H3 G4", "D": "D0 G1"}},
		{"move I under C", `{"op":"move","id":"I","parent":"C"}`,
			func(m treeModel) { m.parent["I"] = "C" },
			map[string]string{"C": "C0 F1 I1 H2"}},
		{"set G, delete F", `{"op":"set","id":"G","attributes":{"name":"GEE"}}` + "\n" + `{"op":"delete","id":"F"}`,
			func(m treeModel) {
				m.attrs["G"] = "GEE"
				m.parent["H"] = "C"
				delete(m.parent, "F")
				delete(m.attrs, "F")
			},
			map[string]string{"C": "C0 H1 I1"}},
		// Several edits in one file, each on the tree the previous ones
		// left: B may go under G once G has left B's subtree.
		{"G out of B, B under G, set D, delete E", `{"op":"move","id":"G","parent":"C"}` + "\n" +
			`{"op":"move","id":"B","parent":"G"}` + "\n" +
			`{"op":"set","id":"D","attributes":{"name":"DEE"}}` + "\n" +
			`{"op":"delete","id":"E"}`,
			func(m treeModel) {
				m.parent["G"] = "C"
				m.parent["B"] = "G"
				m.attrs["D"] = "DEE"
				m.parent["D"] = "B"
				delete(m.parent, "E")
				delete(m.attrs, "E")
			},
			map[string]string{"A": "A0 C1 G2 H2 I2 B3 D4"}},
		// A subtree made a tree of its own: TreeId, GraphId and the prefix
		// keys of all of it change.
		{"B to the top", `{"op":"move","id":"B","parent":null}`,
			func(m treeModel) { m.parent["B"] = "" },
			map[string]string{"B": "B0 D1", "A": "A0 C1 G2 H2 I2"}},
		// A move and its undoing in one file write nothing.
		{"H away and back", `{"op":"move","id":"H","parent":"A"}` + "\n" + `{"op":"move","id":"H","parent":"C"}`,
			func(treeModel) {}, nil},
		// Two trees become one.
		{"B under I", `{"op":"move","id":"B","parent":"I"}`,
			func(m treeModel) { m.parent["B"] = "I" },
			map[string]string{"A": "A0 C1 G2 H2 I2 B3 D4"}},
	}
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, _ := layouts.New(name, layouts.Options{})
			spec := l.Table()
			dir := t.TempDir()
			table := loadTable(t, env, client, tree.write(t, filepath.Join(dir, "tree.csv")), "", l)
			m := tree.model()
			query := func(id string) string {
				t.Helper()
				stdout, stderr, code := run(t, env, "query", "descendants", "--table", table, "--layout", name, "--id", id, "--min-depth", "0")
				if code != 0 {
					t.Fatalf("query descendants %s: exit %d: %s", id, code, stderr)
				}
				var got []string
				for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
					var r struct {
						ID    string `json:"id"`
						Depth int    `json:"relative_depth"`
					}
					if err := json.Unmarshal([]byte(line), &r); err != nil {
						t.Fatalf("query output %q: %v", line, err)
					}
					got = append(got, fmt.Sprintf("%s%d", r.ID, r.Depth))
				}
				return strings.Join(got, " ")
			}
			edit := func(ops string, extra ...string) (string, string, int, string) {
				t.Helper()
				path := filepath.Join(dir, fmt.Sprintf("ops-%d.jsonl", time.Now().UnixNano()))
				if err := os.WriteFile(path, []byte(ops+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				stdout, stderr, code := run(t, env, append([]string{"edit", "--ops", path, "--table", table, "--layout", name, "--no-progress"}, extra...)...)
				return stdout, stderr, code, path
			}

			for i, st := range steps {
				before := tableState(t, client, table, spec)
				next := m.clone()
				st.apply(next)
				// The tree after the step, as a CSV for import's items.
				var csvText strings.Builder
				csvText.WriteString("id,parent_id,name\n")
				ids := slices.Sorted(maps.Keys(next.parent))
				for _, id := range ids {
					fmt.Fprintf(&csvText, "%s,%s,%s\n", id, next.parent[id], next.attrs[id])
				}
				wantPath := parseCSV(t, csvText.String()).write(t, filepath.Join(dir, fmt.Sprintf("step%d.csv", i)))
				want := wantState(t, wantPath, "", l)

				// --dry-run first: it writes nothing.
				stdout, stderr, code, _ := edit(st.ops, "--dry-run")
				if code != 0 || !regexp.MustCompile(`\d+ puts? and \d+ deletes?`).MatchString(stdout) {
					t.Fatalf("%s --dry-run: exit %d:\n%s\n%s", st.name, code, stdout, stderr)
				}
				sameState(t, st.name+" --dry-run", tableState(t, client, table, spec), before)

				stdout, stderr, code, _ = edit(st.ops)
				if code != 0 {
					t.Fatalf("%s: exit %d:\n%s\n%s", st.name, code, stdout, stderr)
				}
				m = next
				after := tableState(t, client, table, spec)
				sameState(t, st.name+": the table vs import of the edited tree", after, want)
				// The fewest writes: exactly the items that differ.
				puts, dels := diffStates(before, after)
				if w := units.Count(int64(len(puts)), "put") + " and " + units.Count(int64(len(dels)), "delete"); !strings.Contains(stdout, w) {
					t.Errorf("%s: want %q in:\n%s", st.name, w, stdout)
				}
				for _, id := range []string{"A", "B", "D", "C", "G"} {
					if _, ok := m.parent[id]; !ok {
						continue
					}
					got := query(id)
					if w, ok := st.want[id]; ok && got != w {
						t.Errorf("%s: descendants of %s = %q, issue 6 says %q", st.name, id, got, w)
					}
					if w := m.descendants(id); got != w {
						t.Errorf("%s: descendants of %s = %q, want %q", st.name, id, got, w)
					}
				}
			}

			// Refused edits write nothing, even the good edits before them.
			before := rawLines(t, client, table)
			for _, tt := range []struct{ what, ops, msg string }{
				{"move under its own descendant", `{"op":"move","id":"A","parent":"G"}`, "descendant"},
				{"good move, then a move under its own descendant", `{"op":"move","id":"H","parent":"I"}` + "\n" + `{"op":"move","id":"C","parent":"H"}`, "descendant"},
				{"move under itself", `{"op":"move","id":"D","parent":"D"}`, "own parent"},
				{"delete a root with children", `{"op":"delete","id":"A"}`, "root"},
				{"move a node that is not there", `{"op":"move","id":"Z","parent":"A"}`, `"Z"`},
				{"edit a node deleted by an earlier edit", `{"op":"delete","id":"D"}` + "\n" + `{"op":"set","id":"D","attributes":{"name":"x"}}`, "deleted"},
			} {
				stdout, stderr, code, path := edit(tt.ops)
				if code != 2 || !strings.Contains(stderr, tt.msg) || !strings.Contains(stderr, path+":") || !strings.Contains(stderr, "nothing was written") {
					t.Errorf("%s: exit %d, want 2 with %q and the file:line:\n%s\n%s", tt.what, code, tt.msg, stdout, stderr)
				}
			}
			_, stderr, code, path := edit(`{"op":"move","id":"H","parent":"A"}` + "\n" + `{"op":"move","id":"H"` + "\n")
			if code != 2 || !strings.Contains(stderr, path+":2") {
				t.Errorf("bad ops line: exit %d, want 2 naming %s:2:\n%s", code, path, stderr)
			}
			if !slices.Equal(rawLines(t, client, table), before) {
				t.Error("a refused edit changed the table")
			}
		})
	}
}

// TestEditRandomSequences carries out random files of edits (moves, deletes
// and sets, each on the tree the edits before it left) in every layout: after
// each file the table equals import of the edited forest, written with
// exactly the item writes that takes.
func TestEditRandomSequences(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	first := filepath.Join(dir, "start.csv")
	if _, stderr, code := run(t, nil, "gen", "--nodes", "60", "--shape", "random", "--seed", "5", "--out", first); code != 0 {
		t.Fatal(stderr)
	}
	start := readCSVFile(t, first)
	nameCol := slices.Index(start.header, "name")
	// The edit files, and the forest after each, the same for every layout.
	rng := rand.New(rand.NewPCG(5, 5))
	type step struct{ ops, forest string }
	var steps []step
	c := start.clone()
	for f := range 5 {
		var ops []string
		for range 8 {
			m := c.model()
			all := slices.Sorted(maps.Keys(m.parent))
			id := all[rng.IntN(len(all))]
			row := func(id string) []string {
				for _, r := range c.rows {
					if r[0] == id {
						return r
					}
				}
				panic(id)
			}
			switch rng.IntN(4) {
			case 0, 1: // move, now and then to the top
				parent := all[rng.IntN(len(all))]
				if rng.IntN(5) == 0 {
					parent = ""
				}
				if parent != "" && slices.Contains(m.path(parent), id) {
					continue
				}
				p, _ := json.Marshal(parent)
				if parent == "" {
					p = []byte("null")
				}
				ops = append(ops, fmt.Sprintf(`{"op":"move","id":%q,"parent":%s}`, id, p))
				row(id)[1] = parent
			case 2: // delete, children up
				up := m.parent[id]
				hasKids := false
				for _, r := range c.rows {
					hasKids = hasKids || r[1] == id
				}
				if (up == "" && hasKids) || len(all) < 20 {
					continue
				}
				ops = append(ops, fmt.Sprintf(`{"op":"delete","id":%q}`, id))
				for _, r := range c.rows {
					if r[1] == id {
						r[1] = up
					}
				}
				c.rows = slices.DeleteFunc(c.rows, func(r []string) bool { return r[0] == id })
			case 3: // set
				v := fmt.Sprintf("edited %d", rng.IntN(1000))
				ops = append(ops, fmt.Sprintf(`{"op":"set","id":%q,"attributes":{"name":%q}}`, id, v))
				row(id)[nameCol] = v
			}
		}
		steps = append(steps, step{strings.Join(ops, "\n") + "\n", c.write(t, filepath.Join(dir, fmt.Sprintf("after%d.csv", f)))})
	}
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, _ := layouts.New(name, layouts.Options{})
			spec := l.Table()
			table := loadTable(t, env, client, first, "", l)
			tmp := t.TempDir()
			for i, st := range steps {
				opsPath := filepath.Join(tmp, fmt.Sprintf("ops%d.jsonl", i))
				if err := os.WriteFile(opsPath, []byte(st.ops), 0o644); err != nil {
					t.Fatal(err)
				}
				before := tableState(t, client, table, spec)
				stdout, stderr, code := run(t, env, "edit", "--ops", opsPath, "--table", table, "--layout", name, "--no-progress")
				if code != 0 {
					t.Fatalf("edit file %d: exit %d:\n%s\n%s\nops:\n%s", i, code, stdout, stderr, st.ops)
				}
				after := tableState(t, client, table, spec)
				sameState(t, fmt.Sprintf("after edit file %d", i), after, wantState(t, st.forest, "", l))
				puts, dels := diffStates(before, after)
				if w := units.Count(int64(len(puts)), "put") + " and " + units.Count(int64(len(dels)), "delete"); !strings.Contains(stdout, w) {
					t.Errorf("edit file %d: the writes were not the fewest: want %q in:\n%s", i, w, stdout)
				}
				if t.Failed() {
					t.Fatalf("ops of file %d:\n%s", i, st.ops)
				}
			}
		})
	}
}
