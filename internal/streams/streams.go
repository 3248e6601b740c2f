// Package streams reads a DynamoDB table's stream: it finds (or enables)
// the stream, and reads every shard of it in the order the shard lineage
// requires (a parent shard to its end before its children), from a
// position that can be saved and taken up again. It knows nothing of
// layouts or trees: records come out as DynamoDB items (keys and images).
//
// A Reader is not safe for concurrent use, except that Keep may run while
// nothing else is called.
package streams

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/treeport/treeport/internal/ddb"
)

// Errors of the package; test with errors.Is.
var (
	// ErrNoStream marks a table without a stream, or with one that carries
	// no new images (KEYS_ONLY, OLD_IMAGE).
	ErrNoStream = errors.New("streams: no usable stream")
	// ErrTrimmed marks a saved position the stream no longer holds: its
	// records are past the 24 h retention, or its shard is gone. Whoever
	// follows from it has to copy the table again.
	ErrTrimmed = errors.New("streams: position no longer in the stream")
)

// errNoNewImages is ErrNoStream for a table that has a stream, one without
// new images: Enable cannot replace it (DynamoDB refuses a second stream).
var errNoNewImages = fmt.Errorf("%w", ErrNoStream)

// Client is the part of the DynamoDB Streams client a Reader uses;
// *dynamodbstreams.Client satisfies it.
type Client interface {
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

var _ Client = (*dynamodbstreams.Client)(nil)

// TableAPI is the part of the DynamoDB client Lookup and Enable use.
type TableAPI interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTable(ctx context.Context, in *dynamodb.UpdateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
}

// NewClient returns a DynamoDB Streams client configured as ddb.NewClient
// configures DynamoDB's (the same endpoint: DynamoDB Local serves both).
func NewClient(ctx context.Context, opts ddb.AWSOptions) (*dynamodbstreams.Client, error) {
	// ddb.NewClient's configuration, for the other service.
	c, err := ddb.NewClient(ctx, opts)
	if err != nil {
		return nil, err
	}
	o := c.Options()
	cfg := aws.Config{
		Region: o.Region, Credentials: o.Credentials, HTTPClient: o.HTTPClient,
		Retryer: func() aws.Retryer { return o.Retryer }, Logger: o.Logger,
	}
	return dynamodbstreams.NewFromConfig(cfg, func(so *dynamodbstreams.Options) {
		if opts.EndpointURL != "" {
			so.BaseEndpoint = aws.String(opts.EndpointURL)
		}
		so.RetryMaxAttempts = 1 // the Reader retries on its own
	}), nil
}

// Info is a table's stream.
type Info struct {
	ARN      string
	ViewType string // NEW_IMAGE, NEW_AND_OLD_IMAGES, ...
}

// EnableHint is the command that enables a stream a follower can read.
func EnableHint(table string) string {
	return fmt.Sprintf("aws dynamodb update-table --table-name %s --stream-specification StreamEnabled=true,StreamViewType=NEW_AND_OLD_IMAGES", table)
}

// Lookup returns the table's stream. A table without one, or with one
// that carries no new images, is ErrNoStream, with what to do.
func Lookup(ctx context.Context, c TableAPI, table string) (Info, error) {
	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return Info{}, fmt.Errorf("describing %s: %w", table, err)
	}
	t := out.Table
	spec := t.StreamSpecification
	if spec == nil || spec.StreamEnabled == nil || !*spec.StreamEnabled || t.LatestStreamArn == nil {
		return Info{}, fmt.Errorf("%w: table %s has no stream; enable one (NEW_AND_OLD_IMAGES or NEW_IMAGE) with\n  %s\nor pass --enable-stream", ErrNoStream, table, EnableHint(table))
	}
	switch spec.StreamViewType {
	case dtypes.StreamViewTypeNewImage, dtypes.StreamViewTypeNewAndOldImages:
	default:
		return Info{}, fmt.Errorf("%w: the stream of table %s carries %s records, without the items' new images; a stream's view type cannot be changed (nor the stream replaced by --enable-stream): disable it and enable one with NEW_AND_OLD_IMAGES", errNoNewImages, table, spec.StreamViewType)
	}
	return Info{ARN: *t.LatestStreamArn, ViewType: string(spec.StreamViewType)}, nil
}

