package importer

import (
	"strings"

	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/records/infile"
)

// maxHint bounds a guess, a footer's count or a caller's hint that sizes
// the forest: past it, the forest grows as it reads.
const maxHint = records.MaxCount

// estimateRecords guesses how many records a CSV or JSON Lines file holds
// (infile.EstimateRecords), so that the forest can be sized once instead
// of growing; 0, for no guess, for another format.
func estimateRecords(path, format string) int {
	switch strings.ToLower(format) {
	case records.FormatCSV:
		return infile.EstimateRecords(path, true, maxHint)
	case records.FormatJSONL, "ndjson":
		return infile.EstimateRecords(path, false, maxHint)
	}
	return 0
}
