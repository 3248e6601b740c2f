package ddb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

func apiErr(code string) error {
	return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "BatchWriteItem",
		Err: &smithy.GenericAPIError{Code: code, Message: "test"}}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want Kind
	}{
		{"PTEE", &types.ProvisionedThroughputExceededException{}, Throttle},
		{"ThrottlingException", apiErr("ThrottlingException"), Throttle},
		{"RequestLimitExceeded", &types.RequestLimitExceeded{}, Throttle},
		{"validation", apiErr("ValidationException"), Validation},
		{"internal", &types.InternalServerError{}, Server},
		{"503 without code", &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 503}}, Err: errors.New("x")}, Server},
		{"send", &smithyhttp.RequestSendError{Err: errors.New("connection reset by peer")}, Net},
		{"deserialization", &smithy.DeserializationError{Err: io.ErrUnexpectedEOF}, Net},
		{"access denied", apiErr("AccessDeniedException"), Other},
		{"not found", &types.ResourceNotFoundException{}, Other},
		{"plain", errors.New("no credentials"), Other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%v) = %d, want %d", tt.err, got, tt.want)
			}
			if want := tt.want == Throttle || tt.want == Server || tt.want == Net; tt.want.Retryable() != want {
				t.Errorf("%d.Retryable() = %v, want %v", tt.want, !want, want)
			}
		})
	}
}

// The messages are the ones each package printed before they shared the
// type: the importer's and the exporter's, with the hints of each.
func TestServiceErrorMessages(t *testing.T) {
	cause := errors.New("boom")
	tests := []struct {
		name string
		err  *ServiceError
		want string
	}{
		{name: "write, denied", err: &ServiceError{Pkg: "importer", Op: "BatchWriteItem", Code: "AccessDeniedException", Err: cause},
			want: "DynamoDB BatchWriteItem failed: boom; check the credentials (--profile, AWS_PROFILE, AWS_ACCESS_KEY_ID) and their permissions"},
		{name: "no table", err: &ServiceError{Pkg: "importer", Op: "DescribeTable", Code: "ResourceNotFoundException", Err: cause},
			want: "DynamoDB DescribeTable failed: boom; check --table and --region (or --endpoint-url)"},
		{name: "invalid CreateTable has no layout hint", err: &ServiceError{Pkg: "importer", Op: "CreateTable", Code: "ValidationException", Err: cause},
			want: "DynamoDB CreateTable failed: boom"},
		{name: "invalid read", err: &ServiceError{Pkg: "exporter", Op: "Query", Code: "ValidationException", Err: cause},
			want: "DynamoDB Query failed: boom; check that the table has the keys and indexes of --layout (and its --attr renames): treeport schema prints them"},
		{name: "read retries ran out", err: &ServiceError{Pkg: "exporter", Op: "Scan", Code: "ThrottlingException", Attempts: 11, Err: cause},
			want: "DynamoDB Scan failed: boom (gave up after 11 attempts; lower --max-rcu or --segments, or raise the table's capacity)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := fmt.Errorf("wrapped: %w", tt.err)
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("message\n%s\nwant\n%s", got, tt.want)
			}
			if !errors.Is(err, ErrService) || !errors.Is(err, cause) {
				t.Errorf("%v does not match ErrService and its cause", err)
			}
		})
	}
}

func TestBackoffSleep(t *testing.T) {
	b := Backoff{Base: 2 * time.Millisecond, Max: 20 * time.Millisecond}
	for n := range 12 {
		start := time.Now()
		if err := b.Sleep(context.Background(), n); err != nil {
			t.Fatal(err)
		}
		// Up to Base·2^n, at most Max, plus a millisecond; a loaded
		// machine may wake late, never early.
		if took := time.Since(start); took < time.Millisecond {
			t.Errorf("Sleep(%d) took %v, less than the millisecond it adds", n, took)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	long := Backoff{Base: time.Hour, Max: time.Hour}
	if err := long.Sleep(ctx, 3); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep on an ended context = %v, want context.Canceled", err)
	}
}

func TestCapacity(t *testing.T) {
	if got := Capacity(&types.ConsumedCapacity{CapacityUnits: aws.Float64(1.5)},
		[]types.ConsumedCapacity{{CapacityUnits: aws.Float64(2)}, {}, {CapacityUnits: aws.Float64(0.5)}}); got != 4 {
		t.Errorf("Capacity = %v, want 4", got)
	}
	if got := Capacity(nil, nil); got != 0 {
		t.Errorf("Capacity of nothing = %v, want 0", got)
	}
}

func TestKeyString(t *testing.T) {
	keys := []string{"Id", "RelativeDepth"}
	item := map[string]types.AttributeValue{"Id": &types.AttributeValueMemberS{Value: "a"}, "RelativeDepth": &types.AttributeValueMemberN{Value: "2"}}
	if got, want := KeyString(item, keys...), `Id="a", RelativeDepth=2`; got != want {
		t.Errorf("KeyString = %s, want %s", got, want)
	}
	if got, want := KeyString(map[string]types.AttributeValue{"Id": &types.AttributeValueMemberB{Value: []byte{1, 255}}}, keys...), `Id=01ff, RelativeDepth missing`; got != want {
		t.Errorf("KeyString = %s, want %s", got, want)
	}
}
