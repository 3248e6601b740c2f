package diskmap

// cache keeps the blocks read last, up to limit bytes: least recently
// used out first. A block over a quarter of the limit is not kept.
type cache struct {
	limit, used int64
	entries     map[uint64]*centry
	// spare is the buffer of the block last let go, for the next read:
	// a block read is not a fresh allocation to clear. Nothing holds a
	// cached block past the next read (Get copies; iterators copy).
	spare []byte
	head  centry // head.next is the newest, head.prev the oldest
}

type centry struct {
	key        uint64
	b          []byte
	prev, next *centry
}

func (c *cache) get(key uint64) []byte {
	e := c.entries[key]
	if e == nil {
		return nil
	}
	c.unlink(e)
	c.front(e)
	return e.b
}

func (c *cache) add(key uint64, b []byte) {
	if int64(len(b)) > c.limit/4 {
		c.spare = b
		return
	}
	if c.entries == nil {
		c.entries = make(map[uint64]*centry)
		c.head.next, c.head.prev = &c.head, &c.head
	}
	for c.used+int64(len(b)) > c.limit && c.head.prev != &c.head {
		old := c.head.prev
		c.unlink(old)
		delete(c.entries, old.key)
		c.used -= int64(len(old.b))
		if cap(old.b) > cap(c.spare) {
			c.spare = old.b
		}
	}
	e := &centry{key: key, b: b}
	c.entries[key] = e
	c.front(e)
	c.used += int64(len(b))
}

func (c *cache) unlink(e *centry) {
	e.prev.next, e.next.prev = e.next, e.prev
}

func (c *cache) front(e *centry) {
	e.next, e.prev = c.head.next, &c.head
	c.head.next.prev = e
	c.head.next = e
}
