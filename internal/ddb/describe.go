package ddb

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// DescribeAPI is the part of the DynamoDB client that a table's check
// uses; *dynamodb.Client satisfies it.
type DescribeAPI interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

var _ DescribeAPI = (*dynamodb.Client)(nil)

// ErrTableNotFound marks a table that does not exist.
var ErrTableNotFound = errors.New("ddb: table not found")

// DescribeError is the error of a DescribeTable of table name that failed:
// ErrTableNotFound, saying what to do, for a table that does not exist;
// otherwise a *ServiceError of package pkg.
func DescribeError(pkg, name string, err error) error {
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		return fmt.Errorf("%w: %q (check --table, --region and --endpoint-url)", ErrTableNotFound, name)
	}
	e := &ServiceError{Pkg: pkg, Op: "DescribeTable", Err: err}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		e.Code = apiErr.ErrorCode()
	}
	return e
}
