package importer

import (
	"context"

	"github.com/treeport/treeport/importer/emitbase"
	"github.com/treeport/treeport/importer/importfiles"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// ImportSourceBytes is what ImportTable would bill for loading the input
// into l: the bytes of the uncompressed DynamoDB JSON that import --out
// writes, one {"Item":{…}} line an item, newline included, every item of
// the nodes l accepts (check the forest against l first). ImportTable
// bills "the uncompressed object size in Amazon S3"
// (https://aws.amazon.com/dynamodb/pricing/on-demand/, "Import from S3"),
// and the files are gzip, so the line bytes, not the files' sizes, are the
// figure. It reads the input again, and encodes each item as the files'
// writer does (importfiles.AppendAttrsLine), so the two cannot drift apart.
//
// A layout whose ancestor rows differ only in a number and an id (closure
// and a table model built on it, layouts.RunEmitter) is sized by arithmetic
// on its nodes' depths instead of encoding depth + 1 rows a node: a chain
// of 100,000 nodes has 5,000,050,000 of them. An input read out of core
// has no forest to do that arithmetic on: its rows are encoded one by one.
func (in *Input) ImportSourceBytes(ctx context.Context, l layouts.Layout) (int64, error) {
	return in.importSourceBytes(ctx, l, nil)
}

// importSourceBytes is ImportSourceBytes, telling progress (when not nil)
// every 65,536 items or so how many items it has sized.
func (in *Input) importSourceBytes(ctx context.Context, l layouts.Layout, progress func(items int64)) (int64, error) {
	var buf []byte
	var n, items, told int64
	tell := func(k int64) {
		if items += k; progress != nil && items-told >= 1<<16 {
			told = items
			progress(items)
		}
	}
	opts := EmitOptions{Layout: l}
	if shape, ok := layouts.RunShapeOf(l); ok {
		var (
			f     *transform.Forest
			extra []int32
		)
		if in.ooc == nil {
			f = in.Forest
			if shape.Ancestors > 0 {
				extra = ancestorEscapes(f)
			}
		}
		k := int64(shape.Ancestors)
		one := int64(0) // row 1's digits of its relative depth
		for _, w := range shape.Depths {
			one += int64(max(w, 1))
		}
		var st transform.Stats
		opts.Runs = func(node int, item []layouts.Attr, run int) error {
			buf = importfiles.AppendAttrsLine(buf[:0], item)
			first := int64(len(buf))
			n += first
			tell(int64(max(run, 1)))
			if run <= 1 {
				return nil
			}
			// Row r is row 1 with r in place of 1 and the id r levels up in
			// place of the parent's: the rows hold the digits of 1 … run,
			// each as wide as its place, and the ancestors' ids, escaped,
			// once each in each of their places.
			var parent, ancestors int64
			if f == nil {
				// Out of core: what the emit pass read of the node
				// (ooc.State.Run).
				p, a := in.ooc.Run()
				parent, ancestors = int64(emitbase.JSONStringBytes(p)), a
			} else {
				f.Stats(node, &st)
				parent = int64(emitbase.JSONStringBytes(f.ID(f.Parent(node))))
				ancestors = int64(st.PathBytes - len(st.ID))
				if extra != nil {
					ancestors += int64(extra[node])
				}
			}
			var digits int64
			for _, w := range shape.Depths {
				digits += sumPadded(run, w)
			}
			n += int64(run)*(first-one-k*parent) + digits + k*ancestors - first
			return nil
		}
	}
	_, err := in.EmitAttrs(ctx, opts, func(_ int64, item []layouts.Attr) error {
		buf = importfiles.AppendAttrsLine(buf[:0], item)
		n += int64(len(buf))
		tell(1)
		return nil
	})
	return n, err
}

// ancestorEscapes is, for each node of f, what escaping its ancestors'
// ids for JSON adds to their lengths; nil when no id needs escaping, as
// is usual.
func ancestorEscapes(f *transform.Forest) []int32 {
	var own []int32
	for i := range f.Len() {
		id := f.ID(i)
		if e := emitbase.JSONStringBytes(id) - len(id); e > 0 {
			if own == nil {
				own = make([]int32, f.Len())
			}
			own[i] = int32(e)
		}
	}
	if own == nil {
		return nil
	}
	anc := make([]int32, f.Len())
	for _, i := range f.Order() { // parents first
		if p := f.Parent(int(i)); p >= 0 {
			anc[i] = anc[p] + own[p]
		}
	}
	return anc
}

// sumPadded is the number of decimal digits of 1, 2, … d together, each
// zero-padded to width digits.
func sumPadded(d, width int) int64 {
	var sum int64
	for lo, s := 1, 1; lo <= d; lo, s = lo*10, s+1 {
		sum += int64(min(d, lo*10-1)-lo+1) * int64(max(s, width))
	}
	return sum
}
