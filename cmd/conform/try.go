package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/driver"
	"github.com/conformlab/conform/harness/report/html"
	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/netlab"
	"github.com/conformlab/conform/suites/monitor"
)

const tryUsage = `Usage:
  conform try [flags] SCENARIO.yaml…
      Runs your own scenario files (the format of harness/scenario: backends,
      the client's configuration, a timeline of resolver updates, faults and
      RPCs; harness/scenario/testdata has examples) against an implementation
      — the reference by default, or any --impl that verify takes — writes
      each run's trace into --out, and, for an implementation other than the
      reference, runs the reference on the same scenario and prints where the
      two first diverge (connection attempts, channel states, RPC results).
      Each run is judged by the requirement monitors that apply to it (those
      of conform check); --html draws each run's timeline above the
      reference's, with a divergence or a breach marked.
      The lab needs root; --mode sim runs the reference in the simulator.
      Exit status 0 when every run finished (whatever it showed), 1 when a
      run broke, 2 for bad input (the file and line of a scenario's mistake).

  Examples:
      sudo conform try --impl grpc-go@v1.85.0 my-failover.yaml
      conform try --mode sim --out /tmp/traces my-failover.yaml

Flags:
`

type tryFlags struct {
	impl, mode, out, pcap, html string
	seed                        uint64
	policies, can               []string // for --impl go:… (as verify's)
}