// Enable enables a NEW_AND_OLD_IMAGES stream on the table (nothing when it
// has a usable one) and waits until the stream is enabled, at most wait. A
// table with a stream that carries no new images is Lookup's ErrNoStream:
// that stream is not replaced.
func Enable(ctx context.Context, c TableAPI, sc Client, table string, wait time.Duration) (Info, error) {
	if info, err := Lookup(ctx, c, table); err == nil {
		return info, nil
	} else if !errors.Is(err, ErrNoStream) || errors.Is(err, errNoNewImages) {
		return Info{}, err
	}
	_, err := c.UpdateTable(ctx, &dynamodb.UpdateTableInput{
		TableName: aws.String(table),
		StreamSpecification: &dtypes.StreamSpecification{
			StreamEnabled: aws.Bool(true), StreamViewType: dtypes.StreamViewTypeNewAndOldImages,
		},
	})
	if err != nil {
		return Info{}, fmt.Errorf("enabling the stream of %s: %w", table, err)
	}
	deadline := time.Now().Add(wait)
	for {
		info, err := Lookup(ctx, c, table)
		if err == nil {
			out, derr := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(info.ARN)})
			if derr == nil && out.StreamDescription.StreamStatus == stypes.StreamStatusEnabled {
				return info, nil
			}
		} else if !errors.Is(err, ErrNoStream) {
			return Info{}, err
		}
		if time.Now().After(deadline) {
			return Info{}, fmt.Errorf("the stream of %s was not enabled after %s", table, wait)
		}
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return Info{}, err
		}
	}
}

// Record is one change of one item.
type Record struct {
	// Shard and Seq place the record in the stream.
	Shard, Seq string
	// Event is INSERT, MODIFY or REMOVE.
	Event string
	// Keys is the item's key; NewImage the item after the change (nil for
	// a REMOVE); OldImage before it, when the stream carries it.
	Keys, NewImage, OldImage map[string]dtypes.AttributeValue
	// Created is when the change was made (to the second).
	Created time.Time
}

// ShardPos is where a reader stands in one shard. With neither After nor
// At, the shard is read from its oldest record (TRIM_HORIZON).
type ShardPos struct {
	Shard  string `json:"shard"`
	Parent string `json:"parent,omitempty"`
	// After is the last record read; At the first record to read.
	After string `json:"after,omitempty"`
	At    string `json:"at,omitempty"`
	// Done: the shard is closed and every record of it was read.
	Done bool `json:"done,omitempty"`
}

// Position is where a reader stands in a stream: every shard it knows.
type Position struct {
	Stream string     `json:"stream"`
	Shards []ShardPos `json:"shards"`
}

type shard struct {
	pos  ShardPos
	iter *string
	// latest: iter is a LATEST iterator from Mark, and no record has been
	// seen in the shard since.
	latest bool
	// gone: the shard is no longer in the stream's description.
	gone bool
}

// Reader reads a stream's shards, parents before children.
type Reader struct {
	c      Client
	arn    string
	shards map[string]*shard
	order  []string // shard ids in the order DescribeStream lists them
	listed time.Time
	// Backoff and MaxRetries bound the retries of a failed call (50 ms to
	// 5 s, 10 in a row).
	Backoff    ddb.Backoff
	MaxRetries int
	// Limit is the most records one GetRecords returns (1000).
	Limit int32
	// Calls counts the calls made, Retries the ones that failed and were
	// retried.
	Calls, Retries int64
}

// NewReader returns a reader of the stream, at pos (nil: at no position
// yet; call Mark).
func NewReader(c Client, arn string, pos *Position) (*Reader, error) {
	r := &Reader{c: c, arn: arn, shards: map[string]*shard{},
		Backoff: ddb.Backoff{Base: 50 * time.Millisecond, Max: 5 * time.Second}, MaxRetries: 10, Limit: 1000}
	if pos != nil {
		if pos.Stream != arn {
			return nil, fmt.Errorf("%w: the saved position is in stream %s, the table's stream is %s (was the stream disabled and enabled again?)", ErrTrimmed, pos.Stream, arn)
		}
		for _, p := range pos.Shards {
			r.shards[p.Shard] = &shard{pos: p}
			r.order = append(r.order, p.Shard)
		}
	}
	return r, nil
}

