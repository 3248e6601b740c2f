package ddbwrite

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/layouts"
)

// The held spool keeps what a killed run left: the records its watermark
// passed and that are not done are written by the run that resumes (the
// ones marked sent counted as maybe written), the others are voided, and
// a record cut short by a crash is dropped.
func TestHeldSpoolResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ck.json.held")
	w := &DDBWriter{spec: testSpec}
	mk := func(seq int64) *request {
		return w.request(seq, hotItem(int(seq)), types.WriteRequest{PutRequest: &types.PutRequest{Item: hotItem(int(seq))}})
	}
	s, err := openHeldSpool(path, "fp", 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	reqs := []*request{mk(1), mk(2), mk(3), mk(4), mk(5), mk(6), mk(9)}
	reqs[1].sent = true
	del := w.request(7, layouts.Item{"Id": hotItem(7)["Id"]}, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: layouts.Item{"Id": hotItem(7)["Id"]}}})
	reqs = append(reqs, del)
	kept, err := s.put(reqs)
	if err != nil || kept != len(reqs) {
		t.Fatalf("put: kept %d, %v", kept, err)
	}
	s.done(reqs[0]) // written
	s.mark(reqs[2], heldSent)
	// The run is killed while it appends a record.
	s.f.WriteAt([]byte("- 0000000000000000"), s.end)
	s.f.Close()

	// The run that resumes at 8 writes 2 to 7 (2 and 3 maybe again) and
	// voids 9, which its input brings again.
	ck := &Checkpoint{Fingerprint: "fp", Watermark: 8}
	if err := ck.readHeld(path[:len(path)-len(".held")]); err != nil {
		t.Fatal(err)
	}
	if ck.Held() != 6 || ck.RedoneAtMost() != 2 {
		t.Errorf("checkpoint: %d held, %d redone at most; want 6 and 2", ck.Held(), ck.RedoneAtMost())
	}
	s2, err := openHeldSpool(path, "fp", 8, 100)
	if err != nil {
		t.Fatal(err)
	}
	if s2.replayed != 6 || s2.redo != 2 || s2.left.Load() != 6 {
		t.Errorf("resumed spool: %d to write, %d maybe again, %d left; want 6, 2, 6", s2.replayed, s2.redo, s2.left.Load())
	}
	back, err := s2.readBack(func(seq int64, item map[string]types.AttributeValue, put bool) *request {
		if put {
			return w.request(seq, item, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
		}
		return w.request(seq, item, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: item}})
	})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, r := range back {
		seqs = append(seqs, r.seqs[0])
		if r.key != layouts.KeyOf(testSpec, r.item) || (r.seqs[0] == 7) != (r.wr.DeleteRequest != nil) {
			t.Errorf("record %d read back as %+v", r.seqs[0], r)
		}
	}
	if want := []int64{2, 3, 4, 5, 6, 7}; len(seqs) != len(want) || seqs[0] != 2 || seqs[5] != 7 || !back[0].sent || !back[1].sent || back[2].sent {
		t.Errorf("read back %v (sent %v %v %v); want %v, the first two sent", seqs, back[0].sent, back[1].sent, back[2].sent, want)
	}
	for _, r := range back {
		s2.done(r)
	}
	// A new record goes after the last whole one: the cut one is gone.
	r10 := mk(10)
	if kept, err := s2.put([]*request{r10}); err != nil || kept != 1 {
		t.Fatalf("put: kept %d, %v", kept, err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := scanHeld(f, "fp", 11, false)
	f.Close()
	if err != nil || c.waiting != 1 || c.end != s2.end {
		t.Fatalf("spool after a new record: %+v (%v); want 1 waiting in %d bytes", c, err, s2.end)
	}
	s2.done(r10)
	s2.close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the spool is still there with every record done (%v)", err)
	}
}
