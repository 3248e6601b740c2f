package main

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/treeport/treeport/internal/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// Issue 24, second review: a foreign item (another entity of a typed
// model's table) that sits under the very key a snapshot's node would
// take. Before, plan counted it as "left alone" and apply and migrate put
// the node over it: the user (_type = User) under PK = SK = NODE#C was
// replaced by node C. Now plan, apply and migrate refuse (exit 2), name
// the key, and the table is byte for byte what it was.
func TestSafetyReviewSnapshotNodeOverForeignItem(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	v1 := writeText(t, dir, "v1.csv", "id,parent_id,name\nA,,Root\nB,A,Child\n")
	v2 := writeText(t, dir, "v2.csv", "id,parent_id,name\nA,,Root\nB,A,Child\nC,A,New\n")
	model := "fixtures/models/single-table.json"
	table := ddblocal.TableName(t)
	dropTableLater(t, client, table)
	if stdout, stderr, code := run(t, env, "import", "--in", v1, "--model", model, "--table", table, "--create-table", "--no-progress"); code != 0 {
		t.Fatalf("import v1: exit %d\n%s%s", code, stdout, stderr)
	}
	user := layouts.Item{"PK": s("NODE#C"), "SK": s("NODE#C"), "_type": s("User"), "email": s("c@example.com")}
	if _, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: user}); err != nil {
		t.Fatal(err)
	}
	before := rawLines(t, client, table)

	src := ddblocal.TableName(t)
	dropTableLater(t, client, src)
	if stdout, stderr, code := run(t, env, "import", "--in", v2, "--layout", "path", "--table", src, "--create-table", "--no-progress"); code != 0 {
		t.Fatalf("import the source: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, args := range [][]string{
		{"plan", "--in", v2, "--model", model, "--table", table},
		{"apply", "--in", v2, "--model", model, "--table", table, "--no-progress"},
		{"apply", "--in", v2, "--model", model, "--table", table, "--no-progress", "--ignore-unparsable", "--allow-mass-delete"},
		{"migrate", "--from-table", src, "--from-layout", "path", "--to-table", table, "--to-model", model, "--no-progress", "--ignore-unparsable", "--allow-mass-delete"},
	} {
		stdout, stderr, code := run(t, env, args...)
		if code != 2 || !strings.Contains(stderr, `"NODE#C"`) {
			t.Errorf("%s with a foreign item under node C's key: exit %d, want 2 naming the key:\n%s%s", args[0], code, stdout, stderr)
		}
		if got := rawLines(t, client, table); strings.Join(got, "\n") != strings.Join(before, "\n") {
			t.Fatalf("%s changed the table:\n got  %s\n want %s", strings.Join(args[:2], " "), strings.Join(got, "\n      "), strings.Join(before, "\n      "))
		}
	}
}

// An edit that moves a node to keys it never read: in a directory table
// (prefix-directories), the root README moves into CM1, whose listing
// already holds a Note named README (another entity, _type = Note).
// Before, edit put README's listing row over the note. In a closure
// single-table, CM4 moves one level deeper, onto a row key where an
// audit entry sits. Now edit refuses (exit 2, nothing written) and names
// the key.
func TestSafetyReviewEditOverForeignItem(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	for _, c := range []struct {
		model, tree, edit string
		foreign           layouts.Item
	}{
		{"fixtures/models/prefix-directories.json", "id,parent_id,name\nCM1,,Roadster\nREADME,,Readme\n",
			`{"op":"move","id":"README","parent":"CM1"}`,
			layouts.Item{"PK": s("DIR#/CM1/"), "SK": s("ENTRY#README"), "_type": s("Note"), "text": s("read me first")}},
		{"fixtures/models/closure-single-table.json", "id,parent_id,name\nCM1,,a\nCM2,CM1,b\nCM3,CM1,c\nCM4,CM2,d\n",
			`{"op":"move","id":"CM2","parent":"CM3"}`,
			layouts.Item{"PK": s("NODE#CM4"), "SK": s("ANC#0003"), "_type": s("Audit"), "who": s("ann")}},
	} {
		t.Run(c.model, func(t *testing.T) {
			in := writeText(t, dir, "tree.csv", c.tree)
			edits := writeText(t, dir, "edits.jsonl", c.edit+"\n")
			table := ddblocal.TableName(t)
			dropTableLater(t, client, table)
			if stdout, stderr, code := run(t, env, "import", "--in", in, "--model", c.model, "--table", table, "--create-table", "--no-progress"); code != 0 {
				t.Fatalf("import: exit %d\n%s%s", code, stdout, stderr)
			}
			if _, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: c.foreign}); err != nil {
				t.Fatal(err)
			}
			before := rawLines(t, client, table)
			stdout, stderr, code := run(t, env, "edit", "--ops", edits, "--model", c.model, "--table", table, "--no-progress")
			if code != 2 || !strings.Contains(stderr, "another entity") {
				t.Errorf("edit onto a foreign item's key: exit %d, want 2 naming it:\n%s%s", code, stdout, stderr)
			}
			if got := rawLines(t, client, table); strings.Join(got, "\n") != strings.Join(before, "\n") {
				t.Fatalf("edit changed the table:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(before, "\n      "))
			}
		})
	}
}
