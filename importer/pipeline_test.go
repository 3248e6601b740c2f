package importer

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/treeport/treeport/internal/ddbjson"
	"github.com/treeport/treeport/layouts"
	"github.com/treeport/treeport/records"
	"github.com/treeport/treeport/transform"
)

// randomTreeCSV is a random forest of n nodes, in shuffled order, with
// every kind of typed column, empty cells, quoted cells and a few bad rows.
func randomTreeCSV(n int, seed int64) string { return randomTreeCSVIn(n, seed, true) }

// randomTreeCSVIn is randomTreeCSV with the rows shuffled or, with
// shuffle false, every parent before its children.
func randomTreeCSVIn(n int, seed int64, shuffle bool) string {
	rng := rand.New(rand.NewSource(seed))
	var sb strings.Builder
	sb.WriteString("id,parent_id,name,size,ok,tags,blob,note\n")
	order := rng.Perm(n)
	if !shuffle {
		slices.Sort(order)
	}
	for _, i := range order {
		parent := ""
		if i > 0 && rng.Intn(20) > 0 {
			parent = "n" + strconv.Itoa(rng.Intn(i))
		}
		fmt.Fprintf(&sb, "n%d,%s,", i, parent)
		if rng.Intn(4) > 0 {
			fmt.Fprintf(&sb, "name %d", rng.Intn(1000))
		}
		sb.WriteByte(',')
		switch rng.Intn(6) {
		case 0:
		case 1:
			fmt.Fprintf(&sb, "-%d.%d00e%d", rng.Intn(1000), rng.Intn(100), rng.Intn(20))
		case 2:
			sb.WriteString("0.000")
		default:
			fmt.Fprintf(&sb, "%d", rng.Intn(1<<30))
		}
		sb.WriteByte(',')
		sb.WriteString([]string{"", "true", "0", "FALSE"}[rng.Intn(4)])
		sb.WriteByte(',')
		sb.WriteString([]string{"", `"[1,""x"",{""k"":null}]"`, "{}", `"{""a"":[true,2.50]}"`}[rng.Intn(4)])
		sb.WriteByte(',')
		sb.WriteString([]string{"", "AAEC/w==", "AAEC", "QUJD"}[rng.Intn(4)])
		sb.WriteByte(',')
		sb.WriteString([]string{"", "plain", `"quoted, with ""quotes"""`, "\"two\r\nlines\"", "ünï"}[rng.Intn(5)])
		sb.WriteString([]string{"\n", "\r\n"}[rng.Intn(2)])
		if rng.Intn(50) == 0 {
			// A bad row now and then: each kind of problem.
			sb.WriteString([]string{
				"bad" + strconv.Itoa(i) + ",n0,x,12x,,,,\n",
				"bad" + strconv.Itoa(i) + ",n0,x,,yes,,,\n",
				"bad" + strconv.Itoa(i) + ",n0,x,,,{,,\n",
				"bad" + strconv.Itoa(i) + ",n0,x,,,,!!!!,\n",
				"bad" + strconv.Itoa(i) + ",n0\n",
				"bad" + strconv.Itoa(i) + ",n0,\xff,,,,,\n",
				"bad" + strconv.Itoa(i) + ",n0,x\"y,,,,,\n",
				"n" + strconv.Itoa(i) + ",,dup,,,,,\n",
				",n0,no id,,,,,\n",
			}[rng.Intn(9)])
		}
	}
	return sb.String()
}

var randomTreeTypes = map[string]string{"size": "N", "ok": "BOOL", "tags": "JSON", "blob": "B"}

// pipelineCase is an input and the options to read it with.
type pipelineCase struct {
	name  string
	path  string
	types map[string]string
	copy  []string
}

