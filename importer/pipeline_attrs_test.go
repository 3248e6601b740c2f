package importer

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
)

// emitAttrsAll is emitAll for EmitAttrs: every item, copied during its call
// to fn, as DynamoDB JSON, then the stats; and the rejects file.
func emitAttrsAll(t *testing.T, in *Input, opts EmitOptions, fast bool) (items, rejects string) {
	t.Helper()
	var out, rej bytes.Buffer
	opts.Rejects = &rej
	var kept []layouts.Item
	var seqs []int64
	st, err := in.emitAttrs(context.Background(), opts, func(seq int64, item []layouts.Attr) error {
		seqs = append(seqs, seq)
		kept = append(kept, layouts.ItemOf(item))
		return nil
	}, fast)
	if err != nil {
		t.Fatal(err)
	}
	for i, item := range kept {
		fmt.Fprintf(&out, "%d ", seqs[i])
		out.Write(ddbjson.AppendLine(nil, item))
	}
	fmt.Fprintf(&out, "%+v\n", st)
	return out.String(), rej.String()
}

// emitMapsAll is the same for Emit.
func emitMapsAll(t *testing.T, in *Input, opts EmitOptions) (items, rejects string) {
	t.Helper()
	var out, rej bytes.Buffer
	opts.Rejects = &rej
	st, err := in.Emit(context.Background(), opts, func(seq int64, item layouts.Item) error {
		fmt.Fprintf(&out, "%d ", seq)
		out.Write(ddbjson.AppendLine(nil, item))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&out, "%+v\n", st)
	return out.String(), rej.String()
}

// TestEmitAttrsMatchesEmit holds EmitAttrs to Emit on random forests with
// every column type and every kind of bad row, and on every fixture: the
// same items with the same numbers, the same stats and the same rejects,
// for every layout, with and without --shard and a checkpoint's Skip, by
// the CSV source's flat read and by the record-by-record fallback.
func TestEmitAttrsMatchesEmit(t *testing.T) {
	ctx := context.Background()
	for _, tc := range pipelineCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			in, err := ReadInput(ctx, InputOptions{Path: tc.path, Source: records.SourceOptions{Types: tc.types}, ClosureCopy: tc.copy})
			if err != nil {
				t.Fatal(err)
			}
			variants := []struct {
				name string
				opts layouts.Options
			}{
				{layouts.PathName, layouts.Options{Delimiter: "¦"}},
				{layouts.ShardedName, layouts.Options{Shards: 3, Delimiter: "/"}},
			}
			for _, name := range layouts.Names() {
				variants = append(variants, struct {
					name string
					opts layouts.Options
				}{name, layouts.Options{ClosureCopy: tc.copy}})
			}
			for _, v := range variants {
				name := v.name
				l, err := layouts.New(name, v.opts)
				if err != nil {
					t.Fatal(err)
				}
				in.Forest.Reset()
				in.CheckLayout(l)
				for _, opts := range []EmitOptions{
					{Layout: l},
					{Layout: l, Skip: 37, Shard: ddbwrite.Shard{K: 1, Of: 3}},
				} {
					want, wantRejects := emitMapsAll(t, in, opts)
					for _, fast := range []bool{true, false} {
						got, gotRejects := emitAttrsAll(t, in, opts, fast)
						if got != want {
							t.Errorf("%s (fast %v, skip %d, shard %v): EmitAttrs's items differ from Emit's:\n%.600s\nEmit:\n%.600s", name, fast, opts.Skip, opts.Shard, got, want)
						}
						if gotRejects != wantRejects {
							t.Errorf("%s (fast %v): rejects:\n%s\nEmit:\n%s", name, fast, gotRejects, wantRejects)
						}
					}
				}
			}
		})
	}
}

// EmitAttrs stops at fn's first error and returns it.
func TestEmitAttrsStopsOnError(t *testing.T) {
	path := writeTemp(t, "random.csv", []byte(randomTreeCSV(300, 5)))
	in, err := ReadInput(context.Background(), InputOptions{Path: path, Source: records.SourceOptions{Types: randomTreeTypes}})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := layouts.New(layouts.ClosureName, layouts.Options{})
	in.CheckLayout(l)
	stop := fmt.Errorf("stop")
	calls := 0
	_, err = in.EmitAttrs(context.Background(), EmitOptions{Layout: l}, func(int64, []layouts.Attr) error {
		calls++
		if calls == 10 {
			return stop
		}
		return nil
	})
	if err != stop || calls != 10 {
		t.Fatalf("EmitAttrs: %v after %d calls, want the callback's error after 10", err, calls)
	}
}

