package transform

import (
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
