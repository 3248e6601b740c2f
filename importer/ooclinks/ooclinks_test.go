package ooclinks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/spill"
	"github.com/treeport/treeport/transform"
)

// TestRounds drives the links through two rounds as the importer's passes
// do, with sorts small enough to spill: the first round finds a target
// not in the input, a link to itself, one to a target the read rejected,
// a cycle and a chain to a bad link; the second, the link whose target
// its check rejected; then the good links' paths are read by row. The
// chains (of 300 links to a good node, into the cycle, to a chain to a
// bad link) are resolved by doubling passes whose sorts spill too.
func TestRounds(t *testing.T) {
	dir, err := spill.New(t.TempDir(), "links", "the test")
	if err != nil {
		t.Fatal(err)
	}
	lk := New(dir, 1<<10, 1<<20)
	defer lk.Close()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	links := map[string]string{"a": "t", "b": "missing", "c": "c", "d": "gone", "e": "f", "f": "e", "g": "b", "h": "x"}
	for k := range 2000 {
		links[fmt.Sprintf("m%04d", k)] = "t"
	}
	// A chain of 300 links to t (nine doubling passes), one into the
	// cycle, one to the bad link b.
	for k := range 300 {
		links[fmt.Sprintf("k%03d", k)] = fmt.Sprintf("k%03d", k+1)
	}
	links["k299"] = "t"
	links["q0"], links["q1"], links["q2"] = "q1", "q2", "e"
	links["p0"], links["p1"] = "p1", "g"
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for id := range links {
			if !yield(id) {
				return
			}
		}
	}) {
		if err := lk.Add(id, s(links[id])); err != nil {
			t.Fatal(err)
		}
	}
	if err := lk.Add("a", s("b")); err != nil { // a duplicate: the first stays
		t.Fatal(err)
	}
	if err := lk.Done(); err != nil || lk.Count() != int64(len(links)) {
		t.Fatalf("Done: %v, %d links, want %d", err, lk.Count(), len(links))
	}
	place := func(file, line int) string { return fmt.Sprintf("in:%d", line) }
	// nodes: id → build (rejected by the read), rejected by the check
	type node struct{ build, rejected bool }
	nodes := map[string]node{"t": {}, "x": {}, "gone": {build: true, rejected: true}}
	for id := range links {
		nodes[id] = node{}
	}
	var errs map[string]error
	round := func(rejected map[string]bool) {
		t.Helper()
		lk.Round()
		errs = problems(t, lk)
		for k, id := range slices.Sorted(func(yield func(string) bool) {
			for id := range nodes {
				if !yield(id) {
					return
				}
			}
		}) {
			n := nodes[id]
			rej := n.rejected || rejected[id] || errs[id] != nil
			if err := lk.Seen(id, int64(k), 0, k+2, n.build, rej, []string{"r", id}); err != nil {
				t.Fatal(err)
			}
		}
		if err := lk.Settle(context.Background(), place); err != nil {
			t.Fatal(err)
		}
	}
	round(nil)
	want := map[string]string{
		"b":  `"missing" is not an id of the input`,
		"c":  "the node links to itself",
		"d":  `"gone": the target was rejected (see in:`,
		"e":  `a cycle of links: "e" → "f" → "e"`,
		"f":  `a cycle of links: "e" → "f" → "e"`,
		"g":  `"b": the target is a link that cannot be written`,
		"q0": `"q1": the target is a link that cannot be written`,
		"q1": `"q2": the target is a link that cannot be written`,
		"q2": `"e": the target is a link that cannot be written`,
		"p0": `"p1": the target is a link that cannot be written`,
		"p1": `"g": the target is a link that cannot be written`,
	}
	check := func() {
		t.Helper()
		errs := problems(t, lk)
		for id := range links {
			err := errs[id]
			if w, ok := want[id]; ok != (err != nil) || ok && (!errors.Is(err, transform.ErrLink) || !strings.Contains(err.Error(), w)) {
				t.Errorf("link %s: %v, want %q", id, err, w)
			}
		}
	}
	check()
	if !lk.Again {
		t.Fatal("no second round after bad links")
	}
	// The second round's check rejects x, h's target.
	round(map[string]bool{"x": true})
	want["h"] = `"x": the target was rejected (see in:`
	check()
	if !lk.Again {
		t.Fatal("no third round after a rejected target")
	}
	round(map[string]bool{"x": true})
	if lk.Again || lk.Runs() == 0 {
		t.Fatalf("again after a round with no new problem (%v), or no spilled runs (%d)", lk.Again, lk.Runs())
	}
	c, err := lk.Paths()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range nodes {
			if !yield(id) {
				return
			}
		}
	})
	for k, id := range ids {
		p, err := c.Path(int64(k), id)
		_, isLink := links[id]
		switch {
		case !isLink || want[id] != "":
			if p != nil || (err != nil) != (isLink && want[id] != "") {
				t.Errorf("row %d, %s: %q, %v", k, id, p, err)
			}
		case err != nil || !slices.Equal(p, []string{"r", links[id]}):
			t.Errorf("row %d, link %s: %q, %v, want its target's path", k, id, p, err)
		}
	}
}

// problems reads the links' problems the next round's check gives, by id.
func problems(t *testing.T, lk *Links) map[string]error {
	t.Helper()
	out := map[string]error{}
	p, err := lk.Problems()
	if err != nil || p == nil {
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for ; p.more; p.cur, p.more = p.sp.Next() {
		id := string(firstKey(p.cur))
		if msg, _ := p.At([]byte(id)); msg != "" {
			out[id] = Problem(msg)
		}
	}
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
