package main

// End-to-end tests of migrate --follow (issue 17) against DynamoDB Local:
// a source without a stream, a follower killed at random points and run
// again from its checkpoint, and a follower behind a fault proxy, all while
// a mutator changes the source.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddb"
	"github.com/treeport/treeport/internal/streams"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/testserver/faultproxy"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/models"
	"github.com/treeport/treeport/transform"
)

// adjSource is an adjacency-layout source table changed by raw
// PutItem, UpdateItem and DeleteItem calls (moves included: an adjacency
// move is one UpdateItem of ParentId), and the test's model of its forest.
type adjSource struct {
	client *dynamodb.Client
	table  string
	mu     sync.Mutex
	parent map[string]string
	attr   map[string]string
	next   int
}

func newAdjSource(t *testing.T, client *dynamodb.Client, nodes int, stream bool) *adjSource {
	t.Helper()
	l, err := layouts.New(layouts.AdjacencyName, layouts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	src := &adjSource{client: client, table: ddblocal.NewTable(t, client, l.Table()), parent: map[string]string{}, attr: map[string]string{}}
	if stream {
		sc, err := streams.NewClient(context.Background(), ddb.AWSOptions{EndpointURL: ddblocal.Endpoint(t)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := streams.Enable(context.Background(), client, sc, src.table, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(uint64(nodes), 5))
	for i := range nodes {
		parent := ""
		if i > 0 && r.IntN(6) != 0 {
			parent = fmt.Sprintf("N%d", r.IntN(i))
		}
		if err := src.put(context.Background(), fmt.Sprintf("N%d", i), parent, "v0"); err != nil {
			t.Fatal(err)
		}
	}
	src.next = nodes
	return src
}

func (src *adjSource) put(ctx context.Context, id, parent, v string) error {
	item := map[string]types.AttributeValue{"Id": &types.AttributeValueMemberS{Value: id}, "v": &types.AttributeValueMemberS{Value: v}}
	if parent != "" {
		item["ParentId"] = &types.AttributeValueMemberS{Value: parent}
	}
	_, err := src.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &src.table, Item: item})
	if err == nil {
		src.parent[id], src.attr[id] = parent, v
	}
	return err
}

func (src *adjSource) ids() []string {
	ids := make([]string, 0, len(src.parent))
	for id := range src.parent {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (src *adjSource) under(x, id string) bool {
	for p := x; p != ""; p = src.parent[p] {
		if p == id {
			return true
		}
	}
	return false
}

// mutate makes one valid change of the source.
func (src *adjSource) mutate(ctx context.Context, r *rand.Rand) error {
	src.mu.Lock()
	defer src.mu.Unlock()
	ids := src.ids()
	x := ids[r.IntN(len(ids))]
	key := map[string]types.AttributeValue{"Id": &types.AttributeValueMemberS{Value: x}}
	switch r.IntN(5) {
	case 0: // a new leaf
		src.next++
		return src.put(ctx, fmt.Sprintf("N%d", src.next), x, "new")
	case 1, 2: // a move, the whole subtree with it
		p := ids[r.IntN(len(ids))]
		if r.IntN(5) == 0 {
			p = ""
		}
		if p != "" && src.under(p, x) {
			return nil
		}
		in := &dynamodb.UpdateItemInput{TableName: &src.table, Key: key, UpdateExpression: aws.String("REMOVE ParentId")}
		if p != "" {
			in.UpdateExpression = aws.String("SET ParentId = :p")
			in.ExpressionAttributeValues = map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: p}}
		}
		if _, err := src.client.UpdateItem(ctx, in); err != nil {
			return err
		}
		src.parent[x] = p
	case 3: // an attribute
		v := fmt.Sprintf("v%d", r.IntN(1000))
		if _, err := src.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &src.table, Key: key,
			UpdateExpression:          aws.String("SET v = :v"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberS{Value: v}}}); err != nil {
			return err
		}
		src.attr[x] = v
	default: // a leaf goes
		for _, c := range ids {
			if src.parent[c] == x {
				return nil
			}
		}
		if len(ids) < 5 {
			return nil
		}
		if _, err := src.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &src.table, Key: key}); err != nil {
			return err
		}
		delete(src.parent, x)
		delete(src.attr, x)
	}
	return nil
}

