// Package awserr sorts the errors of DynamoDB calls by what the caller
// should do with them: retry more slowly, retry, split the request, or give
// up. The writer and the readers share it, so that they agree on what a
// throttle is.
package awserr

import (
	"context"
	"errors"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Kind is what to do about an error.
type Kind int

// The kinds of errors.
const (
	Other      Kind = iota // not retryable
	Throttle               // the service asks to slow down
	Server                 // 5xx
	Net                    // the connection failed
	Validation             // the request is invalid
)

var throttleCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"Throttling":                             true,
	"RequestLimitExceeded":                   true,
	"TooManyRequestsException":               true,
	"LimitExceededException":                 true,
}

// Classify sorts an error of a DynamoDB call by what the caller should do,
// and returns the service's error code if there is one.
func Classify(err error) (Kind, string) {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code := apiErr.ErrorCode()
		var re *smithyhttp.ResponseError
		status := 0
		if errors.As(err, &re) {
			status = re.HTTPStatusCode()
		}
		switch {
		case throttleCodes[code]:
			return Throttle, code
		case code == "ValidationException" || code == "ItemCollectionSizeLimitExceededException":
			return Validation, code
		case status >= 500 || code == "InternalServerError" || code == "ServiceUnavailable" ||
			code == "InternalFailure" || code == "TransactionConflictException" || code == "RequestTimeout":
			return Server, code
		}
		return Other, code
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() >= 500 {
		return Server, ""
	}
	var send *smithyhttp.RequestSendError
	var deser *smithy.DeserializationError
	switch {
	case errors.As(err, &send), errors.As(err, &deser),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, io.ErrUnexpectedEOF),
		retry.RetryableConnectionError{}.IsErrorRetryable(err) == aws.TrueTernary:
		return Net, ""
	}
	return Other, ""
}
