package transform

import (
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// randomRows are the rows of a random forest of n nodes: ids of every
// length, in shuffled order when shuffle (children before parents).
func randomRows(rng *rand.Rand, n int, shuffle bool) [][2]string {
	rows := make([][2]string, n)
	for i := range rows {
		rows[i][0] = strings.Repeat("x", rng.Intn(20)) + strconv.Itoa(i) + strings.Repeat("é", rng.Intn(3))
		if i > 0 && rng.Intn(8) > 0 {
			rows[i][1] = rows[rng.Intn(i)][0]
		}
	}
	if shuffle {
		rng.Shuffle(n, func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	}
	return rows
}

// AppendPathText gives AppendPath's ids, and those ids joined: for every
// node of random forests, for several delimiters, after what the slices
// already held.
func TestAppendPathText(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	for seed := 0; seed < 40; seed++ {
		f, problems := build(t, randomRows(rng, 1+rng.Intn(400), seed%2 == 1))
		if len(problems) > 0 {
			t.Fatal(problems)
		}
		if seed%2 == 0 && !f.topo {
			t.Fatalf("seed %d: a forest built parents first is not marked topological", seed)
		}
		for i := range f.Len() {
			want := f.AppendPath(nil, i)
			for _, delim := range []string{"|", "¦", "", "::"} {
				ids, text := f.AppendPathText([]string{"before"}, []byte("prefix"), i, delim)
				if !slices.Equal(ids[1:], want) || ids[0] != "before" {
					t.Fatalf("node %d: ids %q, AppendPath gives %q", i, ids, want)
				}
				if got := string(text); got != "prefix"+strings.Join(want, delim) {
					t.Fatalf("node %d: text %q, want %q", i, got, "prefix"+strings.Join(want, delim))
				}
			}
		}
	}
}

// Nodes in and below a cycle are not placed: AppendPathText gives their
// id alone, as AppendPath does.
func TestAppendPathTextUnplaced(t *testing.T) {
	f, _ := build(t, [][2]string{{"r", ""}, {"a", "b"}, {"b", "a"}, {"c", "a"}, {"long-id-of-many-bytes", "r"}})
	for i := range f.Len() {
		want := f.AppendPath(nil, i)
		ids, text := f.AppendPathText(nil, nil, i, "|")
		if !slices.Equal(ids, want) || string(text) != strings.Join(want, "|") {
			t.Errorf("node %d: %q %q, want %q", i, ids, text, want)
		}
	}
}