// retry calls fn until it succeeds, fails for good, or failed MaxRetries
// times in a row with retryable errors.
func (r *Reader) retry(ctx context.Context, fn func() error) error {
	for n := 0; ; n++ {
		r.Calls++
		err := fn()
		if err == nil {
			return nil
		}
		kind, _ := ddb.Classify(err)
		if !kind.Retryable() || n >= r.MaxRetries || ctx.Err() != nil {
			return err
		}
		r.Retries++
		if err := r.Backoff.Sleep(ctx, n); err != nil {
			return err
		}
	}
}

// list reads the stream's shards, adding the new ones (read from their
// start: they were made after the reader's position) and marking the ones
// no longer listed. A stream that was disabled is ErrTrimmed: the table's
// changes go to another stream from then on, or to none.
func (r *Reader) list(ctx context.Context) error {
	seen := map[string]bool{}
	var start *string
	for {
		var out *dynamodbstreams.DescribeStreamOutput
		err := r.retry(ctx, func() error {
			var err error
			out, err = r.c.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(r.arn), ExclusiveStartShardId: start})
			return err
		})
		if err != nil {
			var nf *stypes.ResourceNotFoundException
			if errors.As(err, &nf) {
				return fmt.Errorf("%w: stream %s: %v", ErrTrimmed, r.arn, err)
			}
			return fmt.Errorf("describing stream %s: %w", r.arn, err)
		}
		d := out.StreamDescription
		if d.StreamStatus == stypes.StreamStatusDisabling || d.StreamStatus == stypes.StreamStatusDisabled {
			return fmt.Errorf("%w: stream %s was disabled: the table's changes no longer come to it", ErrTrimmed, r.arn)
		}
		for _, s := range d.Shards {
			id := aws.ToString(s.ShardId)
			seen[id] = true
			if _, ok := r.shards[id]; !ok {
				r.shards[id] = &shard{pos: ShardPos{Shard: id, Parent: aws.ToString(s.ParentShardId)}}
				r.order = append(r.order, id)
			}
		}
		if d.LastEvaluatedShardId == nil {
			break
		}
		start = d.LastEvaluatedShardId
	}
	for id, s := range r.shards {
		s.gone = !seen[id]
	}
	r.listed = time.Now()
	return nil
}

// Mark places the reader at the stream's end, now: every open shard at its
// latest record (shards closed already are done: their records are older).
// Records written after Mark returns are read; Keep must run until the
// first Poll so that the positions do not expire (an iterator lives 15
// minutes).
func (r *Reader) Mark(ctx context.Context) error {
	r.shards, r.order = map[string]*shard{}, nil
	var start *string
	for {
		var out *dynamodbstreams.DescribeStreamOutput
		err := r.retry(ctx, func() error {
			var err error
			out, err = r.c.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(r.arn), ExclusiveStartShardId: start})
			return err
		})
		if err != nil {
			return fmt.Errorf("describing stream %s: %w", r.arn, err)
		}
		d := out.StreamDescription
		for _, s := range d.Shards {
			id := aws.ToString(s.ShardId)
			sh := &shard{pos: ShardPos{Shard: id, Parent: aws.ToString(s.ParentShardId)}}
			if s.SequenceNumberRange != nil && s.SequenceNumberRange.EndingSequenceNumber != nil {
				sh.pos.Done = true
			} else {
				it, err := r.iterator(ctx, id, stypes.ShardIteratorTypeLatest, "")
				if err != nil {
					return err
				}
				sh.iter, sh.latest = it, true
			}
			r.shards[id] = sh
			r.order = append(r.order, id)
		}
		if d.LastEvaluatedShardId == nil {
			break
		}
		start = d.LastEvaluatedShardId
	}
	r.listed = time.Now()
	return nil
}

