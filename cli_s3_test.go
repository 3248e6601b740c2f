package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/treeport/treeport/internal/testserver/s3local"
)

// fakeImportService is a DynamoDB endpoint that knows ImportTable and
// DescribeImport only, which DynamoDB Local lacks. It answers DescribeImport
// with its script, one answer a call, repeating the last.
type fakeImportService struct {
	mu       sync.Mutex
	requests []map[string]any // ImportTable request bodies
	script   []string         // ImportTableDescription JSON objects
	calls    int
}

func (f *fakeImportService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	switch r.Header.Get("X-Amz-Target") {
	case "DynamoDB_20120810.ImportTable":
		var req map[string]any
		_ = json.Unmarshal(body, &req)
		f.requests = append(f.requests, req)
		fmt.Fprintf(w, `{"ImportTableDescription":{"ImportArn":%q,"ImportStatus":"IN_PROGRESS"}}`, fakeARN)
	case "DynamoDB_20120810.DescribeImport":
		d := f.script[min(f.calls, len(f.script)-1)]
		f.calls++
		fmt.Fprintf(w, `{"ImportTableDescription":%s}`, d)
	default:
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":"com.amazon.coral.service#UnknownOperationException","message":"not faked: %s"}`, r.Header.Get("X-Amz-Target"))
	}
}

func (f *fakeImportService) imports() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.requests...)
}

const (
	fakeARN      = "arn:aws:dynamodb:us-east-1:123456789012:table/Org/import/01700000000000-abcdef12"
	fakeLogGroup = "arn:aws:logs:us-east-1:123456789012:log-group:/aws-dynamodb/imports:*"
)

func describe(status string, processed, imported, errs int) string {
	return fmt.Sprintf(`{"ImportArn":%q,"ImportStatus":%q,"ProcessedItemCount":%d,"ImportedItemCount":%d,"ErrorCount":%d,`+
		`"CloudWatchLogGroupArn":%q,"StartTime":1714564800,"TableCreationParameters":{"TableName":"Org"},"FailureCode":"ItemValidationError","FailureMessage":"bad items"}`,
		fakeARN, status, processed, imported, errs, fakeLogGroup)
}

// s3Env is what the CLI needs to reach s3rver (through the flag's
// environment variable) and a fake DynamoDB.
func s3Env(s3Endpoint, ddbEndpoint string) []string {
	return []string{"AWS_ACCESS_KEY_ID=" + s3local.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s3local.SecretKey, "AWS_REGION=us-east-1",
		"TREEPORT_S3_ENDPOINT_URL=" + s3Endpoint, "TREEPORT_ENDPOINT_URL=" + ddbEndpoint}
}

var orgArgs = []string{"--in", "fixtures/org.csv", "--types", "salary:N,remote:BOOL,languages:JSON", "--layout", "path"}

