package refresh

// TEMPORARY (issue 27): the follower's store until internal/diskmap
// (branch diskmap) is merged; at the merge this file is replaced by an
// adapter to diskmap.New(diskmap.Options{Dir: …, Memory: …}). It never
// spills: an ordered map in memory (a treap), whatever the budget.

import (
	"bytes"
	"math/rand/v2"

	"github.com/treeport/treeport/refresh/followstate"
)

// newKVStore is the follower's store: dir and memory are diskmap's
// Options (memory 0: never spills).
func newKVStore(dir string, memory int64) (followstate.Store, error) {
	_, _ = dir, memory
	return &kvTemp{nodes: map[string]*kvNode{}}, nil
}

type kvNode struct {
	key, value  []byte
	prio        uint64
	left, right *kvNode
}

type kvTemp struct {
	root  *kvNode
	nodes map[string]*kvNode // the treap's nodes by key, for Get
}

var _ followstate.Store = (*kvTemp)(nil)

// split cuts t into the keys < key and the keys >= key.
func kvSplit(t *kvNode, key []byte) (l, r *kvNode) {
	if t == nil {
		return nil, nil
	}
	if bytes.Compare(t.key, key) < 0 {
		t.right, r = kvSplit(t.right, key)
		return t, r
	}
	l, t.left = kvSplit(t.left, key)
	return l, t
}

func kvMerge(l, r *kvNode) *kvNode {
	switch {
	case l == nil:
		return r
	case r == nil:
		return l
	case l.prio > r.prio:
		l.right = kvMerge(l.right, r)
		return l
	}
	r.left = kvMerge(l, r.left)
	return r
}

func (m *kvTemp) Get(key []byte) ([]byte, bool, error) {
	if t := m.nodes[string(key)]; t != nil {
		return bytes.Clone(t.value), true, nil
	}
	return nil, false, nil
}

func (m *kvTemp) Put(key, value []byte) error {
	if t := m.nodes[string(key)]; t != nil {
		t.value = bytes.Clone(value)
		return nil
	}
	l, r := kvSplit(m.root, key)
	n := &kvNode{key: bytes.Clone(key), value: bytes.Clone(value), prio: rand.Uint64()}
	m.nodes[string(key)] = n
	m.root = kvMerge(kvMerge(l, n), r)
	return nil
}

func (m *kvTemp) Delete(key []byte) error {
	if m.nodes[string(key)] == nil {
		return nil
	}
	delete(m.nodes, string(key))
	var del func(t *kvNode) *kvNode
	del = func(t *kvNode) *kvNode {
		switch c := bytes.Compare(key, t.key); {
		case c == 0:
			return kvMerge(t.left, t.right)
		case c < 0:
			t.left = del(t.left)
		default:
			t.right = del(t.right)
		}
		return t
	}
	m.root = del(m.root)
	return nil
}

func (m *kvTemp) Ascend(prefix []byte, fn func(key, value []byte) error) error {
	var walk func(t *kvNode) (bool, error)
	walk = func(t *kvNode) (bool, error) { // false: past the prefix
		if t == nil {
			return true, nil
		}
		if bytes.Compare(t.key, prefix) >= 0 {
			if more, err := walk(t.left); !more || err != nil {
				return more, err
			}
		}
		if bytes.Compare(t.key, prefix) >= 0 {
			if !bytes.HasPrefix(t.key, prefix) {
				return false, nil
			}
			if err := fn(t.key, t.value); err != nil {
				return false, err
			}
		}
		return walk(t.right)
	}
	_, err := walk(m.root)
	return err
}

func (m *kvTemp) Len() int64 { return int64(len(m.nodes)) }

func (m *kvTemp) Close() error {
	m.root, m.nodes = nil, nil
	return nil
}
