package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/layouts"
)

// The ElectroDB single table of docs/MODELS.md, built by hand: the
// employees of two tenants (acme and globex, with the same ids), and
// acme's offices and tasks in the same partition, a task even in an
// employee's gsi1 partition.
const edbModel = "fixtures/models/electrodb-employees.json"

// edbSeedCSV is acme's employees as records: e1 > e7 > e42, e43; e1 > e9.
const edbSeedCSV = "id,parent_id,firstName\ne1,,Ada\ne7,e1,Grace\ne42,e7,Alan\ne43,e7,Edsger\ne9,e1,Barbara\n"

// edbCreate is the table as ElectroDB's users create it.
func edbCreate(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions:   defs("pk", "sk", "gsi1pk", "gsi1sk"),
		KeySchema:              keySchema("pk", "sk"),
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{gsi("gsi1", "gsi1pk", "gsi1sk", types.ProjectionTypeAll)}}
}

// edbEmployee is an employee item as ElectroDB writes it: its keys, its
// attributes as they are, its entity and version marks.
func edbEmployee(org, id, manager, first string) layouts.Item {
	it := layouts.Item{
		"pk": s("$hr#orgid_" + org), "sk": s("$employee_1#employeeid_" + id),
		"employeeId": s(id), "orgId": s(org), "firstName": s(first),
		"__edb_e__": s("employee"), "__edb_v__": s("1"),
	}
	if manager != "" {
		it["managerId"] = s(manager)
		it["gsi1pk"] = s("$hr#orgid_" + org + "#managerid_" + manager)
		it["gsi1sk"] = s("$employee_1#employeeid_" + id)
	}
	return it
}

func edbNodes() []layouts.Item {
	return []layouts.Item{
		edbEmployee("acme", "e1", "", "Ada"),
		edbEmployee("acme", "e7", "e1", "Grace"),
		edbEmployee("acme", "e42", "e7", "Alan"),
		edbEmployee("acme", "e43", "e7", "Edsger"),
		edbEmployee("acme", "e9", "e1", "Barbara"),
	}
}

// edbForeign are the table's other items: acme's office and task (the
// task in e7's gsi1 partition, beside e42 and e43), and globex's
// employees, whose ids are acme's.
func edbForeign() []layouts.Item {
	return []layouts.Item{
		{"pk": s("$hr#orgid_acme"), "sk": s("$office_1#officeid_sea"), "officeId": s("sea"), "orgId": s("acme"), "city": s("Seattle"),
			"__edb_e__": s("office"), "__edb_v__": s("1")},
		{"pk": s("$hr#orgid_acme"), "sk": s("$task_1#taskid_t9"), "taskId": s("t9"), "employeeId": s("e7"), "orgId": s("acme"),
			"gsi1pk": s("$hr#orgid_acme#managerid_e7"), "gsi1sk": s("$task_1#taskid_t9"), "__edb_e__": s("task"), "__edb_v__": s("1")},
		edbEmployee("globex", "e1", "", "Gus"),
		edbEmployee("globex", "e7", "e1", "Gina"),
		edbEmployee("globex", "e42", "e1", "Gil"),
	}
}

var edbHand = handModel{file: edbModel, create: edbCreate, nodes: edbNodes(), foreign: edbForeign()}

// exportedRecords runs export and returns "id<parent:firstName" of each
// record, sorted, failing on a record with other fields.
func exportedRecords(t *testing.T, env []string, out string, args ...string) []string {
	t.Helper()
	_, stderr, code := run(t, env, append([]string{"export", "--out", out}, args...)...)
	if code != 0 {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	if strings.Contains(stderr, "do not read back") {
		// Another tenant's employees are not the model's: not even
		// items that do not read.
		t.Errorf("export counts items that do not read:\n%s", stderr)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, out)), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		got = append(got, asStr(rec["id"])+"<"+asStr(rec["parent_id"])+":"+asStr(rec["firstName"]))
		for k := range rec {
			if k != "id" && k != "parent_id" && k != "firstName" {
				t.Errorf("exported record %s has the field %q", line, k)
			}
		}
	}
	sort.Strings(got)
	return got
}

// edbQueryIDs is queryIDs for records named by firstName.
func edbQueryIDs(t *testing.T, env []string, args ...string) []string {
	t.Helper()
	return queryAnswer(t, env, args, func(q queryLine, line string) string {
		return q.ID + "@" + string(rune('0'+q.RelativeDepth)) + ":" + asStr(q.Attributes["firstName"])
	})
}

