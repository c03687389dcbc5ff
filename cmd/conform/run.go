package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/conformlab/conform/harness/report"
	"github.com/conformlab/conform/harness/report/html"
	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/netlab"
	"github.com/conformlab/conform/suites/spec"
)

const runUsage = `Usage:
  conform run [flags]
      Runs every suite against the reference implementation — in simulation
      and, as root, in the network lab — checks every requirement, compares
      each trace with its golden trace (traces/<doc>/<scenario>.<mode>.jsonl),
      and ends with a table: requirement → verdict per mode, then totals.
      Exit status 0 only when every verdict is pass.

Flags:
`

const recordUsage = `Usage:
  conform record [flags]
      Runs the reference on the specs, as conform run does, and writes their
      traces as the golden traces, traces/<doc>/<scenario>.<mode>.jsonl
      (simulation always; the lab too when run as root and --mode allows). A
      lab run the machine's stalls left unjudgeable is run again, alone.
      Review the diff like code: a changed golden trace is a changed
      behaviour. Then regenerate the known-bad traces:
        go run ./suites/internal/badtrace/cmd/badtraces

Flags:
`

// labelFilterUsage is the help of --label-filter (run, record, verify).
const labelFilterUsage = "Ginkgo label filter over document, requirement IDs, Sim/Lab, Slow, Long…\n" +
	"(e.g. 'A61-HE-DELAY-DEFAULT || Slow', '!Lab'). A lab run labelled Long lasts half an\n" +
	"hour or more (A62's default idle timeout) and runs only when the filter names Long:\n" +
	"'A62-IDLE-TIMEOUT-DEFAULT && Long'"

// runFlags are the flags of run and record.
type runFlags struct {
	suite, labelFilter, mode, junit, traces, html, pcap string
	asJSON                                              bool
	parallel                                            int
	stale                                               bool     // record: only specs whose golden is missing or stale
	longLeftOut                                         []string // set by jobs: lab runs labelled Long the filter did not name
}

func parseRunFlags(name string, args []string, stderr io.Writer) (*runFlags, error) {
	f := &runFlags{}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.suite, "suite", "", "comma-separated suites to run (a56, a61, a62, a75, l9); default all")
	fs.StringVar(&f.labelFilter, "label-filter", "", labelFilterUsage)
	fs.StringVar(&f.mode, "mode", "", "sim, lab or both; default both as root, sim otherwise")
	usage := recordUsage
	if name == "run" {
		usage = runUsage
		fs.StringVar(&f.junit, "junit", "", "also write a JUnit XML report to this file")
		fs.StringVar(&f.html, "html", "", "also write a self-contained HTML report (matrix and timelines) into this directory")
		fs.BoolVar(&f.asJSON, "json", false, "print the results as JSON instead of the table")
	} else {
		fs.BoolVar(&f.stale, "stale", false, "record only the specs whose golden trace is missing, or was recorded\nfrom another version of its scenario than the spec's now")
	}
	fs.StringVar(&f.pcap, "pcap", "", pcapUsage)
	fs.IntVar(&f.parallel, "p", 2, "how many scenarios run at once (each lab scenario builds a lab of its own)")
	fs.StringVar(&f.traces, "traces", "", "the golden traces directory; default: traces/ of the enclosing checkout")
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return nil, exitError{2}
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return nil, badUsage("%s: unexpected argument %q", name, fs.Arg(0))
	}
	return f, f.validate(name)
}

// validate checks the flags before any work starts: a usage error names
// the flag, what was wrong and what would be right.
func (f *runFlags) validate(name string) error {
	if f.parallel < 1 {
		return badUsage("%s: -p %d: want at least 1 scenario at a time", name, f.parallel)
	}
	if _, err := selectSuites(f.suite); err != nil {
		return badUsage("%s: --suite: %v", name, err)
	}
	if f.labelFilter != "" {
		if _, err := types.ParseLabelFilter(f.labelFilter); err != nil {
			return badUsage("%s: --label-filter %q: %s (want labels joined by &&, ||, ! and parentheses)", name, f.labelFilter, plainLine(err))
		}
	}
	if f.junit != "" {
		if err := writable(f.junit); err != nil {
			return badUsage("%s: --junit: %v", name, err)
		}
	}
	if err := validHTMLDir(name, f.html); err != nil {
		return err
	}
	if err := validPCAPDir(name, f.pcap); err != nil {
		return err
	}
	if f.traces != "" {
		if fi, err := os.Stat(f.traces); err != nil || !fi.IsDir() {
			return badUsage("%s: --traces %s: not a directory (want the golden traces directory, traces/ of a checkout)", name, f.traces)
		}
	}
	return nil
}

