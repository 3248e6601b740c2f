package bulkjob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/ddbtable"
	"github.com/treeport/treeport/internal/s3io"
	"github.com/treeport/treeport/layouts"
)

// ImportAPI is the part of the DynamoDB client that starts and follows an
// import from S3; *dynamodb.Client satisfies it.
type ImportAPI interface {
	ImportTable(ctx context.Context, in *dynamodb.ImportTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ImportTableOutput, error)
	DescribeImport(ctx context.Context, in *dynamodb.DescribeImportInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeImportOutput, error)
}

var _ ImportAPI = (*dynamodb.Client)(nil)

// ErrImportFailed marks an ImportTable that ended FAILED or CANCELLED; the
// error is an *ImportError.
var ErrImportFailed = errors.New("bulkjob: DynamoDB import from S3 failed")

// ImportTableInput is the ImportTable request that creates the layout's table
// (keys and indexes as CreateTableInput makes them, on-demand or provisioned
// as billing says) from the gzip DynamoDB JSON under s3://bucket/prefix.
// token, when not empty, is the request's ClientToken: calls with the same
// token and request within 8 hours start one import. The request is checked
// with ValidateImportTableInput.
func ImportTableInput(table string, spec layouts.TableSpec, billing ddbtable.Billing, bucket, prefix, token string) (*dynamodb.ImportTableInput, error) {
	if billing.Warm() {
		return nil, errors.New("importer: ImportTable takes no WarmThroughput (its TableCreationParameters have none): warm the table after the import with UpdateTable, or create it warm and load it with --bulk-put")
	}
	create, err := ddbtable.CreateTableInput(table, spec, billing)
	if err != nil {
		return nil, err
	}
	in := &dynamodb.ImportTableInput{
		InputFormat:          types.InputFormatDynamodbJson,
		InputCompressionType: types.InputCompressionTypeGzip,
		S3BucketSource:       &types.S3BucketSource{S3Bucket: aws.String(bucket)},
		TableCreationParameters: &types.TableCreationParameters{
			TableName:              create.TableName,
			AttributeDefinitions:   create.AttributeDefinitions,
			KeySchema:              create.KeySchema,
			BillingMode:            create.BillingMode,
			ProvisionedThroughput:  create.ProvisionedThroughput,
			OnDemandThroughput:     create.OnDemandThroughput,
			GlobalSecondaryIndexes: create.GlobalSecondaryIndexes,
		},
	}
	if prefix != "" {
		in.S3BucketSource.S3KeyPrefix = aws.String(prefix)
	}
	if token != "" {
		in.ClientToken = aws.String(token)
	}
	if err := ValidateImportTableInput(in); err != nil {
		return nil, err
	}
	return in, nil
}

var (
	tableNameRE   = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)
	clientTokenRE = regexp.MustCompile(`^[^$]{1,36}$`)
)

