package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/treeport/treeport/ddbwrite"
	"github.com/treeport/treeport/internal/testserver/ddblocal"
	"github.com/treeport/treeport/internal/testserver/faultproxy"
	"github.com/treeport/treeport/layouts"
)

// TestSignalStopsLongDryRun: a dry run of every layout on a million nodes
// is stopped by SIGTERM and by SIGINT in the middle of its measuring, and
// exits 130 without printing its plans (it used to carry on to the end and
// exit 0). The waits are bounds on a hung process, not timings: the command
// is signalled once its progress line shows it is in a long loop.
func TestSignalStopsLongDryRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: generates and reads a million-node input")
	}
	in := filepath.Join(t.TempDir(), "random.csv")
	if _, stderr, code := run(t, nil, "gen", "--nodes", "1000000", "--shape", "random", "--seed", "7", "--out", in); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(treeportBin, "import", "--in", in, "--layout", "all", "--dry-run")
			var out, errb syncBuf
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			// The progress lines say it is measuring: a loop that used to
			// ignore the signal.
			deadline := time.After(5 * time.Minute)
		wait:
			for !strings.Contains(errb.String(), "treeport: dry run: ") {
				select {
				case err := <-done:
					t.Fatalf("the dry run ended (%v) before it could be interrupted; stderr:\n%s", err, errb.String())
				case <-deadline:
					_ = cmd.Process.Kill()
					t.Fatalf("no progress line in 5 minutes; stderr:\n%s", errb.String())
				case <-time.After(20 * time.Millisecond):
					continue wait
				}
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				_ = cmd.Process.Kill()
				t.Fatalf("still running a minute after %v; stderr:\n%s", sig, errb.String())
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Fatalf("after %v: %v, want exit 130; stderr:\n%s", sig, err, errb.String())
			}
			if strings.Contains(out.String(), "nothing was written") {
				t.Errorf("the plans were printed after %v:\n%s", sig, out.String())
			}
			if !strings.Contains(errb.String(), "interrupted") {
				t.Errorf("stderr does not say it was interrupted:\n%s", errb.String())
			}
		})
	}
}

// TestSecondInterruptQuitsNow: the first Ctrl-C of a table load asks for a
// clean stop and says so; the clean stop then waits for the batches in
// flight, which a table held to 60 WCU/s takes about half a minute to
// take (a window of 850 items at 2 WCU each). A second Ctrl-C quits at
// once, exit 130, and says what is kept: a rerun from the checkpoint ends
// with the table exact. Before, the second Ctrl-C was ignored until the
// drain ended. The waits are bounds on a hung process: the 5 s given to
// the second signal is a sixth of the drain it cuts short.
func TestSecondInterruptQuitsNow(t *testing.T) {
	endpoint := ddblocal.Endpoint(t)
	client := ddblocal.Client(t, endpoint)
	in := genInput(t, 4000)
	l, _ := layouts.New("path", layouts.Options{})
	want := expectedItems(t, in, "", l)
	table := ddblocal.NewTable(t, client, l.Table())
	proxy, err := faultproxy.New(faultproxy.Config{
		Target: endpoint, Operations: []string{"BatchWriteItem"},
		CapacityWCU: 60, Spec: map[string]layouts.TableSpec{table: l.Table()},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	ck := filepath.Join(t.TempDir(), "ck.json")
	args := []string{"import", "--in", in, "--layout", "path", "--table", table, "--checkpoint", ck, "--no-progress"}
	cmd := exec.Command(treeportBin, args...)
	cmd.Env = append(os.Environ(), awsEnv(proxy.URL())...)
	var errb syncBuf
	cmd.Stdout, cmd.Stderr = &errb, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// waitFor polls until cond holds; the deadline only bounds a hung run.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.After(2 * time.Minute)
		for !cond() {
			select {
			case err := <-exited:
				t.Fatalf("the load ended (%v) before %s:\n%s", err, what, errb.String())
			case <-deadline:
				_ = cmd.Process.Kill()
				t.Fatalf("not %s within 2 minutes:\n%s", what, errb.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	waitFor("the checkpoint held progress", func() bool {
		c, err := ddbwrite.LoadCheckpoint(ck)
		return err == nil && c.Watermark > 0
	})
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	waitFor("the first Ctrl-C was answered", func() bool {
		return strings.Contains(errb.String(), "press Ctrl-C again to quit now")
	})
	if c := proxy.Counts(); c.CapacityRejected == 0 {
		t.Fatalf("the proxy throttled nothing: the clean stop would not be slow (%+v)", c)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-exited:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("still running 5 s after the second Ctrl-C:\n%s", errb.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d (%v), want 130:\n%s", code, err, errb.String())
	}
	if !strings.Contains(errb.String(), "quitting now") {
		t.Errorf("the second Ctrl-C did not say it quits now:\n%s", errb.String())
	}
	// What a forced quit leaves is what a crash leaves: the rerun (straight
	// to DynamoDB Local, no throttling) resumes and the table ends exact.
	_, msg, code := run(t, awsEnv(endpoint), args...)
	if code != 0 {
		t.Fatalf("rerun: exit %d:\n%s", code, msg)
	}
	if !strings.Contains(msg, "resuming from checkpoint") {
		t.Errorf("the rerun did not resume:\n%s", msg)
	}
	diffLines(t, canonical(t, scanTable(t, client, table)), canonical(t, want))
}
