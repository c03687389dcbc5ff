// Command conform checks gRPC client load balancing against gRFCs A61, A62,
// A56 and A75, in a real network lab and in simulation.
//
// Run `conform help` for the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
)

// The main goroutine stays on the main thread, so that the process's own
// view of the network (/proc/self/net) is never read from a lab namespace.
func init() { runtime.LockOSThread() }

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"run", "run the suites against the reference; a verdict per requirement", runRun},
		{"record", "write the reference's traces as the golden traces (traces/)", runRecord},
		{"verify", "run the suites against a third-party implementation (grpc-go, grpc-js, grpcio, grpc-java) in the lab: a matrix", runVerify},
		{"bisect", "find the first release in a range whose verdict on a spec (or a scenario) changes: last good / first bad", runBisect},
		{"merge", "join the results files of a sharded verify (--shard i/n --results FILE) into one matrix and its reports", runMerge},
		{"requirements", "the requirement catalogue, and which specs check each requirement", runRequirements},
		{"try", "run your own scenario files against an implementation; traces, and where it departs from the reference", runTry},
		{"replay", "reproduce a field bug: a capture (pcap) or trace → its environment as a scenario → replayed in the lab", runReplay},
		{"diff", "compare two traces (or packet captures) lane by lane: the first divergence, in context", runDiff},
		{"check", "run the requirement monitors on traces or captures: a verdict per invariant, with the events that break it", runCheck},
		{"cache", "where conform keeps the drivers it builds and installs: `cache` lists it, `cache clean` empties it", runCache},
		{"lab", "the network lab: `lab check` (can it run here?), `lab demo` (see Happy Eyeballs in packets)", runLab},
	}
}

const usage = `conform — does this gRPC client balance load the way the gRFCs say?

Usage:
  conform <command> [arguments]

Commands:
%s
  help         this text; "conform <command> -h" tells about one command

The lab needs root (it creates network namespaces; nothing in the root
namespace is touched, and everything is removed when conform exits, even on
Ctrl-C). Start with:

  sudo conform lab check     # can the lab run on this machine, and if not, why
  sudo conform lab demo      # a grpc-go channel doing Happy Eyeballs, packet by packet
  sudo conform run           # every suite, in simulation and in the lab
  conform run --mode sim     # simulation only (no root needed)
  conform requirements       # what is checked, and what is not yet
  conform check TRACE…       # the requirement monitors on any trace or capture
  sudo conform verify --impl grpc-go@v1.85.0 --impl grpc-js@1.14.7 --impl grpcio --html report/
`

// exitError carries an exit status other than 1.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// usageError is a command line conform cannot act on: exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// badUsage is a usage error with the message format gives.
func badUsage(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	interrupted := ctx.Err() != nil // before stop, which cancels ctx too
	stop()
	os.Exit(exitStatus(err, interrupted, os.Stderr))
}

// exitStatus says how conform ends after run returned err: 0, 1 for
// verdicts or failures, 2 for usage errors, 130 for a real interrupt.
func exitStatus(err error, interrupted bool, stderr io.Writer) int {
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case interrupted:
		fmt.Fprintln(stderr, "conform: interrupted; the lab was removed")
		return 130
	case errors.As(err, new(usageError)):
		fmt.Fprintln(stderr, "conform:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "conform:", err)
		return 1
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			return run(ctx, []string{args[1], "-h"}, stdout, stderr)
		}
		printUsage(stdout)
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	printUsage(stderr)
	return badUsage("unknown command %q (see conform help)", args[0])
}

func printUsage(w io.Writer) {
	var list string
	for _, c := range commands() {
		list += fmt.Sprintf("  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, usage, list)
}
