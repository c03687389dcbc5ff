package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/driver"
	"github.com/conformlab/conform/harness/report/html"
	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/netlab"
	"github.com/conformlab/conform/suites/spec"
)

const verifyUsage = `Usage:
  conform verify --impl SPEC [--impl SPEC …] [flags]
      Runs every scenario an implementation can express, in the network lab,
      through its driver; checks each requirement and compares each trace with
      the reference's golden trace; prints a matrix, requirement ×
      implementation → pass / fail / not-applicable / error, with the evidence
      for every fail. Needs root (the lab). Exit status 0 only when every
      verdict is pass or not-applicable (see --fail-on).

  SPEC is one of:
      grpc-go@v1.85.0    grpc-go at that module version (the driver is built
                         once per version, into the cache; the first build
                         takes about a minute)
      grpc-js@1.14.7     grpc-js from npm (installed once per version)
      grpcio             C-core through Debian's python3-grpcio (the system
                         package: conform says what to install if it is missing)
      reference          conform's own policies, through the same driver
                         protocol as a third party

Flags:
`

type verifyFlags struct {
	runFlags
	impls  []string
	html   string
	failOn string
}

type implList []string

func (l *implList) String() string     { return strings.Join(*l, ",") }
func (l *implList) Set(s string) error { *l = append(*l, s); return nil }

func parseVerifyFlags(args []string, stderr io.Writer) (*verifyFlags, error) {
	f := &verifyFlags{}
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var((*implList)(&f.impls), "impl", "an implementation to verify (repeat for a matrix of several)")
	fs.StringVar(&f.suite, "suite", "", "comma-separated suites (a61, a62, a56); default all")
	fs.StringVar(&f.labelFilter, "label-filter", "", "Ginkgo label filter over document, requirement IDs, labels")
	fs.StringVar(&f.junit, "junit", "", "also write a JUnit XML report to this file")
	fs.StringVar(&f.html, "html", "", "also write a self-contained HTML report (matrix and timelines) into this directory")
	fs.BoolVar(&f.asJSON, "json", false, "print the results as JSON instead of the matrix")
	fs.IntVar(&f.parallel, "p", 2, "how many scenarios run at once (each in a lab of its own)")
	fs.StringVar(&f.traces, "traces", "", "the golden traces directory; default: traces/ of the enclosing checkout")
	fs.StringVar(&f.failOn, "fail-on", "fail", "which verdicts make the exit status 1: fail (fail or error), error (only\nerrors: a driver or the harness broke; for CI jobs that report on third parties), never")
	fs.Usage = func() { fmt.Fprint(stderr, verifyUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return nil, exitError{2}
	}
	switch f.failOn {
	case "fail", "error", "never":
	default:
		return nil, fmt.Errorf("verify: --fail-on %q: want fail, error or never", f.failOn)
	}
	if len(f.impls) == 0 {
		fs.Usage()
		return nil, fmt.Errorf("verify: say which implementation: --impl grpc-go@v1.85.0 (see above)")
	}
	f.mode = "lab"
	return f, nil
}

// implRun is everything verify found for one implementation.
type implRun struct {
	impl     driver.Impl
	outcomes []spec.Outcome
	golden   map[string]error // spec name → how the trace differs from the golden one (nil: agrees)
	wall     time.Duration
	err      error // the driver could not be installed
}

func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseVerifyFlags(args, stderr)
	if err != nil {
		return err
	}
	var impls []driver.Impl
	for _, s := range f.impls {
		impl, err := driver.ParseImpl(s)
		if err != nil {
			return err
		}
		impls = append(impls, impl)
	}
	if err := netlab.Available().Err(); err != nil {
		return fmt.Errorf("verify runs implementations in the lab: %w (run `conform lab check`)", err)
	}
	jobs, err := f.jobs([]trace.Mode{spec.Lab})
	if err != nil {
		return err
	}
	dir, err := f.tracesDir()
	if err != nil {
		return err
	}
	var runs []*implRun
	for _, impl := range impls {
		runs = append(runs, verifyImpl(ctx, impl, jobs, f.parallel, dir, stderr))
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	m := newMatrix(runs)
	if f.junit != "" {
		var all []spec.Outcome
		for _, r := range runs {
			all = append(all, r.outcomes...)
		}
		if err := writeJUnit(f.junit, all); err != nil {
			return err
		}
	}
	if f.html != "" {
		if err := html.Write(f.html, m.html(dir)); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "conform: HTML report in %s/%s\n", f.html, html.FileName)
	}
	if f.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(m.json()); err != nil {
			return err
		}
	} else {
		m.print(stdout)
	}
	if !m.ok(f.failOn) {
		return exitError{1}
	}
	return nil
}

// verifyImpl installs impl's driver and runs every job through it.
func verifyImpl(ctx context.Context, impl driver.Impl, jobs []spec.Job, parallel int, tracesDir string, stderr io.Writer) *implRun {
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
	run := func(ctx context.Context, s *scenario.Scenario, _ trace.Mode, seed uint64) (*trace.Trace, error) {
		return driver.RunLab(ctx, s, impl, driver.Options{Seed: seed, Cache: cache})
	}
	fmt.Fprintf(stderr, "conform: %s: %d scenarios\n", impl, len(jobs))
	r.outcomes = spec.RunJobs(ctx, jobs, run, parallel, progress(stderr))
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
	if len(trace.Select(o.Trace.Events, trace.FromSource(trace.SourcePolicy))) == 0 {
		// A third party exposes no policy events: compare on what it has.
		opts.Select = append(slices.Clone(opts.Select), func(e trace.Event) bool { return e.Source != trace.SourcePolicy })
	}
	if res := compare.Traces(golden, o.Trace, opts); !res.Equal() {
		return fmt.Errorf("%s", res.String())
	}
	return nil
}