func runTry(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := tryFlags{}
	fs := flag.NewFlagSet("try", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.impl, "impl", "reference", "the implementation: reference, grpc-go@v1.85.0, grpc-js@1.14.7, grpcio, grpc-java,\nor your own Go balancer, go:<module>@<version> or go:<dir> (see conform verify --help)")
	fs.Var((*implList)(&f.policies), "policy", policyUsage)
	fs.Var((*implList)(&f.can), "can", canUsage)
	fs.StringVar(&f.mode, "mode", "lab", "lab, or sim (the reference only)")
	fs.StringVar(&f.out, "out", "conform-traces", "the directory the traces are written into")
	fs.StringVar(&f.pcap, "pcap", "", pcapUsage)
	fs.StringVar(&f.html, "html", "", "also write an HTML page into this directory: each run's timeline above the reference's\n(on one time scale), the monitors' verdicts, a divergence or a breach marked")
	fs.Uint64Var(&f.seed, "seed", 1, "the seed of the run's randomness (recorded in the trace)")
	fs.Usage = func() { fmt.Fprint(stderr, tryUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return exitError{2}
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return badUsage("try: name at least one scenario file")
	}
	if err := validatePolicies("try", f.policies, f.can, []string{f.impl}); err != nil {
		return err
	}
	impl, mode, err := f.resolve(ctx, stderr)
	if err != nil {
		return err
	}
	if err := validPCAPDir("try", f.pcap); err != nil {
		return err
	}
	if err := validHTMLDir("try", f.html); err != nil {
		return err
	}
	ctx = withPCAP(ctx, f.pcap)
	var scenarios []*scenario.Scenario
	for _, path := range fs.Args() {
		s, err := scenario.DecodeFile(path)
		if err != nil {
			return usageError{err}
		}
		scenarios = append(scenarios, s)
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return badUsage("try: --out %s: %v", f.out, err)
	}
	broke := false
	page := newPage("conform try")
	for _, s := range scenarios {
		broke = !f.try(ctx, s, impl, mode, page, stdout) || broke
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if f.html != "" {
		if err := page.write(f.html); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "conform: HTML page in %s/%s\n", f.html, html.FileName)
	}
	if broke {
		return exitError{1}
	}
	return nil
}

// resolve checks the flags: the implementation (its version published) and
// the mode it can run in.
func (f tryFlags) resolve(ctx context.Context, stderr io.Writer) (runner.Impl, trace.Mode, error) {
	mode := trace.Mode(f.mode)
	if mode != trace.ModeSim && mode != trace.ModeLab {
		return nil, "", badUsage("try: --mode %q: want lab or sim", f.mode)
	}
	var impl runner.Impl = runner.Reference
	if f.impl != "reference" {
		rel, err := driver.ParseRelease(f.impl)
		if err != nil {
			return nil, "", usageError{err}
		}
		rel = withPolicies([]driver.Release{rel}, f.policies, f.can)[0]
		if err := checkPublished(ctx, []driver.Release{rel}, stderr); err != nil {
			return nil, "", err
		}
		if err := buildBalancers(ctx, []driver.Release{rel}, stderr); err != nil {
			return nil, "", err
		}
		impl = runner.Driver{Impl: rel}
	}
	if mode == trace.ModeLab {
		if err := netlab.Available().Err(); err != nil {
			return nil, "", fmt.Errorf("try: the lab cannot run here: %w (run `conform lab check`, or --mode sim)", err)
		}
	}
	return impl, mode, nil
}

// try runs s against impl, writes its trace, judges it by the requirement
// monitors that apply, and compares it with the reference's run of s; it
// adds the runs to page and reports whether the run finished.
func (f tryFlags) try(ctx context.Context, s *scenario.Scenario, impl runner.Impl, mode trace.Mode, page *pageBuilder, w io.Writer) bool {
	tr, err := runner.Run(ctx, s, impl, mode, runner.Options{Seed: f.seed, Origin: trace.OriginScenario})
	path := f.write(s, impl, mode, tr, w)
	if err != nil {
		fmt.Fprintf(w, "%s (%s, %s): %v\n", s.Name, impl, mode, err)
		return false
	}
	fmt.Fprintf(w, "%s (%s, %s): %d events → %s\n", s.Name, impl, mode, len(tr.Events), path)
	results := monitor.JudgeAll(s.Name, tr)
	printMonitors(w, results)
	if impl == runner.Reference {
		page.run(impl.String(), s.Name, nil, tr, results)
		return true
	}
	ref, err := runner.Run(ctx, s, runner.Reference, mode, runner.Options{Seed: f.seed, Origin: trace.OriginScenario})
	f.write(s, runner.Reference, mode, ref, w)
	if err != nil {
		fmt.Fprintf(w, "  the reference's run of it broke: %v\n", err)
		page.run(impl.String(), s.Name, nil, tr, results)
		return true
	}
	res := compare.Traces(withoutInitialIdle(ref), withoutInitialIdle(tr), outsideView(tr))
	fmt.Fprintf(w, "  against the reference (expected) on what both show from outside:\n%s\n", indentLines(res.String()))
	page.row(agreesRow, agreesText)
	page.run(impl.String(), s.Name, ref, tr, append(results, comparison(agreesRow, s.Name, mode, res)))
	return true
}

// printMonitors prints the monitors' verdicts on a run that apply to it,
// with the evidence of any short of a pass.
func printMonitors(w io.Writer, results []verdict.Result) {
	for _, r := range results {
		if r.Verdict == verdict.NotApplicable {
			continue
		}
		fmt.Fprintf(w, "  %-34s %-26s %s\n", r.Requirement, "monitor "+r.Check, r.Label())
		if r.Verdict != verdict.Pass && r.Evidence != "" {
			fmt.Fprintf(w, "      %s\n", strings.ReplaceAll(strings.TrimRight(r.Evidence, "\n"), "\n", "\n      "))
		}
	}
}

// withoutInitialIdle is tr without the IDLE a channel reports as its
// state when created (a driver reports it; the reference's trace starts at
// its first change): it is no behaviour of the run.
func withoutInitialIdle(tr *trace.Trace) *trace.Trace {
	for i, e := range tr.Events {
		if e.Kind != trace.KindChannelState {
			continue
		}
		if e.State != "IDLE" {
			return tr
		}
		out := *tr
		out.Events = append(append([]trace.Event(nil), tr.Events[:i]...), tr.Events[i+1:]...)
		return &out
	}
	return tr
}

// outsideView compares what any implementation's trace shows from outside:
// connection attempts and their fate, the channel's states and the RPCs'
// results, within the lab's tolerance.
func outsideView(*trace.Trace) compare.Options {
	return compare.Options{
		Select:    []trace.Pred{trace.OfKind(trace.KindSYN, trace.KindSYNACK, trace.KindRST, trace.KindChannelState, trace.KindRPCResult)},
		Ignore:    []string{"peer", "port"},
		Tolerance: compare.LabTolerance,
	}
}

// write writes tr into the out directory as <scenario>.<impl>.<mode>.jsonl
// and returns the path ("" when there is no trace).
func (f tryFlags) write(s *scenario.Scenario, impl runner.Impl, mode trace.Mode, tr *trace.Trace, w io.Writer) string {
	if tr == nil {
		return ""
	}
	name := fmt.Sprintf("%s.%s.%s.jsonl", s.Name, strings.NewReplacer("@", "-", "/", "-", " ", "-").Replace(impl.String()), mode)
	path := filepath.Join(f.out, name)
	if err := trace.WriteFile(path, tr); err != nil {
		fmt.Fprintf(w, "  writing %s: %v\n", path, err)
	}
	return path
}

func indentLines(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
