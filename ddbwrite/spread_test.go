package ddbwrite

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
)

// wideItem is item i of a forest whose first 100 items are the children of
// one wide node, "wide", written in tree order, and the rest have a parent
// of their own.
func wideItem(i int) layouts.Item {
	parent := "wide"
	if i >= 100 {
		parent = fmt.Sprintf("p%05d", i)
	}
	return layouts.Item{
		"Id":       &types.AttributeValueMemberS{Value: fmt.Sprintf("n%05d", i)},
		"ParentId": &types.AttributeValueMemberS{Value: parent},
		"n":        &types.AttributeValueMemberN{Value: strconv.Itoa(i)},
	}
}

// spreadRun writes 1,500 wideItems with the given Spread and returns, for
// each call, how many of its items went to "wide"'s partition; every item
// must arrive once.
func spreadRun(t *testing.T, spread int) []int {
	t.Helper()
	f := newFake()
	var mu sync.Mutex
	var wide []int
	f.hook = func(_ context.Context, _ int, reqs []types.WriteRequest) (*dynamodb.BatchWriteItemOutput, error, bool) {
		n := 0
		for _, r := range reqs {
			if r.PutRequest.Item["ParentId"].(*types.AttributeValueMemberS).Value == "wide" {
				n++
			}
		}
		mu.Lock()
		wide = append(wide, n)
		mu.Unlock()
		return nil, nil, false
	}
	w := NewDDBWriter(f, "t", testSpec, WriterOptions{Concurrency: 8, Spread: spread})
	const n = 1500
	st := writeEach(t, w, n, wideItem)
	if f.len() != n || st.Items != n || st.Watermark != n {
		t.Fatalf("table %d, written %d, watermark %d; want %d", f.len(), st.Items, st.Watermark, n)
	}
	return wide
}

// A wide node's children, consecutive in tree order, go out mixed with the
// other items: no call takes more than its share of the one partition
// (ByParent's "wide"), where input order sends 4 calls of nothing else.
// The items kept back to spread are bounded (Window/2: 425 with 8 workers),
// so a node wider than that still fills whole calls.
func TestWriterSpreads(t *testing.T) {
	inOrder, spread := spreadRun(t, -1), spreadRun(t, 0)
	full := func(calls []int) (n int) {
		for _, c := range calls {
			if c == MaxBatchItems {
				n++
			}
		}
		return n
	}
	if full(inOrder) != 4 {
		t.Fatalf("in input order %d calls were all \"wide\", want 4: %v", full(inOrder), inOrder)
	}
	most := 0
	for _, c := range spread {
		most = max(most, c)
	}
	// The 100 children are at most 100/425 of the items kept back: 6 of a
	// call's 25.
	if most > 6 {
		t.Errorf("spread: a call took %d items of \"wide\" (%d calls all of it): %v", most, full(spread), spread)
	}
	t.Logf("wide items per call, input order %v; spread %v", inOrder, spread)
}
