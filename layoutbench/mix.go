package layoutbench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// DefaultMix is the read mix when none is given.
const DefaultMix = "get=10,children=40,descendants=30,ancestors=20"

// ParseMix reads a read mix: kind=weight pairs, comma separated, with the
// kinds get, children, descendants, descendants_depth2 (or depth2) and
// ancestors. Weights are non-negative numbers, made into shares that add up
// to 1. Kinds left out get no share.
func ParseMix(s string) ([]MixEntry, error) {
	weights := map[string]float64{}
	total := 0.0
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		kind, w, ok := strings.Cut(part, "=")
		kind = strings.TrimSpace(kind)
		if kind == "depth2" || kind == "descendants-depth2" {
			kind = KindDepth2
		}
		switch kind {
		case "move", "moves", "delete", "deletes", "write", "writes":
			return nil, fmt.Errorf("read mix %q: %q: a %s is a write, not a read: give it as a rate, --%ss-per-month N (the mix weighs the reads of --reads-per-month)",
				s, part, strings.TrimSuffix(kind, "s"), strings.TrimSuffix(kind, "s"))
		}
		if !ok || !slices.Contains(Kinds, kind) {
			return nil, fmt.Errorf("read mix %q: %q: want kind=weight with a kind among %s", s, part, strings.Join(Kinds, ", "))
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
		if err != nil || v < 0 || v != v || v > 1e12 {
			return nil, fmt.Errorf("read mix %q: %q: the weight must be a number of 0 or more", s, part)
		}
		if _, dup := weights[kind]; dup {
			return nil, fmt.Errorf("read mix %q: %s is given twice", s, kind)
		}
		weights[kind] = v
		total += v
	}
	if total <= 0 {
		return nil, fmt.Errorf("read mix %q: give at least one kind a weight above 0, e.g. %s", s, DefaultMix)
	}
	var out []MixEntry
	for _, k := range Kinds {
		if w, ok := weights[k]; ok {
			out = append(out, MixEntry{Kind: k, Share: w / total})
		}
	}
	return out, nil
}
