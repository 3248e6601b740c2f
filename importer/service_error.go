package importer

import (
	"errors"

	"github.com/aws/smithy-go"

	"github.com/treeport/treeport/internal/ddb"
)

func describeError(name string, err error) error { return ddb.DescribeError("importer", name, err) }

func serviceError(op string, err error) error {
	e := &ddb.ServiceError{Pkg: "importer", Op: op, Err: err}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		e.Code = apiErr.ErrorCode()
	}
	return e
}
