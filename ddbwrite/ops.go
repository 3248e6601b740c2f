package ddbwrite

import (
	"context"

	"github.com/treeport/treeport/layouts"
)

// Ops yields a run's operations in order, each to yield (del: the delete
// of the item under item's key; otherwise the put of item), and stops at
// the first error yield returns, returning it.
type Ops func(yield func(del bool, item layouts.Item) error) error

// WriteOps is the feed of a run of puts and deletes (Run's feed): it hands
// the operations ops yields to w, numbered from 0 in their order, passes
// over the ones below skip (an earlier run acknowledged them), and returns
// how many ops yielded, the skipped ones included.
//
// Puts go before deletes, for real: before the first delete it sends,
// WriteOps calls barrier with that delete's number, and sends no delete
// when barrier fails. barrier must not return before every put handed to w
// is acknowledged: it calls w.Settle, and may wait for more (another
// copy's puts). ops yields the puts first (a plan's order); a put that
// comes after a delete is sent as it comes.
//
// WriteOps stops at ctx's end, before the next operation.
func WriteOps(ctx context.Context, w *DDBWriter, skip int64, ops Ops, barrier func(ctx context.Context, seq int64) error) (int64, error) {
	var seq int64
	settled := false
	err := ops(func(del bool, item layouts.Item) error {
		s := seq
		seq++
		if s < skip {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !del {
			return w.Write(ctx, s, item)
		}
		if !settled {
			if err := barrier(ctx, s); err != nil {
				return err
			}
			settled = true
		}
		return w.Delete(ctx, s, item)
	})
	return seq, err
}
