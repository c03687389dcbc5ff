package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/conformlab/conform/harness/compare"
	"github.com/conformlab/conform/harness/driver"
	"github.com/conformlab/conform/harness/replay"
	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/netlab"
	"github.com/conformlab/conform/suites/spec"
)

const bisectUsage = `Usage:
  conform bisect --impl NAME@FIRST..LAST (--spec SUITE/SPEC [--requirement ID] | --scenario FILE | --field FILE) [flags]
      Finds the first release whose verdict differs from the range's first
      release: a binary search over the releases of the range (the latest
      patch of each minor; --every-patch: every release), one lab run per
      release tried. It prints each release tried with its verdict and
      evidence, then the pair where the verdict changes ("last good v… /
      first bad v…", or "last bad / first good" for a behaviour that
      appears).

      The verdict at a release is the spec's worst verdict (error, fail,
      inconclusive, pass, not-applicable, in that order), or with
      --requirement the worst of that requirement's checks. With
      --scenario, it is pass when the release's trace agrees with the
      reference's on its connection attempts, their fate and the RPCs'
      results (within the lab's tolerance) and fail with the first
      divergence otherwise. With --field (a packet capture
      or trace of a client in the field, as conform replay takes it), the
      environment is inferred as replay does and a release is bad ("fail")
      when its replay reproduces the field's connection attempts, good
      ("pass") when it departs from them: where a field bug was fixed.

      A run the machine's stalls left inconclusive (a timer judged with
      the machine stalled near it) is made again, up to 3 runs in all. A
      release whose verdict is still inconclusive, or an error (the driver
      did not build), says nothing: bisect says so and tries its
      neighbours instead. Bisect assumes the verdict changes once in the
      range (monotonic); when both ends give the same verdict it warns and
      stops, since a change there would have to change back.

  Example:
      sudo conform bisect --impl grpc-go@v1.55.0..v1.85.0 --spec a61/he-dropped-ipv6 --requirement A61-HE-DELAY-DEFAULT

Flags:
`

type bisectFlags struct {
	impl, spec, requirement, scenario, field, lb string
	everyPatch                                   bool
	seed                                         uint64
}

