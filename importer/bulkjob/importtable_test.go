package bulkjob

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/ddbtable"
	"github.com/treeport/treeport/layouts"
)

// recordingHTTP answers every request with one canned response and keeps
// the requests' bodies and targets.
type recordingHTTP struct {
	mu      sync.Mutex
	targets []string
	bodies  [][]byte
	status  int
	answer  string
	errType string // the error's type when status is not 200 (ResourceInUseException)
}

func (h *recordingHTTP) Do(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.targets = append(h.targets, r.Header.Get("X-Amz-Target"))
	h.bodies = append(h.bodies, body)
	h.mu.Unlock()
	hdr := http.Header{}
	hdr.Set("Content-Type", "application/x-amz-json-1.0")
	if h.status != http.StatusOK {
		t := h.errType
		if t == "" {
			t = "ResourceInUseException"
		}
		hdr.Set("X-Amzn-Errortype", t)
	}
	return &http.Response{StatusCode: h.status, Header: hdr, Body: io.NopCloser(strings.NewReader(h.answer)), Request: r}, nil
}

func fakeDynamoDB(h *recordingHTTP) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:      "us-east-1",
		HTTPClient:  h,
		Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""),
	})
}

// For every layout, the ImportTable request goes through the SDK's own
// validation and serialization, and what it sends is the request
// import-table.json holds, so that `aws dynamodb import-table
// --cli-input-json` and treeport start the same import.
func TestImportTableInputMatchesTheAPI(t *testing.T) {
	for _, name := range layouts.Names() {
		t.Run(name, func(t *testing.T) {
			l, err := layouts.New(name, layouts.Options{})
			if err != nil {
				t.Fatal(err)
			}
			spec := l.Table()
			in, err := ImportTableInput("my.table", spec, ddbtable.Billing{}, "my-bucket", "loads/2024/data/", "tok-1")
			if err != nil {
				t.Fatal(err)
			}
			h := &recordingHTTP{status: http.StatusOK, answer: `{"ImportTableDescription":{"ImportArn":"arn:aws:dynamodb:us-east-1:1:table/my.table/import/1","ImportStatus":"IN_PROGRESS","TableCreationParameters":{"TableName":"my.table"}}}`}
			st, err := StartImport(context.Background(), fakeDynamoDB(h), in)
			if err != nil {
				t.Fatal(err)
			}
			if st.ARN != "arn:aws:dynamodb:us-east-1:1:table/my.table/import/1" || st.Status != types.ImportStatusInProgress || st.Table != "my.table" {
				t.Errorf("StartImport = %+v", st)
			}
			if len(h.bodies) != 1 || h.targets[0] != "DynamoDB_20120810.ImportTable" {
				t.Fatalf("sent %v", h.targets)
			}
			var sent map[string]any
			if err := json.Unmarshal(h.bodies[0], &sent); err != nil {
				t.Fatalf("%v: %s", err, h.bodies[0])
			}
			if sent["ClientToken"] != "tok-1" {
				t.Errorf("ClientToken = %v, want tok-1", sent["ClientToken"])
			}
			delete(sent, "ClientToken")
			file, err := ImportTableJSON("my.table", spec, ddbtable.Billing{}, "my-bucket", "loads/2024/data/")
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			if err := json.Unmarshal(file, &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(sent, want) {
				t.Errorf("the SDK sent\n%s\nimport-table.json holds\n%s", h.bodies[0], file)
			}
			params := sent["TableCreationParameters"].(map[string]any)
			ixs, _ := params["GlobalSecondaryIndexes"].([]any)
			if got := len(ixs); got != len(spec.Indexes) {
				t.Errorf("%d indexes sent, layout has %d", got, len(spec.Indexes))
			}
		})
	}
}

func TestImportTableInputProvisioned(t *testing.T) {
	l, _ := layouts.New(layouts.PathName, layouts.Options{})
	in, err := ImportTableInput("tbl", l.Table(), ddbtable.Billing{Provisioned: true, RCU: 5, WCU: 7}, "b-1", "", "")
	if err != nil {
		t.Fatal(err)
	}
	p := in.TableCreationParameters
	if p.BillingMode != types.BillingModeProvisioned || aws.ToInt64(p.ProvisionedThroughput.WriteCapacityUnits) != 7 {
		t.Errorf("billing %s %+v", p.BillingMode, p.ProvisionedThroughput)
	}
	for _, ix := range p.GlobalSecondaryIndexes {
		if ix.ProvisionedThroughput == nil || aws.ToInt64(ix.ProvisionedThroughput.ReadCapacityUnits) != 5 {
			t.Errorf("index %s: throughput %+v", aws.ToString(ix.IndexName), ix.ProvisionedThroughput)
		}
	}
	if in.S3BucketSource.S3KeyPrefix != nil || in.ClientToken != nil {
		t.Errorf("empty prefix and token should be left out: %+v %v", in.S3BucketSource, in.ClientToken)
	}
}

func TestValidateImportTableInput(t *testing.T) {
	l, _ := layouts.New(layouts.ClosureName, layouts.Options{})
	good := func() *dynamodb.ImportTableInput {
		in, err := ImportTableInput("tbl", l.Table(), ddbtable.Billing{}, "bucket-1", "p/data/", "tok")
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	tests := []struct {
		name   string
		break_ func(in *dynamodb.ImportTableInput)
		want   string
	}{
		{name: "no input format", break_: func(in *dynamodb.ImportTableInput) { in.InputFormat = "" }, want: "InputFormat is required"},
		{name: "unknown input format", break_: func(in *dynamodb.ImportTableInput) { in.InputFormat = "PARQUET" }, want: `InputFormat "PARQUET" is not one of`},
		{name: "unknown compression", break_: func(in *dynamodb.ImportTableInput) { in.InputCompressionType = "BZIP2" }, want: `InputCompressionType "BZIP2"`},
		{name: "no bucket source", break_: func(in *dynamodb.ImportTableInput) { in.S3BucketSource = nil }, want: "S3BucketSource is required"},
		{name: "no bucket", break_: func(in *dynamodb.ImportTableInput) { in.S3BucketSource.S3Bucket = nil }, want: "S3Bucket is required"},
		{name: "bad bucket", break_: func(in *dynamodb.ImportTableInput) { in.S3BucketSource.S3Bucket = aws.String("My_Bucket") }, want: "not a valid bucket name"},
		{name: "no table parameters", break_: func(in *dynamodb.ImportTableInput) { in.TableCreationParameters = nil }, want: "TableCreationParameters is required"},
		{name: "no table name", break_: func(in *dynamodb.ImportTableInput) { in.TableCreationParameters.TableName = nil }, want: "TableName is required"},
		{name: "short table name", break_: func(in *dynamodb.ImportTableInput) { in.TableCreationParameters.TableName = aws.String("ab") }, want: `TableName "ab"`},
		{name: "no key schema", break_: func(in *dynamodb.ImportTableInput) { in.TableCreationParameters.KeySchema = nil }, want: "KeySchema is required"},
		{name: "range key first", break_: func(in *dynamodb.ImportTableInput) {
			ks := in.TableCreationParameters.KeySchema
			ks[0].KeyType, ks[1].KeyType = types.KeyTypeRange, types.KeyTypeHash
		}, want: "is \"RANGE\", want HASH"},
		{name: "undefined key attribute", break_: func(in *dynamodb.ImportTableInput) {
			in.TableCreationParameters.KeySchema[0].AttributeName = aws.String("Nope")
		}, want: `key attribute "Nope" has no AttributeDefinition`},
		{name: "bad attribute type", break_: func(in *dynamodb.ImportTableInput) {
			in.TableCreationParameters.AttributeDefinitions[0].AttributeType = "BOOL"
		}, want: `is not one of S, N, B`},
		{name: "unused attribute", break_: func(in *dynamodb.ImportTableInput) {
			p := in.TableCreationParameters
			p.AttributeDefinitions = append(p.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String("Extra"), AttributeType: types.ScalarAttributeTypeS})
		}, want: `attribute "Extra" is defined but is no key`},
		{name: "index without projection", break_: func(in *dynamodb.ImportTableInput) {
			in.TableCreationParameters.GlobalSecondaryIndexes[0].Projection = nil
		}, want: "Projection is required"},
		{name: "provisioned without throughput", break_: func(in *dynamodb.ImportTableInput) {
			in.TableCreationParameters.BillingMode = types.BillingModeProvisioned
		}, want: "ProvisionedThroughput disagree"},
		{name: "token too long", break_: func(in *dynamodb.ImportTableInput) { in.ClientToken = aws.String(strings.Repeat("a", 37)) }, want: "ClientToken"},
		{name: "CSV options on JSON", break_: func(in *dynamodb.ImportTableInput) { in.InputFormatOptions = &types.InputFormatOptions{} }, want: "InputFormatOptions apply to CSV"},
	}
	if err := ValidateImportTableInput(good()); err != nil {
		t.Fatalf("a good request: %v", err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := good()
			tc.break_(in)
			err := ValidateImportTableInput(in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
			// StartImport refuses it before calling DynamoDB.
			h := &recordingHTTP{status: http.StatusOK, answer: `{}`}
			if _, err := StartImport(context.Background(), fakeDynamoDB(h), in); err == nil || len(h.bodies) > 0 {
				t.Errorf("StartImport sent an invalid request (err %v)", err)
			}
		})
	}
}

func TestStartImportTableExists(t *testing.T) {
	l, _ := layouts.New(layouts.PathName, layouts.Options{})
	in, err := ImportTableInput("taken", l.Table(), ddbtable.Billing{}, "bucket-1", "data/", "")
	if err != nil {
		t.Fatal(err)
	}
	h := &recordingHTTP{status: http.StatusBadRequest, answer: `{"__type":"com.amazonaws.dynamodb.v20120810#ResourceInUseException","message":"Table already exists: taken"}`}
	_, err = StartImport(context.Background(), fakeDynamoDB(h), in)
	if !errors.Is(err, ddb.ErrService) || !strings.Contains(err.Error(), "table taken exists already") {
		t.Fatalf("err = %v", err)
	}
}

// replay is a recorded sequence of a job's Describe answers; an entry
// with err set is a failed call. After the last one it repeats it.
type replay[D any] struct {
	mu    sync.Mutex
	steps []step[D]
	calls int
}

type step[D any] struct {
	desc D
	err  error
}

// next is the answer to the next Describe call.
func (r *replay[D]) next() (D, error) {
	r.mu.Lock()
	s := r.steps[min(r.calls, len(r.steps)-1)]
	r.calls++
	r.mu.Unlock()
	return s.desc, s.err
}

func (r *replay[D]) callsSeen() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// fakeImports replays a recorded sequence of DescribeImport answers.
type fakeImports replay[*types.ImportTableDescription]

type describeStep = step[*types.ImportTableDescription]

func (f *fakeImports) ImportTable(context.Context, *dynamodb.ImportTableInput, ...func(*dynamodb.Options)) (*dynamodb.ImportTableOutput, error) {
	return nil, errors.New("not recorded")
}

func (f *fakeImports) DescribeImport(context.Context, *dynamodb.DescribeImportInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeImportOutput, error) {
	desc, err := (*replay[*types.ImportTableDescription])(f).next()
	if err != nil {
		return nil, err
	}
	return &dynamodb.DescribeImportOutput{ImportTableDescription: desc}, nil
}

const testARN = "arn:aws:dynamodb:us-east-1:123456789012:table/Tree/import/01700000000000-abcdef12"

func importDesc(status types.ImportStatus, processed, imported, errs int64) describeStep {
	start := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	d := &types.ImportTableDescription{
		ImportArn: aws.String(testARN), ImportStatus: status,
		ProcessedItemCount: processed, ImportedItemCount: imported, ErrorCount: errs,
		ProcessedSizeBytes:      aws.Int64(processed * 200),
		StartTime:               aws.Time(start),
		TableCreationParameters: &types.TableCreationParameters{TableName: aws.String("Tree")},
	}
	if status != types.ImportStatusInProgress {
		d.EndTime = aws.Time(start.Add(7 * time.Minute))
	}
	return describeStep{desc: d}
}

func TestFollowImport(t *testing.T) {
	logGroup := "arn:aws:logs:us-east-1:123456789012:log-group:/aws-dynamodb/imports:*"
	failed := importDesc(types.ImportStatusFailed, 900, 0, 900)
	failed.desc.FailureCode = aws.String("ItemValidationError")
	failed.desc.FailureMessage = aws.String("Some of the items failed validation checks")
	failed.desc.CloudWatchLogGroupArn = aws.String(logGroup)
	completedWithErrors := importDesc(types.ImportStatusCompleted, 1000, 997, 3)
	completedWithErrors.desc.CloudWatchLogGroupArn = aws.String(logGroup)
	throttled := errors.New("ThrottlingException: rate exceeded")

	tests := []struct {
		name        string
		steps       []describeStep
		wantStatus  types.ImportStatus
		wantErr     error  // errors.Is target, nil for success
		wantErrText string // part of the error message
		wantSeen    []int64
		want        ImportStatus // fields checked when ARN is set
	}{
		{
			name: "completes",
			steps: []describeStep{
				importDesc(types.ImportStatusInProgress, 0, 0, 0),
				importDesc(types.ImportStatusInProgress, 400, 0, 0),
				importDesc(types.ImportStatusInProgress, 1000, 0, 0),
				importDesc(types.ImportStatusCompleted, 1000, 1000, 0),
			},
			wantStatus: types.ImportStatusCompleted,
			wantSeen:   []int64{0, 400, 1000, 1000},
			want:       ImportStatus{ARN: testARN, Table: "Tree", ProcessedItems: 1000, ImportedItems: 1000, ProcessedBytes: 200000},
		},
		{
			name: "completes with errors: no error, the count and the log group",
			steps: []describeStep{
				importDesc(types.ImportStatusInProgress, 10, 0, 0),
				completedWithErrors,
			},
			wantStatus: types.ImportStatusCompleted,
			wantSeen:   []int64{10, 1000},
			want:       ImportStatus{ARN: testARN, Table: "Tree", ProcessedItems: 1000, ImportedItems: 997, Errors: 3, LogGroup: logGroup, ProcessedBytes: 200000},
		},
		{
			name: "fails with an error count and the log group",
			steps: []describeStep{
				importDesc(types.ImportStatusInProgress, 100, 0, 0),
				importDesc(types.ImportStatusInProgress, 500, 0, 500),
				failed,
			},
			wantStatus:  types.ImportStatusFailed,
			wantErr:     ErrImportFailed,
			wantErrText: "ended FAILED: ItemValidationError Some of the items failed validation checks (900 items processed, 0 imported, 900 errors); the errors are logged in CloudWatch log group " + logGroup,
			wantSeen:    []int64{100, 500, 900},
			want:        ImportStatus{ARN: testARN, Table: "Tree", ProcessedItems: 900, Errors: 900, LogGroup: logGroup, FailureCode: "ItemValidationError", ProcessedBytes: 180000},
		},
		{
			name: "cancelled",
			steps: []describeStep{
				importDesc(types.ImportStatusCancelling, 5, 0, 0),
				importDesc(types.ImportStatusCancelled, 5, 0, 0),
			},
			wantStatus:  types.ImportStatusCancelled,
			wantErr:     ErrImportFailed,
			wantErrText: "ended CANCELLED",
			wantSeen:    []int64{5, 5},
		},
		{
			name: "a few failed polls are passed over",
			steps: []describeStep{
				importDesc(types.ImportStatusInProgress, 1, 0, 0),
				{err: throttled}, {err: throttled},
				importDesc(types.ImportStatusCompleted, 2, 2, 0),
			},
			wantStatus: types.ImportStatusCompleted,
			wantSeen:   []int64{1, 2},
		},
		{
			name: "polls that keep failing end the wait, not the import",
			steps: []describeStep{
				importDesc(types.ImportStatusInProgress, 1, 0, 0),
				{err: throttled},
			},
			wantStatus:  types.ImportStatusInProgress,
			wantErr:     ddb.ErrService,
			wantErrText: "may still be running (aws dynamodb describe-import --import-arn " + testARN + ")",
			wantSeen:    []int64{1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api := &fakeImports{steps: tc.steps}
			var seen []int64
			last, err := FollowImport(context.Background(), api, testARN, FollowOptions{
				Poll: time.Millisecond, MaxFailures: 3,
				OnStatus: func(s ImportStatus) { seen = append(seen, s.ProcessedItems) },
			})
			if tc.wantErr == nil && err != nil {
				t.Fatalf("err = %v", err)
			}
			if tc.wantErr != nil && (!errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantErrText)) {
				t.Fatalf("err = %v, want %v containing %q", err, tc.wantErr, tc.wantErrText)
			}
			if last.Status != tc.wantStatus {
				t.Errorf("status = %s, want %s", last.Status, tc.wantStatus)
			}
			if !reflect.DeepEqual(seen, tc.wantSeen) {
				t.Errorf("progress seen = %v, want %v", seen, tc.wantSeen)
			}
			if w := tc.want; w.ARN != "" {
				got := ImportStatus{ARN: last.ARN, Table: last.Table, ProcessedItems: last.ProcessedItems, ImportedItems: last.ImportedItems,
					Errors: last.Errors, LogGroup: last.LogGroup, FailureCode: last.FailureCode, ProcessedBytes: last.ProcessedBytes}
				if got != w {
					t.Errorf("last status = %+v, want %+v", got, w)
				}
				if last.Ended.Sub(last.Started) != 7*time.Minute {
					t.Errorf("start %v end %v", last.Started, last.Ended)
				}
			}
			var ie *ImportError
			if errors.As(err, &ie) && ie.Status.LogGroup != last.LogGroup {
				t.Errorf("the error's status differs from the last one")
			}
		})
	}
}

// Ctrl-C while following leaves the import running and says how to follow it.
func TestFollowImportCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	api := &fakeImports{steps: []describeStep{importDesc(types.ImportStatusInProgress, 1, 0, 0)}}
	go func() {
		for (*replay[*types.ImportTableDescription])(api).callsSeen() < 2 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := FollowImport(ctx, api, testARN, FollowOptions{Poll: 5 * time.Millisecond})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "goes on in DynamoDB") {
		t.Fatalf("err = %v", err)
	}
}
