package importer

import (
	"fmt"
	"math"

	"github.com/treeport/treeport/internal/ddbtable"
	"github.com/treeport/treeport/internal/units"
	"github.com/treeport/treeport/layouts"
)

// LoadTime is the least time a load of the plan through BatchWriteItem
// takes on real DynamoDB, from the limits DynamoDB Local does not have:
// one partition key value lives on one partition, which takes
// layouts.PartitionWCU write units a second at most, in the table and in
// every index (an index that cannot keep up throttles the table's writes);
// and a new on-demand table serves ddbtable.DefaultWarmWCU writes a second at once
// unless created warm (--warm-wcu).
type LoadTime struct {
	PartitionWCU int `json:"partition_wcu_per_second"`
	// HotKeys is the hottest partition key value of the table and of each
	// index: the one with the most items.
	HotKeys []HotKey `json:"hot_keys"`
	// MinSeconds is the hard lower bound: the hottest key's time alone,
	// or the whole load at MaxWCU when that is longer.
	MinSeconds float64 `json:"min_seconds"`
	MaxWCU     float64 `json:"max_wcu,omitempty"`
	// WarmSeconds is the table's writes at ddbtable.DefaultWarmWCU a second, what a
	// new on-demand table serves before it scales (a soft bound: it scales
	// as it is written, or starts warm with --warm-wcu).
	WarmSeconds float64 `json:"default_warm_seconds"`
	// BoundBy says which bound is the longest: "partition" (a hot key),
	// "max_wcu", "warm_throughput" or "" for an empty load.
	BoundBy string `json:"bound_by"`
	// SuggestedWarmWCU, when above 0, is a --warm-wcu for --create-table:
	// the rate the load plans for (MaxWCU, or the rate that ends it at
	// MinSeconds) when that is over ddbtable.DefaultWarmWCU and the load runs a
	// minute or more at the default.
	SuggestedWarmWCU int64 `json:"suggested_warm_wcu,omitempty"`
	// Advice, when the hottest key bounds the load, says so and how to
	// avoid it.
	Advice string `json:"advice,omitempty"`
}

// HotKey is one partition key value of a table or an index and what a load
// writes to it. WCU is its items at the load's mean write units a write
// (exact when every item is under 1 KB); Seconds is WCU at
// PartitionWCU a second.
type HotKey struct {
	Index   string  `json:"index"` // "" for the table
	Attr    string  `json:"partition_key"`
	Value   string  `json:"value"`
	Items   int64   `json:"items"`
	WCU     int64   `json:"wcu"`
	Seconds float64 `json:"seconds"`
}

// Where is "table" or "index NAME".
func (h HotKey) Where() string {
	if h.Index == "" {
		return "table"
	}
	return "index " + h.Index
}

// measuredHotKeys lists the largest collection of the table and of each index
// with its value, from the layout's measure.
func measuredHotKeys(m *layouts.Measure, spec layouts.TableSpec) []HotKey {
	var perWrite float64
	if n := m.StoredItems(); n > 0 {
		perWrite = float64(m.WCU) / float64(n)
	}
	hot := func(slot int, index, attr string) HotKey {
		h := HotKey{Index: index, Attr: attr}
		if slot < len(m.Collections) {
			h.Items = m.Collections[slot]
		}
		if slot < len(m.Hot) {
			h.Value = m.Hot[slot]
		}
		h.WCU = int64(math.Ceil(float64(h.Items) * perWrite))
		h.Seconds = ms(float64(h.WCU) / layouts.PartitionWCU)
		return h
	}
	keys := []HotKey{hot(0, "", spec.PK.Name)}
	for k, ix := range spec.Indexes {
		keys = append(keys, hot(1+k, ix.Name, ix.PK.Name))
	}
	return keys
}

// Project fills p.LoadTime for a load capped at maxWCU write units a
// second (0: no cap), from the hot keys PlanLayout measured. l, when it
// is a layouts.HotKeyAdvisor, says how to spread a hot key.
func (p *Plan) Project(l layouts.Layout, maxWCU float64) {
	t := &p.LoadTime
	t.PartitionWCU, t.MaxWCU = layouts.PartitionWCU, maxWCU
	t.MinSeconds, t.BoundBy, t.SuggestedWarmWCU, t.Advice = 0, "", 0, ""
	hottest := -1 // HotKeys are in the order of the collection slots
	for i, h := range t.HotKeys {
		if hottest < 0 || h.Seconds > t.HotKeys[hottest].Seconds {
			hottest = i
		}
	}
	var hotSecs, capSecs float64
	if hottest >= 0 {
		hotSecs = t.HotKeys[hottest].Seconds
	}
	if maxWCU > 0 {
		capSecs = float64(p.WCU) / maxWCU
	}
	// The table's share of the writes: every stored copy costs alike on
	// average.
	tableWCU := float64(p.WCU)
	if p.StoredItems > 0 {
		tableWCU *= float64(p.Items) / float64(p.StoredItems)
	}
	t.WarmSeconds = tableWCU / ddbtable.DefaultWarmWCU
	t.MinSeconds = max(hotSecs, capSecs)
	switch {
	case p.WCU == 0:
	case hotSecs > capSecs && hotSecs > t.WarmSeconds:
		t.BoundBy = "partition"
	case capSecs >= t.WarmSeconds:
		t.BoundBy = "max_wcu"
	default:
		t.BoundBy = "warm_throughput"
	}
	// The rate the load plans for: the table's writes over its bound,
	// MinSeconds, when that is set by a cap, or uncapped by a hot key and
	// a minute or more (a shorter load is over before a warm throughput
	// matters). It is never above the table's share of the cap.
	var rate float64
	if t.MinSeconds > 0 && (maxWCU > 0 || t.MinSeconds >= 60) {
		rate = tableWCU / t.MinSeconds
	}
	if rate > ddbtable.DefaultWarmWCU && t.WarmSeconds >= 60 {
		t.SuggestedWarmWCU = int64(math.Ceil(rate/1000)) * 1000
	}
	if t.BoundBy == "partition" && hotSecs >= 1 {
		h := t.HotKeys[hottest]
		factor := int(math.Ceil(hotSecs / max(capSecs, t.WarmSeconds, 1)))
		avoid := "--import-table (DynamoDB's import from S3) is not held to it"
		if a, ok := l.(layouts.HotKeyAdvisor); ok {
			if s := a.SpreadAdvice(hottest, max(factor, 2)); s != "" {
				avoid = s + "; " + avoid
			}
		}
		name := h.Index
		if name == "" {
			name = "the table"
		}
		t.Advice = fmt.Sprintf("%s's %s %s takes %s writes (%s WCU at %s WCU/s a partition): at least %s; %s",
			name, h.Attr, h.Value, units.Thousands(h.Items), units.Thousands(h.WCU), units.Thousands(layouts.PartitionWCU), units.DurationText(hotSecs), avoid)
	}
	t.MinSeconds, t.WarmSeconds = ms(t.MinSeconds), ms(t.WarmSeconds)
}

// ms rounds seconds to the millisecond, for the JSON plan.
func ms(secs float64) float64 { return math.Round(secs*1000) / 1000 }