// Two copies of a sharded job upload into one prefix; the second one to
// finish starts ImportTable with the layout's keys and indexes, follows it
// and reports it; a copy run again on a used prefix is refused.
func TestImportShardsToS3ThenImportTable(t *testing.T) {
	s3ep := s3local.Endpoint(t)
	client := s3local.Client(t, s3ep)
	bucket := s3local.NewBucket(t, client)
	fake := &fakeImportService{script: []string{describe("IN_PROGRESS", 10, 0, 0), describe("COMPLETED", 46, 46, 0)}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	env := s3Env(s3ep, srv.URL)
	out := "s3://" + bucket + "/org/run-1"
	args := func(shard string) []string {
		return append(append([]string{"import"}, orgArgs...), "--out", out, "--import-table", "Org", "--shard", shard, "--items-per-file", "10")
	}

	stdout, stderr, code := run(t, env, args("1/2")...)
	if code != 0 || !strings.Contains(stdout, "waiting for shards 0 of 2") {
		t.Fatalf("shard 1/2: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if n := len(fake.imports()); n != 0 {
		t.Fatalf("the first shard started %d imports", n)
	}
	stdout, stderr, code = run(t, env, args("0/2")...)
	if code != 0 {
		t.Fatalf("shard 0/2: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "imported 46 items into Org") || !strings.Contains(stderr, "importing into Org: IN_PROGRESS, 10 of 46 items processed") {
		t.Errorf("no progress or report:\n%s\n%s", stdout, stderr)
	}
	reqs := fake.imports()
	if len(reqs) != 1 {
		t.Fatalf("%d ImportTable calls, want 1", len(reqs))
	}
	req := reqs[0]
	src := req["S3BucketSource"].(map[string]any)
	params := req["TableCreationParameters"].(map[string]any)
	ixs, _ := params["GlobalSecondaryIndexes"].([]any)
	if src["S3Bucket"] != bucket || src["S3KeyPrefix"] != "org/run-1/data/" || params["TableName"] != "Org" ||
		req["InputFormat"] != "DYNAMODB_JSON" || req["InputCompressionType"] != "GZIP" || len(ixs) != 2 || req["ClientToken"] == nil {
		t.Errorf("ImportTable request: %v", req)
	}
	var data []string
	for _, k := range s3local.Keys(t, client, bucket, "org/run-1/") {
		rel := strings.TrimPrefix(k, "org/run-1/")
		if strings.HasPrefix(rel, "data/") {
			data = append(data, rel)
			if !strings.HasPrefix(rel, "data/shard-0-of-2-part-") && !strings.HasPrefix(rel, "data/shard-1-of-2-part-") {
				t.Errorf("data file %s does not name its shard", rel)
			}
		}
	}
	if len(data) < 4 {
		t.Errorf("data files %v: want each shard's items in files of 10", data)
	}

	_, stderr, code = run(t, env, args("0/2")...)
	if code != 2 || !strings.Contains(stderr, "shard-0-of-2") {
		t.Errorf("shard 0/2 again: exit %d, %s", code, stderr)
	}
}

// An import that ends with items it could not import exits 1 and says where
// the errors are; one that fails exits 3.
func TestImportTableOutcomes(t *testing.T) {
	s3ep := s3local.Endpoint(t)
	client := s3local.Client(t, s3ep)
	bucket := s3local.NewBucket(t, client)
	tests := []struct {
		name     string
		script   []string
		wantCode int
		wantErr  []string
	}{
		{name: "completed with errors", script: []string{describe("COMPLETED", 46, 43, 3)}, wantCode: 1,
			wantErr: []string{"3 items could not be imported", fakeLogGroup}},
		{name: "failed", script: []string{describe("IN_PROGRESS", 20, 0, 5), describe("FAILED", 46, 0, 46)}, wantCode: 3,
			wantErr: []string{"ended FAILED: ItemValidationError bad items", "46 errors", fakeLogGroup}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&fakeImportService{script: tc.script})
			defer srv.Close()
			args := append(append([]string{"import"}, orgArgs...), "--out", fmt.Sprintf("s3://%s/case-%d", bucket, i), "--import-table", "Org")
			stdout, stderr, code := run(t, s3Env(s3ep, srv.URL), args...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.wantCode, stdout, stderr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// The files an import uploads to S3 export back, from S3, to the same file
// as from local disk; a bad S3 location is a usage error.
func TestExportFromS3CLI(t *testing.T) {
	s3ep := s3local.Endpoint(t)
	client := s3local.Client(t, s3ep)
	bucket := s3local.NewBucket(t, client)
	env := s3Env(s3ep, "http://127.0.0.1:1")
	tmp := t.TempDir()
	local := filepath.Join(tmp, "files")
	for _, out := range []string{local, "s3://" + bucket + "/org"} {
		args := append(append([]string{"import"}, orgArgs...), "--out", out, "--items-per-file", "20")
		if _, stderr, code := run(t, env, args...); code != 0 {
			t.Fatalf("import --out %s: exit %d: %s", out, code, stderr)
		}
	}
	fromDisk, fromS3 := filepath.Join(tmp, "disk.jsonl"), filepath.Join(tmp, "s3.jsonl")
	if _, stderr, code := run(t, env, "export", "--in", local, "--layout", "path", "--out", fromDisk); code != 0 {
		t.Fatalf("export --in %s: exit %d: %s", local, code, stderr)
	}
	_, stderr, code := run(t, env, "export", "--in", "s3://"+bucket+"/org/", "--layout", "path", "--out", fromS3)
	if code != 0 {
		t.Fatalf("export --in s3: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "from DynamoDB export s3://"+bucket+"/org/") {
		t.Errorf("the summary does not name the S3 export: %s", stderr)
	}
	a, b := readFile(t, fromDisk), readFile(t, fromS3)
	if a != b || strings.Count(a, "\n") != 46 {
		t.Errorf("from S3 (%d lines) differs from disk (%d lines)", strings.Count(b, "\n"), strings.Count(a, "\n"))
	}
	if _, err := os.Stat(fromS3); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = run(t, env, "export", "--in", "s3://"+bucket+"/nothing-here/", "--layout", "path", "--out", filepath.Join(tmp, "x.jsonl"))
	if code != 2 || !strings.Contains(stderr, "not a DynamoDB export") {
		t.Errorf("export of an empty prefix: exit %d: %s", code, stderr)
	}
}

// TestExportFromS3DownloadsToTmpDir: export --in s3://... downloads the
// export's files into --tmp-dir, where its out-of-core passes go and whose
// room it checks, not into the system's temporary directory (here one
// that does not exist), and leaves nothing there.
func TestExportFromS3DownloadsToTmpDir(t *testing.T) {
	s3ep := s3local.Endpoint(t)
	client := s3local.Client(t, s3ep)
	bucket := s3local.NewBucket(t, client)
	tmp := t.TempDir()
	env := s3Env(s3ep, "http://127.0.0.1:1")
	args := append(append([]string{"import"}, orgArgs...), "--out", "s3://"+bucket+"/org", "--items-per-file", "20")
	if _, stderr, code := run(t, env, args...); code != 0 {
		t.Fatalf("import --out s3: exit %d: %s", code, stderr)
	}
	big := t.TempDir()
	out := filepath.Join(tmp, "s3.jsonl")
	env = append(env, "TMPDIR="+filepath.Join(tmp, "no-such-dir"))
	_, stderr, code := run(t, env, "export", "--in", "s3://"+bucket+"/org/", "--layout", "path", "--out", out, "--memory", "1MiB", "--tmp-dir", big)
	if code != 0 {
		t.Fatalf("export --in s3 --tmp-dir: exit %d: %s", code, stderr)
	}
	if n := strings.Count(readFile(t, out), "\n"); n != 46 {
		t.Errorf("%d lines exported, want 46", n)
	}
	emptyDir(t, big)
}
