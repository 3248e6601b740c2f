package transform

import (
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// Add keeps copies of the ids and parents it is given: a reader may pass
// strings over a buffer it overwrites with the next row, as the CSV
// pipeline does.
func TestBuilderCopiesStrings(t *testing.T) {
	rows := [][2]string{
		{"root", ""},
		{"kid", "root"},      // parent seen before
		{"early", "later"},   // parent seen after
		{"later", "root"},    //
		{"kid", "root"},      // duplicate
		{"self", "self"},     // its own parent
		{"orphan", "nobody"}, // missing parent
	}
	buf := make([]byte, 64)
	b := NewBuilder(0, false)
	for i, r := range rows {
		n := copy(buf, r[0])
		id := unsafe.String(&buf[0], n)
		m := copy(buf[32:], r[1])
		parent := ""
		if m > 0 {
			parent = unsafe.String(&buf[32], m)
		}
		b.Add(&Record{ID: id, Parent: parent, File: "in.csv", Line: i + 2}, "", 0, 0)
		for j := range buf {
			buf[j] = '#'
		}
	}
	f, problems := b.Build()
	var got []string
	for i := range f.Len() {
		p := ""
		if pi := f.Parent(i); pi >= 0 {
			p = f.ID(pi)
		}
		got = append(got, f.ID(i)+"<"+p)
	}
	want := "root< kid<root early<later later<root self< orphan<"
	if strings.Join(got, " ") != want {
		t.Errorf("forest %q, want %q", strings.Join(got, " "), want)
	}
	var msgs []string
	for _, p := range problems {
		msgs = append(msgs, p.Error())
	}
	for _, w := range []string{`id "kid": transform: duplicate id`, `id "self": transform: node is its own parent`, `id "orphan": transform: parent not in input: parent "nobody"`} {
		if !strings.Contains(strings.Join(msgs, "\n"), w) {
			t.Errorf("problems %q: none says %q", msgs, w)
		}
	}
	if f.Lookup("early") != 2 || f.Lookup("later") != 3 {
		t.Errorf("Lookup(early) = %d, Lookup(later) = %d; want 2 and 3", f.Lookup("early"), f.Lookup("later"))
	}
	if path := strings.Join(f.AppendPath(nil, 2), "|"); path != "root|later|early" {
		t.Errorf("path of early: %q", path)
	}
}

// Add queues the nodes it takes and adds them in batches (see flush): a
// Builder that adds each node at once builds the same forest, with the same
// problems, for inputs with every kind of problem, across the batches'
// boundaries and with AddBad between them.
func TestBuilderBatchesChangeNothing(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for seed := 0; seed < 30; seed++ {
		n := 1 + rng.Intn(300)
		rows := randomRows(rng, n, seed%2 == 1)
		bad := make([]bool, n)
		for k := rng.Intn(8); k > 0; k-- {
			i, j := rng.Intn(n), rng.Intn(n)
			switch rng.Intn(5) {
			case 0:
				rows[i][0] = rows[j][0] // a duplicate
			case 1:
				rows[i][1] = "missing-" + strconv.Itoa(j)
			case 2:
				rows[i][1] = rows[i][0] // its own parent
			case 3:
				rows[i][0] = "" // an empty id
			case 4:
				bad[i] = true // a row that could not be read
			}
		}
		var dumps [2]string
		for v, queue := range []int{queueLen, 1} {
			b := NewBuilder(rng.Intn(2)*n, false)
			b.queue = make([]queued, 0, queue)
			buf := make([]byte, 0, 256)
			for i, r := range rows {
				if bad[i] {
					b.AddBad(&RowError{File: "in.csv", Line: i + 2, ID: r[0], Err: errors.New("unreadable")}, r[1])
					continue
				}
				// Strings over a buffer overwritten by the next row, as
				// the CSV reader's are.
				buf = append(append(buf[:0], r[0]...), r[1]...)
				id := unsafe.String(unsafe.SliceData(buf), len(r[0]))
				parent := unsafe.String(unsafe.SliceData(buf[len(r[0]):]), len(r[1]))
				b.Add(&Record{ID: id, Parent: parent, File: "in.csv", Line: i + 2}, "", i, 0)
			}
			f, problems := b.Build()
			var out strings.Builder
			for _, p := range problems {
				fmt.Fprintln(&out, p.Error())
			}
			for i := range f.Len() {
				file, line, _ := f.Location(i)
				fmt.Fprintf(&out, "%d %q %s:%d depth %d rejected %v path %q\n", i, f.ID(i), file, line, f.Depth(i), f.Rejected(i), f.AppendPath(nil, i))
			}
			dumps[v] = out.String()
		}
		if dumps[0] != dumps[1] {
			t.Fatalf("seed %d: batched\n%s\none at a time\n%s", seed, dumps[0], dumps[1])
		}
	}
}

// WarmPaths only reads: any range, cycles included, changes no path.
func TestWarmPaths(t *testing.T) {
	f, _ := build(t, [][2]string{{"r", ""}, {"a", "b"}, {"b", "a"}, {"c", "a"}, {"d", "r"}, {"long-id-of-many-bytes", "d"}})
	var before []string
	for i := range f.Len() {
		before = append(before, strings.Join(f.AppendPath(nil, i), "|"))
	}
	for from := -2; from <= f.Len()+1; from++ {
		for to := from - 1; to <= f.Len()+2; to++ {
			f.WarmPaths(from, to)
		}
	}
	for i := range f.Len() {
		if got := strings.Join(f.AppendPath(nil, i), "|"); got != before[i] {
			t.Errorf("node %d: path %q, was %q", i, got, before[i])
		}
	}
}
