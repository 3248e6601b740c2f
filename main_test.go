package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/ddbjson"
)

var treeportBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "treeport-bin")
	if err != nil {
		panic(err)
	}
	treeportBin = filepath.Join(dir, "treeport")
	cmd := exec.Command("go", "build", "-o", treeportBin, ".")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// run runs treeport and returns its stdout, stderr and exit code.
func run(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(treeportBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// TestBadInputCorpus runs every file of fixtures/bad: each must exit 2, print
// a line that starts with the place and the id and gives the reason, and
// leave nothing behind: no output directory, nothing in one that exists, and
// nothing on stdout.
func TestBadInputCorpus(t *testing.T) {
	tests := []struct {
		name   string
		file   string
		args   []string
		where  string // file:line, or file (row N)
		id     string // "" only where the problem is that there is none
		reason string
		// whole: a problem of the whole file (empty, a column's name),
		// said on the error line that ends the run, which holds the place
		// after "treeport: …: " rather than starting with it.
		whole bool
	}{
		{name: "ragged CSV row", file: "ragged.csv", where: "ragged.csv:3", id: "B", reason: "the row has 4 fields, the header has 3"},
		{name: "bad JSON", file: "bad-json.jsonl", where: "bad-json.jsonl:2", id: "B", reason: "want a JSON value"},
		{name: "wrong type for a typed column", file: "wrong-type.csv", args: []string{"--types", "size:N"}, where: "wrong-type.csv:3", id: "B", reason: `column "size" (N): "ten" is not a number`},
		{name: "invalid UTF-8", file: "invalid-utf8.csv", where: "invalid-utf8.csv:3", id: "B", reason: `column "name" is not valid UTF-8`},
		{name: "empty id", file: "empty-id.csv", where: "empty-id.csv:3", reason: "empty id"},
		{name: "duplicate id, both places", file: "duplicate-id.csv", where: "duplicate-id.csv:5", id: "B", reason: "duplicate id: also at fixtures/bad/duplicate-id.csv:3"},
		{name: "duplicate id in Parquet, both rows", file: "duplicate-id.parquet", where: "duplicate-id.parquet (row 4)", id: "B", reason: "duplicate id: also at fixtures/bad/duplicate-id.parquet (row 2)"},
		{name: "missing parent", file: "missing-parent.csv", where: "missing-parent.csv:3", id: "B", reason: `parent not in input: parent "Z"`},
		{name: "missing parent in Parquet", file: "missing-parent.parquet", where: "missing-parent.parquet (row 3)", id: "C", reason: `parent not in input: parent "Z"`},
		{name: "own parent", file: "self-parent.csv", where: "self-parent.csv:3", id: "B", reason: "own parent"},
		{name: "cycle with its ids", file: "cycle.csv", where: "cycle.csv:3", id: "B", reason: `cycle: "B" → "C" → "B"`},
		{name: "delimiter in id", file: "delimiter-in-id.csv", where: "delimiter-in-id.csv:3", id: "B|1", reason: "delimiter"},
		{name: "reserved attribute name", file: "reserved-attr.csv", where: "reserved-attr.csv:2", id: "A", reason: "--attr Path=NEWNAME"},
		{name: "partition key too long", file: "partition-key-too-long.csv", where: "partition-key-too-long.csv:3", id: strings.Repeat("K", 2049), reason: "the partition key Id of the table is 2049 bytes"},
		{name: "sort key (Path) too long", file: "sort-key-too-long.csv", where: "sort-key-too-long.csv:12", id: "010" + strings.Repeat("p", 97), reason: "the sort key Path of index ByPath is 1110 bytes"},
		{name: "item over 400 KB", file: "item-too-large.csv.gz", where: "item-too-large.csv.gz:3", id: "B", reason: "item over 400 KB"},
		// Every rule DynamoDB applies to an attribute is found before a
		// write could find it.
		{name: "SS member twice", file: "duplicate-set-members.ddbjson", where: "duplicate-set-members.ddbjson:2", id: "B", reason: `attribute tags: SS holds "a" twice`},
		{name: "NS members equal by value", file: "duplicate-ns-by-value.ddbjson", where: "duplicate-ns-by-value.ddbjson:2", id: "B", reason: `NS holds "1" and "1.0", equal by value, twice`},
		{name: "BS member twice", file: "duplicate-bs.ddbjson", where: "duplicate-bs.ddbjson:2", id: "B", reason: "BS holds the same bytes twice"},
		{name: "empty set", file: "empty-set.ddbjson", where: "empty-set.ddbjson:2", id: "B", reason: "SS is empty; DynamoDB does not store empty sets"},
		{name: "NULL false", file: "null-false.ddbjson", where: "null-false.ddbjson:2", id: "B", reason: "NULL wants true"},
		{name: "empty key in a map", file: "empty-map-key.jsonl", where: "empty-map-key.jsonl:2", id: "B", reason: "attribute m: a map has an empty key"},
		{name: "empty key in a map in a list", file: "empty-map-key-in-list.jsonl", where: "empty-map-key-in-list.jsonl:2", id: "B", reason: "attribute l[1].ok: a map has an empty key"},
		{name: "empty attribute name", file: "empty-attr-name.jsonl", where: "empty-attr-name.jsonl:2", id: "B", reason: "an attribute has an empty name"},
		{name: "attribute name of 64 KB", file: "attr-name-64kb.jsonl", where: "attr-name-64kb.jsonl:2", id: "B", reason: "is over DynamoDB's limit of 65535 bytes"},
		{name: "column name of 64 KB", file: "column-name-64kb.csv", where: "column-name-64kb.csv:1", reason: "the name of column 3 is 65536 bytes", whole: true},
		{name: "nesting of 33 levels", file: "nesting-33.jsonl", where: "nesting-33.jsonl:2", id: "B", reason: "nest deeper than DynamoDB's 32 levels"},
		{name: "number of 39 digits", file: "number-39-digits.jsonl", where: "number-39-digits.jsonl:2", id: "B", reason: "has 39 significant digits, DynamoDB keeps at most 38"},
		{name: "number over 9.99…E+125", file: "number-too-large.jsonl", where: "number-too-large.jsonl:2", id: "B", reason: "larger than DynamoDB's largest number"},
		{name: "number under 1E-130", file: "number-too-small.jsonl", where: "number-too-small.jsonl:2", id: "B", reason: "closer to zero than DynamoDB's smallest number, 1E-130"},
		{name: "id neither a string nor a number", file: "id-not-a-string.jsonl", where: "id-not-a-string.jsonl:2", reason: `the id field "id" is a boolean`},
		// An empty file is not an empty input ([] is).
		{name: "empty JSON", file: "empty.json", where: "empty.json", reason: "the file is empty: a JSON input is an array of objects ([] for none)", whole: true},
		{name: "blank JSON", file: "blank.json", where: "blank.json", reason: "the file holds nothing but blank space", whole: true},
		{name: "empty JSON Lines", file: "empty.jsonl", where: "empty.jsonl", reason: "the file is empty", whole: true},
		{name: "empty DynamoDB JSON", file: "empty.ddbjson", where: "empty.ddbjson", reason: "the file is empty", whole: true},
		{name: "empty CSV", file: "empty.csv", where: "empty.csv", reason: "the file is empty: a CSV input needs a header row", whole: true},
		{name: "empty Parquet", file: "empty.parquet", where: "empty.parquet", reason: "the file is empty", whole: true},
	}
	listed := map[string]bool{}
	for _, tt := range tests {
		listed[tt.file] = true
	}
	entries, err := os.ReadDir(filepath.Join("fixtures", "bad"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !listed[e.Name()] {
			t.Errorf("fixtures/bad/%s has no case here: add one", e.Name())
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The line the problem must be on: the place, then the id as
			// an error shows it (cut after 64 bytes), then the reason.
			prefix := filepath.Join("fixtures", "bad", tt.where) + ": "
			if tt.id != "" {
				prefix += "id " + strconv.Quote(tt.id[:min(len(tt.id), 64)])
			}
			for _, existing := range []bool{false, true} {
				outDir := filepath.Join(t.TempDir(), "out")
				if existing {
					if err := os.Mkdir(outDir, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				args := append([]string{"import", "--in", filepath.Join("fixtures", "bad", tt.file), "--layout", "path", "--out", outDir}, tt.args...)
				stdout, stderr, code := run(t, nil, args...)
				if code != 2 {
					t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr)
				}
				found := false
				for _, line := range strings.Split(stderr, "\n") {
					if tt.whole && strings.HasPrefix(line, "treeport: ") && strings.Contains(line, prefix) && strings.Contains(line, tt.reason) {
						found = true
					}
					if strings.HasPrefix(line, prefix) && strings.Contains(line, tt.reason) {
						found = true
					}
				}
				if !found {
					t.Errorf("stderr has no line starting %q and saying %q:\n%s", prefix, tt.reason, stderr)
				}
				if stdout != "" {
					t.Errorf("stdout: %q", stdout)
				}
				if !existing {
					if _, err := os.Stat(outDir); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("output directory was created (%v)", err)
					}
				} else if left, err := os.ReadDir(outDir); err != nil || len(left) > 0 {
					t.Errorf("the existing output directory holds %v (%v)", left, err)
				}
			}
		})
	}
}

// TestBadInputOtherLayouts runs the corpus's layout-specific problems for
// the layouts whose own rules they break: the prefix layout's delimiter
// U+00A6 in an id, the closure layout's reserved names, and the
// sharded-path layout's Path sort key.
func TestBadInputOtherLayouts(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, layout, csv, prefix, reason string
	}{
		{"prefix: ¦ in an id", "prefix", "id,parent_id\nA,\nB¦1,A\n", `:3: id "B¦1"`, "delimiter"},
		{"prefix: attribute name starting with ¦", "prefix", "id,parent_id,¦x\nA,,1\n", `:2: id "A"`, "¦x"},
		{"closure: attribute AncestorId", "closure", "id,parent_id,AncestorId\nA,,1\n", `:2: id "A"`, "--attr AncestorId=NEWNAME"},
		{"sharded-path: attribute GraphId", "sharded-path", "id,parent_id,GraphId\nA,,1\n", `:2: id "A"`, "--attr GraphId=NEWNAME"},
	}
	for k, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := filepath.Join(dir, fmt.Sprintf("in%d.csv", k))
			if err := os.WriteFile(in, []byte(tt.csv), 0o644); err != nil {
				t.Fatal(err)
			}
			outDir := filepath.Join(dir, fmt.Sprintf("out%d", k))
			_, stderr, code := run(t, nil, "import", "--in", in, "--layout", tt.layout, "--out", outDir)
			if code != 2 {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr)
			}
			if !strings.Contains(stderr, in+tt.prefix) || !strings.Contains(stderr, tt.reason) {
				t.Errorf("stderr lacks %q and %q:\n%s", in+tt.prefix, tt.reason, stderr)
			}
			if _, err := os.Stat(outDir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("output directory was created (%v)", err)
			}
		})
	}
}

