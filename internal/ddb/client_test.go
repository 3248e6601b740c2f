package ddb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/logging"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
)

func TestNewClientReachesEngine(t *testing.T) {
	ep := ddblocal.Endpoint(t)
	ctx := context.Background()
	c, err := NewClient(ctx, AWSOptions{EndpointURL: ep, Region: "us-east-1", MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTables(ctx, &dynamodb.ListTablesInput{Limit: aws.Int32(1)}); err != nil {
		t.Fatalf("ListTables through NewClient: %v", err)
	}
}

func TestIsLoopback(t *testing.T) {
	for ep, want := range map[string]bool{
		"http://localhost:8000": true, "http://127.0.0.1:8000": true, "http://[::1]:8000": true,
		"": false, "https://dynamodb.us-east-1.amazonaws.com": false, "http://10.0.0.5:8000": false,
	} {
		if got := isLoopback(ep); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", ep, got, want)
		}
	}
}

// TestErrorAnswersLogNoChecksumWarning: DynamoDB Local answers an error
// (here a missing table) without an X-Amz-Crc32 header, which the SDK took
// for a checksum of 0 and logged "failed to close HTTP response body" for
// every such answer. The client's answers log nothing, and the error is
// still the service's.
func TestErrorAnswersLogNoChecksumWarning(t *testing.T) {
	ep := ddblocal.Endpoint(t)
	ctx := context.Background()
	c, err := NewClient(ctx, AWSOptions{EndpointURL: ep, Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	logger := logging.LoggerFunc(func(cl logging.Classification, format string, v ...any) {
		fmt.Fprintf(&logged, "%s "+format+"\n", append([]any{cl}, v...)...)
	})
	for range 3 {
		_, err = c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("no-such-table-here")}, func(o *dynamodb.Options) { o.Logger = logger })
		var nf *types.ResourceNotFoundException
		if !errors.As(err, &nf) {
			t.Fatalf("DescribeTable of a missing table: %v, want ResourceNotFoundException", err)
		}
	}
	if logged.Len() > 0 {
		t.Fatalf("the SDK logged:\n%s", logged.String())
	}
}
