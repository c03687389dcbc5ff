package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/conformlab/conform/suites/monitor"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/driver"
	"github.com/conformlab/conform/harness/replay"
	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
)

const replayUsage = `Usage:
  conform replay [flags] FIELD
      Reproduces a field bug. FIELD is what a client showed in the field: a
      packet capture taken on its host (.pcap or .pcapng, as tcpdump writes
      them; harness/replay/pcap's documentation gives the command), a trace
      file of a production grpc-go client's recorder (harness/recorder's
      Record), or a lab trace. conform infers the environment the client
      saw — which address answered, refused or hung, and when; the
      resolver's addresses; the RPCs — writes it as a scenario file you can
      read and edit (the inference's uncertainties are in its description),
      replays it in the lab against each --impl and the reference, and says
      for each whether the replay shows what the field showed: the first
      divergence of its connection attempts (of its subchannels and their
      states, for a recorder's trace), with the field's as expected, and the
      requirement monitors' verdicts on the field and on each replay (those
      of conform check). Nothing is re-sent from the capture; every replay stays inside the
      lab. docs/field-bug.md walks through an example.

  Examples:
      sudo conform replay --lb pick_first --impl grpc-go@v1.85.0 --impl grpc-go@v1.55.0 client.pcapng
      sudo conform replay client.pcap --lb pick_first --addrs '[2001:db8::1]:443,192.0.2.1:443' --impl grpc-go@v1.55.0
      conform replay --mode sim --out /tmp/replay field.jsonl

Flags:
`

type replayFlags struct {
	tryFlags
	impls implList
	lb    string
	addrs string
}

func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := replayFlags{tryFlags: tryFlags{impl: "reference"}}
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&f.impls, "impl", "an implementation to replay against (repeat; the reference always runs too)")
	fs.StringVar(&f.lb, "lb", "", "the client's LB policy, in standard names (pick_first, round_robin); default the implementation's")
	fs.StringVar(&f.addrs, "addrs", "", "the addresses (ip:port, comma-separated, in the client's order) the client was given, when the capture has no DNS answer: an address it never tried is not on the wire")
	fs.StringVar(&f.mode, "mode", "lab", "lab, or sim (the reference only)")
	fs.StringVar(&f.out, "out", "conform-replay", "the directory the inferred scenario and the replays' traces are written into")
	fs.Uint64Var(&f.seed, "seed", 1, "the seed of the replays' randomness")
	fs.Usage = func() { fmt.Fprint(stderr, replayUsage); fs.PrintDefaults() }
	var fields []string
	for { // flags may come before and after FIELD
		if err := fs.Parse(args); err != nil {
			return exitError{2}
		}
		if fs.NArg() == 0 {
			break
		}
		fields, args = append(fields, fs.Arg(0)), fs.Args()[1:]
	}
	if len(fields) != 1 {
		fs.Usage()
		return badUsage("replay: want one field capture or trace; got %d arguments", len(fields))
	}
	impls, mode, err := f.resolve(ctx, stderr)
	if err != nil {
		return err
	}
	field, err := readAnyTrace(fields[0])
	if err != nil {
		return usageError{err}
	}
	in := replay.DefaultInference
	if f.addrs != "" {
		in.Addrs = strings.Split(f.addrs, ",")
	}
	infer, view := in.FromCapture, attemptsView()
	if recorded(field) {
		infer, view = in.Environment, policyView()
	}
	s, m, err := infer(field.Events)
	if err != nil {
		return usageError{fmt.Errorf("%s: %w", fields[0], err)}
	}
	s.Client.LBPolicy = f.lb
	path, err := f.writeScenario(s)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "the environment, inferred from %s: %s\n%s\n\n", fields[0], path, indentLines(s.Description))
	fmt.Fprintf(stdout, "the field, by the requirement monitors (what it can show):\n")
	printMonitors(stdout, monitor.JudgeAll(baseName(fields[0]), field))
	fmt.Fprintln(stdout)
	expected := &trace.Trace{Events: replay.Rename(field.Events, s, m, runner.AddrOf)}
	for _, impl := range impls {
		f.replayOne(ctx, s, impl, mode, expected, view, stdout)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// resolve is the implementations to replay against, the reference first,
// and the mode.
func (f replayFlags) resolve(ctx context.Context, stderr io.Writer) ([]runner.Impl, trace.Mode, error) {
	_, mode, err := f.tryFlags.resolve(ctx, stderr)
	if err != nil {
		return nil, "", err
	}
	impls := []runner.Impl{runner.Reference}
	for _, arg := range f.impls {
		rel, err := driver.ParseRelease(arg)
		if err != nil {
			return nil, "", usageError{err}
		}
		if err := checkPublished(ctx, []driver.Release{rel}, stderr); err != nil {
			return nil, "", err
		}
		impls = append(impls, runner.Driver{Impl: rel})
	}
	return impls, mode, nil
}

// writeScenario writes s as a scenario file into the out directory.
func (f replayFlags) writeScenario(s *scenario.Scenario) (string, error) {
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return "", badUsage("replay: --out %s: %v", f.out, err)
	}
	b, err := scenario.Encode(s)
	if err != nil {
		return "", err
	}
	path := filepath.Join(f.out, s.Name+".yaml")
	return path, os.WriteFile(path, b, 0o644)
}