// matrix is requirement × implementation → verdict.
type matrix struct {
	runs []*implRun
	rows []string
	cell map[string]map[string][]verdict.Result // requirement → impl → results
}

func newMatrix(runs []*implRun) *matrix {
	m := &matrix{runs: runs, cell: map[string]map[string][]verdict.Result{}}
	for _, r := range runs {
		for _, o := range r.outcomes {
			for _, res := range o.Results {
				if m.cell[res.Requirement] == nil {
					m.cell[res.Requirement] = map[string][]verdict.Result{}
					m.rows = append(m.rows, res.Requirement)
				}
				m.cell[res.Requirement][r.impl.String()] = append(m.cell[res.Requirement][r.impl.String()], res)
			}
		}
	}
	sort.Strings(m.rows)
	return m
}

// ok reports whether no verdict is one that failOn ("fail", "error",
// "never") counts against the run.
func (m *matrix) ok(failOn string) bool {
	for _, r := range m.runs {
		for _, o := range r.outcomes {
			for _, res := range o.Results {
				bad := res.Verdict == verdict.Error || (res.Verdict == verdict.Fail && failOn == "fail")
				if bad && failOn != "never" {
					return false
				}
			}
		}
	}
	return true
}

func (m *matrix) print(w io.Writer) {
	const col = 18
	fmt.Fprintf(w, "\n%-36s", "requirement")
	for _, r := range m.runs {
		fmt.Fprintf(w, " %-*s", col, clip(r.impl.String(), col))
	}
	fmt.Fprintln(w)
	for _, id := range m.rows {
		fmt.Fprintf(w, "%-36s", id)
		for _, r := range m.runs {
			v := verdictOf(m.cell[id][r.impl.String()])
			if v == "" {
				v = "-"
			}
			fmt.Fprintf(w, " %-*s", col, v)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	for _, r := range m.runs {
		t := map[verdict.Verdict]int{}
		for _, id := range m.rows {
			if v := verdictOf(m.cell[id][r.impl.String()]); v != "" {
				t[v]++
			}
		}
		fmt.Fprintf(w, "%-20s %d pass, %d fail, %d error, %d not-applicable (%.1fs)\n",
			r.impl, t[verdict.Pass], t[verdict.Fail], t[verdict.Error], t[verdict.NotApplicable], r.wall.Seconds())
	}
	m.printEvidence(w)
}

func (m *matrix) printEvidence(w io.Writer) {
	for _, r := range m.runs {
		for _, o := range r.outcomes {
			var bad []verdict.Result
			for _, res := range o.Results {
				if res.Verdict == verdict.Fail || res.Verdict == verdict.Error {
					bad = append(bad, res)
				}
			}
			if len(bad) > 0 {
				fmt.Fprintf(w, "\n── %s · %s\n%s", r.impl, o.Spec.Name(), verdict.Failed(bad))
			}
			if err := r.golden[o.Spec.Name()]; err != nil && len(bad) > 0 {
				fmt.Fprintf(w, "differs from the reference's golden trace:\n%s\n", indentBlock(err.Error()))
			}
		}
	}
}

func indentBlock(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

type verifyJSON struct {
	Impls []verifyImplJSON `json:"impls"`
	Pass  bool             `json:"pass"`
}

type verifyImplJSON struct {
	Impl        string            `json:"impl"`
	WallSeconds float64           `json:"wall_seconds"`
	Results     []verdict.Result  `json:"results"`
	Golden      map[string]string `json:"golden_divergence,omitempty"`
}

func (m *matrix) json() verifyJSON {
	out := verifyJSON{Pass: m.ok("fail")}
	for _, r := range m.runs {
		ij := verifyImplJSON{Impl: r.impl.String(), WallSeconds: r.wall.Seconds(), Results: []verdict.Result{}}
		for _, o := range r.outcomes {
			ij.Results = append(ij.Results, o.Results...)
			if err := r.golden[o.Spec.Name()]; err != nil {
				if ij.Golden == nil {
					ij.Golden = map[string]string{}
				}
				ij.Golden[o.Spec.Name()] = err.Error()
			}
		}
		out.Impls = append(out.Impls, ij)
	}
	return out
}

// html turns the matrix into the HTML report's data.
func (m *matrix) html(tracesDir string) html.Report {
	rep := html.Report{Title: "conform verify", Generated: time.Now()}
	seen := map[string]bool{}
	for _, id := range m.rows {
		if req, ok := requirement.ByID(id); ok && !seen[id] {
			seen[id] = true
			rep.Requirements = append(rep.Requirements, html.FromCatalogue(req))
		}
	}
	for _, r := range m.runs {
		rep.Impls = append(rep.Impls, r.impl.String())
		for _, o := range r.outcomes {
			run := html.Run{Impl: r.impl.String(), Spec: o.Spec.Name(), Mode: o.Mode, Observed: o.Trace}
			if g, err := trace.ReadFile(spec.GoldenPath(tracesDir, o.Spec, o.Mode)); err == nil {
				run.Golden = g
			}
			for _, res := range o.Results {
				rep.Results = append(rep.Results, html.Result{Impl: r.impl.String(), Spec: res.Spec,
					Requirement: res.Requirement, Mode: res.Mode, Verdict: res.Verdict, Evidence: res.Evidence})
				if res.Verdict == verdict.Error {
					run.Err = res.Evidence
				}
			}
			rep.Runs = append(rep.Runs, run)
		}
	}
	return rep
}
