package importer

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
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

// NewClient returns a DynamoDB client configured from opts and the SDK's
// usual sources (environment, shared config, credential chain).
//
// Its retryer makes up to 3 attempts of a call with the SDK's backoff, for
// the callers that do not retry on their own (DescribeTable, Scan, Query),
// but without the SDK's retry quota: that quota is one token bucket shared by
// every goroutine of the client, and a few hundred throttles across many
// workers would empty it and turn every later retryable error into an
// immediate failure. The batch writer overrides this per call with a single
// attempt (see noSDKRetry): it retries only the items that were not written,
// and its rate limiter must see every throttle to slow down; two retry loops
// stacked on each other would hide the throttles and multiply the attempts.
func NewClient(ctx context.Context, opts AWSOptions) (*dynamodb.Client, error) {
	conns := opts.MaxConns
	if conns <= 0 {
		conns = 64
	}
	httpClient := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.MaxIdleConns = conns
		tr.MaxIdleConnsPerHost = conns
		tr.MaxConnsPerHost = 0 // unlimited: the writers' concurrency bounds it
		tr.IdleConnTimeout = 90 * time.Second
	})
	var loads []func(*config.LoadOptions) error
	loads = append(loads,
		config.WithHTTPClient(httpClient),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = 3
				o.MaxBackoff = 2 * time.Second
				o.RateLimiter = ratelimit.None
			})
		}),
	)
	if opts.Region != "" {
		loads = append(loads, config.WithRegion(opts.Region))
	}
	if opts.Profile != "" {
		loads = append(loads, config.WithSharedConfigProfile(opts.Profile))
	}
	if isLoopback(opts.EndpointURL) {
		// A local engine (DynamoDB Local) never runs on an EC2 instance
		// role: asking the instance metadata service only costs a timeout
		// and a warning.
		loads = append(loads, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loads...)
	if err != nil {
		return nil, fmt.Errorf("importer: loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		if opts.EndpointURL == "" {
			return nil, fmt.Errorf("importer: no AWS region: pass --region or set AWS_REGION")
		}
		// DynamoDB Local does not care which region; the SDK needs one.
		cfg.Region = "us-east-1"
	}
	if isLoopback(opts.EndpointURL) {
		// A local engine takes any credentials; do not make the user invent
		// some when the chain has none. A remote endpoint keeps the chain's
		// answer, so that missing credentials are reported as such.
		if cfg.Credentials == nil {
			cfg.Credentials = credentials.NewStaticCredentialsProvider("treeport", "treeport", "")
		} else if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
			cfg.Credentials = credentials.NewStaticCredentialsProvider("treeport", "treeport", "")
		}
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if opts.EndpointURL != "" {
			o.BaseEndpoint = aws.String(opts.EndpointURL)
		}
	}), nil
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
