package main

// Helpers every end-to-end test file may use: running treeport until a
// condition holds and interrupting it, and a buffer a test reads while a
// process writes to it.

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/treeport/treeport/ddbwrite"
)

// syncBuf is a buffer a test may read while a process writes to it.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// interruptWhen starts treeport with args (env added to the environment),
// asks ready every 5 ms with the stderr written so far, sends SIGINT as
// soon as it holds, and wants exit 130. The test fails when the run ends
// first, or when ready does not hold within 2 minutes (a bound on a hung
// run, not a timing); waitingFor says what ready waits for. It returns the
// run's stderr and how long the run took to stop after SIGINT.
func interruptWhen(t *testing.T, env, args []string, waitingFor string, ready func(stderr string) bool) (stderr string, stopping time.Duration) {
	t.Helper()
	r := startRun(t, env, args)
	r.until(t, waitingFor, func() bool { return ready(r.stderr.String()) })
	if err := r.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	err := <-r.done
	stopping = time.Since(signalled)
	if code := r.cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d (%v) after SIGINT, want 130:\n%s", code, err, r.stderr.String())
	}
	return r.stderr.String(), stopping
}

// checkpointMoved is a condition for interruptWhen: the checkpoint ck
// holds acknowledged writes. Waiting for it, not for a fixed time, keeps a
// test right on a loaded machine (where 1.5 s may come before the first
// acknowledgement) and on a fast one (where it may come after the end).
func checkpointMoved(ck string) func(string) bool {
	return func(string) bool {
		c, err := ddbwrite.LoadCheckpoint(ck)
		return err == nil && c.Watermark > 0
	}
}

// running is a treeport run started by startRun.
type running struct {
	cmd    *exec.Cmd
	stderr *syncBuf
	done   chan error // gets the run's exit
}

// startRun starts treeport with args (env added to the environment).
func startRun(t *testing.T, env, args []string) *running {
	t.Helper()
	r := &running{cmd: exec.Command(treeportBin, args...), stderr: &syncBuf{}, done: make(chan error, 1)}
	r.cmd.Env = append(os.Environ(), env...)
	r.cmd.Stderr = r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	return r
}

// until asks ready every 5 ms and returns as soon as it holds. The test
// fails when the run ends first, or when ready does not hold within 2
// minutes (a bound on a hung run, not a timing; the run is killed);
// waitingFor says what ready waits for.
func (r *running) until(t *testing.T, waitingFor string, ready func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !ready() {
		select {
		case err := <-r.done:
			t.Fatalf("ended (%v) before %s: %s", err, waitingFor, r.stderr.String())
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.cmd.Process.Kill()
			<-r.done
			t.Fatalf("no %s in 2 minutes: %s", waitingFor, r.stderr.String())
		}
	}
}

// stopsOn sends sig and fails the test unless the run stops within about
// a second with exit 130 and leaves tmp empty.
func (r *running) stopsOn(t *testing.T, sig syscall.Signal, tmp string) {
	t.Helper()
	sent := time.Now()
	r.cmd.Process.Signal(sig)
	var err error
	select {
	case err = <-r.done:
	case <-time.After(30 * time.Second):
		r.cmd.Process.Kill()
		t.Fatalf("still running 30 s after %v", sig)
	}
	took := time.Since(sent)
	t.Logf("stopped %v after %v", took, sig)
	// A second on an idle machine; the bound allows for a loaded one (the
	// test machine runs others' tests beside it).
	if took > 3*time.Second {
		t.Errorf("took %v to stop after %v", took, sig)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want 130; stderr:\n%s", err, r.stderr.String())
	}
	emptyDir(t, tmp)
}
