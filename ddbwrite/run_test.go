package ddbwrite

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// Run sets an item DynamoDB rejects aside in the dead-letter file; a run
// that resumes appends to the file and counts what it held.
func TestRunDeadLetters(t *testing.T) {
	client := ddblocal.Client(t, ddblocal.Endpoint(t))
	table := ddblocal.NewTable(t, client, testSpec)
	dl := filepath.Join(t.TempDir(), "dead.json")
	bad := testItem(2)
	bad["Id"] = &types.AttributeValueMemberS{Value: ""} // an empty key: a ValidationException
	feed := func(ctx context.Context, w *DDBWriter, skip int64) error {
		for seq, it := range []layouts.Item{testItem(0), testItem(1), bad, testItem(3)} {
			if int64(seq) < skip {
				continue
			}
			if err := w.Write(ctx, int64(seq), it); err != nil {
				return err
			}
		}
		return nil
	}
	opts := RunOptions{WriteOptions: WriteOptions{DeadLetter: dl}, Client: client, Table: table, Spec: testSpec}
	res, err := Run(context.Background(), opts, feed)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.Items != 3 || res.Stats.DeadLettered != 1 || res.DeadLettered() != 1 || !res.Done {
		t.Errorf("first run: %+v, want 3 written, 1 dead-lettered, done", res)
	}
	opts.Resume = true
	opts.Checkpoint = &Checkpoint{Watermark: 3}
	opts.CheckpointPath = filepath.Join(t.TempDir(), "ck.json")
	res, err = Run(context.Background(), opts, feed)
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped != 3 || res.Stats.Items != 1 || res.PriorDeadLettered != 1 || res.DeadLettered() != 1 || res.Watermark != 4 {
		t.Errorf("resumed run: %+v, want 3 skipped, 1 written, 1 dead letter from before, watermark 4", res)
	}
	data, err := os.ReadFile(dl)
	if err != nil || bytes.Count(data, []byte("\n")) != 1 {
		t.Errorf("dead-letter file: %q (%v), want one line", data, err)
	}
	if got := len(scanAll(t, client, table)); got != 3 {
		t.Errorf("the table holds %d items, want 3", got)
	}
}