func parseBisectFlags(args []string, stderr io.Writer) (*bisectFlags, error) {
	f := &bisectFlags{}
	fs := flag.NewFlagSet("bisect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.impl, "impl", "", "the range of releases: grpc-go@v1.55.0..v1.85.0, grpc-js@1.8.0..1.14.7")
	fs.StringVar(&f.spec, "spec", "", "the spec to judge each release by: SUITE/SPEC (a61/he-dropped-ipv6; `conform requirements` lists them)")
	fs.StringVar(&f.requirement, "requirement", "", "judge only this requirement's checks of the spec (default: the spec's worst verdict)")
	fs.StringVar(&f.scenario, "scenario", "", "instead of a spec, a scenario file: judged against the reference's run of it")
	fs.StringVar(&f.field, "field", "", "instead of a spec, a field capture (.pcap, .pcapng) or trace: a release is bad while its replay reproduces it")
	fs.StringVar(&f.lb, "lb", "", "with --field: the client's LB policy, in standard names (pick_first, round_robin)")
	fs.BoolVar(&f.everyPatch, "every-patch", false, "search every release in the range, not only the latest patch of each minor")
	fs.Uint64Var(&f.seed, "seed", 1, "the seed of a --scenario run's randomness")
	fs.Usage = func() { fmt.Fprint(stderr, bisectUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return nil, exitError{2}
	}
	switch {
	case fs.NArg() > 0:
		return nil, badUsage("bisect: unexpected argument %q", fs.Arg(0))
	case !driver.IsRange(f.impl):
		fs.Usage()
		return nil, badUsage("bisect: --impl %q: want a range of releases, NAME@FIRST..LAST (grpc-go@v1.55.0..v1.85.0)", f.impl)
	case countSet(f.spec, f.scenario, f.field) != 1:
		return nil, badUsage("bisect: give one of --spec SUITE/SPEC, --scenario FILE or --field FILE")
	case f.requirement != "" && f.spec == "":
		return nil, badUsage("bisect: --requirement picks checks of a --spec")
	}
	return f, nil
}

func countSet(ss ...string) int {
	n := 0
	for _, s := range ss {
		if s != "" {
			n++
		}
	}
	return n
}

// probe is one release tried: its verdict and the evidence for it.
type probe struct {
	verdict  verdict.Verdict
	label    string // the verdict as reports print it ("fail (absent)")
	evidence string
	took     time.Duration
	runs     int // lab runs it took: a run the machine's stalls left inconclusive is made again
}

// judged reports whether the verdict says something of the release.
func (p probe) judged() bool {
	return p.verdict == verdict.Pass || p.verdict == verdict.Fail || p.verdict == verdict.NotApplicable
}

// prober runs the release once and judges it.
type prober func(ctx context.Context, r driver.Release) probe

func runBisect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseBisectFlags(args, stderr)
	if err != nil {
		return err
	}
	try, err := f.prober(ctx, stderr)
	if err != nil {
		return err
	}
	releases, err := driver.ExpandRange(ctx, f.impl, f.everyPatch, driver.Releases)
	if err != nil {
		return rangeError(err)
	}
	if err := netlab.Available().Err(); err != nil {
		return fmt.Errorf("bisect runs each release in the lab: %w (run `conform lab check`)", err)
	}
	fmt.Fprintf(stdout, "bisect %s over %d releases of %s (%s … %s), assuming the verdict changes once\n",
		f.subject(), len(releases), releases[0].Name, releases[0].Version, releases[len(releases)-1].Version)
	_, err = bisect(ctx, releases, try, stdout)
	return err
}

func (f *bisectFlags) subject() string {
	switch {
	case f.scenario != "":
		return f.scenario + " (against the reference)"
	case f.field != "":
		return f.field + " (bad while a replay reproduces it)"
	case f.requirement != "":
		return f.spec + " · " + f.requirement
	}
	return f.spec + " (its worst verdict)"
}

// prober resolves what each release is judged by: a spec's checks (one
// requirement's, or all), or a scenario against the reference's run of it.
func (f *bisectFlags) prober(ctx context.Context, stderr io.Writer) (prober, error) {
	cache, err := driver.CacheDir()
	if err != nil {
		return nil, err
	}
	if f.field != "" {
		return fieldProber(f.field, f.lb, f.seed, cache)
	}
	if f.scenario != "" {
		s, err := scenario.DecodeFile(f.scenario)
		if err != nil {
			return nil, usageError{err}
		}
		return scenarioProber(ctx, s, f.seed, cache, stderr)
	}
	sp, err := findSpec(f.spec)
	if err != nil {
		return nil, usageError{err}
	}
	if f.requirement != "" && !strings.Contains(","+strings.Join(sp.Requirements(), ",")+",", ","+f.requirement+",") {
		return nil, badUsage("bisect: --requirement %s: %s checks %s", f.requirement, f.spec, strings.Join(sp.Requirements(), ", "))
	}
	return func(ctx context.Context, r driver.Release) probe {
		start := time.Now()
		var p probe
		for run := 1; ; run++ {
			o := spec.Run(ctx, sp, spec.Lab, runner.Driver{Impl: r, Cache: cache})
			p = judge(o.Results, f.requirement)
			p.runs = run
			if !unsteady(p, o.Results, f.requirement) || run == spec.UnsteadyRuns || ctx.Err() != nil {
				break
			}
		}
		p.took = time.Since(start)
		return p
	}, nil
}

// findSpec finds "suite/spec" among the suites.
func findSpec(name string) (spec.Spec, error) {
	suiteName, specName, ok := strings.Cut(name, "/")
	if !ok {
		return spec.Spec{}, fmt.Errorf("--spec %q: want SUITE/SPEC, e.g. a61/he-dropped-ipv6", name)
	}
	sel, err := selectSuites(suiteName)
	if err != nil {
		return spec.Spec{}, fmt.Errorf("--spec %q: %w", name, err)
	}
	var names []string
	for _, sp := range sel[0].specs() {
		if sp.Name() == specName {
			if !sp.RunsIn(spec.Lab) {
				return spec.Spec{}, fmt.Errorf("--spec %q runs in the simulator only; bisect runs releases in the lab", name)
			}
			return sp, nil
		}
		names = append(names, sp.Name())
	}
	return spec.Spec{}, fmt.Errorf("--spec %q: suite %s has no such spec (it has: %s)", name, suiteName, strings.Join(names, ", "))
}

// unsteady reports whether p is inconclusive only because the machine
// stalled near a timer judged (spec.OnlyUnsteady, over requirement's
// results when given): a run worth making again, up to spec.UnsteadyRuns.
func unsteady(p probe, rs []verdict.Result, requirement string) bool {
	if p.verdict != verdict.Inconclusive {
		return false
	}
	var mine []verdict.Result
	for _, r := range rs {
		if requirement == "" || r.Requirement == requirement {
			mine = append(mine, r)
		}
	}
	return spec.OnlyUnsteady(mine)
}

// rankOf orders verdicts for the worst: error, fail, inconclusive, pass,
// not-applicable.
var rankOf = map[verdict.Verdict]int{verdict.NotApplicable: 1, verdict.Pass: 2, verdict.Inconclusive: 3, verdict.Fail: 4, verdict.Error: 5}

// judge folds a run's results (only requirement's, when given) into its
// worst verdict, with that result's evidence.
func judge(rs []verdict.Result, requirement string) probe {
	var w *verdict.Result
	for i, r := range rs {
		if requirement != "" && r.Requirement != requirement {
			continue
		}
		if w == nil || rankOf[r.Verdict] > rankOf[w.Verdict] {
			w = &rs[i]
		}
	}
	if w == nil {
		return probe{verdict: verdict.Error, label: "error", evidence: "the run gave no result for it"}
	}
	ev := w.Evidence
	if ev != "" {
		ev = w.Row() + ": " + ev
	}
	return probe{verdict: w.Verdict, label: w.Label(), evidence: ev}
}

// scenarioProber runs s against the reference once, then judges each
// release by whether its trace agrees with the reference's.
func scenarioProber(ctx context.Context, s *scenario.Scenario, seed uint64, cache string, stderr io.Writer) (prober, error) {
	if err := netlab.Available().Err(); err != nil {
		return nil, fmt.Errorf("bisect runs each release in the lab: %w (run `conform lab check`)", err)
	}
	fmt.Fprintf(stderr, "conform: running %s against the reference, the expected trace\n", s.Name)
	ref, err := runner.Run(ctx, s, runner.Reference, trace.ModeLab, runner.Options{Seed: seed})
	if err != nil {
		return nil, fmt.Errorf("the reference's run of %s broke, so there is nothing to judge against: %w", s.Name, err)
	}
	return func(ctx context.Context, r driver.Release) probe {
		start := time.Now()
		tr, err := runner.Run(ctx, s, runner.Driver{Impl: r, Cache: cache}, trace.ModeLab, runner.Options{Seed: seed})
		p := probe{verdict: verdict.Pass, label: "pass"}
		if err != nil {
			p = probe{verdict: verdict.Error, label: "error", evidence: err.Error()}
		} else if res := compare.Traces(ref, tr, scenarioView()); !res.Equal() {
			p = probe{verdict: verdict.Fail, label: "fail (differs from the reference)", evidence: res.String()}
		}
		p.took = time.Since(start)
		return p
	}, nil
}

// scenarioView is what a --scenario run is judged on: its connection
// attempts, their fate and the RPCs' results, within the lab's tolerance
// (channel states are left out: a driver's channel reports the IDLE it
// starts in, which the reference's recorder does not).
func scenarioView() compare.Options {
	return compare.Options{
		Select:    []trace.Pred{trace.OfKind(trace.KindSYN, trace.KindSYNACK, trace.KindRST, trace.KindRPCResult)},
		Ignore:    []string{"peer", "port"},
		Tolerance: compare.LabTolerance,
	}
}

// bisectResult is where the verdict changes: the last release with the
// first release's verdict and the first after it without.
type bisectResult struct {
	last, first int // indices into the releases; -1 when not found
}

// bisect searches releases for the first whose verdict differs from the
// first release's, printing each release tried on w.
func bisect(ctx context.Context, releases []driver.Release, try prober, w io.Writer) (bisectResult, error) {
	none := bisectResult{-1, -1}
	tried := map[int]probe{}
	probeAt := func(i int) probe {
		if p, ok := tried[i]; ok {
			return p
		}
		p := try(ctx, releases[i])
		tried[i] = p
		printProbe(w, releases[i], p)
		if !p.judged() {
			fmt.Fprintf(w, "  %s says nothing (%s): passed over, never taken for good or bad\n", releases[i].Version, p.verdict)
		}
		return p
	}
	// The ends: the first and the last releases that are judged.
	lo, hi := 0, len(releases)-1
	for ; lo <= hi && !probeAt(lo).judged(); lo++ {
		if ctx.Err() != nil {
			return none, ctx.Err()
		}
	}
	for ; hi > lo && !probeAt(hi).judged(); hi-- {
		if ctx.Err() != nil {
			return none, ctx.Err()
		}
	}
	if lo > hi {
		return none, fmt.Errorf("no release of the range gave a verdict (each was inconclusive or an error): nothing to bisect")
	}
	old := probeAt(lo).verdict
	if lo == hi || probeAt(hi).verdict == old {
		fmt.Fprintf(w, "\nwarning: %s and %s both give %s: either nothing changed in the range, or it changed and changed back,\nwhich a bisection cannot find (it assumes one change); verify the range to see every release\n",
			releases[lo].Version, releases[hi].Version, old)
		return none, nil
	}
	var skipped []string
	for hi-lo > 1 {
		if ctx.Err() != nil {
			return none, ctx.Err()
		}
		m, ok := judgedNear(lo, hi, probeAt)
		if !ok {
			for i := lo + 1; i < hi; i++ {
				skipped = append(skipped, releases[i].Version)
			}
			break
		}
		if probeAt(m).verdict == old {
			lo = m
		} else {
			hi = m
		}
	}
	printChange(w, releases[lo], probeAt(lo), releases[hi], probeAt(hi), skipped)
	return bisectResult{lo, hi}, nil
}

// judgedNear is the release nearest the middle of (lo, hi) that gives a
// verdict: the middle, then its neighbours outwards; false when none does.
func judgedNear(lo, hi int, probeAt func(int) probe) (int, bool) {
	mid := (lo + hi) / 2
	order := []int{mid}
	for d := 1; mid-d > lo || mid+d < hi; d++ {
		if mid+d < hi {
			order = append(order, mid+d)
		}
		if mid-d > lo {
			order = append(order, mid-d)
		}
	}
	for _, i := range order {
		if probeAt(i).judged() {
			return i, true
		}
	}
	return 0, false
}

func printProbe(w io.Writer, r driver.Release, p probe) {
	runs := ""
	if p.runs > 1 {
		runs = fmt.Sprintf(", %d lab runs: the machine stalled near the timer judged", p.runs)
	}
	fmt.Fprintf(w, "  %-10s %-34s (%.1fs%s)\n", r.Version, p.label, p.took.Seconds(), runs)
	if p.evidence != "" && p.verdict != verdict.Pass {
		lines := strings.Split(strings.TrimRight(p.evidence, "\n"), "\n")
		if len(lines) > 6 {
			lines = append(lines[:6], fmt.Sprintf("… (%d more lines)", len(lines)-6))
		}
		fmt.Fprintf(w, "%s\n", indentBy(strings.Join(lines, "\n"), "      "))
	}
}

func indentBy(s, by string) string { return by + strings.ReplaceAll(s, "\n", "\n"+by) }

// printChange prints the pair where the verdict changes, in the words of
// good and bad where one side passes.
func printChange(w io.Writer, last driver.Release, lp probe, first driver.Release, fp probe, skipped []string) {
	lastWord, firstWord := "last "+string(lp.verdict), "first "+string(fp.verdict)
	switch {
	case lp.verdict == verdict.Pass:
		lastWord, firstWord = "last good", "first bad"
	case fp.verdict == verdict.Pass:
		lastWord, firstWord = "last bad", "first good"
	}
	fmt.Fprintf(w, "\n%s %s (%s) / %s %s (%s)\n", lastWord, last, lp.label, firstWord, first, fp.label)
	if len(skipped) > 0 {
		fmt.Fprintf(w, "the change is somewhere after %s up to %s: the releases between (%s) gave no verdict\n", last.Version, first.Version, strings.Join(skipped, ", "))
	}
}

// fieldProber infers the environment of a field capture or trace (as
// conform replay does) and judges each release by whether its replay
// reproduces the field's connection attempts: bad (fail) while it does.
func fieldProber(path, lb string, seed uint64, cache string) (prober, error) {
	field, err := readAnyTrace(path)
	if err != nil {
		return nil, usageError{err}
	}
	s, m, err := replay.FromCapture(field.Events)
	if err != nil {
		return nil, usageError{fmt.Errorf("%s: %w", path, err)}
	}
	s.Client.LBPolicy = lb
	expected := &trace.Trace{Events: replay.Rename(field.Events, s, m, runner.AddrOf)}
	return func(ctx context.Context, r driver.Release) probe {
		start := time.Now()
		tr, err := runner.Run(ctx, s, runner.Driver{Impl: r, Cache: cache}, trace.ModeLab, runner.Options{Seed: seed})
		p := probe{verdict: verdict.Fail, label: "fail (reproduces the field)"}
		if err != nil {
			p = probe{verdict: verdict.Error, label: "error", evidence: err.Error()}
		} else if res := compare.Traces(expected, tr, attemptsView().opts); !res.Equal() {
			p = probe{verdict: verdict.Pass, label: "pass (departs from the field)", evidence: res.String()}
		}
		p.took = time.Since(start)
		return p
	}, nil
}
