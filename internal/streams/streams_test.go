package streams

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// fakeShard is one shard of a scripted stream: its records, whether it is
// closed, and from which record on it is trimmed.
type fakeShard struct {
	id, parent string
	recs       []string // sequence numbers, increasing
	closed     bool
	trimmedTo  int // records below this index are gone
}

// fakeStream is a scripted DynamoDB stream. Iterators are "shard/index".
// Every call may be made to fail once by failNext.
type fakeStream struct {
	shards   []*fakeShard
	pageSize int // shards listed per DescribeStream page
	expire   map[string]bool
	failNext error
	calls    int
}

func (f *fakeStream) shard(id string) *fakeShard {
	for _, s := range f.shards {
		if s.id == id {
			return s
		}
	}
	return nil
}

func (f *fakeStream) fail() error {
	f.calls++
	if err := f.failNext; err != nil {
		f.failNext = nil
		return err
	}
	return nil
}

func (f *fakeStream) DescribeStream(_ context.Context, in *dynamodbstreams.DescribeStreamInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	start := 0
	if in.ExclusiveStartShardId != nil {
		for i, s := range f.shards {
			if s.id == *in.ExclusiveStartShardId {
				start = i + 1
			}
		}
	}
	end := min(len(f.shards), start+max(f.pageSize, 1))
	d := &stypes.StreamDescription{StreamArn: in.StreamArn, StreamStatus: stypes.StreamStatusEnabled}
	for _, s := range f.shards[start:end] {
		sh := stypes.Shard{ShardId: aws.String(s.id), SequenceNumberRange: &stypes.SequenceNumberRange{StartingSequenceNumber: aws.String("0")}}
		if s.parent != "" {
			sh.ParentShardId = aws.String(s.parent)
		}
		if s.closed {
			sh.SequenceNumberRange.EndingSequenceNumber = aws.String("999")
		}
		d.Shards = append(d.Shards, sh)
	}
	if end < len(f.shards) {
		d.LastEvaluatedShardId = aws.String(f.shards[end-1].id)
	}
	return &dynamodbstreams.DescribeStreamOutput{StreamDescription: d}, nil
}

func (f *fakeStream) GetShardIterator(_ context.Context, in *dynamodbstreams.GetShardIteratorInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	s := f.shard(*in.ShardId)
	if s == nil {
		return nil, &stypes.ResourceNotFoundException{Message: aws.String("no shard " + *in.ShardId)}
	}
	i := 0
	switch in.ShardIteratorType {
	case stypes.ShardIteratorTypeTrimHorizon:
		i = s.trimmedTo
	case stypes.ShardIteratorTypeLatest:
		i = len(s.recs)
	case stypes.ShardIteratorTypeAtSequenceNumber, stypes.ShardIteratorTypeAfterSequenceNumber:
		i = slices.Index(s.recs, *in.SequenceNumber)
		if i < s.trimmedTo {
			return nil, &stypes.TrimmedDataAccessException{Message: aws.String("trimmed")}
		}
		if in.ShardIteratorType == stypes.ShardIteratorTypeAfterSequenceNumber {
			i++
		}
	}
	return &dynamodbstreams.GetShardIteratorOutput{ShardIterator: aws.String(fmt.Sprintf("%s/%d", s.id, i))}, nil
}

func (f *fakeStream) GetRecords(_ context.Context, in *dynamodbstreams.GetRecordsInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	if f.expire[*in.ShardIterator] {
		delete(f.expire, *in.ShardIterator)
		return nil, &stypes.ExpiredIteratorException{Message: aws.String("expired")}
	}
	id, idx, _ := strings.Cut(*in.ShardIterator, "/")
	i, _ := strconv.Atoi(idx)
	s := f.shard(id)
	end := min(len(s.recs), i+int(aws.ToInt32(in.Limit)))
	out := &dynamodbstreams.GetRecordsOutput{}
	for _, seq := range s.recs[i:end] {
		out.Records = append(out.Records, stypes.Record{EventName: stypes.OperationTypeModify, Dynamodb: &stypes.StreamRecord{
			SequenceNumber: aws.String(seq),
			Keys:           map[string]stypes.AttributeValue{"Id": &stypes.AttributeValueMemberS{Value: seq}},
			NewImage: map[string]stypes.AttributeValue{"Id": &stypes.AttributeValueMemberS{Value: seq},
				"n": &stypes.AttributeValueMemberN{Value: "1"}, "l": &stypes.AttributeValueMemberL{Value: []stypes.AttributeValue{
					&stypes.AttributeValueMemberM{Value: map[string]stypes.AttributeValue{"b": &stypes.AttributeValueMemberBOOL{Value: true}}}}}},
		}})
	}
	if end < len(s.recs) || !s.closed {
		out.NextShardIterator = aws.String(fmt.Sprintf("%s/%d", id, end))
	}
	return out, nil
}

func seqs(recs []Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Seq)
	}
	return out
}

