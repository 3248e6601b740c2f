package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/treeport/treeport/internal/testserver/s3local"
)

// fakeBulkService is a DynamoDB endpoint that knows DescribeTable (the
// table it is given), StartBulkPutItems and DescribeBulkOperation, which
// DynamoDB Local lacks. Like DynamoDB, it starts one bulk put per client
// token and answers a repeated token with the bulk put it runs. Its
// DescribeBulkOperation answers follow the script, one a call, repeating
// the last; %s in an answer is the bulk put's ARN.
type fakeBulkService struct {
	table  string // the DescribeTable answer's Table, "" for none
	script []string
	// onStart, when set, runs at each StartBulkPutItems (to write the
	// report DynamoDB would write).
	onStart func()

	mu       sync.Mutex
	requests []map[string]any  // StartBulkPutItems request bodies
	jobs     map[string]string // client token → ARN
	calls    int
}

func (f *fakeBulkService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	// DynamoDB signs its answers with a CRC32 of the body, which the SDK checks.
	rec, orig := httptest.NewRecorder(), w
	defer func() {
		for k, v := range rec.Header() {
			orig.Header()[k] = v
		}
		orig.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(rec.Body.Bytes())), 10))
		orig.WriteHeader(rec.Code)
		_, _ = orig.Write(rec.Body.Bytes())
	}()
	w = rec
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	fail := func(typ, msg string) {
		w.Header().Set("X-Amzn-Errortype", typ)
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":%q}`, typ, msg)
	}
	switch r.Header.Get("X-Amz-Target") {
	case "DynamoDB_20120810.DescribeTable":
		if f.table == "" {
			fail("ResourceNotFoundException", "Requested resource not found: Table: Org not found")
			return
		}
		fmt.Fprintf(w, `{"Table":%s}`, f.table)
	case "DynamoDB_20120810.StartBulkPutItems":
		var req map[string]any
		_ = json.Unmarshal(body, &req)
		f.requests = append(f.requests, req)
		if f.onStart != nil {
			f.onStart()
		}
		if f.jobs == nil {
			f.jobs = map[string]string{}
		}
		tok, _ := req["ClientToken"].(string)
		arn, ok := f.jobs[tok]
		if !ok {
			arn = fmt.Sprintf("arn:aws:dynamodb:us-east-1:123456789012:table/Org/bulk-operation/0176400000000%d-abcdef12", len(f.jobs))
			f.jobs[tok] = arn
		}
		fmt.Fprintf(w, `{"BulkOperationDescription":{"BulkOperationArn":%q,"BulkOperationStatus":"IN_PROGRESS","StartTime":%d,"TableDetails":[{"TableName":"Org"}]}}`, arn, time.Now().Unix())
	case "DynamoDB_20120810.DescribeBulkOperation":
		var req map[string]any
		_ = json.Unmarshal(body, &req)
		d := f.script[min(f.calls, len(f.script)-1)]
		f.calls++
		fmt.Fprintf(w, `{"BulkOperationDescription":%s}`, strings.ReplaceAll(d, "%ARN%", req["BulkOperationArn"].(string)))
	default:
		fail("UnknownOperationException", "not faked: "+r.Header.Get("X-Amz-Target"))
	}
}

func (f *fakeBulkService) starts() ([]map[string]any, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.requests...), len(f.jobs)
}

func bulkDescribe(status string, processed, failed int, bucket, report string) string {
	start := time.Now().Unix()
	end := ""
	if status != "IN_PROGRESS" {
		end = fmt.Sprintf(`"EndTime":%d,`, start+180)
	}
	return fmt.Sprintf(`{"BulkOperationArn":"%%ARN%%","BulkOperationStatus":%q,"ProcessedItemCount":%d,"FailedItemCount":%d,"StartTime":%d,%s`+
		`"TableDetails":[{"TableName":"Org"}],"OutputS3Configuration":{"OutputType":["ERROR"],"S3Bucket":%q,"S3KeyPrefix":%q},"FailureCode":"InternalFailure","FailureMessage":"recorded failure"}`,
		status, processed, failed, start, end, bucket, report)
}

