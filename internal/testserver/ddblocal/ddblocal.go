// Package ddblocal connects tests to DynamoDB Local, the real engine that
// treeport's integration tests run against.
//
// Start one with scripts/ddblocal.sh and export its endpoint:
//
//	scripts/ddblocal.sh start && eval "$(scripts/ddblocal.sh env)"
//
// Without TREEPORT_TEST_ENDPOINT the tests that need the engine skip, except
// under CI (CI=true), where a missing engine is a failure.
package ddblocal

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
)

// EnvEndpoint names the environment variable holding DynamoDB Local's URL.
const EnvEndpoint = "TREEPORT_TEST_ENDPOINT"

// Endpoint returns DynamoDB Local's URL from TREEPORT_TEST_ENDPOINT. When it
// is not set, the test fails under CI (CI=true) and is skipped otherwise.
func Endpoint(t testing.TB) string {
	t.Helper()
	if ep := strings.TrimSpace(os.Getenv(EnvEndpoint)); ep != "" {
		return ep
	}
	msg := EnvEndpoint + " is not set; start DynamoDB Local with " +
		`scripts/ddblocal.sh start && eval "$(scripts/ddblocal.sh env)"`
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (under CI a missing engine is a failure, not a skip)")
		return ""
	}
	t.Skip(msg)
	return ""
}

// Client returns a DynamoDB client for endpoint with static dummy credentials
// and region us-east-1, which is all DynamoDB Local needs.
func Client(t testing.TB, endpoint string) *dynamodb.Client {
	t.Helper()
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("treeport", "treeport", ""),
	})
}

var tableSeq atomic.Int64

// TableName returns a table name no other test of this process or of another
// run uses, for a test that creates its own table.
func TableName(t testing.TB) string {
	t.Helper()
	name := strings.NewReplacer("/", "-", " ", "-", "#", "-").Replace(t.Name())
	if len(name) > 150 {
		name = name[:150]
	}
	var keep strings.Builder
	for _, r := range name {
		if r == '-' || r == '_' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			keep.WriteRune(r)
		}
	}
	return fmt.Sprintf("t-%s-%d-%d-%d", keep.String(), os.Getpid(), time.Now().UnixNano()%1e9, tableSeq.Add(1))
}

// NewTable creates an on-demand table with spec's keys and indexes (all
// attributes projected), waits until it is active and deletes it when the test
// ends. It returns the table's name, unique to this test.
func NewTable(t testing.TB, client *dynamodb.Client, spec layouts.TableSpec) string {
	t.Helper()
	name := TableName(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.CreateTable(ctx, CreateTableInput(name, spec)); err != nil {
		t.Fatalf("create table %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
			t.Errorf("delete table %s: %v", name, err)
		}
	})
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 50*time.Millisecond, 500*time.Millisecond
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 30*time.Second); err != nil {
		t.Fatalf("table %s did not become active: %v", name, err)
	}
	return name
}

// CreateTableInput is an on-demand CreateTable request for spec. It is kept
// independent of the importer's own CreateTable so that tests of the latter
// have something to compare with.
func CreateTableInput(name string, spec layouts.TableSpec) *dynamodb.CreateTableInput {
	defs := map[string]types.ScalarAttributeType{}
	var order []string
	def := func(k layouts.KeyAttr) {
		if _, ok := defs[k.Name]; !ok {
			order = append(order, k.Name)
		}
		defs[k.Name] = k.Type
	}
	keys := func(pk layouts.KeyAttr, sk *layouts.KeyAttr) []types.KeySchemaElement {
		def(pk)
		ks := []types.KeySchemaElement{{AttributeName: aws.String(pk.Name), KeyType: types.KeyTypeHash}}
		if sk != nil {
			def(*sk)
			ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(sk.Name), KeyType: types.KeyTypeRange})
		}
		return ks
	}
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		KeySchema:   keys(spec.PK, spec.SK),
	}
	for _, ix := range spec.Indexes {
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
			IndexName:  aws.String(ix.Name),
			KeySchema:  keys(ix.PK, ix.SK),
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		})
	}
	for _, n := range order {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{
			AttributeName: aws.String(n), AttributeType: defs[n],
		})
	}
	return in
}
