// Command treeport moves trees (adjacency lists) into and out of Amazon
// DynamoDB, in the layout of your choice: materialized path, sharded path,
// closure, prefix rows or a plain adjacency list.
//
// main.go is wiring only: the command line is internal/commands, whose
// Actions turn flags into Options for one call of a package's function
// (importer, exporter, refresh) and print its result; commands.ExitCode is
// the one place that maps errors to exit codes. main adds what belongs to
// the process: Ctrl-C and SIGTERM cancel the context,
// TREEPORT_CPUPROFILE=FILE writes a pprof CPU profile of the run, and
// TREEPORT_PEAKRSS=FILE the process's peak resident memory.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/treeport/treeport/internal/commands"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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
	stop()
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