// TestElectroDBModel runs every command that takes a model against the
// ElectroDB table built by hand, for the tenant acme: only acme's
// employees are nodes; its offices and tasks, and globex's employees
// (with the same ids), are never read as nodes and stay byte for byte.
func TestElectroDBModel(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	dir := t.TempDir()
	seed := writeText(t, dir, "seed.csv", edbSeedCSV)
	acme := []string{"--model", edbModel, "--model-param", "org=acme"}
	all := append(edbNodes(), edbForeign()...)
	table := handTable(t, client, edbHand, all)
	tm := append([]string{"--table", table}, acme...)
	foreignBefore := foreignLines(t, client, table, edbHand)

	t.Run("import", func(t *testing.T) {
		// Into a table holding the other items: exactly ElectroDB's rows.
		imported := handTable(t, client, edbHand, edbForeign())
		if _, stderr, code := run(t, env, append([]string{"import", "--in", seed, "--table", imported, "--no-progress"}, acme...)...); code != 0 {
			t.Fatalf("import: exit %d\n%s", code, stderr)
		}
		sameLines(t, "after import", rawLines(t, client, imported), all)
		stdout, stderr, code := run(t, env, append([]string{"import", "--in", seed, "--dry-run", "--json"}, acme...)...)
		if code != 0 || !strings.Contains(stdout, `"items":5`) && !strings.Contains(stdout, `"items": 5`) {
			t.Errorf("import --dry-run: exit %d, want 5 items:\n%s%s", code, stdout, stderr)
		}
	})

	t.Run("export", func(t *testing.T) {
		want := []string{"e1<:Ada", "e42<e7:Alan", "e43<e7:Edsger", "e7<e1:Grace", "e9<e1:Barbara"}
		if got := exportedRecords(t, env, filepath.Join(dir, "acme.jsonl"), tm...); !slices.Equal(got, want) {
			t.Fatalf("export acme: %v, want %v", got, want)
		}
		// A Query of acme's partition, not a Scan of the table: 7 items
		// read (5 employees, the office, the task), not globex's 3.
		_, stderr, _ := run(t, env, append([]string{"export", "--out", filepath.Join(dir, "again.jsonl")}, tm...)...)
		if !strings.Contains(stderr, " 7 items read") {
			t.Errorf("export did not read acme's partition alone (7 items):\n%s", stderr)
		}
		globex := []string{"--table", table, "--model", edbModel, "--model-param", "org=globex"}
		want = []string{"e1<:Gus", "e42<e1:Gil", "e7<e1:Gina"}
		if got := exportedRecords(t, env, filepath.Join(dir, "globex.jsonl"), globex...); !slices.Equal(got, want) {
			t.Fatalf("export globex: %v, want %v", got, want)
		}
	})

	t.Run("query", func(t *testing.T) {
		for _, q := range []struct {
			args []string
			want []string
		}{
			{[]string{"get", "--id", "e42"}, []string{"e42@0:Alan"}},
			// e7's gsi1 partition holds the task t9 too.
			{[]string{"children", "--id", "e7"}, []string{"e42@1:Alan", "e43@1:Edsger"}},
			{[]string{"children", "--id", "e1"}, []string{"e7@1:Grace", "e9@1:Barbara"}},
			{[]string{"children", "--id", "e42"}, nil},
			{[]string{"descendants", "--id", "e1"}, []string{"e42@2:Alan", "e43@2:Edsger", "e7@1:Grace", "e9@1:Barbara"}},
			{[]string{"ancestors", "--id", "e42"}, []string{"e1@2:Ada", "e7@1:Grace"}},
		} {
			if got := edbQueryIDs(t, env, append(q.args, tm...)...); !slices.Equal(got, q.want) {
				t.Errorf("query %v: %v, want %v", q.args, got, q.want)
			}
		}
		globex := []string{"--table", table, "--model", edbModel, "--model-param", "org=globex"}
		if got := edbQueryIDs(t, env, append([]string{"children", "--id", "e1"}, globex...)...); !slices.Equal(got, []string{"e42@1:Gil", "e7@1:Gina"}) {
			t.Errorf("globex's children of e1: %v", got)
		}
		if _, _, code := run(t, env, append([]string{"query", "get", "--id", "sea"}, tm...)...); code == 0 {
			t.Errorf("query get of the office: exit 0, want not found")
		}
	})

	t.Run("verify", func(t *testing.T) {
		// In memory and out of core: the same report.
		if stdout, stderr, code := sameVerify(t, env, append([]string{"--in", seed}, tm...)...); code != 0 {
			t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
		}
	})

	t.Run("schema", func(t *testing.T) {
		for _, format := range []string{"json", "workbench", "cloudformation"} {
			stdout, stderr, code := run(t, nil, append([]string{"schema", "--table", "Employees", "--format", format, "--in", seed}, acme...)...)
			if code != 0 || !strings.Contains(stdout, "gsi1pk") || !json.Valid([]byte(stdout)) && format != "cloudformation" {
				t.Errorf("schema --format %s: exit %d\n%s%s", format, code, stdout, stderr)
			}
			if format == "workbench" && !strings.Contains(stdout, "$hr#orgid_acme#managerid_e7") {
				t.Errorf("schema --format workbench: no sample item of the tenant:\n%s", stdout)
			}
		}
	})

	t.Run("bench", func(t *testing.T) {
		stdout, stderr, code := run(t, env, append([]string{"bench", "--in", seed, "--layouts", "path", "--out", filepath.Join(dir, "bench.json")}, acme...)...)
		if code != 0 {
			t.Fatalf("bench: exit %d\n%s%s", code, stdout, stderr)
		}
		if b := readFile(t, filepath.Join(dir, "bench.json")); !strings.Contains(b, "model-electrodb-employees") {
			t.Errorf("bench report does not name the model:\n%s", b)
		}
	})

	t.Run("migrate both ways", func(t *testing.T) { edbMigrate(t, client, env, table, all, foreignBefore) })
	t.Run("plan apply edit", func(t *testing.T) { edbPlanApplyEdit(t, client, env, dir, all) })
	t.Run("follow", func(t *testing.T) { edbFollow(t, client, env) })

	if got := rawLines(t, client, table); !slices.Equal(got, itemLines(all)) {
		t.Fatalf("the table read by export, query, verify and migrate changed")
	}
}

