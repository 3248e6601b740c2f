package ooc

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"

	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// Kinds of the records of collections' count by key.
const (
	kSelf  = iota // the node itself: its depth and path
	kChild        // a valid child of the key's node
	kTree         // a valid node of the tree the key's node is the root of
)

// collections measures the largest item collections of an input read out
// of core, and their partition key values, as measureValid does in
// memory: the passes measured each node as they placed it, before its
// children and its tree were counted. Two sorted passes over the resolved
// rows count each valid node's valid children and each root's valid
// tree, then l measures the nodes again in the order an in-memory forest
// visits them, which names the same largest collection of several that
// tie: by row, or, when a parent comes after its child, breadth first (by
// depth, then by the rows of the path, which needs OutOfCore.Plan: see
// keepRank). A
// node's subtree is only measured for a root, as the largest subtree is a
// whole tree's.
func (s *State) collections(ctx context.Context, l layouts.Layout) (*layouts.Measure, error) {
	if s.notTopo && !s.opts.Plan {
		return nil, errors.New("importer: an input read out of core is planned with OutOfCore.Plan set")
	}
	res, err := s.resolved.Sort()
	if err != nil {
		return nil, err
	}
	if layouts.ImplicitInner(l) {
		return s.subtrees(ctx, l, res)
	}
	byKey := extsort.New(s.dir, s.opts.sortBudget(), extsort.CompareKeyRow)
	byKey.Prefix = extsort.PrefixKeyRow
	defer byKey.Close()
	var (
		e     extsort.Enc
		rn    resolvedNode
		roots int
		k     int64
	)
	add := func(key string, row int64, kind uint8) error {
		e.Reset()
		e.S(key)
		e.Row(row)
		e.Flag(kind)
		if kind == kSelf {
			e.I(rn.depth)
			e.S(rn.parent)
			e.S(rn.root)
			e.I(rn.pathBytes)
			e.I(rn.maxAnc)
			e.U(rn.rank)
		}
		return byKey.Add(e.B)
	}
	for rec, ok := res.Next(); ok; rec, ok = res.Next() {
		if k++; k&(1<<16-1) == 0 {
			if err := ctx.Err(); err != nil {
				res.Close()
				return nil, err
			}
			s.phase("counting collections (rows)", k, -1)
		}
		d := extsort.Dec{B: rec[8:], Share: true}
		if d.Flag() == 1 {
			continue // rejected
		}
		row := extsort.RowOf(rec)
		rn.get(s, &d)
		err := add(rn.id, row, kSelf)
		if err == nil && rn.depth > 0 {
			err = add(rn.parent, row, kChild)
		}
		if err == nil {
			err = add(rn.root, row, kTree)
		}
		if err != nil {
			res.Close()
			return nil, err
		}
		if rn.depth == 0 {
			roots++
		}
	}
	err = res.Err()
	res.Close()
	if err != nil {
		return nil, err
	}
	return s.measureInOrder(ctx, l, byKey, roots)
}

// measureInOrder sums the records of byKey up by node, sorts the nodes in
// the order an in-memory forest visits them, and measures them in l.
func (s *State) measureInOrder(ctx context.Context, l layouts.Layout, byKey *extsort.Sorter, roots int) (*layouts.Measure, error) {
	it, err := byKey.Sort()
	if err != nil {
		return nil, err
	}
	defer it.Close()
	inOrder := extsort.New(s.dir, s.opts.sortBudget(), extsort.CompareKeyRow)
	inOrder.Prefix = extsort.PrefixKeyRow
	defer inOrder.Close()
	var (
		e                  extsort.Enc
		key, self, order   []byte
		parent, root       string
		children, treeSize int
	)
	flush := func() error {
		if self == nil {
			return nil
		}
		d := extsort.Dec{B: self}
		d.Bytes()
		row := d.Row()
		d.Flag()
		depth := d.I()
		parent, root = d.S(), d.S()
		pathBytes, maxAnc := d.I(), d.I()
		r := d.U()
		order = order[:0]
		if s.notTopo {
			// Breadth first: by depth, then by the rows from the root
			// down, which the ranks of the levels give (keepRank).
			order = binary.BigEndian.AppendUint64(order, uint64(depth))
			order = binary.BigEndian.AppendUint64(order, r)
		}
		e.Reset()
		e.B = binary.AppendUvarint(e.B, uint64(len(order)))
		e.B = append(e.B, order...)
		e.Row(row)
		subtree := 1
		if depth == 0 {
			subtree = treeSize
		} else {
			treeSize = 1
		}
		e.I(children)
		e.I(subtree)
		e.I(treeSize)
		e.I(depth)
		e.S(string(key))
		e.S(parent)
		e.S(root)
		e.I(pathBytes)
		e.I(maxAnc)
		e.I(0) // attributes: the passes measured them
		e.I(0)
		return inOrder.Add(e.B)
	}
	var k int64
	for rec, ok := it.Next(); ok; rec, ok = it.Next() {
		if k++; k&(1<<16-1) == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			s.phase("counting collections (records)", k, byKey.Records)
		}
		d := extsort.Dec{B: rec}
		rk := d.Bytes()
		if !bytes.Equal(rk, key) {
			if err := flush(); err != nil {
				return nil, err
			}
			key, self, children, treeSize = append(key[:0], rk...), nil, 0, 0
		}
		d.Row()
		switch d.Flag() {
		case kSelf:
			self = append(self[:0], rec...)
		case kChild:
			children++
		case kTree:
			treeSize++
		}
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return s.measureSorted(ctx, l, inOrder, roots)
}

// measureSorted measures the nodes of inOrder in l, in its order: each
// record is its order, row, valid children, subtree and tree, depth, id,
// parent, root, path bytes, longest ancestor id and attributes' sizes
// (0 where the passes measured them).
func (s *State) measureSorted(ctx context.Context, l layouts.Layout, inOrder *extsort.Sorter, roots int) (*layouts.Measure, error) {
	it, err := inOrder.Sort()
	if err != nil {
		return nil, err
	}
	defer it.Close()
	m := layouts.NewMeasure(l)
	var k int64
	for rec, ok := it.Next(); ok; rec, ok = it.Next() {
		if k++; k&(1<<16-1) == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			s.phase("measuring collections (nodes)", k, inOrder.Records)
		}
		// Not shared: the layout keeps the ids of the largest collections.
		d := extsort.Dec{B: rec}
		d.Bytes()
		d.Row()
		children, subtree, treeSize, depth := d.I(), d.I(), d.I(), d.I()
		st := transform.Stats{ID: d.S(), Depth: depth, Children: children, Subtree: subtree, TreeSize: treeSize, Roots: roots}
		st.ParentID, st.RootID = d.S(), d.S()
		st.PathBytes = d.I()
		st.MaxAncestorIDBytes = d.I()
		st.AttrBytes, st.CopyBytes = d.I(), d.I()
		if depth == 0 {
			st.ParentID = ""
		}
		l.Measure(&st, m)
	}
	return m, it.Err()
}
