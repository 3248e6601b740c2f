package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// docRows reads the first table of docs/MODELS.md below the heading of
// file: one item a row, an empty cell an absent attribute, size a number
// and every other attribute a string.
func docRows(t *testing.T, file string) []layouts.Item {
	t.Helper()
	b, err := os.ReadFile("docs/MODELS.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n### "+file+"\n")
	if !ok {
		t.Fatalf("docs/MODELS.md has no heading %q", file)
	}
	cells := func(line string) []string {
		f := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		return f
	}
	var header []string
	var items []layouts.Item
	for _, line := range strings.Split(rest, "\n") {
		switch {
		case strings.HasPrefix(line, "### "):
			return items
		case !strings.HasPrefix(line, "|"):
			if header != nil {
				return items
			}
		case header == nil:
			header = cells(line)
		case strings.HasPrefix(line, "|---"):
		default:
			it := layouts.Item{}
			for i, v := range cells(line) {
				switch {
				case v == "":
				case header[i] == "size":
					it[header[i]] = &types.AttributeValueMemberN{Value: v}
				default:
					it[header[i]] = s(v)
				}
			}
			items = append(items, it)
		}
	}
	return items
}

// TestShippedModelDocRows: the rows docs/MODELS.md shows for each model
// designed for issue 25, put in a table by hand, are what the model reads
// and writes: the nodes the text names export; the export imported into
// a table holding the other rows alone gives back the table the document
// shows, byte for byte; and the children the text names, in the number
// of Queries it says.
func TestShippedModelDocRows(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	for _, c := range []struct {
		file    string
		hand    handModel
		flags   []string
		foreign func(layouts.Item) bool
		nodes   []string // the export's ids, sorted
		id      string   // a node whose children the text names
		kids    []string
		queries int
	}{
		{"fixtures/models/electrodb-employees.json", edbHand, []string{"--model", edbModel, "--model-param", "org=acme"},
			func(it layouts.Item) bool {
				return valueOf(it["__edb_e__"]) != "employee" || valueOf(it["orgId"]) != "acme"
			},
			[]string{"e1", "e42", "e7"}, "e7", []string{"e42@1"}, 1},
		{"fixtures/models/s3-inventory.json", s3HandModel, []string{"--model", s3Model, "--model-param", "bucket=photos-bucket"},
			func(it layouts.Item) bool { return valueOf(it["bucket"]) != "photos-bucket" },
			[]string{"photos", "photos/2024", "photos/2024/trip", "photos/2024/trip/img1.jpg", "photos/2024/trip/img2.jpg", "photos/cover.jpg", "readme.txt"},
			"photos", []string{"photos/2024@1", "photos/cover.jpg@1"}, 2},
		{"fixtures/models/store-locations.json", slHand, []string{"--model", slModel},
			func(it layouts.Item) bool { return it["Country"] == nil },
			nil, "USA", []string{"USA#ME@1", "USA#OR@1", "USA#WA@1"}, 4},
		{"fixtures/models/store-locations.json", slHand, []string{"--model", slModel},
			func(it layouts.Item) bool { return it["Country"] == nil },
			nil, "USA#WA#SEATTLE#98101", []string{"USA#WA#SEATTLE#98101#1001@1", "USA#WA#SEATTLE#98101#1002@1"}, 2},
	} {
		t.Run(filepath.Base(c.file)+"/"+c.id, func(t *testing.T) {
			rows := docRows(t, c.file)
			if len(rows) < 3 {
				t.Fatalf("docs/MODELS.md shows %d rows for %s", len(rows), c.file)
			}
			table := handTable(t, client, c.hand, rows)
			tm := append([]string{"--table", table}, c.flags...)
			out := filepath.Join(dir, filepath.Base(c.file)+".jsonl")
			if _, stderr, code := run(t, env, append([]string{"export", "--out", out}, tm...)...); code != 0 {
				t.Fatalf("export: exit %d\n%s", code, stderr)
			}
			if c.nodes != nil {
				ids := exportedRecordsOf(t, out)
				slices.Sort(ids)
				if !slices.Equal(ids, c.nodes) {
					t.Errorf("export: %v, want %v", ids, c.nodes)
				}
			}
			var foreign []layouts.Item
			for _, r := range rows {
				if c.foreign(r) {
					foreign = append(foreign, r)
				}
			}
			again := handTable(t, client, c.hand, foreign)
			if _, stderr, code := run(t, env, append([]string{"import", "--in", out, "--table", again, "--no-progress"}, c.flags...)...); code != 0 {
				t.Fatalf("import: exit %d\n%s", code, stderr)
			}
			sameLines(t, "the export imported", rawLines(t, client, again), rows)

			stdout, stderr, code := run(t, env, append([]string{"query", "children", "--id", c.id, "--stats"}, tm...)...)
			var got []string
			for _, l := range pathQueryLines(t, stdout) {
				got = append(got, l.ID+"@"+strconv.Itoa(l.Depth))
			}
			if !slices.Equal(got, c.kids) {
				t.Errorf("children of %s: %v, want %v", c.id, got, c.kids)
			}
			if n := requestsSaid(stderr, `; (\d+) requests?,`); code != 0 || n != c.queries {
				t.Errorf("children of %s: exit %d, %d requests, the document says %d\n%s", c.id, code, n, c.queries, stderr)
			}
		})
	}
}

// exportedRecordsOf returns the ids of an export's records.
func exportedRecordsOf(t *testing.T, out string) []string {
	t.Helper()
	var ids []string
	for id := range exportedPathRecords(t, out) {
		ids = append(ids, id)
	}
	return ids
}
