package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/driver"
	"github.com/conformlab/conform/harness/report"
	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/netlab"
	"github.com/conformlab/conform/suites/spec"
)

const verifyUsage = `Usage:
  conform verify --impl IMPL [--impl IMPL …] [flags]
      Runs every scenario an implementation can express, in the network lab,
      through its driver; checks each requirement and compares each trace with
      the reference's golden trace; prints a matrix, requirement ×
      implementation → pass / fail / not-applicable / error, with the evidence
      for every fail. Needs root (the lab). Exit status 0 only when every
      verdict is pass or not-applicable (see --fail-on).

  IMPL is one of:
      grpc-go@v1.85.0    grpc-go at that module version (the driver is built
                         once per version, into the cache; the first build
                         takes about a minute)
      grpc-go@v1.55.0..v1.85.0
                         every release in the range, both ends included: the
                         latest patch of each minor (--every-patch: every
                         release; pre-releases never), one column each, and
                         a "since" view: per requirement, the first release
                         that passes it and where it regressed. The same
                         for grpc-js@1.8.0..1.14.7. Every driver is built or
                         installed before the first scenario runs.
      grpc-js@1.14.7     grpc-js from npm (installed once per version)
      grpcio             C-core through Debian's python3-grpcio (the system
                         package: conform says what to install if it is missing)
      grpc-java          grpc-java with grpc-netty from Debian's libgrpc-java
                         (system packages; the driver is compiled once per
                         installed version, into the cache; grpc-java@1.41.3
                         names that version and refuses any other)
      reference          conform's own policies, through the same driver
                         protocol as a third party
      go:example.com/acme@v1.2.3
      go:./acme          your own Go balancer: a module (at a version, from
                         the module proxy) or a module's directory, whose
                         package at the module root registers LB policies in
                         its init. The Go driver is built with it linked in,
                         on the grpc-go the module requires, once per version
                         (a directory: per content); --policy maps the
                         scenarios' policies onto yours. A version that does
                         not exist or a module that does not build stops the
                         run before any scenario. Judged in the lab, then in
                         the simulator too, a column "(sim)" of its own,
                         through a program generated with it linked in, on
                         conform's grpc-go (docs/own-balancer.md)

Flags:
`

type verifyFlags struct {
	runFlags
	scaleFlags
	impls    []string
	policies []string // --policy, as given
	can      []string // --can, as given
	failOn   string
}

type implList []string

func (l *implList) String() string     { return strings.Join(*l, ",") }
func (l *implList) Set(s string) error { *l = append(*l, s); return nil }