// edbMigrate migrates acme from the ElectroDB table into every layout and
// back (byte for byte), and into another ElectroDB table.
func edbMigrate(t *testing.T, client *dynamodb.Client, env []string, table string, all []layouts.Item, foreignBefore []string) {
	for _, layout := range layouts.Names() {
		mid := ddblocal.TableName(t)
		dropTableLater(t, client, mid)
		if stdout, stderr, code := run(t, env, "migrate", "--from-table", table, "--from-model", edbModel, "--model-param", "org=acme",
			"--to-table", mid, "--to-layout", layout, "--create-table", "--no-progress"); code != 0 {
			t.Fatalf("migrate into %s: exit %d\n%s%s", layout, code, stdout, stderr)
		}
		back := handTable(t, client, edbHand, edbForeign())
		if stdout, stderr, code := run(t, env, "migrate", "--from-table", mid, "--from-layout", layout,
			"--to-table", back, "--to-model", edbModel, "--model-param", "org=acme", "--no-progress"); code != 0 {
			t.Fatalf("migrate back from %s: exit %d\n%s%s", layout, code, stdout, stderr)
		}
		sameLines(t, "migrated back from "+layout, rawLines(t, client, back), all)
	}
	// A model on both sides: acme into a table holding globex.
	other := handTable(t, client, edbHand, edbForeign())
	if stdout, stderr, code := run(t, env, "migrate", "--from-table", table, "--from-model", edbModel, "--model-param", "org=acme",
		"--to-table", other, "--to-model", edbModel, "--no-progress"); code != 0 {
		t.Fatalf("migrate model to model: exit %d\n%s%s", code, stdout, stderr)
	}
	sameLines(t, "migrated model to model", rawLines(t, client, other), all)
	if got := foreignLines(t, client, table, edbHand); !slices.Equal(got, foreignBefore) {
		t.Fatalf("migrate changed its source's other items")
	}
}

