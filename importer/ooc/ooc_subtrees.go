package ooc

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"

	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/layouts"
)

// subtrees measures the whole plan of an input read out of core under
// ImplicitInner, as measureValid does in memory: whether a node has items
// of its own depends on its valid children, and a collection's size on
// its valid subtree or tree, which the passes did not know as they placed
// it. res is the resolved rows, sorted. Three sorted passes:
//
//  1. the valid nodes, sorted by depth, deepest first, then by id;
//  2. bottom up, a level at a time: each level is merge-joined with what
//     the level below it gave its parents (a sort of that level's
//     children by parent), which counts each node's valid children and
//     subtree; the nodes go on sorted by root, the root first;
//  3. each tree's nodes take its size from its root, and are measured in
//     the order an in-memory forest visits them (measureSorted).
//
// A level's sort holds that level only, so a deep chain costs a sort in
// memory of one record a level.
func (s *State) subtrees(ctx context.Context, l layouts.Layout, res *extsort.Iter) (*layouts.Measure, error) {
	byLevel := extsort.New(s.dir, s.opts.sortBudget(), extsort.CompareKeyRow)
	byLevel.Prefix = extsort.PrefixKeyRow
	defer byLevel.Close()
	var (
		e     extsort.Enc
		rn    resolvedNode
		key   []byte
		roots int
		k     int64
	)
	for rec, ok := res.Next(); ok; rec, ok = res.Next() {
		if k++; k&(1<<16-1) == 0 {
			if err := ctx.Err(); err != nil {
				res.Close()
				return nil, err
			}
			s.phase("counting subtrees (rows)", k, -1)
		}
		d := extsort.Dec{B: rec[8:], Share: true}
		if d.Flag() == 1 {
			continue // rejected
		}
		rn.get(s, &d)
		if rn.depth == 0 {
			roots++
		}
		key = binary.BigEndian.AppendUint64(key[:0], math.MaxUint64-uint64(rn.depth))
		key = append(key, rn.id...)
		e.Reset()
		e.Bs(key)
		e.Row(extsort.RowOf(rec))
		e.I(rn.depth)
		e.S(rn.parent)
		e.S(rn.root)
		e.I(rn.pathBytes)
		e.I(rn.maxAnc)
		e.U(rn.rank)
		e.I(rn.attr)
		e.I(rn.copy)
		if err := byLevel.Add(e.B); err != nil {
			res.Close()
			return nil, err
		}
	}
	err := res.Err()
	res.Close()
	if err != nil {
		return nil, err
	}
	byRoot := extsort.New(s.dir, s.opts.sortBudget(), extsort.CompareKeyRow)
	byRoot.Prefix = extsort.PrefixKeyRow
	defer byRoot.Close()
	if err := s.countSubtrees(ctx, byLevel, byRoot); err != nil {
		return nil, err
	}
	byLevel.Close() // its files go before the next sort's are written
	return s.measureTrees(ctx, l, byRoot, roots)
}

// levelJoin is the children a level below gave its parents, sorted by
// parent: the merge join's side of countSubtrees.
type levelJoin struct {
	sorter *extsort.Sorter
	it     *extsort.Iter
	parent []byte // the current record's parent; nil past the end
	size   int    // and its subtree
}

func (j *levelJoin) next() {
	rec, ok := j.it.Next()
	if !ok {
		j.parent = nil
		return
	}
	d := extsort.Dec{B: rec, Share: true}
	j.parent = append(j.parent[:0], d.Bytes()...)
	d.Row()
	j.size = d.I()
}

func (j *levelJoin) close() {
	if j.it != nil {
		j.it.Close()
	}
	if j.sorter != nil {
		j.sorter.Close()
	}
	*j = levelJoin{}
}

