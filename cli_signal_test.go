package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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