// TestSkipInvalidWritesValidTrees loads an input with problems using
// --on-invalid=skip: the valid trees are written whole, every rejected node
// takes its subtree along, and every rejected record is in the rejects file
// with its reason.
func TestSkipInvalidWritesValidTrees(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	os.WriteFile(in, []byte("id,parent_id,name\n"+
		"A,,good root\n"+
		"B,A,good child\n"+
		"C,Z,orphan\n"+ // missing parent
		"D,C,below the orphan\n"+
		"E,F,in a cycle\n"+
		"F,E,in a cycle\n"+
		"G,A,\"bad \"quote\"\n"+ // unparseable row with a known id
		"H,G,below the bad row\n"), 0o644)
	out := filepath.Join(dir, "out")
	rejects := filepath.Join(dir, "rejects.jsonl")
	stdout, stderr, code := run(t, nil, "import", "--in", in, "--layout", "path", "--out", out, "--on-invalid", "skip", "--rejects", rejects)
	if code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", code, stdout, stderr)
	}
	var m struct {
		Nodes    int64 `json:"nodes"`
		Items    int64 `json:"items"`
		Rejected int64 `json:"rejected_records"`
	}
	b, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(b, &m)
	if m.Nodes != 2 || m.Items != 2 || m.Rejected != 6 {
		t.Fatalf("manifest: %s", b)
	}
	lines := strings.Split(strings.TrimSpace(readFile(t, rejects)), "\n")
	got := map[string]string{}
	for _, l := range lines {
		var r struct {
			ID     string `json:"id"`
			Line   int    `json:"line"`
			Reason string `json:"reason"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("rejects line %q: %v", l, err)
		}
		got[r.ID] = r.Reason
	}
	for id, want := range map[string]string{"C": "parent", "D": `ancestor "C"`, "E": "cycle", "F": "cycle", "G": "quoted-field", "H": `ancestor "G"`} {
		if !strings.Contains(got[id], want) {
			t.Errorf("reject of %s: reason %q, want it to mention %q", id, got[id], want)
		}
	}
	if len(lines) != 6 {
		t.Errorf("%d rejects, want 6:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestImportFilesOut writes import files and checks what DynamoDB's import
// from S3 needs: gzip DynamoDB JSON lines split by count, no key twice, a
// manifest with checksums, and CreateTable and ImportTable requests.
func TestImportFilesOut(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	_, stderr, code := run(t, nil, "import", "--in", "fixtures/folders.json", "--layout", "closure", "--out", out, "--items-per-file", "50", "--table", "")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var m struct {
		Layout string `json:"layout"`
		Items  int64  `json:"items"`
		Files  []struct {
			Name   string `json:"name"`
			Items  int64  `json:"items"`
			SHA256 string `json:"sha256"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(out, "manifest.json"))), &m); err != nil {
		t.Fatal(err)
	}
	if m.Layout != "closure" || len(m.Files) < 2 {
		t.Fatalf("manifest: %+v", m)
	}
	keys := map[string]bool{}
	var total int64
	for _, f := range m.Files {
		data := readFile(t, filepath.Join(out, filepath.FromSlash(f.Name)))
		sum := sha256.Sum256([]byte(data))
		if hex.EncodeToString(sum[:]) != f.SHA256 {
			t.Errorf("%s: checksum differs from the manifest", f.Name)
		}
		zr, err := gzip.NewReader(strings.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(zr)
		sc.Buffer(nil, 1<<20)
		n := int64(0)
		for sc.Scan() {
			item, err := ddbjson.DecodeLine(sc.Bytes())
			if err != nil {
				t.Fatalf("%s: %v", f.Name, err)
			}
			id := item["Id"].(*types.AttributeValueMemberS).Value
			rd := item["RelativeDepth"].(*types.AttributeValueMemberN).Value
			k := id + "\x00" + rd
			if keys[k] {
				t.Errorf("key %s/%s twice", id, rd)
			}
			keys[k] = true
			n++
		}
		if n != f.Items || n > 50 {
			t.Errorf("%s: %d items, manifest says %d, limit 50", f.Name, n, f.Items)
		}
		total += n
	}
	if total != m.Items {
		t.Errorf("files hold %d items, manifest says %d", total, m.Items)
	}
	var imp struct {
		InputFormat             string
		InputCompressionType    string
		TableCreationParameters struct {
			KeySchema              []map[string]string
			GlobalSecondaryIndexes []struct{ IndexName string }
		}
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(out, "import-table.json"))), &imp); err != nil {
		t.Fatal(err)
	}
	if imp.InputFormat != "DYNAMODB_JSON" || imp.InputCompressionType != "GZIP" || len(imp.TableCreationParameters.KeySchema) != 2 ||
		len(imp.TableCreationParameters.GlobalSecondaryIndexes) != 1 || imp.TableCreationParameters.GlobalSecondaryIndexes[0].IndexName != "ByAncestor" {
		t.Errorf("import-table.json: %+v", imp)
	}
	if !strings.Contains(readFile(t, filepath.Join(out, "create-table.json")), `"ByAncestor"`) {
		t.Error("create-table.json lacks the ByAncestor index")
	}
}