// ValidateImportTableInput checks a request against the ImportTable API's
// shapes: the required members, the enum values, the table and index name
// rules, the key schema (a HASH key, then at most one RANGE key, each
// defined once as S, N or B), and that billing and throughput agree. It
// returns every problem found, joined.
func ValidateImportTableInput(in *dynamodb.ImportTableInput) error {
	if in == nil {
		return errors.New("importer: ImportTable: no request")
	}
	var probs []string
	bad := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	enum := func(member, v string, values []string, required bool) {
		if v == "" {
			if required {
				bad("%s is required", member)
			}
			return
		}
		if !slices.Contains(values, v) {
			bad("%s %q is not one of %s", member, v, strings.Join(values, ", "))
		}
	}
	enum("InputFormat", string(in.InputFormat), strs(types.InputFormat("").Values()), true)
	enum("InputCompressionType", string(in.InputCompressionType), strs(types.InputCompressionType("").Values()), false)
	if in.ClientToken != nil && !clientTokenRE.MatchString(*in.ClientToken) {
		bad("ClientToken %q: want 1 to 36 characters, no $", *in.ClientToken)
	}
	if in.InputFormatOptions != nil && in.InputFormat != types.InputFormatCsv {
		bad("InputFormatOptions apply to CSV input only")
	}
	if s := in.S3BucketSource; s == nil {
		bad("S3BucketSource is required")
	} else {
		if b := aws.ToString(s.S3Bucket); b == "" {
			bad("S3BucketSource.S3Bucket is required")
		} else if !s3io.ValidBucket(b) {
			bad("S3BucketSource.S3Bucket %q is not a valid bucket name", b)
		}
		if p := aws.ToString(s.S3KeyPrefix); len(p) > 1024 {
			bad("S3BucketSource.S3KeyPrefix is %d bytes, over 1024", len(p))
		}
	}
	t := in.TableCreationParameters
	if t == nil {
		bad("TableCreationParameters is required")
		return joinProblems(probs)
	}
	if name := aws.ToString(t.TableName); name == "" {
		bad("TableCreationParameters.TableName is required")
	} else if !tableNameRE.MatchString(name) {
		bad("TableName %q: want 3 to 255 letters, digits, _ . -", name)
	}
	defs := map[string]types.ScalarAttributeType{}
	for _, a := range t.AttributeDefinitions {
		name := aws.ToString(a.AttributeName)
		if name == "" {
			bad("an AttributeDefinition has no AttributeName")
			continue
		}
		if _, dup := defs[name]; dup {
			bad("attribute %q is defined twice", name)
		}
		defs[name] = a.AttributeType
		enum("AttributeType of "+name, string(a.AttributeType), strs(types.ScalarAttributeType("").Values()), true)
	}
	used := map[string]bool{}
	keys := func(where string, ks []types.KeySchemaElement) {
		if len(ks) < 1 || len(ks) > 2 {
			bad("%s: KeySchema has %d elements, want 1 or 2", where, len(ks))
			return
		}
		for i, k := range ks {
			name := aws.ToString(k.AttributeName)
			want := types.KeyTypeHash
			if i == 1 {
				want = types.KeyTypeRange
			}
			if k.KeyType != want {
				bad("%s: key %d (%s) is %q, want %s", where, i+1, name, k.KeyType, want)
			}
			if _, ok := defs[name]; !ok {
				bad("%s: key attribute %q has no AttributeDefinition", where, name)
			}
			used[name] = true
		}
	}
	if len(t.KeySchema) == 0 {
		bad("TableCreationParameters.KeySchema is required")
	} else {
		keys("table", t.KeySchema)
	}
	if len(t.GlobalSecondaryIndexes) > 20 {
		bad("%d global secondary indexes, over the limit of 20", len(t.GlobalSecondaryIndexes))
	}
	provisioned := t.BillingMode == types.BillingModeProvisioned
	enum("BillingMode", string(t.BillingMode), strs(types.BillingMode("").Values()), false)
	if provisioned != (t.ProvisionedThroughput != nil) {
		bad("BillingMode %q and ProvisionedThroughput disagree: PROVISIONED needs it, PAY_PER_REQUEST takes none", t.BillingMode)
	}
	if provisioned && t.OnDemandThroughput != nil {
		bad("OnDemandThroughput goes with PAY_PER_REQUEST, not PROVISIONED")
	}
	names := map[string]bool{}
	for _, ix := range t.GlobalSecondaryIndexes {
		name := aws.ToString(ix.IndexName)
		where := "index " + name
		if !tableNameRE.MatchString(name) {
			bad("IndexName %q: want 3 to 255 letters, digits, _ . -", name)
		}
		if names[name] {
			bad("index %q is defined twice", name)
		}
		names[name] = true
		keys(where, ix.KeySchema)
		if ix.Projection == nil {
			bad("%s: Projection is required", where)
		} else {
			enum(where+": ProjectionType", string(ix.Projection.ProjectionType), strs(types.ProjectionType("").Values()), true)
		}
		if provisioned != (ix.ProvisionedThroughput != nil) {
			bad("%s: BillingMode %q and ProvisionedThroughput disagree", where, t.BillingMode)
		}
		if provisioned && ix.OnDemandThroughput != nil {
			bad("%s: OnDemandThroughput goes with PAY_PER_REQUEST, not PROVISIONED", where)
		}
	}
	for name := range defs {
		if !used[name] {
			bad("attribute %q is defined but is no key of the table or of an index", name)
		}
	}
	return joinProblems(probs)
}

func joinProblems(probs []string) error {
	if len(probs) == 0 {
		return nil
	}
	slices.Sort(probs)
	return fmt.Errorf("importer: the ImportTable request is not valid: %s", strings.Join(probs, "; "))
}

