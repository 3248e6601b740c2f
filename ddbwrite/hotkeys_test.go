package ddbwrite

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddb"
)

func hotReq(id, parent string) *request {
	item := testItem(0)
	item["Id"] = &types.AttributeValueMemberS{Value: id}
	item["ParentId"] = &types.AttributeValueMemberS{Value: parent}
	return &request{key: id, item: item, unit: 1, wr: types.WriteRequest{PutRequest: &types.PutRequest{Item: item}}}
}

// Which hand-backs are read as one key's, and which cut the shared rate.
func TestFromUnprocessed(t *testing.T) {
	var h hotKeys
	h.init(testSpec, nil)
	hotPart := PartsOf(testSpec, hotReq("x", "hot").item, true)[1] // ByParent's "hot"

	// Two handed back sharing a parent the written one does not have.
	got := h.fromUnprocessed([]*request{hotReq("a", "p1")}, []*request{hotReq("b", "hot"), hotReq("c", "hot")})
	if len(got) != 1 || got[hotPart] != 2 {
		t.Errorf("two on one parent: %v, want the parent's partition with 2 units", got)
	}
	// Two handed back with nothing in common: the table's capacity.
	if got := h.fromUnprocessed([]*request{hotReq("a", "p1")}, []*request{hotReq("b", "p2"), hotReq("c", "p3")}); got != nil {
		t.Errorf("two on different keys: %v, want nil (cut the shared rate)", got)
	}
	// A lone one: first no cut, then a second lone one on the same parent
	// makes it hot; a third on another parent cuts.
	if got := h.fromUnprocessed([]*request{hotReq("a", "p1")}, []*request{hotReq("d", "q")}); got == nil || len(got) != 0 {
		t.Errorf("first lone refusal: %v, want an empty map (neither)", got)
	}
	if got := h.fromUnprocessed([]*request{hotReq("a", "p1")}, []*request{hotReq("e", "q")}); len(got) != 1 {
		t.Errorf("second lone refusal on the same parent: %v, want that parent", got)
	}
	if got := h.fromUnprocessed([]*request{hotReq("a", "p1")}, []*request{hotReq("f", "r")}); got != nil {
		t.Errorf("lone refusal on a new parent right after: %v, want nil (cut)", got)
	}
	// A key already paced explains a lone item even if written items share it.
	h.throttled(map[string]int{hotPart: 1}, time.Now())
	if got := h.fromUnprocessed([]*request{hotReq("a", "hot")}, []*request{hotReq("g", "hot")}); got[hotPart] != 1 {
		t.Errorf("lone item on a hot key: %v, want the hot key", got)
	}
}

// Reasons that all name keys give the batch's partitions on the named
// resource; any capacity reason, or none, gives nil.
func TestFromReasons(t *testing.T) {
	var h hotKeys
	h.init(testSpec, nil)
	reqs := []*request{hotReq("a", "p"), hotReq("b", "p"), hotReq("c", "q")}
	got := h.fromReasons(reqs, []ddb.ThrottleReason{{Reason: "IndexWriteKeyRangeThroughputExceeded", Index: "ByParent"}})
	if len(got) != 2 {
		t.Errorf("index key range: %v, want the two parents", got)
	}
	if got := h.fromReasons(reqs, []ddb.ThrottleReason{{Reason: "TableWriteKeyRangeThroughputExceeded"}}); len(got) != 3 {
		t.Errorf("table key range: %v, want the three ids", got)
	}
	for _, rs := range [][]ddb.ThrottleReason{nil, {{Reason: "TableWriteProvisionedThroughputExceeded"}},
		{{Reason: "IndexWriteKeyRangeThroughputExceeded", Index: "ByParent"}, {Reason: "IndexWriteProvisionedThroughputExceeded", Index: "ByParent"}}} {
		if got := h.fromReasons(reqs, rs); got != nil {
			t.Errorf("reasons %v: %v, want nil", rs, got)
		}
	}
	// ThrottleReasons reads the SDK's error.
	err := &types.ThrottlingException{ThrottlingReasons: []types.ThrottlingReason{{
		Reason: aws.String("IndexWriteKeyRangeThroughputExceeded"), Resource: aws.String("arn:aws:dynamodb:us-east-1:1:table/t/index/ByParent")}}}
	if rs := ddb.ThrottleReasons(errors.Join(errors.New("wrapped"), err)); len(rs) != 1 || rs[0].Index != "ByParent" || !rs[0].KeyRange() {
		t.Errorf("ThrottleReasons = %+v", rs)
	}
}
