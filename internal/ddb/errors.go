package ddb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// ErrService marks a failure of DynamoDB, or of the way to it, that
// retrying did not cure (access denied, no such table, retries exhausted).
// Every *ServiceError matches it, and the CLI maps it to exit code 3. Its
// text names no package: the package that reports a failure puts its own
// name first ("importer: DynamoDB service failure: ...").
var ErrService = errors.New("DynamoDB service failure")

// ServiceError is a DynamoDB failure with the operation and the service's
// error code. It matches ErrService and unwraps to the SDK's error.
type ServiceError struct {
	// Pkg is the package that made the call, "importer" or "exporter". The
	// message does not say it: a user is told what failed and what to do,
	// not where in treeport.
	Pkg string
	// Op is the operation: "BatchWriteItem", "DescribeTable", "Scan",
	// "Query", "GetItem", "BatchGetItem", ...
	Op       string
	Code     string // the service's error code; "" for a transport error
	Attempts int    // > 0 when the error was retryable and retries ran out
	Err      error
}

func (e *ServiceError) Error() string {
	hint := ""
	switch e.Code {
	case "AccessDeniedException", "UnrecognizedClientException", "MissingAuthenticationTokenException",
		"InvalidSignatureException", "ExpiredTokenException":
		hint = "; check the credentials (--profile, AWS_PROFILE, AWS_ACCESS_KEY_ID) and their permissions"
	case "ResourceNotFoundException":
		hint = "; check --table and --region (or --endpoint-url)"
	case "ValidationException":
		if e.read() {
			hint = "; check that the table has the keys and indexes of --layout (and its --attr renames): treeport schema prints them"
		}
	}
	if e.Attempts > 0 {
		hint += fmt.Sprintf(" (gave up after %d attempts; lower --max-rcu or --segments, or raise the table's capacity)", e.Attempts)
	}
	return fmt.Sprintf("DynamoDB %s failed: %s%s", e.Op, CauseText(e.Err), hint)
}

// CauseText is the service's own code and message of an API error
// ("ResourceNotFoundException: Cannot do operations on a non-existent
// table"), without the SDK's wrapping of it (operation, status code,
// request id); other errors as they are.
func CauseText(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode() != "" {
		if msg := apiErr.ErrorMessage(); msg != "" {
			return apiErr.ErrorCode() + ": " + msg
		}
		return apiErr.ErrorCode()
	}
	return err.Error()
}

// read reports whether the operation reads a table, whose invalid request
// means that the table and the layout do not match.
func (e *ServiceError) read() bool {
	switch e.Op {
	case "Scan", "Query", "GetItem", "BatchGetItem":
		return true
	}
	return false
}

// Unwrap returns the SDK's error.
func (e *ServiceError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrService) true.
func (e *ServiceError) Is(target error) bool { return target == ErrService }

// Kind is what to do about an error of a DynamoDB call.
type Kind int

// The kinds of errors.
const (
	Other      Kind = iota // not retryable
	Throttle               // the service asks to slow down
	Server                 // 5xx
	Net                    // the connection failed
	Validation             // the request is invalid
)

// Retryable reports whether a call that failed so may succeed when sent
// again: a throttle, a 5xx or a network failure.
func (k Kind) Retryable() bool { return k == Throttle || k == Server || k == Net }

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

// NoSDKRetry makes the SDK try one call once. The writer and the readers
// retry on their own, only what was not done, and their pacers must see
// every throttle to slow down.
func NoSDKRetry(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }

// Backoff bounds a full-jitter exponential backoff between retries.
type Backoff struct {
	Base, Max time.Duration
}

// Sleep waits a random time up to Base·2^n, at most Max (and at least a
// millisecond). It returns ctx.Err() if ctx ends first.
func (b Backoff) Sleep(ctx context.Context, n int) error {
	return wait(ctx, b.Delay(n))
}

// Delay is a time Sleep would wait: random, up to Base·2^n, at most Max,
// at least a millisecond.
func (b Backoff) Delay(n int) time.Duration {
	ceil := b.Max
	if n < 30 {
		if d := b.Base << n; d > 0 && d < ceil {
			ceil = d
		}
	}
	return rand.N(ceil) + time.Millisecond
}

// wait blocks for d, or until ctx ends, which returns ctx.Err().
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Capacity adds up the capacity units a response reported as consumed: a
// call's one ConsumedCapacity, or a batch call's list of them.
func Capacity(cc *types.ConsumedCapacity, ccs []types.ConsumedCapacity) float64 {
	total := 0.0
	if cc != nil && cc.CapacityUnits != nil {
		total += *cc.CapacityUnits
	}
	for _, c := range ccs {
		if c.CapacityUnits != nil {
			total += *c.CapacityUnits
		}
	}
	return total
}

// KeyString renders an item's key for messages: Id="a", RelativeDepth=2.
// names are the key's attribute names, the partition key's first (a
// layout's TableSpec.KeyNames).
func KeyString(item map[string]types.AttributeValue, names ...string) string {
	part := func(name string) string {
		switch v := item[name].(type) {
		case *types.AttributeValueMemberS:
			return fmt.Sprintf("%s=%q", name, v.Value)
		case *types.AttributeValueMemberN:
			return fmt.Sprintf("%s=%s", name, v.Value)
		case *types.AttributeValueMemberB:
			return fmt.Sprintf("%s=%x", name, v.Value)
		case nil:
			return name + " missing"
		default:
			return fmt.Sprintf("%s of type %T", name, v)
		}
	}
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = part(name)
	}
	return strings.Join(parts, ", ")
}

// ThrottleReason is one of the reasons a throttling error gives (DynamoDB's
// ThrottlingReasons): what was throttled and why.
type ThrottleReason struct {
	// Reason is DynamoDB's string: resource (Table, Index), operation
	// (Read, Write) and limit (ProvisionedThroughputExceeded,
	// AccountLimitExceeded, KeyRangeThroughputExceeded,
	// MaxOnDemandThroughputExceeded), as in
	// IndexWriteKeyRangeThroughputExceeded.
	Reason string
	// Index is the index the resource ARN names, "" for the table.
	Index string
}

// KeyRange reports whether the reason is one partition key value over its
// partition's limit, not the table's or index's capacity: slowing the
// writes of that key is the cure, not slowing every write.
func (r ThrottleReason) KeyRange() bool {
	return strings.HasSuffix(r.Reason, "KeyRangeThroughputExceeded")
}

// ThrottleReasons returns the reasons a throttling error gives, or nil when
// it gives none (an older service, DynamoDB Local, or no throttle at all).
func ThrottleReasons(err error) []ThrottleReason {
	var list []types.ThrottlingReason
	var pt *types.ProvisionedThroughputExceededException
	var th *types.ThrottlingException
	var rl *types.RequestLimitExceeded
	switch {
	case errors.As(err, &pt):
		list = pt.ThrottlingReasons
	case errors.As(err, &th):
		list = th.ThrottlingReasons
	case errors.As(err, &rl):
		list = rl.ThrottlingReasons
	}
	var out []ThrottleReason
	for _, r := range list {
		out = append(out, ThrottleReason{Reason: aws.ToString(r.Reason), Index: indexOfARN(aws.ToString(r.Resource))})
	}
	return out
}

// indexOfARN is the index an ARN names
// (arn:aws:dynamodb:REGION:ACCOUNT:table/T/index/I), or "".
func indexOfARN(arn string) string {
	if i := strings.Index(arn, "/index/"); i >= 0 {
		return arn[i+len("/index/"):]
	}
	return ""
}
