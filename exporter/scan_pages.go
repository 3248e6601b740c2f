package exporter

import (
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// decodedPageFactor is about how many bytes of heap a page's byte takes
// once decoded into items (maps of attribute values, their strings and
// interfaces): a page of 1 MB is some 15 MB of heap (measured with
// TestExportRootOutOfCoreHeap's pages), 16 with a margin.
const decodedPageFactor = 16

// maxPageBytes is the most DynamoDB puts in one page of a Scan or Query.
const maxPageBytes = 1 << 20

// pager sets each request's Limit so that a page, decoded, takes at most
// perPage bytes of memory (ScanOptions.Memory shared by the pages in
// flight). It learns the table's bytes an item from the pages read so
// far (their consumed capacity: a read unit is 4 KB consistent, 8 KB
// not, rounded up a page), shared by the segments; before the first, it
// takes an item for 1 KB. A limit that would let DynamoDB fill its 1 MB
// is no limit.
type pager struct {
	perPage    int64
	consistent bool
	items      atomic.Int64
	bytes      atomic.Int64
}

// newPager is the pager of a scan's segments (nil when memory is 0).
func newPager(memory int64, pages int, consistent bool) *pager {
	if memory <= 0 {
		return nil
	}
	return &pager{perPage: max(memory/int64(max(pages, 1)), 1), consistent: consistent}
}

// limit is the Limit of the next request (0: none, pages of 1 MB).
func (p *pager) limit() int32 {
	if p == nil {
		return 0
	}
	itemBytes := int64(1024)
	if n := p.items.Load(); n > 0 {
		itemBytes = max(p.bytes.Load()/n, 1)
	}
	fit := p.perPage / (decodedPageFactor * itemBytes)
	if fit*itemBytes >= maxPageBytes {
		return 0
	}
	return int32(max(fit, 10))
}

// read counts a page: its items and its consumed capacity units.
func (p *pager) read(items int, units float64) {
	if p == nil || items == 0 || units <= 0 {
		return
	}
	unit := 8192.0
	if p.consistent {
		unit = 4096
	}
	p.items.Add(int64(items))
	p.bytes.Add(int64(units * unit))
}

// capacityUnits is a page's consumed read units (0 when not told).
func capacityUnits(c *types.ConsumedCapacity) float64 {
	if c == nil || c.CapacityUnits == nil {
		return 0
	}
	return *c.CapacityUnits
}

// PagesMemory is the share of an out-of-core job's --memory that its
// Scan's pages in flight get (ScanOptions.Memory): an eighth, and never
// less than 8 MiB, the process's floor (a page of 1 MB decoded is about
// 15 MB: four segments of them were 60 MB beside a budget of 64 MiB).
func PagesMemory(memory int64) int64 { return max(memory/8, 8<<20) }
