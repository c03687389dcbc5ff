package verdict

import (
	"slices"
	"strings"
	"testing"

	"github.com/onsi/gomega"

	"github.com/conformlab/conform/harness/scenario"
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
	if len(rs) != 2 || rs[0].Verdict != Pass || rs[1].Verdict != Fail || rs[1].Kind != Deviates {
		t.Fatalf("results %+v, want pass then fail (deviates)", rs)
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

// TestEvaluate_BackendEvidenceIsTheLabs verifies that a check needing the
// backends' evidence gives no result at all on a simulated trace (the
// simulator has no backends: the lab judges it), and is judged in the lab.
func TestEvaluate_BackendEvidenceIsTheLabs(t *testing.T) {
	checks := []Check{
		{Requirement: "A61-HE-DELAY-DEFAULT", Assert: answeredBy("b1"), Needs: []trace.Source{trace.SourceBackend}},
		{Requirement: "A61-HE-FIRST-PASS", Assert: answeredBy("b1")},
	}
	if rs := Evaluate(subject, checks, tiny(false)); len(rs) != 1 || rs[0].Requirement != "A61-HE-FIRST-PASS" {
		t.Fatalf("in the simulator: %+v, want only the check that needs no backends", rs)
	}
	tr := tiny(false)
	tr.Events = append(tr.Events, trace.Event{Source: trace.SourceBackend, Kind: trace.KindConnClose, Backend: "b1"})
	lab := subject
	lab.Mode = trace.ModeLab
	if rs := Evaluate(lab, checks, tr); len(rs) != 2 || rs[0].Verdict != Pass {
		t.Fatalf("in the lab: %+v, want both checks judged", rs)
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
	rs[1].Kind = Deviates
	want := "A61-HE-FIRST-PASS [sim] tiny: fail (deviates)\n    Expected\n      b9\n    to equal b1\n\n" +
		"A61-HE-DELAY-CLAMP [sim] tiny: not-applicable\n    no policy events\n\n"
	if got := Failed(rs); got != want {
		t.Errorf("Failed:\n%q\nwant\n%q", got, want)
	}
	if got := Failed(rs[:1]); got != "" {
		t.Errorf("Failed of a pass: %q, want nothing", got)
	}
}

// TestVerdict_KnownIsTheFive verifies the enum is closed: the five verdicts
// and their JSON strings, and nothing else.
func TestVerdict_KnownIsTheFive(t *testing.T) {
	for v, s := range map[Verdict]string{Pass: "pass", Fail: "fail", Inconclusive: "inconclusive", NotApplicable: "not-applicable", Error: "error"} {
		if string(v) != s || !v.Known() {
			t.Errorf("%q: known %v, want %q and known", v, v.Known(), s)
		}
	}
	for _, v := range []Verdict{"", "skip", "unknown", "PASS"} {
		if v.Known() {
			t.Errorf("%q is known", v)
		}
	}
}

// TestEvaluate_KindsAndPreconditions verifies what a check can say besides
// pass and a deviation: no sign of the behaviour (fail, absent), and a
// precondition that did not hold (inconclusive, with the reason, and the
// check judges nothing after it).
func TestEvaluate_KindsAndPreconditions(t *testing.T) {
	judged := false
	rs := Evaluate(subject, []Check{
		{Requirement: "A61-HE-DELAY-DEFAULT", Assert: func(gomega.Gomega, *trace.Trace) { NoSign("no second attempt within %v", "2s") }},
		{Requirement: "A61-HE-FIRST-PASS", Assert: func(g gomega.Gomega, tr *trace.Trace) {
			Require(false, "IPv6 was not tried first")
			judged = true
		}},
		{Requirement: "A61-HE-TIMER-NEXT-ADDRESS", Assert: func(gomega.Gomega, *trace.Trace) { Require(true, "holds") }},
	}, tiny(false))
	if r := rs[0]; r.Verdict != Fail || r.Kind != Absent || r.Evidence != "no second attempt within 2s" || r.Label() != "fail (absent)" {
		t.Errorf("no sign: %+v, want fail (absent) with the message", r)
	}
	if r := rs[1]; r.Verdict != Inconclusive || r.Kind != "" || r.Evidence != "IPv6 was not tried first" || judged {
		t.Errorf("precondition: %+v (judged after it: %v), want inconclusive with the reason", r, judged)
	}
	if rs[2].Verdict != Pass {
		t.Errorf("a precondition that holds: %+v, want pass", rs[2])
	}
}

// TestEvaluate_PassWithKeepsWhatWasObserved verifies that a check can end
// passed with what it observed (a recommended value) as the evidence, and
// judges nothing after it.
func TestEvaluate_PassWithKeepsWhatWasObserved(t *testing.T) {
	judged := false
	rs := Evaluate(subject, []Check{
		{Requirement: "A61-HE-DELAY-DEFAULT", Assert: func(gomega.Gomega, *trace.Trace) {
			PassWith("observed %v", "30m0.1s")
			judged = true
		}},
	}, tiny(false))
	if r := rs[0]; r.Verdict != Pass || r.Kind != "" || r.Evidence != "observed 30m0.1s" || judged {
		t.Errorf("pass with: %+v (judged after it: %v), want pass with the observation", r, judged)
	}
}

// TestEvaluate_ChecksOfOneRequirementAreNamedRows verifies that three checks
// of one requirement give three rows told apart by name or number, and a
// requirement's only check no name.
func TestEvaluate_ChecksOfOneRequirementAreNamedRows(t *testing.T) {
	rs := Evaluate(subject, []Check{
		{Requirement: "A61-HE-FIRST-PASS", Name: "IPv6 first", Assert: answeredBy("b1")},
		{Requirement: "A61-HE-FIRST-PASS", Assert: answeredBy("b1")},
		{Requirement: "A61-HE-FIRST-PASS", Assert: answeredBy("b1")},
		{Requirement: "A61-HE-DELAY-DEFAULT", Assert: answeredBy("b1")},
	}, tiny(false))
	var rows []string
	for _, r := range rs {
		rows = append(rows, r.Row())
	}
	want := []string{"A61-HE-FIRST-PASS · IPv6 first", "A61-HE-FIRST-PASS · #2", "A61-HE-FIRST-PASS · #3", "A61-HE-DELAY-DEFAULT"}
	if !slices.Equal(rows, want) {
		t.Errorf("rows %q, want %q", rows, want)
	}
}

// TestCrashed_OneFailRowOfKindCrash verifies a crashed run is one fail of
// kind crash, with the evidence, and its requirements inconclusive: one
// behaviour, one fail row.
func TestCrashed_OneFailRowOfKindCrash(t *testing.T) {
	rs := Crashed(subject, []string{"A61-HE-FIRST-PASS", "A61-HE-DELAY-DEFAULT"}, "signal SIGSEGV")
	if len(rs) != 3 || rs[0].Requirement != CrashRow || rs[0].Verdict != Fail || rs[0].Kind != Crash || rs[0].Evidence != "signal SIGSEGV" {
		t.Fatalf("%+v, want one fail (crash) row first", rs)
	}
	for _, r := range rs[1:] {
		if r.Verdict != Inconclusive || !strings.Contains(r.Evidence, "crashed") {
			t.Errorf("%+v, want inconclusive naming the crash", r)
		}
	}
}

// scoped is a hand-built trace of an idle_timeout run by impl, whose driver
// declared can: one RPC answered by b1, and the Cluster ACKed.
func scoped(impl string, can ...string) *trace.Trace {
	tr := tiny(false)
	tr.Header.Impl = impl
	if len(can) > 0 {
		tr.Header.Env = map[string]string{trace.EnvDriverCan: strings.Join(can, ",")}
	}
	return tr
}

// TestEvaluate_OutOfScopeIsNotApplicable verifies that an implementation
// the document scopes a rule away from gets not-applicable for it, with the
// document's words, whatever the check would say: A75 gives Go and Node its
// session affinity changes, the idle_timeout reading among them, only once
// they support session affinity. The reference, C-core, and a Go whose
// driver takes a session's cookie are judged.
func TestEvaluate_OutOfScopeIsNotApplicable(t *testing.T) {
	const id = "A75-IDLE-TIMEOUT-NOT-HTTP-OPTS-NACK"
	checks := []Check{
		{Requirement: id, Name: "passes", Assert: answeredBy("b1")},
		{Requirement: id, Name: "fails", Assert: answeredBy("b9")},
	}
	for _, impl := range []string{"grpc-go", "grpc-js", "grpc-go@v1.85.0 (linked)"} {
		for _, r := range Evaluate(subject, checks, scoped(impl, "xds")) {
			if r.Verdict != NotApplicable || !strings.Contains(r.Evidence, "A75, Implementation") || !strings.Contains(r.Evidence, "if/when") {
				t.Errorf("%s, check %s: %s %q, want not-applicable with A75's words", impl, r.Check, r.Verdict, r.Evidence)
			}
		}
	}
	for _, tr := range []*trace.Trace{scoped("reference"), scoped("grpcio", "xds"), scoped("grpc-go", "xds", "session_metadata")} {
		rs := Evaluate(subject, checks, tr)
		if rs[0].Verdict != Pass || rs[1].Verdict != Fail {
			t.Errorf("%s (can %q): %s, %s; want pass, fail: the rule is its", tr.Header.Impl, tr.Header.Env[trace.EnvDriverCan], rs[0].Verdict, rs[1].Verdict)
		}
	}
	// Scope comes before what the trace lacks: the rule is not the
	// implementation's, whatever evidence it has.
	rs := Evaluate(subject, []Check{{Requirement: id, Needs: []trace.Source{trace.SourcePolicy}, Assert: answeredBy("b1")}}, scoped("grpc-go"))
	if !strings.Contains(rs[0].Evidence, "A75, Implementation") {
		t.Errorf("needs and out of scope: %q, want the scope's reason", rs[0].Evidence)
	}
}

// TestEvaluate_EnvScope verifies the environment clause: A75's rule on
// what the aggregate cluster's own LB policy does holds only with its
// migration switch unset, for a third party; the reference is judged.
func TestEvaluate_EnvScope(t *testing.T) {
	checks := []Check{{Requirement: "A75-AGG-LB-POLICY-IGNORED", Assert: answeredBy("b1")}}
	on := &scenario.Scenario{Name: "s", Client: scenario.Client{Env: map[string]string{"GRPC_XDS_AGGREGATE_CLUSTER_BACKWARD_COMPAT": "true"}}}
	tr := scoped("grpcio")
	if rs := Evaluate(subject, checks, tr); rs[0].Verdict != Pass {
		t.Errorf("switch unset: %+v, want pass", rs[0])
	}
	tr.Header.Scenario = on
	if rs := Evaluate(subject, checks, tr); rs[0].Verdict != NotApplicable || !strings.Contains(rs[0].Evidence, "GRPC_XDS_AGGREGATE_CLUSTER_BACKWARD_COMPAT=true") {
		t.Errorf("switch set: %+v, want not-applicable naming it", rs[0])
	}
	tr.Header.Impl = "reference"
	if rs := Evaluate(subject, checks, tr); rs[0].Verdict != Pass {
		t.Errorf("the reference, switch set: %+v, want pass", rs[0])
	}
}

// TestScope_BrokenRuns verifies that the results of a run that broke are
// scoped too: after a crash, a rule out of the implementation's scope is
// not-applicable, one in scope inconclusive, and the crash's own row stays
// a fail; an error (conform broke) stays an error.
func TestScope_BrokenRuns(t *testing.T) {
	ids := []string{"A75-IDLE-TIMEOUT-UNSET-DEFAULT", "A75-AGG-LB-FROM-UNDERLYING"}
	h := scoped("grpc-js").Header
	crash := Scope(Crashed(subject, ids, "the implementation crashed"), h)
	if crash[0].Requirement != CrashRow || crash[0].Verdict != Fail || crash[0].Kind != Crash {
		t.Errorf("the crash row: %+v, want fail (crash)", crash[0])
	}
	if crash[1].Verdict != NotApplicable || crash[1].Kind != "" || !strings.Contains(crash[1].Evidence, "A75, Implementation") {
		t.Errorf("crash, out of scope: %+v", crash[1])
	}
	if crash[2].Verdict != Inconclusive {
		t.Errorf("crash, in scope: %+v, want inconclusive", crash[2])
	}
	if errs := Scope(Broken(subject, ids, Error, "the driver broke"), h); errs[0].Verdict != Error || errs[1].Verdict != Error {
		t.Errorf("errors: %+v, want errors", errs)
	}
}

// TestPrecondition_ReturnsTheReasonAndLetsFailuresThrough: a precondition
// that fails is returned, one that holds gives "", and a fail inside goes
// on ending the check.
func TestPrecondition_ReturnsTheReasonAndLetsFailuresThrough(t *testing.T) {
	if got := Precondition(func() { Require(true, "never") }); got != "" {
		t.Errorf("a precondition that held: %q, want none", got)
	}
	if got := Precondition(func() { Require(false, "stalled %d", 3) }); got != "stalled 3" {
		t.Errorf("a precondition that failed: %q, want %q", got, "stalled 3")
	}
	rs := Evaluate(Subject{}, []Check{{Requirement: "A62-STICKY-TF", Assert: func(gomega.Gomega, *trace.Trace) {
		Precondition(func() { NoSign("nothing happened") })
	}}}, &trace.Trace{})
	if len(rs) != 1 || rs[0].Verdict != Fail || rs[0].Kind != Absent {
		t.Errorf("a fail inside Precondition: %+v, want a fail (absent)", rs)
	}
}

// TestCheckNames_AMonitorRenamesNoOtherCheck: a monitor's check is named
// "monitor <name>", and the requirement's other checks keep the names they
// had without it ("" alone, "#n" among several).
func TestCheckNames_AMonitorRenamesNoOtherCheck(t *testing.T) {
	got := CheckNames([]Check{
		{Requirement: "A62-STICKY-TF"},
		{Requirement: "A62-TF-PICKS"}, {Requirement: "A62-TF-PICKS"},
		{Requirement: "A62-STICKY-TF", Monitor: "sticky-tf"},
		{Requirement: "A62-TF-PICKS", Monitor: "tf-picks"},
	})
	want := []string{"", "#1", "#2", "monitor sticky-tf", "monitor tf-picks"}
	if !slices.Equal(got, want) {
		t.Errorf("names %q, want %q", got, want)
	}
}
