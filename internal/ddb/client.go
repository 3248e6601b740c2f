// Package ddb is treeport's DynamoDB toolkit: how a client is made, how
// the errors of a call are sorted and reported, how a failed call backs
// off, and the two pacers that hold reads and writes to a rate. importer,
// exporter and refresh use it, so that they agree on what a throttle is and
// what a service failure says.
package ddb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/logging"
)

// AWSOptions say how to reach DynamoDB. Empty fields leave the SDK's
// defaults: the usual environment variables, shared config files and
// credential chain.
type AWSOptions struct {
	EndpointURL string // --endpoint-url, e.g. DynamoDB Local
	Region      string // --region
	Profile     string // --profile
	// MaxConns is the number of connections kept open to DynamoDB; set it
	// to at least the writers' or scanners' concurrency (default 64).
	MaxConns int
}

// ConfigOptions say how to load the AWS configuration of one client.
type ConfigOptions struct {
	AWSOptions // the endpoint, region, profile and connections
	// Service names the service in the error for a missing region, as in
	// "no AWS region for S3"; "" names none.
	Service string
	// Retryer makes the client's retryer; nil leaves the SDK's.
	Retryer func() aws.Retryer
	// StandInCredentials lets dummy credentials stand in for ones the
	// chain cannot give (a local engine or an S3-compatible server takes
	// any). Without it, missing credentials are reported as such.
	StandInCredentials bool
}

// ErrAWSConfig is what LoadConfig's errors unwrap to when the AWS
// configuration lacks something the user must give (a region, credentials,
// a profile that exists): a mistake in the setup, not a failure of the
// service. Their text says what is missing and how to give it.
var ErrAWSConfig = errors.New("ddb: AWS configuration incomplete")

// configError is an ErrAWSConfig whose text is msg alone: the SDK's chain of
// attempts (environment, files, SSO, instance metadata) is its cause, kept
// for errors.As, but not printed.
type configError struct {
	msg   string
	cause error
}

func (e *configError) Error() string   { return e.msg }
func (e *configError) Unwrap() []error { return []error{ErrAWSConfig, e.cause} }

// howToReach is the end of every configError: the ways to point treeport at
// DynamoDB, in AWS or local.
const howToReach = "; for DynamoDB Local (no AWS account), give --endpoint-url http://localhost:8000 instead"

// LoadConfig loads the AWS configuration from opts and the SDK's usual
// sources (environment, shared config, credential chain), with an HTTP
// client keeping opts.MaxConns connections open. With an endpoint and no
// region it takes us-east-1: a local engine does not care which region,
// and the SDK needs one. Without stand-in credentials, it asks the
// credential chain once (the answer is cached for the client's calls), so
// that missing credentials are told before any work starts. Its errors
// for a missing region, profile or credentials wrap ErrAWSConfig.
func LoadConfig(ctx context.Context, opts ConfigOptions) (aws.Config, error) {
	conns := opts.MaxConns
	if conns <= 0 {
		conns = 64
	}
	httpClient := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.MaxIdleConns = conns
		tr.MaxIdleConnsPerHost = conns
		tr.MaxConnsPerHost = 0 // unlimited: the callers' concurrency bounds it
		tr.IdleConnTimeout = 90 * time.Second
	})
	loads := []func(*config.LoadOptions) error{config.WithHTTPClient(httpClient), config.WithLogger(sdkLogger{logging.NewStandardLogger(os.Stderr)})}
	if opts.Retryer != nil {
		loads = append(loads, config.WithRetryer(opts.Retryer))
	}
	if opts.Region != "" {
		loads = append(loads, config.WithRegion(opts.Region))
	}
	if opts.Profile != "" {
		loads = append(loads, config.WithSharedConfigProfile(opts.Profile))
	}
	if isLoopback(opts.EndpointURL) {
		// A local engine never runs on an EC2 instance role: asking the
		// instance metadata service only costs a timeout and a warning.
		loads = append(loads, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loads...)
	if err != nil {
		var noProfile config.SharedConfigProfileNotExistError
		if errors.As(err, &noProfile) {
			return aws.Config{}, &configError{fmt.Sprintf("AWS profile %q is in neither ~/.aws/config nor ~/.aws/credentials (or AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE): "+
				"give --profile a profile they hold (aws configure list-profiles lists them), or create it with aws configure --profile %s", noProfile.Profile, noProfile.Profile), err}
		}
		return aws.Config{}, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		if opts.EndpointURL == "" {
			what := "no AWS region"
			if opts.Service != "" {
				what += " for " + opts.Service
			}
			return aws.Config{}, &configError{what + ": give --region (e.g. --region us-east-1), set AWS_REGION, or give --profile NAME of a profile that has a region" + howToReach, errors.New("no region configured")}
		}
		cfg.Region = "us-east-1"
	}
	if opts.StandInCredentials {
		if cfg.Credentials == nil {
			cfg.Credentials = credentials.NewStaticCredentialsProvider("treeport", "treeport", "")
		} else if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
			cfg.Credentials = credentials.NewStaticCredentialsProvider("treeport", "treeport", "")
		}
		return cfg, nil
	}
	if cfg.Credentials == nil {
		return aws.Config{}, noCredentials(opts, errors.New("no credential provider"))
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		if ctx.Err() != nil {
			return aws.Config{}, ctx.Err()
		}
		return aws.Config{}, noCredentials(opts, err)
	}
	return cfg, nil
}

