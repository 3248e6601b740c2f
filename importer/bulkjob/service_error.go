package bulkjob

import (
	"errors"

	"github.com/aws/smithy-go"

	"github.com/treeport/treeport/internal/ddb"
)

// serviceError is a failed call to DynamoDB, with the API's error code.
func serviceError(op string, err error) error {
	e := &ddb.ServiceError{Pkg: "bulkjob", Op: op, Err: err}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		e.Code = apiErr.ErrorCode()
	}
	return e
}