// replayOne replays s against impl and says whether its connection attempts
// are the field's.
func (f replayFlags) replayOne(ctx context.Context, s *scenario.Scenario, impl runner.Impl, mode trace.Mode, field *trace.Trace, view fieldView, w io.Writer) {
	tr, err := runner.Run(ctx, s, impl, mode, runner.Options{Seed: f.seed, Origin: trace.OriginReplay})
	path := f.write(s, impl, mode, tr, w)
	if err != nil {
		fmt.Fprintf(w, "%s (%s): the replay did not run through: %v\n\n", impl, mode, err)
		return
	}
	aligned, shift := alignOnFirstAttempt(field, tr)
	res := compare.Traces(field, aligned, view.opts)
	verdict := "reproduces the field's " + view.name
	if !res.Equal() {
		verdict = "departs from the field"
	}
	fmt.Fprintf(w, "%s (%s): %s → %s\n", impl, mode, verdict, path)
	if shift != 0 {
		fmt.Fprintf(w, "    (its times shifted by %s: aligned on the field's first attempt)\n", trace.FormatT(-shift))
	}
	fmt.Fprintf(w, "%s\n", indentLines(res.String()))
	printMonitors(w, monitor.JudgeAll(s.Name, tr))
	fmt.Fprintln(w)
}

// alignOnFirstAttempt is the replay's attempts shifted so that its first
// SYN is at the field's: a capture's time 0 is its first packet, a
// replay's the scenario's start, and the client takes its own time from
// being given its addresses to its first SYN. It returns the shift taken
// off the replay's times (0 when either has no attempt).
func alignOnFirstAttempt(field, replayed *trace.Trace) (*trace.Trace, time.Duration) {
	attempts := trace.Select(replayed.Events, trace.OfKind(trace.KindSYN, trace.KindSYNACK, trace.KindRST))
	f := trace.Select(field.Events, trace.OfKind(trace.KindSYN))
	if len(attempts) == 0 || len(f) == 0 {
		return replayed, 0
	}
	r := trace.Select(attempts, trace.OfKind(trace.KindSYN))
	if len(r) == 0 {
		return replayed, 0
	}
	shift := r[0].T - f[0].T
	for i := range attempts {
		attempts[i].T -= shift
	}
	return &trace.Trace{Header: replayed.Header, Events: attempts}, shift
}

// fieldTolerance is how far a replay's event may be from the field's: a
// field capture's timestamps are the client host's, under its own load.
const fieldTolerance = 20 * time.Millisecond

// fieldView is what a replay is compared with the field on.
type fieldView struct {
	name string
	opts compare.Options
}

// recorded reports whether field is a recorder's trace (a policy's events,
// no packets): its environment is inferred from the policy's events.
func recorded(field *trace.Trace) bool {
	return len(trace.Select(field.Events, trace.OfKind(trace.KindSYN))) == 0 &&
		len(trace.Select(field.Events, trace.FromSource(trace.SourcePolicy))) > 0
}

// policyView compares what a recorder shows: the subchannels the policy
// created (by address list) and their states, within fieldTolerance. An
// implementation whose trace has no policy events (only the reference and
// grpc-go record them) departs on every subchannel.
func policyView() fieldView {
	return fieldView{"subchannels and their states", policyOptions()}
}

func policyOptions() compare.Options {
	return compare.Options{
		Select:    []trace.Pred{trace.OfKind(trace.KindSubchannelNew, trace.KindSubchannelState)},
		Ignore:    []string{"peer", "port", "backend"},
		Tolerance: fieldTolerance,
	}
}

// attemptsView compares connection attempts and their fate, the evidence
// any capture has, within fieldTolerance. SYN retransmissions are left
// out: their times are the host kernel's (its retransmission timer), not
// the client's, and vary by more than the tolerance between two runs of
// one client; an attempt's first SYN and its answer are the client's.
func attemptsView() fieldView {
	return fieldView{"connection attempts", attemptsOptions()}
}

func attemptsOptions() compare.Options {
	return compare.Options{
		Select: []trace.Pred{trace.OfKind(trace.KindSYN, trace.KindSYNACK, trace.KindRST),
			func(e trace.Event) bool { return !e.Retransmit }},
		Ignore:    []string{"peer", "port", "backend"},
		Tolerance: fieldTolerance,
	}
}