func parseVerifyFlags(args []string, stderr io.Writer) (*verifyFlags, error) {
	f := &verifyFlags{}
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var((*implList)(&f.impls), "impl", "an implementation to verify (repeat for a matrix of several)")
	fs.Var((*implList)(&f.policies), "policy", policyUsage)
	fs.Var((*implList)(&f.can), "can", canUsage)
	fs.StringVar(&f.suite, "suite", "", "comma-separated suites (a56, a61, a62, a75, l9); default all")
	fs.StringVar(&f.labelFilter, "label-filter", "", labelFilterUsage)
	fs.StringVar(&f.junit, "junit", "", "also write a JUnit XML report to this file")
	fs.StringVar(&f.html, "html", "", "also write a self-contained HTML report (matrix and timelines) into this directory")
	fs.StringVar(&f.pcap, "pcap", "", pcapUsage)
	fs.BoolVar(&f.asJSON, "json", false, "print the results as JSON instead of the matrix")
	fs.IntVar(&f.parallel, "p", 2, "how many scenarios run at once (each in a lab of its own)")
	fs.StringVar(&f.traces, "traces", "", "the golden traces directory; default: traces/ of the enclosing checkout")
	fs.StringVar(&f.failOn, "fail-on", report.FailOnFail, "which verdicts make the exit status 1: fail (fail or error), error (only\nerrors: a driver or the harness broke; for CI jobs that report on third parties), never")
	f.scaleFlags.register(fs)
	fs.Usage = func() { fmt.Fprint(stderr, verifyUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return nil, exitError{2}
	}
	switch f.failOn {
	case report.FailOnFail, report.FailOnError, report.FailOnNever:
	default:
		return nil, badUsage("verify: --fail-on %q: want fail, error or never", f.failOn)
	}
	if len(f.impls) == 0 {
		fs.Usage()
		return nil, badUsage("verify: say which implementation: --impl grpc-go@v1.85.0 (see above)")
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return nil, badUsage("verify: unexpected argument %q", fs.Arg(0))
	}
	if err := validatePolicies("verify", f.policies, f.can, f.impls); err != nil {
		return nil, err
	}
	f.mode = "lab"
	if err := f.scaleFlags.validateScale("verify"); err != nil {
		return nil, err
	}
	return f, f.validate("verify")
}

// implRun is everything verify found for one implementation.
type implRun struct {
	impl     driver.Release
	outcomes []spec.Outcome
	golden   map[string]error // spec name → how the trace differs from the golden one (nil: agrees)
	wall     time.Duration
	err      error // the driver could not be installed
	sim      bool  // a user's balancer in the simulator (judgeInSim), not in the lab
}

// name is the run's column in the reports.
func (r *implRun) name() string {
	if r.sim {
		return r.impl.String() + simSuffix
	}
	return r.impl.String()
}

func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseVerifyFlags(args, stderr)
	if err != nil {
		return err
	}
	impls, ranged, err := expandImpls(ctx, f.impls, f.everyPatch, driver.Releases, stderr)
	if err != nil {
		return err
	}
	impls = withPolicies(impls, f.policies, f.can)
	var unranged []driver.Release
	for _, impl := range impls {
		if !ranged[impl] { // a range's releases come from the list itself
			unranged = append(unranged, impl)
		}
	}
	if err := checkPublished(ctx, unranged, stderr); err != nil {
		return err
	}
	if err := buildBalancers(ctx, impls, stderr); err != nil {
		return err
	}
	shard, _ := parseShard(f.shard) // validated
	if err := netlab.Available().Err(); err != nil {
		return fmt.Errorf("verify runs implementations in the lab: %w (run `conform lab check`)", err)
	}
	jobs, err := f.jobs([]trace.Mode{spec.Lab})
	if err != nil {
		return err
	}
	f.sayLongLeftOut(stderr)
	simOnly, err := f.simOnly()
	if err != nil {
		return err
	}
	dir, err := f.tracesDir()
	if err != nil {
		return err
	}
	parts := plan(impls, jobs, simOnly, shard)
	printPlan(stderr, parts, shard)
	if err := prepareDrivers(ctx, parts, ranged, stderr); err != nil {
		return err
	}
	runs, err := runPlan(ctx, parts, func(ctx context.Context, p part) *implRun {
		return verifyImpl(withPCAP(ctx, f.pcap), p.impl, p.jobs, f.parallel, dir, stderr)
	})
	if err != nil {
		return err
	}
	if runs, err = withSimRuns(ctx, runs, f, shard, stderr); err != nil {
		return err
	}
	goldens := ""
	if f.html != "" {
		goldens = dir // the HTML timelines show each run's golden trace
	}
	m := matrixOf(runs, goldens)
	m.Parallel = f.parallel
	if f.results != "" {
		if err := writeResults(f.results, m, parts, shard, selection(impls, f)); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "conform: results (shard %s) in %s\n", shard, f.results)
	}
	return writeMatrixReports(m, f.reportFlags(), stdout, stderr)
}

