package layoutbench

// SchemaVersion is the version of the JSON report; it changes only when a
// field is renamed or removed (docs/bench-report.schema.json).
const SchemaVersion = 1

// Report is everything a bench run found, for every output format. Its JSON
// form is documented in docs/bench-report.schema.json; field names are
// stable.
type Report struct {
	SchemaVersion int    `json:"schema_version"`
	Tool          string `json:"tool"`
	// Mode is "online" (loaded and queried on a server) or "offline"
	// (computed from the file alone).
	Mode string `json:"mode"`
	// Endpoint is the server of an online run; "" offline.
	Endpoint string      `json:"endpoint"`
	Input    InputInfo   `json:"input"`
	Sample   SampleInfo  `json:"sample"`
	ReadMix  []MixEntry  `json:"read_mix"`
	Workload Workload    `json:"workload"`
	Scale    ScaleInfo   `json:"scale"`
	Prices   PriceInfo   `json:"prices"`
	Layouts  []*Result   `json:"layouts"`
	Ranking  []RankEntry `json:"ranking"`
	// Margin is the second layout's total cost over the first's: how
	// clear the pick is (1 when they tie).
	Margin float64 `json:"margin"`
	// BreakEvens are the read volumes at which the pick and the next two
	// layouts cost the same.
	BreakEvens []BreakEven `json:"break_evens"`
	// Curves are the workload's total cost against the node count and the
	// read volume.
	Curves Curves `json:"curves"`
	// Notes say how the figures were obtained and what they leave out.
	Notes []string `json:"notes"`
}

// InputInfo describes the dataset.
type InputInfo struct {
	Path      string  `json:"path"`
	Records   int     `json:"records"`
	Nodes     int64   `json:"nodes"` // nodes every layout accepts
	Trees     int     `json:"trees"`
	MaxDepth  int     `json:"max_depth"`
	MeanDepth float64 `json:"mean_depth"`
	// Leaves counts the nodes without children; MaxChildren is the
	// largest fan-out.
	Leaves      int64 `json:"leaves"`
	MaxChildren int   `json:"max_children"`
}

// SampleInfo says which nodes the per-node measures (queries, rewrites) use.
type SampleInfo struct {
	Requested int        `json:"requested"`
	Nodes     int        `json:"nodes"`
	Seed      uint64     `json:"seed"`
	Strata    []Stratum  `json:"strata"`
	Picked    []SampleID `json:"picked"`
}

// Stratum is one depth band of the sample: the nodes between two depths,
// how many there are and how many were picked. Each picked node stands for
// Population / Sampled nodes in the means and percentiles.
type Stratum struct {
	MinDepth   int   `json:"min_depth"`
	MaxDepth   int   `json:"max_depth"`
	Population int64 `json:"population"`
	Sampled    int   `json:"sampled"`
}

// SampleID is one sampled node.
type SampleID struct {
	ID       string `json:"id"`
	Depth    int    `json:"depth"`
	Children int    `json:"children"`
	Subtree  int    `json:"subtree"` // the node and all its descendants
}

// MixEntry is one kind of read in the mix, with its share of the reads.
type MixEntry struct {
	Kind  string  `json:"kind"`
	Share float64 `json:"share"` // 0..1; the shares add up to 1
}

// ScaleInfo is the size the costs are projected to.
type ScaleInfo struct {
	Nodes  int64   `json:"nodes"`
	Factor float64 `json:"factor"` // Nodes / the dataset's nodes
	Method string  `json:"method"`
}

// PriceInfo is the price list used, with its date.
type PriceInfo struct {
	Region                  string  `json:"region"`
	AsOf                    string  `json:"as_of"`
	OnDemandWritePerMillion float64 `json:"on_demand_write_usd_per_million"`
	OnDemandReadPerMillion  float64 `json:"on_demand_read_usd_per_million"`
	ImportPerGB             float64 `json:"import_usd_per_gb"`
	StoragePerGBMonth       float64 `json:"storage_usd_per_gb_month"`
	ItemOverheadBytes       int     `json:"item_overhead_bytes"`
}