func pipelineCases(t *testing.T) []pipelineCase {
	t.Helper()
	big := 3000 // -short: 500, the size of the other random cases
	if testing.Short() {
		big = 500
	}
	cases := []pipelineCase{
		{name: "random", path: writeTemp(t, "random.csv", []byte(randomTreeCSV(big, 1))), types: randomTreeTypes},
		{name: "random closure copy", path: writeTemp(t, "random.csv", []byte(randomTreeCSV(500, 2))), types: randomTreeTypes, copy: []string{"size", "tags", "none"}},
		{name: "random copy none", path: writeTemp(t, "random.csv", []byte(randomTreeCSV(500, 3))), types: randomTreeTypes, copy: []string{}},
		{name: "first seen in a bad row", path: writeTemp(t, "seen.csv", []byte("id,parent_id,a,b\nx,,,12x\ny,x,1,\nz,x,,2\n")), types: map[string]string{"b": "N"}},
		{name: "gzip", path: writeTemp(t, "random.csv.gz", gzipped(t, []byte(randomTreeCSV(300, 4)))), types: randomTreeTypes},
		{name: "random parents first", path: writeTemp(t, "ordered.csv", []byte(randomTreeCSVIn(big, 5, false))), types: randomTreeTypes},
	}
	for _, dir := range []string{"../fixtures", "../fixtures/bad"} {
		paths, err := filepath.Glob(filepath.Join(dir, "*.csv*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			// A file that cannot be opened at all (empty, a column's name
			// over DynamoDB's limit) has no rows for the reads to agree on.
			src, err := records.OpenSource(p, records.SourceOptions{})
			if err != nil {
				continue
			}
			src.Close()
			c := pipelineCase{name: filepath.Base(p), path: p}
			if spec, err := os.ReadFile(strings.TrimSuffix(strings.TrimSuffix(p, ".gz"), ".csv") + ".types"); err == nil {
				if c.types, err = records.ParseTypes(strings.TrimSpace(string(spec))); err != nil {
					t.Fatal(err)
				}
			}
			if filepath.Base(p) == "wrong-type.csv" {
				c.types = map[string]string{"size": "N"}
			}
			cases = append(cases, c)
		}
	}
	return cases
}

// TestSkeletonReadMatchesRecords holds the fast reads (the skeleton read of
// ReadInput, Emit's read into one reused record) to the record by record
// reads they stand for: the same skeleton, problems, attribute names,
// items and rejects.
func TestSkeletonReadMatchesRecords(t *testing.T) {
	ctx := context.Background()
	for _, tc := range pipelineCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			opts := InputOptions{Path: tc.path, Source: records.SourceOptions{Types: tc.types}, ClosureCopy: tc.copy}
			slow, err := readInput(ctx, opts, false)
			if err != nil {
				t.Fatal(err)
			}
			fast, err := readInput(ctx, opts, true)
			if err != nil {
				t.Fatal(err)
			}
			if fast.Records != slow.Records || fast.Forest.Len() != slow.Forest.Len() {
				t.Fatalf("fast read: %d records, %d nodes; record by record: %d, %d",
					fast.Records, fast.Forest.Len(), slow.Records, slow.Forest.Len())
			}
			if got, want := problemText(fast.Problems), problemText(slow.Problems); got != want {
				t.Errorf("fast read's problems:\n%s\nrecord by record:\n%s", got, want)
			}
			if len(fast.attrNames) != len(slow.attrNames) {
				t.Errorf("attribute names: %v, want %v", slices.Sorted(maps.Keys(fast.attrNames)), slices.Sorted(maps.Keys(slow.attrNames)))
			}
			for k, want := range slow.attrNames {
				if got := fast.attrNames[k]; got == nil || got.Error() != want.Error() {
					t.Errorf("attribute %q first seen at %v, want %v", k, got, want)
				}
			}
			var fs, ss transform.Stats
			for i := range slow.Forest.Len() {
				fast.Forest.Stats(i, &fs)
				slow.Forest.Stats(i, &ss)
				if fs != ss || fast.Forest.Rejected(i) != slow.Forest.Rejected(i) {
					t.Fatalf("node %d: %+v (rejected %v), record by record %+v (rejected %v)",
						i, fs, fast.Forest.Rejected(i), ss, slow.Forest.Rejected(i))
				}
			}
			if testing.Short() && tc.name != "random" {
				return
			}
			for _, name := range layouts.Names() {
				l, err := layouts.New(name, layouts.Options{ClosureCopy: tc.copy})
				if err != nil {
					t.Fatal(err)
				}
				fast.Forest.Reset()
				slow.Forest.Reset()
				if got, want := problemText(fast.CheckLayout(l)), problemText(slow.CheckLayout(l)); got != want {
					t.Fatalf("%s: fast read's layout problems:\n%s\nrecord by record:\n%s", name, got, want)
				}
				got, gotRejects := emitAll(t, fast, l, true)
				want, wantRejects := emitAll(t, slow, l, false)
				if got != want {
					t.Errorf("%s: the items differ between Emit's reads", name)
				}
				if gotRejects != wantRejects {
					t.Errorf("%s: rejects:\n%s\nrecord by record:\n%s", name, gotRejects, wantRejects)
				}
			}
		})
	}
}

func problemText(ps []*transform.RowError) string {
	var sb strings.Builder
	for _, p := range ps {
		sb.WriteString(p.Error())
		sb.WriteByte('\n')
	}
	return sb.String()
}

// emitAll returns every item Emit gives, in order, as DynamoDB JSON, and
// the rejects file.
func emitAll(t *testing.T, in *Input, l layouts.Layout, fast bool) (items, rejects string) {
	t.Helper()
	var out, rej bytes.Buffer
	var kept []layouts.Item
	st, err := in.emit(context.Background(), EmitOptions{Layout: l, Rejects: &rej}, func(seq int64, item layouts.Item) error {
		if seq != int64(len(kept)) {
			t.Fatalf("item %d numbered %d", len(kept), seq)
		}
		kept = append(kept, item)
		return nil
	}, fast)
	if err != nil {
		t.Fatal(err)
	}
	// Encoded only now: an item must stay as it was when Emit gave it.
	for _, item := range kept {
		out.Write(ddbjson.AppendLine(nil, item))
	}
	fmt.Fprintf(&out, "%+v\n", st)
	return out.String(), rej.String()
}
