package spec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/requirement"
	"github.com/conformlab/conform/harness/runner"
	"github.com/conformlab/conform/harness/scenario"
	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
)

func tinySpec(checks ...Check) Spec {
	return Spec{
		Doc: requirement.A61, Section: "Happy Eyeballs in the pick_first LB Policy",
		Scenario: scenario.New("tiny").Backend("b1", scenario.IPv4Only).LB("pick_first", `{}`).
			At(0, scenario.Resolve(scenario.EP("b1/ipv4"))).
			At(time.Millisecond, scenario.RPC("r1", scenario.WaitForReady())).
			End(time.Second).MustBuild(),
		Checks: checks,
	}
}

func answeredBy(backend string) func(gomega.Gomega, *trace.Trace) {
	return func(g gomega.Gomega, tr *trace.Trace) {
		res := Of(tr, trace.KindRPCResult)
		g.Expect(res).To(gomega.HaveLen(1))
		g.Expect(res[0].Backend).To(gomega.Equal(backend))
	}
}

// TestRun_VerdictPerCheck verifies that each check gets its own verdict and
// that a failing one carries Gomega's message as evidence.
func TestRun_VerdictPerCheck(t *testing.T) {
	s := tinySpec(
		Check{Requirement: "A61-HE-DELAY-DEFAULT", Assert: answeredBy("b1")},
		Check{Requirement: "A61-HE-FIRST-PASS", Assert: answeredBy("b9")},
	)
	o := Run(context.Background(), s, Sim, runner.Reference)
	if len(o.Results) != 2 || o.Results[0].Verdict != verdict.Pass || o.Results[1].Verdict != verdict.Fail {
		t.Fatalf("results %+v, want pass then fail", o.Results)
	}
	if !strings.Contains(o.Results[1].Evidence, "b9") {
		t.Errorf("evidence %q does not show the expectation", o.Results[1].Evidence)
	}
}

type naErr struct{}

func (naErr) Error() string         { return "cannot" }
func (naErr) NotApplicable() string { return "no endpoints" }

type crashErr struct{}

func (crashErr) Error() string   { return "driver: rpc: broken pipe" }
func (crashErr) Crashed() string { return "the implementation crashed (signal segmentation fault)" }

// TestRun_BrokenRunsAreErrorOrNotApplicable verifies that a run that cannot
// express the scenario is not-applicable, one in which the implementation
// crashed is one fail of kind crash first (its requirements inconclusive
// after it), and one that breaks otherwise is an error, never a silent
// pass.
func TestRun_BrokenRunsAreErrorOrNotApplicable(t *testing.T) {
	s := tinySpec(Check{Requirement: "A61-HE-DELAY-DEFAULT", Assert: answeredBy("b1")})
	for _, tc := range []struct {
		err  error
		want verdict.Verdict
	}{{naErr{}, verdict.NotApplicable}, {fmt.Errorf("step 3: %w", crashErr{}), verdict.Fail}, {errors.New("driver: bad line"), verdict.Error}} {
		o := Judge(s, Sim, nil, tc.err)
		want := 1
		if tc.want == verdict.Fail {
			want = 2 // the crash row, then the requirement, inconclusive
		}
		if len(o.Results) != want || o.Results[0].Verdict != tc.want || o.Results[0].Evidence == "" {
			t.Errorf("with %v: %+v, want %s with a reason", tc.err, o.Results, tc.want)
		}
	}
}

