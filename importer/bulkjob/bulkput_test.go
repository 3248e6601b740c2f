package bulkjob

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/treeport/treeport/internal/ddb"
)

const bulkARN = "arn:aws:dynamodb:us-east-1:123456789012:table/Tree/bulk-operation/01764000000000-0a1b2c3d"

// recordedStart is a StartBulkPutItems answer in the shape the API
// reference documents (BulkOperationDescription), as DynamoDB returns it
// right after the start.
const recordedStart = `{"BulkOperationDescription":{` +
	`"BulkOperationArn":"` + bulkARN + `","BulkOperationStatus":"IN_PROGRESS",` +
	`"ClientToken":"tok-1","MaxWriteRequestUnits":2048,"PerformanceTier":"STANDARD",` +
	`"FailedItemCount":0,"ProcessedItemCount":0,"StartTime":1764072000.123,` +
	`"InputS3Configuration":{"InputFormat":"DYNAMODB_JSON","InputCompressionType":"GZIP","S3Bucket":"my-bucket","S3KeyPrefix":"loads/2024/data/"},` +
	`"OutputS3Configuration":{"OutputType":["ERROR"],"S3Bucket":"my-bucket","S3KeyPrefix":"loads/2024/bulk-put-report/"},` +
	`"TableDetails":[{"TableName":"Tree","TableId":"6f1c2a3b-0000-4000-8000-000000000001"}]}}`

// The request goes through the SDK's own validation and serialization to
// a recorded answer: what it sends is StartBulkPutItems with the files'
// location, the report's, the cap and the token, and the answer is read
// back into a status.
func TestBulkPutInputMatchesTheAPI(t *testing.T) {
	in, err := BulkPutInput("Tree", "my-bucket", "loads/2024/data/", "loads/2024/bulk-put-report/", "tok-1", 2048)
	if err != nil {
		t.Fatal(err)
	}
	h := &recordingHTTP{status: http.StatusOK, answer: recordedStart}
	st, err := StartBulkPut(context.Background(), fakeDynamoDB(h), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.targets) != 1 || h.targets[0] != "DynamoDB_20120810.StartBulkPutItems" {
		t.Fatalf("sent %v", h.targets)
	}
	var sent map[string]any
	if err := json.Unmarshal(h.bodies[0], &sent); err != nil {
		t.Fatalf("%v: %s", err, h.bodies[0])
	}
	want := map[string]any{
		"TableName":            "Tree",
		"ClientToken":          "tok-1",
		"MaxWriteRequestUnits": 2048.0,
		"InputS3Configuration": map[string]any{
			"InputFormat": "DYNAMODB_JSON", "InputCompressionType": "GZIP", "S3Bucket": "my-bucket", "S3KeyPrefix": "loads/2024/data/",
		},
		"OutputS3Configuration": map[string]any{
			"OutputType": []any{"ERROR"}, "S3Bucket": "my-bucket", "S3KeyPrefix": "loads/2024/bulk-put-report/",
		},
	}
	if !reflect.DeepEqual(sent, want) {
		t.Errorf("the SDK sent\n%s\nwant\n%v", h.bodies[0], want)
	}
	wantSt := BulkPutStatus{ARN: bulkARN, Table: "Tree", Status: types.BulkOperationStatusInProgress, MaxWCU: 2048,
		ReportBucket: "my-bucket", ReportPrefix: "loads/2024/bulk-put-report/",
		Started: time.Unix(1764072000, 123e6).UTC()}
	st.Started = st.Started.UTC()
	if st != wantSt {
		t.Errorf("status\n%+v\nwant\n%+v", st, wantSt)
	}
}

