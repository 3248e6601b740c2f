package streams

import (
	"context"
	"encoding/json"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/testserver/faultproxy"
	"github.com/treeport/treeport/layouts"
)

// TestKeepReopensExpiredShard: on DynamoDB Local, through the fault proxy,
// the GetRecords with which Keep keeps a shard's mark alive fails with an
// ExpiredIteratorException. Keep goes on instead of failing (a follow used
// to end with exit 3 after its whole copy, without a checkpoint), the shard
// is saved to be read from its oldest record, and Poll then reads every
// record, the one written before the mark and the one written after.
func TestKeepReopensExpiredShard(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var expired atomic.Int64
	proxy, err := faultproxy.New(faultproxy.Config{
		Target: endpoint,
		FailRequest: func(op string, body []byte) (string, string, bool) {
			var in struct{ Limit int }
			if op != "GetRecords" || json.Unmarshal(body, &in) != nil || in.Limit != 1 {
				return "", "", false // only Keep reads one record at a time
			}
			if expired.Add(1) > 1 {
				return "", "", false
			}
			return "ExpiredIteratorException", "Iterator expired", true
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	db := ddblocal.Client(t, endpoint)
	table := ddblocal.NewTable(t, db, layouts.TableSpec{PK: layouts.KeyAttr{Name: "Id", Type: dtypes.ScalarAttributeTypeS}})
	sc := dynamodbstreams.New(dynamodbstreams.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(proxy.URL()), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("treeport", "treeport", ""),
	})
	info, err := Enable(ctx, db, sc, table, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	put := func(id string) {
		t.Helper()
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table),
			Item: map[string]dtypes.AttributeValue{"Id": &dtypes.AttributeValueMemberS{Value: id}}}); err != nil {
			t.Fatal(err)
		}
	}
	put("before-mark")
	r, err := NewReader(sc, info.ARN, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Mark(ctx); err != nil {
		t.Fatal(err)
	}
	keepCtx, stopKeep := context.WithCancel(ctx)
	kept := make(chan error, 1)
	go func() { kept <- r.Keep(keepCtx, 10*time.Millisecond) }()
	for expired.Load() == 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-kept:
		t.Fatalf("Keep ended on the expired iterator: %v", err)
	case <-time.After(100 * time.Millisecond): // a few more rounds of Keep
	}
	put("after-mark")
	stopKeep()
	if err := <-kept; err != nil {
		t.Fatalf("Keep: %v", err)
	}
	if got := proxy.Counts().Failed; got != 1 {
		t.Fatalf("the proxy failed %d GetRecords, want 1", got)
	}
	// The expired shard is saved at no record: read from TRIM_HORIZON.
	pos := r.Position()
	if len(pos.Shards) == 0 {
		t.Fatal("no shard in the position")
	}
	for _, s := range pos.Shards {
		if !s.Done && (s.At != "" || s.After != "") {
			t.Errorf("shard %s saved at At=%q After=%q, want its oldest record", s.Shard, s.At, s.After)
		}
	}
	var ids []string
	for range 50 {
		recs, err := r.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			ids = append(ids, rec.Keys["Id"].(*dtypes.AttributeValueMemberS).Value)
		}
		if slices.Contains(ids, "after-mark") {
			break
		}
	}
	if !slices.Contains(ids, "before-mark") || !slices.Contains(ids, "after-mark") {
		t.Errorf("Poll read %q, want before-mark (read again from the oldest record) and after-mark", ids)
	}
}
