// Command treeport moves trees (adjacency lists) into and out of Amazon
// DynamoDB, in the layout of your choice: materialized path, sharded path,
// closure, prefix rows or a plain adjacency list.
//
// main.go is wiring only: the command line is internal/commands, whose
// Actions turn flags into Options for one call of a package's function
// (importer, exporter, refresh) and print its result; commands.ExitCode is
// the one place that maps errors to exit codes. main adds what belongs to
// the process: Ctrl-C and SIGTERM cancel the context (a clean stop) and a
// second one quits at once (stop), TREEPORT_CPUPROFILE=FILE writes a pprof
// CPU profile of the run, and TREEPORT_PEAKRSS=FILE the process's peak
// resident memory.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/treeport/treeport/internal/commands"
)

func main() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	go stop(sigs, cancel, os.Stderr, os.Exit)
	// TREEPORT_CPUPROFILE=FILE writes a pprof CPU profile of the run, for
	// looking into where a slow run spends its time.
	if p := os.Getenv("TREEPORT_CPUPROFILE"); p != "" {
		if f, err := os.Create(p); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer f.Close()
			}
		}
	}
	code := commands.Main(ctx, os.Args, os.Stderr)
	pprof.StopCPUProfile()
	signal.Stop(sigs)
	cancel()
	// TREEPORT_PEAKRSS=FILE writes the peak resident memory of the run
	// (Linux's VmHWM line), which the memory-bound tests check: unlike a
	// parent's rusage, it is this program's own, not the forked caller's.
	if p := os.Getenv("TREEPORT_PEAKRSS"); p != "" {
		if status, err := os.ReadFile("/proc/self/status"); err == nil {
			for _, line := range strings.Split(string(status), "\n") {
				if strings.HasPrefix(line, "VmHWM:") {
					os.WriteFile(p, []byte(line+"\n"), 0o644)
				}
			}
		}
	}
	os.Exit(code)
}

// stop handles Ctrl-C and SIGTERM. The first asks for a clean stop: the
// context is cancelled, and the command finishes what it has in flight and
// saves its checkpoint, which can take a while (a throttled table, a long
// retry). The second quits at once, exit 130, as a crash would: the
// checkpoint then holds what was saved last (it is synced every 200 ms),
// which a rerun resumes from, redoing the writes saved after it (the
// README's bound on what a resume redoes).
func stop(sigs <-chan os.Signal, cancel context.CancelFunc, stderr io.Writer, exit func(int)) {
	<-sigs
	fmt.Fprintln(stderr, "treeport: stopping cleanly: finishing the writes in flight and saving any checkpoint; press Ctrl-C again to quit now")
	cancel()
	<-sigs
	fmt.Fprintln(stderr, "treeport: quitting now without waiting: a --checkpoint holds what it saved last and a rerun resumes from there")
	exit(130)
}