// sdkLogger is the SDK's own logger (its standard one, on stderr) without
// the instance metadata client's "falling back to IMDSv1" warning. Where
// the metadata service answers 403 (a proxy in front of it, a container
// without a role: a newcomer's laptop), the SDK printed it before every
// "no AWS credentials" message, which says all the user needs; where the
// fallback works, the credentials it gives are what was asked for.
type sdkLogger struct{ next logging.Logger }

func (l sdkLogger) Logf(c logging.Classification, format string, v ...any) {
	if c == logging.Warn && strings.HasPrefix(format, "falling back to IMDSv1") {
		return
	}
	l.next.Logf(c, format, v...)
}

// noCredentials says that the credential chain found nothing, and the ways
// to give credentials.
func noCredentials(opts ConfigOptions, cause error) error {
	what := "no AWS credentials"
	if opts.Service != "" {
		what += " for " + opts.Service
	}
	if opts.Profile != "" {
		what += fmt.Sprintf(" in profile %q", opts.Profile)
	}
	return &configError{what + " (treeport looked in the environment, ~/.aws/credentials and ~/.aws/config, and the instance or task role): " +
		"set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, give --profile NAME of a profile with credentials (after aws configure, or aws sso login --profile NAME), " +
		"or run where a role gives them" + howToReach, cause}
}

// NewClient returns a DynamoDB client configured from opts and the SDK's
// usual sources (environment, shared config, credential chain).
//
// Its retryer makes up to 3 attempts of a call with the SDK's backoff, for
// the callers that do not retry on their own (DescribeTable, Scan, Query),
// but without the SDK's retry quota: that quota is one token bucket shared by
// every goroutine of the client, and a few hundred throttles across many
// workers would empty it and turn every later retryable error into an
// immediate failure. The batch writer and the readers override this per
// call with a single attempt (see NoSDKRetry): they retry on their own, and
// their pacers must see every throttle; two retry loops stacked on each
// other would hide the throttles and multiply the attempts.
func NewClient(ctx context.Context, opts AWSOptions) (*dynamodb.Client, error) {
	cfg, err := LoadConfig(ctx, ConfigOptions{
		AWSOptions: opts,
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = 3
				o.MaxBackoff = 2 * time.Second
				o.RateLimiter = ratelimit.None
			})
		},
		// A local engine takes any credentials; do not make the user
		// invent some when the chain has none. A remote endpoint keeps the
		// chain's answer, so that missing credentials are reported as such.
		StandInCredentials: isLoopback(opts.EndpointURL),
	})
	if err != nil {
		return nil, err
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if opts.EndpointURL != "" {
			o.BaseEndpoint = aws.String(opts.EndpointURL)
		}
		o.HTTPClient = crcFill{o.HTTPClient}
	}), nil
}

// crcFill is the DynamoDB client's HTTP client. The SDK checks each
// response body against its X-Amz-Crc32 header, and takes a missing header
// for a checksum of 0 (aws-sdk-go-v2 issue 3545): DynamoDB Local answers
// errors without the header, so every error answer (a missing table, a
// throttle) logged a spurious "WARN failed to close HTTP response body".
// An error answer without the header gets the checksum of its body; a
// success answer is left as it came, checked as the SDK checks it.
type crcFill struct{ next aws.HTTPClient }

// maxErrorBody bounds the error answers crcFill reads whole.
const maxErrorBody = 1 << 20

func (c crcFill) Do(r *http.Request) (*http.Response, error) {
	resp, err := c.next.Do(r)
	if err != nil || resp.StatusCode < 300 || resp.Header.Get("X-Amz-Crc32") != "" {
		return resp, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody+1))
	if err != nil || len(body) > maxErrorBody {
		// Left to the SDK as it is, with what was read put back.
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
		return resp, nil
	}
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.Header.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	return resp, nil
}

// isLoopback reports whether the endpoint URL names this machine.
func isLoopback(endpoint string) bool {
	if endpoint == "" {
		return false
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