// run runs the mutator until stop is closed; the returned channel gives
// its error.
func (src *adjSource) run(stop <-chan struct{}, seed uint64) <-chan error {
	done := make(chan error, 1)
	go func() {
		r := rand.New(rand.NewPCG(seed, 1))
		// One change tried at least, however late this goroutine runs
		// (a stop closed before it first ran used to leave A unchanged):
		// the callers check that the follower applied a record.
		for first := true; ; first = false {
			select {
			case <-stop:
				if !first {
					done <- nil
					return
				}
			default:
			}
			if err := src.mutate(context.Background(), r); err != nil {
				done <- err
				return
			}
			time.Sleep(time.Duration(r.IntN(40)) * time.Millisecond)
		}
	}()
	return done
}

// want is every item layout l wants for the model's forest, by key.
func (src *adjSource) want(t *testing.T, l layouts.Layout) map[string]layouts.Item {
	t.Helper()
	src.mu.Lock()
	defer src.mu.Unlock()
	out := map[string]layouts.Item{}
	for _, id := range src.ids() {
		var path []string
		for p := id; p != ""; p = src.parent[p] {
			path = append([]string{p}, path...)
		}
		n := transform.Node{Record: transform.Record{ID: id, Parent: src.parent[id],
			Attrs: transform.Attrs{"v": &types.AttributeValueMemberS{Value: src.attr[id]}}}, Depth: len(path) - 1, Path: path}
		if err := l.Items(&n, func(it layouts.Item) { out[layouts.KeyOf(l.Table(), it)] = it }); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// itemsByKey is every item of a table, by key (consistent reads).
func itemsByKey(t *testing.T, client *dynamodb.Client, table string, spec layouts.TableSpec) map[string]layouts.Item {
	t.Helper()
	out := map[string]layouts.Item{}
	p := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: &table, ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			out[layouts.KeyOf(spec, it)] = it
		}
	}
	return out
}

// sameItems reports how two sets of items differ, "" when they do not.
func sameItems(got, want map[string]layouts.Item) string {
	var diff []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			diff = append(diff, "missing "+k)
		} else if !reflect.DeepEqual(g, w) {
			diff = append(diff, "different "+k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			diff = append(diff, "extra "+k)
		}
	}
	slices.Sort(diff)
	if len(diff) > 5 {
		diff = append(diff[:5], fmt.Sprintf("and %d more", len(diff)-5))
	}
	return strings.Join(diff, ", ")
}

func followArgs(endpoint, from, to, ck string, extra ...string) []string {
	return append([]string{"migrate", "--from-table", from, "--from-layout", "adjacency", "--to-table", to, "--to-layout", "closure",
		"--create-table", "--follow", "--checkpoint", ck, "--endpoint-url", endpoint, "--no-progress"}, extra...)
}

// A source without a stream: exit 2, saying how to enable one; nothing is
// created or written.
func TestFollowWithoutStream(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	src := newAdjSource(t, client, 5, false)
	dest := ddblocal.TableName(t)
	ck := filepath.Join(t.TempDir(), "ck.json")
	_, stderr, code := run(t, nil, followArgs(endpoint, src.table, dest, ck, "--follow-idle", "1s")...)
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"has no stream", "aws dynamodb update-table --table-name " + src.table + " --stream-specification StreamEnabled=true,StreamViewType=NEW_AND_OLD_IMAGES", "--enable-stream"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	if _, err := client.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: &dest}); err == nil {
		t.Errorf("the destination %s was created", dest)
		dropTable(t, client, dest)
	}
	if _, err := os.Stat(ck); err == nil {
		t.Error("a checkpoint was written")
	}
}

// A source whose stream carries no new images (KEYS_ONLY): with or without
// --enable-stream, exit 2 saying to disable it and enable one with new
// images (--enable-stream cannot replace a stream; before, it tried and
// exited 3 with DynamoDB's "Table already has an enabled stream").
func TestFollowKeysOnlyStream(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	src := newAdjSource(t, client, 5, false)
	if _, err := client.UpdateTable(context.Background(), &dynamodb.UpdateTableInput{TableName: &src.table,
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeKeysOnly}}); err != nil {
		t.Fatal(err)
	}
	dest := ddblocal.TableName(t)
	ck := filepath.Join(t.TempDir(), "ck.json")
	for _, extra := range [][]string{nil, {"--enable-stream"}} {
		_, stderr, code := run(t, nil, followArgs(endpoint, src.table, dest, ck, append([]string{"--follow-idle", "1s"}, extra...)...)...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2; stderr:\n%s", extra, code, stderr)
		}
		if !strings.Contains(stderr, "KEYS_ONLY") || !strings.Contains(stderr, "disable it and enable one with NEW_AND_OLD_IMAGES") {
			t.Errorf("%v: stderr does not say the stream carries KEYS_ONLY records and what to do:\n%s", extra, stderr)
		}
		if _, err := client.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: &dest}); err == nil {
			t.Errorf("%v: the destination %s was created", extra, dest)
			dropTable(t, client, dest)
		}
	}
}