// tableDescription is DescribeTable's Table for the layout: the CreateTable
// JSON treeport schema prints, ACTIVE.
func tableDescription(t *testing.T, layout string) string {
	t.Helper()
	stdout, stderr, code := run(t, nil, "schema", "--layout", layout, "--table", "Org")
	if code != 0 {
		t.Fatalf("schema: %d %s", code, stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "BillingMode")
	m["TableStatus"] = "ACTIVE"
	b, _ := json.Marshal(m)
	return string(b)
}

// import --out s3://… --bulk-put: the files are staged and uploaded as for
// ImportTable, then one StartBulkPutItems loads them into the existing
// table, followed to the end; a rerun of the same command finds the upload
// and follows the same bulk put (same client token, no second job).
func TestBulkPutCLI(t *testing.T) {
	s3ep := s3local.Endpoint(t)
	client := s3local.Client(t, s3ep)
	bucket := s3local.NewBucket(t, client)
	report := "org/bulk-1/bulk-put-report/"
	fake := &fakeBulkService{table: tableDescription(t, "path"), script: []string{
		bulkDescribe("IN_PROGRESS", 20, 0, bucket, report), bulkDescribe("COMPLETED", 46, 0, bucket, report)}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	env := s3Env(s3ep, srv.URL)
	args := append(append([]string{"import"}, orgArgs...), "--out", "s3://"+bucket+"/org/bulk-1", "--bulk-put", "Org", "--max-wcu", "1500", "--items-per-file", "10")

	stdout, stderr, code := run(t, env, args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "wrote 46 items into Org by bulk put") || !strings.Contains(stderr, "bulk put into Org: IN_PROGRESS, 20 of 46 items processed") ||
		!strings.Contains(stderr, "at most 1500 WCU/s") {
		t.Errorf("no progress or result:\n%s\n%s", stdout, stderr)
	}
	reqs, jobs := fake.starts()
	if len(reqs) != 1 || jobs != 1 {
		t.Fatalf("%d StartBulkPutItems calls, %d jobs; want 1, 1", len(reqs), jobs)
	}
	req := reqs[0]
	in := req["InputS3Configuration"].(map[string]any)
	out := req["OutputS3Configuration"].(map[string]any)
	if req["TableName"] != "Org" || req["MaxWriteRequestUnits"] != 1500.0 || req["ClientToken"] == nil ||
		in["S3Bucket"] != bucket || in["S3KeyPrefix"] != "org/bulk-1/data/" || in["InputFormat"] != "DYNAMODB_JSON" || in["InputCompressionType"] != "GZIP" ||
		out["S3Bucket"] != bucket || out["S3KeyPrefix"] != report {
		t.Errorf("StartBulkPutItems request: %v", req)
	}
	var data int
	for _, k := range s3local.Keys(t, client, bucket, "org/bulk-1/") {
		if strings.HasPrefix(k, "org/bulk-1/data/") {
			data++
		}
	}
	if data < 4 {
		t.Errorf("%d data files; want the items in files of 10", data)
	}
	// AWS asks for a bulk put's input in random key order: the uploaded
	// files hold the items of --out DIR, shuffled so that no two in a row
	// share a ByParent value (in org.csv some reports come together).
	dir := t.TempDir() + "/out"
	if _, stderr, code := run(t, nil, append(append([]string{"import"}, orgArgs...), "--out", dir, "--items-per-file", "10")...); code != 0 {
		t.Fatalf("import --out DIR: exit %d %s", code, stderr)
	}
	var plain, spread []string
	files, _ := filepath.Glob(filepath.Join(dir, "data", "*.json.gz"))
	for _, f := range files { // Glob sorts them
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		plain = append(plain, gunzipLines(t, b)...)
	}
	for _, k := range s3local.Keys(t, client, bucket, "org/bulk-1/data/") {
		spread = append(spread, gunzipLines(t, s3local.Get(t, client, bucket, k))...)
	}
	if parentRun(plain) < 2 || parentRun(spread) > 1 || slices.Equal(plain, spread) {
		t.Errorf("longest run of one ParentId: %d in --out DIR, %d in the bulk put's files; want them spread", parentRun(plain), parentRun(spread))
	}
	slices.Sort(plain)
	slices.Sort(spread)
	if !slices.Equal(plain, spread) {
		t.Errorf("the bulk put's files hold other items than --out DIR's:\n%q\n%q", spread, plain)
	}

	// The rerun: same command, same prefix.
	stdout, stderr, code = run(t, env, args...)
	if code != 0 || !strings.Contains(stderr, "holds the complete upload of an earlier run") || !strings.Contains(stdout, "wrote 46 items into Org by bulk put") {
		t.Fatalf("rerun: exit %d\n%s\n%s", code, stdout, stderr)
	}
	reqs, jobs = fake.starts()
	if len(reqs) != 2 || jobs != 1 || reqs[1]["ClientToken"] != reqs[0]["ClientToken"] {
		t.Errorf("rerun: %d calls, %d jobs, tokens %v %v: want the same token, one job", len(reqs), jobs, reqs[0]["ClientToken"], reqs[len(reqs)-1]["ClientToken"])
	}
	// The rerun ends there: it writes no files, least of all to a local
	// directory named after the s3:// URL.
	if _, err := os.Stat("s3:"); err == nil {
		os.RemoveAll("s3:")
		t.Errorf("rerun: --out s3://… was written as a local directory s3:/")
	}

	// Another input on the used prefix is refused, as for ImportTable.
	other := append(append([]string{"import"}, "--in", "fixtures/org.csv", "--layout", "path"), "--out", "s3://"+bucket+"/org/bulk-1", "--bulk-put", "Org")
	_, stderr, code = run(t, env, other...)
	if code != 2 || !strings.Contains(stderr, "holds") {
		t.Errorf("another input on a used prefix: exit %d, %s", code, stderr)
	}
}

// A bulk put that could not write some items exits 1 and shows the first
// records of DynamoDB's report; one that fails exits 3; a cap under the
// API's minimum, a missing table and a table of another layout are usage
// errors found before anything is uploaded.
func TestBulkPutOutcomes(t *testing.T) {
	s3ep := s3local.Endpoint(t)
	client := s3local.Client(t, s3ep)
	bucket := s3local.NewBucket(t, client)
	path := tableDescription(t, "path")
	tests := []struct {
		name     string
		table    string
		script   func(report string) []string
		report   string // a report object DynamoDB would write
		extra    []string
		wantCode int
		wantErr  []string
		uploads  bool
	}{
		{name: "completed with errors", table: path, uploads: true,
			script: func(r string) []string { return []string{bulkDescribe("COMPLETED_WITH_ERRORS", 46, 2, bucket, r)} },
			report: `{"errorCode":"ValidationException","errorMessage":"item size exceeded","item":{"Id":{"S":"E7"}}}` + "\n" +
				`{"errorCode":"ValidationException","errorMessage":"missing key","item":{"Id":{"S":"E9"}}}` + "\n",
			wantCode: 1, wantErr: []string{"2 items could not be written (COMPLETED_WITH_ERRORS)", "1 object, 2 records", `"E7"`, "missing key"}},
		{name: "failed", table: path, uploads: true,
			script: func(r string) []string {
				return []string{bulkDescribe("IN_PROGRESS", 10, 0, bucket, r), bulkDescribe("FAILED", 20, 0, bucket, r)}
			},
			wantCode: 3, wantErr: []string{"ended FAILED: InternalFailure recorded failure", "20 items processed"}},
		{name: "cap under the minimum", table: path, extra: []string{"--max-wcu", "500"},
			wantCode: 2, wantErr: []string{"at least 1024"}},
		{name: "no table", table: "",
			wantCode: 2, wantErr: []string{"bulk put loads an existing table"}},
		{name: "a table of another layout", table: tableDescription(t, "closure"),
			wantCode: 2, wantErr: []string{"does not match the layout", "sort key: table has RelativeDepth"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prefix := fmt.Sprintf("case-%d", i)
			report := prefix + "/bulk-put-report/"
			fake := &fakeBulkService{table: tc.table}
			if tc.script != nil {
				fake.script = tc.script(report)
			}
			if tc.report != "" {
				fake.onStart = func() { s3local.Put(t, client, bucket, report+"errors/part-00000.json", []byte(tc.report)) }
			}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			args := append(append([]string{"import"}, orgArgs...), "--out", "s3://"+bucket+"/"+prefix, "--bulk-put", "Org")
			stdout, stderr, code := run(t, s3Env(s3ep, srv.URL), append(args, tc.extra...)...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.wantCode, stdout, stderr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			var data int
			for _, k := range s3local.Keys(t, client, bucket, prefix+"/data/") {
				_ = k
				data++
			}
			if tc.uploads != (data > 0) {
				t.Errorf("%d data files uploaded", data)
			}
		})
	}
}

// gunzipLines is the lines of a gzip file.
func gunzipLines(t *testing.T, data []byte) []string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
}

// parentRun is the longest run of DynamoDB JSON lines in a row with one
// ParentId.
func parentRun(lines []string) int {
	best, run, last := 0, 0, ""
	for _, l := range lines {
		p := ""
		if i := strings.Index(l, `"ParentId":`); i >= 0 {
			p = l[i:]
			if j := strings.Index(p, "}"); j >= 0 {
				p = p[:j]
			}
		}
		if p != "" && p == last {
			run++
		} else {
			run = 1
		}
		last = p
		best = max(best, run)
	}
	return best
}
