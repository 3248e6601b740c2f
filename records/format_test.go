package records

import "testing"

func TestFromPath(t *testing.T) {
	tests := []struct {
		name, path, format, compression string
	}{
		{name: "csv", path: "nodes.csv", format: FormatCSV},
		{name: "upper case", path: "NODES.CSV", format: FormatCSV},
		{name: "gzip csv", path: "dir/nodes.csv.gz", format: FormatCSV, compression: Gzip},
		{name: "json", path: "nodes.json", format: FormatJSON},
		{name: "jsonl", path: "nodes.jsonl", format: FormatJSONL},
		{name: "ndjson zstd", path: "nodes.ndjson.zst", format: FormatJSONL, compression: Zstd},
		{name: "ndjson zstd, long ending", path: "nodes.ndjson.ZSTD", format: FormatJSONL, compression: Zstd},
		{name: "parquet", path: "nodes.parquet", format: FormatParquet},
		{name: "pq", path: "nodes.pq", format: FormatParquet},
		{name: "ddbjson", path: "items.ddbjson.gz", format: FormatDDBJSON, compression: Gzip},
		// The longer ending wins: these are DynamoDB JSON, not JSON.
		{name: "ddb.json", path: "t.ddb.json", format: FormatDDBJSON},
		{name: "ddb.jsonl", path: "t.ddb.jsonl", format: FormatDDBJSON},
		{name: "ddb.jsonl gzip", path: "t.DDB.JSONL.gz", format: FormatDDBJSON, compression: Gzip},
		{name: "a dot in a directory", path: "a.csv/nodes", format: ""},
		{name: "unknown", path: "nodes.txt", format: ""},
		{name: "compression only", path: "nodes.gz", format: "", compression: Gzip},
		{name: "no extension", path: "nodes", format: ""},
		{name: "compressed twice names one", path: "nodes.csv.gz.zst", format: "", compression: Zstd},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatFromPath(tt.path); got != tt.format {
				t.Errorf("FormatFromPath(%q) = %q, want %q", tt.path, got, tt.format)
			}
			if got := CompressionFromPath(tt.path); got != tt.compression {
				t.Errorf("CompressionFromPath(%q) = %q, want %q", tt.path, got, tt.compression)
			}
		})
	}
}
