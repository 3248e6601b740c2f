package commands

import (
	"strings"
	"testing"
	"time"

	"github.com/treeport/treeport/importer/bulkjob"
)

// The progress and end lines of DynamoDB's own bulk jobs, which run for
// millions of items, write their counts with separators and say "1 error",
// as docs/SCALING.md shows them.
func TestBulkJobLinesReadRight(t *testing.T) {
	start := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	var b strings.Builder
	printImportStatus(&b, bulkjob.ImportStatus{Table: "Forest", Status: "IN_PROGRESS", ProcessedItems: 1250000, Errors: 1, Started: start, Ended: start.Add(135 * time.Second)}, 4023064)
	printBulkPutStatus(&b, bulkjob.BulkPutStatus{Table: "Forest", Status: "IN_PROGRESS", ProcessedItems: 1250000, Started: start, Ended: start.Add(135 * time.Second)}, 4023064)
	if err := importResult(&b, &b, bulkjob.ImportStatus{Table: "Forest", Status: "COMPLETED", ImportedItems: 4023064, ProcessedItems: 4023064, Started: start, Ended: start.Add(400 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"importing into Forest: IN_PROGRESS, 1,250,000 of 4,023,064 items processed (31%), 1 error, 2m15s",
		"bulk put into Forest: IN_PROGRESS, 1,250,000 of 4,023,064 items processed (31%), 0 failed, 2m15s",
		"imported 4,023,064 items into Forest in 6m40s (4,023,064 processed, 0 errors)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("want %q in:\n%s", want, b.String())
		}
	}
}
