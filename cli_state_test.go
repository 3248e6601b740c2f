package main

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/internal/statefile"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/testserver/faultproxy"
	"github.com/treeport/treeport/layouts"
)

// precious is a file of the user's that a link planted beside a checkpoint
// points to: treeport must neither cut nor overwrite it.
func precious(t *testing.T) (path, content string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "precious.txt")
	content = "the user's own data, no newline at its end"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, content
}

// plant puts a symbolic or hard link to target at path, or a copy of it.
func plant(t *testing.T, kind, target, path string) {
	t.Helper()
	var err error
	switch kind {
	case "symlink":
		err = os.Symlink(target, path)
	case "hardlink":
		err = os.Link(target, path)
	default: // a file of the user's own, under the state file's name
		var b []byte
		if b, err = os.ReadFile(target); err == nil {
			err = os.WriteFile(path, b, 0o600)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestStateFileLinksRefused plants a link at each state file of a
// checkpoint before an import or apply: the run is refused (exit 2, the
// file named), the link's target is left as it was, and nothing is
// written. (treeport once took a planted CHECKPOINT.held for a torn spool
// and cut its target to 0 bytes, and wrote its journal over the target of
// CHECKPOINT.wm, and its plan over that of CHECKPOINT.plan.json, exit 0.)
func TestStateFileLinksRefused(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	typesFlag := fixtureTypes(t, "cars")
	l, _ := layouts.New("path", layouts.Options{})
	loaded := loadTable(t, awsEnv(endpoint), client, "fixtures/cars.csv", typesFlag, l)
	snap := readCSVFile(t, "fixtures/cars.csv").clone()
	snap.set(t, "CM2", "name", "Powertrain II")
	snapPath := snap.write(t, filepath.Join(t.TempDir(), "snap.csv"))
	for _, tc := range []struct {
		cmd, suffix, kind string
	}{
		{"import", ".held", "symlink"},
		{"import", ".held", "hardlink"},
		{"import", ".wm", "symlink"},
		{"import", ".wm", "hardlink"},
		{"import", "", "symlink"},
		{"import", "", "hardlink"},
		{"apply", ".plan.json", "symlink"},
		{"apply", ".plan.json", "hardlink"},
		{"apply", ".wm", "symlink"},
		{"apply", ".held", "symlink"},
		{"import", ".held", "file"},
		{"import", ".wm", "file"},
		{"apply", ".plan.json", "file"},
	} {
		t.Run(tc.cmd+tc.suffix+"-"+tc.kind, func(t *testing.T) {
			target, content := precious(t)
			ck := filepath.Join(t.TempDir(), "ck.json")
			plant(t, tc.kind, target, ck+tc.suffix)
			var args []string
			table := loaded
			if tc.cmd == "import" {
				table = ddblocal.NewTable(t, client, l.Table())
				args = []string{"import", "--in", "fixtures/cars.csv", "--types", typesFlag, "--layout", "path", "--table", table, "--checkpoint", ck, "--no-progress"}
			} else {
				args = []string{"apply", "--in", snapPath, "--types", typesFlag, "--layout", "path", "--table", table, "--checkpoint", ck, "--no-progress"}
			}
			before := rawLines(t, client, table)
			_, stderr, code := run(t, awsEnv(endpoint), args...)
			if code != 2 || !strings.Contains(stderr, ck+tc.suffix) {
				t.Errorf("%s with a %s at %s: exit %d, want 2 naming the file:\n%s", tc.cmd, tc.kind, ck+tc.suffix, code, stderr)
			}
			if got, err := os.ReadFile(target); err != nil || string(got) != content {
				t.Errorf("the link's target now holds %q (%v), want %q untouched", got, err, content)
			}
			if got, err := os.ReadFile(ck + tc.suffix); err != nil || string(got) != content {
				t.Errorf("%s now holds %q (%v), want %q untouched", ck+tc.suffix, got, err, content)
			}
			if !slices.Equal(rawLines(t, client, table), before) {
				t.Errorf("a refused %s changed the table", tc.cmd)
			}
		})
	}
}

// stopAtFirstWrite runs args through a proxy that refuses every write of
// an item with a name attribute: the run stops before it wrote anything,
// and leaves its checkpoint unfinished, as a crash would.
func stopAtFirstWrite(t *testing.T, endpoint string, args []string, ck string) *ddbwrite.Checkpoint {
	t.Helper()
	proxy, err := faultproxy.New(faultproxy.Config{Target: endpoint, Reject: "name"})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	if _, stderr, code := run(t, awsEnv(proxy.URL()), args...); code == 0 {
		t.Fatalf("the run through a proxy that refuses every write ended with exit 0:\n%s", stderr)
	}
	c, err := ddbwrite.LoadCheckpoint(ck)
	if err != nil {
		t.Fatalf("no checkpoint left by the stopped run: %v", err)
	}
	if c.Done {
		t.Fatalf("the stopped run's checkpoint says done: %+v", c)
	}
	return c
}

// forgeCheckpoint sets a checkpoint's watermark as an editor would: in its
// text (the digest left as it was), or, with redigest, as an attacker who
// knows the format does (the digest computed again).
func forgeCheckpoint(t *testing.T, ck string, watermark int64, redigest bool) {
	t.Helper()
	if redigest {
		c, err := ddbwrite.LoadCheckpoint(ck)
		if err != nil {
			t.Fatal(err)
		}
		c.Watermark = watermark
		if err := c.Save(ck); err != nil {
			t.Fatal(err)
		}
		return
	}
	text := readFile(t, ck)
	re := regexp.MustCompile(`"watermark": \d+`)
	if !re.MatchString(text) {
		t.Fatalf("no watermark in %s:\n%s", ck, text)
	}
	if err := os.WriteFile(ck, []byte(re.ReplaceAllString(text, fmt.Sprintf(`"watermark": %d`, watermark))), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointWatermarkPastInputRefused: a checkpoint whose watermark is
// past the input's items (or the plan's operations) was taken for "all
// written", exit 0 with nothing in the table. Edited by hand, its digest
// gives it away; forged with the digest computed again, the watermark is
// checked against what the run has. Both exit 2 and write nothing.
func TestCheckpointWatermarkPastInputRefused(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	typesFlag := fixtureTypes(t, "cars")
	l, _ := layouts.New("path", layouts.Options{})
	for _, cmd := range []string{"import", "apply"} {
		for _, redigest := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s-redigest=%v", cmd, redigest), func(t *testing.T) {
				t.Parallel()
				ck := filepath.Join(t.TempDir(), "ck.json")
				table := ddblocal.NewTable(t, client, l.Table())
				args := []string{cmd, "--in", "fixtures/cars.csv", "--types", typesFlag, "--layout", "path", "--table", table, "--checkpoint", ck, "--no-progress"}
				stopAtFirstWrite(t, endpoint, args, ck)
				if n := len(rawLines(t, client, table)); n != 0 {
					t.Fatalf("the stopped run wrote %d items", n)
				}
				original := readFile(t, ck)
				forgeCheckpoint(t, ck, 1_000_000, redigest)
				_, stderr, code := run(t, awsEnv(endpoint), args...)
				want := "digest"
				if redigest {
					want = "1000000"
				}
				if code != 2 || !strings.Contains(stderr, ck) || !strings.Contains(stderr, want) {
					t.Errorf("%s resumed at a watermark past its input: exit %d, want 2 naming %s and saying %q:\n%s", cmd, code, ck, want, stderr)
				}
				if n := len(rawLines(t, client, table)); n != 0 {
					t.Errorf("the refused run wrote %d items", n)
				}
				// The checkpoint as treeport wrote it resumes and writes
				// everything.
				if err := os.WriteFile(ck, []byte(original), 0o600); err != nil {
					t.Fatal(err)
				}
				if _, stderr, code := run(t, awsEnv(endpoint), args...); code != 0 {
					t.Fatalf("%s resumed at watermark 0: exit %d:\n%s", cmd, code, stderr)
				}
				if n := len(rawLines(t, client, table)); n != 48 {
					t.Errorf("the resumed run left %d items, want cars' 48", n)
				}
			})
		}
	}
}

// TestApplyResumeRefusesForgedPlan edits the plan kept beside an
// unfinished apply's checkpoint as the probe did: 20 deletes added, the
// summary left alone. A resume once trusted it and deleted 20 of the 48
// nodes past --max-delete-ratio, exit 0. Edited by hand, the digest gives
// it away; with the digest computed again, the operations no longer add up
// to the summary the guard checks. Both exit 2 and leave the table alone;
// the plan as treeport wrote it still resumes.
func TestApplyResumeRefusesForgedPlan(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	typesFlag := fixtureTypes(t, "cars")
	l, _ := layouts.New("path", layouts.Options{})
	table := loadTable(t, awsEnv(endpoint), client, "fixtures/cars.csv", typesFlag, l)
	full := readCSVFile(t, "fixtures/cars.csv")
	snap := full.clone()
	snap.set(t, "CM2", "name", "Powertrain II")
	snapPath := snap.write(t, filepath.Join(t.TempDir(), "snap.csv"))
	ck := filepath.Join(t.TempDir(), "ck.json")
	args := []string{"apply", "--in", snapPath, "--types", typesFlag, "--layout", "path", "--table", table, "--checkpoint", ck, "--no-progress"}
	saved := stopAtFirstWrite(t, endpoint, args, ck)
	before := rawLines(t, client, table)
	planPath := ck + ".plan.json"
	plan := readFile(t, planPath)
	const end = "\n],\n\"summary\":"
	at := strings.Index(plan, end)
	if at < 0 {
		t.Fatalf("no end of operations in the plan:\n%s", plan)
	}
	var deletes strings.Builder
	for _, r := range full.rows[len(full.rows)-20:] {
		fmt.Fprintf(&deletes, ",\n{\"op\":\"delete\",\"reason\":\"removed\",\"id\":%q,\"wcu\":3,\"key\":{\"Id\":{\"S\":%q}}}", r[0], r[0])
	}
	forged := plan[:at] + deletes.String() + plan[at:]
	redigested := forged
	if trailer := strings.LastIndex(forged, ",\n\"digest\":"); trailer >= 0 {
		body := forged[:trailer]
		sum := sha256.Sum256([]byte(body))
		redigested = body + ",\n\"digest\":\"" + statefile.Digest("plan", saved.Fingerprint, sum[:]) + "\"}\n"
	} else {
		t.Error("the plan has no digest")
	}

	for _, tc := range []struct{ name, plan, want string }{
		{"edited", forged, "digest"},
		{"redigested", redigested, "summary"},
	} {
		if err := os.WriteFile(planPath, []byte(tc.plan), 0o600); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := run(t, awsEnv(endpoint), args...)
		if code != 2 || !strings.Contains(stderr, planPath) || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s plan: exit %d, want 2 naming %s and saying %q:\n%s", tc.name, code, planPath, tc.want, stderr)
		}
		if !slices.Equal(rawLines(t, client, table), before) {
			t.Fatalf("%s plan: the refused apply changed the table", tc.name)
		}
	}
	if err := os.WriteFile(planPath, []byte(plan), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := run(t, awsEnv(endpoint), args...); code != 0 || !strings.Contains(stderr, "resuming") {
		t.Fatalf("the plan as treeport wrote it: exit %d, want 0 resuming:\n%s", code, stderr)
	}
	sameState(t, "after the resumed apply", tableState(t, client, table, l.Table()), wantState(t, snapPath, typesFlag, l))
}

// TestStateFileModes: the held spool and the plan of an apply hold items,
// so they are private (0600) as the checkpoint is, whatever the umask.
func TestStateFileModes(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	typesFlag := fixtureTypes(t, "cars")
	l, _ := layouts.New("path", layouts.Options{})
	table := loadTable(t, awsEnv(endpoint), client, "fixtures/cars.csv", typesFlag, l)
	snap := readCSVFile(t, "fixtures/cars.csv").clone()
	snap.set(t, "CM2", "name", "Powertrain II")
	snapPath := snap.write(t, filepath.Join(t.TempDir(), "snap.csv"))
	ck := filepath.Join(t.TempDir(), "ck.json")
	args := []string{"apply", "--in", snapPath, "--types", typesFlag, "--layout", "path", "--table", table, "--checkpoint", ck, "--no-progress"}
	stopAtFirstWrite(t, endpoint, args, ck)
	for _, p := range []string{ck, ck + ".plan.json"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("%s has mode %#o, want 0600: it holds items", p, m)
		}
	}
}

// runUmask runs treeport under umask mask.
func runUmask(t *testing.T, env []string, mask string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", `umask ` + mask + ` && exec "$@"`, "sh", treeportBin}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), errb.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), 0
}

// TestOutputFileModes: an export is written through a temporary file
// renamed over it, and gets the mode a plain create gives under the
// user's umask, or keeps the mode of the file it replaces (it was once
// forced to 0644, so a private 0600 export became world-readable). The
// files of import --out follow the umask too.
func TestOutputFileModes(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	typesFlag := fixtureTypes(t, "cars")
	l, _ := layouts.New("path", layouts.Options{})
	table := loadTable(t, awsEnv(endpoint), client, "fixtures/cars.csv", typesFlag, l)
	for _, tc := range []struct {
		name     string
		umask    string
		existing os.FileMode // 0: no file there before
		want     os.FileMode
	}{
		{"new, umask 022", "022", 0, 0o644},
		{"new, umask 077", "077", 0, 0o600},
		{"new, umask 027", "027", 0, 0o640},
		{"replaces a 0600 file", "022", 0o600, 0o600},
		{"replaces a 0640 file", "002", 0o640, 0o640},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "export.jsonl")
			if tc.existing != 0 {
				if err := os.WriteFile(out, []byte("old\n"), tc.existing); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(out, tc.existing); err != nil {
					t.Fatal(err)
				}
			}
			_, stderr, code := runUmask(t, awsEnv(endpoint), tc.umask, "export", "--table", table, "--layout", "path", "--out", out)
			if code != 0 {
				t.Fatalf("export: exit %d:\n%s", code, stderr)
			}
			fi, err := os.Stat(out)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != tc.want {
				t.Errorf("export has mode %#o, want %#o", got, tc.want)
			}
			if n := strings.Count(readFile(t, out), "\n"); n != 48 {
				t.Errorf("export holds %d lines, want cars' 48", n)
			}
		})
	}
	t.Run("import --out, umask 027", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "out")
		_, stderr, code := runUmask(t, nil, "027", "import", "--in", "fixtures/cars.csv", "--types", typesFlag, "--layout", "path", "--out", dir)
		if code != 0 {
			t.Fatalf("import --out: exit %d:\n%s", code, stderr)
		}
		n := 0
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			n++
			if fi, err := d.Info(); err != nil || fi.Mode().Perm() != 0o640 {
				t.Errorf("%s: mode %v (%v), want 0640", p, fi.Mode().Perm(), err)
			}
			return nil
		})
		if n < 4 {
			t.Errorf("import --out wrote %d files, want the data, manifest, create-table and import-table", n)
		}
	})
}