func dropTable(t *testing.T, client *dynamodb.Client, table string) {
	t.Helper()
	if _, err := client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &table}); err != nil {
		t.Errorf("delete table %s: %v", table, err)
	}
}

// startFollower starts treeport and returns it with its stderr.
func startFollower(t *testing.T, args []string) (*exec.Cmd, *syncBuf) {
	t.Helper()
	cmd := exec.Command(treeportBin, args...)
	errb := &syncBuf{}
	cmd.Stdout, cmd.Stderr = errb, errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, errb
}

// The follower is killed (SIGKILL) at random points, in the copy and in the
// follow, while the mutator changes the source; then interrupted (SIGINT:
// exit 130, position saved); then run to the end from its checkpoint. The
// destination ends exactly what its layout wants for the final forest.
//
// Both ways: in memory, and out of core (forced, --memory 1MiB): the copy
// spilled and imported by the out-of-core passes, the follower's state in
// stores in --tmp-dir, which the interrupted follower and the final one
// leave empty (a killed one's are swept by the next run).
func TestFollowKilledAndResumed(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: kills the follower at random points (10 s under -race)")
	}
	t.Run("in-memory", func(t *testing.T) { followKilledAndResumed(t, false) })
	t.Run("out-of-core", func(t *testing.T) { followKilledAndResumed(t, true) })
}

func followKilledAndResumed(t *testing.T, ooc bool) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	src := newAdjSource(t, client, 30, true)
	dest := ddblocal.TableName(t)
	t.Cleanup(func() { dropTable(t, client, dest) })
	ck := filepath.Join(t.TempDir(), "ck.json")
	stop := make(chan struct{})
	mutated := src.run(stop, 7)
	r := rand.New(rand.NewPCG(7, 7))
	// The mutator moves subtrees of a 30-node tree while the follower is
	// down: the resumed copy's deletes of the moved nodes' closure rows are
	// past --max-delete-ratio, which counts every delete. The churn is
	// meant, and the guard is not what this test checks.
	args := followArgs(endpoint, src.table, dest, ck, "--allow-mass-delete")
	tmp := t.TempDir()
	if ooc {
		args = append(args, "--force-out-of-core", "--memory", "1MiB", "--tmp-dir", tmp)
	}
	// What the killed followers left (swept by a run a minute later, once
	// their locks are old enough to be a dead process's): a follower that
	// ends leaves nothing more.
	var killed map[string]bool
	emptyTmp := func(when string) {
		t.Helper()
		left, _ := os.ReadDir(tmp)
		for _, e := range left {
			if !killed[e.Name()] {
				t.Errorf("%s, --tmp-dir holds %s, which no killed follower left", when, e.Name())
			}
		}
	}
	for i := range 3 {
		cmd, out := startFollower(t, args)
		time.Sleep(time.Duration(300+r.IntN(2500)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		t.Logf("kill %d:\n%s", i, out)
	}
	killed = map[string]bool{}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		for _, e := range left {
			killed[e.Name()] = true
		}
	}
	// Ctrl-C once following: the records in hand are finished, the
	// position saved, exit 130.
	cmd, out := startFollower(t, args)
	waitForOutput(t, cmd, out, "following the stream")
	waitForRecords(t, cmd, out)
	if ooc {
		// The follower's state is in its stores' directory in --tmp-dir.
		var state []string
		left, _ := os.ReadDir(tmp)
		for _, e := range left {
			if !killed[e.Name()] && strings.HasPrefix(e.Name(), "treeport-follow-") {
				state = append(state, e.Name())
			}
		}
		if len(state) != 1 {
			t.Errorf("while following, --tmp-dir holds %d state directories of this follower, want 1", len(state))
		}
	}
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("interrupted follower: exit %d (%v), want 130:\n%s", code, err, out)
	}
	if !strings.Contains(out.String(), "stream position saved to "+ck) || !strings.Contains(out.String(), "cutover-check: ") {
		t.Errorf("the interrupted follower does not report its saved position:\n%s", out)
	}
	if n := recordsApplied(t, out.String()); n == 0 {
		t.Errorf("the interrupted follower applied no stream record:\n%s", out)
	}
	emptyTmp("after Ctrl-C")
	if copied := strings.Contains(out.String(), "out of core"); copied != ooc {
		t.Errorf("the copy ran out of core: %v, want %v\n%s", copied, ooc, out)
	}
	saved, err := os.ReadFile(ck)
	if err != nil || !strings.Contains(string(saved), `"shards"`) {
		t.Fatalf("checkpoint: %v\n%s", err, saved)
	}
	close(stop)
	if err := <-mutated; err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := run(t, nil, append(args, "--follow-idle", "2s")...)
	if code != 0 {
		t.Fatalf("final follower: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "resuming the stream of "+src.table+" from checkpoint") {
		t.Errorf("the rerun does not say it resumed:\n%s", stderr)
	}
	if !strings.Contains(stdout, "cutover-check: ") || !strings.Contains(stdout, "verify: exact") {
		t.Errorf("no cutover-check line saying exact:\n%s", stdout)
	}
	emptyTmp("at the end")
	l, _ := layouts.New(layouts.ClosureName, layouts.Options{})
	if d := sameItems(itemsByKey(t, client, dest, l.Table()), src.want(t, l)); d != "" {
		t.Errorf("the destination differs from the final forest's closure items: %s", d)
	}
}

