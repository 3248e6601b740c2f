package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// implicitPathCSV is a forest of path ids (joined with the layout's
// delimiter) whose inner nodes have no attributes: with --implicit-inner
// they get no item, without it they do.
func implicitPathCSV(delim string, roots, inner, leaves int) string {
	var b strings.Builder
	b.WriteString("id,parent_id,size\n")
	for r := range roots {
		root := fmt.Sprintf("R%d", r)
		fmt.Fprintf(&b, "%s,,\n", root)
		for i := range inner {
			in := root + delim + fmt.Sprintf("I%d", i)
			fmt.Fprintf(&b, "%s,%s,\n", in, root)
			for l := range leaves {
				fmt.Fprintf(&b, "%s%sL%d,%s,%d\n", in, delim, l, in, l+1)
			}
		}
	}
	return b.String()
}

// TestResumeRefusesOtherPathFlags: an import interrupted with --path-ids
// --implicit-inner, resumed without --implicit-inner, would skip the
// first items of another sequence of items (the inner nodes' items
// come in): the checkpoint's fingerprint holds the flags that shape the
// items, so the resume is refused (exit 2) and the table is not touched.
func TestResumeRefusesOtherPathFlags(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	l, err := layouts.New("path", layouts.Options{PathIDs: true, ImplicitInner: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := writeText(t, dir, "in.csv", implicitPathCSV(l.Delimiter(), 20, 40, 5))
	table := ddblocal.NewTable(t, client, l.Table())
	ck := filepath.Join(dir, "ck.json")
	args := []string{"import", "--in", in, "--types", "size:N", "--layout", "path", "--path-ids", "--table", table, "--checkpoint", ck, "--max-wcu", "2000", "--no-progress"}
	interruptWhen(t, awsEnv(endpoint), append(args, "--implicit-inner"), "progress in the checkpoint", checkpointMoved(ck))
	before := canonical(t, scanTable(t, client, table))
	_, msg, code := run(t, awsEnv(endpoint), args...) // without --implicit-inner
	if code != 2 || strings.Contains(msg, "resuming from checkpoint") {
		t.Errorf("resume without --implicit-inner: exit %d, want 2 (refused):\n%s", code, msg)
	}
	diffLines(t, canonical(t, scanTable(t, client, table)), before)
	// With the flags it was started with, the run goes on and the table
	// ends exact: no inner node's item.
	_, msg, code = run(t, awsEnv(endpoint), append(args, "--implicit-inner")...)
	if code != 0 || !strings.Contains(msg, "resuming from checkpoint") {
		t.Fatalf("resume with the same flags: exit %d:\n%s", code, msg)
	}
	diffLines(t, canonical(t, scanTable(t, client, table)), canonical(t, expectedItems(t, in, "size:N", l)))
}

// TestFullPathDoubledDelimiter: an S3 key with the delimiter doubled
// (photos//dup.jpg, which S3 allows) names no node (its path has an empty
// name). A listing of photos must not answer a child "photos/" and skip
// past every key of photos that sorts after it (cover.jpg, 2024...): it
// refuses the item, naming it, as descendants does.
func TestFullPathDoubledDelimiter(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	nodes, foreign := s3Hand(0)
	odd := layouts.Item{"bucket": s(s3Bucket), "key": s("photos//dup.jpg"), "size": &types.AttributeValueMemberN{Value: "1"}}
	all := append(append(slices.Clone(nodes), foreign...), odd)
	table := handTable(t, client, s3HandModel, all)
	tm := []string{"--table", table, "--model", s3Model, "--model-param", "bucket=" + s3Bucket}
	for _, kind := range []string{"children", "descendants"} {
		stdout, stderr, code := run(t, env, append([]string{"query", kind, "--id", "photos"}, tm...)...)
		t.Logf("query %s: exit %d\n%s%s", kind, code, stdout, stderr)
		if code == 0 {
			t.Errorf("query %s --id photos over photos//dup.jpg: exit 0, want the item refused:\n%s", kind, stdout)
		} else if !strings.Contains(stderr, "photos//dup.jpg") {
			t.Errorf("query %s: the error does not name the item photos//dup.jpg:\n%s", kind, stderr)
		}
	}
	if got := rawLines(t, client, table); !slices.Equal(got, itemLines(all)) {
		t.Fatalf("the queries changed the table")
	}
}

// TestFullPathUnparsableKeysKept: S3 keys that name no node (a folder
// marker photos/, a trailing-/ key below an implicit folder, a doubled
// delimiter) sit among a bucket's objects. Apply with --ignore-unparsable
// of an input that drops the last objects of the implicit folder
// photos/2024/trip deletes those objects alone; an edit that deletes the
// folder is refused or leaves the keys it did not read: every such item,
// and the other bucket's, stays byte-identical.
func TestFullPathUnparsableKeysKept(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	nodes, foreign := s3Hand(0)
	odd := []layouts.Item{
		{"bucket": s(s3Bucket), "key": s("photos/"), "size": &types.AttributeValueMemberN{Value: "0"}},
		{"bucket": s(s3Bucket), "key": s("photos/2024/trip/"), "size": &types.AttributeValueMemberN{Value: "0"}},
		{"bucket": s(s3Bucket), "key": s("photos//dup.jpg"), "size": &types.AttributeValueMemberN{Value: "1"}},
	}
	all := append(append(slices.Clone(nodes), foreign...), odd...)
	table := handTable(t, client, s3HandModel, all)
	wm := []string{"--table", table, "--model", s3Model, "--model-param", "bucket=" + s3Bucket}
	text := s3SeedJSONL
	for _, drop := range []string{"photos/2024/trip/img1.jpg", "photos/2024/trip/img2.jpg", "photos/2024/trip"} {
		var kept []string
		for _, line := range strings.SplitAfter(text, "\n") {
			if !strings.Contains(line, `"id":"`+drop+`"`) {
				kept = append(kept, line)
			}
		}
		text = strings.Join(kept, "")
	}
	snap := writeText(t, dir, "snap.jsonl", text)
	if _, stderr, code := run(t, env, append([]string{"apply", "--in", snap, "--no-progress"}, wm...)...); code != 2 {
		t.Errorf("apply without --ignore-unparsable: exit %d, want 2\n%s", code, stderr)
	}
	sameLines(t, "after the refused apply", rawLines(t, client, table), all)
	if stdout, stderr, code := run(t, env, append([]string{"apply", "--in", snap, "--no-progress", "--ignore-unparsable", "--allow-mass-delete"}, wm...)...); code != 0 {
		t.Fatalf("apply --ignore-unparsable: exit %d\n%s%s", code, stdout, stderr)
	}
	want := append(append(slices.Concat(nodes[:1], nodes[3:]), foreign...), odd...)
	sameLines(t, "after apply", rawLines(t, client, table), want)

	// The folder photos/2024/trip is still named by photos/2024/trip/
	// only (no node's key): deleting it deletes nothing it did not read.
	ops := writeText(t, dir, "ops.jsonl", `{"op":"delete","id":"photos/2024/trip"}`+"\n"+`{"op":"delete","id":"photos"}`+"\n")
	stdout, stderr, code := run(t, env, append([]string{"edit", "--ops", ops, "--no-progress"}, wm...)...)
	t.Logf("edit: exit %d\n%s%s", code, stdout, stderr)
	after := rawLines(t, client, table)
	for _, it := range append(slices.Clone(foreign), odd...) {
		if line := itemLines([]layouts.Item{it})[0]; !slices.Contains(after, line) {
			t.Errorf("edit changed or deleted an item it did not read as a node: %s", line)
		}
	}
}

// TestMigrateIntoBucketWithUnparsableKeys: migrate into a non-empty S3
// inventory table whose bucket holds keys that name no node (photos/,
// photos//dup.jpg) and whose other bucket shares the table: without
// --ignore-unparsable it stops, nothing written; with it, those items and
// the other bucket's stay byte-identical.
func TestMigrateIntoBucketWithUnparsableKeys(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	nodes, foreign := s3Hand(0)
	src := handTable(t, client, s3HandModel, append(slices.Clone(nodes), foreign...))
	odd := []layouts.Item{
		{"bucket": s(s3Bucket), "key": s("photos/"), "size": &types.AttributeValueMemberN{Value: "0"}},
		{"bucket": s(s3Bucket), "key": s("photos//dup.jpg"), "size": &types.AttributeValueMemberN{Value: "1"}},
	}
	stale := layouts.Item{"bucket": s(s3Bucket), "key": s("photos/cover.jpg"), "size": &types.AttributeValueMemberN{Value: "1"}}
	before := append(append(slices.Clone(foreign), odd...), stale)
	dst := handTable(t, client, s3HandModel, before)
	args := []string{"migrate", "--from-table", src, "--from-model", s3Model, "--to-table", dst, "--to-model", s3Model,
		"--model-param", "bucket=" + s3Bucket, "--no-progress", "--allow-mass-delete"}
	if _, stderr, code := run(t, env, args...); code != 2 {
		t.Errorf("migrate without --ignore-unparsable: exit %d, want 2\n%s", code, stderr)
	}
	sameLines(t, "after the refused migrate", rawLines(t, client, dst), before)
	if stdout, stderr, code := run(t, env, append(args, "--ignore-unparsable")...); code != 0 {
		t.Fatalf("migrate --ignore-unparsable: exit %d\n%s%s", code, stdout, stderr)
	}
	sameLines(t, "after migrate", rawLines(t, client, dst), append(append(slices.Clone(nodes), foreign...), odd...))
}

// TestResumeRefusesAnotherModel: an import into an S3 inventory table
// interrupted, then resumed after the model file was changed (its sort
// key now OBJ#{id}: other items), or with another bucket, is refused
// (exit 2), the table untouched: the checkpoint's fingerprint holds the
// model's text and its parameters, not only its name.
func TestResumeRefusesAnotherModel(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	modelText := readFile(t, s3Model)
	model := writeText(t, dir, "s3.json", modelText)
	in := writeText(t, dir, "in.csv", implicitPathCSV("/", 20, 40, 5))
	table := handTable(t, client, s3HandModel, nil)
	ck := filepath.Join(dir, "ck.json")
	args := []string{"import", "--in", in, "--types", "size:N", "--model", model, "--model-param", "bucket=b1", "--table", table,
		"--checkpoint", ck, "--max-wcu", "2000", "--no-progress"}
	interruptWhen(t, env, args, "progress in the checkpoint", checkpointMoved(ck))
	before := rawLines(t, client, table)
	writeText(t, dir, "s3.json", strings.Replace(modelText, `"template": "{id}"`, `"template": "OBJ#{id}"`, 1))
	_, msg, code := run(t, env, args...)
	if code != 2 || strings.Contains(msg, "resuming from checkpoint") {
		t.Errorf("resume with a changed model file: exit %d, want 2 (refused):\n%s", code, msg)
	}
	if got := rawLines(t, client, table); !slices.Equal(got, before) {
		t.Errorf("the refused resume changed the table: %d items, were %d", len(got), len(before))
	}
	writeText(t, dir, "s3.json", modelText)
	other := slices.Clone(args)
	other[slices.Index(other, "bucket=b1")] = "bucket=b2"
	if _, msg, code := run(t, env, other...); code != 2 || strings.Contains(msg, "resuming from checkpoint") {
		t.Errorf("resume with another bucket: exit %d, want 2 (refused):\n%s", code, msg)
	}
	if got := rawLines(t, client, table); !slices.Equal(got, before) {
		t.Errorf("the refused resume changed the table: %d items, were %d", len(got), len(before))
	}
}

// TestFollowIgnoresOtherTenantsRemoves: following an ElectroDB table for
// the tenant acme, globex's employees e42 and e7 (acme's ids) removed
// and changed in the source, and acme's task removed, are no records of
// acme's tree: acme's e42 and e7 stay in the copy as they were.
func TestFollowIgnoresOtherTenantsRemoves(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	src, dest, cmd, out := edbFollowing(t, client, env)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, sk := range []string{"$employee_1#employeeid_e42"} {
		if _, err := client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(src),
			Key: layouts.Item{"pk": s("$hr#orgid_globex"), "sk": s(sk)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(src),
		Key: layouts.Item{"pk": s("$hr#orgid_acme"), "sk": s("$task_1#taskid_t9")}}); err != nil {
		t.Fatal(err)
	}
	putItems(t, client, src, edbEmployee("globex", "e7", "", "Gina"))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("follower: %v\n%s", err, out)
	}
	ids := edbCopy(t, client, dest)
	want := []string{"e1<:Ada", "e42<e7:Alan", "e43<e7:Edsger", "e7<e1:Grace", "e9<e1:Barbara"}
	if !slices.Equal(ids, want) {
		t.Fatalf("followed copy: %v, want %v\n%s", ids, want, out)
	}
}

// TestStoreLocationsKeyCollisions: store-locations keys a store by its
// name (StoreNumber) alone. A store moved to another city keeps its
// key: apply puts its new location, and sends no delete of the old
// (the same key), so the store is there after; a new store named as the
// head office's item (another entity), or two stores with one number,
// are refused (exit 2) with nothing written.
func TestStoreLocationsKeyCollisions(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	all := append(slNodes(), slForeign()...)
	work := handTable(t, client, slHand, all)
	wm := []string{"--table", work, "--model", slModel}
	line := `{"id":"USA#WA#SEATTLE#98101#1001","parent_id":"USA#WA#SEATTLE#98101","Name":"Pike Place"}` + "\n"
	if !strings.Contains(slSeedJSONL, line) {
		t.Fatalf("the seed has no line %s", line)
	}
	for _, bad := range []struct{ name, text, where string }{
		{"a store named as the head office", slSeedJSONL + `{"id":"USA#WA#SEATTLE#98101#HQ","parent_id":"USA#WA#SEATTLE#98101","Name":"Not HQ"}` + "\n", "HQ"},
		{"two stores 1001", slSeedJSONL + `{"id":"USA#OR#PORTLAND#97201#1001","parent_id":"USA#OR#PORTLAND#97201","Name":"Twin"}` + "\n", "USA#OR#PORTLAND#97201#1001"},
	} {
		snap := writeText(t, dir, "bad.jsonl", bad.text)
		_, stderr, code := run(t, env, append([]string{"apply", "--in", snap, "--no-progress", "--allow-mass-delete"}, wm...)...)
		if code != 2 || !strings.Contains(stderr, bad.where) {
			t.Errorf("apply of %s: exit %d, want 2 naming %s\n%s", bad.name, code, bad.where, stderr)
		}
		sameLines(t, "after apply of "+bad.name, rawLines(t, client, work), all)
	}
	// An edit that sets attributes on a new path whose name is 1001's.
	ops := writeText(t, dir, "ops.jsonl", `{"op":"set","id":"USA#OR#PORTLAND#97201#1001","attributes":{"Name":"Twin"}}`+"\n")
	_, stderr, code := run(t, env, append([]string{"edit", "--ops", ops, "--no-progress"}, wm...)...)
	if code != 2 || !strings.Contains(stderr, "USA#OR#PORTLAND#97201#1001") {
		t.Errorf("edit set on a new 1001: exit %d, want 2 naming it\n%s", code, stderr)
	}
	sameLines(t, "after the edit", rawLines(t, client, work), all)
	moved := strings.Replace(slSeedJSONL, line, `{"id":"USA#OR#PORTLAND#97201#1001","parent_id":"USA#OR#PORTLAND#97201","Name":"Pike Place"}`+"\n", 1)
	snap := writeText(t, dir, "moved.jsonl", moved)
	if stdout, stderr, code := run(t, env, append([]string{"apply", "--in", snap, "--no-progress", "--allow-mass-delete"}, wm...)...); code != 0 {
		t.Fatalf("apply of a moved store: exit %d\n%s%s", code, stdout, stderr)
	}
	n := slNodes()
	want := append([]layouts.Item{slStore("1001", "USA", "OR#PORTLAND#97201", "Pike Place")}, n[1:]...)
	sameLines(t, "after the move", rawLines(t, client, work), append(want, slForeign()...))
	if stdout, stderr, code := run(t, env, append([]string{"plan", "--in", snap, "--detailed-exitcode"}, wm...)...); code != 0 {
		t.Errorf("plan after apply: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestPrefixDanglingListingRow: a dynamotree table holds a listing row
// (¦Accounts¦, 999) with no object row and nothing below (a Put cut
// short, or another writer's).
// Without --implicit-inner it names no node: an apply of Accounts alone
// never deletes it (no node of the table owns it); with --path-ids
// --implicit-inner it is no node either (nothing below it), and an apply
// of a snapshot with the leaf Accounts¦999 adds its object row alone.
func TestPrefixDanglingListingRow(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	rows := append(dynamotreePut([]string{"Accounts"}, layouts.Item{"kind": s("directory")}), layouts.Item{"Key": s("¦Accounts¦"), "Child": s("999")})
	object := layouts.Item{"Key": s("¦Accounts¦999"), "Child": s("¦")}
	for _, mode := range []struct {
		flags []string
		snap  string
		added []layouts.Item
	}{
		{nil, `{"id":"Accounts","kind":"directory"}` + "\n", nil},
		{[]string{"--path-ids", "--implicit-inner"}, `{"id":"Accounts","kind":"directory"}` + "\n" + `{"id":"Accounts¦999","parent_id":"Accounts"}` + "\n", []layouts.Item{object}},
	} {
		table := prefixTable(t, client, rows)
		snap := writeText(t, dir, "snap.jsonl", mode.snap)
		args := append([]string{"apply", "--in", snap, "--table", table, "--layout", "prefix", "--no-progress", "--allow-mass-delete"}, mode.flags...)
		if stdout, stderr, code := run(t, env, args...); code != 0 {
			t.Fatalf("apply %v: exit %d\n%s%s", mode.flags, code, stdout, stderr)
		}
		sameLines(t, fmt.Sprintf("after apply %v", mode.flags), rawLines(t, client, table), append(slices.Clone(rows), mode.added...))
	}
}
