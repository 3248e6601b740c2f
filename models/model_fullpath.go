package models

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/transform"
)

// Path ids and full-path keys (issue 25). With "path_ids": true a node's
// id is its path from its root, its names joined by the model's
// delimiter (photos/2024/trip), its name the last segment, and its parent
// the id without it. A model whose partition key is constant and whose
// sort key is the whole path ({id}, after any literal text) is a
// full-path model, the way S3 keeps a bucket: a folder is an inner node
// that needs no item of its own (the keys below it name it), and an
// object may share its path with a folder (photos/2024 holds attributes
// and photos/2024/x is below it: one node). Such a table answers every
// query from its one partition, as ListObjectsV2 does:
//
//   - get: GetItem of the path; without an item, a Query of path + "/"
//     (Limit 1) tells an implicit node from one that is not there;
//   - children: a Query of begins_with(path + "/"), grouped at the next
//     delimiter: at the first key below a child folder the Query stops
//     and a new one starts just past that folder's keys (sort key >= the
//     folder's path followed by the code point after the delimiter), so a
//     listing reads each object child once and at most one page of each
//     child folder, never the folders' subtrees;
//   - descendants: the same begins_with read to its end (every key below
//     the node, once), the implicit folders filled in;
//   - ancestors: BatchGetItem of the path's prefixes; those without an
//     item are implicit nodes.
//
// Other partitions (other buckets) are never read by a query, and every
// item of them is another entity's: never a node, never changed.

// fullPathPage is the Limit of a children listing's Queries: each stops
// at the first key below a child folder, and is billed for what its page
// read, so a page is kept small enough that what it reads of a folder it
// then skips is little.
const fullPathPage = 100

// errSkipFolder and errListed end a listing's Query from its page
// function: the first to start another past a child folder's keys, the
// second at the first key outside the listed node's.
var (
	errSkipFolder = errors.New("models: skip past a child folder")
	errListed     = errors.New("models: past the listed node's keys")
)

// fullPathKeys is tableKeys' check of a model with path ids whose
// partition key is constant (text and parameters): a full-path model,
// whose sort key is the node's whole path.
func (p *modelParser) fullPathKeys() error {
	fail, m := p.fail, p.m
	if m.sk == nil {
		return fail("table.sort_key", "a constant partition key needs a sort key that is the node's whole path: give {\"name\": …, \"template\": \"{id}\"}")
	}
	parts := m.sk.tmpl.parts
	if len(m.sk.tmpl.uses()) != 1 || parts[len(parts)-1].ph != phID {
		return fail("table.sort_key.template", "%q: under a constant partition key the sort key is the node's whole path, {id} at its end after any text (\"{id}\", \"OBJ#{id}\"), so that a node's descendants are a begins_with", m.sk.tmpl.text)
	}
	m.fullPath = true
	m.pkConst = m.pk.tmpl.pre // bound: a parameter's value is text now
	if len(parts) == 2 {
		m.skPrefix = parts[0].lit
	}
	return nil
}

// PathIDs reports whether the model's ids are paths ("path_ids").
func (m *modelLayout) PathIDs() bool { return m.pathIDs }

// ImplicitInner reports whether an inner node without attributes has no
// item of its own ("implicit_inner").
func (m *modelLayout) ImplicitInner() bool { return m.implicitInner }

// pathParent is the parent of a path id: the id without its last name,
// "" for a root.
func (m *modelLayout) pathParent(id string) string {
	if i := strings.LastIndex(id, m.delim); i >= 0 {
		return id[:i]
	}
	return ""
}

// checkPathID says what is wrong with a node's path id (layouts.CheckPathID):
// an empty name (a//b, a trailing delimiter), or a parent that is not the
// id without its last name.
func (m *modelLayout) checkPathID(id, parent string) error {
	if !m.pathIDs {
		return nil
	}
	if err := layouts.CheckPathID(id, parent, m.delim); err != nil {
		return fmt.Errorf("model %s: %w", m.name, err)
	}
	return nil
}