// withPassword puts a user and a password into the endpoint URL.
func withPassword(t *testing.T, endpoint, password string) string {
	t.Helper()
	rest, ok := strings.CutPrefix(endpoint, "http://")
	if !ok {
		t.Fatalf("endpoint %q is not http://", endpoint)
	}
	return "http://user:" + password + "@" + rest
}

// TestNoPasswordPrinted: an --endpoint-url holding a password
// (http://user:password@host) worked, and bench printed the password on
// stdout and into its HTML, JSON and Markdown reports. No command prints
// it or writes it to a file: bench shows the URL redacted, and import,
// export, migrate and verify, their logs and reports, never show it.
func TestNoPasswordPrinted(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	const password = "pw-0f7c3a91"
	env := append(awsEnv(endpoint), "TREEPORT_ENDPOINT_URL="+withPassword(t, endpoint, password))
	dir := t.TempDir()
	src := ddblocal.TableName(t)
	dst := ddblocal.TableName(t) + "-to"
	dropTableLater(t, client, src)
	dropTableLater(t, client, dst)
	for _, args := range [][]string{
		{"import", "--in", "fixtures/cars.json", "--layout", "path", "--table", src, "--create-table", "--no-progress", "--report", filepath.Join(dir, "import.json")},
		{"export", "--table", src, "--layout", "path", "--out", filepath.Join(dir, "export.jsonl")},
		{"verify", "--in", "fixtures/cars.json", "--layout", "path", "--table", src},
		{"migrate", "--from-table", src, "--from-layout", "path", "--to-table", dst, "--to-layout", "closure", "--create-table", "--no-progress", "--report", filepath.Join(dir, "migrate.json")},
		{"bench", "--in", "fixtures/cars.json", "--layouts", "path,adjacency", "--sample", "5", "--table-prefix", ddblocal.TableName(t),
			"--out", filepath.Join(dir, "bench.md"), "--out", filepath.Join(dir, "bench.json"), "--out", filepath.Join(dir, "bench.html")},
	} {
		stdout, stderr, code := run(t, env, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d:\n%s", args[0], code, stderr)
		}
		if strings.Contains(stdout+stderr, password) {
			t.Errorf("%s printed the password:\n%s\n%s", args[0], stdout, stderr)
		}
		if args[0] == "bench" && !strings.Contains(stdout, "user:xxxxx@") {
			t.Errorf("bench does not show the endpoint, redacted:\n%s", stdout)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		text := readFile(t, filepath.Join(dir, e.Name()))
		if strings.Contains(text, password) {
			t.Errorf("%s holds the password", e.Name())
		}
		if strings.HasPrefix(e.Name(), "bench.") && !strings.Contains(text, "user:xxxxx@") {
			t.Errorf("%s does not name the endpoint, redacted", e.Name())
		}
	}
	if len(entries) != 6 {
		t.Errorf("%d files written, want the 2 reports, the export and the 3 bench reports", len(entries))
	}
}

// TestBenchMarkdownEscapesInput: the input's file name, its node ids and
// the summary went into the Markdown report unescaped (`# treeport bench:
// <img src=x onerror=alert(9)>.json`). They are escaped as the HTML report
// escapes them: outside code spans no input becomes markup.
func TestBenchMarkdownEscapesInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "<img src=x onerror=alert(9)>.json")
	nodes := `[{"id":"<img src=x onerror=alert(1)>"},{"id":"[x](javascript:alert(2))","parent_id":"<img src=x onerror=alert(1)>"},` +
		`{"id":"*em* _u_ ` + "`tick`" + `","parent_id":"[x](javascript:alert(2))"},{"id":"<script>alert(3)</script>","parent_id":"<img src=x onerror=alert(1)>"}]`
	if err := os.WriteFile(in, []byte(nodes), 0o644); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(dir, "r.md")
	if _, stderr, code := run(t, nil, "bench", "--in", in, "--offline", "--layouts", "path,closure,adjacency", "--out", md); code != 0 {
		t.Fatalf("bench: exit %d:\n%s", code, stderr)
	}
	doc := readFile(t, md)
	if first, _, _ := strings.Cut(doc, "\n"); first != "# treeport bench: &lt;img src=x onerror=alert(9)&gt;.json" {
		t.Errorf("title %q, want the file name escaped", first)
	}
	// What a Markdown renderer reads as markup: everything outside the
	// code spans (which show their text as it is).
	outside := regexp.MustCompile("`[^`\n]*`").ReplaceAllString(doc, "")
	for _, bad := range []string{"<img", "<script", "](javascript:", "*em*"} {
		if strings.Contains(outside, bad) {
			i := strings.Index(outside, bad)
			t.Errorf("the Markdown report holds %q outside a code span: …%s…", bad, outside[max(0, i-60):min(len(outside), i+60)])
		}
	}
}

