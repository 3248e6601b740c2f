package main

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// TestExportRootOutOfCoreEveryLayout exports subtrees (--root) of the
// cars table in every layout in memory and forced out of core in a tiny
// --memory, where the subtree's query stops at its first item and the
// whole table's passes keep the subtree, and compares them byte for
// byte: an inner node in every format, a leaf, a root of the table (no
// orphan), and a missing id (the same error, exit code and no file).
func TestExportRootOutOfCoreEveryLayout(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	for _, layout := range []string{"path", "sharded-path", "closure", "prefix", "adjacency"} {
		t.Run(layout, func(t *testing.T) {
			table := importFixture(t, endpoint, layout)
			common := []string{"--table", table, "--layout", layout, "--endpoint-url", endpoint, "--segments", "2"}
			formats := []string{"r.jsonl", "r.csv"}
			if layout == "path" || layout == "prefix" {
				formats = []string{"r.jsonl", "r.json", "r.csv", "r.parquet", "r.ddbjson", "r.jsonl.gz", "r.csv.gz"}
			}
			for _, name := range formats {
				stderr := rootBoth(t, name, append(common, "--root", "CM2")...)
				if !strings.Contains(stderr, `exported 18 nodes of the subtree of "CM2"`) {
					t.Errorf("%s: %s", name, stderr)
				}
			}
			rootBoth(t, "leaf.jsonl", append(common, "--root", "CM7")...)
			rootBoth(t, "leaf.csv", append(common, "--root", "CM7")...)
			rootBoth(t, "top.jsonl", append(common, "--root", "CM1")...)
			exportBothCode(t, "missing.jsonl", append(common, "--root", "CM999")...)
		})
	}
}

// TestExportRootOutOfCorePathIDs: a subtree of a prefix table with path
// ids, whose inner node without an item of its own (implied) is in the
// subtree; subtrees below a cycle of parents, and one in it (an error);
// and subtrees of a table model's table, whose other items are not
// nodes: the same bytes (or error) out of core as in memory.
func TestExportRootOutOfCorePathIDs(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	t.Run("path ids", func(t *testing.T) {
		table := prefixTable(t, client, dynamotreeRows())
		common := []string{"--table", table, "--layout", "prefix", "--path-ids", "--endpoint-url", endpoint}
		for _, root := range []string{"Accounts¦654321", "Accounts¦123456¦Links", "Accounts"} {
			rootBoth(t, "ids.jsonl", append(common, "--root", root)...)
			rootBoth(t, "ids.csv", append(common, "--root", root)...)
		}
		exportBothCode(t, "gone.jsonl", append(common, "--root", "Accounts¦000")...)
	})
	t.Run("a root whose id repeats", func(t *testing.T) {
		row := func(key, child string, attrs ...string) layouts.Item {
			it := layouts.Item{"Key": &types.AttributeValueMemberS{Value: key}, "Child": &types.AttributeValueMemberS{Value: child}}
			for i := 0; i+1 < len(attrs); i += 2 {
				it[attrs[i]] = &types.AttributeValueMemberS{Value: attrs[i+1]}
			}
			return it
		}
		table := prefixTable(t, client, []layouts.Item{
			row("¦A", "¦", "name", "a"), row("¦B", "¦", "name", "b"),
			row("¦A¦", "d"), row("¦A¦d", "¦", "name", "first d"),
			row("¦B¦", "d"), row("¦B¦d", "¦", "name", "second d"),
			row("¦B¦d¦", "f"), row("¦B¦d¦f", "¦", "name", "f"),
			row("¦C", "¦", "name", "c"), row("¦C¦", "x"), row("¦C¦x", "¦", "name", "x"),
			row("¦C¦x¦", "d"), row("¦C¦x¦d", "¦", "name", "third d"),
		})
		args := []string{"export", "--table", table, "--layout", "prefix", "--endpoint-url", endpoint, "--root", "d", "--path", "B¦d", "--out", "-", "--format", "jsonl"}
		stdout, stderr, code := run(t, nil, args...)
		if code != 0 || !strings.Contains(stdout, "second d") || !strings.Contains(stdout, `"f"`) {
			t.Fatalf("in memory: exit %d: %s\n%s", code, stdout, stderr)
		}
		// Out of core the parents' ids cannot tell the d apart (f's
		// parent is d): refused, with what to do.
		stdout, stderr, code = run(t, nil, append(args, oocArgs(t.TempDir())...)...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, `3 nodes with the id "d"`) || !strings.Contains(stderr, "give a --memory that holds") {
			t.Errorf("out of core: exit %d: %s\n%s", code, stdout, stderr)
		}
		// Nor a subtree with a repeated id below its root: its children
		// could be another's.
		args = []string{"export", "--table", table, "--layout", "prefix", "--endpoint-url", endpoint, "--root", "C", "--out", "-", "--format", "jsonl"}
		if stdout, stderr, code := run(t, nil, args...); code != 0 || !strings.Contains(stdout, "third d") {
			t.Fatalf("in memory: exit %d: %s\n%s", code, stdout, stderr)
		}
		stdout, stderr, code = run(t, nil, append(args, oocArgs(t.TempDir())...)...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, `3 nodes whose id another has too (d)`) {
			t.Errorf("out of core: exit %d: %s\n%s", code, stdout, stderr)
		}
	})
	t.Run("below a cycle", func(t *testing.T) {
		s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
		node := func(id, parent string) layouts.Item {
			it := layouts.Item{"Id": s(id), "name": s("the node " + id)}
			if parent != "" {
				it["ParentId"] = s(parent)
			}
			return it
		}
		table := adjacencyHand(t, client, []layouts.Item{node("c1", "c2"), node("c2", "c1"), node("below", "c2"),
			node("b1", "below"), node("b2", "below"), node("b21", "b2"), node("top", "")})
		common := []string{"--table", table, "--layout", "adjacency", "--endpoint-url", endpoint}
		// The tour reaches a root below a cycle: it starts a tree of
		// its own out of core.
		rootBoth(t, "below.jsonl", append(common, "--root", "below")...)
		rootBoth(t, "b2.csv", append(common, "--root", "b2")...)
		// A root in a cycle is below itself: the same error.
		exportBothCode(t, "cycle.jsonl", append(common, "--root", "c1")...)
	})
	t.Run("model", func(t *testing.T) {
		table := handTable(t, client, slHand, append(slNodes(), slForeign()...))
		common := []string{"--table", table, "--model", slModel, "--endpoint-url", endpoint}
		for _, root := range []string{"USA#WA", "USA", "USA#OR#PORTLAND#97201#1004"} {
			rootBoth(t, "stores.jsonl", append(common, "--root", root)...)
			rootBoth(t, "stores.parquet", append(common, "--root", root)...)
		}
	})
}

// rootBoth is exportBoth for a subtree, whose out-of-core run must have
// scanned the whole table (its query went over the budget).
func rootBoth(t *testing.T, name string, args ...string) string {
	t.Helper()
	stderr := exportBoth(t, name, args...)
	if !strings.Contains(stderr, "the whole table was scanned") {
		t.Errorf("%s: the subtree out of core did not scan the table:\n%s", name, stderr)
	}
	return stderr
}