// pollAll polls until a poll returns nothing, gathering the records.
func pollAll(t *testing.T, r *Reader) []string {
	t.Helper()
	var all []string
	for range 20 {
		recs, err := r.Poll(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, seqs(recs)...)
	}
	return all
}

// A parent shard is read to its end before its children; a split shard's
// two children are both read; a shard closed before the mark is passed
// over; records after the mark are read, records before it are not.
func TestReaderLineage(t *testing.T) {
	f := &fakeStream{pageSize: 2, shards: []*fakeShard{
		{id: "old", recs: []string{"01", "02"}, closed: true},
		{id: "p", parent: "old", recs: []string{"10", "11"}},
	}}
	r, err := NewReader(f, "arn", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Backoff.Base, r.Backoff.Max = 1, 1
	if err := r.Mark(context.Background()); err != nil {
		t.Fatal(err)
	}
	// After the mark: p gets records, then closes and splits in two.
	p := f.shard("p")
	p.recs = append(p.recs, "12", "13")
	p.closed = true
	// g is listed before its parent c1: the order of the listing is not
	// the lineage's.
	f.shards = []*fakeShard{f.shards[0], p,
		{id: "g", parent: "c1", recs: []string{"40"}},
		{id: "c1", parent: "p", recs: []string{"20", "21"}, closed: true},
		{id: "c2", parent: "p", recs: []string{"30"}},
	}
	r.listed = time.Time{} // let the next poll list the new shards
	got := pollAll(t, r)
	if want := []string{"12", "13", "20", "21", "30", "40"}; !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v (parents before children, nothing from before the mark)", got, want)
	}
	all, done := r.Shards()
	if all != 5 || done != 3 {
		t.Errorf("%d shards, %d done; want 5 and 3 (old, p, c1)", all, done)
	}

	// The position goes on where it stopped, with no record twice.
	pos := r.Position()
	c2 := f.shard("c2")
	c2.recs = append(c2.recs, "31")
	r2, err := NewReader(f, "arn", &pos)
	if err != nil {
		t.Fatal(err)
	}
	if got := pollAll(t, r2); !slices.Equal(got, []string{"31"}) {
		t.Errorf("resumed: %v, want [31]", got)
	}
}

// Keep holds a shard at the first record after the mark; an expired
// iterator is opened again at its position; a retryable failure is retried;
// a trimmed position is ErrTrimmed.
func TestReaderPositions(t *testing.T) {
	f := &fakeStream{pageSize: 10, expire: map[string]bool{}, shards: []*fakeShard{{id: "s", recs: []string{"1", "2"}}}}
	r, _ := NewReader(f, "arn", nil)
	r.Backoff.Base, r.Backoff.Max = 1, 1
	if err := r.Mark(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := f.shard("s")
	s.recs = append(s.recs, "3", "4")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := r.Keep(ctx, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if pos := r.Position(); pos.Shards[0].At != "3" {
		t.Fatalf("after Keep the shard is at %+v, want at record 3", pos.Shards[0])
	}
	f.failNext = &stypes.InternalServerError{Message: aws.String("boom")}
	recs, err := r.Poll(context.Background())
	if err != nil || !slices.Equal(seqs(recs), []string{"3", "4"}) {
		t.Fatalf("poll: %v %v, want [3 4] after a retried 500", seqs(recs), err)
	}
	if r.Retries != 1 {
		t.Errorf("%d retries, want 1", r.Retries)
	}
	if recs[0].NewImage["l"] == nil || recs[0].Keys["Id"] == nil {
		t.Errorf("record images not converted: %+v", recs[0])
	}
	// The next iterator expires: opened again after "4", nothing lost.
	f.expire["s/4"] = true
	s.recs = append(s.recs, "5")
	if got := pollAll(t, r); !slices.Equal(got, []string{"5"}) {
		t.Errorf("after an expired iterator: %v, want [5]", got)
	}
	// Trimmed past the saved position.
	pos := r.Position()
	s.trimmedTo = 5
	s.recs = append(s.recs, "6")
	r2, _ := NewReader(f, "arn", &pos)
	if _, err := r2.Poll(context.Background()); !errors.Is(err, ErrTrimmed) {
		t.Errorf("a trimmed position: %v, want ErrTrimmed", err)
	}
	// A shard of the position that the stream no longer lists.
	gone := Position{Stream: "arn", Shards: []ShardPos{{Shard: "gone", After: "7"}}}
	r3, _ := NewReader(f, "arn", &gone)
	if _, err := r3.Poll(context.Background()); !errors.Is(err, ErrTrimmed) {
		t.Errorf("a shard that is gone: %v, want ErrTrimmed", err)
	}
	// Another stream's position.
	if _, err := NewReader(f, "other", &pos); !errors.Is(err, ErrTrimmed) {
		t.Errorf("another stream's position: %v, want ErrTrimmed", err)
	}
}