// Result is what one layout measured.
type Result struct {
	Layout string `json:"layout"`
	// Table is the table an online run loaded ("" offline); it was deleted
	// unless the run kept it.
	Table string `json:"table"`
	// Rejected counts the nodes this layout refuses (and their subtrees),
	// which no figure includes.
	Rejected     int             `json:"rejected_nodes"`
	Nodes        int64           `json:"nodes"`
	Items        int64           `json:"items"`
	Bytes        int64           `json:"bytes"` // the table's items, DynamoDB sizes
	MaxItemBytes int             `json:"max_item_bytes"`
	ItemLimit    int             `json:"item_limit_bytes"`
	Storage      []Storage       `json:"storage"`
	StoredBytes  int64           `json:"stored_bytes"` // table and indexes, with the per-item overhead
	Keys         []KeyLength     `json:"keys"`
	Load         Load            `json:"load"`
	Partitions   []PartitionSkew `json:"hot_partitions"`
	Queries      []QueryStats    `json:"queries"`
	Rewrites     Rewrites        `json:"rewrites"`
	Cost         Cost            `json:"cost"`
	Rank         int             `json:"rank"`
	Why          string          `json:"why"`

	importBytes int64   // ImportTable source bytes of the dataset
	perNode     perNode // per sampled node, to project to a scale
}

// BreakEven is a read volume at which two layouts cost the same for the
// workload: CheaperReads costs less above it, CheaperRest below.
type BreakEven struct {
	CheaperReads  string  `json:"cheaper_reads"`
	CheaperRest   string  `json:"cheaper_rest"`
	ReadsPerMonth float64 `json:"reads_per_month"`
}

// Curves are the workload's total cost in US dollars for each layout, at
// each node count of ScaleNodes, and at the report's scale for several read
// volumes (reads a month).
type Curves struct {
	ByScale []CurvePoint `json:"by_scale"`
	ByReads []CurvePoint `json:"by_reads"`
}

// CurvePoint is one x (nodes, or reads a month) and each layout's total.
type CurvePoint struct {
	X        float64            `json:"x"`
	TotalUSD map[string]float64 `json:"total_usd"`
}

// Storage is what the table or one index holds. An index holds the items
// that have its key attributes, all attributes projected.
type Storage struct {
	Index string `json:"index"` // "" for the table
	Items int64  `json:"items"`
	Bytes int64  `json:"bytes"`
	// BilledBytes adds DynamoDB's per-item overhead (pricing).
	BilledBytes int64 `json:"billed_bytes"`
}

// KeyLength is the longest value of one key attribute against its limit.
type KeyLength struct {
	Index   string `json:"index"` // "" for the table
	Role    string `json:"role"`  // "partition" or "sort"
	Attr    string `json:"attribute"`
	Longest int    `json:"longest_bytes"`
	Limit   int    `json:"limit_bytes"`
}

// Load is what loading the layout costs.
type Load struct {
	// WCU is treeport's count (SPEC §5): ceil(size / 1 KB) × (1 + indexes)
	// per item.
	WCU int64 `json:"wcu"`
	// ConsumedWCU is what DynamoDB reported consumed; null offline.
	ConsumedWCU *float64 `json:"consumed_wcu"`
	// Seconds is the load's wall time (null offline), on the server the
	// run used: DynamoDB Local's rate says little about DynamoDB's.
	Seconds      *float64 `json:"seconds"`
	ItemsWritten int64    `json:"items_written"`
	Throttles    int64    `json:"throttles"`
	// MinSeconds is the least time the load takes on DynamoDB through
	// BatchWriteItem, offline or online: its hottest partition key value
	// at 1,000 WCU/s, as the dry run projects it (importer.LoadTime);
	// BoundBy says what sets the pace ("partition", "warm_throughput").
	MinSeconds float64 `json:"min_seconds_on_dynamodb"`
	BoundBy    string  `json:"bound_by"`
}

// PartitionSkew is the hottest partition key values of the table or an
// index.
type PartitionSkew struct {
	Index string `json:"index"` // "" for the table
	Attr  string `json:"partition_key"`
	// Partitions counts the distinct partition key values.
	Partitions int64 `json:"partitions"`
	// ByItems and ByBytes are the top 5 values, by items and by bytes.
	ByItems []PartitionValue `json:"top_by_items"`
	ByBytes []PartitionValue `json:"top_by_bytes"`
}

// PartitionValue is one partition key value with what it holds.
type PartitionValue struct {
	Value string `json:"value"`
	Items int64  `json:"items"`
	Bytes int64  `json:"bytes"`
	// Share is the fraction of the table's (index's) items it holds.
	Share float64 `json:"share"`
}

// Query kinds, as the report and --read-mix name them.
const (
	KindGet         = "get"
	KindChildren    = "children"
	KindDescendants = "descendants"
	KindDepth2      = "descendants_depth2" // min-depth 1, max-depth 2
	KindAncestors   = "ancestors"
)

// Kinds lists the query kinds in report order.
var Kinds = []string{KindGet, KindChildren, KindDescendants, KindDepth2, KindAncestors}