// omits reports whether the node gets no item: an inner node without
// attributes, with "implicit_inner".
func (m *modelLayout) omits(n *transform.Node) bool {
	return m.implicitInner && n.Inner && len(n.Attrs) == 0
}

// outsidePartition reports whether an item is outside a full-path
// model's partition (another bucket's), or in it without the sort key's
// text: another entity's, never a node.
func (m *modelLayout) outsidePartition(item layouts.View) bool {
	if !m.fullPath {
		return false
	}
	pk, ok := item.Str(m.pk.name)
	if !ok || pk != m.pkConst {
		return true
	}
	sk, ok := item.Str(m.sk.name)
	return !ok || !strings.HasPrefix(sk, m.skPrefix)
}

// fullPathQuery answers a query of a full-path model's table (see the
// top of this file).
func (m *modelLayout) fullPathQuery(ctx context.Context, r layouts.Reads, q layouts.Request) ([]layouts.Result, error) {
	if q.ID == "" || m.checkPathID(q.ID, m.pathParent(q.ID)) != nil {
		return nil, &layouts.NotFoundError{Node: fmt.Sprintf("node %q", q.ID)}
	}
	switch q.Kind {
	case layouts.QueryChildren:
		res, err := m.fullPathChildren(ctx, r, q.ID)
		if err != nil || len(res) > 0 || q.Known {
			return res, err
		}
		_, err = m.fullPathAnchor(ctx, r, q)
		return nil, err
	case layouts.QueryDescendants:
		return m.fullPathDescendants(ctx, r, q)
	}
	self, err := m.fullPathAnchor(ctx, r, q)
	if err != nil {
		return nil, err
	}
	var res []layouts.Result
	if q.InBand(0) {
		res = append(res, self)
	}
	if q.Kind == layouts.QueryAncestors {
		more, err := m.fullPathAncestors(ctx, r, q)
		return append(res, more...), err
	}
	return res, nil
}

// fullPathKey is the table key of the node with path id.
func (m *modelLayout) fullPathKey(id string) layouts.Item {
	return layouts.Item{m.pk.name: layouts.StringValue(m.pkConst), m.sk.name: layouts.StringValue(m.skPrefix + id)}
}

// fullPathResult is the node an item holds, at relative depth d.
func (m *modelLayout) fullPathResult(item layouts.Item, d int) (layouts.Result, error) {
	rec, ok, err := m.Node(item)
	if err != nil {
		return layouts.Result{}, &layouts.ItemError{Item: item, Err: err}
	}
	if !ok {
		return layouts.Result{}, &layouts.ItemError{Item: item, Err: fmt.Errorf("%w: not a node's item", layouts.ErrItem)}
	}
	return layouts.Result{ID: rec.ID, Parent: rec.Parent, RelativeDepth: d, Attrs: rec.Attrs}, nil
}

// implicitResult is a node no item holds, named by the keys below it.
func (m *modelLayout) implicitResult(id string, d int) layouts.Result {
	return layouts.Result{ID: id, Parent: m.pathParent(id), RelativeDepth: d, Attrs: transform.Attrs{}}
}

// below is the key condition of every key below the node with path id.
func (m *modelLayout) below(id string) layouts.QueryInput {
	return layouts.QueryInput{
		KeyCondition: "#pk = :pk AND begins_with(#sk, :below)",
		Names:        map[string]string{"#pk": m.pk.name, "#sk": m.sk.name},
		Values: map[string]types.AttributeValue{
			":pk":    layouts.StringValue(m.pkConst),
			":below": layouts.StringValue(m.skPrefix + id + m.delim),
		},
	}
}

