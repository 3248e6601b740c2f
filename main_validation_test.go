package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestBadInputBelowRejectedAncestor: with --on-invalid=fail, a node's own
// problems are printed even when an ancestor is rejected, so that one run
// shows every problem to fix.
func TestBadInputBelowRejectedAncestor(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, layout, csv string
		want              []string
	}{
		{"path: delimiter below a missing parent", "path", "id,parent_id\nA,Z\nB|1,A\n",
			[]string{`:2: id "A": parent not in input`, `:3: id "B|1": id contains the layout's delimiter`}},
		{"prefix: delimiter below a missing parent", "prefix", "id,parent_id\nA,Z\nB¦1,A\n",
			[]string{`:2: id "A": parent not in input`, `:3: id "B¦1": id contains the layout's delimiter`}},
		{"path: delimiter in a cycle", "path", "id,parent_id\nA,B|1\nB|1,A\n",
			[]string{`:2: id "A": cycle`, `:3: id "B|1": id contains the layout's delimiter`}},
		{"path: delimiter below a delimiter", "path", "id,parent_id\nA|1,\nB|1,A|1\n",
			[]string{`:2: id "A|1": id contains the layout's delimiter`, `:3: id "B|1": id contains the layout's delimiter`}},
	}
	for k, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := filepath.Join(dir, "in"+strconv.Itoa(k)+".csv")
			if err := os.WriteFile(in, []byte(tt.csv), 0o644); err != nil {
				t.Fatal(err)
			}
			_, stderr, code := run(t, nil, "import", "--in", in, "--layout", tt.layout, "--out", filepath.Join(dir, "out"+strconv.Itoa(k)))
			if code != 2 {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, in+w) {
					t.Errorf("stderr lacks %q:\n%s", in+w, stderr)
				}
			}
		})
	}
}

// TestBadInputPrintedByPlace: the problems are printed in the order of the
// input, whatever their kind, and --max-errors keeps the first ones.
func TestBadInputPrintedByPlace(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	os.WriteFile(in, []byte("id,parent_id\n"+
		"A,\n"+ // 2
		"B|1,A\n"+ // 3: delimiter
		"C,Z\n"+ // 4: missing parent
		"D,A\n"+ // 5
		"E,E\n"+ // 6: own parent
		"F|2,A\n"+ // 7: delimiter
		"D,A\n"+ // 8: duplicate
		"G,Y\n"+ // 9: missing parent
		",A\n"+ // 10: empty id
		"H,I\n"+ // 11: cycle
		"I,H\n"+ // 12
		"J|3,A\n"), 0o644) // 13: delimiter
	lineRE := regexp.MustCompile(`^` + regexp.QuoteMeta(in) + `:(\d+): `)
	lines := func(stderr string) []int {
		var got []int
		for _, l := range strings.Split(stderr, "\n") {
			if m := lineRE.FindStringSubmatch(l); m != nil {
				n, _ := strconv.Atoi(m[1])
				got = append(got, n)
			}
		}
		return got
	}
	_, stderr, code := run(t, nil, "import", "--in", in, "--layout", "path", "--out", filepath.Join(dir, "out"))
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr)
	}
	want := []int{3, 4, 6, 7, 8, 9, 10, 11, 13}
	if got := lines(stderr); !equalInts(got, want) {
		t.Errorf("problems on lines %v, want %v:\n%s", got, want, stderr)
	}
	_, stderr, code = run(t, nil, "import", "--in", in, "--layout", "path", "--out", filepath.Join(dir, "out"), "--max-errors", "3")
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr)
	}
	if got := lines(stderr); !equalInts(got, want[:3]) || !strings.Contains(stderr, "and 6 problems more") {
		t.Errorf("--max-errors 3: problems on lines %v, want %v and 6 more:\n%s", got, want[:3], stderr)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSkipRejectsDuplicateBothPlaces: in the rejects file, each copy of a
// duplicate id has a reason that names the other copy, not itself alone.
func TestSkipRejectsDuplicateBothPlaces(t *testing.T) {
	dir := t.TempDir()
	rejects := filepath.Join(dir, "rejects.jsonl")
	in := filepath.Join("fixtures", "bad", "duplicate-id.csv")
	_, stderr, code := run(t, nil, "import", "--in", in, "--layout", "path", "--out", filepath.Join(dir, "out"), "--on-invalid", "skip", "--rejects", rejects)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	other := map[int]string{3: in + ":5", 5: in + ":3"}
	lines := strings.Split(strings.TrimSpace(readFile(t, rejects)), "\n")
	if len(lines) != 2 {
		t.Fatalf("rejects:\n%s", strings.Join(lines, "\n"))
	}
	for _, l := range lines {
		var r struct {
			Line   int    `json:"line"`
			ID     string `json:"id"`
			Reason string `json:"reason"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("rejects line %q: %v", l, err)
		}
		if r.ID != "B" || other[r.Line] == "" || !strings.Contains(r.Reason, "duplicate id") || !strings.Contains(r.Reason, other[r.Line]) {
			t.Errorf("reject %q: want id B, a reason naming %s", l, other[r.Line])
		}
	}
}
