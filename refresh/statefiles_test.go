package refresh

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/internal/statefile"
	"github.com/treeport/treeport/layouts"
)

// TestFollowCheckpointRefused: the checkpoint of migrate --follow is
// written through a file made with O_EXCL (not the fixed PATH.tmp a link
// could be planted at), and one edited by hand, or a link in its place,
// is refused with exit 2's ErrUsage, naming it.
func TestFollowCheckpointRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "follow.ckpt")
	want := &followCheckpoint{Kind: followKind, From: "A", To: "B", Settings: "s", Records: 7}
	target := filepath.Join(dir, "precious")
	if err := os.WriteFile(target, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path+".tmp"); err != nil {
		t.Fatal(err)
	}
	if err := want.Save(path); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "mine" {
		t.Fatalf("save wrote through a link at %s.tmp: the target holds %q", path, b)
	}
	got, err := loadFollowCheckpoint(path, want)
	if err != nil || got.Records != 7 {
		t.Fatalf("load = %+v, %v; want the checkpoint saved", got, err)
	}

	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, bytes.Replace(b, []byte(`"records_applied": 7`), []byte(`"records_applied": 8`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadFollowCheckpoint(path, want); !errors.Is(err, ddbwrite.ErrUsage) || !errors.Is(err, statefile.ErrRefused) || !strings.Contains(err.Error(), path) {
		t.Errorf("an edited checkpoint: %v, want a refusal naming it", err)
	}

	link := filepath.Join(dir, "link.ckpt")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := loadFollowCheckpoint(link, want); !errors.Is(err, ddbwrite.ErrUsage) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a link in the checkpoint's place: %v, want a refusal", err)
	}
}

// TestPlanFileDigest: a plan file ends with the digest of its content and
// of the run it belongs to; an edit, a cut, or another run's plan does not
// verify.
func TestPlanFileDigest(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := NewPlanWriter(f, PlanHeader{Table: "T", Layout: "path", Snapshot: "s.csv", Run: "run-1"})
	if err != nil {
		t.Fatal(err)
	}
	s := &Summary{ByReason: map[Reason]*Count{}}
	for _, r := range Reasons {
		s.ByReason[r] = &Count{}
	}
	op := Op{Kind: Delete, Reason: ReasonRemoved, ID: "X", WCU: 1, Item: layouts.Item{"Id": &types.AttributeValueMemberS{Value: "X"}}}
	if err := pw.Write(op); err != nil {
		t.Fatal(err)
	}
	s.Add(op)
	if err := pw.Close(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
	verify := func(run string) error {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return VerifyPlanFile(f, run)
	}
	if err := verify("run-1"); err != nil {
		t.Fatalf("the plan as written: %v", err)
	}
	if err := verify("run-2"); !errors.Is(err, statefile.ErrRefused) {
		t.Errorf("another run's plan: %v, want a refusal", err)
	}
	b, _ := os.ReadFile(path)
	for name, edited := range map[string][]byte{
		"edited": bytes.Replace(b, []byte(`"table":"T"`), []byte(`"table":"U"`), 1),
		"cut":    b[:len(b)-10],
	} {
		if err := os.WriteFile(path, edited, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := verify("run-1"); !errors.Is(err, statefile.ErrRefused) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s plan: %v, want a refusal naming it", name, err)
		}
	}
}
