package records

// The format table and the one rule that tells a record file's format and
// compression from its name, for the files treeport writes (export, gen) and
// the ones it reads (import, verify, plan), so that every name export writes
// is read back as the same format.

import (
	"path/filepath"
	"strings"
)

// The formats, as --format names them: a Source reads each, and a Writer
// writes each.
const (
	FormatCSV     = "csv"
	FormatJSON    = "json"  // one JSON array of objects
	FormatJSONL   = "jsonl" // one JSON object a line
	FormatParquet = "parquet"
	FormatDDBJSON = "ddbjson" // one {"Item":{...}} a line, as DynamoDB's export to S3 writes
)

// Formats lists every format, in the order help text shows them.
var Formats = []string{FormatCSV, FormatJSON, FormatJSONL, FormatParquet, FormatDDBJSON}

// The compressions a name asks for.
const (
	Uncompressed = ""
	Gzip         = "gzip"
	Zstd         = "zstd"
)

// Extensions lists every name ending FromPath knows, by format, in the order
// help text and docs show them. Each may be followed by a compression's
// (see Compressions).
var Extensions = map[string][]string{
	FormatCSV:     {".csv"},
	FormatJSON:    {".json"},
	FormatJSONL:   {".jsonl", ".ndjson"},
	FormatParquet: {".parquet", ".pq"},
	FormatDDBJSON: {".ddbjson", ".ddb.json", ".ddb.jsonl"},
}

// Compressions maps each compression's name endings to it.
var Compressions = map[string]string{".gz": Gzip, ".zst": Zstd, ".zstd": Zstd}

// FormatFromPath returns the format a file name implies: .csv; .json; .jsonl
// or .ndjson; .parquet or .pq; .ddbjson, .ddb.json or .ddb.jsonl (DynamoDB
// JSON). A trailing .gz, .zst or .zstd is looked through, and case does not
// matter. It returns "" when the name implies no format.
func FormatFromPath(path string) string {
	name := strings.ToLower(filepath.Base(path))
	if _, ok := Compressions[filepath.Ext(name)]; ok {
		name = strings.TrimSuffix(name, filepath.Ext(name))
	}
	// The longest ending first: t.ddb.json is DynamoDB JSON, not JSON.
	best, bestLen := "", 0
	for format, exts := range Extensions {
		for _, ext := range exts {
			if strings.HasSuffix(name, ext) && len(ext) > bestLen {
				best, bestLen = format, len(ext)
			}
		}
	}
	return best
}

// CompressionFromPath returns the compression a file name asks for: Gzip
// for a name ending in .gz, Zstd for .zst or .zstd (case does not matter),
// Uncompressed otherwise. Readers recognise both by their magic bytes, whatever the
// name; writers compress as the name says.
func CompressionFromPath(path string) string {
	return Compressions[strings.ToLower(filepath.Ext(path))]
}
