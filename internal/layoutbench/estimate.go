package layoutbench

import (
	"github.com/treeport/treeport/layouts"
)

// cost is what one query takes: requests, items read (a Query's
// ScannedCount, the items a GetItem or BatchGetItem returned), read
// capacity, and the nodes in its answer.
type cost struct {
	req, items int64
	rcu        float64
	nodes      int64
}

// emptyQueryRCU is what the model bills a Query that reads nothing:
// DynamoDB's minimum of half a unit a request, as for a GetItem of a missing
// item; DynamoDB Local bills it 0 (tests hold the model to the server with
// that rule).
const emptyQueryRCU = 0.5

// estimate is the cost of each query kind about sampled node k, from the
// layout's cost model (layouts.CostModel), which follows the requests its
// queries send and the sizes the sink recorded: the prefix queries are
// given the node's path, as an application that stores it would.
func estimate(s *sink, k int, emptyQuery float64) map[string]cost {
	c := s.costs.Estimate(k, emptyQuery)
	conv := func(c layouts.Cost) cost {
		return cost{req: c.Requests, items: c.Items, rcu: c.RCU, nodes: c.Nodes}
	}
	return map[string]cost{
		KindGet:         conv(c.Get),
		KindChildren:    conv(c.Children),
		KindDescendants: conv(c.Descendants),
		KindDepth2:      conv(c.Depth2),
		KindAncestors:   conv(c.Ancestors),
	}
}
