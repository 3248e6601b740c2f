package ooclinks

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/treeport/treeport/internal/extsort"
	"github.com/treeport/treeport/transform"
)

// The links no doubling pass brings to the end of their chain are on a
// cycle of links or on a chain into one. They are not read into memory:
// the doubling goes on over them alone (each link's pointer is its
// 2^k-th successor, and it carries the least row of the 2^k links from
// it), until 2^k is at least their count. Then each link's pointer is on
// its cycle (no chain into one is that long), and the pointers are the
// links on a cycle, each of which carries the least row of its cycle: the
// cycle's label, and the row of its first link in the input, where its
// listing starts, as Cycles's does. The listing's ids (MaxCycleIDs of
// them, at most) are read by as many joins of each cycle's next link with
// the links on a cycle, by id; its count by a sort by label.

// MaxCycleIDs is the most ids a cycle of links's problem names, as
// transform.CycleError names a cycle of parents's: the others are
// counted.
const MaxCycleIDs = transform.MaxCycleIDs

// CycleError is the problem of each link on a cycle of n links, whose
// first ids (from its first link in the input, in link order) are ids:
// MaxCycleIDs of them at most are named, the others counted.
func CycleError(ids []string, n int) error {
	return fmt.Errorf("%w: a cycle of links: %s", transform.ErrLink, transform.CycleList(ids, n))
}

// errCycleBug is what a pass over the links on a cycle says when they
// are not what the passes before made (a bug).
var errCycleBug = errors.New("importer: the links on a cycle of links are not what the passes found (a bug): import with more --memory")

// cycles adds to next the problems of the links of r (closed after),
// which no doubling pass brought to the end of its chain after passes of
// them: those on a cycle (CycleError, its ids from its first link in the
// input) and those on a chain into one (BadChainError). It returns how
// many it added.
func (lk *Links) cycles(ctx context.Context, r *hops, passes int, next *extsort.Sorter) (int64, error) {
	defer func() { r.close() }()
	if r.edges == 0 {
		return 0, nil
	}
	for ; passes < 62 && int64(1)<<passes < r.edges; passes++ {
		nr, _, err := lk.hopPass(ctx, r)
		r.close()
		r = nr
		if err != nil {
			return 0, err
		}
	}
	c := &cycleSorts{
		members:  extsort.New(lk.dir.Path, lk.budget, bytes.Compare),
		frontier: lk.sorter(extsort.CompareKeyRow, extsort.PrefixKeyRow),
	}
	c.members.Prefix = extsort.PrefixRow
	defer c.close()
	var err error
	if c.on, err = extsort.NewSpool(lk.dir.Path); err != nil {
		return 0, err
	}
	n, err := c.mark(ctx, r, next)
	if err != nil {
		return 0, err
	}
	r.close()
	r = nil
	if err := lk.listings(ctx, c); err != nil {
		return 0, err
	}
	m, err := c.problems(ctx, lk, next)
	return n + m, err
}

// cycleSorts are the files of the links on a cycle.
type cycleSorts struct {
	on       *extsort.Spool  // the links on a cycle, by id: id, row, target
	members  *extsort.Sorter // the same, by their cycle's label: label, id
	frontier *extsort.Sorter // a link of each cycle, its listing's next: id, label
	names    *extsort.Sorter // the listings: label, place, id
}

func (c *cycleSorts) close() {
	for _, x := range []*extsort.Sorter{c.members, c.frontier, c.names} {
		if x != nil {
			x.Close()
		}
	}
	if c.on != nil {
		c.on.Close()
	}
}

// every checks ctx every 65,536 calls.
func every(ctx context.Context, k *int) error {
	if *k++; *k&(1<<16-1) == 0 {
		return ctx.Err()
	}
	return nil
}

// mark reads the links of r, after the passes, by id and by pointer in
// one merge: a link that is some link's pointer is on a cycle (c.on,
// c.members, and c.frontier when it is its cycle's first), the others on
// a chain into one, whose problem it adds to next. It returns how many
// it added.
func (c *cycleSorts) mark(ctx context.Context, r *hops, next *extsort.Sorter) (int64, error) {
	ids, err := r.byID.Sort()
	if err != nil {
		return 0, err
	}
	defer ids.Close()
	ptrs, err := r.byPtr.Sort()
	if err != nil {
		return 0, err
	}
	defer ptrs.Close()
	var (
		x    hop
		e    extsort.Enc
		n    int64
		k    int
		p, m = ptrs.Next()
	)
	for rec, ok := ids.Next(); ok; rec, ok = ids.Next() {
		if err := every(ctx, &k); err != nil {
			return 0, err
		}
		x.get(rec)
		for m && string(firstKey(p)) < x.key {
			p, m = ptrs.Next()
		}
		if !m || string(firstKey(p)) != x.key {
			putProblem(&e, x.key, 0, Plain, BadChainError(x.target).Error())
			if err := next.Add(e.B); err != nil {
				return 0, err
			}
			n++
			continue
		}
		e.Reset()
		e.S(x.key)
		e.Row(x.row)
		e.S(x.target)
		if err := c.on.Add(e.B); err != nil {
			return 0, err
		}
		e.Reset()
		e.Row(x.min)
		e.S(x.key)
		if err := c.members.Add(e.B); err != nil {
			return 0, err
		}
		if x.row == x.min {
			e.Reset()
			e.S(x.key)
			e.Row(x.min)
			if err := c.frontier.Add(e.B); err != nil {
				return 0, err
			}
		}
	}
	return n, errors.Join(ids.Err(), ptrs.Err())
}

