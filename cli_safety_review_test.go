package main

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/testserver/faultproxy"
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
	putItems(t, client, table, user)
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
			putItems(t, client, table, c.foreign)
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

// migrate --follow into a single-table design whose users sit beside the
// tree: a node created in the source during the follow, N99, would take
// the key of the destination's user PK = SK = NODE#N99 (_type = User).
// The copy refuses such a node; before, a followed record put it over the
// user. Now the follower holds N99 (B keeps its last state, none), says why, and the end's verify refuses the tree B cannot hold (exit 2); the user
// is as it was.
func TestSafetyReviewFollowOverForeignItem(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	model := "fixtures/models/single-table.json"
	src := newAdjSource(t, client, 5, true)
	dest := ddblocal.TableName(t)
	dropTableLater(t, client, dest)
	one := writeText(t, t.TempDir(), "one.csv", "id,parent_id\nX,\n")
	if stdout, stderr, code := run(t, awsEnv(endpoint), "import", "--in", one, "--table", dest, "--create-table", "--no-progress", "--model", model); code != 0 {
		t.Fatalf("create the destination: exit %d\n%s%s", code, stdout, stderr)
	}
	user := layouts.Item{"PK": s("NODE#N99"), "SK": s("NODE#N99"), "_type": s("User"), "email": s("n99@example.com")}
	putItems(t, client, dest, user)
	args := []string{"migrate", "--from-table", src.table, "--from-layout", "adjacency", "--to-table", dest, "--to-model", model,
		"--follow", "--follow-idle", "3s", "--checkpoint", t.TempDir() + "/ck.json", "--endpoint-url", endpoint,
		"--no-progress", "--allow-mass-delete"}
	cmd, out := startFollower(t, args)
	waitForOutput(t, cmd, out, "following the stream")
	if err := src.put(context.Background(), "N99", "N0", "v1"); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	got := rawLines(t, client, dest)
	if !slices.Contains(got, itemLines([]layouts.Item{user})[0]) {
		t.Fatalf("the follow wrote over the user NODE#N99 (exit %d):\n%s\ntable:\n%s", cmd.ProcessState.ExitCode(), out, strings.Join(got, "\n"))
	}
	if code := cmd.ProcessState.ExitCode(); code == 0 || !strings.Contains(out.String(), `cannot hold node "N99"`) || !strings.Contains(out.String(), "another entity") || !strings.Contains(out.String(), "1 node held") {
		t.Fatalf("follower: exit %d, want N99 held, naming the user's item, and not 0:\n%s", code, out)
	}
}