// Keep keeps the positions Mark took alive until ctx ends: it reads the
// shards still at their mark, and a shard in which a record has arrived
// since is held at that record (it is read from there by Poll; nothing is
// lost, nothing consumed). A shard whose iterator expires anyway (a call
// that came too late, as after a long pause of the process) has lost its
// mark: it is read from its oldest record (TRIM_HORIZON) instead, as the
// DynamoDB Streams documentation advises, which reads again some records
// from before the mark (harmless to a follower that applies states) and
// loses none.
func (r *Reader) Keep(ctx context.Context, every time.Duration) error {
	for {
		for _, id := range r.order {
			s := r.shards[id]
			if !s.latest || s.iter == nil {
				continue
			}
			var out *dynamodbstreams.GetRecordsOutput
			err := r.retry(ctx, func() error {
				var err error
				out, err = r.c.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: s.iter, Limit: aws.Int32(1)})
				return err
			})
			if ctx.Err() != nil {
				return nil
			}
			if expired := (*stypes.ExpiredIteratorException)(nil); errors.As(err, &expired) {
				// Neither At nor After: Poll opens it at TRIM_HORIZON, and
				// Position saves it so.
				s.latest, s.iter = false, nil
				continue
			}
			if err != nil {
				return fmt.Errorf("reading shard %s: %w", id, err)
			}
			if len(out.Records) > 0 {
				s.latest, s.iter = false, nil
				s.pos.At = aws.ToString(out.Records[0].Dynamodb.SequenceNumber)
				continue
			}
			s.iter = out.NextShardIterator
			if s.iter == nil {
				s.latest, s.pos.Done = false, true
			}
		}
		if err := sleep(ctx, every); err != nil {
			return nil
		}
	}
}

// iterator returns a shard iterator.
func (r *Reader) iterator(ctx context.Context, id string, typ stypes.ShardIteratorType, seq string) (*string, error) {
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(r.arn), ShardId: aws.String(id), ShardIteratorType: typ}
	if seq != "" {
		in.SequenceNumber = aws.String(seq)
	}
	var out *dynamodbstreams.GetShardIteratorOutput
	err := r.retry(ctx, func() error {
		var err error
		out, err = r.c.GetShardIterator(ctx, in)
		return err
	})
	if err != nil {
		var trimmed *stypes.TrimmedDataAccessException
		var nf *stypes.ResourceNotFoundException
		if errors.As(err, &trimmed) || errors.As(err, &nf) {
			return nil, fmt.Errorf("%w: shard %s: %v", ErrTrimmed, id, err)
		}
		return nil, fmt.Errorf("shard %s: %w", id, err)
	}
	return out.ShardIterator, nil
}

// open gives the shard an iterator at its position.
func (r *Reader) open(ctx context.Context, s *shard) error {
	typ, seq := stypes.ShardIteratorTypeTrimHorizon, ""
	switch {
	case s.pos.After != "":
		typ, seq = stypes.ShardIteratorTypeAfterSequenceNumber, s.pos.After
	case s.pos.At != "":
		typ, seq = stypes.ShardIteratorTypeAtSequenceNumber, s.pos.At
	}
	it, err := r.iterator(ctx, s.pos.Shard, typ, seq)
	if err != nil {
		return err
	}
	s.iter = it
	return nil
}

// readable reports whether a shard may be read now: it is not done, and
// its parent is done or unknown (trimmed from the stream).
func (r *Reader) readable(s *shard) bool {
	if s.pos.Done {
		return false
	}
	p, ok := r.shards[s.pos.Parent]
	return s.pos.Parent == "" || !ok || p.pos.Done
}