// TestJudge_OutOfScopeIsNotApplicable verifies that Judge gives an
// implementation the document scopes a rule away from not-applicable for
// it, with the document's words, whether the run went through or its
// implementation crashed; one in scope is judged. A61 makes least_request
// "Java and Go only".
func TestJudge_OutOfScopeIsNotApplicable(t *testing.T) {
	s := tinySpec(Check{Requirement: "A61-LR-COUNT-PER-ENDPOINT", Assert: answeredBy("b9")})
	tr := &trace.Trace{Header: trace.NewHeader(s.Scenario, "grpcio", Lab, 1)}
	for _, err := range []error{nil, fmt.Errorf("step 3: %w", crashErr{})} {
		o := Judge(s, Lab, tr, err)
		rs := o.Results
		if err != nil {
			// A crash is the implementation's whatever the rule's scope:
			// its row stays a fail; the rule is out of scope all the same.
			if len(rs) == 0 || rs[0].Requirement != verdict.CrashRow || rs[0].Verdict != verdict.Fail {
				t.Errorf("grpcio crashed: %+v, want the crash row first", rs)
				continue
			}
			rs = rs[1:]
		}
		if len(rs) != 1 || rs[0].Verdict != verdict.NotApplicable || !strings.Contains(rs[0].Evidence, `"Java and Go only"`) {
			t.Errorf("grpcio, error %v: %+v, want not-applicable with A61's words", err, o.Results)
		}
	}
	tr.Header.Impl = "grpc-go"
	if o := Judge(s, Lab, tr, nil); o.Results[0].Verdict != verdict.Fail {
		t.Errorf("grpc-go: %+v, want the check's fail", o.Results)
	}
}

// TestGolden_MissingThenEqualThenChanged verifies the golden-trace cycle:
// no golden fails with the command to run, a recorded one matches, and a
// changed behaviour fails with the divergence.
func TestGolden_MissingThenEqualThenChanged(t *testing.T) {
	dir := t.TempDir()
	s := tinySpec(Check{Requirement: "A61-HE-DELAY-DEFAULT", Assert: answeredBy("b1")})
	o := Run(context.Background(), s, Sim, runner.Reference)
	if err := CheckGolden(dir, s, Sim, o.Trace); !errors.Is(err, ErrNoGolden) || !strings.Contains(err.Error(), "conform record") {
		t.Fatalf("without a golden trace: %v", err)
	}
	if err := WriteGolden(dir, s, Sim, o.Trace); err != nil {
		t.Fatal(err)
	}
	if err := CheckGolden(dir, s, Sim, o.Trace); err != nil {
		t.Fatalf("against its own golden trace: %v", err)
	}
	changed := *o.Trace
	changed.Events = append([]trace.Event(nil), o.Trace.Events...)
	changed.Events[len(changed.Events)-1].T += time.Millisecond
	if err := CheckGolden(dir, s, Sim, &changed); err == nil {
		t.Error("a trace shifted by 1 ms matched its simulated golden trace")
	}
	o.CheckGoldenOutcome(dir)
	if len(o.Results) != 1 || o.Results[0].Verdict != verdict.Pass {
		t.Errorf("golden check turned a matching run into %+v", o.Results)
	}
	d := Outcome{Spec: s, Mode: Sim, Trace: &changed, Results: Judge(s, Sim, &changed, nil).Results}
	d.CheckGoldenOutcome(dir)
	if len(d.Results) != 2 || d.Results[0].Verdict != verdict.Pass {
		t.Fatalf("a diverging run: %+v, want its check's pass and one golden-trace fail", d.Results)
	}
	g := d.Results[1]
	if g.Requirement != verdict.GoldenTrace || g.Verdict != verdict.Fail || !strings.Contains(g.Evidence, "A61-HE-DELAY-DEFAULT") || !strings.Contains(g.Evidence, "differs") {
		t.Errorf("golden-trace verdict %+v, want one fail naming the divergence and the spec's requirements", g)
	}
}