// verifyImpl installs impl's driver and runs every job through it.
func verifyImpl(ctx context.Context, impl driver.Release, jobs []spec.Job, parallel int, tracesDir string, stderr io.Writer) *implRun {
	r := &implRun{impl: impl, golden: map[string]error{}}
	start := time.Now()
	fmt.Fprintf(stderr, "conform: %s: preparing the driver (the first time, this builds or installs it)\n", impl)
	cache, err := driver.CacheDir()
	if err == nil {
		logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
		_, err = driver.Install(ctx, impl, driver.InstallEnv{Cache: cache, Source: driver.FindSource(), Logger: logger})
	}
	if err != nil {
		r.err = err
		for _, j := range jobs {
			r.outcomes = append(r.outcomes, spec.Outcome{Spec: j.Spec, Mode: j.Mode,
				Results: verdict.Broken(j.Spec.Subject(j.Mode), j.Spec.Requirements(), verdict.Error, "installing the driver: "+err.Error())})
		}
		r.wall = time.Since(start)
		return r
	}
	fmt.Fprintf(stderr, "conform: %s: %d scenarios\n", impl, len(jobs))
	r.outcomes = runJobs(ctx, jobs, runner.Driver{Impl: impl, Cache: cache}, parallel, "", stderr)
	for _, o := range r.outcomes {
		if o.Trace != nil && o.Spec.Agreement != nil {
			r.golden[o.Spec.Name()] = compareGolden(tracesDir, o)
		}
	}
	r.wall = time.Since(start)
	return r
}

// compareGolden compares a third party's lab trace with the reference's
// golden lab trace, on what the spec says any two runs of it must share
// (its Agreement: the events every implementation's trace has, such as the
// SYNs, within the spec's tolerances).
func compareGolden(dir string, o spec.Outcome) error {
	golden, err := trace.ReadFile(spec.GoldenPath(dir, o.Spec, spec.Lab))
	if err != nil {
		return err
	}
	opts := *o.Spec.Agreement
	// The xDS node id is conform's choice for each client, not behaviour.
	opts.Ignore = append(slices.Clone(opts.Ignore), "node")
	if len(trace.Select(o.Trace.Events, trace.FromSource(trace.SourcePolicy))) == 0 {
		// A third party exposes no policy events: compare on what it has.
		opts.Select = append(slices.Clone(opts.Select), func(e trace.Event) bool { return e.Source != trace.SourcePolicy })
	}
	if res := compare.Traces(golden, o.Trace, opts); !res.Equal() {
		return fmt.Errorf("%s", res.String())
	}
	return nil
}

// matrixOf is the implementations' runs as the verify reports take them;
// goldens as for reportRun.
func matrixOf(runs []*implRun, goldens string) report.Matrix {
	var m report.Matrix
	for _, r := range runs {
		rs := reportRuns(r.outcomes, goldens)
		for i := range rs {
			rs[i].Impl = r.name()
		}
		m.Impls = append(m.Impls, report.Impl{Name: r.name(), Runs: rs, Divergence: r.golden, Wall: r.wall})
	}
	return m
}

// simOnlyReason is why a third party has no verdict on a scenario that runs
// in the simulator only.
const simOnlyReason = "the scenario runs in the simulator only (its timers are too long for the lab, or it needs what only the simulator models), and a third party is judged in the lab"

// simOnly are the outcomes of the selected specs that run in the simulator
// only: not-applicable for any implementation verify runs, with the reason,
// so that no requirement they check is silently missing from the matrix.
func (f *runFlags) simOnly() ([]spec.Outcome, error) {
	sims, err := f.jobs([]trace.Mode{spec.Sim})
	if err != nil {
		return nil, nil // no spec of the selection runs in the simulator
	}
	var out []spec.Outcome
	for _, j := range sims {
		if !j.Spec.RunsIn(spec.Lab) {
			out = append(out, spec.Outcome{Spec: j.Spec, Mode: spec.Lab,
				Results: verdict.Broken(j.Spec.Subject(spec.Lab), j.Spec.Requirements(), verdict.NotApplicable, simOnlyReason)})
		}
	}
	return out, nil
}

// checkPublished checks, before any work, that every release's version
// exists where its driver is fetched from: a version that does not is a
// usage error; a check that cannot be made (no network) is said and the
// run goes on (an installed driver needs no network).
func checkPublished(ctx context.Context, impls []driver.Release, stderr io.Writer) error {
	for _, impl := range impls {
		err := driver.Published(ctx, impl)
		switch {
		case driver.IsBadRelease(err):
			return usageError{err}
		case err != nil && ctx.Err() == nil:
			fmt.Fprintf(stderr, "conform: %v; going on\n", err)
		}
	}
	return ctx.Err()
}
