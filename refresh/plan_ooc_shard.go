package refresh

import (
	"bytes"
	"errors"

	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/layouts"
)

// goneMoved notes, under --shard k/N, the owner of a moved node of which
// the plan deletes an item (reasons passes them in owner order, so a
// spool of them is sorted): the nodes whose deletes wait for other
// copies' puts (otherShardsItems).
func (p *oocPlan) goneMoved(owner []byte) error {
	if p.shard.Of <= 1 || bytes.Equal(owner, p.lastGone) {
		return nil
	}
	if p.gone == nil {
		sp, err := extsort.NewSpool(p.dir)
		if err != nil {
			return err
		}
		p.gone = sp
	}
	p.lastGone = append(p.lastGone[:0], owner...)
	return p.gone.Add(owner)
}

// otherShards is otherShardsItems out of core: the snapshot emitted again,
// its items that other copies own to a sort by owner, joined with the
// moved nodes of goneMoved, to a spool of (owner, item) in owner order
// (p.after) that replay joins with the deletes. Without such nodes it
// reads nothing.
func (p *oocPlan) otherShards(in *importer.Input) error {
	if p.gone == nil {
		return nil
	}
	if err := p.gone.Rewind(); err != nil {
		return err
	}
	others := p.sorter()
	defer others.Close()
	var e extsort.Enc
	pk := p.spec.PK.Name
	_, err := in.EmitAttrs(p.ctx, importer.EmitOptions{Layout: p.l}, func(_ int64, attrs []layouts.Attr) error {
		for _, a := range attrs {
			if a.Name == pk && p.shard.OwnsValue(a.Value) {
				return nil // this copy's own put, acknowledged before any delete
			}
		}
		e.Reset()
		e.S(p.l.Owner(layouts.AttrsView(attrs)))
		e.Bs(ddbjson.AppendItem(nil, layouts.ItemOf(attrs)))
		return others.Add(e.B)
	})
	if err != nil {
		return err
	}
	it, err := others.Sort()
	if err != nil {
		return err
	}
	defer it.Close()
	if p.after, err = extsort.NewSpool(p.dir); err != nil {
		return err
	}
	rec, ok := it.Next()
	for id, gok := p.gone.Next(); gok && ok; id, gok = p.gone.Next() {
		for ok {
			owner := (&extsort.Dec{B: rec, Share: true}).Bytes()
			if c := bytes.Compare(owner, id); c > 0 {
				break
			} else if c == 0 {
				if err := p.after.Add(rec); err != nil {
					return err
				}
			}
			rec, ok = it.Next()
		}
	}
	return errors.Join(it.Err(), p.gone.Err(), p.after.Rewind())
}

// afterReader reads p.after for the owners asked in order; rewind starts
// it over (for the second spool of deletes).
type afterReader struct {
	sp  *extsort.Spool
	rec []byte
	ok  bool
}

func (a *afterReader) rewind() error {
	if a.sp == nil {
		return nil
	}
	if err := a.sp.Rewind(); err != nil {
		return err
	}
	a.rec, a.ok = a.sp.Next()
	return nil
}

// items are the other copies' items of the node id (nil for none).
func (a *afterReader) items(id []byte) ([]layouts.Item, error) {
	var out []layouts.Item
	for a.sp != nil && a.ok {
		d := extsort.Dec{B: a.rec, Share: true}
		owner := d.Bytes()
		c := bytes.Compare(owner, id)
		if c > 0 {
			break
		}
		if c == 0 {
			item, err := ddbjson.DecodeItem(d.Bytes())
			if err != nil {
				return nil, err
			}
			out = append(out, item)
		}
		a.rec, a.ok = a.sp.Next()
	}
	if a.sp != nil {
		return out, a.sp.Err()
	}
	return out, nil
}
