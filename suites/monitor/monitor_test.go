package monitor

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/conformlab/conform/harness/trace"
	"github.com/conformlab/conform/harness/verdict"
	"github.com/conformlab/conform/suites/spec"
)

func golden(t *testing.T, rel string) *trace.Trace {
	t.Helper()
	dir, err := spec.TracesDir()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestJudge_NotExercisedIsNotApplicableButFailsASpec: on a trace that does
// not exercise the rule (he-dropped-ipv6 never reports TRANSIENT_FAILURE),
// `conform check` says not-applicable, while a spec that runs the monitor
// — its scenario made to exercise it — fails as absent.
func TestJudge_NotExercisedIsNotApplicableButFailsASpec(t *testing.T) {
	tr := golden(t, "a61/he-dropped-ipv6.sim.jsonl")
	if r := StickyTF.Judge("he-dropped-ipv6", tr); r.Verdict != verdict.NotApplicable {
		t.Errorf("conform check: %s (%s), want not-applicable", r.Label(), r.Evidence)
	}
	rs := verdict.Evaluate(verdict.Subject{}, []verdict.Check{StickyTF.Check()}, tr)
	if len(rs) != 1 || rs[0].Verdict != verdict.Fail || rs[0].Kind != verdict.Absent || rs[0].Check != "monitor sticky-tf" {
		t.Errorf("as a spec's check: %+v, want a fail (absent) in row monitor sticky-tf", rs)
	}
}

// TestJudge_MissingEvidenceIsInconclusive: a trace whose header says it
// shows no channel states leaves sticky-tf inconclusive, naming them, even
// though the events are there.
func TestJudge_MissingEvidenceIsInconclusive(t *testing.T) {
	tr := golden(t, "a62/sticky-tf-until-ready.sim.jsonl")
	if r := StickyTF.Judge("x", tr); r.Verdict != verdict.Pass {
		t.Fatalf("the golden trace: %s (%s), want pass", r.Label(), r.Evidence)
	}
	tr.Header.Origin, tr.Header.Shows = trace.OriginCapture, []trace.Evidence{trace.EvidencePackets}
	r := StickyTF.Judge("x", tr)
	if r.Verdict != verdict.Inconclusive || r.Evidence != "the trace does not show the channel's connectivity states, nor the client's LB configuration (a capture trace, showing packets)" {
		t.Errorf("%s: %q", r.Label(), r.Evidence)
	}
}

// TestJudge_AnotherPolicyIsNotApplicable: pick_first's rules do not apply
// under priority; the failover monitor does not apply to pick_first.
func TestJudge_AnotherPolicyIsNotApplicable(t *testing.T) {
	prio := golden(t, "a56/failover-timer-dropped-primary.sim.jsonl")
	if r := StickyTF.Judge("x", prio); r.Verdict != verdict.NotApplicable || r.Evidence != "the client's root policy is priority_experimental, not pick_first" {
		t.Errorf("sticky-tf under priority: %s %q", r.Label(), r.Evidence)
	}
	if r := FailoverNotBeforeTimer.Judge("x", prio); r.Verdict != verdict.Pass {
		t.Errorf("failover-not-before-timer under priority: %s %q", r.Label(), r.Evidence)
	}
	pf := golden(t, "a62/sticky-tf-until-ready.sim.jsonl")
	if r := FailoverNotBeforeTimer.Judge("x", pf); r.Verdict != verdict.NotApplicable {
		t.Errorf("failover-not-before-timer under pick_first: %s %q", r.Label(), r.Evidence)
	}
}

// TestCheck_LeftTFFirstIsInconclusiveNotAbsent: sticky-tf-backoff as a
// spec's check. On sticky-tf-until-ready, a client that reconnects after
// leaving TRANSIENT_FAILURE (a channel-state CONNECTING before each
// reconnection, as a client without sticky TF reports) gives the rule
// nothing to judge through its own breach of A62-STICKY-TF: inconclusive,
// naming it. A client that never reconnects at all is absent.
func TestCheck_LeftTFFirstIsInconclusiveNotAbsent(t *testing.T) {
	tr := golden(t, "a62/sticky-tf-until-ready.lab.jsonl")
	tr.Events = trace.Select(tr.Events, func(e trace.Event) bool { return e.Source != trace.SourcePolicy }) // as a driver's trace
	pairs := reconnectionsInTF(tr)
	if len(pairs) == 0 {
		t.Fatal("the golden trace has no reconnection in TRANSIENT_FAILURE")
	}
	left := *tr
	left.Events = nil
	for _, e := range tr.Events {
		for _, p := range pairs {
			if e.Kind == p[1].Kind && e.Addr == p[1].Addr && e.T == p[1].T {
				c := trace.Event{T: e.T - 1, Source: trace.SourceDriver, Kind: trace.KindChannelState, State: "CONNECTING"}
				left.Events = append(left.Events, c)
			}
		}
		left.Events = append(left.Events, e)
	}
	rs := verdict.Evaluate(verdict.Subject{}, []verdict.Check{StickyTFBackoff.Check()}, &left)
	if len(rs) != 1 || rs[0].Verdict != verdict.Inconclusive {
		t.Errorf("left TF before reconnecting: %+v, want inconclusive", rs)
	}
	none := *tr
	none.Events = nil
	for _, e := range tr.Events {
		if !slices.ContainsFunc(pairs, func(p [2]trace.Event) bool { return e.Kind == trace.KindSYN && e.Addr == p[1].Addr && e.T >= p[1].T }) {
			none.Events = append(none.Events, e)
		}
	}
	rs = verdict.Evaluate(verdict.Subject{}, []verdict.Check{StickyTFBackoff.Check()}, &none)
	if len(rs) != 1 || rs[0].Verdict != verdict.Fail || rs[0].Kind != verdict.Absent {
		t.Errorf("never reconnected: %+v, want a fail (absent)", rs)
	}
}
