package ddb

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/treeport/treeport/internal/ddblocal"
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