// edbPlanApplyEdit plans, applies and edits acme's employees in a copy of
// the ElectroDB table: its rows are ElectroDB's, the other items stay.
func edbPlanApplyEdit(t *testing.T, client *dynamodb.Client, env []string, dir string, all []layouts.Item) {
	acme := []string{"--model", edbModel, "--model-param", "org=acme"}
	work := handTable(t, client, edbHand, all)
	wm := append([]string{"--table", work}, acme...)
	snap := writeText(t, dir, "snap.csv", strings.Replace(strings.Replace(edbSeedCSV, "e43,e7,Edsger\n", "", 1), "Alan", "Alan M.", 1))
	stdout, stderr, code := run(t, env, append([]string{"plan", "--in", snap, "--json"}, wm...)...)
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s%s", code, stdout, stderr)
	}
	// The plan reads acme's partition alone: its office and task are
	// the other items, globex's are not even read.
	if sum := parseSummary(t, stdout); sum.TableItems != 5 || sum.TableOtherItems != 2 {
		t.Errorf("plan summary: %d items and %d other items, want 5 and 2", sum.TableItems, sum.TableOtherItems)
	}
	if stdout, stderr, code := run(t, env, append([]string{"apply", "--in", snap, "--no-progress", "--allow-mass-delete"}, wm...)...); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, stdout, stderr)
	}
	if stdout, stderr, code := run(t, env, append([]string{"plan", "--in", snap, "--detailed-exitcode"}, wm...)...); code != 0 {
		t.Fatalf("plan after apply: exit %d\n%s%s", code, stdout, stderr)
	}
	want := []layouts.Item{edbEmployee("acme", "e1", "", "Ada"), edbEmployee("acme", "e7", "e1", "Grace"),
		edbEmployee("acme", "e42", "e7", "Alan M."), edbEmployee("acme", "e9", "e1", "Barbara")}
	sameLines(t, "after apply", rawLines(t, client, work), append(slices.Clone(want), edbForeign()...))

	// e42 moves under e9: its gsi1 keys and managerId change.
	ops := writeText(t, dir, "ops.jsonl", `{"op":"move","id":"e42","parent":"e9"}`+"\n")
	if stdout, stderr, code := run(t, env, append([]string{"edit", "--ops", ops, "--no-progress"}, wm...)...); code != 0 {
		t.Fatalf("edit: exit %d\n%s%s", code, stdout, stderr)
	}
	want[2] = edbEmployee("acme", "e42", "e9", "Alan M.")
	sameLines(t, "after edit", rawLines(t, client, work), append(slices.Clone(want), edbForeign()...))
	if got := edbQueryIDs(t, env, append([]string{"ancestors", "--id", "e42"}, wm...)...); !slices.Equal(got, []string{"e1@2:Ada", "e9@1:Barbara"}) {
		t.Errorf("after edit: ancestors %v", got)
	}
}

// edbFollow: migrate --follow from an ElectroDB table with a stream into
// a path table; an employee added to acme is copied, a task and another
// tenant's employee put meanwhile are not.
func edbFollow(t *testing.T, client *dynamodb.Client, env []string) {
	src, dest, cmd, out := edbFollowing(t, client, env)
	putItems(t, client, src, []layouts.Item{
		edbEmployee("acme", "e50", "e9", "Frances"),
		edbEmployee("globex", "e51", "e1", "Gert"),
		{"pk": s("$hr#orgid_acme"), "sk": s("$task_1#taskid_t10"), "taskId": s("t10"), "employeeId": s("e9"), "orgId": s("acme"),
			"gsi1pk": s("$hr#orgid_acme#managerid_e9"), "gsi1sk": s("$task_1#taskid_t10"), "__edb_e__": s("task"), "__edb_v__": s("1")},
	}...)
	followerExact(t, cmd, out)
	ids := edbCopy(t, client, dest)
	want := []string{"e1<:Ada", "e42<e7:Alan", "e43<e7:Edsger", "e50<e9:Frances", "e7<e1:Grace", "e9<e1:Barbara"}
	if !slices.Equal(ids, want) {
		t.Fatalf("followed copy: %v, want %v", ids, want)
	}
}

// edbFollowing makes an ElectroDB table with a stream (edbNodes and
// edbForeign in it) and starts migrate --follow of acme's tree from it
// into a new path table, dest; it returns once the follower follows the
// stream.
func edbFollowing(t *testing.T, client *dynamodb.Client, env []string) (src, dest string, cmd *exec.Cmd, out *syncBuf) {
	t.Helper()
	create := func(name string) *dynamodb.CreateTableInput {
		in := edbCreate(name)
		in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}
		return in
	}
	src = handTable(t, client, handModel{file: edbModel, create: create}, append(edbNodes(), edbForeign()...))
	dest = ddblocal.TableName(t)
	dropTableLater(t, client, dest)
	ck := filepath.Join(t.TempDir(), "ck.json")
	args := append([]string{"migrate", "--from-table", src, "--from-model", edbModel, "--model-param", "org=acme",
		"--to-table", dest, "--to-layout", "path", "--create-table", "--follow", "--follow-idle", "3s", "--checkpoint", ck, "--no-progress"},
		"--endpoint-url", envValue(env, "TREEPORT_ENDPOINT_URL"))
	cmd, out = startFollower(t, args)
	waitForOutput(t, cmd, out, "following the stream")
	return src, dest, cmd, out
}

