package html_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/conformlab/conform/harness/report/html"
	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/a61"
	"github.com/conformlab/conform/suites/spec"
)

// The implementations of the sample report. noDelay is a test double: its
// "observed" trace of he-dropped-ipv6 is the reference run with a
// Connection Attempt Delay of 100 ms configured, so its IPv4 attempt starts
// 100 ms after the hung IPv6 one instead of 250 ms: a real trace, and a real
// failure of A61-HE-DELAY-DEFAULT with Gomega's evidence.
const (
	implRef     = "reference"
	implNoDelay = "no-delay (test double)"
)

// sample is a report built from real traces: the A61 specs run by the
// simulator (harness/runner), the repository's golden traces, and the
// specs' own checks. It also returns the verdict each matrix cell must
// show, per implementation and requirement.
type sample struct {
	Report html.Report
	Cells  map[string]map[string]string // impl → requirement → verdict ("none": not run)
	// RunOf names runs by impl, spec and mode: "reference he-dropped-ipv6 sim".
	RunOf map[string]string
}

func buildSample(t *testing.T) sample {
	t.Helper()
	ctx := context.Background()
	byName := map[string]spec.Spec{}
	for _, s := range a61.Specs() {
		byName[s.Name()] = s
	}
	dropped, okD := byName["he-dropped-ipv6"]
	refused, okR := byName["he-refused-ipv6"]
	if !okD || !okR {
		t.Fatal("the sample needs a61's he-dropped-ipv6 and he-refused-ipv6")
	}
	dir, err := spec.TracesDir()
	if err != nil {
		t.Fatal(err)
	}
	golden := func(s spec.Spec, m trace.Mode) *trace.Trace {
		tr, err := trace.ReadFile(spec.GoldenPath(dir, s, m))
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	sim := func(s *scenario.Scenario) *trace.Trace {
		tr, err := runner.Run(ctx, s, runner.Reference, trace.ModeSim, runner.Options{Seed: 1})
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		return tr
	}

	var r html.Report
	r.Title = "conform verify: A61 sample"
	r.Generated = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	r.Impls = []string{implRef, implNoDelay}
	ids := []string{"A61-HE-DELAY-DEFAULT", "A61-HE-DELAY-CLAMP", "A61-HE-TIMER-NEXT-ADDRESS",
		"A61-HE-FAILURE-NEXT-ADDRESS", "A61-HE-FIRST-READY-WINS", "A61-HE-NOT-GATED"}
	a62 := requirement.ForDoc(requirement.A62)
	if len(a62) == 0 {
		t.Fatal("no A62 requirements in the catalogue")
	}
	ids = append(ids, a62[0].ID)
	for _, id := range ids {
		q, ok := requirement.ByID(id)
		if !ok {
			t.Fatalf("%s is not in the catalogue", id)
		}
		r.Requirements = append(r.Requirements, html.FromCatalogue(q))
	}
	runOf := map[string]string{}
	addRun := func(run html.Run) {
		runOf[run.Impl+" "+run.Spec+" "+string(run.Mode)] = "run-" + strconv.Itoa(len(r.Runs))
		r.Runs = append(r.Runs, run)
	}
	addResults := func(impl string, rs []verdict.Result) {
		for _, x := range rs {
			r.Results = append(r.Results, html.Result{Impl: impl, Spec: x.Spec, Requirement: x.Requirement,
				Mode: x.Mode, Verdict: x.Verdict, Evidence: x.Evidence})
		}
	}

	// The reference: both specs in both modes. Simulated runs are fresh;
	// lab runs are the recorded golden lab traces (this test needs no root).
	for _, s := range []spec.Spec{dropped, refused} {
		obs := sim(s.Scenario)
		addRun(html.Run{Impl: implRef, Spec: s.Name(), Mode: trace.ModeSim, Golden: golden(s, trace.ModeSim), Observed: obs})
		addResults(implRef, verdict.Evaluate(s.Subject(trace.ModeSim), s.Checks, obs))
		// Observed: the golden lab trace with a short stall of the
		// machine, as the lab's stall watch records one.
		lab := golden(s, trace.ModeLab)
		stalled := &trace.Trace{Header: lab.Header, Events: slices.Clone(lab.Events)}
		mid := len(stalled.Events) / 2
		stalled.Events = slices.Insert(stalled.Events, mid, trace.Event{T: stalled.Events[mid].T, Source: trace.SourceHarness, Kind: trace.KindStall, Duration: 5 * time.Millisecond})
		addRun(html.Run{Impl: implRef, Spec: s.Name(), Mode: trace.ModeLab, Golden: lab, Observed: stalled})
		addResults(implRef, verdict.Evaluate(s.Subject(trace.ModeLab), s.Checks, stalled))
	}

	// The test double: he-dropped-ipv6 fails its delay; he-refused-ipv6
	// broke; the lab is not applicable; A62 is not applicable.
	variant := scenario.New(dropped.Name()).
		Describe(dropped.Scenario.Description).
		Backend("b1", scenario.Dual).
		LB("pick_first", `{"connectionAttemptDelay":"0.1s"}`). // the client's own delay, not A61's default
		At(0, scenario.Fault("b1/ipv6", scenario.Drop)).
		At(0, scenario.Resolve(scenario.EP("b1/ipv6", "b1/ipv4"))).
		At(10*time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
		End(5 * time.Second).
		MustBuild()
	obs := sim(variant)
	addRun(html.Run{Impl: implNoDelay, Spec: dropped.Name(), Mode: trace.ModeSim, Golden: golden(dropped, trace.ModeSim), Observed: obs})
	addResults(implNoDelay, verdict.Evaluate(dropped.Subject(trace.ModeSim), dropped.Checks, obs))
	const broke = "driver exited with status 2 before the first event:\npanic: </script><script>alert(1)</script> & <!-- not markup -->"
	addRun(html.Run{Impl: implNoDelay, Spec: refused.Name(), Mode: trace.ModeSim, Golden: golden(refused, trace.ModeSim), Err: broke})
	addResults(implNoDelay, verdict.Broken(refused.Subject(trace.ModeSim), refused.Requirements(), verdict.Error, broke))
	for _, s := range []spec.Spec{dropped, refused} {
		addResults(implNoDelay, verdict.Broken(s.Subject(trace.ModeLab), s.Requirements(), verdict.NotApplicable, "the driver runs in simulation only"))
	}
	r.Results = append(r.Results, html.Result{Impl: implNoDelay, Spec: "xds-cluster-resolver", Requirement: a62[0].ID,
		Mode: trace.ModeSim, Verdict: verdict.NotApplicable, Evidence: "the driver cannot express xDS"})

	// An observation with no golden trace: every SYN dropped, so the kernel
	// retransmits and the RPC's deadline passes.
	hung := scenario.New("all-dropped").
		Describe("b1's only address drops SYNs; the RPC has a 2.5 s deadline").
		Backend("b1", scenario.IPv4Only).
		LB("pick_first", `{}`).
		At(0, scenario.Fault("b1/ipv4", scenario.Drop)).
		At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
		At(0, scenario.RPC("r1", scenario.Deadline(2500*time.Millisecond))).
		After(scenario.On("rpc-result").WithRPC("r1"), scenario.Finish()).
		End(10 * time.Second).
		MustBuild()
	addRun(html.Run{Impl: implRef, Spec: hung.Name, Mode: trace.ModeSim, Observed: sim(hung)})

	cells := map[string]map[string]string{
		implRef: {
			"A61-HE-DELAY-DEFAULT": "pass", "A61-HE-DELAY-CLAMP": "none", "A61-HE-TIMER-NEXT-ADDRESS": "pass",
			"A61-HE-FAILURE-NEXT-ADDRESS": "pass", "A61-HE-FIRST-READY-WINS": "none", "A61-HE-NOT-GATED": "pass", a62[0].ID: "none",
		},
		implNoDelay: {
			"A61-HE-DELAY-DEFAULT": "fail", "A61-HE-DELAY-CLAMP": "none", "A61-HE-TIMER-NEXT-ADDRESS": "pass",
			"A61-HE-FAILURE-NEXT-ADDRESS": "error", "A61-HE-FIRST-READY-WINS": "none", "A61-HE-NOT-GATED": "pass", a62[0].ID: "not-applicable",
		},
	}
	return sample{Report: r, Cells: cells, RunOf: runOf}
}
