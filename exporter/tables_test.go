package exporter_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/exporter"
	"github.com/treeport/treeport/importer"
	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

// localClient connects to DynamoDB Local, or skips (fails under CI).
func localClient(t testing.TB) *dynamodb.Client {
	t.Helper()
	return ddblocal.Client(t, ddblocal.Endpoint(t))
}

// endpointOf is DynamoDB Local's URL, or skips (fails under CI).
func endpointOf(t testing.TB) string {
	t.Helper()
	return ddblocal.Endpoint(t)
}

// clientFor is a client of the endpoint at url (a fault proxy).
func clientFor(t testing.TB, url string) *dynamodb.Client {
	t.Helper()
	return ddblocal.Client(t, url)
}

var nowFunc = time.Now

// mustLayout makes a layout or fails the test.
func mustLayout(t testing.TB, name string, opts layouts.Options) layouts.Layout {
	t.Helper()
	l, err := layouts.New(name, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// nodesOf places records (a valid forest) in their trees.
func nodesOf(t testing.TB, recs []*transform.Record) []*transform.Node {
	t.Helper()
	byID := make(map[string]*transform.Record, len(recs))
	for _, r := range recs {
		byID[r.ID] = r
	}
	nodes := make([]*transform.Node, 0, len(recs))
	for _, r := range recs {
		path := []string{r.ID}
		for p := r.Parent; p != ""; p = byID[p].Parent {
			if byID[p] == nil {
				t.Fatalf("record %q: parent %q is not among the records", r.ID, p)
			}
			path = append(path, p)
		}
		slices.Reverse(path)
		nodes = append(nodes, &transform.Node{Record: *r, Depth: len(path) - 1, Path: path})
	}
	return nodes
}

// loadTable creates a table for l and writes the layout's items of recs.
func loadTable(t testing.TB, client *dynamodb.Client, l layouts.Layout, recs []*transform.Record) string {
	t.Helper()
	table := ddblocal.NewTable(t, client, l.Table())
	writeRecordsToTable(t, client, table, l, recs)
	return table
}

// writeRecordsToTable writes the layout's items of recs into table.
func writeRecordsToTable(t testing.TB, client *dynamodb.Client, table string, l layouts.Layout, recs []*transform.Record) {
	t.Helper()
	ctx := context.Background()
	w := ddbwrite.NewDDBWriter(client, table, l.Table(), ddbwrite.WriterOptions{Concurrency: 8})
	var seq int64
	var werr error
	for _, n := range nodesOf(t, recs) {
		err := l.Items(n, func(item layouts.Item) {
			if werr == nil {
				werr = w.Write(ctx, seq, item)
				seq++
			}
		})
		if err != nil {
			t.Fatalf("items of %q: %v", n.ID, err)
		}
		if werr != nil {
			t.Fatalf("writing %q: %v", n.ID, werr)
		}
	}
	if _, err := w.Close(ctx); err != nil {
		t.Fatalf("loading %s: %v", table, err)
	}
}

// importFile loads an input file into a new table the way import does:
// ReadInput, then Emit into the batch writer.
func importFile(t testing.TB, client *dynamodb.Client, l layouts.Layout, path string, src records.SourceOptions) string {
	t.Helper()
	ctx := context.Background()
	in, err := importer.ReadInput(ctx, importer.InputOptions{Path: path, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	if problems := in.CheckLayout(l); len(problems) > 0 {
		t.Fatalf("%s: %v", path, problems[0])
	}
	table := ddblocal.NewTable(t, client, l.Table())
	w := ddbwrite.NewDDBWriter(client, table, l.Table(), ddbwrite.WriterOptions{Concurrency: 8})
	if _, err := in.Emit(ctx, importer.EmitOptions{Layout: l}, func(seq int64, item layouts.Item) error {
		return w.Write(ctx, seq, item)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return table
}

// recordDiff compares two record sets by id, attributes typed (numbers by
// value, sets without order), and describes the first differences; "" when
// they are the same.
func recordDiff(got, want []*transform.Record) string {
	var b strings.Builder
	index := func(recs []*transform.Record) map[string]*transform.Record {
		m := make(map[string]*transform.Record, len(recs))
		for _, r := range recs {
			if m[r.ID] != nil {
				fmt.Fprintf(&b, "id %q twice\n", r.ID)
			}
			m[r.ID] = r
		}
		return m
	}
	g, w := index(got), index(want)
	for _, id := range sortedIDs(w) {
		r := w[id]
		o := g[id]
		switch {
		case o == nil:
			fmt.Fprintf(&b, "%q missing\n", id)
		case o.Parent != r.Parent:
			fmt.Fprintf(&b, "%q: parent %q, want %q\n", id, o.Parent, r.Parent)
		default:
			if d := attrsDiff(o.Attrs, r.Attrs); d != "" {
				fmt.Fprintf(&b, "%q: %s\n", id, d)
			}
		}
		if b.Len() > 2000 {
			return b.String()
		}
	}
	for _, id := range sortedIDs(g) {
		if w[id] == nil {
			fmt.Fprintf(&b, "%q not wanted\n", id)
		}
	}
	return b.String()
}

// attrsDiff describes how two attribute sets differ; "" when they do not.
func attrsDiff(got, want transform.Attrs) string {
	var out []string
	for k, v := range want {
		if o, ok := got[k]; !ok || !exporter.SameValue(o, v) {
			out = append(out, fmt.Sprintf("attribute %q: got %s, want %s", k, show(o), show(v)))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("attribute %q: got %s, want none", k, show(v)))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// show renders a value in DynamoDB JSON, or "none".
func show(v types.AttributeValue) string {
	if v == nil {
		return "none"
	}
	return string(ddbjson.AppendValue(nil, v))
}

func sortedIDs(m map[string]*transform.Record) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