// fullPathAnchor reads the queried node: its item, or, without one, the
// first key below it, which makes it an implicit node. Known skips that
// second read.
func (m *modelLayout) fullPathAnchor(ctx context.Context, r layouts.Reads, q layouts.Request) (layouts.Result, error) {
	item, err := r.GetItem(ctx, m.fullPathKey(q.ID))
	if err != nil {
		return layouts.Result{}, err
	}
	if item != nil && !m.outsidePartition(layouts.MapView(item)) && !m.foreign(layouts.MapView(item)) {
		return m.fullPathResult(item, 0)
	}
	if q.Known {
		return m.implicitResult(q.ID, 0), nil
	}
	in := m.below(q.ID)
	in.Limit = 1
	found := false
	err = r.Query(ctx, in, func(items []layouts.Item) error {
		for _, it := range items {
			found = found || !m.foreign(layouts.MapView(it))
		}
		return errListed
	})
	if err != nil && !errors.Is(err, errListed) {
		return layouts.Result{}, err
	}
	if !found {
		return layouts.Result{}, &layouts.NotFoundError{Node: fmt.Sprintf("node %q", q.ID)}
	}
	return m.implicitResult(q.ID, 0), nil
}

// afterDelim is the text just past every key that starts with prefix and
// the delimiter: prefix and the code point after the delimiter's last
// (DynamoDB orders text by its UTF-8 bytes, which is code point order).
// false when the delimiter ends in the last code point.
func (m *modelLayout) afterDelim(prefix string) (string, bool) {
	last, size := utf8.DecodeLastRuneInString(m.delim)
	next := last + 1
	if next == 0xD800 {
		next = 0xE000 // past the surrogates, which text cannot hold
	}
	if next > utf8.MaxRune {
		return "", false
	}
	return prefix + m.delim[:len(m.delim)-size] + string(next), true
}

// fullPathChildren lists the node's children as ListObjectsV2 with a
// delimiter lists a prefix: the keys one name below it are its object
// children, and a key further below names a child folder, an implicit
// node unless an item has its path. At such a key the Query ends and the
// next starts past the folder's keys.
func (m *modelLayout) fullPathChildren(ctx context.Context, r layouts.Reads, id string) ([]layouts.Result, error) {
	under := m.skPrefix + id + m.delim
	at := map[string]int{} // child id → its index in res
	var res []layouts.Result
	in := m.below(id)
	in.Limit = fullPathPage
	for {
		var next string
		err := r.Query(ctx, in, func(items []layouts.Item) error {
			for _, it := range items {
				sk, _ := layouts.MapView(it).Str(m.sk.name)
				if !strings.HasPrefix(sk, under) {
					return errListed
				}
				if m.foreign(layouts.MapView(it)) {
					continue
				}
				rest := sk[len(under):]
				name, deeper := rest, false
				if i := strings.Index(rest, m.delim); i >= 0 {
					name, deeper = rest[:i], true
				}
				if name == "" && deeper {
					// A doubled delimiter (photos//x): no node's key.
					// Refused, as descendants and a Scan refuse it,
					// rather than answered as a child "photos/".
					return &layouts.ItemError{Item: it, Err: fmt.Errorf("%w: %w", layouts.ErrItem, m.checkPathID(sk[len(m.skPrefix):], ""))}
				}
				child := id + m.delim + name
				i, seen := at[child]
				switch {
				case !deeper:
					n, err := m.fullPathResult(it, 1)
					if err != nil {
						return err
					}
					if seen {
						res[i] = n
					} else {
						at[child] = len(res)
						res = append(res, n)
					}
				case !seen:
					at[child] = len(res)
					res = append(res, m.implicitResult(child, 1))
				}
				if deeper {
					if past, ok := m.afterDelim(under + name); ok {
						next = past
						return errSkipFolder
					}
				}
			}
			return nil
		})
		if !errors.Is(err, errSkipFolder) {
			if errors.Is(err, errListed) {
				err = nil
			}
			return res, err
		}
		in.KeyCondition = "#pk = :pk AND #sk >= :past"
		in.Values = map[string]types.AttributeValue{":pk": layouts.StringValue(m.pkConst), ":past": layouts.StringValue(next)}
	}
}