func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// ImportStatus is where an import from S3 stands, from DescribeImport.
type ImportStatus struct {
	ARN    string
	Table  string
	Status types.ImportStatus
	// ProcessedItems and ProcessedBytes are what was read from S3 so far;
	// ImportedItems is what was written to the table. Items that could not be
	// imported (a line that is not DynamoDB JSON, an item without its keys)
	// are counted in Errors and described in the CloudWatch log group LogGroup.
	ProcessedItems int64
	ProcessedBytes int64
	ImportedItems  int64
	Errors         int64
	LogGroup       string
	FailureCode    string
	FailureMessage string
	Started, Ended time.Time
}

// Done reports whether the import has ended, well or not.
func (s ImportStatus) Done() bool {
	switch s.Status {
	case types.ImportStatusCompleted, types.ImportStatusFailed, types.ImportStatusCancelled:
		return true
	}
	return false
}

func importStatus(d *types.ImportTableDescription) ImportStatus {
	s := ImportStatus{
		ARN:            aws.ToString(d.ImportArn),
		Status:         d.ImportStatus,
		ProcessedItems: d.ProcessedItemCount,
		ProcessedBytes: aws.ToInt64(d.ProcessedSizeBytes),
		ImportedItems:  d.ImportedItemCount,
		Errors:         d.ErrorCount,
		LogGroup:       aws.ToString(d.CloudWatchLogGroupArn),
		FailureCode:    aws.ToString(d.FailureCode),
		FailureMessage: aws.ToString(d.FailureMessage),
		Started:        aws.ToTime(d.StartTime),
		Ended:          aws.ToTime(d.EndTime),
	}
	if p := d.TableCreationParameters; p != nil {
		s.Table = aws.ToString(p.TableName)
	}
	return s
}

// ImportError is an import that ended FAILED or CANCELLED. It matches
// ErrImportFailed.
type ImportError struct {
	Status ImportStatus
}

