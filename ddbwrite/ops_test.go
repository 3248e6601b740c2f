package ddbwrite

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/treeport/treeport/layouts"
)

// putsThenDeletes yields puts of items 0 to puts-1, then deletes of the
// next dels items.
func putsThenDeletes(puts, dels int) Ops {
	return func(yield func(bool, layouts.Item) error) error {
		for i := range puts + dels {
			if err := yield(i >= puts, testItem(i)); err != nil {
				return err
			}
		}
		return nil
	}
}

func TestWriteOps(t *testing.T) {
	noBarrier := func(context.Context, int64) error {
		t.Error("the barrier was called without a delete")
		return nil
	}
	t.Run("skip", func(t *testing.T) {
		f := newFake()
		w := NewDDBWriter(f, "t", testSpec, fastOptions(WriterOptions{StartSeq: 4}))
		n, err := WriteOps(context.Background(), w, 4, putsThenDeletes(10, 0), noBarrier)
		if _, cerr := w.Close(context.Background()); err == nil {
			err = cerr
		}
		if err != nil || n != 10 {
			t.Fatalf("WriteOps = %d, %v; want 10 operations", n, err)
		}
		for i := range 10 {
			if got, want := f.has(fmt.Sprintf("n%05d", i)), i >= 4; got != want {
				t.Errorf("item %d written: %v, want %v (skip 4)", i, got, want)
			}
		}
	})
	t.Run("barrier", func(t *testing.T) {
		f := newFake()
		w := NewDDBWriter(f, "t", testSpec, fastOptions(WriterOptions{}))
		refused := errors.New("refused")
		var at int64 = -1
		barrier := func(ctx context.Context, seq int64) error {
			if err := w.Settle(ctx); err != nil {
				return err
			}
			at = seq
			if f.len() != 5 {
				t.Errorf("at the barrier the table holds %d items, want the 5 puts", f.len())
			}
			return refused
		}
		_, err := WriteOps(context.Background(), w, 0, putsThenDeletes(5, 2), barrier)
		w.Close(context.Background())
		if !errors.Is(err, refused) {
			t.Errorf("WriteOps = %v, want the barrier's error", err)
		}
		if at != 5 {
			t.Errorf("the barrier was called at %d, want 5, the first delete", at)
		}
		if f.calls != 1 {
			t.Errorf("%d calls, want the one of the puts: no delete after a refused barrier", f.calls)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		f := newFake()
		w := NewDDBWriter(f, "t", testSpec, fastOptions(WriterOptions{}))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := WriteOps(ctx, w, 0, putsThenDeletes(3, 0), noBarrier)
		w.Close(context.Background())
		if !errors.Is(err, context.Canceled) || f.len() != 0 {
			t.Errorf("WriteOps = %v with %d items written, want context.Canceled and none", err, f.len())
		}
	})
}
