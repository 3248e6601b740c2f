package layoutbench

import (
	"github.com/treeport/treeport/layouts"
)

// cost is what one query takes: requests, items read (a Query's
// ScannedCount, the items a GetItem or BatchGetItem returned), read
// capacity priced by DynamoDB's documented rules (layouts.QueryPageRCU),
// the Query requests that read nothing, and the nodes in its answer.
// consumed is what the server reported; the model says what DynamoDB
// reports, which is rcu.
type cost struct {
	req, items int64
	rcu        float64
	consumed   float64
	empty      int64
	nodes      int64
	smooth     float64 // the model's RCU without each Query page's rounding (layouts.Cost.Smooth)
}

// estimate is the cost of each query kind about sampled node k, from the
// layout's cost model (layouts.CostModel), which follows the requests its
// queries send and the sizes the sink recorded: the prefix queries are
// given the node's path, as an application that stores it would.
func estimate(s *sink, k int) map[string]cost {
	c := s.costs.Estimate(k)
	conv := func(c layouts.Cost) cost {
		return cost{req: c.Requests, items: c.Items, rcu: c.RCU, consumed: c.RCU, empty: c.EmptyQueries, nodes: c.Nodes, smooth: c.Smooth}
	}
	return map[string]cost{
		KindGet:         conv(c.Get),
		KindChildren:    conv(c.Children),
		KindDescendants: conv(c.Descendants),
		KindDepth2:      conv(c.Depth2),
		KindAncestors:   conv(c.Ancestors),
	}
}
