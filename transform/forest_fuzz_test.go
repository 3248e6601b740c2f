package transform

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// FuzzForestPaths builds forests from arbitrary rows (ids and parents of any
// bytes, cycles, duplicates, children first) with the queued Builder and
// with one that adds each row at once: the two agree, and every placed
// node's path, joined by AppendPathText's fast walk for a one-byte
// delimiter and its plain walk for a longer one, is AppendPath's, after
// WarmPaths read ahead over any range; and PathTexts, with any budget,
// joins what AppendPathText does.
func FuzzForestPaths(f *testing.F) {
	f.Add("a,\nb,a\nc,b\nd,a\n", uint8(3))
	f.Add("x,y\ny,x\nz,\nlong-identifier-of-bytes,z\nw,long-identifier-of-bytes\n", uint8(1))
	f.Add("a,\na,\nb,a\n,a\nc,c\n", uint8(0))
	f.Fuzz(func(t *testing.T, data string, queue uint8) {
		var rows [][2]string
		for _, line := range strings.Split(data, "\n") {
			id, parent, _ := strings.Cut(line, ",")
			rows = append(rows, [2]string{id, parent})
		}
		var forests [2]*Forest
		var dumps [2]string
		for v, q := range []int{1 + int(queue)%64, 1} {
			b := NewBuilder(0, false)
			b.queue = make([]queued, 0, q)
			for i, r := range rows {
				b.Add(&Record{ID: r[0], Parent: r[1], File: "f", Line: i + 1}, "", 0, 0)
			}
			fo, problems := b.Build()
			var sb strings.Builder
			for _, p := range problems {
				fmt.Fprintln(&sb, p.Error())
			}
			for i := range fo.Len() {
				fmt.Fprintf(&sb, "%q %d %v %q\n", fo.ID(i), fo.Depth(i), fo.Rejected(i), fo.AppendPath(nil, i))
			}
			forests[v], dumps[v] = fo, sb.String()
		}
		if dumps[0] != dumps[1] {
			t.Fatalf("queued:\n%s\none at a time:\n%s", dumps[0], dumps[1])
		}
		fo := forests[0]
		fo.WarmPaths(int(queue)%8-2, int(queue))
		// PathTexts with a budget from none to all, by the queue byte.
		budget := []int{0, 3, 40, 1 << 20}[queue%4]
		texts := map[string]*PathTexts{"/": fo.NewPathTexts("/", budget), "::": fo.NewPathTexts("::", budget)}
		for i := range fo.Len() {
			if i%64 == 0 {
				fo.WarmPaths(i, i+64)
				texts["/"].Warm(i, i+64)
			}
			want := fo.AppendPath(nil, i)
			for _, delim := range []string{"/", "::"} {
				ids, text := fo.AppendPathText([]string{"x"}, []byte("pre"), i, delim)
				if !slices.Equal(ids[1:], want) || string(text) != "pre"+strings.Join(want, delim) {
					t.Fatalf("node %d: %q %q, want %q", i, ids, text, want)
				}
				if got := texts[delim].Append([]byte("pre"), i); string(got) != string(text) {
					t.Fatalf("node %d, %q: PathTexts %q, AppendPathText %q", i, delim, got, text)
				}
			}
		}
	})
}
