// Package pricing keeps, in one place, the AWS list prices treeport uses to
// estimate what loading, storing and reading a layout costs, with the date
// they were taken. Estimates are only as good as these numbers: check them
// against the DynamoDB pricing page for your region before relying on them.
package pricing

// Prices are DynamoDB list prices in US dollars.
type Prices struct {
	Region string
	// AsOf is the date the prices were taken from AWS's pricing page.
	AsOf string
	// OnDemandWritePerMillion is the price of one million write request
	// units (on-demand capacity mode).
	OnDemandWritePerMillion float64
	// OnDemandReadPerMillion is the price of one million read request units.
	OnDemandReadPerMillion float64
	// ImportPerGB is the price of importing from S3, per GB of uncompressed
	// source data. Indexes created by the import cost nothing more.
	ImportPerGB float64
	// StoragePerGBMonth is table storage, Standard table class, per GB-month.
	StoragePerGBMonth float64
	// ItemOverheadBytes is what DynamoDB adds to each item (and each index
	// entry) for storage billing.
	ItemOverheadBytes int
}

// Default is us-east-1, after the on-demand price reduction of 1 November
// 2024.
var Default = Prices{
	Region:                  "us-east-1",
	AsOf:                    "2024-11-01",
	OnDemandWritePerMillion: 0.625,
	OnDemandReadPerMillion:  0.125,
	ImportPerGB:             0.15,
	StoragePerGBMonth:       0.25,
	ItemOverheadBytes:       100,
}

// gb is the gigabyte the prices are per: 10^9 bytes, not 2^30. AWS's
// pricing page (https://aws.amazon.com/dynamodb/pricing/on-demand/) prices
// storage and import "per GB" without a binary prefix, and AWS's own
// DynamoDB cost calculator
// (github.com/aws/agent-toolkit-for-aws, skills/.../amazon-dynamodb/scripts/calculate_costs.py,
// its rules checked against DynamoDB's ReturnConsumedCapacity) divides
// "(raw_bytes + 100 bytes per item) / 1_000_000_000 (decimal)", as the
// AWS Pricing Calculator does. 2^30 would price the same table 7% lower.
const gb = 1e9

// OnDemandWrites is the cost of wcu write request units.
func (p Prices) OnDemandWrites(wcu int64) float64 {
	return float64(wcu) / 1e6 * p.OnDemandWritePerMillion
}

// OnDemandWritesF is OnDemandWrites of a mean, a fraction of a unit.
func (p Prices) OnDemandWritesF(wcu float64) float64 {
	return wcu / 1e6 * p.OnDemandWritePerMillion
}

// OnDemandReads is the cost of rcu read request units.
func (p Prices) OnDemandReads(rcu float64) float64 {
	return rcu / 1e6 * p.OnDemandReadPerMillion
}

// Import is the cost of importing rawBytes of uncompressed DynamoDB JSON.
func (p Prices) Import(rawBytes int64) float64 {
	return float64(rawBytes) / gb * p.ImportPerGB
}

// StorageMonth is the monthly cost of storing bytes of item data in items
// items (the per-item overhead is added here).
func (p Prices) StorageMonth(bytes, items int64) float64 {
	return float64(bytes+items*int64(p.ItemOverheadBytes)) / gb * p.StoragePerGBMonth
}