// outsideLayout is a Layout of another package, as EmitAttrs sees it: it
// records whether a node came without its Path.
type outsideLayout struct {
	layouts.Layout
	pathless int
}

func (l *outsideLayout) AppendItems(n *layouts.FlatNode, b *layouts.ItemBuffer, emit func([]layouts.Attr)) error {
	if n.Path == nil {
		l.pathless++
	}
	return l.Layout.AppendItems(n, b, emit)
}

// A layout of another package is given every node's Path, and builds the
// same items; and a node whose id holds the delimiter, given to EmitAttrs
// without CheckLayout, gets Emit's error (the text alone cannot show it,
// and the node is given again with its ids).
func TestEmitAttrsPathWhereNeeded(t *testing.T) {
	ctx := context.Background()
	path := writeTemp(t, "in.csv", []byte("id,parent_id,n\na,,1\nb,a,2\nc,b,3\nd,a,4\n"))
	in, err := ReadInput(ctx, InputOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{layouts.PathName, layouts.PrefixName} {
		l, err := layouts.New(name, layouts.Options{})
		if err != nil {
			t.Fatal(err)
		}
		in.Forest.Reset()
		in.CheckLayout(l)
		want, _ := emitAttrsAll(t, in, EmitOptions{Layout: l}, true)
		outside := &outsideLayout{Layout: l}
		got, _ := emitAttrsAll(t, in, EmitOptions{Layout: outside}, true)
		if got != want || outside.pathless > 0 {
			t.Errorf("%s from another package: %d nodes without Path; items\n%s\nwant\n%s", name, outside.pathless, got, want)
		}
	}

	path = writeTemp(t, "delim.csv", []byte("id,parent_id\na,\nb/x,a\nc,b/x\n"))
	if in, err = ReadInput(ctx, InputOptions{Path: path}); err != nil {
		t.Fatal(err)
	}
	l, err := layouts.New(layouts.PathName, layouts.Options{Delimiter: "/"})
	if err != nil {
		t.Fatal(err)
	}
	_, werr := in.Emit(ctx, EmitOptions{Layout: l}, func(int64, layouts.Item) error { return nil })
	_, gerr := in.EmitAttrs(ctx, EmitOptions{Layout: l}, func(int64, []layouts.Attr) error { return nil })
	if werr == nil || fmt.Sprint(gerr) != fmt.Sprint(werr) {
		t.Errorf("an id holding the delimiter: EmitAttrs %v, Emit %v", gerr, werr)
	}
}

// A row whose parent is no longer the one the skeleton read found (the file
// was edited in between) is refused by EmitAttrs as by Emit, for each
// layout: no item carries a parent that its path does not hold.
func TestEmitAttrsParentChangedSinceRead(t *testing.T) {
	ctx := context.Background()
	path := writeTemp(t, "in.csv", []byte("id,parent_id,n\na,,1\nb,a,2\nc,b,3\nd,a,4\n"))
	in, err := ReadInput(ctx, InputOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	// c's parent is now d, of the same length.
	if err := os.WriteFile(path, []byte("id,parent_id,n\na,,1\nb,a,2\nc,d,3\nd,a,4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range layouts.Names() {
		l, err := layouts.New(name, layouts.Options{})
		if err != nil {
			t.Fatal(err)
		}
		in.Forest.Reset()
		in.CheckLayout(l)
		_, werr := in.Emit(ctx, EmitOptions{Layout: l}, func(int64, layouts.Item) error { return nil })
		_, gerr := in.EmitAttrs(ctx, EmitOptions{Layout: l}, func(int64, []layouts.Attr) error { return nil })
		if werr == nil || gerr == nil || !strings.Contains(gerr.Error(), `"c"`) {
			t.Errorf("%s: a parent changed since the skeleton read: EmitAttrs %v, Emit %v", name, gerr, werr)
		}
	}
}