// TestDryRunCountsFollowTheFormulas checks the dry run's item counts against
// the layouts' formulas, computed here from the fixture itself.
func TestDryRunCountsFollowTheFormulas(t *testing.T) {
	stdout, stderr, code := run(t, nil, "import", "--in", "fixtures/cars.json", "--layout", "all", "--dry-run", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct {
		Plans []struct {
			Layout string `json:"layout"`
			Nodes  int64  `json:"nodes"`
			Items  int64  `json:"items"`
			WCU    int64  `json:"wcu"`
			Cost   struct {
				OnDemand float64 `json:"on_demand_writes_usd"`
				AsOf     string  `json:"prices_as_of"`
			} `json:"cost"`
		} `json:"plans"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	// Depths from the fixture's parent links.
	var recs []struct {
		ID     string `json:"id"`
		Parent string `json:"parent_id"`
	}
	json.Unmarshal([]byte(readFile(t, "fixtures/cars.json")), &recs)
	parent := map[string]string{}
	for _, r := range recs {
		parent[r.ID] = r.Parent
	}
	sumDepth1 := int64(0)
	for id := range parent {
		d := 0
		for p := parent[id]; p != ""; p = parent[p] {
			d++
		}
		sumDepth1 += int64(d + 1)
	}
	n := int64(len(recs))
	want := map[string]int64{"path": n, "sharded-path": n, "closure": sumDepth1, "prefix": 2 * n, "adjacency": n}
	if len(res.Plans) != len(want) {
		t.Fatalf("%d plans", len(res.Plans))
	}
	for _, p := range res.Plans {
		if p.Nodes != n || p.Items != want[p.Layout] {
			t.Errorf("%s: %d nodes, %d items; want %d, %d", p.Layout, p.Nodes, p.Items, n, want[p.Layout])
		}
		if p.WCU < p.Items || p.Cost.OnDemand <= 0 || p.Cost.AsOf == "" {
			t.Errorf("%s: WCU %d, cost %+v", p.Layout, p.WCU, p.Cost)
		}
	}
}

// TestGenIsReproducible runs gen twice with one seed and once with another.
func TestGenIsReproducible(t *testing.T) {
	dir := t.TempDir()
	for _, format := range []string{"csv", "json", "jsonl", "parquet", "ddbjson"} {
		for _, shape := range []string{"balanced", "random", "deep", "wide", "forest"} {
			a, b, c := filepath.Join(dir, "a."+format), filepath.Join(dir, "b."+format), filepath.Join(dir, "c."+format)
			for _, x := range []struct {
				path, seed string
			}{{a, "5"}, {b, "5"}, {c, "6"}} {
				if _, stderr, code := run(t, nil, "gen", "--nodes", "300", "--shape", shape, "--seed", x.seed, "--out", x.path); code != 0 {
					t.Fatalf("gen %s %s: %s", shape, format, stderr)
				}
			}
			if readFile(t, a) != readFile(t, b) {
				t.Errorf("%s %s: the same seed gave different files", shape, format)
			}
			if shape != "deep" && shape != "wide" && shape != "balanced" && readFile(t, a) == readFile(t, c) {
				t.Errorf("%s %s: different seeds gave the same file", shape, format)
			}
			// What gen writes, import reads without a problem.
			if _, stderr, code := run(t, nil, "import", "--in", a, "--layout", "closure", "--dry-run"); code != 0 {
				t.Errorf("%s %s: dry run of gen output: exit %d: %s", shape, format, code, stderr)
			}
		}
	}
}

// TestFlagsFromEnvironment sets flags through TREEPORT_* variables.
func TestFlagsFromEnvironment(t *testing.T) {
	stdout, stderr, code := run(t, []string{"TREEPORT_LAYOUT=prefix", "TREEPORT_TABLE=Things"}, "schema")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, `"Things"`) || !strings.Contains(stdout, `"Child"`) {
		t.Errorf("schema from env: %s", stdout)
	}
}

// TestUsageErrorsExit2 checks that a mistake in the command line exits 2.
func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"import", "--in", "fixtures/cars.json", "--layout", "nope", "--out", "x"},
		{"import", "--in", "fixtures/cars.json", "--layout", "path"},
		{"import", "--in", "fixtures/cars.json", "--layout", "all", "--out", "x"},
		{"import", "--no-such-flag"},
		{"import", "--in", "does-not-exist.csv", "--layout", "path", "--dry-run"},
		{"import", "--in", "fixtures/cars.json", "--layout", "path", "--attr", "Nope=X", "--dry-run"},
	} {
		_, stderr, code := run(t, nil, args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", args, code, stderr)
		}
	}
}
