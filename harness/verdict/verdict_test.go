package verdict

import (
	"strings"
	"testing"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/trace"
)

var subject = Subject{Spec: "tiny", Doc: "A61", Mode: trace.ModeSim}

// tiny is a trace of one RPC answered by b1, with or without the policy's
// own events.
func tiny(withPolicy bool) *trace.Trace {
	tr := &trace.Trace{Header: trace.Header{Impl: "grpc-go"}, Events: []trace.Event{
		{Source: trace.SourceDriver, Kind: trace.KindRPCResult, RPC: "r1", Backend: "b1"},
	}}
	if withPolicy {
		tr.Events = append(tr.Events, trace.Event{Source: trace.SourcePolicy, Kind: trace.KindBalancerState, State: "READY"})
	}
	return tr
}

func answeredBy(backend string) func(gomega.Gomega, *trace.Trace) {
	return func(g gomega.Gomega, tr *trace.Trace) {
		res := trace.Select(tr.Events, trace.OfKind(trace.KindRPCResult))
		g.Expect(res).To(gomega.HaveLen(1))
		g.Expect(res[0].Backend).To(gomega.Equal(backend))
	}
}

// TestEvaluate_VerdictPerCheck verifies that each check gets its own verdict,
// about the subject, and that a failing one carries Gomega's message as
// evidence.
func TestEvaluate_VerdictPerCheck(t *testing.T) {
	rs := Evaluate(subject, []Check{
		{Requirement: "A61-HE-DELAY-DEFAULT", Assert: answeredBy("b1")},
		{Requirement: "A61-HE-FIRST-PASS", Assert: answeredBy("b9")},
	}, tiny(false))
	if len(rs) != 2 || rs[0].Verdict != Pass || rs[1].Verdict != Fail {
		t.Fatalf("results %+v, want pass then fail", rs)
	}
	want := Result{Spec: "tiny", Doc: "A61", Requirement: "A61-HE-DELAY-DEFAULT", Mode: trace.ModeSim, Verdict: Pass}
	if rs[0] != want {
		t.Errorf("result %+v, want %+v", rs[0], want)
	}
	if !strings.Contains(rs[1].Evidence, "b9") {
		t.Errorf("evidence %q does not show the expectation", rs[1].Evidence)
	}
}

// TestEvaluate_PanicFails verifies that a check panicking for a reason of
// its own fails with the panic as evidence, and does not stop the checks
// after it.
func TestEvaluate_PanicFails(t *testing.T) {
	rs := Evaluate(subject, []Check{
		{Requirement: "A61-HE-FIRST-PASS", Assert: func(gomega.Gomega, *trace.Trace) { panic("index out of range") }},
		{Requirement: "A61-HE-DELAY-DEFAULT", Assert: answeredBy("b1")},
	}, tiny(false))
	if rs[0].Verdict != Fail || !strings.Contains(rs[0].Evidence, "check panicked: index out of range") {
		t.Errorf("panicking check: %s (%q), want fail with the panic", rs[0].Verdict, rs[0].Evidence)
	}
	if rs[1].Verdict != Pass {
		t.Errorf("the check after the panic: %s, want pass", rs[1].Verdict)
	}
}

// TestEvaluate_MissingEvidenceIsNotApplicable verifies that a check needing
// the policy's own events is not-applicable on a trace without them (a
// third party's), and judged as usual on one that has them.
func TestEvaluate_MissingEvidenceIsNotApplicable(t *testing.T) {
	checks := []Check{{Requirement: "A61-HE-DELAY-DEFAULT", Assert: answeredBy("b1"), Needs: []trace.Source{trace.SourcePolicy}}}
	if rs := Evaluate(subject, checks, tiny(true)); rs[0].Verdict != Pass {
		t.Fatalf("with policy events: %s (%s)", rs[0].Verdict, rs[0].Evidence)
	}
	rs := Evaluate(subject, checks, tiny(false))
	if rs[0].Verdict != NotApplicable || !strings.Contains(rs[0].Evidence, "policy events") || !strings.Contains(rs[0].Evidence, "grpc-go") {
		t.Errorf("without policy events: %s (%s), want not-applicable naming them and the impl", rs[0].Verdict, rs[0].Evidence)
	}
}

// TestBroken_OneVerdictPerRequirement verifies that a broken run gives each
// requirement the verdict and the reason, never a silent pass.
func TestBroken_OneVerdictPerRequirement(t *testing.T) {
	rs := Broken(subject, []string{"A61-HE-FIRST-PASS", "A61-HE-DELAY-DEFAULT"}, Error, "driver: bad line")
	if len(rs) != 2 {
		t.Fatalf("%d results, want 2", len(rs))
	}
	for i, id := range []string{"A61-HE-FIRST-PASS", "A61-HE-DELAY-DEFAULT"} {
		want := Result{Spec: "tiny", Doc: "A61", Requirement: id, Mode: trace.ModeSim, Verdict: Error, Evidence: "driver: bad line"}
		if rs[i] != want {
			t.Errorf("result %d: %+v, want %+v", i, rs[i], want)
		}
	}
}

// TestFailed_RendersAllButPasses verifies the failure message lists every
// result that is not a pass, its evidence indented, and nothing for passes.
func TestFailed_RendersAllButPasses(t *testing.T) {
	rs := []Result{
		subject.result("A61-HE-DELAY-DEFAULT", Pass, ""),
		subject.result("A61-HE-FIRST-PASS", Fail, "Expected\n  b9\nto equal b1\n"),
		subject.result("A61-HE-DELAY-CLAMP", NotApplicable, "no policy events"),
	}
	want := "A61-HE-FIRST-PASS [sim] tiny: fail\n    Expected\n      b9\n    to equal b1\n\n" +
		"A61-HE-DELAY-CLAMP [sim] tiny: not-applicable\n    no policy events\n\n"
	if got := Failed(rs); got != want {
		t.Errorf("Failed:\n%q\nwant\n%q", got, want)
	}
	if got := Failed(rs[:1]); got != "" {
		t.Errorf("Failed of a pass: %q, want nothing", got)
	}
}

// TestVerdict_KnownIsTheFour verifies the enum is closed: the four verdicts
// and their JSON strings, and nothing else.
func TestVerdict_KnownIsTheFour(t *testing.T) {
	for v, s := range map[Verdict]string{Pass: "pass", Fail: "fail", NotApplicable: "not-applicable", Error: "error"} {
		if string(v) != s || !v.Known() {
			t.Errorf("%q: known %v, want %q and known", v, v.Known(), s)
		}
	}
	for _, v := range []Verdict{"", "skip", "inconclusive", "PASS"} {
		if v.Known() {
			t.Errorf("%q is known", v)
		}
	}
}