// TestOutputLinksRefused plants a symbolic link at the name of each file
// treeport writes beside the user's (rejects, dead-letter, report, a
// plan's, an edit's and bench's --out): the command is refused before it
// does anything (exit 2, the file named), the link's target is left as it
// was, and nothing is written. treeport once truncated the target and
// wrote its rejects or report into it.
func TestOutputLinksRefused(t *testing.T) {
	t.Parallel()
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	typesFlag := fixtureTypes(t, "cars")
	l, _ := layouts.New("path", layouts.Options{})
	loaded := loadTable(t, awsEnv(endpoint), client, "fixtures/cars.csv", typesFlag, l)
	for _, tc := range []struct {
		name string
		args func(link, dir, table string) []string
	}{
		{"import --rejects", func(link, dir, _ string) []string {
			return []string{"import", "--in", "fixtures/cars.csv", "--layout", "path", "--on-invalid", "skip", "--rejects", link, "--out", filepath.Join(dir, "out")}
		}},
		{"import --report", func(link, _, table string) []string {
			return []string{"import", "--in", "fixtures/cars.csv", "--types", typesFlag, "--layout", "path", "--table", table, "--report", link, "--no-progress"}
		}},
		{"import --dead-letter", func(link, _, table string) []string {
			return []string{"import", "--in", "fixtures/cars.csv", "--types", typesFlag, "--layout", "path", "--table", table, "--dead-letter", link, "--no-progress"}
		}},
		{"plan --out", func(link, _, _ string) []string {
			return []string{"plan", "--in", "fixtures/cars.csv", "--types", typesFlag, "--layout", "path", "--table", loaded, "--out", link}
		}},
		{"bench --rejects", func(link, _, _ string) []string {
			return []string{"bench", "--in", "fixtures/cars.csv", "--layouts", "path", "--on-invalid", "skip", "--rejects", link}
		}},
		{"bench --out", func(link, _, _ string) []string {
			return []string{"bench", "--in", "fixtures/cars.csv", "--layouts", "path", "--out", link + ".md"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target, content := precious(t)
			dir := t.TempDir()
			link := filepath.Join(dir, "out.jsonl")
			table := ddblocal.NewTable(t, client, l.Table())
			args := tc.args(link, dir, table)
			if tc.name == "bench --out" {
				link += ".md"
			}
			plant(t, "symlink", target, link)
			before := rawLines(t, client, loaded)
			_, stderr, code := run(t, awsEnv(endpoint), args...)
			if code != 2 || !strings.Contains(stderr, link+": a symbolic link") {
				t.Errorf("%s with a symbolic link at %s: exit %d, want 2 naming the file:\n%s", tc.name, link, code, stderr)
			}
			if got, err := os.ReadFile(target); err != nil || string(got) != content {
				t.Errorf("the link's target now holds %q (%v), want %q untouched", got, err, content)
			}
			if n := len(rawLines(t, client, table)); n != 0 {
				t.Errorf("a refused %s wrote %d items", tc.name, n)
			}
			if !slices.Equal(rawLines(t, client, loaded), before) {
				t.Errorf("a refused %s changed the table", tc.name)
			}
			if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
				t.Errorf("a refused %s wrote its --out", tc.name)
			}
		})
	}
}
