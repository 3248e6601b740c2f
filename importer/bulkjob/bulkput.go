package bulkjob

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/s3io"
)

// BulkPutAPI is the part of the DynamoDB client that starts and follows a
// bulk put from S3 into an existing table; *dynamodb.Client satisfies it.
type BulkPutAPI interface {
	StartBulkPutItems(ctx context.Context, in *dynamodb.StartBulkPutItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.StartBulkPutItemsOutput, error)
	DescribeBulkOperation(ctx context.Context, in *dynamodb.DescribeBulkOperationInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeBulkOperationOutput, error)
}

var _ BulkPutAPI = (*dynamodb.Client)(nil)

// MinBulkPutWCU is the smallest MaxWriteRequestUnits StartBulkPutItems
// accepts: a bulk put capped lower is refused by DynamoDB.
const MinBulkPutWCU = 1024

// ErrBulkPutFailed marks a bulk put that ended FAILED or CANCELLED; the
// error is a *BulkPutError.
var ErrBulkPutFailed = errors.New("bulkjob: DynamoDB bulk put from S3 failed")

// ReportDir is the folder, next to data/, where DynamoDB writes a bulk
// put's report of the items it could not write.
const ReportDir = "bulk-put-report/"

// BulkPutInput is the StartBulkPutItems request that writes the gzip
// DynamoDB JSON under s3://bucket/dataPrefix into the existing table, and
// reports the items it cannot write (OutputType ERROR) under
// s3://bucket/reportPrefix. maxWCU, when above 0, is MaxWriteRequestUnits
// (at least MinBulkPutWCU); token, when not empty, is the ClientToken: the
// calls with one token and one request within 8 hours start one bulk put.
// The request is checked with ValidateBulkPutInput.
func BulkPutInput(table, bucket, dataPrefix, reportPrefix, token string, maxWCU int64) (*dynamodb.StartBulkPutItemsInput, error) {
	in := &dynamodb.StartBulkPutItemsInput{
		TableName: aws.String(table),
		InputS3Configuration: &types.InputS3Configuration{
			InputFormat:          types.BulkOperationInputFormatDynamodbJson,
			InputCompressionType: types.InputCompressionTypeGzip,
			S3Bucket:             aws.String(bucket),
		},
		OutputS3Configuration: &types.OutputS3Configuration{
			OutputType: []types.OutputTypeEnum{types.OutputTypeEnumError},
			S3Bucket:   aws.String(bucket),
		},
	}
	if dataPrefix != "" {
		in.InputS3Configuration.S3KeyPrefix = aws.String(dataPrefix)
	}
	if reportPrefix != "" {
		in.OutputS3Configuration.S3KeyPrefix = aws.String(reportPrefix)
	}
	if maxWCU > 0 {
		in.MaxWriteRequestUnits = aws.Int64(maxWCU)
	}
	if token != "" {
		in.ClientToken = aws.String(token)
	}
	if err := ValidateBulkPutInput(in); err != nil {
		return nil, err
	}
	return in, nil
}

var (
	bulkTokenRE  = regexp.MustCompile(`^[^$]+$`)
	outBucketRE  = regexp.MustCompile(`^[a-z0-9A-Z]+[.\-\w]*[a-z0-9A-Z]+$`)
	bucketOwner  = regexp.MustCompile(`^[0-9]{12}$`)
	bulkFormats  = strs(types.BulkOperationInputFormat("").Values())
	compressions = strs(types.InputCompressionType("").Values())
	outputTypes  = strs(types.OutputTypeEnum("").Values())
	perfTiers    = strs(types.BulkOperationPerformanceTier("").Values())
	sseAlgs      = strs(types.S3SseAlgorithm("").Values())
)