// countSubtrees is subtrees' second pass: it reads byLevel bottom up and
// adds each valid node to byRoot with its valid children and subtree.
func (s *State) countSubtrees(ctx context.Context, byLevel, byRoot *extsort.Sorter) error {
	it, err := byLevel.Sort()
	if err != nil {
		return err
	}
	defer it.Close()
	budget := s.opts.sortBudget() / 2 // the level read and the level filled
	var (
		below, join levelJoin
		e           extsort.Enc
		rootKey     []byte
		level       = -1
		k           int64
	)
	defer func() { below.close(); join.close() }()
	for rec, ok := it.Next(); ok; rec, ok = it.Next() {
		if k++; k&(1<<16-1) == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			s.phase("counting subtrees (nodes)", k, byLevel.Records)
		}
		d := extsort.Dec{B: rec, Share: true}
		key := d.Bytes()
		depth := int(math.MaxUint64 - binary.BigEndian.Uint64(key))
		id := key[8:]
		row := d.Row()
		if depth != level {
			// The level above: join it with what this one's nodes gave.
			join.close()
			join, below = below, levelJoin{}
			if join.sorter != nil {
				if join.it, err = join.sorter.Sort(); err != nil {
					return err
				}
				join.next()
			}
			below.sorter = extsort.New(s.dir, budget, extsort.CompareKeyRow)
			below.sorter.Prefix = extsort.PrefixKeyRow
			level = depth
		}
		children, subtree := 0, 1
		for join.parent != nil && bytes.Compare(join.parent, id) <= 0 {
			if bytes.Equal(join.parent, id) {
				children++
				subtree += join.size
			}
			join.next()
		}
		if join.it != nil {
			if err := join.it.Err(); err != nil {
				return err
			}
		}
		rest := d.B // depth, parent, root, ...
		d.I()
		parent, root := d.S(), d.S()
		if depth > 0 {
			e.Reset()
			e.S(parent)
			e.Row(row)
			e.I(subtree)
			if err := below.sorter.Add(e.B); err != nil {
				return err
			}
		}
		// By root, the root first (flag 0), each tree's nodes together
		// (the root's id is length-prefixed).
		rootKey = binary.AppendUvarint(rootKey[:0], uint64(len(root)))
		rootKey = append(rootKey, root...)
		if depth == 0 {
			rootKey = append(rootKey, 0)
		} else {
			rootKey = append(rootKey, 1)
		}
		e.Reset()
		e.Bs(rootKey)
		e.Row(row)
		e.S(string(id))
		e.I(children)
		e.I(subtree)
		e.B = append(e.B, rest...)
		if err := byRoot.Add(e.B); err != nil {
			return err
		}
	}
	return it.Err()
}

// measureTrees is subtrees' third pass: each node of byRoot takes its
// tree's size from the root before it, and goes to measureSorted's sort.
func (s *State) measureTrees(ctx context.Context, l layouts.Layout, byRoot *extsort.Sorter, roots int) (*layouts.Measure, error) {
	it, err := byRoot.Sort()
	if err != nil {
		return nil, err
	}
	defer it.Close()
	inOrder := extsort.New(s.dir, s.opts.sortBudget(), extsort.CompareKeyRow)
	inOrder.Prefix = extsort.PrefixKeyRow
	defer inOrder.Close()
	var (
		e        extsort.Enc
		order    []byte
		treeSize int
		k        int64
	)
	for rec, ok := it.Next(); ok; rec, ok = it.Next() {
		if k++; k&(1<<16-1) == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			s.phase("counting subtrees (trees)", k, byRoot.Records)
		}
		d := extsort.Dec{B: rec, Share: true}
		d.Bytes()
		row := d.Row()
		id := d.S()
		children, subtree, depth := d.I(), d.I(), d.I()
		parent, root := d.S(), d.S()
		pathBytes, maxAnc, rank := d.I(), d.I(), d.U()
		attr, cp := d.I(), d.I()
		if depth == 0 {
			treeSize = subtree
		}
		order = order[:0]
		if s.notTopo {
			// Breadth first, as measureInOrder's.
			order = binary.BigEndian.AppendUint64(order, uint64(depth))
			order = binary.BigEndian.AppendUint64(order, rank)
		}
		e.Reset()
		e.Bs(order)
		e.Row(row)
		e.I(children)
		e.I(subtree)
		e.I(treeSize)
		e.I(depth)
		e.S(id)
		e.S(parent)
		e.S(root)
		e.I(pathBytes)
		e.I(maxAnc)
		e.I(attr)
		e.I(cp)
		if err := inOrder.Add(e.B); err != nil {
			return nil, err
		}
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	it.Close()
	byRoot.Close()
	return s.measureSorted(ctx, l, inOrder, roots)
}