// QueryStats is one kind of query over the sample. Means and percentiles
// weigh each sampled node by the nodes it stands for (its stratum), so they
// estimate a node chosen uniformly; Max is the worst sampled node.
type QueryStats struct {
	Kind string `json:"kind"`
	// Source is "measured" (sent to the server) or "estimated" (computed
	// from the layout's requests and the items' sizes).
	Source    string `json:"source"`
	Samples   int    `json:"samples"`
	Requests  Dist   `json:"requests"`
	ItemsRead Dist   `json:"items_read"`
	// RCU is the read capacity of the requests sent (online) or modelled
	// (offline), priced by DynamoDB's documented rules; the costs and the
	// ranking use it.
	RCU Dist `json:"rcu"`
	// ConsumedRCU is what the server reported consumed for the same
	// requests, online; null offline. DynamoDB Local bills a Query that
	// finds nothing 0 RCU where DynamoDB bills the minimum (0.5), so
	// against DynamoDB Local it is below RCU.
	ConsumedRCU *Dist `json:"consumed_rcu"`
	// LatencyMS is null offline.
	LatencyMS *Dist `json:"latency_ms"`
	// EstimatedRCU is the model's mean, in both modes, to hold the model
	// against the server.
	EstimatedRCU float64 `json:"estimated_rcu_mean"`
	// Nodes is the mean number of nodes in the answer.
	Nodes float64 `json:"answer_nodes_mean"`
}

// Dist summarises one figure over the sample.
type Dist struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	Max  float64 `json:"max"`
}

// Rewrites are the items that change when the tree does.
type Rewrites struct {
	// Move: a sampled node's subtree moves under another node.
	Move RewriteStats `json:"move_subtree"`
	// Delete: a sampled node is deleted, its children promoted to its
	// parent; roots with children are left out, as edit refuses them.
	Delete RewriteStats `json:"delete_node"`
	// Write: a sampled node's own attributes are rewritten, the same size.
	Write RewriteStats `json:"write_node"`
}

// RewriteStats are the items written (puts: new or changed items) and
// deleted (keys that disappear) for one kind of change, over the sample.
type RewriteStats struct {
	Samples     int     `json:"samples"`
	MeanPuts    float64 `json:"mean_puts"`
	MeanDeletes float64 `json:"mean_deletes"`
	MeanItems   float64 `json:"mean_items"` // puts + deletes
	WorstItems  int64   `json:"worst_items"`
	// MeanWCU is what DynamoDB bills the change's writes on average: each
	// item ceil(size / 1 KB) for the table, and again for each index it
	// is put in or deleted from, twice for an index whose key changes.
	MeanWCU   float64 `json:"mean_wcu"`
	WorstWCU  int64   `json:"worst_wcu"`
	WorstNode string  `json:"worst_node"` // the node of WorstWCU
}

// Cost is the projected AWS bill at the report's scale, in US dollars.
type Cost struct {
	LoadOnDemandUSD float64 `json:"load_on_demand_usd"`
	LoadImportUSD   float64 `json:"load_import_table_usd"`
	// ImportSourceBytes estimates the uncompressed DynamoDB JSON an
	// ImportTable reads, what it bills.
	ImportSourceBytes int64   `json:"import_source_bytes"`
	StorageMonthUSD   float64 `json:"storage_usd_per_month"`
	// ReadRCUPerOp is the mean RCU of one read of the mix.
	ReadRCUPerOp    float64 `json:"read_rcu_per_op"`
	MillionReadsUSD float64 `json:"million_reads_usd"`
	// RequestsPerOp is the mean number of requests of one read of the mix:
	// round trips, a latency proxy.
	RequestsPerOp float64 `json:"requests_per_op"`
	// WriteWCU, MoveWCU and DeleteWCU are the mean WCU of one write of a
	// node's attributes, one subtree move and one delete, at the scale.
	WriteWCU  float64 `json:"write_wcu_per_op"`
	MoveWCU   float64 `json:"move_wcu_per_op"`
	DeleteWCU float64 `json:"delete_wcu_per_op"`

	// The workload's cost, each part and the total: the load (the cheaper
	// of LoadMethod's two), storage for the months, and the reads, writes,
	// moves and deletes of the months, on demand.
	LoadUSD    float64 `json:"load_usd"`
	LoadMethod string  `json:"load_method"`
	StorageUSD float64 `json:"storage_usd"`
	ReadsUSD   float64 `json:"reads_usd"`
	WritesUSD  float64 `json:"writes_usd"`
	MovesUSD   float64 `json:"moves_usd"`
	DeletesUSD float64 `json:"deletes_usd"`
	TotalUSD   float64 `json:"total_usd"`
}

// RankEntry is one layout's place in the recommendation.
type RankEntry struct {
	Rank   int    `json:"rank"`
	Layout string `json:"layout"`
	Why    string `json:"why"`
}