// Throttles, 5xx and cut connections between the follower and the engine,
// on every call (the stream's included), while the source changes: the
// destination still converges exactly.
func TestFollowThroughFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: follows a changing source through injected faults (52 s under -race)")
	}
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	src := newAdjSource(t, client, 25, true)
	dest := ddblocal.TableName(t)
	t.Cleanup(func() { dropTable(t, client, dest) })
	p, err := faultproxy.New(faultproxy.Config{Target: endpoint, Seed: 17, Throttle: 0.08, ServerError: 0.05, Partial: 0.2, Cut: 0.03, Lifetime: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	// The source changes from before the follower starts until a second
	// into its follow.
	stop := make(chan struct{})
	mutated := src.run(stop, 11)
	ck := filepath.Join(t.TempDir(), "ck.json")
	cmd, out := startFollower(t, followArgs(p.URL(), src.table, dest, ck, "--follow-idle", "3s"))
	waitForOutput(t, cmd, out, "following the stream")
	time.Sleep(time.Second)
	close(stop)
	if err := <-mutated; err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	stdout, stderr := out.String(), ""
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d\n%s", code, stdout)
	}
	if n := recordsApplied(t, stdout); n == 0 {
		t.Errorf("no stream record was applied:\n%s", stdout)
	}
	c := p.Counts()
	if c.Faults() < 5 {
		t.Errorf("only %d faults were injected: %+v", c.Faults(), c)
	}
	t.Logf("%s; %d requests, %d faults injected\n%s", strings.TrimSpace(stdout), c.Requests, c.Faults(), stderr)
	if !strings.Contains(stdout, "verify: exact") {
		t.Errorf("no cutover-check line saying exact:\n%s", stdout)
	}
	l, _ := layouts.New(layouts.ClosureName, layouts.Options{})
	if d := sameItems(itemsByKey(t, client, dest, l.Table()), src.want(t, l)); d != "" {
		t.Errorf("the destination differs from the final forest's closure items: %s\n%s", d, stderr)
	}
}