// An apply stopped by a refused put resumes from the plan kept beside its
// checkpoint, without reading the table again. In between, the table
// changed: a user (_type = User) was written under new node C's key, and
// node D's item was replaced by another user. Before, the rerun put C over
// the first and deleted the second. Now the rerun reads what its
// remaining writes would change and refuses (exit 2), both users intact.
func TestSafetyReviewResumeOverForeignItems(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	dir := t.TempDir()
	model := "fixtures/models/single-table.json"
	v1 := writeText(t, dir, "v1.csv", "id,parent_id,name,poison\nA,,Root,\nB,A,Child,\nD,A,Gone,\n")
	v2 := writeText(t, dir, "v2.csv", "id,parent_id,name,poison\nA,,Root,\nB,A,Child,\nC,A,New,x\n")
	table := ddblocal.TableName(t)
	dropTableLater(t, client, table)
	if stdout, stderr, code := run(t, awsEnv(endpoint), "import", "--in", v1, "--model", model, "--table", table, "--create-table", "--no-progress"); code != 0 {
		t.Fatalf("import v1: exit %d\n%s%s", code, stdout, stderr)
	}
	proxy, err := faultproxy.New(faultproxy.Config{Target: endpoint, Reject: "poison", Lifetime: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	ck := filepath.Join(dir, "ck.json")
	args := []string{"apply", "--in", v2, "--model", model, "--table", table, "--checkpoint", ck, "--no-progress", "--allow-mass-delete"}
	if stdout, stderr, code := run(t, awsEnv(proxy.URL()), args...); code == 0 || proxy.Counts().Rejected == 0 {
		t.Fatalf("apply with a refused put: exit %d, want non-zero:\n%s%s", code, stdout, stderr)
	}
	users := []layouts.Item{
		{"PK": s("NODE#C"), "SK": s("NODE#C"), "_type": s("User"), "email": s("c@example.com")},
		{"PK": s("NODE#D"), "SK": s("NODE#D"), "_type": s("User"), "email": s("d@example.com")},
	}
	putItems(t, client, table, users...)
	stdout, stderr, code := run(t, awsEnv(endpoint), args...)
	containsAll(t, "after the rerun", rawLines(t, client, table), users)
	if code != 2 || !strings.Contains(stderr, "another entity") {
		t.Fatalf("rerun over the users: exit %d, want 2 naming one:\n%s%s", code, stdout, stderr)
	}
}

// The mass-delete guard under --shard k/N: each copy deletes only its own
// share of a removal, and used to weigh it against every item of the
// table, so a removal that apply refuses whole (3 of 30 nodes, 27 of 95
// closure items) went through as four --shard k/4 copies, each under 10%
// of the 95. Now a copy weighs its deletes against its own share of the
// table: every copy that deletes is refused, and the table is unchanged.
func TestSafetyReviewShardedGuardCountsShareOfItems(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	tree := func(depth int) string {
		var b strings.Builder
		b.WriteString("id,parent_id\nR,\n")
		for i := 1; i <= 20; i++ {
			b.WriteString("L" + strconv.Itoa(i) + ",R\n")
		}
		parent := "R"
		for i := 1; i <= depth; i++ {
			b.WriteString("D" + strconv.Itoa(i) + "," + parent + "\n")
			parent = "D" + strconv.Itoa(i)
		}
		return b.String()
	}
	dir := t.TempDir()
	full, cut := writeText(t, dir, "full.csv", tree(9)), writeText(t, dir, "cut.csv", tree(6))
	table := ddblocal.TableName(t)
	dropTableLater(t, client, table)
	if stdout, stderr, code := run(t, env, "import", "--in", full, "--layout", "closure", "--table", table, "--create-table", "--no-progress"); code != 0 {
		t.Fatalf("import: exit %d\n%s%s", code, stdout, stderr)
	}
	before := rawLines(t, client, table)
	for k := range 4 {
		shard := strconv.Itoa(k) + "/4"
		stdout, stderr, code := run(t, env, "apply", "--in", cut, "--layout", "closure", "--table", table, "--shard", shard, "--no-progress")
		if code != 0 && code != 2 {
			t.Fatalf("apply --shard %s: exit %d\n%s%s", shard, code, stdout, stderr)
		}
		if got := rawLines(t, client, table); !slices.Equal(got, before) {
			t.Fatalf("apply --shard %s (exit %d) deleted %d of the 95 items although apply refuses the whole removal:\n%s%s", shard, code, len(before)-len(got), stdout, stderr)
		}
	}
}

// Under --shard k/N, puts before deletes across copies: in the prefix
// layout a move changes a node's keys (its object row ¦R¦A¦X becomes
// ¦R¦B¦X), and the old and new rows hash to different copies. Before, the
// copy owning the old rows deleted them once its own puts were
// acknowledged: run alone (the other copy failed or never ran), apply
// --shard 0/2 left X0…X7 without an object row, gone from the table. Now
// a copy's deletes of moved nodes wait (--shard-wait) for the new items
// the other copies put: alone, it exits 3 with every node still there;
// once the other copy ran, its rerun finishes and the table is exact.
func TestSafetyReviewShardedPrefixMoveKeepsNode(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	var v1, v2 strings.Builder
	v1.WriteString("id,parent_id\nR,\n")
	v2.WriteString("id,parent_id\nR,\n")
	for i := range 8 {
		a, b, x := "A"+strconv.Itoa(i), "B"+strconv.Itoa(i), "X"+strconv.Itoa(i)
		v1.WriteString(a + ",R\n" + b + ",R\n" + x + "," + a + "\n")
		v2.WriteString(a + ",R\n" + b + ",R\n" + x + "," + b + "\n")
	}
	p1 := writeText(t, dir, "v1.csv", v1.String())
	p2 := writeText(t, dir, "v2.csv", v2.String())
	l, err := layouts.New("prefix", layouts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, order := range [][2]string{{"0/2", "1/2"}, {"1/2", "0/2"}} {
		table := ddblocal.TableName(t)
		dropTableLater(t, client, table)
		if stdout, stderr, code := run(t, env, "import", "--in", p1, "--layout", "prefix", "--table", table, "--create-table", "--no-progress"); code != 0 {
			t.Fatalf("import: exit %d\n%s%s", code, stdout, stderr)
		}
		apply := func(k string) (string, int) {
			ck := filepath.Join(dir, strings.ReplaceAll(table+k, "/", "-")+".ck.json")
			stdout, stderr, code := run(t, env, "apply", "--in", p2, "--layout", "prefix", "--table", table, "--shard", k,
				"--shard-wait", "2s", "--checkpoint", ck, "--no-progress", "--allow-mass-delete")
			return stdout + stderr, code
		}
		out, code := apply(order[0])
		lines := rawLines(t, client, table)
		for i := range 8 {
			x := "X" + strconv.Itoa(i)
			found := false
			for _, l := range lines {
				if strings.Contains(l, "¦"+x+`"}`) && strings.Contains(l, `"Child":{"S":"¦"}`) {
					found = true
				}
			}
			if !found {
				t.Fatalf("apply --shard %s alone (exit %d): node %s has no object row left:\n%s", order[0], code, x, out)
			}
		}
		if code == 0 && strings.Contains(out, "other copies") {
			t.Fatalf("apply --shard %s alone: exit 0 while saying it waited in vain:\n%s", order[0], out)
		}
		if out, code := apply(order[1]); code != 0 {
			t.Fatalf("apply --shard %s: exit %d\n%s", order[1], code, out)
		}
		if out, code := apply(order[0]); code != 0 {
			t.Fatalf("apply --shard %s again: exit %d\n%s", order[0], code, out)
		}
		sameLines(t, "after both copies", rawLines(t, client, table), expectedItems(t, p2, "", l))
	}
}