// ValidateBulkPutInput checks a request against the StartBulkPutItems API's
// documented shapes beyond what the SDK checks itself (the required
// members): the enum values, the bucket names, the table name's length, the
// token's pattern, MaxWriteRequestUnits at least MinBulkPutWCU, and that
// the report does not go under the input prefix (DynamoDB would read it
// back as input on a later run). It returns every problem found, joined.
func ValidateBulkPutInput(in *dynamodb.StartBulkPutItemsInput) error {
	if in == nil {
		return errors.New("importer: StartBulkPutItems: no request")
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
	if t := aws.ToString(in.TableName); t == "" || len(t) > 1024 {
		bad("TableName: want 1 to 1024 characters, got %d", len(t))
	}
	if in.ClientToken != nil && !bulkTokenRE.MatchString(*in.ClientToken) {
		bad("ClientToken %q: want 1 or more characters, no $", *in.ClientToken)
	}
	if n := in.MaxWriteRequestUnits; n != nil && *n < MinBulkPutWCU {
		bad("MaxWriteRequestUnits %d is below the minimum of %d", *n, MinBulkPutWCU)
	}
	enum("PerformanceTier", string(in.PerformanceTier), perfTiers, false)
	var inPrefix string
	if s := in.InputS3Configuration; s == nil {
		bad("InputS3Configuration is required")
	} else {
		enum("InputS3Configuration.InputFormat", string(s.InputFormat), bulkFormats, true)
		enum("InputS3Configuration.InputCompressionType", string(s.InputCompressionType), compressions, false)
		if b := aws.ToString(s.S3Bucket); b == "" {
			bad("InputS3Configuration.S3Bucket is required")
		} else if !s3io.ValidBucket(b) {
			bad("InputS3Configuration.S3Bucket %q is not a valid bucket name", b)
		}
		if o := s.S3BucketOwner; o != nil && !bucketOwner.MatchString(*o) {
			bad("InputS3Configuration.S3BucketOwner %q: want a 12-digit account id", *o)
		}
		inPrefix = aws.ToString(s.S3KeyPrefix)
		if len(inPrefix) > 1024 {
			bad("InputS3Configuration.S3KeyPrefix is %d bytes, over 1024", len(inPrefix))
		}
	}
	if o := in.OutputS3Configuration; o == nil {
		bad("OutputS3Configuration is required")
	} else {
		if len(o.OutputType) == 0 {
			bad("OutputS3Configuration.OutputType is required")
		}
		for _, t := range o.OutputType {
			enum("OutputS3Configuration.OutputType", string(t), outputTypes, true)
		}
		if b := aws.ToString(o.S3Bucket); len(b) > 255 || (b != "" && !outBucketRE.MatchString(b)) {
			bad("OutputS3Configuration.S3Bucket %q is not a valid bucket name", b)
		}
		if ow := o.S3BucketOwner; ow != nil && !bucketOwner.MatchString(*ow) {
			bad("OutputS3Configuration.S3BucketOwner %q: want a 12-digit account id", *ow)
		}
		enum("OutputS3Configuration.S3SseAlgorithm", string(o.S3SseAlgorithm), sseAlgs, false)
		if o.S3SseKmsKeyId != nil && o.S3SseAlgorithm != types.S3SseAlgorithmKms {
			bad("OutputS3Configuration.S3SseKmsKeyId goes with S3SseAlgorithm KMS only")
		}
		if in.InputS3Configuration != nil && aws.ToString(o.S3Bucket) == aws.ToString(in.InputS3Configuration.S3Bucket) &&
			strings.HasPrefix(aws.ToString(o.S3KeyPrefix), inPrefix) {
			bad("OutputS3Configuration.S3KeyPrefix %q is under the input prefix %q: the report would be read as input", aws.ToString(o.S3KeyPrefix), inPrefix)
		}
	}
	if len(probs) == 0 {
		return nil
	}
	return fmt.Errorf("importer: the StartBulkPutItems request is not valid: %s", strings.Join(probs, "; "))
}

// BulkPutStatus is where a bulk put stands, from DescribeBulkOperation.
type BulkPutStatus struct {
	ARN    string
	Table  string
	Status types.BulkOperationStatus
	// ProcessedItems counts the items read so far, the failed ones
	// included; FailedItems those DynamoDB could not write (a line that
	// is not DynamoDB JSON, an item without its keys or over a limit),
	// described in the report under ReportPrefix.
	ProcessedItems int64
	FailedItems    int64
	ProcessedBytes int64
	TotalBytes     int64 // 0 until DynamoDB has sized the input
	MaxWCU         int64
	ReportBucket   string
	ReportPrefix   string
	FailureCode    string
	FailureMessage string
	Started, Ended time.Time
}

// Done reports whether the bulk put has ended, well or not.
func (s BulkPutStatus) Done() bool {
	switch s.Status {
	case types.BulkOperationStatusCompleted, types.BulkOperationStatusCompletedWithErrors,
		types.BulkOperationStatusFailed, types.BulkOperationStatusCancelled:
		return true
	}
	return false
}

// Written is how many items were written: processed, less the failed.
func (s BulkPutStatus) Written() int64 { return s.ProcessedItems - s.FailedItems }

func bulkPutStatus(d *types.BulkOperationDescription) BulkPutStatus {
	s := BulkPutStatus{
		ARN:            aws.ToString(d.BulkOperationArn),
		Status:         d.BulkOperationStatus,
		ProcessedItems: d.ProcessedItemCount,
		FailedItems:    d.FailedItemCount,
		ProcessedBytes: aws.ToInt64(d.ProcessedInputBytes),
		TotalBytes:     aws.ToInt64(d.TotalInputBytes),
		MaxWCU:         aws.ToInt64(d.MaxWriteRequestUnits),
		FailureCode:    aws.ToString(d.FailureCode),
		FailureMessage: aws.ToString(d.FailureMessage),
		Started:        aws.ToTime(d.StartTime),
		Ended:          aws.ToTime(d.EndTime),
	}
	for _, t := range d.TableDetails {
		if n := aws.ToString(t.TableName); n != "" {
			s.Table = n
			break
		}
	}
	if o := d.OutputS3Configuration; o != nil {
		s.ReportBucket, s.ReportPrefix = aws.ToString(o.S3Bucket), aws.ToString(o.S3KeyPrefix)
	}
	return s
}

// BulkPutError is a bulk put that ended FAILED or CANCELLED. It matches
// ErrBulkPutFailed.
type BulkPutError struct {
	Status BulkPutStatus
}

func (e *BulkPutError) Error() string {
	s := e.Status
	var b strings.Builder
	fmt.Fprintf(&b, "bulkjob: DynamoDB bulk put %s into table %s ended %s", s.ARN, s.Table, s.Status)
	if s.FailureCode != "" || s.FailureMessage != "" {
		fmt.Fprintf(&b, ": %s %s", s.FailureCode, s.FailureMessage)
	}
	fmt.Fprintf(&b, " (%d items processed, %d failed; the items written before it ended stay in the table)", s.ProcessedItems, s.FailedItems)
	if s.ReportBucket != "" {
		fmt.Fprintf(&b, "; the items it could not write are reported in %s", s3io.ObjectURL(s.ReportBucket, s.ReportPrefix))
	}
	return b.String()
}

// Is makes errors.Is(err, ErrBulkPutFailed) true.
func (e *BulkPutError) Is(target error) bool { return target == ErrBulkPutFailed }

// StartBulkPut calls StartBulkPutItems and returns the bulk put's first
// status. A call with the ClientToken of a bulk put DynamoDB already runs
// (another shard of the job, or a rerun) returns that one, as it stands.
func StartBulkPut(ctx context.Context, api BulkPutAPI, in *dynamodb.StartBulkPutItemsInput) (BulkPutStatus, error) {
	if err := ValidateBulkPutInput(in); err != nil {
		return BulkPutStatus{}, err
	}
	out, err := api.StartBulkPutItems(ctx, in)
	if err != nil {
		var nf *types.ResourceNotFoundException
		var mismatch *types.IdempotentParameterMismatchException
		switch {
		case errors.As(err, &nf):
			return BulkPutStatus{}, fmt.Errorf("%w (table %s: bulk put writes into an existing table; create it first, or use --import-table to create it from the files)",
				serviceError("StartBulkPutItems", err), aws.ToString(in.TableName))
		case errors.As(err, &mismatch):
			return BulkPutStatus{}, fmt.Errorf("%w (a bulk put of these files was started within the last 8 hours with other settings, such as another --max-wcu; rerun with the same ones, or stage the files again under a new prefix)",
				serviceError("StartBulkPutItems", err))
		}
		return BulkPutStatus{}, serviceError("StartBulkPutItems", err)
	}
	if out.BulkOperationDescription == nil || out.BulkOperationDescription.BulkOperationArn == nil {
		return BulkPutStatus{}, &ddb.ServiceError{Pkg: "importer", Op: "StartBulkPutItems", Err: errors.New("the response has no bulk operation ARN")}
	}
	s := bulkPutStatus(out.BulkOperationDescription)
	if s.Table == "" {
		s.Table = aws.ToString(in.TableName)
	}
	return s, nil
}

// BulkFollowOptions configure FollowBulkPut.
type BulkFollowOptions struct {
	// Poll is the pause between two DescribeBulkOperation calls (default
	// 15 s; the first pauses are shorter).
	Poll time.Duration
	// OnStatus, when set, is called with every status read, the last one
	// included.
	OnStatus func(BulkPutStatus)
	// MaxFailures is how many DescribeBulkOperation calls in a row may
	// fail before FollowBulkPut gives up (default 5). The bulk put goes on
	// regardless.
	MaxFailures int
}

// FollowBulkPut polls DescribeBulkOperation until the bulk put ends or ctx
// does. It returns the last status, with a *BulkPutError when it ended
// FAILED or CANCELLED. COMPLETED_WITH_ERRORS is no error here: the caller
// reports the failed items (see ReadBulkPutReport). When ctx ends first,
// the bulk put goes on in DynamoDB and the error says how to follow it.
func FollowBulkPut(ctx context.Context, api BulkPutAPI, arn string, opts BulkFollowOptions) (BulkPutStatus, error) {
	return follow(ctx, opts.Poll, opts.MaxFailures, job[BulkPutStatus]{
		what: "bulk put", op: "DescribeBulkOperation", arn: arn,
		howTo: "aws dynamodb describe-bulk-operation --bulk-operation-arn " + arn,
		describe: func(ctx context.Context) (*BulkPutStatus, error) {
			out, err := api.DescribeBulkOperation(ctx, &dynamodb.DescribeBulkOperationInput{BulkOperationArn: aws.String(arn)})
			if err != nil || out.BulkOperationDescription == nil {
				return nil, err
			}
			s := bulkPutStatus(out.BulkOperationDescription)
			if s.ARN == "" {
				s.ARN = arn
			}
			return &s, nil
		},
		done:     BulkPutStatus.Done,
		onStatus: opts.OnStatus,
		failed: func(s BulkPutStatus) error {
			switch s.Status {
			case types.BulkOperationStatusFailed, types.BulkOperationStatusCancelled:
				return &BulkPutError{Status: s}
			}
			return nil
		},
	})
}

// BulkPutReport is what ReadBulkPutReport found of a bulk put's report of
// the items it could not write.
type BulkPutReport struct {
	Location string   // s3://BUCKET/PREFIX
	Objects  []string // the report's objects, as s3:// URLs
	Lines    int64    // the records in them (one an item or an input object)
	Samples  []string // the first few records, as DynamoDB wrote them
}

// ReadBulkPutReport lists the objects DynamoDB wrote under
// s3://bucket/prefix for a bulk put and reads them as JSON Lines (gzip or
// not), streaming, counting the records and keeping the first samples
// (at most 1 KB each). A record that is not JSON is counted and kept as
// text: the report is for a person to read, and its exact shape is
// DynamoDB's.
func ReadBulkPutReport(ctx context.Context, api ReportAPI, bucket, prefix string, samples int) (*BulkPutReport, error) {
	rep := &BulkPutReport{Location: s3io.ObjectURL(bucket, prefix)}
	p := s3.NewListObjectsV2Paginator(api, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return rep, s3io.Wrap("ListObjectsV2", rep.Location, err, ddb.ErrService)
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			url := s3io.ObjectURL(bucket, key)
			rep.Objects = append(rep.Objects, url)
			if strings.Contains(strings.ToLower(key[len(prefix):]), "manifest") {
				continue // a listing of the report's files, not a record
			}
			if err := readReportObject(ctx, api, bucket, key, rep, samples); err != nil {
				return rep, s3io.Wrap("GetObject", url, err, ddb.ErrService)
			}
		}
	}
	return rep, nil
}

func readReportObject(ctx context.Context, api ReportAPI, bucket, key string, rep *BulkPutReport, samples int) error {
	out, err := api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return err
	}
	defer out.Body.Close()
	br := bufio.NewReader(out.Body)
	var r io.Reader = br
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return err
		}
		defer gz.Close()
		r = gz
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		rep.Lines++
		if len(rep.Samples) < samples {
			if len(line) > 1024 {
				line = append(line[:1024:1024], "…"...)
			}
			rep.Samples = append(rep.Samples, string(line))
		}
	}
	return sc.Err()
}

// ReportAPI is the part of the S3 client that reads a bulk put's report.
type ReportAPI interface {
	manager.ListObjectsV2APIClient
	manager.DownloadAPIClient
}