// The follower goes idle while A is not a valid tree (a node whose parent
// does not exist): B keeps its last valid state, and the verification says
// B is not exact: exit 1 (SPEC §8: 0 or 1 after the idle verify), naming
// the node and saying what to do. Before, the verify's read of A failed as
// invalid input: exit 2, "nothing was planned or written", about a
// temporary file.
func TestFollowIdleWhileSourceInvalid(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	src := newAdjSource(t, client, 8, true)
	dest := ddblocal.TableName(t)
	t.Cleanup(func() { dropTable(t, client, dest) })
	ck := filepath.Join(t.TempDir(), "ck.json")
	cmd, out := startFollower(t, followArgs(endpoint, src.table, dest, ck, "--follow-idle", "2s"))
	waitForOutput(t, cmd, out, "following the stream")
	orphan := map[string]types.AttributeValue{"Id": &types.AttributeValueMemberS{Value: "orphan"}, "ParentId": &types.AttributeValueMemberS{Value: "nowhere"}}
	if _, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &src.table, Item: orphan}); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	text := out.String()
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit %d, want 1:\n%s", code, text)
	}
	for _, want := range []string{"1 node held, verify: not exact", `"orphan"`, "not a valid tree", "run the same command again"} {
		if !strings.Contains(text, want) {
			t.Errorf("the output does not say %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "treeport-verify-") {
		t.Errorf("the output names the verify's temporary file:\n%s", text)
	}
	l, _ := layouts.New(layouts.ClosureName, layouts.Options{})
	if d := sameItems(itemsByKey(t, client, dest, l.Table()), src.want(t, l)); d != "" {
		t.Errorf("B is not the last valid state (the forest without the orphan): %s", d)
	}
}

// Items of B that DynamoDB refuses during the follow go to --dead-letter,
// and the follower says so while it runs (the progress lines) and when it
// is stopped (the cutover-check line), not only at the end of an idle
// verify: a follower runs for days. Before, a Ctrl-C'd follower's output
// never mentioned them.
func TestFollowSaysDeadLetters(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	src := newAdjSource(t, client, 6, true)
	dest := ddblocal.TableName(t)
	t.Cleanup(func() { dropTable(t, client, dest) })
	p, err := faultproxy.New(faultproxy.Config{Target: endpoint, Reject: "bad", Lifetime: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	ck := filepath.Join(t.TempDir(), "ck.json")
	dl := filepath.Join(t.TempDir(), "dead.jsonl")
	cmd, out := startFollower(t, followArgs(p.URL(), src.table, dest, ck, "--dead-letter", dl))
	waitForOutput(t, cmd, out, "following the stream")
	// A new node whose items B's writes carry "bad": the proxy refuses them.
	item := map[string]types.AttributeValue{"Id": &types.AttributeValueMemberS{Value: "rejected"},
		"ParentId": &types.AttributeValueMemberS{Value: "N0"}, "bad": &types.AttributeValueMemberS{Value: "x"}}
	if _, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &src.table, Item: item}); err != nil {
		t.Fatal(err)
	}
	want := "refused by DynamoDB (dead letters in " + dl + ")"
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), want) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	text := out.String()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d, want 130:\n%s", code, text)
	}
	if p.Counts().Rejected == 0 {
		t.Fatalf("the proxy refused nothing:\n%s", text)
	}
	var progress, cutover bool
	for _, line := range strings.Split(text, "\n") {
		progress = progress || strings.HasPrefix(line, "follow: ") && strings.Contains(line, want)
		cutover = cutover || strings.HasPrefix(line, "cutover-check: ") && strings.Contains(line, want)
	}
	if !progress || !cutover {
		t.Errorf("a progress line says %q: %v; the cutover-check line: %v\n%s", want, progress, cutover, text)
	}
}

// --follow's usage mistakes exit 2 before anything is read or written.
func TestFollowUsage(t *testing.T) {
	base := []string{"migrate", "--from-table", "tableA", "--from-layout", "path", "--to-table", "tableB", "--to-layout", "closure", "--endpoint-url", "http://127.0.0.1:9"}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--follow"}, "give --checkpoint FILE"},
		{[]string{"--follow-idle", "5s"}, "--follow-idle and --enable-stream go with --follow"},
		{[]string{"--enable-stream"}, "--follow-idle and --enable-stream go with --follow"},
		{[]string{"--follow", "--follow-idle", "-1s"}, "give a duration above 0"},
	} {
		_, stderr, code := run(t, nil, append(slices.Clone(base), c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.says) {
			t.Errorf("%v: exit %d, want 2 saying %q:\n%s", c.args, code, c.says, stderr)
		}
	}
}