// fullPathDescendants reads every key below the node with one
// begins_with Query, and fills in the implicit nodes between it and each
// key; the node itself is read as the anchor when the band holds it, or
// when nothing is below it (to tell a leaf from a node that is not there).
func (m *modelLayout) fullPathDescendants(ctx context.Context, r layouts.Reads, q layouts.Request) ([]layouts.Result, error) {
	at := map[string]int{}
	var res []layouts.Result
	add := func(n layouts.Result, real bool) {
		if i, ok := at[n.ID]; ok {
			if real {
				res[i] = n
			}
			return
		}
		at[n.ID] = len(res)
		res = append(res, n)
	}
	found := false
	if q.MaxDepth != 0 {
		depth0 := strings.Count(q.ID, m.delim)
		err := r.Query(ctx, m.below(q.ID), func(items []layouts.Item) error {
			for _, it := range items {
				if m.foreign(layouts.MapView(it)) {
					continue
				}
				found = true
				n, err := m.fullPathResult(it, 0)
				if err != nil {
					return err
				}
				n.RelativeDepth = strings.Count(n.ID, m.delim) - depth0
				if q.InBand(n.RelativeDepth) {
					add(n, true)
				}
				// The implicit nodes between the queried node and this one.
				for p, d := n.Parent, n.RelativeDepth-1; d >= 1; p, d = m.pathParent(p), d-1 {
					if q.InBand(d) {
						add(m.implicitResult(p, d), false)
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if q.InBand(0) || (!found && !q.Known) {
		if found {
			q.Known = true // the keys below it make it a node
		}
		self, err := m.fullPathAnchor(ctx, r, q)
		if err != nil {
			return nil, err
		}
		if q.InBand(0) {
			res = append(res, self)
		}
	}
	return res, nil
}

// fullPathAncestors reads the prefixes of the node's path in the band with
// BatchGetItem; a prefix without an item is an implicit node.
func (m *modelLayout) fullPathAncestors(ctx context.Context, r layouts.Reads, q layouts.Request) ([]layouts.Result, error) {
	want := map[string]int{}
	var keys []layouts.Item
	for p, d := m.pathParent(q.ID), 1; p != ""; p, d = m.pathParent(p), d+1 {
		if q.InBand(d) {
			want[p] = d
			keys = append(keys, m.fullPathKey(p))
		}
	}
	var items []layouts.Item
	if len(keys) > 0 {
		var err error
		if items, err = r.BatchGet(ctx, keys); err != nil {
			return nil, err
		}
	}
	res := make([]layouts.Result, 0, len(want))
	for _, it := range items {
		if m.outsidePartition(layouts.MapView(it)) || m.foreign(layouts.MapView(it)) {
			continue
		}
		n, err := m.fullPathResult(it, 0)
		if err != nil {
			return nil, err
		}
		if d, ok := want[n.ID]; ok {
			n.RelativeDepth = d
			res = append(res, n)
			delete(want, n.ID)
		}
	}
	for p, d := range want {
		res = append(res, m.implicitResult(p, d))
	}
	return res, nil
}

// renderedLenPathIDs is renderedLen with path ids, whose Stats' ids are
// paths: a name is what an id adds to its parent's.
func (m *modelLayout) renderedLenPathIDs(a *modelAttr, s *transform.Stats) (int, bool) {
	if s.ParentID == "" && (a.absentOnRoot || a.tmpl.has(phParent)) {
		return 0, false
	}
	d := len(m.delim)
	n := 0
	for _, p := range a.tmpl.parts {
		switch p.ph {
		case "":
			n += len(p.lit)
		case phID, phPath:
			n += len(s.ID)
		case phParent:
			n += len(s.ParentID)
		case phRoot:
			n += len(s.RootID)
		case phName:
			n += len(s.ID)
			if s.Depth > 0 {
				n -= len(s.ParentID) + d
			}
		case phSubpath:
			if s.Depth > 0 {
				n += len(s.ID) - len(s.RootID) - d
			}
		case phParentSubpath:
			if s.Depth > 1 {
				n += len(s.ParentID) - len(s.RootID) - d
			}
		case phInner:
			if s.Depth > 1 {
				n += len(s.ParentID) - len(s.RootID)
			}
		case phDepth:
			n += layouts.Digits(s.Depth)
		}
	}
	if a.num {
		return layouts.NumberSize(s.Depth), true
	}
	return n, true
}