// Without a cap or a token the request leaves them out (the SDK then makes
// a token of its own), and still passes the SDK's validation.
func TestBulkPutInputNoCap(t *testing.T) {
	in, err := BulkPutInput("Tree", "b-1", "data/", "bulk-put-report/", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if in.MaxWriteRequestUnits != nil || in.ClientToken != nil {
		t.Fatalf("cap %v token %v", in.MaxWriteRequestUnits, in.ClientToken)
	}
	h := &recordingHTTP{status: http.StatusOK, answer: recordedStart}
	if _, err := StartBulkPut(context.Background(), fakeDynamoDB(h), in); err != nil {
		t.Fatal(err)
	}
	var sent map[string]any
	_ = json.Unmarshal(h.bodies[0], &sent)
	if _, ok := sent["MaxWriteRequestUnits"]; ok {
		t.Errorf("a cap was sent: %s", h.bodies[0])
	}
}

// What the SDK refuses before sending (a missing required member) is
// refused by ValidateBulkPutInput too, with the API's other documented
// limits that the SDK leaves to the service.
func TestValidateBulkPutInput(t *testing.T) {
	good := func() *dynamodb.StartBulkPutItemsInput {
		in, err := BulkPutInput("Tree", "my-bucket", "p/data/", "p/bulk-put-report/", "tok", 1024)
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	tests := []struct {
		name   string
		change func(*dynamodb.StartBulkPutItemsInput)
		want   string
		sdk    bool // the SDK's own validation refuses it too
	}{
		{"no table", func(in *dynamodb.StartBulkPutItemsInput) { in.TableName = nil }, "TableName", true},
		{"no input", func(in *dynamodb.StartBulkPutItemsInput) { in.InputS3Configuration = nil }, "InputS3Configuration is required", true},
		{"no output", func(in *dynamodb.StartBulkPutItemsInput) { in.OutputS3Configuration = nil }, "OutputS3Configuration is required", true},
		{"no output type", func(in *dynamodb.StartBulkPutItemsInput) { in.OutputS3Configuration.OutputType = nil }, "OutputType is required", true},
		{"no input bucket", func(in *dynamodb.StartBulkPutItemsInput) { in.InputS3Configuration.S3Bucket = nil }, "S3Bucket is required", true},
		{"no format", func(in *dynamodb.StartBulkPutItemsInput) { in.InputS3Configuration.InputFormat = "" }, "InputFormat is required", true},
		{"cap below the minimum", func(in *dynamodb.StartBulkPutItemsInput) { in.MaxWriteRequestUnits = aws.Int64(1000) }, "below the minimum of 1024", false},
		{"bad format", func(in *dynamodb.StartBulkPutItemsInput) { in.InputS3Configuration.InputFormat = "CSV" }, `InputFormat "CSV" is not one of DYNAMODB_JSON, ION`, false},
		{"token with $", func(in *dynamodb.StartBulkPutItemsInput) { in.ClientToken = aws.String("a$b") }, "no $", false},
		{"report read as input", func(in *dynamodb.StartBulkPutItemsInput) {
			in.OutputS3Configuration.S3KeyPrefix = aws.String("p/data/report/")
		}, "would be read as input", false},
		{"bad bucket", func(in *dynamodb.StartBulkPutItemsInput) { in.InputS3Configuration.S3Bucket = aws.String("Bad_Bucket") }, "not a valid bucket name", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := good()
			tc.change(in)
			err := ValidateBulkPutInput(in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ValidateBulkPutInput = %v, want %q", err, tc.want)
			}
			// The SDK's validation runs before any request is sent.
			h := &recordingHTTP{status: http.StatusOK, answer: recordedStart}
			_, sdkErr := fakeDynamoDB(h).StartBulkPutItems(context.Background(), in)
			var invalid smithy.InvalidParamsError
			if got := errors.As(sdkErr, &invalid); got != tc.sdk {
				t.Errorf("SDK validation error %v, want one: %v", sdkErr, tc.sdk)
			}
		})
	}
	if err := ValidateBulkPutInput(good()); err != nil {
		t.Errorf("a good request: %v", err)
	}
}

// A table that does not exist, and a token reused with other settings, say
// what to do.
func TestStartBulkPutErrors(t *testing.T) {
	tests := []struct {
		errType, want string
	}{
		{"ResourceNotFoundException", "bulk put writes into an existing table"},
		{"IdempotentParameterMismatchException", "with other settings, such as another --max-wcu"},
	}
	for _, tc := range tests {
		t.Run(tc.errType, func(t *testing.T) {
			in, err := BulkPutInput("Tree", "b-1", "data/", "bulk-put-report/", "tok", 0)
			if err != nil {
				t.Fatal(err)
			}
			h := &recordingHTTP{status: http.StatusBadRequest, errType: tc.errType,
				answer: `{"__type":"com.amazonaws.dynamodb.v20120810#` + tc.errType + `","message":"recorded"}`}
			_, err = StartBulkPut(context.Background(), fakeDynamoDB(h), in)
			if !errors.Is(err, ddb.ErrService) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

// fakeBulk replays a recorded sequence of DescribeBulkOperation answers.
type fakeBulk replay[*types.BulkOperationDescription]

type bulkStep = step[*types.BulkOperationDescription]

func (f *fakeBulk) StartBulkPutItems(context.Context, *dynamodb.StartBulkPutItemsInput, ...func(*dynamodb.Options)) (*dynamodb.StartBulkPutItemsOutput, error) {
	return nil, errors.New("not recorded")
}

func (f *fakeBulk) DescribeBulkOperation(context.Context, *dynamodb.DescribeBulkOperationInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeBulkOperationOutput, error) {
	desc, err := (*replay[*types.BulkOperationDescription])(f).next()
	if err != nil {
		return nil, err
	}
	return &dynamodb.DescribeBulkOperationOutput{BulkOperationDescription: desc}, nil
}

func bulkDesc(status types.BulkOperationStatus, processed, failed int64) bulkStep {
	start := time.Date(2025, 11, 25, 12, 0, 0, 0, time.UTC)
	d := &types.BulkOperationDescription{
		BulkOperationArn: aws.String(bulkARN), BulkOperationStatus: status,
		ProcessedItemCount: processed, FailedItemCount: failed,
		StartTime:             aws.Time(start),
		TableDetails:          []types.BulkOperationTableDetail{{TableName: aws.String("Tree")}},
		OutputS3Configuration: &types.OutputS3Configuration{S3Bucket: aws.String("b-1"), S3KeyPrefix: aws.String("run/bulk-put-report/")},
	}
	if status != types.BulkOperationStatusInProgress && status != types.BulkOperationStatusCancelling {
		d.EndTime = aws.Time(start.Add(3 * time.Minute))
	}
	return bulkStep{desc: d}
}

func TestFollowBulkPut(t *testing.T) {
	failed := bulkDesc(types.BulkOperationStatusFailed, 300, 0)
	failed.desc.FailureCode = aws.String("AccessDenied")
	failed.desc.FailureMessage = aws.String("cannot read the input")
	tests := []struct {
		name        string
		steps       []bulkStep
		wantStatus  types.BulkOperationStatus
		wantErr     error
		wantErrText string
		wantSeen    []int64
		wantWritten int64
	}{
		{
			name: "completes",
			steps: []bulkStep{bulkDesc(types.BulkOperationStatusInProgress, 0, 0), bulkDesc(types.BulkOperationStatusInProgress, 500, 0),
				bulkDesc(types.BulkOperationStatusCompleted, 1000, 0)},
			wantStatus: types.BulkOperationStatusCompleted, wantSeen: []int64{0, 500, 1000}, wantWritten: 1000,
		},
		{
			name:       "completes with errors: no error, the count",
			steps:      []bulkStep{bulkDesc(types.BulkOperationStatusInProgress, 10, 1), bulkDesc(types.BulkOperationStatusCompletedWithErrors, 1000, 3)},
			wantStatus: types.BulkOperationStatusCompletedWithErrors, wantSeen: []int64{10, 1000}, wantWritten: 997,
		},
		{
			name:       "fails",
			steps:      []bulkStep{bulkDesc(types.BulkOperationStatusInProgress, 100, 0), failed},
			wantStatus: types.BulkOperationStatusFailed, wantErr: ErrBulkPutFailed,
			wantErrText: "ended FAILED: AccessDenied cannot read the input (300 items processed, 0 failed; the items written before it ended stay in the table); the items it could not write are reported in s3://b-1/run/bulk-put-report/",
			wantSeen:    []int64{100, 300}, wantWritten: 300,
		},
		{
			name:       "cancelled",
			steps:      []bulkStep{bulkDesc(types.BulkOperationStatusCancelling, 5, 0), bulkDesc(types.BulkOperationStatusCancelled, 5, 0)},
			wantStatus: types.BulkOperationStatusCancelled, wantErr: ErrBulkPutFailed, wantErrText: "ended CANCELLED",
			wantSeen: []int64{5, 5}, wantWritten: 5,
		},
		{
			name:       "polls that keep failing end the wait, not the bulk put",
			steps:      []bulkStep{bulkDesc(types.BulkOperationStatusInProgress, 1, 0), {err: errors.New("ThrottlingException")}},
			wantStatus: types.BulkOperationStatusInProgress, wantErr: ddb.ErrService,
			wantErrText: "may still be running (aws dynamodb describe-bulk-operation --bulk-operation-arn " + bulkARN + ")",
			wantSeen:    []int64{1}, wantWritten: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var seen []int64
			last, err := FollowBulkPut(context.Background(), &fakeBulk{steps: tc.steps}, bulkARN, BulkFollowOptions{
				Poll: time.Millisecond, MaxFailures: 3,
				OnStatus: func(s BulkPutStatus) { seen = append(seen, s.ProcessedItems) },
			})
			if tc.wantErr == nil && err != nil {
				t.Fatalf("err = %v", err)
			}
			if tc.wantErr != nil && (!errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantErrText)) {
				t.Fatalf("err = %v, want %v containing %q", err, tc.wantErr, tc.wantErrText)
			}
			if last.Status != tc.wantStatus || last.Written() != tc.wantWritten || last.Table != "Tree" {
				t.Errorf("last = %+v, want %s with %d written", last, tc.wantStatus, tc.wantWritten)
			}
			if !reflect.DeepEqual(seen, tc.wantSeen) {
				t.Errorf("progress seen = %v, want %v", seen, tc.wantSeen)
			}
		})
	}
}