// followerExact waits for the follower to end (90 s at most, then it is
// killed) and wants exit 0, and its verify's "verify: exact".
func followerExact(t *testing.T, cmd *exec.Cmd, out *syncBuf) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("follower: %v\n%s", err, out)
		}
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the follower did not end within 90 s:\n%s", out)
	}
	if !strings.Contains(out.String(), "verify: exact") {
		t.Errorf("the follower does not say the copy is exact:\n%s", out)
	}
}

// waitForOutput waits until the follower says text.
func waitForOutput(t *testing.T, cmd *exec.Cmd, out *syncBuf, text string) {
	t.Helper()
	waitForFollower(t, cmd, out, fmt.Sprintf("the follower never said %q", text), func(s string) bool { return strings.Contains(s, text) })
}

// waitForFollower waits until ok holds for what the follower wrote; after
// a minute (a bound on a hung run) it kills it and fails with never.
func waitForFollower(t *testing.T, cmd *exec.Cmd, out *syncBuf, never string, ok func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok(out.String()) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("%s:\n%s", never, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// recordsApplied reads the number of records of the cutover-check line.
// appliedLine is the follower's progress line once it has applied a
// stream record.
var appliedLine = regexp.MustCompile(`follow: [1-9][0-9,]* records? applied`)

// waitForRecords waits until the follower's progress line (one every 5 s)
// says it has applied a stream record, instead of hoping a fixed pause is
// long enough on a loaded machine; the minute is a bound on a hung one.
func waitForRecords(t *testing.T, cmd *exec.Cmd, out *syncBuf) {
	t.Helper()
	waitForFollower(t, cmd, out, "the follower applied no stream record in a minute", appliedLine.MatchString)
}

func recordsApplied(t *testing.T, out string) int {
	t.Helper()
	_, rest, ok := strings.Cut(out, "cutover-check: ")
	var n int
	if !ok {
		t.Fatalf("no cutover-check line:\n%s", out)
	}
	count, _, _ := strings.Cut(rest, " stream record")
	if _, err := fmt.Sscanf(strings.ReplaceAll(count, ",", ""), "%d", &n); err != nil {
		t.Fatalf("cutover-check line: %v:\n%s", err, out)
	}
	return n
}

// TestFollowIntoRowModels: migrate --follow into a table of the closure
// model, and of the prefix model, while the source changes (new leaves,
// moves of whole subtrees, attributes, deleted leaves): the rows the model
// wants for the final forest, exactly, and verify says so. A move
// rewrites the rows of the moved subtree through the model's templates.
func TestFollowIntoRowModels(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: follows into every row model (15 s under -race)")
	}
	for _, model := range []string{"fixtures/models/closure-single-table.json", "fixtures/models/prefix-directories.json"} {
		t.Run(filepath.Base(model), func(t *testing.T) { followIntoModel(t, model) })
	}
}

func followIntoModel(t *testing.T, model string) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	src := newAdjSource(t, client, 25, true)
	dest := ddblocal.TableName(t)
	t.Cleanup(func() { dropTable(t, client, dest) })
	ck := filepath.Join(t.TempDir(), "ck.json")
	args := []string{"migrate", "--from-table", src.table, "--from-layout", "adjacency", "--to-table", dest, "--to-model", model,
		"--create-table", "--follow", "--checkpoint", ck, "--endpoint-url", endpoint, "--no-progress"}
	cmd, out := startFollower(t, args)
	waitForOutput(t, cmd, out, "following the stream")
	stop := make(chan struct{})
	mutated := src.run(stop, 11)
	time.Sleep(2 * time.Second)
	close(stop)
	if err := <-mutated; err != nil {
		t.Fatal(err)
	}
	waitForRecords(t, cmd, out)
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("interrupted follower: exit %d, want 130:\n%s", code, out)
	}
	if n := recordsApplied(t, out.String()); n == 0 {
		t.Fatalf("the follower applied no stream record:\n%s", out)
	}
	stdout, stderr, code := run(t, nil, append(args, "--follow-idle", "2s")...)
	if code != 0 || !strings.Contains(stdout, "verify: exact") {
		t.Fatalf("final follower: exit %d, want 0 and verify exact\n%s\n%s", code, stdout, stderr)
	}
	l, err := models.LoadModel(model)
	if err != nil {
		t.Fatal(err)
	}
	if d := sameItems(itemsByKey(t, client, dest, l.Table()), src.want(t, l)); d != "" {
		t.Errorf("the destination differs from the final forest's rows of %s: %s", model, d)
	}
}