func (e *ImportError) Error() string {
	s := e.Status
	var b strings.Builder
	fmt.Fprintf(&b, "bulkjob: DynamoDB import %s into table %s ended %s", s.ARN, s.Table, s.Status)
	if s.FailureCode != "" || s.FailureMessage != "" {
		fmt.Fprintf(&b, ": %s %s", s.FailureCode, s.FailureMessage)
	}
	fmt.Fprintf(&b, " (%d items processed, %d imported, %d errors)", s.ProcessedItems, s.ImportedItems, s.Errors)
	if s.LogGroup != "" {
		fmt.Fprintf(&b, "; the errors are logged in CloudWatch log group %s", s.LogGroup)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrImportFailed) true.
func (e *ImportError) Is(target error) bool { return target == ErrImportFailed }

// StartImport calls ImportTable and returns the import's first status. An
// import with the same ClientToken that DynamoDB already runs is returned as
// it stands, so that every shard of a job may call it.
func StartImport(ctx context.Context, api ImportAPI, in *dynamodb.ImportTableInput) (ImportStatus, error) {
	if err := ValidateImportTableInput(in); err != nil {
		return ImportStatus{}, err
	}
	out, err := api.ImportTable(ctx, in)
	if err != nil {
		var inUse *types.ResourceInUseException
		if errors.As(err, &inUse) {
			return ImportStatus{}, fmt.Errorf("%w (table %s exists already: ImportTable creates a new table; choose another name, or delete it)",
				serviceError("ImportTable", err), aws.ToString(in.TableCreationParameters.TableName))
		}
		return ImportStatus{}, serviceError("ImportTable", err)
	}
	if out.ImportTableDescription == nil || out.ImportTableDescription.ImportArn == nil {
		return ImportStatus{}, &ddb.ServiceError{Pkg: "importer", Op: "ImportTable", Err: errors.New("the response has no import ARN")}
	}
	return importStatus(out.ImportTableDescription), nil
}

// FollowOptions configure FollowImport.
type FollowOptions struct {
	// Poll is the pause between two DescribeImport calls (default 15 s;
	// the first pauses are shorter). An import takes minutes at least.
	Poll time.Duration
	// OnStatus, when set, is called with every status read, the last one
	// included.
	OnStatus func(ImportStatus)
	// MaxFailures is how many DescribeImport calls in a row may fail before
	// FollowImport gives up (default 5). The import goes on regardless.
	MaxFailures int
}

// FollowImport polls DescribeImport until the import ends or ctx does. It
// returns the last status, with an *ImportError when the import ended FAILED
// or CANCELLED. A COMPLETED import with Errors > 0 is no error here: the
// caller reports the count and the log group. When ctx ends first, the
// import goes on in DynamoDB and the error says how to follow it.
func FollowImport(ctx context.Context, api ImportAPI, arn string, opts FollowOptions) (ImportStatus, error) {
	return follow(ctx, opts.Poll, opts.MaxFailures, job[ImportStatus]{
		what: "import", op: "DescribeImport", arn: arn,
		howTo: "aws dynamodb describe-import --import-arn " + arn,
		describe: func(ctx context.Context) (*ImportStatus, error) {
			out, err := api.DescribeImport(ctx, &dynamodb.DescribeImportInput{ImportArn: aws.String(arn)})
			if err != nil || out.ImportTableDescription == nil {
				return nil, err
			}
			s := importStatus(out.ImportTableDescription)
			if s.ARN == "" {
				s.ARN = arn
			}
			return &s, nil
		},
		done:     ImportStatus.Done,
		onStatus: opts.OnStatus,
		failed: func(s ImportStatus) error {
			if s.Status != types.ImportStatusCompleted {
				return &ImportError{Status: s}
			}
			return nil
		},
	})
}

// job is how follow polls one asynchronous DynamoDB job (an import from
// S3, a bulk put): describe returns nil, nil when the answer held no
// description.
type job[S any] struct {
	what, op, arn, howTo string
	describe             func(context.Context) (*S, error)
	done                 func(S) bool
	failed               func(S) error
	onStatus             func(S)
}

// follow polls j until it ends or ctx does, pausing poll (default 15 s,
// the first pauses shorter) between calls; maxFailures calls in a row may
// fail (default 5) before it gives up, the job going on regardless.
func follow[S any](ctx context.Context, poll time.Duration, maxFailures int, j job[S]) (S, error) {
	if poll <= 0 {
		poll = 15 * time.Second
	}
	if maxFailures <= 0 {
		maxFailures = 5
	}
	stopped := func(last S) (S, error) {
		return last, fmt.Errorf("importer: stopped following %s %s; it goes on in DynamoDB (%s): %w", j.what, j.arn, j.howTo, ctx.Err())
	}
	pause := min(poll, time.Second)
	fails := 0
	var last S
	for {
		s, err := j.describe(ctx)
		switch {
		case ctx.Err() != nil:
			return stopped(last)
		case err != nil:
			fails++
			if fails >= maxFailures {
				return last, fmt.Errorf("%w; the %s may still be running (%s)", serviceError(j.op, err), j.what, j.howTo)
			}
		case s == nil:
			fails++
			if fails >= maxFailures {
				return last, &ddb.ServiceError{Pkg: "importer", Op: j.op, Err: fmt.Errorf("no description of %s %s", j.what, j.arn)}
			}
		default:
			fails = 0
			last = *s
			if j.onStatus != nil {
				j.onStatus(last)
			}
			if j.done(last) {
				return last, j.failed(last)
			}
		}
		select {
		case <-ctx.Done():
			return stopped(last)
		case <-time.After(pause):
		}
		pause = min(2*pause, poll)
	}
}

// ImportTableJSON is an ImportTable request (the API's field names, as
// `aws dynamodb import-table --cli-input-json` takes it) for the layout's
// table, with billing's capacity, reading gzip DynamoDB JSON from
// s3://bucket/prefix. ImportTable takes no WarmThroughput: a warm
// throughput billing asks for is left out (create-table.json keeps it).
func ImportTableJSON(table string, spec layouts.TableSpec, billing ddbtable.Billing, bucket, prefix string) ([]byte, error) {
	billing.WarmRCU, billing.WarmWCU = 0, 0
	create, err := ddbtable.SchemaJSON(table, spec, billing)
	if err != nil {
		return nil, err
	}
	var params map[string]any
	if err := json.Unmarshal(create, &params); err != nil {
		return nil, err
	}
	// TableCreationParameters takes a subset of CreateTable's fields.
	allowed := map[string]bool{"TableName": true, "AttributeDefinitions": true, "KeySchema": true, "BillingMode": true,
		"ProvisionedThroughput": true, "GlobalSecondaryIndexes": true, "SSESpecification": true, "OnDemandThroughput": true}
	for k := range params {
		if !allowed[k] {
			delete(params, k)
		}
	}
	req := map[string]any{
		"S3BucketSource":          map[string]any{"S3Bucket": bucket, "S3KeyPrefix": prefix},
		"InputFormat":             "DYNAMODB_JSON",
		"InputCompressionType":    "GZIP",
		"TableCreationParameters": params,
	}
	b, err := json.MarshalIndent(req, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("bulkjob: import-table.json: %w", err)
	}
	return append(b, '\n'), nil
}
