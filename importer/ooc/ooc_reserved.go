package ooc

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"maps"
	"slices"

	"github.com/treeport/treeport/internal/diskmap"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

// oocCarriers are the records of an input read out of core that carry an
// attribute name the layout reserves (reservedCarriers, by id): the first
// such record of each id, keyed by its id, its value the names the layout
// refuses (uvarint-length-prefixed, in order). They are kept in a
// diskmap in a tenth of --memory (sortBudget), in the passes' temporary
// directory: an input whose every record carries one costs disk, not
// memory. The check rebuilds a record's problem from its names, the same
// error (layouts.CheckAttrName) the in-memory check gives.
type oocCarriers struct {
	m   *diskmap.Map
	l   layouts.Layout
	err error // the first error of the map's reads: the passes fail with it
}

var errCorruptCarrier = errors.New("importer: a corrupt record of the reserved names' map")

// testOnCarriers, when set, is told of the carriers once they are read
// (the tests' look at whether they spilled).
var testOnCarriers func(dir string, m *diskmap.Map)

// reservedCarriersByID reads the input again for the records that carry
// a name the layout reserves (the first record of an id that does).
func (s *State) reservedCarriersByID(ctx context.Context, in *input, l layouts.Layout) (*oocCarriers, error) {
	src, err := records.OpenSource(in.Opts.Path, in.Opts.Source)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	m, err := diskmap.New(diskmap.Options{Dir: s.dir, Memory: int64(s.opts.sortBudget()), Stop: ctx.Err})
	if err != nil {
		return nil, err
	}
	c := &oocCarriers{m: m, l: l}
	if err := c.read(ctx, src); err != nil {
		c.close()
		return nil, err
	}
	if testOnCarriers != nil {
		testOnCarriers(s.dir, m)
	}
	return c, nil
}

func (c *oocCarriers) read(ctx context.Context, src records.Source) error {
	var names []string
	var val []byte
	for k := 0; ; k++ {
		if k&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		rec, err := src.Next(ctx)
		if err == io.EOF {
			return nil
		}
		var re *transform.RowError
		if errors.As(err, &re) {
			continue
		}
		if err != nil {
			return err
		}
		names = names[:0]
		for _, k := range slices.Sorted(maps.Keys(rec.Attrs)) {
			if layouts.CheckAttrName(c.l, k) != nil {
				names = append(names, k)
			}
		}
		if len(names) == 0 {
			continue
		}
		key := []byte(rec.ID)
		if _, ok, err := c.m.Get(key); err != nil {
			return err
		} else if ok {
			continue // a duplicate id: its first carrier's
		}
		val = val[:0]
		for _, n := range names {
			val = binary.AppendUvarint(val, uint64(len(n)))
			val = append(val, n...)
		}
		if err := c.m.Put(key, val); err != nil {
			return err
		}
	}
}

// check is the problem of the node of id: its first carrier's reserved
// names (nil: none). A read that fails is the passes' error (c.err).
func (c *oocCarriers) check(id string) error {
	val, ok, err := c.m.Get([]byte(id))
	if err != nil || !ok {
		c.err = cmp.Or(c.err, err)
		return err
	}
	var errs []error
	for len(val) > 0 {
		n, w := binary.Uvarint(val)
		if w <= 0 || uint64(len(val)-w) < n {
			c.err = cmp.Or(c.err, errCorruptCarrier)
			return errCorruptCarrier
		}
		errs = append(errs, layouts.CheckAttrName(c.l, string(val[w:w+int(n)])))
		val = val[w+int(n):]
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return transform.Problems(errs)
}

// close removes the map's files (nil: nothing to do).
func (c *oocCarriers) close() {
	if c != nil {
		c.m.Close()
	}
}
