// Package exporter reads trees back out of DynamoDB: the parallel scanner,
// the layouts' own queries, export and verify.
//
//   - Export reads a whole table with Scan (or one subtree with a descendants
//     Query, or a DynamoDB export with ReadExport), sorts the records with
//     SortRecords and writes them with a records.Writer (csv, json,
//     jsonl, parquet, ddbjson).
//   - Scan and ScanItems run a parallel Scan: ScanOptions.Segments goroutines
//     under one errgroup, one rate limiter in RCU shared by all of them
//     (ScanOptions.MaxRCU), retries with full-jitter exponential backoff on
//     throttling, 5xx and lost connections, LastEvaluatedKey followed to the
//     end of every segment.
//   - Query answers get, children, descendants and ancestors about one node
//     the way each layout was designed to (see Query), with the Stats of
//     what it cost; AppendResultJSON writes one result as a line of the
//     query command's output.
//   - Verify compares an input file with a table, typed, and returns a Diff.
//
// Every function that talks to DynamoDB takes the narrow interface it uses
// (ScanAPI, QueryAPI), which *dynamodb.Client satisfies. Each call turns the
// SDK's own retries off: the exporter retries, and counts every throttle.
// Failures of the service are *ddb.ServiceError (internal/ddb), matching
// ddb.ErrService; a node a query cannot find is a *NotFoundError, matching
// ErrNotFound and fs.ErrNotExist.
package exporter