// edbCopy is the followed copy in dest as "id<parent:firstName", sorted.
func edbCopy(t *testing.T, client *dynamodb.Client, dest string) []string {
	t.Helper()
	var ids []string
	for _, it := range scanTable(t, client, dest) {
		ids = append(ids, valueOf(it["Id"])+"<"+valueOf(it["ParentId"])+":"+valueOf(it["firstName"]))
	}
	sort.Strings(ids)
	return ids
}

// valueOf is the text of an S value, "" for another.
func valueOf(v types.AttributeValue) string {
	if x, ok := v.(*types.AttributeValueMemberS); ok {
		return x.Value
	}
	return ""
}

// envValue is the value of name in env (NAME=VALUE lines).
func envValue(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// TestElectroDBModelBadParams: the parameters' bad input exits 2 before
// anything is read or written, saying which parameter and what to do.
func TestElectroDBModelBadParams(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	env := awsEnv(endpoint)
	table := handTable(t, client, edbHand, append(edbNodes(), edbForeign()...))
	before := rawLines(t, client, table)
	seed := writeText(t, t.TempDir(), "seed.csv", edbSeedCSV)
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"unset on export", []string{"export", "--table", table, "--out", filepath.Join(t.TempDir(), "x.jsonl"), "--model", edbModel},
			[]string{"{param:org}", "--model-param org=VALUE"}},
		{"unset on apply", []string{"apply", "--in", seed, "--table", table, "--model", edbModel},
			[]string{"{param:org}", "--model-param org=VALUE"}},
		{"unset on migrate", []string{"migrate", "--from-table", table, "--from-model", edbModel, "--to-table", "Elsewhere", "--to-layout", "path"},
			[]string{"{param:org}", "--model-param org=VALUE"}},
		{"unset on query", []string{"query", "get", "--id", "e1", "--table", table, "--model", edbModel},
			[]string{"{param:org}", "--model-param org=VALUE"}},
		{"unset on verify", []string{"verify", "--in", seed, "--table", table, "--model", edbModel},
			[]string{"{param:org}", "--model-param org=VALUE"}},
		{"unset on plan", []string{"plan", "--in", seed, "--table", table, "--model", edbModel},
			[]string{"{param:org}", "--model-param org=VALUE"}},
		{"unset on edit", []string{"edit", "--ops", writeText(t, t.TempDir(), "ops.jsonl", `{"op":"delete","id":"e42"}`+"\n"), "--table", table, "--model", edbModel},
			[]string{"{param:org}", "--model-param org=VALUE"}},
		{"unset on bench", []string{"bench", "--offline", "--in", seed, "--model", edbModel},
			[]string{"{param:org}", "--model-param org=VALUE"}},
		{"unset on schema", []string{"schema", "--table", table, "--model", edbModel},
			[]string{"{param:org}", "--model-param org=VALUE"}},
		{"unset on the dry run", []string{"import", "--in", seed, "--dry-run", "--model", edbModel},
			[]string{"{param:org}", "--model-param org=VALUE"}},
		{"unset on migrate's destination", []string{"migrate", "--from-table", table, "--from-layout", "path", "--to-table", "Elsewhere", "--to-model", edbModel},
			[]string{"{param:org}", "--model-param org=VALUE"}},
		{"unknown", []string{"apply", "--in", seed, "--table", table, "--model", edbModel, "--model-param", "org=acme", "--model-param", "orgg=acme"},
			[]string{"--model-param orgg", "did you mean org"}},
		{"without a model", []string{"apply", "--in", seed, "--table", table, "--layout", "path", "--model-param", "org=acme"},
			[]string{"--model-param org", "no model"}},
		{"empty", []string{"apply", "--in", seed, "--table", table, "--model", edbModel, "--model-param", "org="},
			[]string{"--model-param org=", "value"}},
		{"ends early", []string{"apply", "--in", seed, "--table", table, "--model", edbModel, "--model-param", "org=acme#managerid_x"},
			[]string{`"#managerid_"`, "give a value without it"}},
		{"twice", []string{"apply", "--in", seed, "--table", table, "--model", edbModel, "--model-param", "org=acme", "--model-param", "org=globex"},
			[]string{"given twice"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := run(t, env, c.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s%s", code, stdout, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
		})
	}
	if got := rawLines(t, client, table); !slices.Equal(got, before) {
		t.Fatalf("a refused command changed the table")
	}
}