// Poll reads the next records of every shard that may be read, each shard
// once (a parent that ends during the poll lets its children be read in the
// same poll), and returns them in shard order: a key's records in the order
// they happened. The position advances past them (see Position).
func (r *Reader) Poll(ctx context.Context) ([]Record, error) {
	if time.Since(r.listed) > 5*time.Second {
		if err := r.list(ctx); err != nil {
			return nil, err
		}
	}
	var recs []Record
	for i := 0; i < len(r.order); i++ {
		s := r.shards[r.order[i]]
		if !r.readable(s) {
			continue
		}
		if s.iter == nil {
			if s.gone {
				// Trimmed before the reader was done with it: whatever it
				// held past the position is lost.
				return recs, fmt.Errorf("%w: shard %s is no longer in the stream", ErrTrimmed, s.pos.Shard)
			}
			if err := r.open(ctx, s); err != nil {
				return recs, err
			}
		}
		var out *dynamodbstreams.GetRecordsOutput
		err := r.retry(ctx, func() error {
			var err error
			out, err = r.c.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: s.iter, Limit: aws.Int32(r.Limit)})
			return err
		})
		var expired *stypes.ExpiredIteratorException
		var trimmed *stypes.TrimmedDataAccessException
		switch {
		case errors.As(err, &expired):
			s.iter = nil // opened again at its position by the next poll
			continue
		case errors.As(err, &trimmed):
			return recs, fmt.Errorf("%w: shard %s: %v", ErrTrimmed, s.pos.Shard, err)
		case err != nil:
			return recs, fmt.Errorf("reading shard %s: %w", s.pos.Shard, err)
		}
		for _, rec := range out.Records {
			sr := rec.Dynamodb
			if sr == nil {
				continue
			}
			recs = append(recs, Record{
				Shard: s.pos.Shard, Seq: aws.ToString(sr.SequenceNumber), Event: string(rec.EventName),
				Keys: Item(sr.Keys), NewImage: Item(sr.NewImage), OldImage: Item(sr.OldImage),
				Created: aws.ToTime(sr.ApproximateCreationDateTime),
			})
			s.pos.After, s.pos.At = aws.ToString(sr.SequenceNumber), ""
		}
		if len(out.Records) > 0 {
			s.latest = false
		}
		s.iter = out.NextShardIterator
		if s.iter == nil {
			s.pos.Done, s.latest = true, false
			// Its children may be read now: they come later in the order
			// (a child is listed after its parent), or a relisting finds them.
			r.listed = time.Time{}
		}
	}
	return recs, nil
}

// Position returns where the reader stands, to be saved and given to
// NewReader again. A shard still at Mark's position, in which nothing has
// happened since, is saved to be read from its oldest record: a LATEST
// position cannot be saved, and reading again what was before it is
// harmless to a follower that applies states rather than deltas.
func (r *Reader) Position() Position {
	p := Position{Stream: r.arn}
	for _, id := range r.order {
		s := r.shards[id]
		if s.gone && s.pos.Done {
			continue // trimmed and read: nothing to keep
		}
		p.Shards = append(p.Shards, s.pos)
	}
	return p
}

// Shards counts the shards the reader knows, and how many of them are
// done.
func (r *Reader) Shards() (all, done int) {
	for _, s := range r.shards {
		all++
		if s.pos.Done {
			done++
		}
	}
	return all, done
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Item converts a stream record's item to the DynamoDB client's types
// (the two SDK modules each have their own).
func Item(m map[string]stypes.AttributeValue) map[string]dtypes.AttributeValue {
	if m == nil {
		return nil
	}
	out := make(map[string]dtypes.AttributeValue, len(m))
	for k, v := range m {
		out[k] = Value(v)
	}
	return out
}

// Value converts one attribute value.
func Value(v stypes.AttributeValue) dtypes.AttributeValue {
	switch v := v.(type) {
	case *stypes.AttributeValueMemberS:
		return &dtypes.AttributeValueMemberS{Value: v.Value}
	case *stypes.AttributeValueMemberN:
		return &dtypes.AttributeValueMemberN{Value: v.Value}
	case *stypes.AttributeValueMemberB:
		return &dtypes.AttributeValueMemberB{Value: v.Value}
	case *stypes.AttributeValueMemberBOOL:
		return &dtypes.AttributeValueMemberBOOL{Value: v.Value}
	case *stypes.AttributeValueMemberNULL:
		return &dtypes.AttributeValueMemberNULL{Value: v.Value}
	case *stypes.AttributeValueMemberSS:
		return &dtypes.AttributeValueMemberSS{Value: slices.Clone(v.Value)}
	case *stypes.AttributeValueMemberNS:
		return &dtypes.AttributeValueMemberNS{Value: slices.Clone(v.Value)}
	case *stypes.AttributeValueMemberBS:
		return &dtypes.AttributeValueMemberBS{Value: slices.Clone(v.Value)}
	case *stypes.AttributeValueMemberL:
		l := make([]dtypes.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = Value(e)
		}
		return &dtypes.AttributeValueMemberL{Value: l}
	case *stypes.AttributeValueMemberM:
		return &dtypes.AttributeValueMemberM{Value: Item(v.Value)}
	}
	return nil
}