// pcapUsage is the help of --pcap.
const pcapUsage = "also write each lab run's packets (every frame of the client's interface) into `DIR`\nas <scenario>.<impl>.lab.pcapng, for Wireshark or conform replay"

// validPCAPDir checks --pcap's directory before any work: created if
// needed, and writable.
// validHTMLDir checks, before any work, that an --html directory can be
// made and its page written ("" is no page).
func validHTMLDir(name, dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return badUsage("%s: --html %s: %v (want a directory conform can create or write)", name, dir, err)
	}
	if err := writable(filepath.Join(dir, html.FileName)); err != nil {
		return badUsage("%s: --html: %v", name, err)
	}
	return nil
}

func validPCAPDir(name, dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return badUsage("%s: --pcap %s: %v (want a directory conform can create or write)", name, dir, err)
	}
	if err := writable(filepath.Join(dir, "x.pcapng")); err != nil {
		return badUsage("%s: --pcap: %v", name, err)
	}
	return nil
}

// withPCAP is ctx for the runs, writing their packets into dir if set.
func withPCAP(ctx context.Context, dir string) context.Context {
	if dir == "" {
		return ctx
	}
	return runner.WithPCAP(ctx, dir)
}

// writable checks that a report can be written to path: its directory
// exists and takes a new file. Nothing is left behind.
func writable(path string) error {
	dir := filepath.Dir(path)
	probe, err := os.CreateTemp(dir, ".conform-probe-*")
	if err != nil {
		return fmt.Errorf("%s cannot be written (%v): want a file in an existing, writable directory", path, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// modes resolves --mode: both as root, simulation otherwise (said on stderr).
func (f *runFlags) modes(stderr io.Writer) ([]trace.Mode, error) {
	labOK := netlab.Available().Err() == nil
	switch f.mode {
	case "sim":
		return []trace.Mode{spec.Sim}, nil
	case "lab", "both":
		if !labOK {
			return nil, fmt.Errorf("--mode %s: %v (run `conform lab check`)", f.mode, netlab.Available().Err())
		}
		if f.mode == "lab" {
			return []trace.Mode{spec.Lab}, nil
		}
		return []trace.Mode{spec.Sim, spec.Lab}, nil
	case "":
		if labOK {
			return []trace.Mode{spec.Sim, spec.Lab}, nil
		}
		fmt.Fprintln(stderr, "conform: the lab cannot run here (not root?); running in simulation only. `conform lab check` says why.")
		return []trace.Mode{spec.Sim}, nil
	}
	return nil, badUsage("--mode: %q is not sim, lab or both", f.mode)
}

// jobs selects the specs to run, as the flags say.
func (f *runFlags) jobs(modes []trace.Mode) ([]spec.Job, error) {
	sel, err := selectSuites(f.suite)
	if err != nil {
		return nil, err
	}
	var filter types.LabelFilter
	if f.labelFilter != "" {
		if filter, err = types.ParseLabelFilter(f.labelFilter); err != nil {
			return nil, fmt.Errorf("--label-filter: %w", err)
		}
	}
	var jobs []spec.Job
	var long []string
	for _, su := range sel {
		for _, sp := range su.specs() {
			if err := sp.Validate(); err != nil {
				return nil, err
			}
			for _, m := range modes {
				switch {
				case !sp.RunsIn(m):
				case spec.Selected(sp, m, filter, f.labelFilter):
					jobs = append(jobs, spec.Job{Spec: sp, Mode: m})
				case m == spec.Lab && sp.Long() && (filter == nil || filter(spec.Labels(sp, m))):
					long = append(long, sp.Name())
				}
			}
		}
	}
	f.longLeftOut = long
	if len(jobs) == 0 {
		return nil, usageError{fmt.Errorf("no spec matches (suite %q, label filter %q, modes %v)%s: see `conform requirements` for the IDs and labels", f.suite, f.labelFilter, modes, f.longNote())}
	}
	return jobs, nil
}

// longNote says which lab runs the label filter matched but left out, being
// labelled Long without the filter naming it ("" when none).
func (f *runFlags) longNote() string {
	if len(f.longLeftOut) == 0 {
		return ""
	}
	return fmt.Sprintf("; left out, labelled %s (half an hour or more) and not named by the label filter: the lab run of %s (add '&& %s' to the filter to run it)",
		spec.LabelLong, strings.Join(f.longLeftOut, ", "), spec.LabelLong)
}

// sayLongLeftOut prints longNote on w, when there is one.
func (f *runFlags) sayLongLeftOut(w io.Writer) {
	if note := f.longNote(); note != "" {
		fmt.Fprintf(w, "conform: %s\n", strings.TrimPrefix(note, "; "))
	}
}

func (f *runFlags) tracesDir() (string, error) {
	if f.traces != "" {
		return f.traces, nil
	}
	dir, err := spec.TracesDir()
	if err != nil {
		return "", usageError{err}
	}
	return dir, nil
}

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseRunFlags("run", args, stderr)
	if err != nil {
		return err
	}
	modes, err := f.modes(stderr)
	if err != nil {
		return err
	}
	jobs, err := f.jobs(modes)
	if err != nil {
		return err
	}
	f.sayLongLeftOut(stderr)
	dir, err := f.tracesDir()
	if err != nil {
		return err
	}
	start := time.Now()
	outcomes := runJobs(withPCAP(ctx, f.pcap), jobs, runner.Reference, f.parallel, dir, stderr)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	disagree, unjudged := agreements(outcomes)
	rep := report.Table{Runs: reportRuns(outcomes, ""), Disagree: disagree, Unjudged: unjudged, Wall: time.Since(start), Parallel: f.parallel}
	if f.html != "" {
		if err := writeRunHTML(f.html, outcomes, dir, stderr); err != nil {
			return err
		}
	}
	if f.junit != "" {
		if err := report.WriteJUnit(f.junit, rep.Runs); err != nil {
			return err
		}
	}
	if f.asJSON {
		if err := rep.JSON(stdout); err != nil {
			return err
		}
	} else {
		rep.Text(stdout)
	}
	if !rep.Pass() {
		return exitError{1}
	}
	return nil
}

// runJobs runs jobs against impl with progress on stderr: a line per
// finished scenario, and on a terminal a status line of what runs now.
// With tracesDir, each outcome gets its golden-trace verdict before its
// line is printed, so that the line shows the final verdicts.
func runJobs(ctx context.Context, jobs []spec.Job, impl runner.Impl, parallel int, tracesDir string, stderr io.Writer) []spec.Outcome {
	live := newLive(stderr)
	live.Run()
	defer live.Close()
	started := func(j spec.Job) { live.Started(string(j.Spec.Doc), j.Spec.Name(), string(j.Mode)) }
	done := func(o *spec.Outcome, took time.Duration, n, total int) {
		if tracesDir != "" {
			o.CheckGoldenOutcome(tracesDir)
		}
		live.Finished(reportRun(*o, ""), took, n, total)
	}
	return spec.RunJobsWatched(ctx, jobs, impl, parallel, started, done)
}

// newLive is progress on w: a status line on a terminal (not for
// TERM=dumb), verdicts in colour unless NO_COLOR is set (https://no-color.org).
func newLive(w io.Writer) *report.Live {
	tty, width := terminal(w)
	return report.NewLive(w, report.DisplayFor(tty, os.Getenv("TERM"), os.Getenv("NO_COLOR") != "", width))
}

// reportRuns is outcomes as the reports take them; see reportRun.
func reportRuns(outcomes []spec.Outcome, goldens string) []report.Run {
	out := make([]report.Run, 0, len(outcomes))
	for _, o := range outcomes {
		out = append(out, reportRun(o, goldens))
	}
	return out
}

// reportRun is o as the reports take it; when goldens names the traces
// directory, with o's golden trace, if it has one (for the HTML timelines).
func reportRun(o spec.Outcome, goldens string) report.Run {
	r := report.Run{Subject: o.Spec.Subject(o.Mode), Took: o.Took, Trace: o.Trace, Results: o.Results}
	if goldens != "" {
		if g, err := trace.ReadFile(spec.GoldenPath(goldens, o.Spec, o.Mode)); err == nil {
			r.Golden = g
		}
	}
	return r
}

// agreements checks simulator/lab agreement for specs that ran in both
// modes; it returns the disagreements by spec name.
func agreements(outcomes []spec.Outcome) (disagree, unjudged map[string]error) {
	bySpec := map[string]map[trace.Mode]*trace.Trace{}
	specs := map[string]spec.Spec{}
	for _, o := range outcomes {
		if o.Trace == nil {
			continue
		}
		if bySpec[o.Spec.Name()] == nil {
			bySpec[o.Spec.Name()] = map[trace.Mode]*trace.Trace{}
		}
		bySpec[o.Spec.Name()][o.Mode] = o.Trace
		specs[o.Spec.Name()] = o.Spec
	}
	disagree, unjudged = map[string]error{}, map[string]error{}
	for name, tr := range bySpec {
		if tr[spec.Sim] != nil && tr[spec.Lab] != nil {
			err := spec.CheckAgreement(specs[name], tr[spec.Sim], tr[spec.Lab])
			switch {
			case errors.Is(err, spec.ErrUnsteadyAgreement):
				unjudged[name] = err
			case err != nil:
				disagree[name] = err
			}
		}
	}
	return disagree, unjudged
}

func runRecord(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseRunFlags("record", args, stderr)
	if err != nil {
		return err
	}
	modes, err := f.modes(stderr)
	if err != nil {
		return err
	}
	jobs, err := f.jobs(modes)
	if err != nil {
		return err
	}
	f.sayLongLeftOut(stderr)
	dir, err := f.tracesDir()
	if err != nil {
		return err
	}
	if f.stale {
		if jobs = staleJobs(dir, jobs); len(jobs) == 0 {
			fmt.Fprintln(stderr, "conform: every golden trace of the selection was recorded from its spec's scenario as it is now: nothing to record")
			return nil
		}
	}
	outcomes := runJobs(withPCAP(ctx, f.pcap), jobs, runner.Reference, f.parallel, "", stderr)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var failed []string
	for _, o := range outcomes {
		// A golden trace the lab could not judge for a stall of the
		// machine is no golden trace: the run is made again, alone.
		for run := 2; run <= spec.UnsteadyRuns && spec.OnlyUnsteady(o.Results) && ctx.Err() == nil; run++ {
			fmt.Fprintf(stderr, "%s [%s]: the machine stalled near a timer judged; run %d of at most %d\n", o.Spec.Name(), o.Mode, run, spec.UnsteadyRuns)
			o = spec.Run(ctx, o.Spec, o.Mode, runner.Reference)
		}
		if o.Trace == nil || spec.OnlyUnsteady(o.Results) || slices.ContainsFunc(o.Results, func(r verdict.Result) bool { return r.Verdict == verdict.Error }) {
			failed = append(failed, fmt.Sprintf("%s [%s]: %s", o.Spec.Name(), o.Mode, verdict.Failed(o.Results)))
			continue
		}
		if err := spec.WriteGolden(dir, o.Spec, o.Mode, o.Trace); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s\n", spec.GoldenPath(dir, o.Spec, o.Mode))
	}
	if len(failed) > 0 {
		fmt.Fprintf(stderr, "not recorded (the run broke, or the machine stalled near its timers in %d runs):\n%s", spec.UnsteadyRuns, strings.Join(failed, "\n"))
		return exitError{1}
	}
	return nil
}

// ansi matches terminal colour codes.
var ansi = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// plainLine is err's message without colour codes, on one line.
func plainLine(err error) string {
	return strings.Join(strings.Fields(ansi.ReplaceAllString(err.Error(), "")), " ")
}

// writeRunHTML writes the HTML report of the reference's runs: one column
// per mode, each run with its golden trace.
func writeRunHTML(dir string, outcomes []spec.Outcome, tracesDir string, stderr io.Writer) error {
	byMode := map[trace.Mode][]spec.Outcome{}
	for _, o := range outcomes {
		byMode[o.Mode] = append(byMode[o.Mode], o)
	}
	var m report.Matrix
	for _, mode := range []trace.Mode{spec.Sim, spec.Lab} {
		if len(byMode[mode]) > 0 {
			name := "reference · " + string(mode)
			rs := reportRuns(byMode[mode], tracesDir)
			for i := range rs {
				rs[i].Impl = name
			}
			m.Impls = append(m.Impls, report.Impl{Name: name, Runs: rs})
		}
	}
	rep := m.HTML(time.Now())
	rep.Title = "conform run"
	if err := html.Write(dir, rep); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "conform: HTML report in %s/%s\n", dir, html.FileName)
	return nil
}

// staleJobs are the jobs whose golden trace in dir is missing or unreadable,
// or whose header holds another scenario than the spec's now (a scenario
// edited since it was recorded).
func staleJobs(dir string, jobs []spec.Job) []spec.Job {
	var out []spec.Job
	for _, j := range jobs {
		golden, err := trace.ReadFile(spec.GoldenPath(dir, j.Spec, j.Mode))
		if err != nil || !sameScenario(golden.Header.Scenario, j.Spec.Scenario) {
			out = append(out, j)
		}
	}
	return out
}

// sameScenario reports whether a and b are the same scenario, as a trace's
// header writes it.
func sameScenario(a, b *scenario.Scenario) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