// listings reads the first MaxCycleIDs ids of each cycle, from its first
// link, into c.names: a join by id of each cycle's next link with the
// links on a cycle, for each place, until the cycle is back at its
// first.
func (lk *Links) listings(ctx context.Context, c *cycleSorts) error {
	c.names = extsort.New(lk.dir.Path, lk.budget, bytes.Compare)
	c.names.Prefix = extsort.PrefixRow
	var (
		e extsort.Enc
		k int
	)
	for place := int64(0); place < MaxCycleIDs && c.frontier.Records > 0; place++ {
		it, err := c.frontier.Sort()
		if err != nil {
			return err
		}
		nf := lk.sorter(extsort.CompareKeyRow, extsort.PrefixKeyRow)
		err = func() error {
			defer it.Close()
			if err := c.on.Rewind(); err != nil {
				return err
			}
			o, more := c.on.Next()
			for f, ok := it.Next(); ok; f, ok = it.Next() {
				if err := every(ctx, &k); err != nil {
					return err
				}
				d := extsort.Dec{B: f, Share: true}
				id := d.Bytes()
				label := d.Row()
				for more && bytes.Compare(firstKey(o), id) < 0 {
					o, more = c.on.Next()
				}
				if !more || !bytes.Equal(firstKey(o), id) {
					return errCycleBug
				}
				od := extsort.Dec{B: o, Share: true}
				od.Bytes()
				row, target := od.Row(), od.Bytes()
				if place > 0 && row == label {
					continue // back at its first link
				}
				e.Reset()
				e.Row(label)
				e.Row(place)
				e.Bs(id)
				if err := c.names.Add(e.B); err != nil {
					return err
				}
				e.Reset()
				e.Bs(target)
				e.Row(label)
				if err := nf.Add(e.B); err != nil {
					return err
				}
			}
			return errors.Join(it.Err(), c.on.Err())
		}()
		c.frontier.Close()
		c.frontier = nf
		if err != nil {
			return err
		}
	}
	return nil
}

// problems adds to next the problem of each link on a cycle: the links
// by label are counted, each cycle's (a spool of the counts, and one of
// the links in their order), then read again beside the listings.
func (c *cycleSorts) problems(ctx context.Context, lk *Links, next *extsort.Sorter) (int64, error) {
	it, err := c.members.Sort()
	if err != nil {
		return 0, err
	}
	defer it.Close()
	members, err := extsort.NewSpool(lk.dir.Path)
	if err != nil {
		return 0, err
	}
	defer members.Close()
	counts, err := extsort.NewSpool(lk.dir.Path)
	if err != nil {
		return 0, err
	}
	defer counts.Close()
	var (
		e     extsort.Enc
		label int64
		count int64
		k     int
	)
	flush := func() error {
		if count == 0 {
			return nil
		}
		e.Reset()
		e.Row(label)
		e.Row(count)
		return counts.Add(e.B)
	}
	for rec, ok := it.Next(); ok; rec, ok = it.Next() {
		if err := every(ctx, &k); err != nil {
			return 0, err
		}
		if l := extsort.RowOf(rec); l != label || count == 0 {
			if err := flush(); err != nil {
				return 0, err
			}
			label, count = l, 0
		}
		count++
		if err := members.Add(rec); err != nil {
			return 0, err
		}
	}
	if err := errors.Join(it.Err(), flush()); err != nil {
		return 0, err
	}
	it.Close()
	return c.named(ctx, counts, members, next)
}

// named adds to next the problem of each link of members (label, id),
// given each cycle's count (label, count) and its listing (c.names).
func (c *cycleSorts) named(ctx context.Context, counts, members *extsort.Spool, next *extsort.Sorter) (int64, error) {
	names, err := c.names.Sort()
	if err != nil {
		return 0, err
	}
	defer names.Close()
	if err := errors.Join(counts.Rewind(), members.Rewind()); err != nil {
		return 0, err
	}
	var (
		e   extsort.Enc
		ids []string
		n   int64
		k   int
	)
	name, more := names.Next()
	for rec, ok := counts.Next(); ok; rec, ok = counts.Next() {
		d := extsort.Dec{B: rec, Share: true}
		label, count := d.Row(), d.Row()
		ids = ids[:0]
		for ; more && extsort.RowOf(name) == label; name, more = names.Next() {
			d := extsort.Dec{B: name[16:]}
			ids = append(ids, d.S())
		}
		if int64(len(ids)) != min(count, MaxCycleIDs) {
			return 0, errCycleBug
		}
		msg := CycleError(ids, int(count)).Error()
		for range count {
			if err := every(ctx, &k); err != nil {
				return 0, err
			}
			m, ok := members.Next()
			if !ok || extsort.RowOf(m) != label {
				return 0, errors.Join(errCycleBug, members.Err())
			}
			d := extsort.Dec{B: m[8:], Share: true}
			putProblem(&e, d.S(), 0, Cycle, msg)
			if err := next.Add(e.B); err != nil {
				return 0, err
			}
			n++
		}
	}
	return n, errors.Join(counts.Err(), names.Err())
}