// TestValidate_RejectsUnknownAndForeignRequirements verifies that a spec
// can only claim requirements of the catalogue and of its own document.
func TestValidate_RejectsUnknownAndForeignRequirements(t *testing.T) {
	ok := func(gomega.Gomega, *trace.Trace) {}
	if err := tinySpec(Check{Requirement: "A61-NOPE", Assert: ok}).Validate(); err == nil {
		t.Error("an unknown requirement validated")
	}
	if err := tinySpec(Check{Requirement: "A56-LAZY-CREATE", Assert: ok}).Validate(); err == nil {
		t.Error("an A61 spec claiming an A56 requirement validated")
	}
	if err := tinySpec().Validate(); err == nil {
		t.Error("a spec with no checks that is not an observation validated")
	}
}

// TestRunJobs_ReportsEveryJobInOrder verifies the parallel runner returns
// outcomes in job order and reports each completion once.
func TestRunJobs_ReportsEveryJobInOrder(t *testing.T) {
	a := tinySpec(Check{Requirement: "A61-HE-DELAY-DEFAULT", Assert: answeredBy("b1")})
	b := tinySpec(Check{Requirement: "A61-HE-DELAY-DEFAULT", Assert: answeredBy("nobody")})
	calls := 0
	out := RunJobs(context.Background(), []Job{{a, Sim}, {b, Sim}, {a, Sim}}, runner.Reference, 2,
		func(_ *Outcome, _ time.Duration, n, total int) { calls++ })
	if calls != 3 || len(out) != 3 {
		t.Fatalf("%d reports, %d outcomes; want 3 and 3", calls, len(out))
	}
	if out[0].Results[0].Verdict != verdict.Pass || out[1].Results[0].Verdict != verdict.Fail || out[2].Results[0].Verdict != verdict.Pass {
		t.Errorf("verdicts out of job order: %v %v %v", out[0].Results, out[1].Results, out[2].Results)
	}
}

// TestRunJobsWatched_StartsBeforeDone verifies each job is reported
// started once, before it is reported done, for a live display.
func TestRunJobsWatched_StartsBeforeDone(t *testing.T) {
	a := tinySpec(Check{Requirement: "A61-HE-DELAY-DEFAULT", Assert: answeredBy("b1")})
	var mu sync.Mutex
	running, starts, dones := 0, 0, 0
	RunJobsWatched(context.Background(), []Job{{a, Sim}, {a, Sim}, {a, Sim}}, runner.Reference, 2,
		func(Job) { mu.Lock(); running++; starts++; mu.Unlock() },
		func(_ *Outcome, _ time.Duration, n, total int) {
			mu.Lock()
			defer mu.Unlock()
			if running == 0 {
				t.Errorf("job %d of %d done before it was started", n, total)
			}
			running--
			dones++
		})
	if starts != 3 || dones != 3 {
		t.Errorf("%d starts, %d dones; want 3 of each", starts, dones)
	}
}

// TestCheckGoldenOutcome_MissingOrCorruptIsAnError verifies a golden trace
// that is missing or unreadable gives the golden-trace row an error (the
// harness's to mend), never a fail.
func TestCheckGoldenOutcome_MissingOrCorruptIsAnError(t *testing.T) {
	dir := t.TempDir()
	s := tinySpec(Check{Requirement: "A61-HE-DELAY-DEFAULT", Assert: answeredBy("b1")})
	o := Run(context.Background(), s, Sim, runner.Reference)
	missing := o
	missing.CheckGoldenOutcome(dir)
	if g := missing.Results[len(missing.Results)-1]; g.Requirement != verdict.GoldenTrace || g.Verdict != verdict.Error {
		t.Errorf("without a golden trace: %+v, want an error row", g)
	}
	if err := os.MkdirAll(filepath.Dir(GoldenPath(dir, s, Sim)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(GoldenPath(dir, s, Sim), []byte("not a trace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	corrupt := o
	corrupt.Results = slices.Clone(o.Results)
	corrupt.CheckGoldenOutcome(dir)
	if g := corrupt.Results[len(corrupt.Results)-1]; g.Requirement != verdict.GoldenTrace || g.Verdict != verdict.Error {
		t.Errorf("with a corrupt golden trace: %+v, want an error row", g)
	}
}
